"""Reading answers from program output, the vote, and how doubt is put into words.

Pure functions over typed records: no kernels, no model.
"""

from __future__ import annotations

import pandas as pd
import pytest

from pal_jupyter import prompts
from pal_jupyter.engine.filters import NamedPeriod, ignored_values, named_values, periods, selects_period
from pal_jupyter.engine.records import Program, Session
from pal_jupyter.evaluation.dataframes import QUESTIONS
from pal_jupyter.kernels import ErrorInfo, ExecutionResult, StopReason
from pal_jupyter.engine.vote import (
    asks_for_name,
    asks_for_number,
    competing_answers,
    doubt_message,
    looks_like_table,
    mark_off_target,
    read_answer,
    take_vote,
)

SERIES = "region\nEast     159.0\nNorth     20.0\nWest      48.0\nName: revenue, dtype: float64\n"
FRAME = "  region  revenue\n0   East    159.0\n1  North     20.0\n2   West     48.0\n"


def ran(stdout: str = "", outputs: list | None = None) -> ExecutionResult:
    return ExecutionResult(StopReason.OK, stdout=stdout, outputs=outputs or [])


def candidate(sample: int, stdout: str | None, code: str = "print(x)", samples: int = 5) -> Program:
    """A finished candidate: stdout None means it raised an error."""
    program = Program(index=1, kind="initial", messages=[], sample=sample, samples=samples, code=code)
    if stdout is None:
        program.execution = ExecutionResult(StopReason.ERROR, error=ErrorInfo("NameError", "x", "NameError: x"))
    else:
        program.execution = ran(stdout)
    program.program_answer = read_answer(program.execution)
    return program


@pytest.mark.parametrize("stdout, kind, text, value", [
    ("150.0\n", "number", "150.0", 150.0),
    ("Distance: 150 miles\n", "number", "Distance: 150 miles", 150.0),
    ("step 1: 12\nThe answer is $1,234.50\n", "number", "The answer is $1,234.50", 1234.5),
    ("East\n", "text", "East", None),
    (SERIES, "table", "a table (5 lines)", None),  # never the 64 of "dtype: float64"
    (FRAME, "table", "a table (4 lines)", None),
])
def test_read_answer_kinds(stdout, kind, text, value):
    answer = read_answer(ran(stdout))
    assert (answer.kind, answer.text, answer.value) == (kind, text, value)


def test_read_answer_of_a_frame_left_as_the_cells_value_and_of_a_plot():
    frame = {"output_type": "execute_result", "data": {"text/plain": FRAME, "text/html": "<table/>"}}
    assert read_answer(ran(outputs=[frame])).kind == "table"
    figure = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}
    assert read_answer(ran(outputs=[figure])).kind == "figure"


def test_failed_or_silent_programs_have_no_answer():
    assert read_answer(ran("")) is None
    assert read_answer(None) is None
    assert read_answer(ExecutionResult(StopReason.TIMEOUT, stdout="150\n")) is None


def test_table_detection_does_not_swallow_word_problems():
    assert looks_like_table(SERIES) and looks_like_table(FRAME)
    assert not looks_like_table("Total cost: 15\nAnswer: 30\n")
    assert not looks_like_table("150.0")


def test_majority_wins_and_numbers_compare_with_a_tolerance():
    programs = [candidate(1, "150\n"), candidate(2, "150.0001\n"), candidate(3, "149\n"),
                candidate(4, None), candidate(5, "The answer is 150.0\n")]
    vote = take_vote(programs)
    assert vote.winner.answer.value == 150 and vote.winner.samples == [1, 2, 5]
    assert (vote.votes, vote.candidates, vote.agreement, vote.confidence) == (3, 5, 0.6, "medium")
    assert vote.tally == "3 of 5 programs agree"


def test_a_tie_goes_to_the_shortest_program_then_the_first_answer():
    long, short = "a = 1\nb = 2\nprint(a + b)", "print(3)"
    programs = [candidate(1, "3\n", long), candidate(2, "4\n", short), candidate(3, "3\n", long),
                candidate(4, "4\n", long)]
    assert take_vote(programs).winner.answer.value == 4  # 2-2: the answer with the shortest program
    same = [candidate(1, "3\n", short), candidate(2, "4\n", short)]
    assert take_vote(same).winner.answer.value == 3  # equal length: the answer seen first


