"""Worked pandas examples for questions about the user's data, on small frames of their own.

``DATA_EXAMPLES`` are the data prompt's fixed worked examples, shown in full with the frame
described exactly as the user's data is. ``DATA_IDIOMS`` are shorter examples of the idioms
analysts' questions need (percentages, distinct counts, the busiest group, weekends, pivots,
missing as 0, matching two frames, a product of two columns per group, charts, a share of rows as a
pie): the data prompt adds the ones most like the question
(:class:`~pal_jupyter.prompts.styles.DataPromptStyle`). Every ``answer`` is what ``code`` prints on
:func:`example_frames`; the tests run each to check, and check the frames unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DataExample:
    """A question about the example frames (:func:`example_frames`), answered with pandas."""

    question: str
    code: str
    answer: float | str
    frames: tuple[str, ...] = ("trips",)  # the example frames the code uses

    def reply(self) -> str:
        return f"```python\n{self.code}\n```"


# Each shows one idiom that data questions need and word problems never do: filter the rows the
# question names before summing, dates by month then groupby + idxmax, missing values as isna(), and a
# product of two columns taken row by row, in brackets, before it is added up (without it the 1.5B model
# wrote `east["units"] * east["unit_price"].sum()` on the DataFrame suite's "units times unit_price"
# questions); all of them use their frames as they are, which is what keeps programs from re-typing
# the user's data.
DATA_EXAMPLES: tuple[DataExample, ...] = (
    DataExample(
        "What is the total length in minutes of the trips that started at the Harbour station? "
        "Print just the number.",
        "# Keep only the rows the question names, then add up the column it asks about.\n"
        "harbour_trips = trips[trips[\"station\"] == \"Harbour\"]\n"
        "total_minutes = harbour_trips[\"minutes\"].sum()\n"
        "print(total_minutes)",
        27.5,
    ),
    DataExample(
        "Which station had the longest average trip in April 2025? Print just the station name.",
        "april = trips[(trips[\"start\"].dt.year == 2025) & (trips[\"start\"].dt.month == 4)]\n"
        "average_minutes = april.groupby(\"station\")[\"minutes\"].mean()\n"
        "print(average_minutes.idxmax())",
        "Central",
    ),
    DataExample(
        "How many trips have no length recorded? Print just the number.",
        "# A length that was not recorded is a missing value (NaN), not 0.\n"
        "missing = trips[\"minutes\"].isna().sum()\n"
        "print(missing)",
        1,
    ),
    DataExample(
        "What is the total income (hours times price_per_hour) of the rentals at the Harbour shop? "
        "Print just the number.",
        "# Income as the question defines it: the two columns multiplied row by row, in brackets, then added up.\n"
        "harbour = rentals[rentals[\"shop\"] == \"Harbour\"]\n"
        "income = (harbour[\"hours\"] * harbour[\"price_per_hour\"]).sum()\n"
        "print(income)",
        20.0,
        frames=("rentals",),
    ),
)

DATA_IDIOMS: tuple[DataExample, ...] = (
    DataExample(
        "What percentage (from 0 to 100) of the trips were taken by members? Print just the number.",
        "# The mean of a True/False column is the share of True rows.\n"
        "print(100 * trips[\"member\"].mean())",
        62.5,
    ),
    DataExample(
        "How many different stations do the trips start from? Print just the number.",
        "print(trips[\"station\"].nunique())",
        3,
    ),
    DataExample(
        "Which station's trips add up to the most minutes? Print just the station name.",
        "minutes_per_station = trips.groupby(\"station\")[\"minutes\"].sum()\n"
        "print(minutes_per_station.idxmax())  # idxmax gives the name, max would give the number",
        "Central",
    ),
    DataExample(
        "How many trips started from the busiest station? Print just the number.",
        "trips_per_station = trips[\"station\"].value_counts()\n"
        "print(trips_per_station.max())",
        3,
    ),
    DataExample(
        "How many trips started on a Saturday or a Sunday? Print just the number.",
        "# day_of_week counts Monday as 0, so Saturday is 5 and Sunday is 6.\n"
        "weekend = trips[trips[\"start\"].dt.day_of_week >= 5]\n"
        "print(len(weekend))",
        3,
    ),
    DataExample(
        "How many days are there between the first and the last trip? Print just the number.",
        "span = trips[\"start\"].max() - trips[\"start\"].min()\n"
        "print(span.days)",
        79,
    ),
    DataExample(
        "Make a pivot table of the average minutes with stations as rows and months as columns. "
        "What is the value for Central in April? Print just the number.",
        "table = trips.pivot_table(index=\"station\", columns=trips[\"start\"].dt.month, values=\"minutes\", "
        "aggfunc=\"mean\")\n"
        "print(table.loc[\"Central\", 4])  # row label first, then the column label",
        22.5,
    ),
    DataExample(
        "What is the average length of the Harbour trips, counting a missing length as 0? Print just the number.",
        "harbour = trips[trips[\"station\"] == \"Harbour\"]\n"
        "print(harbour[\"minutes\"].fillna(0).mean())",
        27.5 / 3,
    ),
    DataExample(
        "What is the average length of the trips taken by members, over the trips whose length is recorded? "
        "Print just the number.",
        "members = trips[trips[\"member\"]]\n"
        "print(members[\"minutes\"].mean())  # mean() skips missing values",
        11.25,
    ),
    DataExample(
        "How many trips from Park were longer than 10 minutes? Print just the number.",
        "# Both conditions at once: each in parentheses, joined with &.\n"
        "long_park = trips[(trips[\"station\"] == \"Park\") & (trips[\"minutes\"] > 10)]\n"
        "print(len(long_park))",
        1,
    ),
    # Charts: print the table the chart shows (the user sees the numbers, and the vote can compare
    # them), then draw that table, titled and labelled from the question.
    DataExample(
        "Draw a bar chart of the total minutes of each station.",
        "minutes_per_station = trips.groupby(\"station\")[\"minutes\"].sum()\n"
        "print(minutes_per_station)\n"
        "ax = minutes_per_station.plot.bar(title=\"Total minutes of each station\")\n"
        "ax.set_xlabel(\"station\")\n"
        "ax.set_ylabel(\"total minutes\")",
        "station\nCentral    62.0\nHarbour    27.5\nPark       49.0\nName: minutes, dtype: float64",
    ),
    DataExample(
        "Plot the number of trips per month as a line chart.",
        "trips_per_month = trips.groupby(trips[\"start\"].dt.to_period(\"M\"))[\"trip_id\"].count()\n"
        "print(trips_per_month)\n"
        "ax = trips_per_month.plot(title=\"Number of trips per month\")\n"
        "ax.set_xlabel(\"month\")\n"
        "ax.set_ylabel(\"trips\")",
        "start\n2025-03    3\n2025-04    3\n2025-05    2\nFreq: M, Name: trip_id, dtype: int64",
    ),
    # A share of the rows per group: a pie of counts (the model summed another column instead).
    DataExample(
        "Draw a pie chart of the share of trips from each station.",
        "# A share of the trips counts rows per station; no other column is added up.\n"
        "trips_per_station = trips[\"station\"].value_counts()\n"
        "print(trips_per_station)\n"
        "ax = trips_per_station.plot.pie(title=\"Share of trips from each station\", autopct=\"%1.0f%%\")\n"
        "ax.set_ylabel(\"\")",
        "station\nHarbour    3\nCentral    3\nPark       2\nName: count, dtype: int64",
    ),
    DataExample(
        "What is the total length in minutes of the trips from stations in the North zone? Match trips to "
        "stations by station. Print just the number.",
        "# Bring each trip's zone in from `stations`, then filter and add up.\n"
        "with_zone = trips.merge(stations, on=\"station\")\n"
        "print(with_zone[with_zone[\"zone\"] == \"North\"][\"minutes\"].sum())",
        111.0,
        frames=("trips", "stations"),
    ),
    # A total of a product of two columns per group: the product is taken row by row, before grouping
    # (grouping first and then multiplying by a column aligns nothing: every bar NaN), and it is the
    # product the question defines (the 1.5B model multiplied revenue by (1 - discount) unasked).
    DataExample(
        "Draw a bar chart of the total income (hours times price_per_hour) of each shop.",
        "# Income as the question defines it, hours times price_per_hour (the discount is not part of it),\n"
        "# computed for each rental first, then added up per shop.\n"
        "income = rentals[\"hours\"] * rentals[\"price_per_hour\"]\n"
        "income_per_shop = income.groupby(rentals[\"shop\"]).sum()\n"
        "print(income_per_shop)\n"
        "ax = income_per_shop.plot.bar(title=\"Total income of each shop\")\n"
        "ax.set_xlabel(\"shop\")\n"
        "ax.set_ylabel(\"total income\")",
        "shop\nCentral    20.0\nHarbour    20.0\nPark       17.5\ndtype: float64",
        frames=("rentals",),
    ),
    # A scatter plot: one point per row, two columns of the frame itself (not a grouped table).
    DataExample(
        "Draw a scatter plot of the rentals with hours on the x axis and price_per_hour on the y axis.",
        "print(rentals[[\"hours\", \"price_per_hour\"]])\n"
        "ax = rentals.plot.scatter(x=\"hours\", y=\"price_per_hour\", title=\"Price per hour against hours\")\n"
        "ax.set_xlabel(\"hours\")\n"
        "ax.set_ylabel(\"price per hour\")",
        "hours  price_per_hour\n0    2.0             4.0\n1    1.5             5.0\n2    3.0             4.0\n"
        "3    1.0             3.5\n4    2.5             5.0\n5    4.0             3.5",
        frames=("rentals",),
    ),
)


def example_trips() -> Any:
    """The small frame the data examples are about (bike-share trips, one length missing)."""
    import pandas as pd  # only data questions need it, and they come with pandas objects

    return pd.DataFrame({
        "trip_id": range(1, 9),
        "start": pd.to_datetime(["2025-03-02 08:10", "2025-03-02 09:45", "2025-03-15 17:20", "2025-04-01 07:55",
                                 "2025-04-03 12:30", "2025-04-18 18:05", "2025-05-06 08:40", "2025-05-20 16:15"]),
        "station": ["Harbour", "Central", "Harbour", "Park", "Central", "Harbour", "Park", "Central"],
        "minutes": [12.5, 30.0, None, 8.0, 22.5, 15.0, 41.0, 9.5],
        "member": [True, False, True, True, False, True, False, True],
    })


def example_stations() -> Any:
    """The stations of :func:`example_trips`, for the example that matches two frames."""
    import pandas as pd

    return pd.DataFrame({"station": ["Harbour", "Central", "Park"], "zone": ["South", "North", "North"]})


def example_rentals() -> Any:
    """A second small frame with two numeric columns to multiply or plot against each other, and a
    third (``discount``, often missing) that a question defining a product of two columns leaves out."""
    import pandas as pd

    return pd.DataFrame({"shop": ["Harbour", "Central", "Harbour", "Park", "Central", "Park"],
                         "hours": [2.0, 1.5, 3.0, 1.0, 2.5, 4.0],
                         "price_per_hour": [4.0, 5.0, 4.0, 3.5, 5.0, 3.5],
                         "discount": [0.1, None, None, 0.2, 0.1, None]})


def example_frames() -> dict[str, Any]:
    return {"trips": example_trips(), "stations": example_stations(), "rentals": example_rentals()}
