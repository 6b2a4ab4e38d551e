"""Values and periods a question names in the user's data, and programs that never select them.

"How many units of Gadget were sold in the West region?" names ``'Gadget'`` in ``product`` and
``'West'`` in ``region``. A program whose code never mentions one of them sums over the wrong rows,
and small models do so often and alike, so the vote agrees on the wrong answer. Selecting rows by a
value takes it as a string (``== 'West'``, ``.isin(['West'])``, ``.loc['West']``, ``query(...)``), so
the program's strings are searched, not its names (``west_total`` selects nothing). Such programs do
not vote and are sent back for repair (:func:`pal_jupyter.engine.vote.mark_off_target`).

A value counts as named when the question has it as a whole word with the same case and it looks like
a name (a capital or a digit: ``'West'``, ``'SKU-12'``), or when the question quotes it: "the total
revenue" must not make ``'total'`` a filter. A period counts when the question names a month and year
("in March 2025", "2025-03") or a year after a preposition ("in 2024"), not a boundary ("before 1 July
2024"). Its selection is read leniently (:func:`selects_period`: the month's name, a year-month string,
or its number next to the year or "month"), since a false alarm sends a right program back; labels a
program prints are not a selection. Measured: docs/decisions.md, "Programs that never use a value the
question names".
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_DISTINCT = 200  # columns with more distinct values are free text or ids, not categories
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
_MONTH_WORD = "|".join([*MONTHS, "Sept", *(m[:3] for m in MONTHS if len(m) > 3)])
_YEAR = r"(?:19|20)\d\d"
# "March 2025", "Mar. 2025", "March of 2025", "March, 2025", "2025-03" (not a day: "2025-03-05").
_MONTH_YEAR = re.compile(rf"\b(?P<month>{_MONTH_WORD})\.?,?\s+(?:of\s+)?(?P<year>{_YEAR})\b"
                         rf"|\b(?P<iso_year>{_YEAR})-(?P<iso_month>0[1-9]|1[0-2])\b(?!-\d)")
# "in 2024", "during the year 2024", "for fiscal year 2024"; "2024-..." is a month or a day, not the year. The
# preposition is what makes it a period ("by 2024", "the end of 2024" are boundaries).
_YEAR_ALONE = re.compile(rf"\b(?:in|during|for|throughout|within)\s+(?:the\s+)?(?:(?:fiscal|calendar)\s+)?"
                         rf"(?:year\s+)?(?P<year>{_YEAR})\b(?![-/]\d)", re.IGNORECASE)
# What just before a period makes it a boundary or a day, not the period: "before 1 July 2024".
_NOT_A_PERIOD = re.compile(r"(?:\b(?:before|after|since|until|till|through|thru|to|from|between|and|by|than|"
                           r"(?:end|start|beginning|middle)\s+of|prior\s+to|as\s+of)\s+(?:the\s+)?"
                           r"|\d(?:st|nd|rd|th)?\s+(?:of\s+)?)$", re.IGNORECASE)


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


@dataclass(frozen=True)
class NamedPeriod(NamedValue):
    """A month or a year the question names, which a date column of one of the user's frames spans
    more than: the program must select its rows. ``value`` is the period as pandas writes it
    (``'2024-03'``, ``'2024'``), so the records travel where named values do."""

    year: int = 0
    month: int | None = None  # None: the whole year

    @property
    def label(self) -> str:
        """'March 2024', or '2024': the period in the question's words."""
        return f"{MONTHS[self.month - 1]} {self.year}" if self.month else str(self.year)

    @property
    def selection(self) -> str:
        """Code that selects the period's rows, for the repair prompt."""
        column = f"{self.variable}[{self.column!r}]"
        if self.month:
            return f"{self.variable}[{column}.dt.to_period('M') == {self.value!r}]"
        return f"{self.variable}[{column}.dt.year == {self.year}]"

    @property
    def where(self) -> str:
        """"the rows of March 2024 (dates in sales['date'])": for people and for the model."""
        return f"the rows of {self.label} (dates in {self.variable}[{self.column!r}])"


