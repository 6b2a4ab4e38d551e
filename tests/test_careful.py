"""The careful method (engine/views.py): two greedy programs from independent prompts, more only when
they disagree. A scripted model supplies the programs; the kernels that run them are real."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from pal_jupyter import ExecutorLimits, KernelPool, ScriptedBackend, solve
from pal_jupyter import prompts
from pal_jupyter.engine import views
from pal_jupyter.engine.console import ConsoleObserver
from pal_jupyter.engine.vote import doubt_message


def fenced(code: str) -> str:
    return f"```python\n{code}\n```\n"


@pytest.fixture(scope="module")
def pool():
    with KernelPool(ExecutorLimits(timeout_s=3, grace_s=1)) as pool:
        yield pool


WORDS_150 = "60 miles each hour for 2.5 hours is 60 x 2.5 = 150 miles.\nAnswer: 150"


def test_two_programs_that_agree_and_the_words_that_end_on_their_answer_are_sure(pool):
    model = ScriptedBackend([fenced("print(60 * 2.5)"), fenced("print(150.0)"), WORDS_150])
    session = solve("How far does a car go at 60 mph in 2.5 hours?", model=model, executor=pool)
    assert model.batch_sizes == [1, 1, 1]  # the plainest program, the worked examples' one, then the words
    zero, shots, words = model.calls
    assert zero == prompts.pal_messages(session.question, style="chat-0shot")  # the baseline's own prompt
    assert shots == prompts.pal_messages(session.question, style=prompts.WORD_PROBLEM_STYLE)
    assert words[:-1] == shots and words[-1]["role"] == "assistant"  # one prompt: only the reply's opening is new
    assert [o.code_only for o in model.options] == [True, True, False]
    assert all(o.temperature_for(1) == 0 for o in model.options)
    assert [o.cache_key for o in model.options] == ["zero", "shots", "shots"]
    assert [a.view for a in session.programs] == ["zero", "shots"]
    assert session.second_opinion is not None and session.second_opinion.answer.text == "150"
    assert session.vote.votes == 2 and session.vote.candidates == 2 and session.confidence == "high"
    assert session.answer == "150.0" and not session.words_disagreed
    assert doubt_message(session) == ("2 of 2 programs, written independently, agree on this answer. Worked out in "
                                      "words, the answer is also 150.")


@pytest.mark.parametrize("words, ended", [
    ("60 x 2 = 120 miles.\nAnswer: 120", " Worked out in words, the answer is 120, not 150.0: one of the two has a "
                                          "wrong step."),
    ("The car goes far.", " Worked out in words, the question came to no answer."),
])
def test_two_programs_that_agree_where_the_words_end_elsewhere_are_shown_for_checking(pool, words, ended):
    """Two programs of a small model share slips that the words less often repeat: their answer stands,
    shown for checking, never as sure."""
    model = ScriptedBackend([fenced("print(60 * 2.5)"), fenced("print(150.0)"), words])
    session = solve("How far does a car go at 60 mph in 2.5 hours?", model=model, executor=pool)
    assert session.answer == "150.0" and session.words_disagreed and session.vote.confidence == "high"
    assert session.confidence == "medium"
    assert doubt_message(session) == (f"2 of 2 programs, written independently, agree on this answer.{ended} Check "
                                      "the steps before you rely on it.")


def test_two_programs_that_agree_on_a_negative_count_are_shown_for_checking_not_as_sure(pool):
    question = "3 customers left early and 4 times as many came late. How many stayed, of 10?"
    model = ScriptedBackend([fenced("print(10 - 3 - 4 * 3 - 4)"), fenced("print(-9)")])
    shown = io.StringIO()
    session = solve(question, model=model, executor=pool, observer=ConsoleObserver(shown, stream_tokens=False))
    assert "Answer: -9 (check it: -9 is an unusual answer to \u201chow many\u201d)" in shown.getvalue()
    assert model.batch_sizes == [1, 1] and session.answer == "-9", "the answer stands; nothing more is written"
    assert session.vote.votes == 2 and session.vote.confidence == "high"
    assert session.doubt == "-9 is an unusual answer to \u201chow many\u201d" and session.confidence == "medium"
    assert doubt_message(session) == ("2 of 2 programs, written independently, agree on this answer, but -9 is an "
                                      "unusual answer to \u201chow many\u201d: check the steps before you rely on it.")


@pytest.mark.parametrize("question, answer, variables", [
    ("How many apples are left?", "print(4)", None),  # above 0
    ("What is 3 minus 10?", "print(-7)", None),  # not a count or an amount
    ("How much did the total units change? Print just the number.", "print(-2)",
     {"sales": pd.DataFrame({"units": [3, 1]})}),
])
def test_an_answer_of_a_shape_the_question_allows_stays_sure(pool, question, answer, variables):
    words = f"Answer: {answer[6:-1]}"  # a word problem's agreeing views are checked in words
    model = ScriptedBackend([fenced(answer), fenced(answer), words])
    session = solve(question, model=model, executor=pool, variables=variables)
    assert session.doubt is None and session.confidence == "high"


@pytest.mark.parametrize("samples", [4, 0])
@pytest.mark.parametrize("words, answer, says, note", [
    ("60 x 2.5 = 150\nAnswer: 150", "150.0", "1 says 150.0 and 1 says 62.5",  # the words decide
     " Worked out in words, the answer is also 150."),
    ("60 + 2 = 62\nAnswer: 62", "62.5", "1 says 62.5 and 1 says 150.0",  # neither: the first view's stands
     " Worked out in words, the answer is 62, not 62.5: one of the two has a wrong step."),
])
def test_two_programs_that_disagree_are_decided_by_the_words_and_shown_in_doubt(pool, samples, words, answer, says,
                                                                               note):
    model = ScriptedBackend([fenced("print(60 + 2.5)"), fenced("print(60 * 2.5)"), words])
    session = solve("How far?", model=model, executor=pool, samples=samples)
    assert model.batch_sizes == [1, 1, 1]  # the words, no samples, whatever ``samples`` says
    assert session.answer == answer and session.views_disagreed and not session.words_disagreed
    assert session.second_opinion is not None and session.weak_votes == []
    assert session.confidence == "low", "never sure after a disagreement, whatever the words say"
    assert doubt_message(session) == (f"I am not sure: the programs disagree ({says}).{note} Check the programs' "
                                      "steps yourself to see which answer is right.")


def test_a_word_problem_whose_first_program_fails_keeps_the_second_programs_answer_in_doubt(pool):
    model = ScriptedBackend([fenced("print(speed * 2.5)"), fenced("print(60 * 2.5)")])
    session = solve("How far?", model=model, executor=pool)
    assert model.batch_sizes == [1, 1] and session.rounds == 1  # something worked: no repair
    assert session.programs[0].execution.error.ename == "NameError"
    assert session.answer == "150.0" and session.views_disagreed and session.confidence != "high"


def test_a_data_question_is_asked_after_fixed_examples_and_then_plainly_the_data_first_in_both(pool):
    sales = pd.DataFrame({"region": ["East", "West", "East"], "units": [3, 4, 5]})
    question = "How many units were sold in the East region? Print just the number."
    code = fenced("print(sales[sales['region'] == 'East']['units'].sum())")
    model = ScriptedBackend([code, code])
    session = solve(question, model=model, executor=pool, variables={"sales": sales})
    fixed, zero = model.calls
    assert fixed == prompts.pal_messages(question, {"sales": sales}, style=prompts.DATA_FIXED_STYLE)
    assert zero == prompts.pal_messages(question, {"sales": sales}, style=prompts.DATA_ZERO_STYLE)
    assert zero[0]["content"].endswith("Write the code alone, with no comments.")
    for asked in (fixed, zero):  # the same data, then the question: only the question is new to the cache
        assert asked[-1]["content"].index("`sales`") < asked[-1]["content"].index(question)
    assert [a.view for a in session.programs] == ["fixed", "zero"]
    assert session.answer == "8" and session.confidence == "high"


def test_a_data_question_whose_first_view_works_keeps_its_answer_when_the_plain_view_disagrees(pool):
    sales = pd.DataFrame({"region": ["East", "West", "East"], "units": [3, 4, 5]})
    question = "How many units were sold in the East region? Print just the number."
    # the first view's program is the longer one: a tie goes to the first view, not to the shortest
    first = fenced("east = sales[sales['region'] == 'East']\ntotal_units = east['units'].sum()\nprint(total_units)")
    model = ScriptedBackend([first, fenced("print(sales['units'].sum())")])
    session = solve(question, model=model, executor=pool, variables={"sales": sales}, samples=4)
    assert model.batch_sizes == [1, 1]  # nothing more is written
    assert [a.view for a in session.programs] == ["fixed", "zero"]
    assert session.answer == "8" and session.views_disagreed and session.confidence != "high"
    assert doubt_message(session).startswith("I am not sure")


def test_a_data_question_whose_first_view_fails_keeps_the_second_views_answer(pool):
    sales = pd.DataFrame({"region": ["East", "West", "East"], "units": [3, 4, 5]})
    question = "How many units were sold in the East region? Print just the number."
    model = ScriptedBackend([fenced("print(sales['unit'].sum())"),
                             fenced("print(sales[sales['region'] == 'East']['units'].sum())")])
    session = solve(question, model=model, executor=pool, variables={"sales": sales}, samples=4)
    assert model.batch_sizes == [1, 1]  # nothing more is written
    assert session.programs[0].execution.error.ename == "KeyError"
    assert session.answer == "8" and session.views_disagreed and session.confidence != "high"


def test_a_chart_whose_two_views_fail_asks_the_idioms_and_no_samples(pool):
    sales = pd.DataFrame({"region": ["East", "West", "East"], "units": [3, 4, 5]})
    question = "Draw a bar chart of the units per region."
    right = fenced("totals = sales.groupby('region')['units'].sum()\nprint(totals)\ntotals.plot.bar()")
    model = ScriptedBackend([fenced("print(sales['unit'].sum())"), fenced("print(sales['units'].sum(axis=2))"),
                             right])
    session = solve(question, model=model, executor=pool, variables={"sales": sales}, samples=4)
    assert model.batch_sizes == [1, 1, 1]  # the idioms' program; data questions draw no samples
    idioms = prompts.pal_messages(question, {"sales": sales}, style=prompts.IDIOMS_STYLE)  # after the data
    assert model.calls[2] == idioms and model.options[2].temperature_for(1) == 0
    # a llama.cpp slot each, the fixed examples' one per set of data (views.View.cache_key_for); the idioms,
    # placed after the data, in the fixed examples' slot: they read only themselves and the question
    assert [o.cache_key for o in model.options] == ["data:sales", "zero", "data:sales"]
    assert [a.view for a in session.programs] == ["fixed", "zero", "idioms"]
    assert [a.sample for a in session.programs] == [1, 2, 3] and {a.samples for a in session.programs} == {3}
    assert [a.execution.error.ename for a in session.programs[:2]] == ["KeyError", "ValueError"]
    assert session.rounds == 1 and session.vote.votes == 1 and session.vote.candidates == 3
    assert session.final.view == "idioms" and session.succeeded and session.final.program_answer.kind == "figure"
    assert session.weak_votes == [] and session.views_disagreed and session.confidence != "high"


def test_a_data_question_whose_two_views_fail_is_repaired_without_the_idioms(pool):
    """Not a chart: no third program; the first view's program is repaired in its own conversation and
    slot (the idioms answered one more of 40 such questions than the repair, at 2.6 s more a question)."""
    sales = pd.DataFrame({"region": ["East", "West", "East"], "units": [3, 4, 5]})
    question = "How many units were sold in the East region? Print just the number."
    corrected = "Explanation: the column is `units`.\n" + fenced("print(sales.units[sales.region == 'East'].sum())")
    model = ScriptedBackend([fenced("print(sales['unit'].sum())"), fenced("print(sales['units'].sum(axis=2))"), corrected])
    session = solve(question, model=model, executor=pool, variables={"sales": sales}, samples=4)
    assert model.batch_sizes == [1, 1, 1]  # the two views, then the repair
    assert [a.view for a in session.programs[:2]] == ["fixed", "zero"]
    first, repair = session.programs[0], session.programs[-1]
    assert session.rounds == 2 and repair.kind == "repair" and session.answer == "8"
    assert repair.messages[:-2] == first.messages and "KeyError" in repair.messages[-1]["content"]
    assert [o.cache_key for o in model.options] == ["data:sales", "zero", "data:sales"]
    assert not any(a.view == "idioms" for a in session.programs)


def test_a_chart_question_is_asked_as_any_question_about_data(pool):
    sales = pd.DataFrame({"region": ["East", "West", "East"], "units": [3, 4, 5]})
    question = "Draw a bar chart of the units per region."
    code = fenced("totals = sales.groupby('region')['units'].sum()\nprint(totals)\ntotals.plot.bar()")
    model = ScriptedBackend([code, code])
    session = solve(question, model=model, executor=pool, variables={"sales": sales}, samples=4)
    assert model.calls == [prompts.pal_messages(question, {"sales": sales}, style=style)
                           for style in (prompts.DATA_FIXED_STYLE, prompts.DATA_ZERO_STYLE)]
    assert model.batch_sizes == [1, 1] and session.confidence == "high"  # the same data drawn: sure
    assert [o.cache_key for o in model.options] == [views.DATA_FIXED.cache_key_for({"sales": sales}), "zero"] \
        == ["data:sales", "zero"]
    assert views.DATA_FIXED.cache_key_for({"sales": sales, "customers": sales}) == "data:customers,sales"
    assert views.DATA_ZERO.cache_key_for({"sales": sales}) == "zero"  # its prompt begins with the data
    # the idioms' prompt, the third view's, begins as the fixed examples' does (the examples, then the
    # data): one llama.cpp slot holds both, so either reads only what follows the data afresh
    idioms = prompts.pal_messages(question, {"sales": sales}, style=prompts.IDIOMS_STYLE)
    fixed = prompts.pal_messages(question, {"sales": sales}, style=prompts.DATA_FIXED_STYLE)
    assert idioms[:-1] == fixed[:-1] and idioms[-1]["content"].startswith(fixed[-1]["content"].split("Question:")[0])


def test_a_failing_view_is_repaired_once_greedily_when_nothing_works(pool):
    broken = fenced("print(undefined_total)")
    model = ScriptedBackend([broken, broken, "Explanation: the name was never set.\n" + fenced("print(150)")])
    session = solve("How far?", model=model, executor=pool, samples=2, max_attempts=2)
    assert model.batch_sizes == [1, 1, 1]  # the two programs, then one repair
    assert not model.options[-1].code_only  # a repair explains the error first
    assert session.rounds == 2 and session.answer == "150" and session.final.kind == "repair"
    # the failed program's conversation goes on in its own slot: only its reply and the feedback are new
    first, repair = session.programs[0], session.programs[-1]
    assert repair.messages[:-2] == first.messages and repair.messages[-2] == {"role": "assistant",
                                                                              "content": first.completion}
    assert "undefined_total" in repair.messages[-1]["content"] and \
        repair.messages[-1]["content"].endswith(prompts.REPAIR_REQUEST)
    assert model.options[-1].cache_key == first.cache_key == "zero" and repair.cache_key == "zero"


def test_a_row_number_printed_for_a_name_is_refused_and_the_name_wins(pool):
    orders = pd.DataFrame({"customer": ["Ana", "Ben", "Cleo", "Ben"], "amount": [10.0, 25.0, 5.0, 30.0]})
    question = "Which customer spent the most in total? Print just the name."
    row_number = fenced("print(orders['amount'].idxmax())")  # a row number over the RangeIndex: 3
    name_code = "print(orders.groupby('customer')['amount'].sum().idxmax())"
    by_name = fenced(name_code)
    model = ScriptedBackend([row_number, by_name, by_name, by_name, row_number, by_name, by_name])
    session = solve(question, model=model, executor=pool, variables={"orders": orders}, samples=4)
    first = session.programs[0]
    assert first.answer == "3" and first.error_type == "NotAName" and not first.good
    assert "where the question asks for a name" in first.feedback
    assert session.answer == "Ben" and session.final.code == name_code


def test_a_month_the_question_names_must_be_selected(pool):
    orders = pd.DataFrame({"date": pd.to_datetime(["2024-02-27", "2024-03-02", "2024-03-15", "2024-04-01"]),
                           "amount": [100.0, 20.0, 30.0, 400.0]})
    question = "What was the revenue of the orders placed in March 2024? Print just the number."
    every_row = fenced("print(orders['amount'].sum())")
    march = fenced("print(orders[orders['date'].dt.to_period('M') == '2024-03']['amount'].sum())")
    model = ScriptedBackend([every_row, march, march, march, march, march, march])  # the two views take 2
    session = solve(question, model=model, executor=pool, variables={"orders": orders}, samples=4)
    assert session.programs[0].error_type == "IgnoresFilter" and "March 2024" in session.programs[0].off_target
    assert session.answer == "50.0"


@pytest.mark.parametrize("plan", [views.WORD_PLAN, views.DATA_PLAN, views.CHART_PLAN])
def test_what_a_view_keeps_between_sessions_is_the_packaged_prompt_alone(plan):
    """A view's shared start (kept on disk by llama.cpp) is the same for every question and every set of
    data, holds neither of them, and is one start for all the data views (one kept copy serves them)."""
    asked = [("What is 17 times 23?", None),
             ("How many orders in the East? The secret is zebra.", {"sales": pd.DataFrame({"region": ["East"]})}),
             ("Which city is warmest?", {"weather": pd.DataFrame({"city": ["Lima"], "temp_c": [21.5]})})]
    for view in (plan.first, plan.second, plan.then):
        if view is None or not view.shared_messages:
            continue
        starts = [views.view_messages(view, question, data, None)[:view.shared_messages] for question, data in asked]
        assert starts[0] == starts[1] == starts[2]
        assert not any(word in str(starts[0]) for word in ("zebra", "17 times 23", "weather", "sales"))
    fixed_start = views.view_messages(views.DATA_FIXED, "Q?", {"t": pd.DataFrame({"a": [1]})}, None)
    view = views.IDIOMS
    assert view.shared_messages == views.DATA_FIXED.shared_messages > 1
    assert views.view_messages(view, "Q?", {"t": pd.DataFrame({"a": [1]})}, None)[:view.shared_messages] \
        == fixed_start[:view.shared_messages]
    assert views.SHOTS.shared_messages > 1 and views.ZERO.shared_messages == views.DATA_ZERO.shared_messages == 0
