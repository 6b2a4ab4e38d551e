"""One real question to the packaged default model, asked from JupyterLab.

Everything is real: the model (Qwen2.5-Coder-1.5B from the installed parts, converted once into
the machine's cache; on a fresh machine the first load converts it, about 1.5 min), the user's
kernel, the child kernel, the widget and the labextension's insert. Slow on a CPU (a few tokens
a second), hence the generous timeout and a single question.
"""

from __future__ import annotations

import re
import time

import pytest
from jupyter_browser import KERNEL_TIMEOUT_MS, Notebook, artifact_name, write_notebook

pytestmark = [pytest.mark.slow]

SETUP = """\
%load_ext pal_jupyter
%config PalMagics.model = "default"
%config PalMagics.trace = "off"
print("setup done")
"""
QUESTION = "If a train travels 60 mph for 2.5 hours, how far does it go?"
ANSWER_TIMEOUT_MS = 600_000  # model load (+ a conversion on a fresh machine) and ~2-5 tokens/s


def test_default_model_answers_and_inserts_the_program(jupyter_server, page, request):
    name = "default-model.ipynb"
    write_notebook(jupyter_server.root_dir, name, [SETUP, "%pal_config", f"%%pal\n{QUESTION}"])
    nb = Notebook(jupyter_server, page, name).open()
    nb.run_cell(0)
    nb.wait_for_output(0, r"setup done", timeout_ms=KERNEL_TIMEOUT_MS)
    nb.run_cell(1)  # the extension's hello has arrived once the setup cell is done
    text = nb.wait_for_output(1, r"JupyterLab extension:")
    assert "JupyterLab extension: connected (jupyterlab)" in text, text

    started = time.monotonic()
    nb.run_cell(2)
    box = nb.cells.nth(2).locator(".pal-widget")
    answer = box.locator(".pal-answer").filter(has_text=re.compile(r"Answer: 150(\.0+)?(?![\d.])"))
    try:
        answer.wait_for(timeout=ANSWER_TIMEOUT_MS)
    finally:
        print(f"answer after {time.monotonic() - started:.0f} s: {box.inner_text() if box.count() else '(no widget)'}")

    nb.wait_for_cell_count(4, timeout_ms=KERNEL_TIMEOUT_MS)
    source = nb.sources()[3]
    assert source.startswith(f"# %%pal: {QUESTION}"), source
    code = "\n".join(line for line in source.splitlines() if not line.startswith("#"))
    assert re.search(r"\b60\b", code) and "2.5" in code, source
    box.locator(".pal-answer").scroll_into_view_if_needed()
    nb.screenshot(request, "answered")
    box.screenshot(path=str(artifact_name(request, "widget")))  # the README's picture (docs/images/widget.png)
    nb.cells.nth(3).scroll_into_view_if_needed()
    nb.screenshot(request, "inserted")
