"""Tutoring: the hint ladder and checks of a student's code (``tutor``), the teacher's policy,
the per-student class log and the teacher's report. Built on the engine; the notebook side of
tutor mode lives in :mod:`pal_jupyter.notebook.tutor_view`."""
