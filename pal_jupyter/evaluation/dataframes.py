"""A benchmark of questions about DataFrames, the way analysts ask them in a notebook.

Three DataFrames are built in code (``sales``: orders with dates, regions, products, prices
and missing discounts; ``customers``: who ordered, with missing ages; ``weather``: daily
readings for three cities with missing rain). Each question hands the program only the frames
it needs, exactly as ``%%pal --use sales,customers`` does, and its reference answer is computed
here with pandas from the same frames, so answers stay right whatever the random data is.

Categories: filters, groupby, merges, dates, pivots, missing values, and charts, which are right
when the chart the winning program draws shows the reference's data (read back in its kernel:
:mod:`pal_jupyter.engine.charts`). ``CHARTS`` is a suite of its own: 22 chart questions (bar, line,
scatter, histogram, pie; groupby, filters, dates, missing values), the first five of which are
also in the DataFrame suite.

Run them with ``pal-jupyter bench --data dataframes`` and ``--data charts``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

NUMBER = " Print just the number."


@dataclass(frozen=True)
class DataQuestion:
    category: str
    question: str
    uses: tuple[str, ...]  # the frames handed to the program
    reference: Callable[[dict[str, Any]], Any]  # frames -> the answer, or the series a chart must draw


def build_frames(seed: int = 2026) -> dict[str, Any]:
    """The suite's DataFrames (deterministic for a given seed and numpy version)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    n = 80
    products = {"Widget": 4.5, "Gadget": 12.0, "Gizmo": 7.25}
    product = rng.choice(list(products), n)
    days = pd.date_range("2025-01-01", "2025-06-30", freq="D")
    discount = rng.choice([0.05, 0.1, 0.15, 0.2], n)
    discount = np.where(rng.random(n) < 0.3, np.nan, discount)  # about 30 % of orders: none recorded
    sales = pd.DataFrame({
        "order_id": np.arange(1001, 1001 + n),
        "date": np.sort(rng.choice(days.values, n)),
        "region": rng.choice(["East", "West", "North", "South"], n),
        "product": product,
        "units": rng.integers(1, 20, n),
        "unit_price": [products[p] for p in product],
        "discount": discount,
        "customer_id": rng.integers(1, 29, n),  # ids 26 to 28 are not in `customers`
    })
    m = 25
    ages = rng.integers(19, 70, m).astype(float)
    ages[[3, 11, 17]] = np.nan
    customers = pd.DataFrame({
        "customer_id": np.arange(1, m + 1),
        "name": [f"Customer {i:02d}" for i in range(1, m + 1)],
        "city": rng.choice(["Leeds", "Porto", "Lyon", "Turin"], m),
        "segment": rng.choice(["Consumer", "Business"], m),
        "signup_date": pd.to_datetime("2023-01-01") + pd.to_timedelta(rng.integers(0, 700, m), unit="D"),
        "age": ages,
    })
    dates = pd.date_range("2025-03-01", "2025-04-29", freq="D")
    base = {"Oslo": 4.0, "Lima": 21.0, "Pune": 31.0}
    rows = []
    for city, mean in base.items():
        temps = np.round(mean + rng.normal(0, 3, len(dates)), 1)
        rain = np.round(rng.gamma(1.2, 2.5, len(dates)), 1)
        rain[rng.random(len(dates)) < 0.1] = np.nan
        rows.append(pd.DataFrame({"date": dates, "city": city, "temp_c": temps, "rain_mm": rain}))
    weather = pd.concat(rows, ignore_index=True)
    return {"sales": sales, "customers": customers, "weather": weather}


def _revenue(s: Any) -> Any:
    return s["units"] * s["unit_price"]


def _with_customers(f: dict[str, Any]) -> Any:
    return f["sales"].merge(f["customers"], on="customer_id")


def _bars(table: Any) -> dict[str, Any]:
    """The series a bar chart of ``table`` (a Series: labels -> heights) draws."""
    return {"kind": "bars", "points": [[str(label), float(value)] for label, value in table.items()]}


