"""One record of an error that a user's code raised: what it was, where it failed, which cell ran.

In the notebook, :class:`~pal_jupyter.notebook.error_help.CellWatcher` makes one for each error
a user's cell raises (and one for the error IPython kept from before the watch began); that
same record is what the hints read (:mod:`.error_hints`), what a question's context sends
(:mod:`pal_jupyter.notebook.context`) and what ``%pal_explain`` explains. An error of a program
run on its own in a child kernel (``%%pal --check``) takes the same form: :func:`located_error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class CellLine(NamedTuple):
    """A line of the user's code: ``In [cell]``, its line ``line`` (from 1) and that line's code."""

    cell: int | None  # None: a program run on its own (no In [n])
    line: int
    code: str  # stripped; '' when the line could not be read back


@dataclass(frozen=True)
class CellError:
    """An error a user's code raised.

    ``name`` and ``message`` are the exception's type and ``str()``; ``exception_text`` is how
    Python prints it where a traceback ends ("NameError: name 'totl' is not defined. Did you
    mean: 'total'?"; for a SyntaxError, the file and line, the line itself and a caret first).
    ``frames`` are the traceback's lines in the user's cells, outermost first: the cell that ran,
    down to the failing line (which may be in an earlier cell, whose function this one called).
    ``cell`` is the ``In [n]`` that ran and ``source`` its source.
    """

    name: str
    message: str
    exception_text: str
    frames: tuple[CellLine, ...] = ()
    cell: int | None = None
    source: str = ""

    @property
    def failed_at(self) -> CellLine | None:
        """The failing line of the user's code, when the traceback reached one."""
        return self.frames[-1] if self.frames else None

    @property
    def shows_its_line(self) -> bool:
        """Whether ``exception_text`` shows the failing line itself, as Python prints a SyntaxError."""
        return self.exception_text.startswith("File ")

    def report(self) -> str:
        """The error as a beginner reads it (and ``%pal_explain`` shows it): the failing line, then
        ``exception_text`` ("line 2: x / 0" then "ZeroDivisionError: division by zero"); a line of
        an earlier cell says which ("In [3], line 2: ...")."""
        at = self.failed_at
        if at is None or self.shows_its_line:
            return self.exception_text
        where = f"line {at.line}" if at.cell == self.cell else f"In [{at.cell}], line {at.line}"
        return f"{where}: {at.code}\n{self.exception_text}"


def located_error(ename: str, evalue: str, line: int | None = None, code: str = "") -> CellError:
    """The record of a program's error from a child kernel (its type ``ename``, its message
    ``evalue``), failing at ``line`` (when known), whose code is ``code``."""
    where = (CellLine(None, line, code.strip()),) if line and code.strip() else ()
    return CellError(ename, evalue, f"{ename}: {evalue}".strip(), where)
