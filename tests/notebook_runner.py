"""Run an example notebook headless (nbclient) and read what its %%pal cells left behind."""

import re
from pathlib import Path

import nbclient
import nbformat
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_notebook(name: str, tmp_path: Path, monkeypatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("PAL_JUPYTER_TRACE", str(tmp_path / "trace.jsonl"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nb = nbformat.read(EXAMPLES / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    nbformat.write(nb, tmp_path / name)  # kept for inspection when a test fails
    return nb


def pal_summaries(nb: nbformat.NotebookNode) -> list[str]:
    """The saved text/plain of every %pal / %%pal cell's display (its final state)."""
    summaries = []
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.lstrip().startswith(("%%pal", "%pal ")):
            texts = [o.get("data", {}).get("text/plain", "") or o.get("text", "") for o in cell.outputs]
            summaries.append("\n".join(texts))
    return summaries


def answer(summary: str) -> float:
    match = re.search(r"Answer: .*?(-?[\d,]*\.?\d+)", summary)
    assert match, summary
    return float(match.group(1).replace(",", ""))
