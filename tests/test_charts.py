"""Charts vote by the data they draw: read back in real child kernels with real matplotlib, compared
by engine.charts, and an empty chart is fed back instead of shown as an answer."""

from __future__ import annotations

import pandas as pd
import pytest

from pal_jupyter import ExecutorLimits, KernelPool, ScriptedBackend, solve
from pal_jupyter.engine.charts import chart_answer, draws
from pal_jupyter.engine.grading import is_correct
from pal_jupyter.prompts.feedback import DREW_NO_DATA
from pal_jupyter.engine.vote import doubt_message, read_answer

SALES = pd.DataFrame({"region": ["East", "West", "East", "North", "West", "East"],
                      "units": [10, 4, 7, 5, 8, 3], "price": [5.0, 8.0, 9.0, 8.0, 4.0, 7.0]})
REVENUE = {"kind": "bars", "points": [["East", 134], ["West", 64], ["North", 40]]}
QUESTION = "Draw a bar chart of the total revenue (units times price) for each region."

PANDAS_BARS = ("revenue = (sales.units * sales.price).groupby(sales.region).sum()\n"
               "print(revenue)\nrevenue.plot.bar(title='Revenue by region')")
PYPLOT_BARS = ("import matplotlib.pyplot as plt\nsales['revenue'] = sales.units * sales.price\n"
               "t = sales.groupby('region')['revenue'].sum().sort_values()\n"
               "plt.bar(t.index, t.values)\nplt.title('Revenue')\nplt.show()")
HORIZONTAL = ("import matplotlib.pyplot as plt\nt = (sales.units * sales.price).groupby(sales.region).sum()\n"
              "fig, ax = plt.subplots()\nax.barh(list(t.index), list(t.values))")
EMPTY = "(sales.groupby('region')['units'].sum() * sales['price']).plot(kind='bar')"  # NaN bars: indexes misaligned
PER_ROW = "(sales.units * sales.price).plot.bar()"


def fenced(code: str) -> str:
    return f"```python\n{code}\n```\n"


@pytest.fixture(scope="module")
def pool():
    with KernelPool(ExecutorLimits(timeout_s=10, grace_s=1)) as pool:
        yield pool


def charts_of(pool: KernelPool, code: str):
    result = pool.run(code, {"sales": SALES})
    assert result.ok, result.error
    return result


@pytest.mark.parametrize("code", [PANDAS_BARS, PYPLOT_BARS, HORIZONTAL])
def test_bar_charts_drawn_three_ways_read_back_as_the_same_data(pool, code):
    result = charts_of(pool, code)
    assert result.has_mime("image/png"), "the figure is still shown"
    assert draws(result.charts, REVENUE)
    assert read_answer(result).same_as(read_answer(charts_of(pool, PANDAS_BARS)))
    assert is_correct(read_answer(result), result, REVENUE)


def test_a_chart_of_other_data_is_another_answer(pool):
    per_row = read_answer(charts_of(pool, PER_ROW))
    assert per_row.kind == "figure" and not per_row.same_as(read_answer(charts_of(pool, PANDAS_BARS)))
    assert not draws(charts_of(pool, PER_ROW).charts, REVENUE)


def test_lines_scatter_pie_and_histogram_are_read(pool):
    line = charts_of(pool, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4.0, 5.5, 6.0])\nplt.axhline(5)")
    assert draws(line.charts, {"kind": "line", "points": [[1, 4], [2, 5.5], [3, 6]]})  # the axhline is no series
    dated = charts_of(pool, "import pandas as pd\ns = pd.Series([1.0, 2.0, 4.0], index=pd.date_range('2025-01-01', periods=3, freq='MS'))\n"
                            "s.plot()")
    assert draws(dated.charts, {"kind": "line", "points": [["2025-01", 1], ["2025-02", 2], ["2025-03", 4]]})
    scatter = charts_of(pool, "import matplotlib.pyplot as plt\nplt.scatter(sales.units, sales.price)")
    assert draws(scatter.charts, {"kind": "scatter", "points": list(zip(SALES.units, SALES.price))})
    pie = charts_of(pool, "(sales.units * sales.price).groupby(sales.region).sum().plot.pie()")
    assert draws(pie.charts, {"kind": "pie", "points": REVENUE["points"]})  # shares of the whole
    hist = charts_of(pool, "import matplotlib.pyplot as plt\nplt.hist(sales.units, bins=3)")
    assert draws(hist.charts, {"kind": "bars", "points": [[4.17, 3], [6.5, 1], [8.83, 2]]})
    assert "a pie chart (East" in read_answer(pie).text and read_answer(line).text == "a line chart of 3 points (4, 5.5, 6)"


