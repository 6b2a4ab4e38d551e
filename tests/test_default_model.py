"""The packaged default model, for real (slow: a one-time ~1.5 min conversion, then ~20-60 s a question on a CPU).

Run only these with ``pytest -m slow``; skip them with ``-m "not slow"``.
"""

import pytest

from pal_jupyter import KernelPool, solve
from pal_jupyter.model import Generation, load_model

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
    assert default_model.device == "cpu" and default_model.dtype == "float32"


class _TokenSink:
    def __init__(self, sink):
        self.sink = sink

    def __getattr__(self, name):
        return lambda *args: self.sink.append(args[-1]) if name == "token" else None


class SeededBugFirst:
    """A backend whose first reply is a planted bug; the real model writes every later reply."""

    def __init__(self, real, buggy_code: str):
        self.real, self.buggy, self.name = real, buggy_code, real.name

    def generate(self, messages, options=None, on_token=None):
        if self.buggy is not None:
            text, self.buggy = f"```python\n{self.buggy}\n```", None
            return Generation(text, 0, 0, 0.0)
        return self.real.generate(messages, options, on_token)


def test_default_model_explains_and_repairs_a_seeded_bug(default_model, pool):
    buggy = "apples_per_box = 12\nboxes = 7\ntotal = apples_per_box * box\nprint(total)"
    session = solve("A shop packs 12 apples in a box. How many apples are in 7 boxes?",
                    model=SeededBugFirst(default_model, buggy), executor=pool)
    first, repair = session.attempts[0], session.attempts[1]
    assert first.error_type == "NameError" and first.execution.error.lineno == 3
    assert repair.kind == "repair" and repair.explanation, "the model explains the error in words"
    assert session.succeeded and float(session.answer) == pytest.approx(84)
