"""What a user sees of %%pal in a real JupyterLab 4 / Notebook 7 page.

The first cell of each notebook registers a scripted model (replies chosen by a keyword of the
question, streamed word by word at a visible pace) and loads the extension; everything else is
real: the user's kernel, the child kernels, the ipywidgets view, the labextension's inserts.

The extension's hello reply reaches the kernel only after the setup cell is done (comm replies
travel on the shell channel), so the setup cell is run and awaited first, then `%pal_config`
confirms the connection, then the %%pal cells run.
"""

from __future__ import annotations

import re
import time

import pytest

from jupyter_browser import Notebook, setup_and_connect, shot, wait_until_idle, write_notebook

SETUP = '''\
import pandas as pd
from pal_jupyter import ScriptedBackend, register_model

def fenced(code, explanation=""):
    return explanation + "\\n```python\\n" + code + "\\n```"

# Keyword of the question -> [first reply, repair reply]. A first prompt is a long chat
# (system, worked examples, question); a repair prompt is system + one user message.
REPLIES = {
    "train": [
        fenced("# distance = speed times time\\nspeed_mph = 60  # miles per hour\\n"
               "hours = 2.5  # time on the way\\ndistance = sped_mph * hours\\nprint(distance)"),
        fenced("# distance = speed times time\\nspeed_mph = 60  # miles per hour\\n"
               "hours = 2.5  # time on the way\\ndistance = speed_mph * hours\\nprint(distance)",
               "Explanation: the program used the name sped_mph, a typo of speed_mph, "
               "so Python did not know that name and stopped with a NameError."),
    ],
    "chart": [fenced("import matplotlib.pyplot as plt\\n"
                     "plt.plot(sales['month'], sales['amount'], marker='o')\\n"
                     "plt.title('Sales per month')\\nplt.show()\\nprint(sales['amount'].max())")],
    "table": [fenced("summary = sales.groupby('region', as_index=False)['amount'].sum()\\nsummary")],
}

# "vote": three candidates per question, two agreeing (drawn in turn, one per call).
VOTES = iter([fenced("# distance = speed times time\\nprint(60 * 2.5)"),
              fenced("speed_mph = 60\\nhours = 2.5\\nprint(speed_mph * hours)"),
              fenced("print(60 + 2.5)")] * 10)

def reply(messages):
    text = messages[-1]["content"]
    if "vote" in text:
        return next(VOTES)
    replies = REPLIES[next(key for key in REPLIES if key in text)]
    return replies[min(0 if len(messages) > 2 else 1, len(replies) - 1)]

sales = pd.DataFrame({"month": [1, 2, 3, 4], "amount": [120, 90, 150, 130],
                      "region": ["north", "south", "north", "south"]})
register_model("scripted", ScriptedBackend(reply, token_delay_s=0.12))
%load_ext pal_jupyter
%config PalMagics.model = "scripted"
%config PalMagics.trace = "off"
%config PalMagics.method = "vote"
%config PalMagics.samples = 1
print("setup done")
'''

TRAIN = "%%pal\nHow far does a train go at 60 mph in 2.5 hours?"
WIDGET_TIMEOUT_MS = 120_000  # two replies of ~4 s each plus two child-kernel runs, on a busy machine




# One consistent reading of a widget: its text, its attempt titles, whether it shows failure.
SNAPSHOT_JS = """el => ({
  text: el.innerText,
  stream: [...el.querySelectorAll('.pal-stream')].map(e => e.innerText).join('\\n'),
  titles: [...el.querySelectorAll('.jupyter-widget-Collapse-header')].map(h => h.innerText.trim()),
  failed: !!el.querySelector('.pal-failed'),
})"""


def widget(nb: Notebook, index: int):
    return nb.cells.nth(index).locator(".pal-widget")


def wait_for_answer(nb: Notebook, index: int, answer: str) -> str:
    box = widget(nb, index)
    box.locator(".pal-answer", has_text=f"Answer: {answer}").wait_for(timeout=WIDGET_TIMEOUT_MS)
    return box.inner_text()




