"""Tutor mode keeps its doubts to itself: when the tutor's own programs disagree, no candidate
answer reaches the student, neither in what is printed nor in the widget's state, the saved HTML
and text, the class log or a later check. A listed candidate is a multiple-choice answer key.

A scripted model writes the disagreeing programs; the user's kernel and the child kernels that
run them are real.
"""

import json
import re

import pytest
from kernel_driver import UserKernel, text_of

from pal_jupyter import KernelPool, ScriptedBackend, solve
from pal_jupyter.classroom.tutor import competing_approaches, scrub_answer
from pal_jupyter.engine.records import ProgramAnswer, Vote, VoteGroup
from pal_jupyter.notebook.tutor_view import unsure_message

QUESTION = "A printer prints 1600 pages an hour. How many pages does it print in 3 hours?"
# 3 say 4800, 2 say 318.0, 1 says 480.0 (a literal and a comment that would show it), 1 fails.
RIGHT = "pages_per_hour = 1600\nhours = 3\ntotal = pages_per_hour * hours  # 4800 pages\nprint(total)"
FIFTH = "pages_per_hour = 1600\nhours = 3\nprint(round(pages_per_hour / 5 - 2) * 1.0)"
TENTH = "answer = 480.0  # a tenth of 1600 * 3\nprint(answer)"
BROKEN = "print(pages)"
PROGRAMS = [RIGHT, FIFTH, RIGHT, TENTH, FIFTH, RIGHT, BROKEN]
ANSWERS = ["318.0", "480.0", "4800"]
# A candidate as a number of its own: not a digit run inside an id, a hex uuid or a timestamp's fraction.
CANDIDATE = re.compile(r"(?<![\w.-])(?:4800|318|480)(?:\.0+)?(?![\w-]|\.\d)")

SETUP = """
import itertools
from pal_jupyter import ScriptedBackend, register_model
PROGRAMS = itertools.cycle({programs!r})
register_model("scripted", ScriptedBackend(lambda messages: "```python\\n" + next(PROGRAMS) + "\\n```"))
%load_ext pal_jupyter
%config PalMagics.model = "scripted"
"""
ASK = "%%pal {flags} --method vote --samples 7 --max-programs 7 --second-opinion off\n" + QUESTION
# Every trait of every widget alive in the kernel, and the tutor's saved text and HTML.
WIDGET_STATE = """
from ipywidgets.widgets.widget import _instances
for widget in list(_instances.values()):
    print(type(widget).__name__, {name: getattr(widget, name) for name in widget.trait_names()})
print(get_ipython()._pal_magics.runtime.tutor_plan.widget.mimebundle())
"""
# The candidates exist, in the kernel only: the scan below would be empty for a question it was sure of.
CANDIDATES_EXIST = "plan = get_ipython()._pal_magics.runtime.tutor_plan\nassert not plan.sure\n" \
                   "assert sorted(g.answer.text for g in plan.session.vote.groups) == {answers!r}"


@pytest.fixture(scope="module")
def pool():
    with KernelPool() as pool:
        yield pool


def test_the_unsure_message_counts_the_answers_and_names_none():
    groups = [VoteGroup(ProgramAnswer("number", text, float(text)), samples)
              for text, samples in (("4800.0", [1, 2, 3]), ("318.0", [4, 5]), ("480.0", [6]))]
    message = unsure_message(Vote(round=1, candidates=7, groups=groups))
    assert message.startswith("I am not sure about this one: my 7 programs found 3 different answers, "
                              "and 1 found none. I will not guide you towards an answer I am not sure of.")
    assert not CANDIDATE.search(message)


def test_a_candidate_written_with_digit_separators_is_blanked_too():
    assert scrub_answer("total = 4_800  # 4,800 pages, not 4_700", 4800) == "total = ___  # ___ pages, not 4_700"


def test_approaches_blank_every_candidate_text_answer_too(pool):
    programs = ['print("East")', 'best = "North"\nprint(best)', "region = 'West'  # West sold most\nprint(region)"]
    model = ScriptedBackend([f"```python\n{code}\n```" for code in programs])
    session = solve("Which region sold the most?", model=model, executor=pool, method="vote", samples=3,
                    max_programs=3, second_opinion="off")
    assert sorted(g.answer.text for g in session.vote.groups) == ["East", "North", "West"]
    shown = "\n".join(f"{a.label}\n{a.skeleton}" for a in competing_approaches(session, with_skeletons=True))
    assert not re.search(r"East|North|West", shown), shown
    assert "best = \"___\"" in shown


