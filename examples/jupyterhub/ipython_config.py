# The students' side of a class served by one model server (see docs/classroom.md, "A class on one server").
#
# Put this file where every student's kernel reads it and students cannot edit it, e.g. the
# single-user image's /etc/ipython/ipython_config.py (or {sys.prefix}/etc/ipython/). A student's
# own ~/.ipython profile is read after it: see TeacherPolicy's docstring for what a lock can and
# cannot do.

c = get_config()  # noqa: F821 (IPython defines it when it reads this file)

c.InteractiveShellApp.extensions = ["pal_jupyter"]

# Every %%pal asks the class server. The URL is the hub's internal name of the machine that runs
# `pal-jupyter serve --host 0.0.0.0 --port 8000`; "default" is the name it serves the model under.
c.TeacherPolicy.model = "openai:default@http://model-server:8000/v1"
c.PalMagics.server_timeout = 120  # a busy class server may take longer than 60 s to start a reply

c.TeacherPolicy.mode = "tutor"
c.TeacherPolicy.isolation = "sandbox"  # the programs run in each student's own bubblewrap sandbox
c.TeacherPolicy.log_dir = "/srv/class/logs"
c.TeacherPolicy.locked = ["model", "mode", "isolation", "log_dir"]
