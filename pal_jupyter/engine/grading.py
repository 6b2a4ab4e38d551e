"""Grading against a reference: a data set row's question and answer, and whether a program got it."""

from __future__ import annotations

from typing import Any

from ..kernels import ExecutionResult
from .answers import numbers_match, parse_number, reference_answer
from .charts import draws
from .records import ProgramAnswer


def question_of(row: dict[str, Any]) -> str:
    return str(row.get("question") or row.get("input") or "")


Expected = float | str | dict[str, Any] | None


def expected_of(row: dict[str, Any]) -> Expected:
    """The reference: a number, a text answer, the series a chart must draw ({"kind", "points"}:
    :func:`pal_jupyter.engine.charts.draws`), or "figure" (any figure will do)."""
    if row.get("chart"):
        return dict(row["chart"])
    if row.get("figure"):
        return "figure"
    if isinstance(row.get("answer"), str) and "####" not in row["answer"] and parse_number(row["answer"]) is None:
        return row["answer"]
    return reference_answer(row)


def is_correct(answer: ProgramAnswer | None, execution: ExecutionResult | None, expected: Expected) -> bool:
    if isinstance(expected, dict):
        return execution is not None and execution.ok and draws(execution.charts, expected)
    if expected == "figure":
        return execution is not None and execution.ok and execution.shows_figure
    if answer is None or expected is None:
        return False
    if isinstance(expected, str):
        return answer.kind == "text" and _text(answer.text) == _text(expected)
    return answer.kind == "number" and numbers_match(answer.value, expected)


def _text(text: str) -> str:
    return " ".join(text.casefold().strip(" '\"`.").split())