def headers(nb: Notebook, index: int):
    return widget(nb, index).locator(".jupyter-widget-Collapse-header")


def open_attempt(nb: Notebook, index: int, attempt: int):
    """Expands attempt `attempt` (1-based) of the widget in cell `index`; returns its contents."""
    collapse = widget(nb, index).locator(".jupyter-widget-Collapse").nth(attempt - 1)
    if "jupyter-widget-Collapse-open" not in (collapse.get_attribute("class") or ""):
        collapse.locator(".jupyter-widget-Collapse-header").click()
    contents = collapse.locator(".jupyter-widget-Collapse-contents")
    contents.wait_for(state="visible")
    return contents




def test_live_repair_widget_insert_replace_and_insert_attempt(jupyter_server, page, request):
    """1. live widget through a NameError and its repair; 2. the inserted cell, replaced on a
    re-run; 5. "Insert this attempt" puts attempt 1 (with its warning) into that cell."""
    name = "live.ipynb"
    write_notebook(jupyter_server.root_dir, name, [SETUP, "%pal_config", TRAIN])
    nb = Notebook(jupyter_server, page, name).open()
    setup_and_connect(nb)

    # -- 1. the widget while the cell runs: capture distinct states before the final one.
    nb.run_cell(2)
    box = widget(nb, 2)
    box.wait_for(state="visible", timeout=WIDGET_TIMEOUT_MS)
    seen: list[str] = []
    snapshots: list[dict] = []
    shots: list[str] = []
    deadline = time.monotonic() + WIDGET_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        snapshot = box.evaluate(SNAPSHOT_JS)
        text = snapshot["text"]
        if "Answer:" in text:
            break
        if not seen or seen[-1] != text:
            seen.append(text)
            snapshots.append(snapshot)
        # One screenshot while the first program is being written (tokens visible), one while
        # the repair is being written.
        if not shots and "writing a program" in text and "speed_mph" in text:
            shots.append(str(nb.screenshot(request, "1a-streaming")))  # the widget is in view
        elif len(shots) == 1 and "repairing" in text:
            shots.append(str(nb.screenshot(request, "1b-repairing")))
        page.wait_for_timeout(120)
    # What a user sees change while the cell runs. On a loaded machine a poll can miss a phase
    # (each lasts a few seconds), so the screenshots are best effort and the checks are about
    # states that were seen, not about catching every one of them.
    assert len(seen) >= 2, f"the widget did not change while the cell ran: {seen}"
    assert any(phase in s for s in seen for phase in ("writing", "running", "repairing")), seen
    # The streamed program only grows while attempt 1 is written (the status text around it may change).
    streams = [s["stream"] for s in snapshots if "writing a program" in s["text"] and s["stream"]]
    if len(streams) >= 2:
        assert streams[-1].startswith(streams[0]), streams
    # While an attempt is being written it carries no verdict, and a repair in progress is not
    # styled as a failure (the header turns red only when the question is over).
    writing = [s for s in snapshots if s["titles"] and "the model is writing ..." in s["text"]]
    assert all(s["titles"][-1] in ("Attempt 1: program", "Attempt 2: repair") for s in writing), writing
    assert not [s for s in snapshots if s["failed"]], [s["text"] for s in snapshots if s["failed"]]

    text = wait_for_answer(nb, 2, "150.0")
    assert "worked at attempt 2 of 2" in text
    titles = headers(nb, 2).all_inner_texts()
    assert [t.strip() for t in titles] == ["✗ Attempt 1: program", "✓ Attempt 2: repair"], titles
    attempt2 = open_attempt(nb, 2, 2)
    assert "What went wrong: the program used the name sped_mph" in attempt2.inner_text()
    assert attempt2.locator(".pal-explanation").is_visible()
    assert "distance = speed_mph * hours" in attempt2.locator(".pal-code").inner_text()
    assert "150.0" in attempt2.locator(".jp-OutputArea-output").inner_text()
    attempt1 = open_attempt(nb, 2, 1)
    assert "distance = sped_mph * hours" in attempt1.locator(".pal-code").inner_text()
    error = attempt1.locator(".pal-error").inner_text()
    assert "NameError: name 'sped_mph' is not defined" in error, error
    shot(nb, request, "1c-finished-attempt1-open", attempt1)

    # -- 2. the program is inserted directly below the %%pal cell, with provenance metadata.
    nb.wait_for_cell_count(4)
    wait_until_idle(nb, 2, WIDGET_TIMEOUT_MS)
    source = nb.sources()[3]
    assert source.startswith("# %%pal: How far does a train go at 60 mph in 2.5 hours?"), source
    assert "# attempt 2 of 2, model scripted" in source and "distance = speed_mph * hours" in source
    saved = nb.save_and_read(until=lambda n: len(n.cells) == 4)
    origin, inserted = saved.cells[2], saved.cells[3]
    meta = inserted.metadata["pal_jupyter"]
    assert meta["origin_cell_id"] == origin.id
    assert meta["attempt"] == 2 and meta["attempts"] == 2 and meta["model"] == "scripted"
    assert meta["succeeded"] is True
    inserted_id = inserted.id
    shot(nb, request, "2a-inserted", nb.cells.nth(3))

    # The user edits the inserted cell; re-running the %%pal cell replaces that cell's source:
    # same count, still right below, no second generated cell.
    page.evaluate(
        "(path) => [...window.jupyterapp.shell.widgets('main')].find(w => w.context?.path === path)"
        ".content.model.sharedModel.cells[3].setSource('# edited by hand')",
        name,
    )
    nb.wait_for_source(3, "# edited by hand")
    nb.run_cell(2)
    widget(nb, 2).locator(".pal-status", has_text="writing").first.wait_for(timeout=WIDGET_TIMEOUT_MS)
    wait_for_answer(nb, 2, "150.0")
    wait_until_idle(nb, 2, WIDGET_TIMEOUT_MS)
    saved = nb.save_and_read(until=lambda n: len(n.cells) == 4 and "attempt 2 of 2" in n.cells[3].source)
    assert nb.sources()[3] == source
    assert [c.id for c in saved.cells].count(inserted_id) == 1 and saved.cells[3].id == inserted_id
    assert sum("pal_jupyter" in c.metadata for c in saved.cells) == 1
    assert nb.cells.count() == 4

    # -- 5. "Insert this attempt" on attempt 1 replaces the inserted cell's source with it.
    attempt1 = open_attempt(nb, 2, 1)
    button = attempt1.get_by_role("button", name="Insert this attempt")
    button.wait_for(state="visible")
    assert button.evaluate("b => b.scrollWidth <= b.clientWidth"), "the button's label is cut off"
    button.click()
    deadline = time.monotonic() + 30
    while "attempt 1 of 2" not in nb.sources()[3]:
        assert time.monotonic() < deadline, nb.sources()
        page.wait_for_timeout(150)
    source = nb.sources()[3]
    assert "# WARNING: this program did not work (NameError)" in source, source
    assert "distance = sped_mph * hours" in source
    assert nb.cells.count() == 4
    saved = nb.save_and_read(until=lambda n: "attempt 1 of 2" in n.cells[3].source)
    assert saved.cells[3].metadata["pal_jupyter"]["attempt"] == 1
    assert saved.cells[3].metadata["pal_jupyter"]["succeeded"] is False
    shot(nb, request, "5-attempt1-inserted", nb.cells.nth(3))
    assert not [line for line in page.console_lines if "pal-jupyter: " in line], page.console_lines  # its own warnings (not "took 6 s to activate")


