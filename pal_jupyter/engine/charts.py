"""Charts as answers: two programs' charts agree when they draw the same data.

A chart question has no number to vote on, and "a figure" is not an answer: an empty chart, or
one bar per row where one per region was asked, is a figure too. What a chart draws is read back
in its kernel (:mod:`pal_jupyter.kernels.charts`) and compared here:

* **bars** (bar, barh, histogram) and **pie** wedges compare by their values, in any order: the
  labels under them come in many forms for the same data ("2025-01-31 00:00:00", "Jan 2025");
* a **line** compares by its values in the order of its x axis (dates come as different numbers
  from pandas and from matplotlib, so the x values themselves are left out);
* a **scatter** compares by its set of points.

Values are compared to 4 significant digits (float noise aside); the series' legend names and the
axes' order do not matter. A chart that draws nothing but missing values or zeros (pandas draws a
NaN bar at height 0) drew no data: it is no answer, and is fed back (``prompts.feedback.DREW_NO_DATA``).
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from ..kernels.charts import Chart, Series
from .records import NO_DATA_KEY, ProgramAnswer

KIND_NAMES = {"bars": "bar chart", "line": "line chart", "scatter": "scatter plot", "pie": "pie chart"}
SHOWN_POINTS = 6  # values named in a chart's description; the rest are counted


def chart_answer(charts: Sequence[Chart]) -> ProgramAnswer:
    """What a program's charts answer: their data, or an answer marked as drawing none."""
    if not any(chart.draws_data for chart in charts):
        return ProgramAnswer("figure", "a chart with no data", key=NO_DATA_KEY)
    return ProgramAnswer("figure", describe(charts), key=chart_key(charts))


def chart_key(charts: Sequence[Chart]) -> str:
    """What charts that draw the same data share."""
    return json.dumps(sorted(json.dumps(series_key(s)) for chart in charts for s in chart.series if s.draws_data))


def series_key(series: Series) -> list[Any]:
    values = [_value(y) for _, y in series.points]
    if series.kind in ("bars", "pie"):
        return [series.kind, sorted(values)]
    if series.kind == "line":
        ordered = sorted(series.points, key=lambda point: (not isinstance(point[0], float), point[0] or 0))
        return ["line", [_value(y) for _, y in ordered]]
    return [series.kind, sorted([_value(x if isinstance(x, float) else None), _value(y)] for x, y in series.points)]


def _value(value: float | None) -> str:
    return "nan" if value is None else f"{value:.4g}"


def describe(charts: Sequence[Chart]) -> str:
    """'a bar chart (East 134, North 40, West 64)', 'a line chart of 3 points (4, 5.5, 6)' (for people)."""
    parts = [_describe(s) for chart in charts for s in chart.series if s.draws_data]
    return " and ".join(parts) if len(parts) <= 2 else f"{parts[0]} and {len(parts) - 1} more series"


def _describe(series: Series) -> str:
    """Enough of the data to tell two charts apart: 'a line chart of 3 points (120, 90, 150)'."""
    name = KIND_NAMES.get(series.kind, series.kind)
    more = f", {len(series.points) - SHOWN_POINTS} more" if len(series.points) > SHOWN_POINTS else ""
    if series.kind == "scatter":
        return f"a {name} of {len(series.points)} points"
    if series.kind == "line":
        shown = ", ".join(_value(y) for _, y in series.points[:SHOWN_POINTS])
        return f"a {name} of {len(series.points)} points ({shown}{more})"
    shown = ", ".join(f"{_label(x)} {_value(y)}" for x, y in series.points[:SHOWN_POINTS])
    return f"a {name} ({shown}{more})"


def _label(x: str | float | None) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def _position(x: Any) -> str | float:
    """A reference's x as a read chart holds it: a number as a float (numpy's too), else text."""
    return float(x) if isinstance(x, numbers.Real) and not isinstance(x, bool) else str(x)


def draws(charts: Sequence[Chart] | None, expected: Mapping[str, Any]) -> bool:
    """Whether ``charts`` draw the ``expected`` series ({"kind": "bars", "points": [[label, value], ...]}),
    read as :func:`chart_key` reads them: a benchmark's reference for a chart question."""
    if not charts:
        return False
    points = [(_position(x), None if y is None else float(y)) for x, y in expected["points"]]
    if expected["kind"] == "pie":  # a pie draws each value's share of the whole
        total = sum(y for _, y in points if y is not None)
        points = [(x, None if y is None else y / total) for x, y in points]
    wanted = series_key(Series(expected["kind"], "", tuple(points)))
    return any(series_key(s) == wanted for chart in charts for s in chart.series)
