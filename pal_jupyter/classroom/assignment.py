"""A teacher's assignment, read for ``pal-jupyter prepare``: its questions, and the answers or solutions.

Two forms are read:

* a JSONL file, one question a line, with ``question`` and ``answer`` as in GSM8K (``"... #### 18"``,
  a number, or a text answer); an ``id`` is kept when given;
* an nbgrader *source* notebook: each solution cell (``nbgrader.solution``) is a question, asked in
  the markdown cells above it; the teacher's code there (the ``### BEGIN SOLUTION`` markers taken
  out) is the verified program, and the notebook's ordinary code cells before it are its set-up.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.grading import expected_of
from ..errors import PalError

#: nbgrader's region markers, in any comment style (``### BEGIN SOLUTION``, ``# END HIDDEN TESTS``).
_MARKER = re.compile(r"^\s*#+\s*(BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$", re.MULTILINE)
_HIDDEN_TESTS = re.compile(r"^\s*#+\s*BEGIN HIDDEN TESTS.*?^\s*#+\s*END HIDDEN TESTS\s*$", re.MULTILINE | re.DOTALL)


@dataclass
class AssignmentQuestion:
    """One question of an assignment: the key's ``answer``, or the teacher's ``solution`` to run."""

    id: str
    question: str
    answer: float | str | None = None
    solution: str | None = None  # the teacher's own program (an nbgrader solution cell)
    setup: list[str] = field(default_factory=list)  # code cells the solution runs after (nbgrader)


def read_assignment(path: str | Path) -> list[AssignmentQuestion]:
    """The questions of a JSONL answer key or of an nbgrader source notebook (``.ipynb``)."""
    file = Path(path)
    if not file.is_file():
        raise PalError(f"No assignment at {file}: give a JSONL file of questions with answers, or an nbgrader "
                       "source notebook (.ipynb).")
    questions = read_notebook(file) if file.suffix == ".ipynb" else read_jsonl(file)
    if not questions:
        raise PalError(f"{file} holds no questions: a JSONL needs 'question' and 'answer' on each line; a notebook "
                       "needs nbgrader solution cells (made with nbgrader's 'Create Assignment' toolbar).")
    return questions


def read_jsonl(path: Path) -> list[AssignmentQuestion]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PalError(f"{path}, line {number}: not JSON ({exc.msg}).") from None
        if not isinstance(row, dict) or not str(row.get("question") or "").strip() or row.get("answer") is None:
            raise PalError(f"{path}, line {number}: each line needs a 'question' and its 'answer'.")
        questions.append(AssignmentQuestion(str(row.get("id", number)), str(row["question"]).strip(),
                                            answer=expected_of(row)))
    return questions


def read_notebook(path: Path) -> list[AssignmentQuestion]:
    import nbformat

    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several kinds for a file that is not a notebook
        raise PalError(f"{path} is not a readable notebook: {exc}") from None
    questions, words, setup = [], [], []
    for cell in notebook.cells:
        marks = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "markdown":
            if not marks.get("solution"):  # a written answer's cell is the student's, not the question
                words.append(cell.source.strip())
        elif cell.cell_type == "code" and marks.get("solution"):
            question = "\n\n".join(w for w in words if w)
            if question:
                name = marks.get("grade_id") or f"cell-{len(questions) + 1}"
                questions.append(AssignmentQuestion(str(name), question, solution=solution_code(cell.source),
                                                    setup=list(setup)))
                setup.append(solution_code(cell.source))  # later answers may build on it
            words = []
        elif cell.cell_type == "code" and not marks.get("grade"):  # set-up, not the autograder's tests
            setup.append(cell.source)
    return questions


def solution_code(source: str) -> str:
    """A solution cell's code as the teacher wrote it: hidden tests and nbgrader's markers taken out."""
    return _MARKER.sub("", _HIDDEN_TESTS.sub("", source)).strip("\n")


def answer_name(program: str) -> str | None:
    """The name a program last assigns at its top level (``girls = total - boys``): where an nbgrader
    solution leaves its answer for the autograder when it prints nothing."""
    import ast

    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    for node in reversed(tree.body):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Name):
                return target.id
    return None

