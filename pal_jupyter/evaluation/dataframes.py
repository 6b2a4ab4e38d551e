"""A benchmark of questions about DataFrames, the way analysts ask them in a notebook.

Three DataFrames are built in code (``sales``: orders with dates, regions, products, prices
and missing discounts; ``customers``: who ordered, with missing ages; ``weather``: daily
readings for three cities with missing rain). Each question hands the program only the frames
it needs, exactly as ``%%pal --use sales,customers`` does, and its reference answer is computed
here with pandas from the same frames, so answers stay right whatever the random data is.

Categories: filters, groupby, merges, dates, pivots, missing values, and "plot ..." questions,
which are right when the winning program draws a figure.

Run it with ``pal-jupyter bench --data dataframes``.
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
    reference: Callable[[dict[str, Any]], Any] | None  # frames -> answer; None for plots

    @property
    def is_plot(self) -> bool:
        return self.reference is None


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
    # ---------------------------------------------------------------- plots
    DataQuestion("plot", "Plot the total revenue (units times unit_price) per month from sales as a line chart.",
                 ("sales",), None),
    DataQuestion("plot", "Draw a bar chart of the total units per region.", ("sales",), None),
    DataQuestion("plot", "Plot Oslo's daily temperature over time.", ("weather",), None),
    DataQuestion("plot", "Make a histogram of the units per order.", ("sales",), None),
    DataQuestion("plot", "Draw a scatter plot of each customer's age against the total units they bought "
                 "(match orders to customers by customer_id).", ("sales", "customers"), None),
)


def suite_rows(seed: int = 2026) -> list[dict[str, Any]]:
    """The questions as benchmark rows: question, the frames it may use, and the reference."""
    frames = build_frames(seed)
    rows = []
    for item in QUESTIONS:
        row: dict[str, Any] = {
            "question": item.question,
            "category": item.category,
            "variables": {name: frames[name].copy() for name in item.uses},
        }
        if item.is_plot:
            row["figure"] = True
        else:
            value = item.reference(frames)  # type: ignore[misc]
            row["answer"] = value if isinstance(value, str) else float(value)
        rows.append(row)
    return rows
