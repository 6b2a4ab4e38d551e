"""What a program's charts draw: read back in its kernel, as typed records.

A picture cannot be voted on, but the data behind it can: after a program that showed a figure
has run, its kernel is asked (a silent request, :func:`reader_expression`) what every open
figure draws, through :mod:`.figure_reader`. The kernel keeps its figures open for this
(``InlineBackend.close_figures`` is off in :func:`.command.setup_code`: each kernel runs one
program, so nothing carries over). :func:`parse_charts` turns the JSON reply into :class:`Chart`
records, which the engine compares (:mod:`pal_jupyter.engine.charts`).
"""

from __future__ import annotations

import ast
import functools
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

Label = str | float | None  # a category's label, or a position on the x axis
CHARTS_EXPRESSION = "charts"  # the name of the user expression the kernel answers


@dataclass(frozen=True)
class Series:
    """One thing an axes draws: ``bars``, a ``line``, a ``scatter`` of points or a ``pie``."""

    kind: str
    label: str  # the legend's name for it ('' when it has none)
    points: tuple[tuple[Label, float | None], ...]  # (x or category, value); None: not a finite number

    @property
    def draws_data(self) -> bool:
        """Some value is a finite number that is not zero (pandas draws a NaN bar at height 0)."""
        return any(value is not None and value != 0 for _, value in self.points)


@dataclass(frozen=True)
class Chart:
    """One axes of a figure: its labels and what it draws."""

    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]

    @property
    def draws_data(self) -> bool:
        return any(s.draws_data for s in self.series)


@functools.cache  # read once, when a first figure is shown, not when pal_jupyter is imported
def reader_expression() -> str:
    """An expression the kernel evaluates to the JSON of its open figures, in a namespace of its
    own: the program's globals are left exactly as the program left them."""
    source = Path(__file__).with_name("figure_reader.py").read_text(encoding="utf-8")
    return f"(lambda ns: (exec({source!r}, ns), ns['read_figures']())[1])({{}})"


def parse_charts(reply: dict[str, Any]) -> list[Chart] | None:
    """The charts in a kernel's answer to :func:`reader_expression` (a user expression's reply
    content), or None when the kernel could not read its figures."""
    if reply.get("status") != "ok":
        logger.info("figures could not be read back: %s: %s", reply.get("ename"), reply.get("evalue"))
        return None
    try:
        raw = json.loads(ast.literal_eval(reply["data"]["text/plain"]))
        return [chart_from_json(axes) for axes in raw]
    except (KeyError, ValueError, TypeError, SyntaxError) as exc:
        logger.info("figures read back in an unexpected form: %s", exc)
        return None


def chart_from_json(axes: dict[str, Any]) -> Chart:
    """A :class:`Chart` from its JSON form: what the kernel sends, or ``dataclasses.asdict`` of one."""
    series = tuple(Series(str(s["kind"]), _legend(s.get("label")), tuple((_label(x), _value(y)) for x, y in s["points"]))
                   for s in axes["series"])
    return Chart(str(axes.get("title") or ""), str(axes.get("xlabel") or ""), str(axes.get("ylabel") or ""), series)


def _legend(label: Any) -> str:
    """matplotlib names unlabelled artists '_child0', '_container1', '_nolegend_': no name at all."""
    text = str(label or "")
    return "" if text.startswith("_") else text


def _label(x: Any) -> Label:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x) if math.isfinite(x) else None
    return None if x is None else str(x)


def _value(y: Any) -> float | None:
    if isinstance(y, (int, float)) and not isinstance(y, bool) and math.isfinite(y):
        return float(y)
    return None