def test_failures_and_silence_do_not_vote():
    programs = [candidate(1, None), candidate(2, ""), candidate(3, None), candidate(4, "7\n"), candidate(5, "")]
    vote = take_vote(programs)
    assert vote.winner.answer.value == 7 and vote.votes == 1 and vote.confidence == "low"
    assert competing_answers(vote) == "1 says 7 and 4 gave no answer"
    nobody = take_vote([candidate(1, None), candidate(2, "")])
    assert nobody.winner is None and nobody.agreement == 0.0 and "none of the 2" in nobody.tally


def test_one_program_is_not_cross_checked():
    vote = take_vote([candidate(1, "5\n", samples=1)])
    assert vote.confidence == "single" and vote.tally == "one program (not cross-checked)"


@pytest.mark.parametrize("question, strict_tables_out", [
    ("What is the total revenue of the East region? Print just the number.", True),
    ("Show revenue per region", False),
])
def test_tables_do_not_vote_where_one_number_is_asked(question, strict_tables_out):
    programs = [candidate(1, SERIES), candidate(2, SERIES), candidate(3, "159.0\n")]
    mark_off_target(programs, question)
    assert (programs[0].off_target is not None) == strict_tables_out
    winner = take_vote(programs).winner.answer
    assert (winner.kind, winner.value) == (("number", 159.0) if strict_tables_out else ("table", None))


def test_loose_number_wording_rules_tables_out_only_when_a_number_was_printed():
    question = "How many orders per region are there?"
    assert asks_for_number(question)
    tables_only = [candidate(1, SERIES), candidate(2, SERIES)]
    mark_off_target(tables_only, question)
    assert all(a.off_target is None for a in tables_only)  # "per region": a table is a fine answer
    mixed = [candidate(1, SERIES), candidate(2, "12\n")]
    mark_off_target(mixed, question)
    assert mixed[0].off_target and mixed[0].error_type == "NotANumber" and not mixed[0].good


def _session(*stdouts: str | None) -> Session:
    programs = [candidate(i, out, code=f"print({i})" + "  # longer" * (5 - i)) for i, out in enumerate(stdouts, 1)]
    session = Session(id="s", question="q", model="m", programs=programs, samples=len(programs))
    session.vote = take_vote(programs)
    return session


def test_the_final_program_is_the_shortest_winner_and_the_agreement_is_reported():
    session = _session("150\n", "150\n", "150\n", "150\n", "149\n")
    assert session.final.sample == 4  # the winners 1-4; program 4 is the shortest of them
    assert session.answer == "150" and session.agreement == 0.8 and session.confidence == "high"
    assert doubt_message(session).startswith("4 of 5 programs, written independently, agree")


def test_doubt_is_said_in_plain_words():
    medium = _session("150\n", "150\n", "150\n", "149\n", None)
    assert "check the steps" in doubt_message(medium)
    low = _session("150\n", "150\n", "149\n", "149\n", None)
    assert low.confidence == "low"
    message = doubt_message(low)
    assert message.startswith("I am not sure") and "2 say 149, 2 say 150 and 1 gave no answer" in message  # tie: shorter programs first
    assert "Check the programs' steps yourself" in message and "teacher" not in message  # an analyst has none
    assert doubt_message(_session("5\n")) == ""  # one program: nothing to compare


@pytest.mark.parametrize("stdout, reason", [
    ("", "printed nothing"),
    ("nan\n", "printed nan, which is a missing value"),
    ("None\n", "printed None, which is a missing value"),
    ("Total: <NA>\n", None),  # a sentence around it is text the vote can still compare
])
def test_a_program_that_answers_nothing_does_not_vote(stdout, reason):
    programs = [candidate(1, stdout), candidate(2, "159\n")]
    mark_off_target(programs, "What is the total revenue?")
    off_target = programs[0].off_target
    if reason is None:
        assert off_target is None and programs[0].good
    else:
        assert off_target.startswith(reason) and not programs[0].good and take_vote(programs).winner.votes == 1
        assert programs[0].error_type == ("NoOutput" if stdout == "" else "MissingValue")