def is_frame(value: Any) -> bool:
    """Whether ``value`` is a DataFrame (or quacks like one): what the data checks look into."""
    return hasattr(value, "columns") and hasattr(value, "select_dtypes") and hasattr(value, "isna")


@dataclass(frozen=True)
class NamedGroup(NamedValue):
    """A column the question wants one value per ("of each product", "per region"): a chart of it
    draws at most one bar or wedge per value of the column (:func:`pal_jupyter.engine.vote.mark_off_target`).
    ``value`` is the column's name, ``distinct`` how many values it holds."""

    distinct: int = 0


def named_groups(question: str, variables: Mapping[str, Any] | None) -> list[NamedGroup]:
    """The columns of ``variables``' DataFrames that ``question`` asks for one value per: "each
    region", "per product", "by city" (the column's name, underscores read as spaces, plural too)."""
    groups = []
    for name, frame in (variables or {}).items():
        if not is_frame(frame):
            continue
        for column in frame.columns:
            words = re.escape(str(column).replace("_", " "))
            if re.search(rf"\b(?:each|per|every|by)\s+{words}(?:e?s)?\b", question, re.IGNORECASE):
                distinct = frame[column].nunique()
                if distinct <= MAX_DISTINCT:
                    groups.append(NamedGroup(str(name), str(column), str(column), int(distinct)))
    return groups


def named_values(question: str, variables: Mapping[str, Any] | None) -> list[NamedValue]:
    """The values of the text columns of ``variables``' DataFrames that ``question`` names, then the
    periods it names that a date column spans more than (:class:`NamedPeriod`), then the columns it
    asks for one value per (:class:`NamedGroup`)."""
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
    return [*named, *named_periods(question, variables), *named_groups(question, variables)]


def _names(question: str, value: str) -> bool:
    value = value.strip()
    if len(value) < 2 or not re.search(r"[A-Za-z]", value):
        return False
    if value[0].isupper() or re.search(r"\d", value):
        return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", question) is not None
    return re.search(rf"""["'`]{re.escape(value)}["'`]""", question) is not None


def named_periods(question: str, variables: Mapping[str, Any] | None) -> list[NamedPeriod]:
    """The months and years ``question`` names (:func:`periods`) that a datetime column of
    ``variables``' DataFrames holds rows both in and out of: one record per period, on the first such
    column. A column wholly inside the period needs no selection; one wholly outside it is not what
    the period is about ("orders in 2025 by customers who signed up in 2024")."""
    named: list[NamedPeriod] = []
    for year, month in periods(question):
        column = next(_spanning_columns(variables, year, month), None)
        if column is not None:
            value = f"{year}-{month:02d}" if month else str(year)
            named.append(NamedPeriod(column[0], column[1], value, year, month))
    return named


def periods(question: str) -> list[tuple[int, int | None]]:
    """(year, month) of each month the question names ("in March 2025", "2025-03"), then (year,
    None) of each year it names after a preposition ("in 2024"); boundaries and days ("before 1 July
    2024") left out, and each period once."""
    found: list[tuple[int, int | None]] = []
    for match in _MONTH_YEAR.finditer(question):
        if not _NOT_A_PERIOD.search(question[:match.start()]):
            year = int(match["year"] or match["iso_year"])
            found.append((year, int(match["iso_month"]) if match["iso_month"] else _month_number(match["month"])))
    found += [(int(match["year"]), None) for match in _YEAR_ALONE.finditer(question)]
    return list(dict.fromkeys(found))


def _month_number(word: str) -> int:
    return next(i for i, name in enumerate(MONTHS, 1) if name.startswith(word[:3]))


def _spanning_columns(variables: Mapping[str, Any] | None, year: int, month: int | None) -> Iterator[tuple[str, str]]:
    """(variable, column) of the datetime columns with rows both in and out of the period."""
    for name, frame in (variables or {}).items():
        if not is_frame(frame):
            continue
        for column in frame.select_dtypes(include=["datetime", "datetimetz"]).columns:
            dates = frame[column].dropna()
            inside = dates.dt.year == year
            if month:
                inside &= dates.dt.month == month
            if inside.any() and not inside.all():
                yield str(name), str(column)


