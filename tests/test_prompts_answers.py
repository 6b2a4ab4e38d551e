import os
import re

import pandas as pd
import pytest

from pal_jupyter import prompts
from pal_jupyter.engine import reasoning
from pal_jupyter.engine.answers import numbers_match, parse_number, reference_answer
from pal_jupyter.kernels import ErrorInfo, ExecutionResult, StopReason
from pal_jupyter.prompts.data_examples import DATA_EXAMPLES, DATA_IDIOMS, example_frames
from pal_jupyter.prompts.styles import INLINE_IDIOMS_INTRO
from pal_jupyter.prompts.feedback import ignores_period, number_for_name
from pal_jupyter.prompts.worked_examples import WORKED_EXAMPLES


def test_pal_prompt_has_system_examples_and_question_last():
    messages = prompts.pal_messages("How many legs do 3 spiders have?")
    assert messages[0]["role"] == "system"
    assert [m["role"] for m in messages[1:-1]] == ["user", "assistant"] * len(prompts.FEW_SHOT)
    assert all("```python" in m["content"] and "print(" in m["content"] for m in messages[2:-1:2])
    assert messages[-1] == {"role": "user", "content": "How many legs do 3 spiders have?"}


@pytest.mark.parametrize("style", sorted(s for s in prompts.PROMPT_STYLES
                                         if prompts.PROMPT_STYLES[s].examples and not s.startswith("data-")))
def test_worked_examples_compute_the_gsm8k_answers(style):
    # The worked examples must be right: a wrong example teaches the model wrong arithmetic.
    import contextlib, io

    from pal_jupyter.engine.extraction import extract_code

    chosen = prompts.PROMPT_STYLES[style]
    answers = [e.answer for e in WORKED_EXAMPLES][: len(chosen.examples)]
    assert len(answers) == len(chosen.examples) >= 2
    for (question, reply), expected in zip(chosen.examples, answers):
        if reply.startswith(prompts.WORDS_OPENING):  # chat-2forms' answers in words: checked below
            assert reasoning.read_words_answer(reply).value == pytest.approx(expected), question
            continue
        code = extract_code(reply).code  # a PAL-style solution() gets its print(solution()) here
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, {})
        assert parse_number(out.getvalue()) == pytest.approx(expected), question


def test_the_words_examples_work_each_step_out_and_end_on_the_gsm8k_answer():
    # An answer in words imitates these: each step's arithmetic must be right, and the answer line read.
    examples = [e for e in WORKED_EXAMPLES if e.words]
    asked = prompts.words_messages("Q?")
    replies = [m["content"] for m in asked[1:-2] if m["role"] == "assistant"]
    # two worked answers in words and two programs, then the reply begun in words
    assert sum(r.startswith(prompts.WORDS_OPENING) for r in replies) == 2 and len(replies) == 4
    assert asked[-1] == {"role": "assistant", "content": prompts.WORDS_OPENING}
    for example in examples:
        for left, right in re.findall(r"([\d.]+ *[-+*/x] *[\d.]+(?: *[-+*/x] *[\d.]+)*) *= *\$?([\d.]+)", example.words):
            assert eval(left.replace("x", "*")) == pytest.approx(float(right)), (example.question, left)
        assert reasoning.read_words_answer(example.as_words()).value == pytest.approx(example.answer)
        assert "<<" not in example.words and "Maila" not in example.words


@pytest.mark.parametrize("example", DATA_EXAMPLES + DATA_IDIOMS, ids=lambda e: e.question[:40])
def test_data_examples_print_their_answers_on_their_frames_and_leave_them_unchanged(example):
    import contextlib, io

    frames = example_frames()
    namespace = {name: frames[name].copy() for name in example.frames}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(example.code, namespace)
    printed = out.getvalue().strip()
    if isinstance(example.answer, str):
        assert printed == example.answer, example.question
    else:
        assert parse_number(printed) == pytest.approx(example.answer), example.question
    for name in example.frames:
        pd.testing.assert_frame_equal(namespace[name], frames[name])


