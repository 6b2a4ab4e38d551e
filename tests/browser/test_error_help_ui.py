"""Help right on a failing cell: the labextension's `offer_help` bar in a real JupyterLab page.

`test_offer_help_bar` plays the kernel side with raw comms: the first cell opens the comm and
registers an IPython `post_run_cell` hook that sends `offer_help` for every failing cell (the
moment the real kernel side sends it: before the failing cell's execute reply), plus some
malformed offers and one for a cell that is not in the page. The inserted cells only print.

`test_explain_this_error_end_to_end` uses pal-jupyter's own kernel side (`%load_ext
pal_jupyter`) with a scripted model: a failing cell, the bar, a click, `%pal_explain` below it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jupyter_browser import KERNEL_TIMEOUT_MS, Notebook, setup_and_connect, shot, wait_until_idle, write_notebook

OFFER = """\
# offer
from comm import create_comm
from IPython import get_ipython
divisor = 0
replies = []
c = create_comm(target_name="pal_jupyter", data={"action": "hello", "version": "test"})
c.on_msg(lambda msg: replies.append(msg["content"]["data"]))

def actions(cid):
    return [{"label": "Explain this error", "code": f"print('explain {cid}')", "title": "Explain the error in plain words"},
            {"label": "Hint", "code": f"print('hint for {cid}')", "title": "The next hint for your tutor question"}]

def offer(result):
    if result.error_in_exec is not None:
        cid = get_ipython().kernel.get_parent()["metadata"]["cellId"]
        c.send({"action": "offer_help", "cell_id": cid, "ename": type(result.error_in_exec).__name__,
                "actions": actions(cid), "request_id": "failed"})

get_ipython().events.register("post_run_cell", offer)
c.send({"action": "offer_help", "ename": "ValueError", "actions": actions("x"), "request_id": "no-cell"})
c.send({"action": "offer_help", "cell_id": "x", "actions": "explain", "request_id": "not-a-list"})
c.send({"action": "offer_help", "cell_id": "x", "actions": [{"label": "Explain"}], "request_id": "no-code"})
c.send({"action": "offer_help", "cell_id": "not-in-this-page", "actions": actions("x"), "request_id": "elsewhere"})
print("offer ready")
"""
FAILING = "print(10 / divisor)"
CHECK = """\
# check
import json
divisor = 5
print("REPLIES=" + json.dumps(replies))
"""


def bars(nb: Notebook) -> Any:
    """Every help bar the notebook shows."""
    return nb.page.locator(".jp-NotebookPanel:visible .pal-help")


def help_bar(nb: Notebook, index: int) -> Any:
    """The help bar of cell `index`, once it shows."""
    bar = nb.cells.nth(index).locator(".pal-help")
    bar.wait_for(state="visible", timeout=KERNEL_TIMEOUT_MS)
    return bar


def move_cell(nb: Notebook, index: int, direction: str) -> None:
    """JupyterLab's own "Move Cell Down/Up" on cell `index`."""
    nb.page.evaluate("""([index, direction]) => {
        const app = window.jupyterapp;
        app.shell.currentWidget.content.activeCellIndex = index;
        return app.commands.execute(`notebook:move-cell-${direction}`);
    }""", [index, direction])


