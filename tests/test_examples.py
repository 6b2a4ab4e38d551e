"""Every example notebook runs top to bottom headless (nbclient) with the default model.

Slow: each %%pal question costs the default model 20-60 s on a CPU. Asserts on the saved
notebook, which is what a teacher who runs "Restart and run all" and saves will keep.
"""

import re
from pathlib import Path

import pytest

from notebook_runner import answer, pal_summaries, run_notebook

pytestmark = pytest.mark.slow


def test_math_tutoring(tmp_path, monkeypatch):
    nb = run_notebook("math_tutoring.ipynb", tmp_path, monkeypatch)
    train, ducks, jacket = pal_summaries(nb)
    for summary in (train, ducks, jacket):
        assert "starting" not in summary and re.search(r"worked at attempt|no working program", summary)
    assert answer(train) == pytest.approx(150)
    assert answer(ducks) == pytest.approx(18)
    assert answer(jacket) == pytest.approx(66)
    last = nb.cells[-1].outputs[0]["text"]
    assert re.match(r"1 initial (ok|\w+Error)", last)
    assert (tmp_path / "trace.jsonl").read_text().count("\n") >= 3


def test_pandas_analysis(tmp_path, monkeypatch):
    nb = run_notebook("pandas_analysis.ipynb", tmp_path, monkeypatch)
    best, plot = pal_summaries(nb)
    # The numbers, not the wording: a 1.5B model may name the month by index or by label.
    assert "worked at attempt" in best and "220" in best
    assert "worked at attempt" in plot
    plot_cell = next(c for c in nb.cells if "Plot the monthly revenue" in c.source)
    html = plot_cell.outputs[0]["data"]["text/html"]
    assert "data:image/png;base64," in html  # the figure drawn in the child kernel is saved


def test_options_tour(tmp_path, monkeypatch):
    nb = run_notebook("options_tour.ipynb", tmp_path, monkeypatch)
    config_out = next(c for c in nb.cells if c.source == "%pal_config").outputs[0]["text"]
    assert "PalMagics.max_attempts" in config_out
    week, percent = pal_summaries(nb)
    assert answer(week) == pytest.approx(604800)
    assert answer(percent) == pytest.approx(36)
    assert nb.cells[-1].outputs[0]["text"].startswith("True <|")


def test_classroom(tmp_path, monkeypatch, browser):
    nb = run_notebook("classroom.ipynb", tmp_path, monkeypatch)
    outputs = {i: "\n".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in c.get("outputs", []))
               for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    texts = list(outputs.values())
    tutor = next(t for t in texts if t.startswith("%%pal --tutor:"))
    hint2 = next(t for t in texts if "Hint 2" in t)
    for hint in (tutor, hint2):  # levels 1-2 never reveal the answer (260)
        assert "260" not in hint
    assert "Hint 1" in tutor and "___" in hint2
    buggy, fixed = [t for t in texts if "Your program" in t or "Well done" in t]
    assert "error on line 4" in buggy and "Look at line 4" in buggy
    assert fixed.startswith("Well done")
    # Tutor mode: a hint, and for a misspelt name Python's own suggestion in plain words.
    explained = next(t for t in texts if "A hint:" in t and "NameError" in t)
    assert "line 2" in explained and "spelling slip for `prices`" in explained, explained
    logs = list((tmp_path / "classroom-logs").glob("*.jsonl"))
    assert len(logs) == 1
    events = [line for line in logs[0].read_text().splitlines()]
    assert any('"event": "hint"' in e for e in events) and any('"event": "solved"' in e for e in events)
    report = tmp_path / "classroom-report.html"
    assert report.is_file() and report.read_text().count("data:image/png;base64,") >= 2
    # The teacher opens the report: its plots render in a real browser, nothing is fetched.
    from html_render import render_html

    rendered = render_html(browser, report, Path(__file__).resolve().parents[1] / "test-artifacts" / "classroom-report.png")
    assert len(rendered["images"]) >= 2 and all(i["ok"] and i["w"] > 0 for i in rendered["images"])
    assert [u for u in rendered["fetched"] if not u.startswith(("file:", "data:"))] == []
