"""The repair loop with a scripted model (exact replies) and real child kernels."""

import json

import pytest

from pal_jupyter import EmptyQuestionError, KernelPool, NoCodeError, ScriptedBackend, solve
from pal_jupyter.engine.answers import numbers_match, parse_number
from pal_jupyter.engine.loop import SolveObserver
from pal_jupyter.engine.trace import read_trace
from pal_jupyter.prompts import leti_text
from pal_jupyter.training.examples import load_examples


@pytest.fixture(scope="module")
def pool():
    with KernelPool() as pool:
        yield pool


def fenced(code: str, explanation: str = "") -> str:
    return f"{explanation}\n```python\n{code}\n```\n"


class Recorder(SolveObserver):
    def __init__(self):
        self.events = []

    def program_started(self, program):
        self.events.append(("start", program.index))

    def token(self, program, text):
        self.events.append(("token", program.index))

    def code_ready(self, program):
        self.events.append(("code", program.index))

    def output(self, program, output):
        self.events.append(("output", program.index))

    def program_finished(self, program):
        self.events.append(("end", program.index))

    def session_finished(self, session):
        self.events.append(("done", len(session.programs)))


def test_first_attempt_that_runs_ends_the_session(pool):
    model = ScriptedBackend([fenced("speed = 60\nprint(speed * 2.5)")])
    session = solve("How far at 60 mph for 2.5 hours?", method="vote", samples=1, model=model, executor=pool)
    assert session.succeeded and len(session.programs) == 1
    assert session.answer == "150.0"
    program = session.final
    assert program.kind == "initial" and program.reward == "<|good|>" and program.error_type is None
    assert program.completion_tokens > 0 and program.execute_s > 0
    assert model.calls[0][-1]["content"] == "How far at 60 mph for 2.5 hours?"


def test_error_is_fed_back_and_repaired_with_an_explanation(pool, tmp_path):
    model = ScriptedBackend(
        [
            fenced("speed = 60\nhours = 2.5\nprint(sped * hours)"),
            fenced("speed = 60\nhours = 2.5\nprint(speed * hours)", "Explanation: `sped` is a typo for `speed`."),
        ]
    )
    recorder = Recorder()
    trace = tmp_path / "trace.jsonl"
    session = solve("How far?", method="vote", samples=1, model=model, executor=pool, trace=trace, observer=recorder)
    first, second = session.programs
    assert first.error_type == "NameError" and first.reward == "<|bad|>"
    assert first.execution.error.lineno == 3
    assert 'File "program.py", line 3' in first.feedback
    repair_prompt = model.calls[1][-1]["content"]
    assert "print(sped * hours)" in repair_prompt and "NameError" in repair_prompt and "line 3" in repair_prompt
    assert second.kind == "repair" and second.explanation == "`sped` is a typo for `speed`."
    assert session.succeeded and session.answer == "150.0"
    # Events arrive in order, tokens before code, output before the end of the attempt.
    assert recorder.events[0] == ("start", 1) and recorder.events[-1] == ("done", 2)
    assert recorder.events.index(("code", 1)) < recorder.events.index(("output", 1)) < recorder.events.index(("end", 1))
    # The trace holds both attempts, self-contained, and converts to LeTI text.
    records = list(read_trace(trace))
    assert [r["attempt"] if "attempt" in r else r["index"] for r in records] == [1, 2]
    assert [r["reward"] for r in records] == ["<|bad|>", "<|good|>"]
    assert all(r["session_id"] == session.id and r["question"] == "How far?" for r in records)
    examples, _counts = load_examples([trace])  # what pal-jupyter leti shows and train --format leti learns
    leti = [leti_text(e) for e in examples]
    assert leti[0].startswith("<|bad|><|feedback|>") and "NameError" in leti[0] and leti[1].startswith("<|good|>")


def test_stops_after_max_attempts_and_marks_the_last_attempt(pool):
    model = ScriptedBackend([fenced("1/0")] * 2)
    session = solve("Divide", method="vote", samples=1, model=model, executor=pool, max_attempts=2)
    assert not session.succeeded and len(session.programs) == 2
    assert session.answer is None and session.final.error_type == "ZeroDivisionError"


