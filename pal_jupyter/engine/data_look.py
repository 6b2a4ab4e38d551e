"""Look at the data first, the way an analyst does, when programs about it disagree or fail.

A question about the user's DataFrames (``--use``) whose first programs disagree (a weak vote)
or all fail is often one where the programs misread the data: the wrong spelling of a value,
rows the filter never matches, missing values taken for zeros. Before writing more programs, a
*look* program prints what the question is about: each frame's size and missing values, every
value of its short text columns, and the rows that match each value the question names ("the
East region": the rows where ``region == 'East'``). Its output goes into the prompt of every
later program (:func:`pal_jupyter.prompts.data.look_text`), so they are written knowing what the data
holds.

The look program is written here, not by the model: it only reads (no assignment to a frame, no
method that changes one), it is the same for the same question and data, and it costs one run in
a child kernel, never a model call. It runs like any program, in its own kernel with copies of
the frames, so the user's frames and kernel are never touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .filters import NamedValue, is_frame, named_values

MAX_VALUES = 20  # a text column with more distinct values than this is not listed
MAX_ROWS = 10  # rows shown per named value


def look_program(question: str, variables: Mapping[str, Any] | None) -> str | None:
    """The program that looks at ``variables``' DataFrames for ``question``; None without any."""
    frames = {name: value for name, value in (variables or {}).items() if is_frame(value)}
    if not frames:
        return None
    lines = ["# A first look at the data: what the question is about, before answering it",
             "import pandas as pd", "pd.set_option('display.width', 120)"]
    for name, frame in frames.items():
        lines += _frame_lines(name, frame)
    named = [n for n in named_values(question, frames) if type(n) is NamedValue]  # values, not periods or groups
    for name in frames:
        values = [n for n in named if n.variable == name]
        groups = [[n] for n in values]
        if len({n.column for n in values}) > 1:  # "Gadget in the West": the rows that match both, too
            groups.append(values)
        for group in groups:
            lines += _matching_rows(name, [(n.column, n.value) for n in group])
    return "\n".join(lines)


def _matching_rows(name: str, conditions: list[tuple[str, str]]) -> list[str]:
    test = " & ".join(f"({name}[{column!r}].astype(str) == {value!r})" for column, value in conditions)
    label = "\nrows of " + name + " where " + " and ".join(f"{column} == {value!r}" for column, value in conditions) + ":"
    return [f"rows = {name}[{test}]", f"print({label!r}, len(rows))", f"print(rows.head({MAX_ROWS}).to_string())"]


def _frame_lines(name: str, frame: Any) -> list[str]:
    lines = [f"print({name + ':'!r}, len({name}), 'rows')",
             f"missing = {name}.isna().sum()",
             "print('  missing values:', missing[missing > 0].to_dict() or 'none')"]
    for column in frame.select_dtypes(include=["object", "category", "string"]).columns:
        if frame[column].nunique(dropna=True) <= MAX_VALUES:
            label = f"  {column} values:"
            lines.append(f"print({label!r}, sorted({name}[{column!r}].dropna().astype(str).unique()))")
    return lines