def test_plot_and_dataframe_render_inside_the_widget(jupyter_server, page, request):
    """3. a matplotlib chart appears as an image; 4. a DataFrame result as an HTML table."""
    name = "outputs.ipynb"
    cells = [
        SETUP,
        "%pal_config",
        "%%pal --use sales\nDraw a line chart of the sales amount per month",
        "%%pal --no-insert\nMake a table of the total sales amount per region",
    ]
    write_notebook(jupyter_server.root_dir, name, cells)
    nb = Notebook(jupyter_server, page, name).open()
    setup_and_connect(nb)

    nb.run_cell(2)
    wait_for_answer(nb, 2, "a line chart of 4 points (120, 90, 150, 130)")  # what the chart draws is its answer, not the max printed after
    image = widget(nb, 2).locator(".jp-OutputArea-output img")
    image.wait_for(state="visible")
    assert image.evaluate("img => img.complete && img.naturalWidth > 0 && img.naturalHeight > 0")
    wait_until_idle(nb, 2, WIDGET_TIMEOUT_MS)
    nb.wait_for_cell_count(5)  # the chart program was inserted below
    assert nb.sources()[3].startswith("# %%pal: Draw a line chart")
    shot(nb, request, "3-plot", image)

    nb.run_cell(4)
    box = widget(nb, 4)
    table = box.locator(".jp-OutputArea-output table")
    table.wait_for(state="visible", timeout=WIDGET_TIMEOUT_MS)
    assert box.locator(".pal-header").inner_text().startswith("%%pal Make a table")
    rows = [r.strip() for r in table.locator("tbody tr").all_inner_texts()]
    assert [re.split(r"\s+", r) for r in rows] == [["0", "north", "270"], ["1", "south", "220"]], rows
    assert "region" in table.locator("thead").inner_text()
    wait_until_idle(nb, 4, WIDGET_TIMEOUT_MS)
    assert nb.cells.count() == 5  # --no-insert
    shot(nb, request, "4-dataframe", table)