def test_values_the_question_names_are_found_in_the_data():
    sales = pd.DataFrame({"region": ["East", "West", "total"], "product": ["Gadget", "Gizmo", "open"],
                          "units": [3, 4, 5]})
    named = named_values("How many units of Gadget were sold in the West region, total? And 'open' ones?",
                         {"sales": sales, "rate": 2})
    assert [(n.variable, n.column, n.value) for n in named] == [
        ("sales", "region", "West"), ("sales", "product", "Gadget"), ("sales", "product", "open")]
    # An ordinary lowercase word counts only when quoted; a value inside another word does not count.
    assert named_values("What is the total? Eastern shops?", {"sales": sales}) == []
    assert named[0].where == "'West' (a value of sales['region'])"


def test_a_program_that_never_uses_a_named_value_is_sent_back():
    sales = pd.DataFrame({"region": ["East", "West"], "units": [3, 4]})
    question = "How many units were sold in the West region? Print just the number."
    named = named_values(question, {"sales": sales})
    programs = [candidate(1, "7\n", code="print(sales['units'].sum())"),
                candidate(2, "4\n", code="print(sales[sales.region.str.lower() == 'west'].units.sum())")]
    mark_off_target(programs, question, named)
    assert programs[0].error_type == "IgnoresFilter" and not programs[0].good
    assert programs[0].off_target == "never uses 'West' (a value of sales['region']), which the question names"
    assert programs[1].off_target is None and take_vote(programs).winner.answer.value == 4
    feedback = prompts.execution_feedback(programs[0].execution, off_target=programs[0].off_target)
    assert "wrong rows" in feedback and "'West'" in feedback


def test_a_variable_named_after_the_value_is_not_a_use_of_it():
    sales = pd.DataFrame({"region": ["East", "West"], "product": ["Gadget", "Gizmo"], "units": [3, 4]})
    named = named_values("How many units of Gadget were sold in the West region?", {"sales": sales})
    only_gadget = "west_total = sales[sales['product'] == 'Gadget']['units'].sum()\nprint(west_total)"
    both = "print(sales.query(\"region == 'West' and product == 'Gadget'\")['units'].sum())"
    assert [n.value for n in ignored_values(only_gadget, named)] == ["West"]
    assert ignored_values(both, named) == []


@pytest.mark.parametrize("question", [
    "Which customer spent the most? Print just the name.",
    "Which city has the highest total revenue?",
    "Customers of which city bought the most units in total? Print just the city name.",
    "In which region were the most orders placed?",
    "Which product has the largest number of orders?",  # "number of": a quantity, not the answer's form
    "What is the name of the customer with the largest order?",
    "Which month name comes up most often in the order dates?",
    "Which of the countries had the lowest average price?",
])
def test_questions_that_ask_for_a_name(question):
    assert asks_for_name(question)


@pytest.mark.parametrize("question", [
    "Which month (as a number from 1 to 12) had the highest total revenue? Print just the month number.",
    "Which year had the most orders?",
    "Which customer placed the most orders?",  # a customer may be known by an id
    "Which product id sold the most units?",
    "How many cities have more than 10 orders?",
    "Which city has the highest total revenue? Print just the number.",
    "What is the total revenue of the East region?",
    "Which day of the week has the most orders?",
    "What is the average number of units per order for the product Gizmo?",
])
def test_questions_that_do_not_ask_for_a_name(question):
    assert not asks_for_name(question)


def test_the_dataframe_suites_name_and_number_questions_are_told_apart():
    numbers = [q.question for q in QUESTIONS if q.question.endswith(("Print just the number.", "month number."))]
    names = [q.question for q in QUESTIONS if q.question.endswith("name.")]
    assert len(numbers) > 30 and len(names) == 5
    assert not [q for q in numbers if asks_for_name(q)]
    assert all(asks_for_name(q) for q in names)


def test_a_row_number_printed_for_a_name_is_sent_back():
    question = "Which customer spent the most? Print just the name."
    programs = [candidate(1, "9\n", code="print(totals.idxmax())"), candidate(2, "Customer 09\n"),
                candidate(3, "Alice\n"), candidate(4, "Customer 09\n")]
    mark_off_target(programs, question)
    assert programs[0].off_target == ("printed a number (9) where the question asks for a name: probably a row "
                                      "number from idxmax() or an index, not the name")
    assert not programs[0].good and [a.off_target for a in programs[1:]] == [None, None, None]
    assert take_vote(programs).winner.answer.text == "Customer 09"  # a name with digits in it is a name
    feedback = prompts.execution_feedback(programs[0].execution, off_target=programs[0].off_target)
    assert "asks for a name" in feedback and "idxmax()" in feedback and "Print the name itself" in feedback