def _line(table: Any) -> dict[str, Any]:
    return {"kind": "line", "points": [[str(x), float(y)] for x, y in table.items()]}


def _pie(table: Any) -> dict[str, Any]:
    return {**_bars(table), "kind": "pie"}


def _scatter(xs: Any, ys: Any) -> dict[str, Any]:
    return {"kind": "scatter", "points": [[float(x), float(y)] for x, y in zip(xs, ys)]}


def _histogram(values: Any, bins: int) -> dict[str, Any]:
    import numpy as np

    counts, edges = np.histogram(values.dropna(), bins=bins)
    return {"kind": "bars", "points": [[float((a + b) / 2), float(c)] for a, b, c in zip(edges, edges[1:], counts)]}


def _monthly(s: Any, values: Any, how: str = "sum") -> Any:
    return values.groupby(s["date"].dt.to_period("M")).agg(how)


def _age_against_units(f: dict[str, Any]) -> dict[str, Any]:
    per_customer = f["sales"].groupby("customer_id").units.sum().rename("units").reset_index()
    joined = per_customer.merge(f["customers"], on="customer_id").dropna(subset=["age"])
    return _scatter(joined.age, joined.units)


# Chart questions: right when the chart the program draws shows the reference's data (engine.charts:
# bars and pies by their values, lines by their values in x order, scatters by their points).
CHARTS: tuple[DataQuestion, ...] = (
    DataQuestion("chart", "Plot the total revenue (units times unit_price) per month from sales as a line chart.",
                 ("sales",), lambda f: _line(_monthly(f["sales"], _revenue(f["sales"])))),
    DataQuestion("chart", "Draw a bar chart of the total units per region.", ("sales",),
                 lambda f: _bars(f["sales"].groupby("region").units.sum())),
    DataQuestion("chart", "Plot Oslo's daily temperature over time.", ("weather",),
                 lambda f: _line(f["weather"][f["weather"].city == "Oslo"].set_index("date").temp_c)),
    DataQuestion("chart", "Make a histogram of the units per order with 10 bins.", ("sales",),
                 lambda f: _histogram(f["sales"].units, 10)),
    DataQuestion("chart", "Draw a scatter plot with each customer's age on the x axis and the total units they "
                 "bought on the y axis (match orders to customers by customer_id).", ("sales", "customers"),
                 _age_against_units),
    DataQuestion("chart", "Draw a bar chart of the number of orders of each product.", ("sales",),
                 lambda f: _bars(f["sales"]["product"].value_counts())),
    DataQuestion("chart", "Draw a bar chart of the average units per order in each region.", ("sales",),
                 lambda f: _bars(f["sales"].groupby("region").units.mean())),
    DataQuestion("chart", "Draw a pie chart of the share of orders from each region.", ("sales",),
                 lambda f: _pie(f["sales"].region.value_counts())),
    DataQuestion("chart", "Draw a horizontal bar chart of the total revenue (units times unit_price) of each product.",
                 ("sales",), lambda f: _bars(_revenue(f["sales"]).groupby(f["sales"]["product"]).sum())),
    DataQuestion("chart", "Plot the number of orders per month as a line chart.", ("sales",),
                 lambda f: _line(_monthly(f["sales"], f["sales"].order_id, "count"))),
    DataQuestion("chart", "Draw a bar chart of the total rain_mm of each city (skip missing readings).", ("weather",),
                 lambda f: _bars(f["weather"].groupby("city").rain_mm.sum())),
    DataQuestion("chart", "Plot Lima's daily rain_mm over time as a line chart, counting a missing reading as 0.",
                 ("weather",),
                 lambda f: _line(f["weather"][f["weather"].city == "Lima"].set_index("date").rain_mm.fillna(0))),
    DataQuestion("chart", "Draw a bar chart of the average temp_c of each city in April 2025.", ("weather",),
                 lambda f: _bars(f["weather"][f["weather"].date.dt.month == 4].groupby("city").temp_c.mean())),
    DataQuestion("chart", "Make a histogram of the customers' ages with 5 bins (leave out missing ages).",
                 ("customers",), lambda f: _histogram(f["customers"].age, 5)),
    DataQuestion("chart", "Draw a bar chart of the number of customers in each city.", ("customers",),
                 lambda f: _bars(f["customers"].city.value_counts())),
    DataQuestion("chart", "Draw a pie chart of each product's share of the total revenue (units times unit_price).",
                 ("sales",), lambda f: _pie(_revenue(f["sales"]).groupby(f["sales"]["product"]).sum())),
    DataQuestion("chart", "Draw a bar chart of the total units of Gadget sold in each region.", ("sales",),
                 lambda f: _bars(f["sales"][f["sales"]["product"] == "Gadget"].groupby("region").units.sum())),
    DataQuestion("chart", "Draw a scatter plot of the orders with units on the x axis and unit_price on the y axis.",
                 ("sales",), lambda f: _scatter(f["sales"].units, f["sales"].unit_price)),
    DataQuestion("chart", "Draw a bar chart of the number of orders placed on each day of the week.", ("sales",),
                 lambda f: _bars(f["sales"].date.dt.day_name().value_counts())),
    DataQuestion("chart", "Plot the average temp_c of the three cities for each day as a line chart.", ("weather",),
                 lambda f: _line(f["weather"].groupby("date").temp_c.mean())),
    DataQuestion("chart", "Draw a bar chart of the total revenue (units times unit_price) of each region in "
                 "March 2025.", ("sales",),
                 lambda f: _bars(_revenue(f["sales"])[f["sales"].date.dt.month == 3].groupby(f["sales"].region).sum())),
    DataQuestion("chart", "Draw a bar chart of the number of customers in each segment.", ("customers",),
                 lambda f: _bars(f["customers"].segment.value_counts())),
)
CHARTS_IN_SUITE = CHARTS[:5]  # the DataFrame suite's own chart questions


