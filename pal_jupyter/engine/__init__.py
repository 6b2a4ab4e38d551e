"""The engine: question -> prompt -> model -> programs -> child kernels -> vote -> feedback.

``answers`` and ``records`` (typed programs, sessions, votes) <- ``extraction``, ``vote``,
``trace`` <- ``loop`` (:func:`solve`, the one repair loop every face calls) <- ``console`` (a
terminal view of it) and ``options`` (settings shared by the notebook and CLI). Every chat the loop
sends is built by :mod:`pal_jupyter.prompts`, the layer below.
``isolation`` says, for both faces, when programs run without the sandbox ``auto`` wanted.
"""

from .loop import SolveObserver, solve
from .options import DEFAULT_SAMPLES, MAX_SAMPLES, Settings
from .records import Program, ProgramAnswer, Session, Vote

__all__ = ["DEFAULT_SAMPLES", "MAX_SAMPLES", "Program", "ProgramAnswer", "Session", "SolveObserver", "Vote", "solve"]
