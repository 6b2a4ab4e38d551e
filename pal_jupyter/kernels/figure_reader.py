"""Runs *inside* a program's kernel: what the open matplotlib figures draw, as JSON.

This file is never imported by pal_jupyter: :mod:`.charts` sends its source to the kernel, where
it runs in a namespace of its own (the program's globals stay as the program left them), after
the program, while its figures are still open. It needs only matplotlib and the standard library.
pandas' ``.plot`` draws through matplotlib, so its charts read the same way (tested); seaborn does
too, but is not installed here and was not tested.

Each axes becomes ``{"title", "xlabel", "ylabel", "series": [...]}``; each series is
``{"kind", "label", "points": [[x, y], ...]}`` where ``kind`` is

* ``bars``: a bar container (``bar``, ``barh``, ``hist``; pandas' bar plots and histograms): x is the
  category label under the bar (its tick label) or, without one, the bar's centre; y its height
  (its width for horizontal bars);
* ``line``: a line in data coordinates; x is its x value, y its y value (vertical segments, such
  as seaborn's error bars, are left out: they are not data);
* ``scatter``: the points of a scatter plot;
* ``pie``: each wedge's label and its share of the circle.

A value that is not a finite number (an all-NaN bar from misaligned indexes) is ``None``, so the
reader of the JSON can tell a chart that draws nothing.
"""

import json
import math

MAX_POINTS = 2000  # per series: enough to compare any chart a question asks for, and bounded


def _number(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _tick_labels(axis):
    """{tick position: label text} on an axis of categories or dates; {} on a numeric axis (a
    histogram's bins are known by their centres, not by the round numbers ticked under them)."""
    from matplotlib.ticker import LogFormatter, ScalarFormatter

    if isinstance(axis.get_major_formatter(), (ScalarFormatter, LogFormatter)):
        return {}
    labels = {}
    for position, text in zip(axis.get_ticklocs(), axis.get_ticklabels()):
        if text.get_text().strip():
            labels[float(position)] = text.get_text().strip()
    return labels


def _category(position, width, labels):
    """The tick label at a bar's centre, or the centre itself when no label sits there."""
    for tick, label in labels.items():
        if abs(tick - position) <= max(abs(width) / 2, 1e-9):
            return label
    return _number(position)


def _bars(ax, container):
    horizontal = getattr(container, "orientation", "vertical") == "horizontal"
    labels = _tick_labels(ax.yaxis if horizontal else ax.xaxis)
    points = []
    for patch in container.patches[:MAX_POINTS]:
        if horizontal:
            centre, size, value = patch.get_y() + patch.get_height() / 2, patch.get_height(), patch.get_width()
        else:
            centre, size, value = patch.get_x() + patch.get_width() / 2, patch.get_width(), patch.get_height()
        points.append([_category(centre, size, labels), _number(value)])
    return {"kind": "bars", "label": str(container.get_label() or ""), "points": points}


def _line(ax, line):
    if line.get_transform() != ax.transData:  # axhline, axvline: drawn in axes coordinates
        return None
    xs, ys = line.get_xdata(orig=False), line.get_ydata(orig=False)
    try:
        xs, ys = list(xs), list(ys)
    except TypeError:
        return None
    if len(xs) >= 2 and len({_number(x) for x in xs}) == 1:
        return None  # a vertical segment: an error bar or a marker line, not a series
    return {"kind": "line", "label": str(line.get_label() or ""),
            "points": [[_number(x), _number(y)] for x, y in list(zip(xs, ys))[:MAX_POINTS]]}


def _scatter(ax, collection):
    if collection.get_offset_transform() != ax.transData:
        return None
    offsets = collection.get_offsets()
    if len(offsets) == 0:
        return None
    return {"kind": "scatter", "label": str(collection.get_label() or ""),
            "points": [[_number(x), _number(y)] for x, y in list(offsets)[:MAX_POINTS]]}


def _pie(wedges):
    return {"kind": "pie", "label": "",
            "points": [[str(w.get_label() or ""), _number((w.theta2 - w.theta1) / 360.0)] for w in wedges]}


def _axes(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.container import BarContainer
    from matplotlib.patches import Wedge

    series = [_bars(ax, c) for c in ax.containers if isinstance(c, BarContainer)]
    series += [s for s in (_line(ax, line) for line in ax.lines) if s is not None]
    series += [s for s in (_scatter(ax, c) for c in ax.collections if isinstance(c, PathCollection))
               if s is not None]
    wedges = [p for p in ax.patches if isinstance(p, Wedge)]
    if wedges:
        series.append(_pie(wedges))
    return {"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(), "series": series}


def read_figures():
    """JSON: one entry per axes of every open figure (a colorbar's axes draws no data of its own)."""
    import sys

    if "matplotlib.pyplot" not in sys.modules:
        return "[]"
    import matplotlib.pyplot as plt

    charts = []
    for number in plt.get_fignums():
        figure = plt.figure(number)
        figure.canvas.draw()  # tick labels are set when a figure is drawn
        charts += [_axes(ax) for ax in figure.axes if ax.get_label() != "<colorbar>"]
    return json.dumps(charts)