def ignored_values(code: str, named: Sequence[NamedValue]) -> list[NamedValue]:
    """The named values that no string in ``code`` holds (compared ignoring case: ``.str.lower() ==
    'west'`` is a use; a variable called ``west_total`` is not), and the named periods it never
    selects (:func:`selects_period`)."""
    if not named:
        return []
    strings = " ".join(_strings(code)).casefold()
    return [n for n in named if not isinstance(n, NamedGroup)
            and not (selects_period(code, n) if isinstance(n, NamedPeriod) else n.value.casefold() in strings)]


def selects_period(code: str, period: NamedPeriod) -> bool:
    """Whether ``code`` may select ``period``'s rows, read leniently: the month's name or
    abbreviation (``'March'``, ``%b == 'Mar'``), its number with the year (``'2024-03'``,
    ``datetime(2024, 3, 1)``, ``dt.year == 2024``) or with the word month (``dt.month == 3``,
    ``query("date.dt.month == 3")``); for a year, the year. Comments and the labels a program prints
    do not count (:func:`_selecting_text`)."""
    text = _selecting_text(code)
    numbers = {int(n) for n in re.findall(r"\d+", text)}
    if not period.month:
        return period.year in numbers
    name = MONTHS[period.month - 1]
    if re.search(rf"\b(?:{name}|{name[:3]})(?![a-z])", text, re.IGNORECASE):
        return True
    if re.search(rf"(?<!\d){period.year}{period.month:02d}(?!\d)", text):  # '202403'
        return True
    with_month = period.year in numbers or re.search(r"month|%m", text, re.IGNORECASE) is not None
    return period.month in numbers and with_month


def _selecting_text(code: str) -> str:
    """``code`` without its comments and without the string labels it prints (``print("Orders in
    March 2025:", n)``, ``print(f"March 2025: {n}")``), whose words select nothing; the whole text when
    it does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    labels = {id(node) for call in ast.walk(tree) if _is_print(call) for arg in call.args for node in _labels(arg)}
    for node in ast.walk(tree):
        if id(node) in labels:
            node.value = ""
    return ast.unparse(tree)


def _is_print(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"


def _labels(node: ast.AST) -> list[ast.Constant]:
    """The string constants a printed expression shows as text: itself, an f-string's literal parts,
    the two sides of ``+`` / ``%``, the receiver of ``.format()``. What sits inside ``{...}`` or a
    call's arguments is code (``f"{sales.loc['2024-03'].units.sum()}"``), not a label."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.JoinedStr):
        return [part for part in node.values if isinstance(part, ast.Constant)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _labels(node.left) + _labels(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _labels(node.func.value)
    return []


# A chart's title and labels name what the question names ("Total units of Gadget per region") and
# select nothing: a program that only writes 'Gadget' in its title still draws every product.
_LABEL_KEYWORDS = {"title", "xlabel", "ylabel", "label", "suptitle"}
_LABEL_CALLS = {"title", "xlabel", "ylabel", "suptitle", "set_title", "set_xlabel", "set_ylabel", "set_label",
                "legend", "text", "annotate"}


def _strings(code: str) -> list[str]:
    """The string literals of a program (f-strings' literal parts included) but a chart's titles and
    labels; the whole text when it does not parse."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [code]
    labels = {id(node) for call in ast.walk(tree) if isinstance(call, ast.Call) for node in _chart_labels(call)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in labels]


def _chart_labels(call: ast.Call) -> list[ast.Constant]:
    """The strings a call writes on a chart: ``title=``/``xlabel=``... anywhere, and the text of
    ``plt.title(...)``, ``ax.set_xlabel(...)``, ``ax.legend(...)`` and the like."""
    nodes = [kw.value for kw in call.keywords if kw.arg in _LABEL_KEYWORDS]
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if name in _LABEL_CALLS:
        nodes += call.args
    return [part for node in nodes for part in ast.walk(node) if isinstance(part, ast.Constant)]