@pytest.mark.parametrize("question, caught", [
    ("Which city has the highest total revenue?", True),
    ("Which month (as a number from 1 to 12) had the highest revenue? Print just the month number.", False),
    ("How many orders were placed?", False),
])
def test_a_bare_number_is_off_target_only_where_a_name_is_asked(question, caught):
    programs = [candidate(1, "3\n"), candidate(2, "3.0\n")]
    mark_off_target(programs, question)
    assert all((a.off_target is not None) == caught for a in programs)


def _orders() -> pd.DataFrame:
    """Orders from January to June 2024, four a month."""
    dates = pd.date_range("2024-01-01", periods=24, freq="7D")
    return pd.DataFrame({"date": dates, "region": ["East", "West"] * 12, "units": range(1, 25)})


@pytest.mark.parametrize("question, found", [
    ("How many orders were placed in March 2024?", [(2024, 3)]),
    ("What were the total units during April 2025?", [(2025, 4)]),
    ("Total units March 2025", [(2025, 3)]),
    ("Units sold in Sept. 2024 and in 2023?", [(2024, 9), (2023, None)]),
    ("What was the revenue in 2024-03?", [(2024, 3)]),
    ("How many customers signed up before 1 July 2024?", []),  # a boundary, not a period
    ("How many orders from March 2024 to May 2024?", []),
    ("How many orders on 2024-03-05?", []),
    ("What is Lima's average temperature in March?", []),  # no year: not a period of the data
])
def test_periods_the_question_names(question, found):
    assert periods(question) == found


def test_a_named_period_needs_a_date_column_with_rows_in_and_out_of_it():
    sales = _orders()
    named = named_values("How many units were sold in the West region in March 2024?", {"sales": sales})
    assert [type(n) for n in named] == [type(named[0]), NamedPeriod] and named[0].value == "West"
    period = named[1]
    assert (period.variable, period.column, period.value, period.label) == ("sales", "date", "2024-03", "March 2024")
    assert period.selection == "sales[sales['date'].dt.to_period('M') == '2024-03']"
    assert named_values("How many orders in 2024?", {"sales": sales}) == []  # every row is in 2024
    assert named_values("How many orders in March 2023?", {"sales": sales}) == []  # no row is
    assert named_values("How many orders in 2024?", {"sales": sales.assign(date=sales.date.astype(str))}) == []
    year = named_values("How many orders in 2024?", {"sales": pd.concat([sales, sales.assign(date=sales.date
                                                                                             + pd.DateOffset(years=1))])})
    assert [(n.value, n.label, n.selection) for n in year] == [("2024", "2024", "sales[sales['date'].dt.year == 2024]")]


MARCH_2024 = NamedPeriod("sales", "date", "2024-03", 2024, 3)


@pytest.mark.parametrize("code", [
    "m = sales[(sales['date'].dt.year == 2024) & (sales['date'].dt.month == 3)]\nprint(len(m))",
    "print(len(sales[sales['date'].dt.to_period('M') == '2024-03']))",
    "print(sales.set_index('date').loc['2024-03', 'units'].sum())",
    "print(sales[sales.date.between('2024-03-01', '2024-03-31')].units.sum())",
    "print(sales.query('date.dt.month == 3').units.sum())",
    "from datetime import datetime\nstart, end = datetime(2024, 3, 1), datetime(2024, 4, 1)\n"
    "print(sales[(sales.date >= start) & (sales.date < end)].units.sum())",
    "print(sales[sales['date'].dt.month_name() == 'March'].units.sum())",
    "print(sales[sales.date.dt.strftime('%Y%m') == '202403'].units.sum())",
    "print(f\"{sales[sales.date.dt.to_period('M') == pd.Period('2024-03')].units.sum()}\")",
    "print(sales[sales.date.dt.strftime('%b %Y') == 'Mar 2024'].units.sum())",
])
def test_programs_that_select_the_month_are_accepted(code):
    assert selects_period(code, MARCH_2024)
    assert ignored_values(code, [MARCH_2024]) == []


@pytest.mark.parametrize("code", [
    "print(sales['units'].sum())",
    "print(len(sales))  # orders in March 2024",
    "print('Units sold in March 2024:', sales.units.sum())",
    "print(f'Orders in 2024-03: {len(sales)}')",
    "print('Total for March 2024: {}'.format(sales.units.sum()))",
    "print(sales[sales.date.dt.month == 4].units.sum())",  # the wrong month
])
def test_programs_that_sum_every_row_are_caught(code):
    assert not selects_period(code, MARCH_2024)
    assert ignored_values(code, [MARCH_2024]) == [MARCH_2024]