def start_kernel(tmp_path):
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text(
        'c = get_config()\nc.TeacherPolicy.mode = "tutor"\nc.TeacherPolicy.allow_solutions = False\n'
        "c.TeacherPolicy.max_hint_level = 2\n")
    kernel = UserKernel(env={"IPYTHONDIR": str(tmp_path / "ipython"), "PAL_JUPYTER_LOG_DIR": str(tmp_path / "logs"),
                             "JUPYTERHUB_USER": "ada"})
    reply, outputs = kernel.run(SETUP.format(programs=PROGRAMS))
    assert reply["status"] == "ok", text_of(outputs)
    return kernel


def run_ok(kernel, code):
    reply, outputs = kernel.run(code)
    assert reply["status"] == "ok", text_of(outputs)
    return reply, outputs


def test_no_candidate_answer_reaches_the_student_when_the_tutor_is_not_sure(tmp_path):
    kernel = start_kernel(tmp_path)
    try:
        reply, outputs = run_ok(kernel, ASK.format(flags=""))
        run_ok(kernel, CANDIDATES_EXIST.format(answers=ANSWERS))
        _, state = run_ok(kernel, WIDGET_STATE)
        _, quiet = run_ok(kernel, ASK.format(flags="-q"))
        _, hint = run_ok(kernel, "%pal_hint")
        _, check = run_ok(kernel, "%%pal --check\nprint(1600 * 3 / 2)")  # judged against no candidate
        seen = {"outputs": [outputs, quiet, hint, check, reply["payload"]], "widget state": state,
                "comm messages": kernel.comm_messages, "class log": (tmp_path / "logs" / "ada.jsonl").read_text()}
        for where, what in seen.items():
            text = what if isinstance(what, str) else json.dumps(what)
            assert not CANDIDATE.findall(text), (where, CANDIDATE.findall(text), text[:3000])
        assert "not right" not in text_of(check)
        final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]
        assert "my 7 programs found 3 different answers, and 1 found none" in final["text/plain"]
        assert "Approach A (3 of 7 programs)" in final["text/html"] and "___" in final["text/html"]
        assert "application/vnd.jupyter.widget-view+json" in final
        assert "found 3 different answers" in text_of(state) and "HTML" in text_of(state)
        assert "found 3 different answers" in text_of(quiet) and "Approach A" in text_of(quiet)
    finally:
        kernel.close()


def test_a_prepared_pack_holds_no_answer_nor_a_wrong_programs_and_neither_reaches_the_student(tmp_path):
    """A pack made by ``prepare`` from programs that printed the answer and a wrong one: neither number
    is in the pack file, the widget's state, its saved HTML, the outputs or the class log."""
    from test_pack import QUESTION, SECRETS, _scripted

    from pal_jupyter.classroom.assignment import AssignmentQuestion
    from pal_jupyter.classroom.prepare import prepare_pack

    with KernelPool() as pool:
        pack = prepare_pack([AssignmentQuestion("girls", QUESTION, answer=360.0)], _scripted(), pool, budget_s=60)
    assert pack.verified == 1
    file = pack.save(tmp_path / "week1.pal-pack.json")
    kernel = start_kernel(tmp_path)
    try:
        _, loaded = run_ok(kernel, f"%pal_pack {file}")
        reply, outputs = run_ok(kernel, f"%%pal --tutor\n{QUESTION}")
        _, state = run_ok(kernel, WIDGET_STATE)
        _, hint = run_ok(kernel, "%pal_hint")
        _, check = run_ok(kernel, "%%pal --check\nprint(240 * 1.1)")  # a wrong answer of its own
        seen = {"pack file": file.read_text(), "outputs": [loaded, outputs, hint, check, reply["payload"]],
                "widget state": state, "comm messages": kernel.comm_messages,
                "class log": (tmp_path / "logs" / "ada.jsonl").read_text()}
        for where, what in seen.items():
            text = what if isinstance(what, str) else json.dumps(what)
            text = re.sub(r'"(salt|sha256)": "[0-9a-f]+"', "", text)  # the key's hex, not a number shown
            assert not SECRETS.findall(text), (where, SECRETS.findall(text), text[:3000])
        assert "Your teacher prepared hints" in text_of(state) and "not right" in text_of(check)
    finally:
        kernel.close()