def test_the_similar_data_prompt_adds_the_idioms_the_question_needs_after_the_fixed_examples():
    sales = pd.DataFrame({"region": ["East", "West"], "units": [3, 5]})
    question = "Make a pivot table of units with regions as rows. What is the value for East? Print just the number."
    messages = prompts.pal_messages(question, {"sales": sales}, style="data-similar")
    fixed = prompts.pal_messages(question, {"sales": sales}, style="data-3shot")
    assert messages[:-1][: len(fixed) - 1] == fixed[:-1]  # the cached prefix is untouched
    added = [m["content"] for m in messages[len(fixed) - 1:-1]]
    assert 2 <= len(added) <= 4 and added[-2].startswith("Make a pivot table") and "pivot_table" in added[-1]
    assert "8 rows x 5 columns" not in "".join(added)  # `trips` is not described again
    merge = prompts.pal_messages("Match orders to customers by customer_id: how many?", {"sales": sales},
                                 style="data-similar")
    assert any("`stations`: pandas DataFrame" in m["content"] for m in merge[len(fixed) - 1:-1])
    assert prompts.pal_messages("Qwerty zxcv?", {"sales": sales}, style="data-similar")[:-1] == fixed[:-1]
    # A product of two columns per group: the idiom on its own frame, described where `trips` is not used.
    product = prompts.pal_messages("Draw a bar chart of the total revenue (units times price) for each region.",
                                   {"sales": sales}, style="data-similar")[len(fixed) - 1:-1]
    shown = "".join(m["content"] for m in product)
    assert "income.groupby(rentals[\"shop\"]).sum()" in shown and "- `rentals`: pandas DataFrame, 6 rows" in shown
    assert "Use `trips` (described above)" not in product[-2]["content"]


def test_the_inline_idioms_come_after_the_data_so_that_only_they_and_the_question_are_read_afresh():
    sales = pd.DataFrame({"region": ["East", "West"], "units": [3, 5]})
    pivot = "Make a pivot table of units with regions as rows. What is the value for East? Print just the number."
    messages = prompts.pal_messages(pivot, {"sales": sales}, style="data-inline")
    fixed = prompts.pal_messages(pivot, {"sales": sales}, style=prompts.DATA_FIXED_STYLE)
    assert messages[:-1] == fixed[:-1]  # the system message and the fixed examples, as the `fixed` view asks
    turn = messages[-1]["content"]
    data, _, rest = turn.partition(INLINE_IDIOMS_INTRO)
    assert fixed[-1]["content"].startswith(data)  # then the same data: all of it in llama.cpp's cache
    assert "- `sales`: pandas DataFrame, 2 rows x 2 columns" in data
    idioms, _, asked = rest.partition("\n\nQuestion: ")
    assert "Q: Make a pivot table" in idioms and "pivot_table(" in idioms and "`trips`: pandas" not in idioms
    assert asked.startswith(pivot + "\nAnswer it from `sales` as described above")
    merge = prompts.pal_messages("Match orders to customers by customer_id: how many?", {"sales": sales},
                                 style="data-inline")[-1]["content"]
    assert "(uses `trips`, `stations`)" in merge  # an idiom on other frames says which; its code shows their columns
    other = prompts.pal_messages("Draw a bar chart of the units per region.", {"sales": sales}, style="data-inline")
    assert other[-1]["content"].startswith(data) and other[-1]["content"] != turn


def test_the_zero_shot_data_prompt_puts_the_data_first_so_the_next_question_prefills_only_itself():
    sales = pd.DataFrame({"region": ["East", "West"], "units": [3, 5]})
    first = prompts.pal_messages("How many units were sold in the East? Print just the number.", {"sales": sales},
                                 style="data-0shot")
    second = prompts.pal_messages("Draw a bar chart of the units per region.", {"sales": sales}, style="data-0shot")
    assert first[0] == second[0] and len(first) == 2
    shared = os.path.commonprefix([first[-1]["content"], second[-1]["content"]])
    assert shared.startswith("These variables already exist") and shared.endswith("\n\nQuestion: ")
    assert "- `sales`: pandas DataFrame, 2 rows x 2 columns" in shared and "first rows:" in shared
    assert first[-1]["content"].endswith("Question: How many units were sold in the East? Print just the number.\n"
                                         + prompts.DATA_INSTRUCTIONS)
    assert second[-1]["content"].endswith(prompts.CHART_INSTRUCTIONS)
    # The worked-examples prompt keeps the question first (measured better there): the views differ.
    similar = prompts.pal_messages("Draw a bar chart of the units per region.", {"sales": sales}, style="data-similar")
    assert similar[-1]["content"].startswith("Draw a bar chart of the units per region.\n\nThese variables")


