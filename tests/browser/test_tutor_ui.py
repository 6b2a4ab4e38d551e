"""Tutor mode as a student sees it in JupyterLab: hints one level at a time, then checks.

The setup cell registers a scripted model (copied from tests/test_tutor.py: it writes the
guiding questions for the plan prompt and otherwise the program) and sets the teacher's policy
to tutor mode with a class log in a temporary folder. The student asks, clicks "Next hint"
twice (the full program is inserted below the %%pal cell only at level 3), then checks a wrong
and a right attempt of their own with %%pal --check.
"""

from __future__ import annotations

import json
import re
import time

from jupyter_browser import KERNEL_TIMEOUT_MS, Notebook, setup_and_connect, shot, wait_until_idle, write_notebook

PROGRAM = "clips_april = 48\nclips_may = clips_april / 2  # half as many in May\ntotal = clips_april + clips_may\nprint(total)"
QUESTION = "Natalia sold 48 clips in April and half as many in May. How many clips did she sell in total?"
ANSWER = re.compile(r"\b72(\.0+)?\b")

SETUP = '''\
from pal_jupyter import ScriptedBackend, register_model
PROGRAM = {program!r}

def reply(messages):
    text = messages[-1]["content"]
    if "guide a student" in text:  # level 1; the model blurts the answer, the tutor scrubs it
        return "1. How many clips did she sell in May?\\n2. What do you add to get 72?"
    if "A beginner wrote this program" in text:  # %%pal --check of a wrong attempt
        return "Explanation: you doubled the April clips, but in May she sold half as many."
    return "```python\\n" + PROGRAM + "\\n```"

register_model("scripted", ScriptedBackend(reply))
%load_ext pal_jupyter
%config PalMagics.model = "scripted"
%config PalMagics.trace = "off"
%config TeacherPolicy.mode = "tutor"
%config TeacherPolicy.log_dir = {log_dir!r}
print("setup done")
'''

TUTOR_TIMEOUT_MS = 120_000  # a private solve in a child kernel on a busy machine
WRONG = "%%pal --check\nclips_april = 48\nprint(clips_april + clips_april * 2)"  # prints 144
RIGHT = "%%pal --check\nclips_april = 48\nprint(clips_april + clips_april / 2)"  # prints 72.0








def test_tutor_hints_reveal_check_and_class_log(jupyter_server, page, request, tmp_path):
    log_dir = tmp_path / "class-logs"
    name = "tutor.ipynb"
    write_notebook(jupyter_server.root_dir, name, [
        SETUP.format(program=PROGRAM, log_dir=str(log_dir)), "%pal_config", f"%%pal\n{QUESTION}", WRONG, RIGHT,
    ])
    nb = Notebook(jupyter_server, page, name).open()
    setup_and_connect(nb)

    # -- the question: hint 1 only, no answer anywhere, nothing inserted.
    nb.run_cell(2)
    tutor = nb.cells.nth(2).locator(".pal-tutor")
    tutor.locator(".pal-hint[data-level='1']").wait_for(timeout=TUTOR_TIMEOUT_MS)
    wait_until_idle(nb, 2, TUTOR_TIMEOUT_MS)
    button = tutor.locator(".pal-next-hint")
    button.wait_for(state="visible")
    text = tutor.inner_text()
    assert "Hint 1" in text and "How many clips did she sell in May?" in text, text
    assert "What do you add to get ___?" in text, text  # scrubbed
    assert not ANSWER.search(text), text
    assert tutor.locator(".pal-hint").count() == 1
    assert button.is_enabled()
    assert nb.cells.count() == 5
    shot(nb, request, "1-hint1", tutor)

    # -- "Next hint": the skeleton, still no answer, still nothing inserted.
    button.click()
    hint2 = tutor.locator(".pal-hint[data-level='2']")
    hint2.wait_for()
    skeleton = hint2.inner_text()
    assert "clips_may = ___" in skeleton and "total = ___" in skeleton and "clips_april = 48" in skeleton, skeleton
    text = tutor.inner_text()
    assert not ANSWER.search(text), text
    page.wait_for_timeout(1000)  # an insertion would travel with the hint's comm messages
    assert nb.cells.count() == 5
    shot(nb, request, "2-hint2", tutor)

    # -- "Next hint" again: the full program, inserted right below the %%pal cell.
    button.click()
    tutor.locator(".pal-hint[data-level='3']").wait_for()
    nb.wait_for_cell_count(6)
    sources = nb.sources()
    assert sources[2].startswith("%%pal\nNatalia"), sources
    assert sources[3].startswith(f"# %%pal: {QUESTION}"), sources[3]
    assert "clips_may = clips_april / 2" in sources[3] and "model scripted" in sources[3], sources[3]
    assert sources[4] == WRONG, sources
    page.wait_for_function("el => el.disabled", arg=button.element_handle())
    assert "All hints are shown." in tutor.inner_text()
    shot(nb, request, "3-hint3-inserted", nb.cells.nth(3))
    saved = nb.save_and_read(until=lambda n: len(n.cells) == 6)
    meta = saved.cells[3].metadata["pal_jupyter"]
    assert meta["origin_cell_id"] == saved.cells[2].id and meta["model"] == "scripted" and meta["succeeded"] is True
    assert meta["question"] == QUESTION

    # -- the student's own attempts (now cells 4 and 5): wrong, then right.
    nb.run_cell(4)
    text = nb.wait_for_output(4, r"the answer is not right", timeout_ms=KERNEL_TIMEOUT_MS)
    assert "Hint:" in text and "it prints 144" in text, text
    assert "What went wrong: you doubled the April clips" in text, text
    assert nb.cells.nth(4).locator(".pal-failed").is_visible()
    shot(nb, request, "4-check-wrong", nb.cells.nth(4))
    nb.run_cell(5)
    text = nb.wait_for_output(5, r"Well done", timeout_ms=KERNEL_TIMEOUT_MS)
    assert "expected answer" in text, text
    wait_until_idle(nb, 5, TUTOR_TIMEOUT_MS)
    assert nb.cells.count() == 6
    shot(nb, request, "5-check-right", nb.cells.nth(5))

    # -- the class log, read from the test process.
    files = list(log_dir.glob("*.jsonl"))
    assert len(files) == 1, files
    deadline = time.monotonic() + 10
    while True:  # the "solved" line is written just before the check's output is displayed
        records = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
        events = [r["event"] for r in records]
        if events and events[-1] == "solved" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    story = [e for e in events if e != "attempt"]  # the tutor's private attempts
    story = [e for i, e in enumerate(story) if not (e == "question" and i and story[i - 1] == "question")]
    assert story == ["question", "hint", "hint", "hint", "reveal", "check", "check", "solved"], events
    assert [r["level"] for r in records if r["event"] == "hint"] == [1, 2, 3]
    checks = [r for r in records if r["event"] == "check"]
    assert [c["succeeded"] for c in checks] == [False, True] and checks[0]["error_type"] == "WrongAnswer"
    assert len({r["question_id"] for r in records}) == 1 and all(r["question"] == QUESTION for r in records)
    assert not [line for line in page.console_lines if "pal-jupyter: " in line], page.console_lines  # its own warnings (not "took 6 s to activate")
