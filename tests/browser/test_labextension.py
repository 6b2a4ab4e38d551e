"""The labextension in a real JupyterLab 4 and Notebook 7: the `pal_jupyter` comm protocol.

The first cell plays the kernel side of %%pal with raw comms: it opens the comm (hello),
asks for an insert below itself and keeps the frontend's replies in `replies`. Each run
makes a new attempt: new source, new metadata, `run` only on the third attempt.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jupyter_browser import ROOT, Notebook, write_notebook

EXTENSION = "pal-jupyter-labextension"
EXTENSION_VERSION = json.loads((ROOT / "pal_jupyter" / "labextension" / "package.json").read_text())["version"]

ORIGIN = """\
# origin
from comm import create_comm
from IPython import get_ipython
cid = get_ipython().kernel.get_parent()["metadata"]["cellId"]
attempt = globals().get("attempt", 0) + 1
replies = globals().get("replies", [])
c = create_comm(target_name="pal_jupyter", data={"action": "hello", "version": "test"})
c.on_msg(lambda msg: replies.append(msg["content"]["data"]))
c.send({"action": "insert", "source": f"print('inserted {attempt}')", "origin_cell_id": cid,
        "metadata": {"pal_jupyter": {"origin_cell_id": cid, "attempt": attempt}},
        "run": attempt == 3, "request_id": f"r{attempt}"})