def test_the_data_prompt_describes_the_example_frame_as_it_describes_the_users():
    sales = pd.DataFrame({"region": ["East", "West"], "units": [3, 5]})
    messages = prompts.pal_messages("How many units in the East?", {"sales": sales}, style=prompts.DATA_STYLE)
    assert messages[0]["content"] == prompts.DATA_SYSTEM
    examples = messages[1:-1]
    assert len(examples) == 2 * len(DATA_EXAMPLES)
    described = {"trips": "- `trips`: pandas DataFrame, 8 rows x 5 columns",
                 "rentals": "- `rentals`: pandas DataFrame, 6 rows x 4 columns"}
    # each fixed example's question describes the frames its program uses, and only those
    for example, turn in zip(DATA_EXAMPLES, examples[0::2]):
        assert turn["content"].startswith(example.question)
        assert {name for name, line in described.items() if line in turn["content"]} == set(example.frames)
    assert "- `sales`: pandas DataFrame, 2 rows x 2 columns" in messages[-1]["content"]


def test_worked_examples_are_gsm8k_train_questions():
    # Never test questions: the benchmark would then measure memory, not skill.
    import json
    from pathlib import Path

    train = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k" / "train.jsonl"
    if not train.exists():
        pytest.skip("GSM8K train file not present (../shared/data)")
    questions = {json.loads(line)["question"] for line in train.open()}
    assert all(example.question in questions for example in WORKED_EXAMPLES)


def test_variables_are_described_with_dataframe_columns():
    df = pd.DataFrame({"month": ["Jul", "Aug"], "sales": [10.5, 12.0]})
    text = prompts.pal_messages("Plot sales", {"df": df, "rate": 0.2})[-1]["content"]
    assert "`df`: pandas DataFrame, 2 rows x 2 columns" in text
    assert re.search(r"month\s+(object|str)\s+2\s+2 distinct: 'Jul', 'Aug'", text)
    assert re.search(r"sales\s+float64\s+2\s+10.5 to 12", text)
    assert "`rate`: float = 0.2" in text


def test_repair_prompt_carries_program_traceback_and_request():
    messages = prompts.repair_messages("Q?", "print(totl)", 'File "program.py", line 1\nNameError: name \'totl\' is not defined')
    user = messages[-1]["content"]
    assert "print(totl)" in user and "NameError" in user and "Explanation:" in user
    assert user.index("Question: Q?") < user.index("print(totl)") < user.index("NameError")


def test_repair_prompt_keeps_the_end_of_a_huge_traceback():
    feedback = "x" * 10_000 + "\nZeroDivisionError: division by zero"
    user = prompts.repair_messages("Q", "1/0", feedback)[-1]["content"]
    assert "ZeroDivisionError" in user and len(user) < 3000


def test_execution_feedback_variants():
    error = ExecutionResult(StopReason.ERROR, stdout="partial\n", error=ErrorInfo("KeyError", "'b'", "KeyError: 'b'", 2))
    assert prompts.execution_feedback(error) == "It printed:\npartial\n\nKeyError: 'b'"
    wrong = ExecutionResult(StopReason.OK, stdout="41\n")
    assert "not the correct answer" in prompts.execution_feedback(wrong, correct=False)
    silent = ExecutionResult(StopReason.OK)
    assert "printed nothing" in prompts.execution_feedback(silent)


@pytest.mark.parametrize(
    "text, value",
    [("150.0\n", 150.0), ("The answer is 1,234.5 dollars", 1234.5), ("-3", -3.0), ("x = 2\ny = 7", 7.0),
     ("no digits", None), ("", None), ("1e3", 1000.0)],
)
def test_parse_number_takes_the_last_number(text, value):
    assert parse_number(text) == value


