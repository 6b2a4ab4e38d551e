"""The notebook's last cells and last error, sent with a ``%%pal`` question when asked (``--context N``).

"Why does my plot have no labels?" or "fix the error above" need the code above the question, which
users otherwise paste into it. What is sent, and why it is kept small and in sight:

- **Off by default** (``PalMagics.context = 0``): cells can hold what nobody meant to send to a
  model, and every token of context is read (prefilled) before the first program is written.
- **Bounded.** The source of the last N code cells run before the ``%%pal`` cell, oldest first
  (``%%pal``/``%pal*`` cells are questions, not code, and empty cells say nothing: both skipped),
  and the last error a code cell raised (type, message, failing line: the
  :class:`~pal_jupyter.classroom.cell_error.CellError` that the cell watcher of
  :mod:`.error_help` recorded) only when one of those cells or a later one raised it: an older
  error is most likely fixed already. Never a variable's value: the data still goes only by
  ``--use`` and the names a question mentions.
- **Capped** at :data:`MAX_CONTEXT_TOKENS`: older cells are left out first; a single cell that is
  over the cap alone keeps its last lines (the end of a cell is what ran last and what a question
  about it is most likely about). Counted with the model's tokenizer where the backend has one
  here (transformers), else estimated at :data:`CHARS_PER_TOKEN` characters a token (llama.cpp, a
  model server); the note says which.
- **Visible.** :meth:`NotebookContext.note` is one line shown above the answer, with exactly the
  text sent folded under it, and the :class:`~pal_jupyter.engine.records.Session` (so the trace
  and the training examples made from it) keeps both.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..classroom.cell_error import CellError
from ..engine.options import MAX_CONTEXT_TOKENS
from ..engine.records import PromptContext

__all__ = ["CHARS_PER_TOKEN", "MAX_CONTEXT_TOKENS", "Cell", "NotebookContext", "TokenCounter", "cell_sources",
           "code_of", "collect", "token_counter"]

#: The estimate where no tokenizer is at hand: BPE tokenizers of code models read Python at about
#: 3 to 4 characters a token; the lower end keeps the estimate from undercounting much.
CHARS_PER_TOKEN = 3.5
MAX_ERROR_CHARS = 300  # of the error's message: its start says what went wrong; a 10 kB repr says no more

# Our own magics are questions, not code: "%%pal", "%pal ...", "%pal_hint"; and the same as IPython's
# `In` holds them, transformed ("get_ipython().run_cell_magic('pal', ...)").
_PAL_MAGIC = re.compile(r"^\s*%{1,2}pal\w*(\s|$)")
_PAL_PARSED = re.compile(r"""^\s*get_ipython\(\)\.run_(?:cell|line)_magic\(['"]pal\w*['"]""")


@dataclass(frozen=True)
class TokenCounter:
    """How context is counted: ``exact`` with the model's own tokenizer, else an estimate."""

    count: Callable[[str], int]
    exact: bool

    def describe(self, tokens: int) -> str:
        return f"{tokens} tokens (the model's tokenizer)" if self.exact \
            else f"~{tokens} tokens (estimated: characters / {CHARS_PER_TOKEN:g})"


ESTIMATE = TokenCounter(lambda text: math.ceil(len(text) / CHARS_PER_TOKEN), exact=False)


def token_counter(backend: Any) -> TokenCounter:
    """The backend's tokenizer where it has one here (transformers); the estimate otherwise."""
    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is None or not callable(tokenizer):
        return ESTIMATE
    return TokenCounter(lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"]), exact=True)


@dataclass(frozen=True)
class Cell:
    """A code cell's source as sent: ``In [number]``, less ``cut`` lines left out from its top."""

    number: int
    source: str
    cut: int = 0

    @property
    def lines(self) -> int:
        return len(self.source.splitlines())

    def text(self) -> str:
        cut = f"# ... (its first {self.cut} lines left out)\n" if self.cut else ""
        return f"In [{self.number}]:\n```python\n{cut}{self.source}\n```"

    def last_lines(self, kept: int) -> Cell:
        lines = self.source.splitlines()
        return Cell(self.number, "\n".join(lines[len(lines) - kept:]), self.cut + len(lines) - kept)


@dataclass(frozen=True)
class NotebookContext:
    """What a question is sent with from the notebook: ``cells`` (oldest first) and ``error``, after
    the cap. ``candidates`` are the cells before it (so the cap can be applied again with the model's
    tokenizer once the model is loaded: :meth:`sent_to`); ``left_out`` of them did not fit."""

    candidates: tuple[Cell, ...] = ()
    error: CellError | None = None
    cells: tuple[Cell, ...] = ()
    tokens: int = 0
    counter: TokenCounter = field(default=ESTIMATE, repr=False, compare=False)
    cap: int = MAX_CONTEXT_TOKENS

    @property
    def left_out(self) -> int:
        return len(self.candidates) - len(self.cells)

    def prompt_text(self) -> str:
        """The cells and the error as the model reads them (labelled by pal_jupyter.prompts.questions)."""
        return _text(self.cells, self.error)

    def fitted(self, counter: TokenCounter = ESTIMATE, cap: int = MAX_CONTEXT_TOKENS) -> NotebookContext:
        """The candidates under ``cap`` tokens: older cells left out first, then the top lines of the
        one cell left. The error always stays: it is short (its message cut at MAX_ERROR_CHARS) and is
        what "fix the error above" is about."""
        cells = list(self.candidates)
        while len(cells) > 1 and counter.count(_text(cells, self.error)) > cap:
            cells.pop(0)
        if cells and counter.count(_text(cells, self.error)) > cap:
            cells = _last_lines_fitting(cells[0], self.error, counter, cap)
        tokens = counter.count(_text(cells, self.error)) if cells or self.error else 0
        return dataclasses.replace(self, cells=tuple(cells), tokens=tokens, counter=counter, cap=cap)

    def sent_to(self, backend: Any) -> PromptContext:
        """What the engine is given for ``backend``: the cap applied with its tokenizer when it has one."""
        fitted = self.fitted(token_counter(backend), self.cap)
        return PromptContext(fitted.prompt_text(), fitted.note())

    def note(self) -> str:
        """One line for the user: what was sent, what it costs, and what the cap left out."""
        left_out = self._left_out()
        if not self.cells and self.error is None:
            why = f": {left_out} left out by the {self.cap}-token cap" if left_out \
                else " (no code cell ran before this one)"
            return f"Context: nothing sent{why}"
        sent = []
        if self.cells:
            count = "the last cell" if len(self.cells) == 1 else f"the last {len(self.cells)} cells"
            lines = sum(cell.lines for cell in self.cells)
            sent.append(f"{count} ({lines} line{'s' if lines != 1 else ''})")
        if self.error is not None:
            sent.append(f"the last error ({self.error.name})")
        note = f"Context sent: {' and '.join(sent)}, {self.counter.describe(self.tokens)}"
        return note + (f"; {left_out} left out by the {self.cap}-token cap" if left_out else "")

    def _left_out(self) -> str:
        parts = [f"{self.left_out} older cell{'s' if self.left_out != 1 else ''}"] if self.left_out else []
        parts += [f"the first {cell.cut} line{'s' if cell.cut != 1 else ''} of In [{cell.number}]"
                  for cell in self.cells if cell.cut]
        return " and ".join(parts)


def _text(cells: Sequence[Cell], error: CellError | None) -> str:
    parts = [cell.text() for cell in cells] + ([_error_text(error)] if error is not None else [])
    return "\n\n".join(parts)


def _error_text(error: CellError) -> str:
    """The error as the model reads it: where it failed (a cell's line, maybe of an earlier cell
    than the one run), then its type and message, in one line cut at MAX_ERROR_CHARS."""
    at = error.failed_at
    assert at is not None  # collect() sends only an error it can place
    message = " ".join(error.message.split())
    if len(message) > MAX_ERROR_CHARS:
        message = message[:MAX_ERROR_CHARS] + " ..."
    line = f": {at.code}" if at.code else ""
    return f"The last error (In [{at.cell}], line {at.line}{line}):\n{error.name}: {message}"


def _last_lines_fitting(cell: Cell, error: CellError | None, counter: TokenCounter, cap: int) -> list[Cell]:
    """``cell`` cut to the most of its last lines that fit (a binary search: a tokenizer is not free),
    or nothing when not even its last line does."""
    low, high = 0, cell.lines - 1  # the most lines known to fit, the most that might
    while low < high:
        middle = (low + high + 1) // 2
        if counter.count(_text([cell.last_lines(middle)], error)) <= cap:
            low = middle
        else:
            high = middle - 1
    return [cell.last_lines(low)] if low else []


# ---------------------------------------------------------------------------------- collection


def collect(shell: Any, count: int, last_error: CellError | None = None, counter: TokenCounter = ESTIMATE,
            cap: int = MAX_CONTEXT_TOKENS) -> NotebookContext:
    """The last ``count`` code cells run before the current one and ``last_error`` (the last error
    a code cell raised, as the cell watcher recorded it) when one of them or a later one raised it,
    under ``cap``.

    ``shell`` is IPython's (or anything with ``user_ns['In']``): the cells' sources come from its
    raw input history where it keeps one (what the user typed), else from ``In``.
    """
    history = cell_sources(shell)
    current = min(getattr(shell, "execution_count", len(history)), len(history))  # this cell's In [n]
    cells = _recent_cells(history, current, count)
    since = cells[0].number if cells else current
    error = last_error if _placed_since(last_error, since) else None
    return NotebookContext(candidates=tuple(cells), error=error).fitted(counter, cap)


def _placed_since(error: CellError | None, since: int) -> bool:
    """Whether ``error`` was raised by cell ``since`` or a later one, at a line of a cell: an error
    not raised by a cell's own code, or by one we cannot place, is of unknown age."""
    return error is not None and error.failed_at is not None and error.cell is not None and error.cell >= since


def cell_sources(shell: Any) -> Sequence[str]:
    """The cells' sources by their ``In [n]``: as typed (IPython's raw input history), else ``In``."""
    raw = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return raw if isinstance(raw, list) else shell.user_ns.get("In", [""])


def _recent_cells(history: Sequence[str], current: int, count: int) -> list[Cell]:
    found: list[Cell] = []
    for number in range(current - 1, 0, -1):
        if len(found) == count:
            break
        source = code_of(history[number])
        if source:
            found.append(Cell(number, source))
    return found[::-1]


def code_of(source: str) -> str:
    """A cell's code as sent: '' for a pal magic cell or an empty one; pal line magics left out."""
    lines = source.strip("\n").splitlines()
    first = next((line for line in lines if line.strip()), "")
    if _is_pal(first):
        return ""
    return "\n".join(line for line in lines if not _is_pal(line)).strip("\n").rstrip()


def _is_pal(line: str) -> bool:
    return bool(_PAL_MAGIC.match(line) or _PAL_PARSED.match(line))

