"""The user's data as the model is shown it: each variable described, what to do with it, and the data look.

A question about the user's variables (``--use``) is asked with them described the way a pandas user
reads data (:func:`describe_variables`), an instruction to use them as they are (to print a number,
or to print a chart's numbers and then draw it: :func:`asks_for_chart`), and, once the engine has
looked at the data (:mod:`pal_jupyter.engine.data_look`), what the look printed (:func:`look_text`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from typing import Any

_CHART_WORDING = re.compile(r"\b(?:chart|plot|graph|histogram|visuali[sz]e|draw)\b", re.IGNORECASE)
MAX_LOOK_CHARS = 3000  # of the look's output that goes into a prompt


def describe_variables(variables: Mapping[str, Any]) -> str:
    """One entry per variable the program can use, the way a pandas user reads data: for a
    table its shape, each column's dtype, missing values and typical values (a model that sees
    'East' and '2026-07-01' in a column writes a filter that matches them), and the first rows."""
    return "\n".join(_describe(name, value) for name, value in variables.items())


def _describe(name: str, value: Any) -> str:
    kind = type(value).__name__
    if hasattr(value, "columns") and hasattr(value, "dtypes") and hasattr(value, "head"):
        rows, cols = value.shape
        lines = [f"- `{name}`: pandas DataFrame, {rows} rows x {cols} columns"]
        lines += [f"    {line}" for line in _column_table(value)]
        preview = value.head(3).to_string(max_colwidth=30, max_cols=12)
        lines += ["  first rows:", textwrap.indent(preview, "    ")]
        return "\n".join(lines)
    if hasattr(value, "dtype") and hasattr(value, "index") and hasattr(value, "head"):  # a Series
        preview = value.head(5).to_string(max_rows=5)
        return (f"- `{name}`: pandas Series {value.name!r} of {len(value)} values, dtype {value.dtype}\n"
                f"  first values:\n{textwrap.indent(preview, '    ')}")
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"- `{name}`: {kind} with shape {value.shape}, dtype {value.dtype}"
    if isinstance(value, (int, float, str, bool)):
        return f"- `{name}`: {kind} = {value!r}"[:120]
    if isinstance(value, Mapping):
        keys = ", ".join(repr(k) for k in list(value)[:8])
        return f"- `{name}`: {kind} of length {len(value)}, keys {keys}{', ...' if len(value) > 8 else ''}"
    if hasattr(value, "__len__"):
        head = repr(list(value)[:5])[:80] if hasattr(value, "__iter__") else ""
        return f"- `{name}`: {kind} of length {len(value)}" + (f", starting {head}" if head else "")
    return f"- `{name}`: {kind}"


def _column_table(frame: Any) -> list[str]:
    """Like ``df.info()``, plus what the values look like."""
    width = max([len(str(c)) for c in frame.columns] + [6])
    lines = [f"{'column':<{width}}  {'dtype':<14}  {'non-null':>8}  values"]
    for column in frame.columns[:30]:
        series = frame[column]
        lines.append(f"{str(column):<{width}}  {str(series.dtype):<14}  {int(series.notna().sum()):>8}  {_values_hint(series)}")
    if len(frame.columns) > 30:
        lines.append(f"... and {len(frame.columns) - 30} more columns")
    return lines


def _values_hint(series: Any) -> str:
    values = series.dropna()
    if values.empty:
        return "(all missing)"
    kind = getattr(series.dtype, "kind", "O")
    if kind in "iuf":
        return f"{values.min():g} to {values.max():g}"
    if kind == "M":
        return f"{values.min()} to {values.max()}"
    if kind == "b":
        return "True/False"
    distinct = values.astype(str).value_counts()
    shown = ", ".join(repr(v[:30]) for v in distinct.index[:5])
    return f"{len(distinct)} distinct: {shown}{', ...' if len(distinct) > 5 else ''}"


_USE_AS_IS = (
    "These variables already exist in the program's Python session, holding the user's real "
    "data. Use them as they are: do not create them, load them from files, or replace them "
    "with sample data."
)
_ONLY_THESE = "Answer it from {} as described above: the examples' frames are not in the session."
# The user's words about the output win: a format (`@name[value]`), a rounding, names or units the question
# asks for are printed as asked; the product's own default (just the number) applies only where it asks none.
DATA_INSTRUCTIONS = ("End by printing the answer exactly in the form the question asks for (its format, rounding and "
                     "names); if it asks for no form, print just the answer (just the number, for a number).")
# A chart is checked by the data it draws (engine.charts): the numbers printed first show the user
# what it plots, and the title and labels say what the chart shows.
CHART_INSTRUCTIONS = ("Compute the numbers the chart shows and print them, then draw the chart from them, "
                      "with a title and axis labels taken from the question.")


def asks_for_chart(question: str) -> bool:
    """"Draw a bar chart ...", "plot ... over time", "make a histogram": the answer is a chart."""
    return bool(_CHART_WORDING.search(question))


def look_text(output: str) -> str:
    """The look's output as a prompt section (cut to :data:`MAX_LOOK_CHARS`)."""
    shown = output.strip()
    if len(shown) > MAX_LOOK_CHARS:
        shown = shown[:MAX_LOOK_CHARS] + "\n...[cut]"
    return ("A first look at the data (the output of a program that printed what the question is about; "
            "it is not the answer, and the variables are unchanged):\n```\n" + shown + "\n```")


def question_text(question: str, variables: Mapping[str, Any] | None, look: str | None = None,
                  data_first: bool = False, examples: str | None = None) -> str:
    """The question, and for one about the user's variables what they hold (and the data look's
    output, once there is one: :mod:`pal_jupyter.engine.data_look`).

    ``data_first``: the data before the question, not after it. The next question about the same
    data then begins with the same tokens, which llama.cpp has cached, so it prefills only itself;
    and the zero-shot prompt answered more questions so (docs/decisions.md, "The data first").
    ``examples`` (with ``data_first``): a style's examples chosen for the question, shown between the
    data and the question, so that they are all that is read afresh for the next question about the
    same data (:class:`~.styles.DataPromptStyle`, ``idioms_inline``).
    """
    if not variables:
        return question
    instructions = CHART_INSTRUCTIONS if asks_for_chart(question) else DATA_INSTRUCTIONS
    data = describe_variables(variables)
    if data_first:
        # After examples about other frames the 1.5B model wrote their names (`trips`): say whose data it is.
        only = f"\n{_ONLY_THESE.format(', '.join(f'`{name}`' for name in variables))}" if examples else ""
        parts = [f"{_USE_AS_IS}\n{data}", *([look_text(look)] if look else []), *([examples] if examples else []),
                 f"Question: {question}{only}\n{instructions}"]
        return "\n\n".join(parts)
    text = f"{question}\n\n{_USE_AS_IS} {instructions}\n{data}"
    return f"{text}\n\n{look_text(look)}" if look else text
