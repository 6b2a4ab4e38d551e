"""The packaged default model, for real (slow: ~15-40 s a question on a CPU, through llama.cpp).

Run only these with ``pytest -m slow``; skip them with ``-m "not slow"``.
"""

import pytest

from pal_jupyter import KernelPool, solve
from pal_jupyter.backends import Generation, LlamaCppBackend, load_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def default_model():
    return load_model("default")


@pytest.fixture(scope="module")
def pool():
    with KernelPool() as pool:
        yield pool


def test_default_model_answers_the_train_question(default_model, pool):
    tokens = []
    session = solve("If a train travels 60 mph for 2.5 hours, how far does it go?", model=default_model,
                    executor=pool, observer=_TokenSink(tokens))
    assert session.succeeded
    assert float(session.answer) == pytest.approx(150)
    assert tokens, "tokens were streamed while the model wrote"
    assert isinstance(default_model, LlamaCppBackend) and default_model.dtype == "Q4_K_M"  # the file as it is
    # The default: the plainest greedy program, one from worked examples; the words check them when they agree
    assert session.method == "careful" and [p.view for p in session.round(1)] == ["zero", "shots"]
    assert (session.second_opinion is not None) == all(p.good for p in session.round(1))  # both worked: words
    assert session.agreement is not None
    assert session.confidence == "high" and session.second_opinion.answer.text == "150"  # the words end on it too


class _TokenSink:
    def __init__(self, sink):
        self.sink = sink

    def __getattr__(self, name):
        return lambda *args: self.sink.append(args[-1]) if name == "token" else None


class SeededBugFirst:
    """A backend whose first reply is a planted bug; the real model writes every later reply."""

    def __init__(self, real, buggy_code: str):
        self.real, self.buggy, self.name = real, buggy_code, real.name
        self.device, self.dtype, self.load_seconds = real.device, real.dtype, real.load_seconds
        self.prompt_style, self.runtime_reason, self.runtime = real.prompt_style, real.runtime_reason, real.runtime

    def generate(self, messages, options=None, on_token=None):
        if self.buggy is not None:
            text, self.buggy = f"```python\n{self.buggy}\n```", None
            return Generation(text, 0, 0, 0.0)
        return self.real.generate(messages, options, on_token)


def test_default_model_explains_and_repairs_a_seeded_bug(default_model, pool):
    buggy = "apples_per_box = 12\nboxes = 7\ntotal = apples_per_box * box\nprint(total)"
    session = solve("A shop packs 12 apples in a box. How many apples are in 7 boxes?",
                    model=SeededBugFirst(default_model, buggy), executor=pool, method="vote", samples=1)
    first, repair = session.programs[0], session.programs[1]
    assert first.error_type == "NameError" and first.execution.error.lineno == 3
    assert repair.kind == "repair" and repair.explanation, "the model explains the error in words"
    assert session.succeeded and float(session.answer) == pytest.approx(84)


# GSM8K test questions (MIT licence): Josh's house flip (70000) and Toulouse's sheep (260).
LADDER_QUESTIONS = [
    "Josh decides to try flipping a house.  He buys a house for $80,000 and then puts in $50,000 in repairs.  "
    "This increased the value of the house by 150%.  How much profit did he make?",
    "Toulouse has twice as many sheep as Charleston. Charleston has 4 times as many sheep as Seattle. How many "
    "sheep do Toulouse, Charleston, and Seattle have together if Seattle has 20 sheep?",
]


@pytest.mark.parametrize("question", LADDER_QUESTIONS, ids=["house", "sheep"])
def test_default_model_hint_ladder_never_gives_the_answer_away(default_model, pool, question):
    from pal_jupyter.classroom.tutor import TutorPlan, prepare_hints
    from pal_jupyter.engine.answers import numbers_match, parse_number

    session = solve(question, model=default_model, executor=pool, method="vote", samples=1)
    assert session.succeeded, "the default model writes a working program for both (greedy, on this CPU)"
    plan = TutorPlan(question, session)
    prepare_hints(plan, default_model, cap=3)
    answer = parse_number(session.answer)
    for hint in plan.hints[:2]:
        numbers = [parse_number(n) for n in __import__("re").findall(r"-?\d+(?:,\d{3})*(?:\.\d+)?", hint.text)]
        assert not any(numbers_match(n, answer) for n in numbers if n is not None), hint.text
    result = pool.run(plan.hints[2].text)  # level 3: the full program, as it would be inserted
    assert result.ok and numbers_match(parse_number(result.text_output()), answer)


def test_default_model_check_finds_a_planted_bug(default_model, pool):
    from pal_jupyter.classroom.tutor import check_code

    buggy = "seattle = 20\ncharleston = 4 * seattle\ntoulouse = 2 * charleston\nprint(seattle + charleston + toulose)"
    result = check_code(buggy, backend=default_model, pool=pool, expected=260, allow_solution=True)
    assert result.verdict == "error" and result.line == 4 and "line 4" in result.hint
    assert len(result.explanation) > 20
    assert result.corrected is not None and "toulouse" in result.corrected  # verified: it prints 260


def test_default_model_prints_a_real_tables_answer_in_the_format_the_question_asks(default_model, pool):
    """InfiAgent-DABench's question 24 (development part) on its real CSV file: the answer comes out in the
    question's own format (`@mean_age[...]`, two decimals), and the answer line names it."""
    from pathlib import Path

    from pal_jupyter.evaluation import dabench

    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "dabench"
    if not data.exists():
        pytest.skip("shared/data/dabench is not beside the checkout")
    question = next(q for q in dabench.load_questions(data) if q.id == 24)
    session = solve(question.text, model=default_model, executor=pool,
                    variables={"df": dabench.read_table(data, question)})
    assert session.succeeded
    printed = session.final.execution.stdout
    assert dabench.is_right(printed, question.labels), printed
    assert session.final.program_answer.kind == "parts" and session.answer == "mean_age 39.21"


def test_default_model_prepares_a_verified_pack_question_without_its_answer(default_model, pool):
    """``pal-jupyter prepare``'s search with the real model: a program that computes the key's answer,
    and hints from it that hold neither the answer nor the program."""
    from pal_jupyter.classroom.assignment import AssignmentQuestion
    from pal_jupyter.classroom.prepare import prepare_question

    question = ("A glass of milk is 8 ounces of milk. John drinks 2 glasses of milk. If milk has 3 calories per "
                "ounce how many calories did he consume?")
    prepared = prepare_question(AssignmentQuestion("milk", question, answer=48.0), default_model, pool, budget_s=120)
    assert prepared.verified and prepared.verified_by.startswith("a program that computes it"), prepared.problem
    assert prepared.key.matches("48") and [h.level for h in prepared.hints] == [1, 2]
    assert all("48" not in hint.text for hint in prepared.hints)