def test_a_program_that_never_selects_the_named_month_is_sent_back():
    sales = _orders()
    question = "How many units were sold in March 2024? Print just the number."
    named = named_values(question, {"sales": sales})
    march = int(sales[sales.date.dt.to_period("M") == "2024-03"].units.sum())
    programs = [candidate(1, f"{sales.units.sum()}\n", code="print(sales['units'].sum())  # March 2024"),
                candidate(2, f"{march}\n", code="print(sales[sales.date.dt.month == 3].units.sum())"),
                candidate(3, f"{march}\n", code="print(sales.set_index('date').loc['2024-03'].units.sum())")]
    mark_off_target(programs, question, named)
    assert programs[0].off_target == ("never uses the rows of March 2024, which the question names (select them "
                                      "with sales[sales['date'].dt.to_period('M') == '2024-03'])")
    assert programs[0].error_type == "IgnoresFilter" and not programs[0].good
    assert [a.off_target for a in programs[1:]] == [None, None]
    assert take_vote(programs).winner.answer.value == march and take_vote(programs).winner.votes == 2
    feedback = prompts.execution_feedback(programs[0].execution, off_target=programs[0].off_target)
    assert "every date" in feedback and "to_period('M') == '2024-03'" in feedback


# ------------------------------------------------------------------ the question's own format for the answer

ASKS_FORMAT = ("What are the mean and the standard deviation of the fare? Answer format: @mean_fare[mean], "
               "@std_fare[std], each rounded to two decimal places.")


def test_an_answer_in_the_asked_format_is_every_part_with_its_name():
    answer = read_answer(ran("computing...\n@mean_fare[34.69]\n@std_fare[55.91]\n"))
    assert (answer.kind, answer.text) == ("parts", "mean_fare 34.69, std_fare 55.91")
    same = read_answer(ran("@std_fare[55.910] @mean_fare[34.69]\n"))
    other = read_answer(ran("@mean_fare[34.69]\n@std_fare[55.92]\n"))
    assert answer.same_as(same) and not answer.same_as(other)  # every part must agree, not the last line


def test_a_program_that_drops_an_asked_part_or_prints_a_template_is_sent_back():
    programs = [candidate(1, "@mean_fare[34.69]\n@std_fare[55.91]\n"), candidate(2, "34.69\n55.91\n"),
                candidate(3, "@mean_fare[34.69]\n"), candidate(4, "@mean_fare[{mean_fare}] @std_fare[{std}]\n")]
    mark_off_target(programs, ASKS_FORMAT)
    assert programs[0].off_target is None
    assert programs[1].error_type == programs[2].error_type == "NotInFormat"
    assert "@std_fare[...] is missing" in programs[2].off_target
    assert programs[3].error_type == "Template" and "{mean_fare}" in programs[3].off_target
    feedback = prompts.execution_feedback(programs[3].execution, None, "print('@mean_fare[{mean_fare}]')",
                                          off_target=programs[3].off_target)
    assert "f-string is missing its f" in feedback


def test_a_question_without_a_format_keeps_the_products_reading():
    programs = [candidate(1, "Total: {'a': 1}\n"), candidate(2, "East 134.5\n")]
    mark_off_target(programs, "Which region sold the most, and how much?")
    assert programs[0].off_target is None and programs[1].off_target is None
    assert programs[1].program_answer.kind == "number"


def test_a_boolean_printed_where_the_question_offers_words_is_sent_back():
    question = ('Is the column normally distributed? Answer format: @is_normal[response], where "response" is a '
                'string that takes the value "yes" if it is, and "no" if it is not.')
    programs = [candidate(1, "@is_normal[True]\n"), candidate(2, "@is_normal[no]\n")]
    mark_off_target(programs, question)
    assert programs[0].error_type == "NotInFormat" and '"yes", "no"' in programs[0].off_target
    assert programs[1].off_target is None
    either = candidate(3, "@flag[True]\n")  # a question that offers no words of its own takes True as it is
    mark_off_target([either], "Is any fare missing? Answer format: @flag[value]")
    assert either.off_target is None
