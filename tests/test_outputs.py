"""What a program shows, collected the way a notebook shows it: ``clear_output`` and updated displays,
in a real child kernel, and through the real widget and its saved (static) form."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pal_jupyter import KernelPool, ScriptedBackend, solve
from pal_jupyter.kernels import ExecutorLimits, StopReason
from pal_jupyter.notebook.widgets import PalWidget

# A progress display redrawn in a loop, as tqdm.notebook or a live plot does.
REDRAWN = """\
from IPython.display import clear_output, display
for step in range(1, 6):
    clear_output(wait=True)
    print(f"frame {step} of 5")
    display({"text/plain": f"table {step}"}, raw=True)
print(15)
"""

UPDATED = """\
from IPython.display import display
handle = display({"text/plain": "progress 0 %"}, raw=True, display_id=True)
for percent in (50, 100):
    handle.update({"text/plain": f"progress {percent} %"}, raw=True)
print("done")
"""


@pytest.fixture(scope="module")
def pool() -> Iterator[KernelPool]:
    with KernelPool(ExecutorLimits(warm_imports=(), timeout_s=20)) as pool:
        yield pool


def test_clear_output_wait_keeps_only_the_last_frame(pool):
    events: list[dict] = []
    result = pool.run(REDRAWN, on_output=events.append)
    assert result.reason is StopReason.OK, result.error
    assert result.stdout == "frame 5 of 5\n15\n"  # what a notebook shows at the end, and what is read as the answer
    assert [o["data"]["text/plain"] for o in result.outputs] == ["table 5"]
    assert sum(e["output_type"] == "clear_output" for e in events) == 5  # each as the next frame begins
    shown: list[dict] = []  # what a front end that follows the events shows
    for event in events:
        shown = list(event["shown"]) if event["output_type"] == "clear_output" else [*shown, event]
    assert [o.get("text") or o["data"]["text/plain"] for o in shown] == ["frame 5 of 5\n", "table 5", "15\n"]


def test_an_updated_display_is_replaced_in_place(pool):
    events: list[dict] = []
    result = pool.run(UPDATED, on_output=events.append)
    assert result.reason is StopReason.OK, result.error
    assert [o["data"]["text/plain"] for o in result.outputs] == ["progress 100 %"]
    assert result.stdout == "done\n"
    redraws = [e["shown"] for e in events if e["output_type"] == "clear_output"]
    assert [[o["data"]["text/plain"] for o in shown] for shown in redraws] == [["progress 50 %"], ["progress 100 %"]]


def test_the_widget_and_the_saved_notebook_show_only_the_last_frame(pool):
    widget = PalWidget("Count to five, redrawing as you go")
    model = ScriptedBackend(["```python\n" + REDRAWN + "```"])
    session = solve(widget.question, model=model, executor=pool, method="vote", samples=1, observer=widget)
    assert session.answer == "15"
    live = widget.pages[0].output.outputs  # the ipywidgets Output of the program's page
    assert [o.get("text") or o["data"]["text/plain"] for o in live] == ["frame 5 of 5\n", "table 5", "15\n"]
    saved = widget.mimebundle()["text/html"]  # the static form a saved notebook keeps
    assert "frame 5 of 5" in saved and "table 5" in saved
    assert not any(f"frame {n} of 5" in saved or f"table {n}<" in saved for n in range(1, 5))