c.send({"action": "no-such-action"})
print("origin ran", attempt)
"""
CHECK = """\
# check
import json
print("REPLIES=" + json.dumps(replies))
"""


def replies_from(text: str) -> list[dict]:
    match = re.search(r"REPLIES=(\[.*\])", text, re.S)
    assert match, text
    return json.loads(match.group(1))


def run_origin(nb: Notebook, attempt: int) -> None:
    nb.run_cell(0)
    nb.wait_for_output(0, rf"origin ran {attempt}\b")


def check_replies(nb: Notebook, check_index: int) -> list[dict]:
    """Runs the check cell and returns what the kernel received on the comm, in order."""
    nb.run_cell(check_index)
    nb.wait_for_output(check_index, r"REPLIES=")
    return replies_from(nb.output_text(check_index))


def assert_inserted_once(notebook, origin_id: str, source: str, attempt: int) -> dict:
    """On disk: origin, the one generated cell right below it, then the check cell."""
    cells = notebook.cells
    assert [c.source.splitlines()[0] for c in (cells[0], cells[2])] == ["# origin", "# check"]
    assert len(cells) == 3, [c.source for c in cells]
    inserted = cells[1]
    assert inserted.cell_type == "code"
    assert inserted.source == source
    assert inserted.metadata["pal_jupyter"] == {"origin_cell_id": origin_id, "attempt": attempt}
    return inserted


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_insert_replace_run(jupyter_server, page, request, frontend):
    name = f"comm-{frontend}.ipynb"
    write_notebook(jupyter_server.root_dir, name, [ORIGIN, CHECK])
    nb = Notebook(jupyter_server, page, name, frontend).open()

    # Attempt 1: a new cell directly below the origin, not run.
    run_origin(nb, 1)
    nb.wait_for_cell_count(3)
    nb.wait_for_source(1, "print('inserted 1')")
    replies = check_replies(nb, 2)
    assert replies[0] == {"action": "hello", "frontend": "jupyterlab", "version": EXTENSION_VERSION}
    inserted_reply = replies[1]
    assert inserted_reply["action"] == "inserted" and inserted_reply["replaced"] is False
    assert inserted_reply["request_id"] == "r1" and "fallback" not in inserted_reply
    assert replies[2]["action"] == "error" and "no-such-action" in replies[2]["message"]
    saved = nb.save_and_read(until=lambda n: len(n.cells) == 3)
    origin_id = saved.cells[0].id
    inserted = assert_inserted_once(saved, origin_id, "print('inserted 1')", 1)
    assert inserted.id == inserted_reply["cell_id"]
    assert inserted.outputs == [] and inserted.execution_count is None
    nb.screenshot(request, "1-inserted")

    # Attempt 2: the same cell is replaced in place, not a second one added.
    run_origin(nb, 2)
    nb.wait_for_source(1, "print('inserted 2')")
    replaced = check_replies(nb, 2)[-2]
    assert replaced["action"] == "inserted" and replaced["replaced"] is True
    assert replaced["cell_id"] == inserted_reply["cell_id"] and replaced["request_id"] == "r2"
    saved = nb.save_and_read(until=lambda n: n.cells[1].source == "print('inserted 2')")
    assert_inserted_once(saved, origin_id, "print('inserted 2')", 2)
    nb.screenshot(request, "2-replaced")

    # Attempt 3 asks for a run: the replaced cell executes after the origin cell.
    run_origin(nb, 3)
    assert "inserted 3" in nb.wait_for_output(1, r"inserted 3")
    saved = nb.save_and_read(until=lambda n: bool(n.cells[1].outputs))
    inserted = assert_inserted_once(saved, origin_id, "print('inserted 3')", 3)
    assert inserted.outputs[0]["text"] == "inserted 3\n"
    nb.screenshot(request, "3-run")

    # After a kernel restart the comm target still answers (same connection, same registry).
    nb.restart_kernel()
    run_origin(nb, 1)
    replies = check_replies(nb, 2)
    assert [r["action"] for r in replies] == ["hello", "inserted", "error"]
    assert replies[1]["replaced"] is True and replies[1]["cell_id"] == inserted_reply["cell_id"]
    saved = nb.save_and_read(until=lambda n: n.cells[1].source == "print('inserted 1')")
    assert_inserted_once(saved, origin_id, "print('inserted 1')", 1)
    nb.screenshot(request, "4-after-restart")
    assert not [line for line in page.console_lines if "pal-jupyter: " in line], page.console_lines  # its own warnings (not "took 6 s to activate")


def test_deleted_origin_appends(jupyter_server, page, request):
    """An insert for a cell id that is not in the notebook appends at the end and says so."""
    name = "fallback.ipynb"
    sender = ORIGIN.replace('"origin_cell_id": cid,', '"origin_cell_id": "gone",')
    write_notebook(jupyter_server.root_dir, name, [sender, CHECK])
    nb = Notebook(jupyter_server, page, name).open()
    run_origin(nb, 1)
    nb.wait_for_cell_count(3)
    replies = check_replies(nb, 1)
    assert replies[1]["action"] == "inserted" and replies[1]["fallback"] == "appended"
    saved = nb.save_and_read(until=lambda n: len(n.cells) == 3)
    assert [c.source.splitlines()[0] for c in saved.cells] == ["# origin", "# check", "print('inserted 1')"]
    assert saved.cells[2].metadata["pal_jupyter"]["origin_cell_id"] == "gone"
    nb.screenshot(request, "appended")


def test_notebook_joining_a_console_kernel(jupyter_server, page, request):
    """Only the first connection to a kernel in a page handles comms (services' handleComms).

    Here that is a console's: the notebook switches to the console's kernel, so the comm
    arrives on the console's connection and must still reach the notebook.
    """
    name = "joins-console.ipynb"
    write_notebook(jupyter_server.root_dir, name, [ORIGIN, CHECK + 'print("CLOSED", c._closed)\n'])
    nb = Notebook(jupyter_server, page, name).open()
    page.evaluate(
        """async () => {
          const app = window.jupyterapp;
          const console_ = await app.commands.execute('console:create', {kernelPreference: {name: 'python3'}});
          await console_.sessionContext.ready;
          const notebook = [...app.shell.widgets('main')].find(w => w.context?.path === 'joins-console.ipynb');
          await notebook.sessionContext.changeKernel({id: console_.sessionContext.session.kernel.id});
          app.shell.activateById(notebook.id);
        }"""
    )
    nb.wait_for_kernel_idle()
    assert page.evaluate(
        """() => [...window.jupyterapp.shell.widgets('main')]
            .find(w => w.context?.path === 'joins-console.ipynb').sessionContext.session.kernel.handleComms"""
    ) is False
    run_origin(nb, 1)
    nb.wait_for_cell_count(3)
    nb.wait_for_source(1, "print('inserted 1')")
    replies = check_replies(nb, 2)
    assert [r["action"] for r in replies] == ["hello", "inserted", "error"], replies
    assert "CLOSED False" in nb.output_text(2)
    nb.screenshot(request, "console")


def test_labextension_list_shows_it_enabled():
    """The Python install put the prebuilt extension where JupyterLab finds it."""
    result = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)
    assert re.search(rf"{EXTENSION} v{re.escape(EXTENSION_VERSION)} enabled OK", text), text


def test_frontend_version_matches_package_json():
    """The version the extension reports in its hello reply is the built package's version."""
    source = (ROOT / "labextension" / "src" / "index.ts").read_text()
    assert f"const VERSION = '{EXTENSION_VERSION}';" in source
    built = Path(ROOT / "pal_jupyter" / "labextension" / "static")
    assert any(EXTENSION_VERSION in p.read_text() for p in built.glob("*.js"))