def test_reference_answers_from_both_data_formats():
    assert reference_answer({"answer": "She makes 9 * 2 = $18.\n#### 18"}) == 18
    assert reference_answer({"answer": "#### 1,000"}) == 1000
    assert reference_answer({"target": 32.5}) == 32.5
    assert reference_answer({"input": "no answer"}) is None


def test_numbers_match_is_relative_for_large_values():
    assert numbers_match(150.0004, 150)
    assert not numbers_match(150.2, 150)
    assert numbers_match(0.0005, 0)
    assert not numbers_match(0.002, 0)
    assert numbers_match(9_866_000.0, 9_866_009.0)  # within 1e-3 relative
    assert not numbers_match(None, 1)


def test_misspelt_name_gets_pythons_did_you_mean():
    code = "sprints_per_session = 3\nprint(60 * sprint_per_session)"
    error = ExecutionResult(StopReason.ERROR, error=ErrorInfo("NameError", "name 'sprint_per_session' is not defined",
                                                              "NameError: name 'sprint_per_session' is not defined", 2))
    assert prompts.execution_feedback(error, code=code).endswith("Did you mean: 'sprints_per_session'?")
    assert prompts.name_suggestion("NameError", "name 'zzz' is not defined", code) is None


def test_repeated_program_changes_the_repair_prompt():
    plain = prompts.repair_messages("Q", "print(x)", "NameError")[-1]["content"]
    repeated = prompts.repair_messages("Q", "print(x)", "NameError", repeated=True)[-1]["content"]
    assert "unchanged from the previous attempt" in repeated and "unchanged" not in plain


@pytest.mark.parametrize("text, value", [
    ("16 - 3 - 4 = 9 eggs.\n9 * 2 = 18.\nAnswer: $18", 18.0),
    ("Answer: 1,250.5 dollars\n", 1250.5),
    ("So she makes \\(\\boxed{18}\\) dollars.", 18.0),
    ("Step 1: 2 + 2.\nThe total is 4", 4.0),
    ("I cannot tell from the question.", None),
])
def test_the_number_a_words_answer_ends_on(text, value):
    answer = reasoning.read_words_answer(text)
    assert (answer.value if answer else None) == value


def test_misspelt_name_is_only_matched_to_names_that_existed_at_the_failing_line():
    # The first assignment removed: `white_fiber` is close to `blue_fiber` but is only being made
    # on the failing line, so it is no spelling slip (Python's own suggestion would not name it).
    code = "white_fiber = blue_fiber / 2\ntotal = white_fiber + 1\nprint(total)"
    assert prompts.misspelt_name("NameError", "name 'blue_fiber' is not defined", code, line=1) is None
    assert prompts.misspelt_name("NameError", "name 'blue_fiber' is not defined", code) == ("blue_fiber", "white_fiber")
    # In a function the names given values later, before the call, do exist.
    called = "def double():\n    return 2 * totl\ntotal = 3\nprint(double())"
    assert prompts.misspelt_name("NameError", "name 'totl' is not defined", called, line=2) == ("totl", "total")


def test_feedback_for_a_number_printed_where_a_name_is_asked_says_how_to_get_the_name():
    feedback = prompts.execution_feedback(ExecutionResult(StopReason.OK, stdout="3\n"), off_target=number_for_name("3"))
    assert feedback.startswith("The program ran and printed:\n3\nbut it printed a number (3) where the question asks")
    assert "idxmax()" in feedback and "missing value" not in feedback


def test_feedback_for_an_ignored_period_says_which_rows_to_select_and_how():
    selection = "sales[sales['date'].dt.to_period('M') == '2024-03']"
    feedback = prompts.execution_feedback(ExecutionResult(StopReason.OK, stdout="300\n"),
                                          off_target=ignores_period("March 2024", selection))
    assert "the rows of March 2024" in feedback and selection in feedback and "every date" in feedback
    assert "frame['column'] == 'value'" not in feedback  # not the advice for a text value
