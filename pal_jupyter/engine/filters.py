"""Values a question names in the user's data, and programs that never use them.

"How many units of Gadget were sold in the West region?" names two values of the frame
(``'Gadget'`` in ``product``, ``'West'`` in ``region``). A program whose code never mentions one
of them cannot be selecting those rows: it sums over the wrong rows, and small models do this
often, all in the same way, so the vote agrees on the wrong answer (issue 21: 4 of 5 programs
agreeing on a sum over every row). Selecting rows by a value takes the value as a string
(``== 'West'``, ``.isin(['West'])``, ``.loc['West']``, ``query("region == 'West'")``), so it is the
program's strings that are searched, not its names: ``west_total`` selects nothing.
:func:`ignored_values` finds such programs before they vote; :func:`pal_jupyter.engine.vote.mark_off_target`
sends them back for repair.

A value counts as named when it appears in the question as a whole word with the same case, and
looks like a name rather than an ordinary word: it starts with a capital or holds a digit
(``'West'``, ``'Oslo'``, ``'SKU-12'``). A lowercase value (``'open'``) counts only when the
question quotes it, since "the total revenue" must not make ``'total'`` a filter.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_DISTINCT = 200  # columns with more distinct values are free text or ids, not categories


@dataclass(frozen=True)
class NamedValue:
    """A value of a column of one of the user's frames that the question names."""

    variable: str
    column: str
    value: str

    @property
    def where(self) -> str:
        """"'West' (a value of sales['region'])": for people and for the model."""
        return f"{self.value!r} (a value of {self.variable}[{self.column!r}])"


def is_frame(value: Any) -> bool:
    """Whether ``value`` is a DataFrame (or quacks like one): what the data checks look into."""
    return hasattr(value, "columns") and hasattr(value, "select_dtypes") and hasattr(value, "isna")


def named_values(question: str, variables: Mapping[str, Any] | None) -> list[NamedValue]:
    """The values of the text columns of ``variables``' DataFrames that ``question`` names."""
    named: list[NamedValue] = []
    for name, frame in (variables or {}).items():
        if not is_frame(frame):
            continue
        for column in frame.select_dtypes(include=["object", "category", "string"]).columns:
            values = frame[column].dropna()
            distinct = values.astype(str).unique() if len(values) else []
            if len(distinct) > MAX_DISTINCT:
                continue
            named += [NamedValue(str(name), str(column), v) for v in distinct if _names(question, v)]
    return named


def _names(question: str, value: str) -> bool:
    value = value.strip()
    if len(value) < 2 or not re.search(r"[A-Za-z]", value):
        return False
    if value[0].isupper() or re.search(r"\d", value):
        return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", question) is not None
    return re.search(rf"""["'`]{re.escape(value)}["'`]""", question) is not None


def ignored_values(code: str, named: Sequence[NamedValue]) -> list[NamedValue]:
    """The named values that no string in ``code`` holds (compared ignoring case: ``.str.lower() ==
    'west'`` is a use; a variable called ``west_total`` is not)."""
    if not named:
        return []
    strings = " ".join(_strings(code)).casefold()
    return [n for n in named if n.value.casefold() not in strings]


def _strings(code: str) -> list[str]:
    """The string literals of a program (f-strings' literal parts included); the whole text when it
    does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [code]
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