def test_notebook7_widget_and_inserted_cell(jupyter_server, page, request):
    """6. Notebook 7: the live widget renders, answers, and the program lands right below."""
    name = "nb7.ipynb"
    write_notebook(jupyter_server.root_dir, name, [SETUP, "%pal_config", TRAIN, "print('after')"])
    nb = Notebook(jupyter_server, page, name, frontend="notebook").open()
    setup_and_connect(nb)
    nb.run_cell(2)
    widget(nb, 2).wait_for(state="visible", timeout=WIDGET_TIMEOUT_MS)
    text = wait_for_answer(nb, 2, "150.0")
    assert "worked at attempt 2 of 2" in text
    assert [t.strip() for t in headers(nb, 2).all_inner_texts()] == ["✗ Attempt 1: program", "✓ Attempt 2: repair"]
    nb.wait_for_cell_count(5)
    wait_until_idle(nb, 2, WIDGET_TIMEOUT_MS)
    sources = nb.sources()
    assert sources[3].startswith("# %%pal: How far does a train go") and sources[4] == "print('after')", sources
    saved = nb.save_and_read(until=lambda n: len(n.cells) == 5)
    assert saved.cells[3].metadata["pal_jupyter"]["origin_cell_id"] == saved.cells[2].id
    shot(nb, request, "6-notebook7", nb.cells.nth(3))


def test_bad_input_shows_a_short_error_and_the_kernel_goes_on(jupyter_server, page, request):
    """7. An empty %%pal cell and --use of a missing variable: one short line, no traceback."""
    name = "bad.ipynb"
    cells = ["%load_ext pal_jupyter\nprint('loaded')", "%%pal\n", "%%pal --use nothere\nWhat is 2 + 2", "print(1+1)"]
    write_notebook(jupyter_server.root_dir, name, cells)
    nb = Notebook(jupyter_server, page, name).open()
    nb.run_cell(0)
    nb.wait_for_output(0, "loaded")
    # An empty body is caught by IPython itself ("%%pal is a cell magic, but the cell body is
    # empty ..."); a body of blanks would reach the magic's own "The %%pal cell is empty".
    for index, pattern in [(1, r"cell (body )?is empty"), (2, r"do not exist in your notebook: nothere")]:
        nb.run_cell(index)
        text = nb.wait_for_output(index, pattern)
        assert "UsageError" in text and "Traceback" not in text, text
        assert len(text.strip().splitlines()) <= 3, text
        assert nb.cells.nth(index).locator(".pal-widget").count() == 0
    nb.run_cell(3)
    assert nb.wait_for_output(3, r"^\s*2\s*$").strip() == "2"
    assert nb.cells.count() == 4  # nothing was inserted
    nb.screenshot(request, "7-bad-input")


