"""A teacher's nbgrader assignment end to end: the source notebook made into a tutor pack with
``pal-jupyter prepare``, released with ``nbgrader generate_assignment`` (the pack travels with it), a
student's notebook asking the pack for hints and checking their code in a real kernel, and nbgrader's
autograder still grading that notebook.

Everything is real: nbgrader's commands and gradebook, the ``pal-jupyter`` command with a tiny
GGUF model (it writes the plan hint; the teacher's solution is the verified program), nbclient's kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbclient
import nbformat
from test_pack import QUESTION, nbgrader_source

BIN = Path(sys.executable).parent
STUDENT_CODE = "total = boys / 0.4\ngirls = total - boys\nprint(girls)"
ASKS = [
    "%load_ext pal_jupyter",
    f"%%pal --tutor -q\n{QUESTION}",  # the pack beside the notebook is found without %pal_pack
    "%pal_hint",
    f"%%pal --check\nboys = 240\n{STUDENT_CODE}",
]


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
    return done.stdout


def test_an_nbgrader_assignment_becomes_a_pack_students_use_and_the_autograder_still_grades(
        tmp_path, tiny_gguf, monkeypatch):
    course = tmp_path / "course"
    (course / "source" / "ps1").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.course_id = 'course101'\nc.CourseDirectory.root = {str(course)!r}\n")
    nbgrader_source(course / "source" / "ps1" / "ps1.ipynb")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "PAL_JUPYTER_MODEL": str(tiny_gguf), "PAL_JUPYTER_LOG_DIR": str(tmp_path / "logs"),
           "PAL_JUPYTER_TRACE": str(tmp_path / "trace.jsonl")}

    prepared = _run([str(BIN / "pal-jupyter"), "prepare", "source/ps1/ps1.ipynb", "--no-progress"], course, env)
    assert "verified 1 of 1" in prepared
    pack = json.loads((course / "source" / "ps1" / "ps1.pal-pack.json").read_text())
    assert pack["questions"][0]["verified_by"] == "the teacher's solution"
    assert "360" not in json.dumps(pack) and "girls = total - boys" not in json.dumps(pack)

    _run([str(BIN / "nbgrader"), "generate_assignment", "ps1", "--force"], course, env)
    released = course / "release" / "ps1"
    assert (released / "ps1.pal-pack.json").exists()  # the pack goes out with the assignment

    work = course / "submitted" / "s1" / "ps1"
    shutil.copytree(released, work)
    notebook = nbformat.read(work / "ps1.ipynb", as_version=4)
    solution = next(i for i, c in enumerate(notebook.cells) if "YOUR CODE HERE" in c.source)
    notebook.cells[solution].source = STUDENT_CODE
    notebook.cells[solution:solution] = [nbformat.v4.new_code_cell(code) for code in ASKS]
    for name in ("PAL_JUPYTER_MODEL", "PAL_JUPYTER_LOG_DIR", "PAL_JUPYTER_TRACE"):  # the student's kernel's too
        monkeypatch.setenv(name, env[name])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}}).execute()
    outputs = ["\n".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)
               for cell in notebook.cells[solution:solution + len(ASKS)]]
    assert "Your teacher prepared hints for this question" in outputs[1]
    assert "___" in outputs[2]  # the skeleton of the teacher's program, its values blank
    assert "gives the expected answer" in outputs[3]
    nbformat.write(notebook, work / "ps1.ipynb")

    _run([str(BIN / "nbgrader"), "autograde", "ps1", "--force"], course, env)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission("ps1", "s1")
        assert (submission.score, submission.max_score) == (1.0, 1.0)