def test_an_empty_chart_is_no_answer_and_a_closed_one_is_only_a_figure(pool):
    empty = charts_of(pool, EMPTY)
    assert empty.charts and not any(chart.draws_data for chart in empty.charts)
    assert read_answer(empty).text == "a chart with no data"
    assert chart_answer([]).text == "a chart with no data"  # no axes at all
    closed = charts_of(pool, "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show(); plt.close('all')")
    assert closed.charts is None and read_answer(closed).text == "a figure"
    assert charts_of(pool, "print(42)").charts is None  # nothing shown: nothing read


def test_the_revenue_chart_votes_by_data_and_the_empty_chart_is_fed_back(pool):
    """The six-row question that once inserted an empty chart as '3 of 5 agree'."""
    model = ScriptedBackend([fenced(EMPTY), fenced(PANDAS_BARS),  # the two careful views disagree
                             fenced(PYPLOT_BARS), fenced(PER_ROW), fenced(EMPTY), fenced(HORIZONTAL)])
    careful = solve(QUESTION, model=model, executor=pool, variables={"sales": SALES})
    assert model.batch_sizes == [1, 1] and careful.programs[0].error_type == "EmptyChart"
    assert careful.final.code == PANDAS_BARS and draws(careful.final.execution.charts, REVENUE)
    assert careful.confidence != "high" and "agree on this answer" not in doubt_message(careful)
    # the vote method reads every program's chart the same way: three draw the same data and win
    model = ScriptedBackend([fenced(EMPTY), fenced(PANDAS_BARS), fenced(PYPLOT_BARS), fenced(PER_ROW), fenced(EMPTY),
                             fenced(HORIZONTAL)])
    session = solve(QUESTION, model=model, executor=pool, variables={"sales": SALES}, method="vote", samples=6,
                    max_programs=6)
    empties = [a for a in session.programs if a.code == EMPTY]
    assert len(empties) == 2 and all(a.off_target == DREW_NO_DATA and a.error_type == "EmptyChart" for a in empties)
    per_row = next(a for a in session.programs if a.code == PER_ROW)  # six bars, one per order, for three regions
    assert per_row.error_type == "NotGrouped" and "(6) than the data has region values (3)" in per_row.off_target
    winner = session.vote.winner
    assert winner.votes == 3 and winner.answer.text.startswith("a bar chart (East 134")
    assert draws(session.final.execution.charts, REVENUE)  # the program inserted draws the right data
    assert session.vote.tally == "3 of 6 programs draw the same chart data"
    assert "agree on this answer" not in doubt_message(session)


def test_a_chart_of_another_kind_than_the_question_names_is_sent_back(pool):
    """"... as a line chart": a bar chart of the same numbers answers another question."""
    question = "Plot the total units of each region as a line chart."
    line = "t = sales.groupby('region')['units'].sum()\nprint(t)\nt.plot(title='Units')"
    bars = "t = sales.groupby('region')['units'].sum()\nprint(t)\nt.plot.bar()"  # shorter: it would win a tie
    session = solve(question, model=ScriptedBackend([fenced(bars), fenced(line)]), executor=pool,
                    variables={"sales": SALES})
    refused = next(a for a in session.programs if a.code == bars)
    assert refused.off_target == ("drew the wrong kind of chart: a bar chart, where the question asks for a line "
                                  "chart; draw a line chart")
    assert refused.error_type == "WrongChartKind"
    assert session.final.code == line and session.final.execution.charts[0].series[0].kind == "line"
    assert [a.off_target for a in session.programs if a.code == line] == [None]


