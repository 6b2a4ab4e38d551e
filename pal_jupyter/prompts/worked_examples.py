"""Worked word problems: GSM8K *train* questions solved as programs, for the prompts' few-shot turns.

The word-problem styles (:mod:`.styles`) show them as flat scripts that print their answer, or in
PAL's ``def solution()`` form; the tests run each program and check it prints the data set's answer.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkedExample:
    """A GSM8K *train* question (MIT licence, ../shared/data/gsm8k) solved as a program.

    ``steps`` are the program's lines without the final print/return; ``result`` names the
    variable holding the answer, and ``answer`` is the data set's reference answer, which the
    tests check the program against. ``words``, where given, is the data set's own solution in
    words (its calculator marks ``<<...>>`` removed), the worked example of an answer in
    words (:mod:`.words`).
    """

    question: str
    steps: str
    result: str
    answer: float
    words: str = ""

    def as_words(self) -> str:
        """The words style: the solution a line per step, then ``Answer: <number>``."""
        return f"{self.words}\nAnswer: {self.answer:g}"

    def as_script(self) -> str:
        """The flat-script style: the steps, then ``print(result)``."""
        return f"```python\n{self.steps}\nprint({self.result})\n```"

    def as_pal_function(self) -> str:
        """PAL's style (reasoning-machines/pal, GSM8K prompt): ``def solution()`` with the
        question as docstring, returning ``result``."""
        body = textwrap.indent(f"{self.steps}\nresult = {self.result}\nreturn result", "    ")
        return f'```python\ndef solution():\n    """{self.question}"""\n{body}\n```'


# GSM8K train rows 0, 2, 1, 3, 4, 5, 9 and 10: sums, fractions, unit rates, "remaining",
# per-year totals, percentages, overtime rules and a small equation.
WORKED_EXAMPLES: tuple[WorkedExample, ...] = (
    WorkedExample(
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
        "in May. How many clips did Natalia sell altogether in April and May?",
        "clips_april = 48\n"
        "clips_may = clips_april / 2  # half as many in May\n"
        "total_clips = clips_april + clips_may",
        "total_clips", 72,
        "Natalia sold 48/2 = 24 clips in May.\n"
        "Natalia sold 48+24 = 72 clips altogether in April and May.",
    ),
    WorkedExample(
        "Betty is saving money for a new wallet which costs $100. Betty has only half of the "
        "money she needs. Her parents decided to give her $15 for that purpose, and her "
        "grandparents twice as much as her parents. How much more money does Betty need to buy "
        "the wallet?",
        "wallet_cost = 100\n"
        "betty_has = wallet_cost / 2\n"
        "from_parents = 15\n"
        "from_grandparents = 2 * from_parents  # twice as much as her parents\n"
        "still_needed = wallet_cost - betty_has - from_parents - from_grandparents",
        "still_needed", 5,
        "In the beginning, Betty has only 100 / 2 = $50.\n"
        "Betty's grandparents gave her 15 * 2 = $30.\n"
        "This means, Betty needs 100 - 50 - 30 - 15 = $5 more.",
    ),
    WorkedExample(
        "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of "
        "babysitting. How much did she earn?",
        "hourly_rate = 12  # dollars per hour\n"
        "minutes_worked = 50\n"
        "pay_per_minute = hourly_rate / 60\n"
        "earnings = pay_per_minute * minutes_worked",
        "earnings", 10,
    ),
    WorkedExample(
        "Julie is reading a 120-page book. Yesterday, she was able to read 12 pages and today, "
        "she read twice as many pages as yesterday. If she wants to read half of the remaining "
        "pages tomorrow, how many pages should she read?",
        "total_pages = 120\n"
        "read_yesterday = 12\n"
        "read_today = 2 * read_yesterday  # twice as many as yesterday\n"
        "remaining = total_pages - read_yesterday - read_today\n"
        "read_tomorrow = remaining / 2  # half of the remaining pages",
        "read_tomorrow", 42,
        # GSM8K's solution calls her Maila; the question says Julie, and so does this.
        "Julie read 12 x 2 = 24 pages today.\n"
        "So she was able to read a total of 12 + 24 = 36 pages since yesterday.\n"
        "There are 120 - 36 = 84 pages left to be read.\n"
        "Since she wants to read half of the remaining pages tomorrow, then she should read 84/2 = 42 pages.",
    ),
    WorkedExample(
        "James writes a 3-page letter to 2 different friends twice a week.  How many pages does "
        "he write a year?",
        "pages_per_letter = 3\n"
        "friends = 2\n"
        "times_per_week = 2\n"
        "weeks_per_year = 52\n"
        "pages_per_year = pages_per_letter * friends * times_per_week * weeks_per_year",
        "pages_per_year", 624,
    ),
    WorkedExample(
        "Mark has a garden with flowers. He planted plants of three different colors in it. Ten "
        "of them are yellow, and there are 80% more of those in purple. There are only 25% as many "
        "green flowers as there are yellow and purple flowers. How many flowers does Mark have in "
        "his garden?",
        "yellow = 10\n"
        "purple = yellow * 1.8  # 80% more than yellow\n"
        "green = 0.25 * (yellow + purple)  # 25% as many as yellow and purple together\n"
        "total_flowers = yellow + purple + green",
        "total_flowers", 35,
    ),
    WorkedExample(
        "Tina makes $18.00 an hour.  If she works more than 8 hours per shift, she is eligible "
        "for overtime, which is paid by your hourly wage + 1/2 your hourly wage.  If she works "
        "10 hours every day for 5 days, how much money does she make?",
        "hourly_wage = 18.00\n"
        "overtime_wage = hourly_wage + hourly_wage / 2\n"
        "regular_hours = 8  # per shift, at the normal wage\n"
        "overtime_hours = 10 - regular_hours  # the hours past 8 in each 10-hour shift\n"
        "pay_per_day = regular_hours * hourly_wage + overtime_hours * overtime_wage\n"
        "days = 5\n"
        "total_pay = pay_per_day * days",
        "total_pay", 990,
    ),
    WorkedExample(
        "A deep-sea monster rises from the waters once every hundred years to feast on a ship and "
        "sate its hunger. Over three hundred years, it has consumed 847 people. Ships have been "
        "built larger over time, so each new ship has twice as many people as the last ship. How "
        "many people were on the ship the monster ate in the first hundred years?",
        "total_eaten = 847\n"
        "ships = 3  # one ship per hundred years\n"
        "# The ships held x, 2x and 4x people: x * (1 + 2 + 4) = 847\n"
        "multiples = sum(2 ** i for i in range(ships))\n"
        "first_ship = total_eaten / multiples",
        "first_ship", 121,
    ),
)