QUESTIONS: tuple[DataQuestion, ...] = (
    # ---------------------------------------------------------------- filters
    DataQuestion("filter", "How many orders in sales are from the East region?" + NUMBER, ("sales",),
                 lambda f: (f["sales"].region == "East").sum()),
    DataQuestion("filter", "How many orders sold more than 10 units?" + NUMBER, ("sales",),
                 lambda f: (f["sales"].units > 10).sum()),
    DataQuestion("filter", "How many units of Gadget were sold in the West region in total?" + NUMBER, ("sales",),
                 lambda f: f["sales"].query("product == 'Gadget' and region == 'West'").units.sum()),
    DataQuestion("filter", "What is the largest number of units in a single order?" + NUMBER, ("sales",),
                 lambda f: f["sales"].units.max()),
    DataQuestion("filter", "What is the total revenue (units times unit_price) of the East region?" + NUMBER,
                 ("sales",), lambda f: _revenue(f["sales"])[f["sales"].region == "East"].sum()),
    DataQuestion("filter", "How many Widget orders had fewer than 5 units?" + NUMBER, ("sales",),
                 lambda f: ((f["sales"]["product"] == "Widget") & (f["sales"].units < 5)).sum()),
    DataQuestion("filter", "What is the mean of the unit_price column over all orders?" + NUMBER, ("sales",),
                 lambda f: f["sales"].unit_price.mean()),
    DataQuestion("filter", "What percentage (from 0 to 100) of the orders come from the North region?" + NUMBER,
                 ("sales",), lambda f: 100 * (f["sales"].region == "North").mean()),
    # ---------------------------------------------------------------- groupby
    DataQuestion("groupby", "Which region has the highest total revenue (units times unit_price)? "
                 "Print just the region name.", ("sales",),
                 lambda f: _revenue(f["sales"]).groupby(f["sales"].region).sum().idxmax()),
    DataQuestion("groupby", "Which product sold the most units in total? Print just the product name.", ("sales",),
                 lambda f: f["sales"].groupby("product").units.sum().idxmax()),
    DataQuestion("groupby", "What is the total revenue (units times unit_price) of the region with the lowest "
                 "total revenue?" + NUMBER, ("sales",),
                 lambda f: _revenue(f["sales"]).groupby(f["sales"].region).sum().min()),
    DataQuestion("groupby", "How many distinct customers placed orders in sales?" + NUMBER, ("sales",),
                 lambda f: f["sales"].customer_id.nunique()),
    DataQuestion("groupby", "What is the average number of units per order for the product Gizmo?" + NUMBER,
                 ("sales",), lambda f: f["sales"][f["sales"]["product"] == "Gizmo"].units.mean()),
    DataQuestion("groupby", "How many orders did the customer with the most orders place?" + NUMBER, ("sales",),
                 lambda f: f["sales"].customer_id.value_counts().max()),
    DataQuestion("groupby", "What is the difference between the largest and the smallest total units per region?"
                 + NUMBER, ("sales",),
                 lambda f: f["sales"].groupby("region").units.sum().max() - f["sales"].groupby("region").units.sum().min()),
    DataQuestion("groupby", "How many orders does the South region have?" + NUMBER, ("sales",),
                 lambda f: (f["sales"].region == "South").sum()),
    # ---------------------------------------------------------------- merges
    DataQuestion("merge", "What is the total revenue (units times unit_price) from customers in the Business "
                 "segment? Match orders to customers by customer_id." + NUMBER, ("sales", "customers"),
                 lambda f: _revenue(_with_customers(f))[_with_customers(f).segment == "Business"].sum()),
    DataQuestion("merge", "Customers of which city bought the most units in total? Match orders to customers by "
                 "customer_id. Print just the city name.", ("sales", "customers"),
                 lambda f: _with_customers(f).groupby("city").units.sum().idxmax()),
    DataQuestion("merge", "How many orders were placed by customers older than 40? Match orders to customers by "
                 "customer_id." + NUMBER, ("sales", "customers"),
                 lambda f: (_with_customers(f).age > 40).sum()),
    DataQuestion("merge", "How many customers in the customers table never placed an order in sales?" + NUMBER,
                 ("sales", "customers"),
                 lambda f: (~f["customers"].customer_id.isin(f["sales"].customer_id)).sum()),
    DataQuestion("merge", "How many orders in sales have a customer_id that is not in the customers table?" + NUMBER,
                 ("sales", "customers"),
                 lambda f: (~f["sales"].customer_id.isin(f["customers"].customer_id)).sum()),
    # ---------------------------------------------------------------- dates
    DataQuestion("dates", "How many orders were placed in March 2025?" + NUMBER, ("sales",),
                 lambda f: ((f["sales"].date.dt.year == 2025) & (f["sales"].date.dt.month == 3)).sum()),
    DataQuestion("dates", "Which month (as a number from 1 to 12) had the highest total revenue (units times "
                 "unit_price)? Print just the month number.", ("sales",),
                 lambda f: _revenue(f["sales"]).groupby(f["sales"].date.dt.month).sum().idxmax()),
    DataQuestion("dates", "What is the total revenue (units times unit_price) of orders placed on a Saturday or "
                 "a Sunday?" + NUMBER, ("sales",),
                 lambda f: _revenue(f["sales"])[f["sales"].date.dt.day_of_week >= 5].sum()),
    DataQuestion("dates", "How many days are there between the first and the last order date?" + NUMBER, ("sales",),
                 lambda f: (f["sales"].date.max() - f["sales"].date.min()).days),
    DataQuestion("dates", "How many customers signed up before 1 July 2024?" + NUMBER, ("customers",),
                 lambda f: (f["customers"].signup_date < "2024-07-01").sum()),
    DataQuestion("dates", "What was the highest temperature in Oslo during April 2025?" + NUMBER, ("weather",),
                 lambda f: f["weather"].query("city == 'Oslo' and date.dt.month == 4").temp_c.max()),
    # ---------------------------------------------------------------- pivots
    DataQuestion("pivot", "Make a pivot table of total units with regions as rows and products as columns. "
                 "What is the value for the South region and Gizmo?" + NUMBER, ("sales",),
                 lambda f: f["sales"].pivot_table(index="region", columns="product", values="units", aggfunc="sum")
                 .loc["South", "Gizmo"]),
    DataQuestion("pivot", "Make a pivot table of the average temp_c with cities as rows and months as columns. "
                 "What is Lima's average temperature in March?" + NUMBER, ("weather",),
                 lambda f: f["weather"].assign(month=f["weather"].date.dt.month)
                 .pivot_table(index="city", columns="month", values="temp_c", aggfunc="mean").loc["Lima", 3]),
    DataQuestion("pivot", "Count the orders for every combination of region and product. What is the largest "
                 "count?" + NUMBER, ("sales",),
                 lambda f: f["sales"].groupby(["region", "product"]).size().max()),
    DataQuestion("pivot", "Which product has the highest total revenue (units times unit_price) in the North "
                 "region? Print just the product name.", ("sales",),
                 lambda f: _revenue(f["sales"])[f["sales"].region == "North"].groupby(f["sales"]["product"]).sum().idxmax()),
    # ---------------------------------------------------------------- missing values
    DataQuestion("missing", "How many orders have no discount recorded (a missing value in the discount column)?"
                 + NUMBER, ("sales",), lambda f: f["sales"].discount.isna().sum()),
    DataQuestion("missing", "How many rain_mm readings are missing in weather?" + NUMBER, ("weather",),
                 lambda f: f["weather"].rain_mm.isna().sum()),
    DataQuestion("missing", "What is the total rainfall (rain_mm) in Pune, counting missing readings as 0?" + NUMBER,
                 ("weather",), lambda f: f["weather"][f["weather"].city == "Pune"].rain_mm.fillna(0).sum()),
    DataQuestion("missing", "How many customers have no age recorded?" + NUMBER, ("customers",),
                 lambda f: f["customers"].age.isna().sum()),
    DataQuestion("missing", "What is the average discount over the orders that have one recorded?" + NUMBER,
                 ("sales",), lambda f: f["sales"].discount.mean()),
    DataQuestion("missing", "What is the average age of the customers whose age is recorded?" + NUMBER,
                 ("customers",), lambda f: f["customers"].age.mean()),
    # ---------------------------------------------------------------- a little statistics
    DataQuestion("filter", "On how many days was Pune warmer than 30 degrees (temp_c above 30)?" + NUMBER,
                 ("weather",), lambda f: ((f["weather"].city == "Pune") & (f["weather"].temp_c > 30)).sum()),
    DataQuestion("groupby", "Which city had the lowest average temperature? Print just the city name.", ("weather",),
                 lambda f: f["weather"].groupby("city").temp_c.mean().idxmin()),
    DataQuestion("groupby", "What is the average daily rain_mm in Oslo over the days that have a reading?" + NUMBER,
                 ("weather",), lambda f: f["weather"][f["weather"].city == "Oslo"].rain_mm.mean()),
    # ---------------------------------------------------------------- charts
    *CHARTS_IN_SUITE,
)
SUITES = {"dataframes": QUESTIONS, "charts": CHARTS}


def suite_rows(seed: int = 2026, suite: str = "dataframes") -> list[dict[str, Any]]:
    """A suite's questions as benchmark rows: question, the frames it may use, and the reference
    (a number, a name, or for a chart the series it must draw, under ``chart``)."""
    frames = build_frames(seed)
    rows = []
    for item in SUITES[suite]:
        row: dict[str, Any] = {
            "question": item.question,
            "category": item.category,
            "variables": {name: frames[name].copy() for name in item.uses},
        }
        value = item.reference(frames)
        if isinstance(value, dict):
            row["chart"] = value
        else:
            row["answer"] = value if isinstance(value, str) else float(value)
        rows.append(row)
    return rows