def test_when_every_chart_is_empty_the_model_is_told_why(pool):
    model = ScriptedBackend([fenced(EMPTY)] * 3 + [fenced(PANDAS_BARS)])  # two views and the idioms, then a repair
    session = solve(QUESTION, model=model, executor=pool, variables={"sales": SALES})
    assert [a.view for a in session.round(1)] == ["fixed", "zero", "idioms"]
    repair = session.round(2)[0]
    assert DREW_NO_DATA.split(":")[0] in repair.messages[-1]["content"]
    assert session.succeeded and draws(session.final.execution.charts, REVENUE)


@pytest.mark.parametrize("index, code", [
    (0, "import matplotlib.pyplot as plt\nsales['revenue'] = sales.units * sales.unit_price\n"
        "monthly = sales.resample('MS', on='date')['revenue'].sum()\nprint(monthly)\nplt.plot(monthly.index, monthly)"),
    (13, "ages = customers['age'].dropna()\nprint(ages.describe())\nages.plot.hist(bins=5, title='Ages')"),
    (18, "counts = sales.groupby(sales.date.dt.dayofweek).size()\nprint(counts)\ncounts.plot(kind='bar')"),
])
def test_the_chart_suite_references_are_what_a_right_program_draws(pool, index, code):
    from pal_jupyter.evaluation.dataframes import CHARTS, suite_rows

    rows = suite_rows(suite="charts")
    assert len(rows) == len(CHARTS) >= 20 and all(set(r["chart"]) == {"kind", "points"} for r in rows)
    row = rows[index]
    result = pool.run(code, row["variables"])
    assert result.ok and draws(result.charts, row["chart"]), (row["question"], result.charts)
    wrong = pool.run(code.replace("sum()", "mean()").replace("bins=5", "bins=6").replace("size()", "size() + 1"),
                     row["variables"])
    assert not draws(wrong.charts, row["chart"])


def test_a_chart_question_asks_for_the_table_first_and_a_titled_chart():
    from pal_jupyter import prompts

    chart = prompts.pal_messages(QUESTION, {"sales": SALES}, style="data-0shot")[-1]["content"]
    number = prompts.pal_messages("What is the total revenue? Print just the number.", {"sales": SALES},
                                  style="data-0shot")[-1]["content"]
    assert prompts.CHART_INSTRUCTIONS in chart and prompts.DATA_INSTRUCTIONS not in chart
    assert prompts.DATA_INSTRUCTIONS in number
    similar = prompts.pal_messages(QUESTION, {"sales": SALES}, style="data-similar")
    assert any("print(minutes_per_station)" in m["content"] for m in similar), "the chart idiom is shown"


@pytest.mark.parametrize("code, ignores", [
    ("sales.groupby('region').units.sum().plot.bar(title='Total units of West sold')", True),
    ("import matplotlib.pyplot as plt\nplt.title('West')\nplt.ylabel(f'units in West')\nsales.units.plot()", True),
    ("ax = sales.units.plot(label='West')\nax.legend(['West'])\nax.set_xlabel('West')", True),
    ("t = sales[sales.region == 'West'].units\nax = t.plot.bar(title='West')", False),
])
def test_a_chart_title_naming_the_filter_is_no_filter(code, ignores):
    """'Total units of West sold' in a title selects no rows: the program drew every region."""
    from pal_jupyter.engine.filters import ignored_values, named_values

    named = named_values("Draw a bar chart of the units sold in the West region.", {"sales": SALES})
    assert [n.value for n in named] == ["West"]
    assert bool(ignored_values(code, named)) is ignores


def test_the_columns_a_question_wants_one_value_per_are_found():
    from pal_jupyter.engine.filters import NamedGroup, ignored_values, named_groups

    assert named_groups(QUESTION, {"sales": SALES}) == [NamedGroup("sales", "region", "region", 3)]
    assert named_groups("Draw a bar chart of the units per order.", {"sales": SALES}) == []
    assert named_groups("Plot the price by regions.", {"sales": SALES})[0].column == "region"
    assert ignored_values("print(1)", named_groups(QUESTION, {"sales": SALES})) == []  # no code is asked of it
