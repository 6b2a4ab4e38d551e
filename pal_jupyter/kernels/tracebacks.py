"""Tracebacks fit for people and models: IPython's colourful, cell-numbered frames turned into
plain Python frames of ``program.py``, internal frames dropped, deep recursion collapsed."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from .results import ErrorInfo

PROGRAM_FILENAME = "program.py"  # what tracebacks call the generated program

_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
# IPython: "Cell In[3], line 5" / "Cell In[3], line 2 in f" / Context mode "..., in f(x)"
_CELL_RE = re.compile(
    r"^(?P<indent>\s*)Cell In\[\d+\], line (?P<line>\d+)(?:,? in (?P<func>.+?))?\s*$"
)
# IPython: "File /path/mod.py:12 in func"
_FILE_RE = re.compile(
    r"^(?P<indent>\s*)File (?P<path>[^\"].*?):(?P<line>\d+)(?:,? in (?P<func>.+?))?\s*$"
)
_INTERNAL_PATHS = (f"{os.sep}IPython{os.sep}", f"{os.sep}ipykernel{os.sep}")
# Where an installation keeps its libraries: a frame there is named from its package on
# ("pandas/core/frame.py"), as a reader looks it up, not from the user's home or environment.
_INSTALLED_RE = re.compile(r"^.*[/\\](?:site-packages|dist-packages|lib[/\\]python3\.\d+)[/\\]")
# SyntaxError evalue names IPython's temp file: "invalid syntax (2070428553.py, line 2)"
_TMP_SOURCE_RE = re.compile(r"\((?:\d+\.py|<ipython-input-[^>]*>), line (\d+)\)")
# ipykernel's file name for a cell's code, as a crash trace shows it
_CELL_FILE_RE = re.compile(r"[^\s\"']*ipykernel_\d+[/\\]\d+\.py")
_SYNTAX_ENAMES = frozenset({"SyntaxError", "IndentationError", "TabError"})
MAX_REPEATED_FRAMES = 3


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


def _split_blocks(lines: list[str]) -> list[list[str]]:
    """Group traceback lines: a frame header plus its (deeper indented) source/caret lines."""
    blocks: list[list[str]] = []
    header_indent: int | None = None
    for line in lines:
        is_header = bool(_CELL_RE.match(line) or _FILE_RE.match(line))
        indent = len(line) - len(line.lstrip())
        continues = header_indent is not None and line.strip() and (
            indent > header_indent or line.lstrip().startswith("-->") or line.startswith("---->")
        )
        if continues and not is_header:
            blocks[-1].append(line)
            continue
        blocks.append([line])
        header_indent = indent if is_header else None
    return blocks


def _rewrite_header(block: list[str], next_block: list[str] | None, ename: str) -> list[str] | None:
    """Turn IPython frame headers into standard Python ones; None drops the frame."""
    head = block[0]
    cell = _CELL_RE.match(head)
    if cell:
        # A SyntaxError in the program itself is shown without "in <module>", like Python does.
        syntax = ename in _SYNTAX_ENAMES and bool(next_block) and next_block[0].startswith(ename)
        where = "" if syntax else f", in {cell['func'] or '<module>'}"
        header = f'{cell["indent"]}File "{PROGRAM_FILENAME}", line {cell["line"]}{where}'
        return [header, *block[1:]]
    frame = _FILE_RE.match(head)
    if frame:
        if any(part in frame["path"] for part in _INTERNAL_PATHS):
            return None
        where = f", in {frame['func']}" if frame["func"] else ""
        return [f'{frame["indent"]}File "{library_path(frame["path"])}", line {frame["line"]}{where}', *block[1:]]
    return block


def library_path(path: str) -> str:
    """``path`` of a library module from its package on (``pandas/core/frame.py``); any other path as it is.

    Why: the absolute path names the user's environment and nothing a reader (or a repair prompt)
    needs, and costs ~15 tokens a frame; a pandas error is often ten frames deep."""
    return _INSTALLED_RE.sub("", path)


def _collapse_repeats(blocks: list[list[str]]) -> list[list[str]]:
    """Deep recursion: keep a few identical frames, then say how many were left out."""
    out: list[list[str]] = []
    i = 0
    while i < len(blocks):
        j = i
        while j + 1 < len(blocks) and blocks[j + 1] == blocks[i]:
            j += 1
        run = j - i + 1
        out.extend(blocks[i : i + min(run, MAX_REPEATED_FRAMES)])
        if run > MAX_REPEATED_FRAMES:
            out.append([f"  [Previous frame repeated {run - MAX_REPEATED_FRAMES} more times]"])
        i = j + 1
    return out


def clean_traceback(traceback: list[str], ename: str, evalue: str) -> tuple[str, int | None]:
    """Return (plain traceback text, line of program.py where it failed, if known)."""
    text = strip_ansi("".join(part if part.endswith("\n") else part + "\n" for part in traceback))
    text = _TMP_SOURCE_RE.sub(rf"({PROGRAM_FILENAME}, line \1)", text)
    blocks = _split_blocks(text.rstrip("\n").split("\n"))
    lineno: int | None = None
    kept: list[list[str]] = []
    for i, block in enumerate(blocks):
        cell = _CELL_RE.match(block[0])
        if cell:
            lineno = int(cell["line"])  # the last one is the innermost program frame
        new = _rewrite_header(block, blocks[i + 1] if i + 1 < len(blocks) else None, ename)
        if new is not None:
            kept.append(new)
    if lineno is None and ename in _SYNTAX_ENAMES:
        match = re.search(rf"\({re.escape(PROGRAM_FILENAME)}, line (\d+)\)", evalue)
        lineno = int(match.group(1)) if match else None
    lines = [line for block in _collapse_repeats(kept) for line in block]
    return "\n".join(lines) + "\n", lineno


def crash_trace(log: str) -> str:
    """The program's part of a faulthandler dump in the kernel log ('' if there is none).

    faulthandler lists the innermost call first; frames below the program's outermost one
    (IPython, ipykernel, asyncio, the launcher) are dropped.
    """
    start = log.rfind("Fatal Python error")
    if start < 0:
        return ""
    lines = _CELL_FILE_RE.sub(PROGRAM_FILENAME, strip_ansi(log[start:])).splitlines()
    program = [i for i, line in enumerate(lines) if f'File "{PROGRAM_FILENAME}"' in line]
    if program:
        lines = lines[: program[-1] + 1]
    return "\n".join(line for line in lines if not line.startswith("Extension modules")).strip()


def make_error_info(content: Mapping[str, Any]) -> ErrorInfo:
    """ErrorInfo from an iopub ``error`` message's content."""
    ename = strip_ansi(str(content.get("ename", "Error")))
    evalue = _TMP_SOURCE_RE.sub(
        rf"({PROGRAM_FILENAME}, line \1)", strip_ansi(str(content.get("evalue", "")))
    )
    text, lineno = clean_traceback(list(content.get("traceback") or []), ename, evalue)
    return ErrorInfo(ename=ename, evalue=evalue, traceback=text, lineno=lineno)