def test_checker_turns_a_wrong_answer_into_a_repair(pool):
    model = ScriptedBackend([fenced("print(41)"), fenced("print(42)", "Explanation: off by one.")])
    checker = lambda run: numbers_match(parse_number(run.text_output()), 42)  # noqa: E731
    session = solve("Answer?", method="vote", samples=1, model=model, executor=pool, checker=checker)
    assert [a.correct for a in session.programs] == [False, True]
    assert session.programs[0].error_type == "WrongAnswer"
    assert "not the correct answer" in model.calls[1][-1]["content"]


def test_a_reply_without_code_is_retried_with_that_feedback(pool):
    model = ScriptedBackend(["I think it is 150.", fenced("print(150)")])
    session = solve("How far?", method="vote", samples=1, model=model, executor=pool)
    assert session.programs[0].code is None and session.programs[0].error_type == "NoCode"
    assert "contained no Python code" in model.calls[1][-1]["content"]
    assert session.succeeded


def test_a_model_that_never_writes_code_is_a_clear_error(pool):
    model = ScriptedBackend(["Sorry, I cannot help with that."] * 3)
    with pytest.raises(NoCodeError, match="no Python code in 3 program"):
        solve("How far?", method="vote", samples=1, max_attempts=3, model=model, executor=pool)


@pytest.mark.parametrize("question", ["", "   \n\t"])
def test_empty_question_fails_before_any_model_call(question):
    model = ScriptedBackend([])
    with pytest.raises(EmptyQuestionError, match="question is empty"):
        solve(question, method="vote", samples=1, model=model)
    assert model.calls == []


def test_variables_reach_the_program_and_the_prompt(pool):
    import pandas as pd

    sales = pd.DataFrame({"month": [7, 8, 9], "amount": [10, 20, 30]})
    model = ScriptedBackend([fenced("print(sales['amount'].sum())")])
    session = solve("Total Q3 sales?", method="vote", samples=1, model=model, executor=pool, variables={"sales": sales})
    assert session.answer == "60" and session.variables == ["sales"]
    prompt = model.calls[0][-1]["content"]
    assert "`sales`: pandas DataFrame, 3 rows x 2 columns" in prompt and "do not create them" in prompt


def test_a_program_that_loops_forever_is_stopped_and_repaired():
    from pal_jupyter import ExecutorLimits

    model = ScriptedBackend([fenced("while True:\n    pass"), fenced("print(1)")])
    session = solve("Loop", method="vote", samples=1, model=model, limits=ExecutorLimits(timeout_s=1.5, grace_s=1.0))
    assert session.programs[0].execution.reason.value == "timeout"
    assert "longer than" in model.calls[1][-1]["content"]
    assert session.succeeded


def test_session_serialises_to_json(pool):
    from pal_jupyter.engine.records import to_jsonable

    session = solve("x", method="vote", samples=1, model=ScriptedBackend([fenced("print(2)")]), executor=pool)
    data = json.loads(json.dumps(to_jsonable(session)))
    assert data["programs"][0]["execution"]["reason"] == "ok"


def test_an_unchanged_correction_is_called_out_in_the_next_prompt(pool):
    model = ScriptedBackend([fenced("total = 1\nprint(totl)")] * 3)
    solve("Q", method="vote", samples=1, max_attempts=3, model=model, executor=pool)
    assert "Did you mean: 'total'?" in model.calls[1][-1]["content"]
    assert "unchanged from the previous attempt" not in model.calls[1][-1]["content"]
    assert "unchanged from the previous attempt" in model.calls[2][-1]["content"]


def test_an_unwritable_trace_costs_a_warning_not_the_answer(pool, caplog):
    session = solve("Q", method="vote", samples=1, model=ScriptedBackend([fenced("print(3)")]), executor=pool, trace="/dev/null/trace.jsonl")
    assert session.succeeded and session.answer == "3"
    assert "Could not append to the trace" in caplog.text


@pytest.mark.parametrize("silent, fed_back", [
    ("total = 12 * 3", "printed nothing"),
    ("import math\nprint(math.nan)", "missing value, not an answer"),
])
def test_a_program_that_answers_nothing_is_repaired(pool, silent, fed_back):
    """Running cleanly is not answering: nothing printed, or NaN, gets the next round (LeTI's feedback)."""
    model = ScriptedBackend([fenced(silent), fenced("total = 12 * 3\nprint(total)")])
    session = solve("What is 12 times 3?", method="vote", samples=1, model=model, executor=pool)
    first, second = session.programs
    assert not first.good and first.reward == "<|bad|>" and fed_back in first.feedback
    assert fed_back in model.calls[1][-1]["content"] and second.kind == "repair"
    assert session.succeeded and session.answer == "36"