def fail_and_get_bar(nb: Notebook, index: int) -> Any:
    """Runs the failing cell; returns its help bar once the execution has finished."""
    nb.run_cell(index)
    bar = help_bar(nb, index)
    wait_until_idle(nb, index, KERNEL_TIMEOUT_MS)
    nb.wait_for_output(index, r"ZeroDivisionError")
    assert bar.is_visible(), "the execute reply took the help bar away"
    return bar


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_offer_help_bar(jupyter_server, page, request, frontend):
    name = f"offer-help-{frontend}.ipynb"
    write_notebook(jupyter_server.root_dir, name, [OFFER, FAILING, CHECK])
    nb = Notebook(jupyter_server, page, name, frontend).open()
    nb.run_cell(0)
    nb.wait_for_output(0, r"offer ready")

    # The failing cell gets the bar, and it outlives the execute reply (the offer came before it).
    bar = fail_and_get_bar(nb, 1)
    buttons = bar.locator("button.pal-help-action")
    assert buttons.all_inner_texts() == ["Explain this error", "Hint"]
    assert [buttons.nth(i).get_attribute("title") for i in range(2)] == [
        "Explain the error in plain words", "The next hint for your tutor question"]
    assert bar.get_attribute("aria-label") == "Help with this ZeroDivisionError"
    # It sits below the cell's outputs, inside the cell; no other cell has one (not the unknown one).
    assert page.evaluate(
        "el => !!(el.previousElementSibling?.classList.contains('jp-Cell-outputWrapper'))", bar.element_handle())
    assert bars(nb).count() == 1
    shot(nb, request, "1-bar", nb.cells.nth(1))

    # "Explain this error": a cell right below the failing one, run; the bar goes.
    buttons.first.click()
    nb.wait_for_cell_count(4)
    cid = nb.notebook_json()["cells"][1]["id"]
    nb.wait_for_source(2, f"print('explain {cid}')")
    nb.wait_for_output(2, rf"\bexplain {cid}\b")
    bar.wait_for(state="detached")
    assert bars(nb).count() == 0
    shot(nb, request, "2-explained", nb.cells.nth(2))

    # Failing again brings a new bar; "Hint" replaces the help cell instead of adding one.
    # Pressed from the keyboard this time (JupyterLab's Enter shortcut wants the cell itself focused).
    bar = fail_and_get_bar(nb, 1)
    bar.locator("button.pal-help-action", has_text="Hint").focus()
    page.keyboard.press("Enter")
    nb.wait_for_source(2, f"print('hint for {cid}')")
    nb.wait_for_output(2, rf"\bhint for {cid}\b")
    bar.wait_for(state="detached")
    assert nb.cells.count() == 4
    saved = nb.save_and_read(until=lambda n: n.cells[2].source.startswith("print('hint"))
    assert [c.source for c in saved.cells[1:3]] == [FAILING, f"print('hint for {cid}')"]
    assert saved.cells[1].id == cid
    assert saved.cells[2].metadata["pal_jupyter"] == {"help_for": cid}
    assert saved.cells[2].outputs[0]["text"] == f"hint for {cid}\n"

    # Clearing the outputs takes the bar away: the error it was about is gone.
    bar = fail_and_get_bar(nb, 1)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    bar.wait_for(state="detached")

    # Moving the failed cell keeps its bar: the moved cell is a new widget, the offer is not lost.
    fail_and_get_bar(nb, 1)
    move_cell(nb, 1, "down")
    moved = help_bar(nb, 2)
    assert moved.get_attribute("data-cell-id") == cid and bars(nb).count() == 1
    assert nb.cells.nth(2).locator(".jp-InputArea").inner_text().strip().endswith(FAILING)
    move_cell(nb, 2, "up")
    help_bar(nb, 1)
    assert bars(nb).count() == 1

    # Running the failing cell again takes the bar away too (now it succeeds: no new offer).
    nb.run_cell(3)
    replies = json.loads(re.search(r"REPLIES=(\[.*\])", nb.wait_for_output(3, r"REPLIES="), re.S).group(1))
    nb.run_cell(1)
    nb.wait_for_output(1, r"\b2\.0\b")
    assert bars(nb).count() == 0
    assert nb.cells.count() == 4

    # What the kernel heard back: errors for the malformed offers, shown false for the unknown cell.
    assert replies[0]["action"] == "hello"
    errors = [r for r in replies if r["action"] == "error"]
    assert [r["request_id"] for r in errors] == ["no-cell", "not-a-list", "no-code"], errors
    assert "cell_id" in errors[0]["message"] and "actions" in errors[1]["message"] and "code" in errors[2]["message"]
    offered = [r for r in replies if r["action"] == "help_offered"]
    assert offered[0] == {"action": "help_offered", "cell_id": "not-in-this-page", "shown": False, "request_id": "elsewhere"}
    assert offered[1:] == [{"action": "help_offered", "cell_id": cid, "shown": True, "request_id": "failed"}] * 4
    shot(nb, request, "3-fixed", nb.cells.nth(1))
    # The extension's own warnings start so; JupyterLab's "plugin took long to activate" must not count.
    assert not [line for line in page.console_lines if "pal-jupyter: " in line], page.console_lines


SETUP = '''\
from pal_jupyter import ScriptedBackend, register_model

def reply(messages):
    assert "A beginner ran this code" in messages[-1]["content"], messages[-1]["content"]
    return "divisor is 0 when 10 / divisor runs, and no number can be divided by zero."

register_model("scripted", ScriptedBackend(reply))
%load_ext pal_jupyter
%config PalMagics.model = "scripted"
%config PalMagics.trace = "off"
divisor = 0
print("setup done")
'''
EXPLAIN_TIMEOUT_MS = 120_000  # the first model request in a fresh kernel, on a busy machine


def test_explain_this_error_end_to_end(jupyter_server, page, request):
    """The real kernel side: a failing cell offers "Explain this error"; a click explains it below."""
    name = "explain-error.ipynb"
    write_notebook(jupyter_server.root_dir, name, [SETUP, "%pal_config", FAILING, "print('after')"])
    nb = Notebook(jupyter_server, page, name).open()
    setup_and_connect(nb)

    bar = fail_and_get_bar(nb, 2)
    buttons = bar.locator("button.pal-help-action")
    assert buttons.all_inner_texts() == ["Explain this error"]  # no tutor question: no "Hint"
    assert bars(nb).count() == 1
    shot(nb, request, "1-offered", nb.cells.nth(2))

    buttons.first.click()
    nb.wait_for_cell_count(5)
    cid = nb.notebook_json()["cells"][2]["id"]
    nb.wait_for_source(3, f"%pal_explain --cell {cid}")
    text = nb.wait_for_output(3, r"What went wrong:", timeout_ms=EXPLAIN_TIMEOUT_MS)
    assert "ZeroDivisionError" in text and "no number can be divided by zero" in text, text
    bar.wait_for(state="detached")
    assert bars(nb).count() == 0
    shot(nb, request, "2-explained", nb.cells.nth(3))

    saved = nb.save_and_read(until=lambda n: len(n.cells) == 5 and bool(n.cells[3].outputs))
    assert [c.source for c in saved.cells[2:]] == [FAILING, f"%pal_explain --cell {cid}", "print('after')"]
    assert saved.cells[3].metadata["pal_jupyter"] == {"help_for": cid}
    assert not [line for line in page.console_lines if "pal-jupyter: " in line], page.console_lines