def test_several_programs_show_the_tally_and_each_program(jupyter_server, page, request):
    """8. --samples 3: the tally, a tab per program with its verdict, the doubt note, and the
    winning program inserted with the vote in its header; later, after another question, the
    first widget's "Insert this program" still inserts a program of its own question."""
    name = "vote.ipynb"
    write_notebook(jupyter_server.root_dir, name,
                   [SETUP, "%pal_config", "%%pal --samples 3\nA vote question: how far?", TRAIN])
    nb = Notebook(jupyter_server, page, name).open()
    setup_and_connect(nb)
    nb.run_cell(2)
    text = wait_for_answer(nb, 2, "150.0")
    box = widget(nb, 2)
    assert "2 of 3 programs agree on this answer, but not all: check the steps" in text, text
    assert box.locator(".pal-doubt[data-confidence='medium']").is_visible()
    tally = box.locator(".pal-tally").first
    assert re.sub(r"\s+", " ", tally.inner_text()).startswith("answer programs 150.0 2 of 3 programs 1, 2 62.5 1 of 3 programs 3")
    assert [t.strip() for t in headers(nb, 2).all_inner_texts()] == ["✓ Attempt 1: 3 programs · 2 of 3 programs agree"]
    page_ = open_attempt(nb, 2, 1)
    tabs = [t.strip() for t in page_.locator(".lm-TabBar-tab").all_inner_texts()]
    assert tabs == ["1 ✓ 150.0", "2 ✓ 150.0", "3 ✓ 62.5"], tabs
    selected = page_.locator(".lm-TabBar-tab.lm-mod-current").inner_text().strip()
    assert selected == "1 ✓ 150.0"  # the shortest winning program is the one inserted
    page_.locator(".lm-TabBar-tab", has_text="3 ✓").click()
    assert "62.5" in page_.locator(".jp-OutputArea-output:visible").first.inner_text()
    shot(nb, request, "8-vote", box)
    nb.wait_for_cell_count(5)
    wait_until_idle(nb, 2, WIDGET_TIMEOUT_MS)
    box.locator(".pal-status", has_text="(program 1 chosen) · ").filter(has_text="inserted below").first.wait_for(
        timeout=WIDGET_TIMEOUT_MS)  # said once the extension has put the cell in, not before
    source = nb.sources()[3]
    assert "# attempt 1 of 1, program 1 of 3" in source and "# 2 of 3 programs agree on 150.0" in source, source
    assert source.rstrip().endswith("print(60 * 2.5)")
    saved = nb.save_and_read(until=lambda n: len(n.cells) == 5)
    meta = saved.cells[3].metadata["pal_jupyter"]
    assert (meta["program"], meta["programs"]) == (1, 3) and meta["agreement"] == pytest.approx(2 / 3)

    # Another question, then program 3 of the first widget: it replaces the first question's cell.
    nb.run_cell(4)
    wait_for_answer(nb, 4, "150.0")
    nb.wait_for_cell_count(6)
    wait_until_idle(nb, 4, WIDGET_TIMEOUT_MS)
    page_ = open_attempt(nb, 2, 1)
    page_.locator(".lm-TabBar-tab", has_text="3 ✓").click()
    page_.get_by_role("button", name="Insert this program").locator("visible=true").click()
    deadline = time.monotonic() + 30
    while "program 3 of 3" not in nb.sources()[3]:
        assert time.monotonic() < deadline, nb.sources()
        page.wait_for_timeout(150)
    sources = nb.sources()
    assert sources[3].rstrip().endswith("print(60 + 2.5)") and "A vote question" in sources[3], sources[3]
    assert sources[5].startswith("# %%pal: How far does a train go"), sources[5]  # the later question's cell is untouched
