"""Tutor packs: a teacher's answer key made into verified hints before class, used in class with no model run.

The child kernels that run programs, the user's kernel and the pack files are real; a scripted model
writes the programs where a test needs exact ones (a copied literal, a wrong answer, then a right one).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from kernel_driver import UserKernel, text_of

from pal_jupyter import KernelPool, ScriptedBackend
from pal_jupyter.classroom.answer_key import AnswerKey
from pal_jupyter.classroom.classlog import read_log_dir
from pal_jupyter.classroom.report import build_report, load_events, summarize
from pal_jupyter.classroom.assignment import AssignmentQuestion, read_assignment
from pal_jupyter.classroom.pack import PackQuestion, TutorPack, pack_path_for
from pal_jupyter.classroom.prepare import copied_or_fixed, prepare_pack, summary_lines, teachers_key
from pal_jupyter.classroom.tutor import Hint
from pal_jupyter.errors import PalError

QUESTION = "How many girls are in the school if 40% of a school population is made up of 240 boys?"
RIGHT = "boys = 240\nshare_of_boys = 0.40\ntotal = boys / share_of_boys\ngirls = total - boys\nprint(girls)"
WRONG = "boys = 240\nshare_of_boys = 0.40\nprint(boys * share_of_boys * 3.125)"  # prints 300.0
LITERAL = "boys = 240\nprint(360)"
FIXED = "boys = 240\nprint(180 * 2)"  # 360, and the same whatever the question's numbers are
# The answer, and the wrong answer a program gave, as numbers of their own (not inside a salt or a hash).
SECRETS = re.compile(r"(?<![\w.])(?:360|300)(?:\.0+)?(?![\w]|\.\d)")


@pytest.fixture(scope="module")
def pool():
    with KernelPool() as pool:
        yield pool


def test_an_answer_key_says_right_to_the_cent_and_holds_no_answer():
    key = AnswerKey.of(360.0)
    assert "360" not in json.dumps(key.to_json())
    assert key.matches("girls: 360") and key.matches("360.0\n") and key.matches(360.004) and key.matches("360.00")
    assert not key.matches("361") and not key.matches("36") and not key.matches("") and not key.matches(None)
    assert AnswerKey.of("#### 360").kind == "text" and AnswerKey.of("1,200").matches("1200")
    words = AnswerKey.of("North America")
    assert words.matches("The answer:\nnorth america.") and not words.matches("South America")
    assert AnswerKey.of(360.0).salt != key.salt  # a salt per question: equal answers look different


def test_a_students_question_is_matched_without_case_space_or_punctuation_and_a_near_one_is_named():
    other = "A train goes 60 miles an hour for 2.5 hours. How far does it go?"
    pack = TutorPack([PackQuestion("q1", QUESTION, AnswerKey.of(360.0)), PackQuestion("q2", other, None)])
    exact = pack.find("how many girls are in the school, if 40 % of a school population is made up of 240 boys")
    assert exact is not None and exact.exact and exact.question.id == "q1"
    near = pack.find("How many girls are in the school if 40% of the school population is 240 boys?")
    assert near is not None and not near.exact and near.question.id == "q1"
    assert pack.find("What is 17% of 250?") is None and pack.find("   ") is None


def test_a_copied_or_fixed_answer_never_counts_as_verified(pool):
    key = AnswerKey.of(360.0)
    assert copied_or_fixed(RIGHT, QUESTION, key, pool, None) is None
    assert "copied" in copied_or_fixed(LITERAL, QUESTION, key, pool, None)
    assert "copied" in copied_or_fixed("print('360')", QUESTION, key, pool, None)
    assert "none of the question's numbers" in copied_or_fixed("print(180 + 180)", QUESTION, key, pool, None)
    assert "stays the same" in copied_or_fixed(FIXED, QUESTION, key, pool, None)


def _scripted() -> ScriptedBackend:
    """Programs that print a wrong answer until told that it is not the expected one, then a right one."""
    def reply(messages):
        text = "\n".join(m["content"] for m in messages)
        if "numbered questions that guide a student" in messages[-1]["content"]:
            return "1. How many students are there if 240 is 40% of them?\n2. How many of them are not boys?"
        if "not the correct answer" in text:
            return f"The share was used the wrong way round.\n```python\n{RIGHT}\n```"
        return f"```python\n{WRONG}\n```"
    return ScriptedBackend(reply)


def test_prepare_verifies_a_program_told_its_answer_differs_and_the_pack_holds_no_answer(pool, tmp_path):
    questions = [AssignmentQuestion("1", QUESTION, answer=360.0),
                 AssignmentQuestion("2", "A bag has 12 apples and 5 are eaten. How many are left?", answer=9999.0)]
    pack = prepare_pack(questions, _scripted(), pool, assignment="week1.jsonl", budget_s=60)
    first, second = pack.questions
    assert first.verified and first.verified_by.startswith("a program that computes it")
    assert [h.level for h in first.hints] == [1, 2] and "___" in first.hints[1].text
    assert not second.verified and not second.hints and second.problem
    assert summary_lines(pack)[0] == "verified 1 of 2" and "not verified: 2" in summary_lines(pack)[1]
    file = pack.save(tmp_path / "week1.pal-pack.json")
    text = "\n".join(h["text"] for q in json.loads(file.read_text())["questions"] for h in q["hints"])
    assert not SECRETS.search(text), text  # neither the key's answer nor a wrong program's
    assert RIGHT not in file.read_text()  # the whole program only with --solutions
    again = TutorPack.load(file)
    assert again.questions[0].key.matches("360") and again.verified == 1
    with_program = prepare_pack(questions[:1], _scripted(), pool, solutions=True)
    assert with_program.questions[0].hints[-1] == Hint(3, "The full program", RIGHT, True)


def nbgrader_source(path: Path) -> Path:
    grade = {"grade": False, "locked": True, "solution": False, "schema_version": 3}
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Question 1\n" + QUESTION,
                                      metadata={"nbgrader": {**grade, "grade_id": "q-md"}}),
        nbformat.v4.new_code_cell("boys = 240", metadata={}),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\ntotal = boys / 0.4\ngirls = total - boys\n### END SOLUTION",
                                  metadata={"nbgrader": {**grade, "locked": False, "solution": True,
                                                         "grade_id": "girls"}}),
        nbformat.v4.new_code_cell("assert girls == 360", metadata={"nbgrader": {
            **grade, "grade": True, "grade_id": "girls-test", "points": 1}}),
    ])
    nbformat.write(notebook, path)
    return path


def test_an_nbgrader_solution_is_the_verified_program_and_its_value_the_key(pool, tmp_path):
    (question,) = read_assignment(nbgrader_source(tmp_path / "week1.ipynb"))
    assert question.id == "girls" and QUESTION in question.question
    assert "BEGIN SOLUTION" not in question.solution and question.setup == ["boys = 240"]
    key, found = teachers_key(question, pool)
    assert key is not None and key.name == "girls" and key.matches("360.0") and found.program == question.solution
    assert pack_path_for(tmp_path / "week1.ipynb").name == "week1.pal-pack.json"


@pytest.mark.parametrize("printed, right, wrong", [
    ("print('Girls:', girls)", "360", "240"),  # a label: the key is the number, as a student's is read
    ("print(f'{girls:.0f} girls')", "There are 360.0 girls", "361"),
    ("print('March', 2024)", "March 2024", "April 2024"),  # not a labelled number: the line is the key
])
def test_a_teachers_labelled_answer_keys_its_number(pool, printed, right, wrong):
    question = AssignmentQuestion("girls", QUESTION, answer=None, setup=["boys = 240"],
                                  solution=f"total = boys / 0.4\ngirls = total - boys\n{printed}")
    key, _ = teachers_key(question, pool)
    assert key is not None and key.matches(right) and not key.matches(wrong)


def test_an_assignment_that_is_not_one_is_one_clear_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"question": "What is 2 + 2?"}\n')
    with pytest.raises(PalError, match="line 1: each line needs a 'question' and its 'answer'"):
        read_assignment(tmp_path / "bad.jsonl")
    with pytest.raises(PalError, match="No assignment at"):
        read_assignment(tmp_path / "missing.jsonl")
    (tmp_path / "x.pal-pack.json").write_text("{}")
    with pytest.raises(PalError, match="is not a tutor pack"):
        TutorPack.load(tmp_path / "x.pal-pack.json")


SETUP = """
from pal_jupyter import ScriptedBackend, register_model
register_model("scripted", ScriptedBackend(lambda messages: "Check how the share is used."))
%load_ext pal_jupyter
%config PalMagics.model = "scripted"
%pal_pack {pack}
"""
ASKED = "%%pal --tutor -q\nhow many girls are in the school if 40 % of the school population is made up of 240 boys"


def test_a_pack_question_gets_its_hints_at_once_the_same_for_two_students_and_checks_by_its_key(tmp_path):
    pack = TutorPack([PackQuestion("girls", QUESTION, AnswerKey.of(360.0), verified_by="the teacher's solution",
                                   hints=[Hint(1, "A plan", "1. How many students are there in all?", False),
                                          Hint(2, "A skeleton", "boys = 240\ntotal = ___\nprint(___)", True)])])
    file = pack.save(tmp_path / "week1.pal-pack.json")
    shown = []
    for student in ("ada", "ben"):
        kernel = UserKernel(env={"PAL_JUPYTER_LOG_DIR": str(tmp_path / "logs"), "USER": student})
        try:
            run = lambda code: _ran(kernel, code)  # noqa: E731
            run(SETUP.format(pack=file))
            asked = run(ASKED + " ?")
            shown.append(asked)
            assert "I took this for your teacher's question girls" in asked
            assert "How many students are there in all?" in asked
            assert "total = ___" in run("%pal_hint")
            assert "gives the expected answer" in run(f"%%pal --check\n{RIGHT}")
            wrong = run(f"%%pal --check\n{WRONG}")
            assert "the answer is not right" in wrong and "360" not in wrong
        finally:
            kernel.close()
    assert shown[0] == shown[1]
    events = [json.loads(line) for log in (tmp_path / "logs").glob("*.jsonl") for line in log.read_text().splitlines()]
    asked = [e for e in events if e["event"] == "question"]
    assert len(asked) == 2 and all(e["details"]["pack"] == "week1.pal-pack.json, question girls" for e in asked)
    assert sum(e["event"] == "hint" for e in events) == 4 and sum(e["event"] == "check" for e in events) == 4
    report = summarize(load_events(read_log_dir(tmp_path / "logs"))).from_pack
    assert report.to_dict("records") == [{"pack question": "week1.pal-pack.json, question girls", "students": 2,
                                          "hints": 4, "checks": 4, "checks right": 2}]
    page = build_report(tmp_path / "logs", tmp_path / "report.html", progress=False).read_text()
    assert "Questions from the teacher&#x27;s pack" in page and "week1.pal-pack.json, question girls" in page


def _ran(kernel: UserKernel, code: str) -> str:
    reply, outputs = kernel.run(code, timeout=90)
    assert reply["status"] == "ok", text_of(outputs)
    return text_of(outputs)
