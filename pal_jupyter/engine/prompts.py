"""Prompts: the PAL prompt for a new question and the repair prompt after a failed run.

The PAL prompt is a chat: a system message, worked examples as earlier turns (GSM8K training
questions rewritten as programs that print their answer), then the question. The repair prompt
shows the question, the failed program and the interpreter's feedback, and asks for a short
plain-language explanation followed by a corrected program (LeTI: learning from the
interpreter's error text).
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..backends import ChatMessage
from ..kernels import ExecutionResult
from . import data_look, retrieval
from .data_examples import DATA_EXAMPLES, DATA_IDIOMS, DataExample, example_frames, example_trips
from .charts import asks_for_chart
from .records import (DREW_NO_DATA, IGNORES, IGNORES_PERIOD, NUMBER_FOR_NAME, PRINTED_NOTHING, TABLE_FOR_NUMBER,
                      TOO_MANY_BARS)

SYSTEM = (
    "You are a patient Python tutor. You answer questions by writing a short Python program "
    "that computes the answer and prints it, so the computer does the arithmetic. Use clear "
    "variable names and brief comments. Reply with exactly one ```python code block."
)
PAL_SYSTEM = (
    "You are a patient Python tutor. You answer questions by writing a Python function "
    "solution() that computes the answer step by step, one named variable per quantity, and "
    "returns it, so the computer does the arithmetic. Reply with exactly one ```python code block."
)


@dataclass(frozen=True)
class WorkedExample:
    """A GSM8K *train* question (MIT licence, ../shared/data/gsm8k) solved as a program.

    ``steps`` are the program's lines without the final print/return; ``result`` names the
    variable holding the answer, and ``answer`` is the data set's reference answer, which the
    tests check the program against.
    """

    question: str
    steps: str
    result: str
    answer: float

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


@dataclass(frozen=True)
class PromptStyle:
    """A system message and worked examples shown before the question."""

    name: str
    description: str
    system: str
    examples: tuple[tuple[str, str], ...]  # (question, assistant reply)

    def turns(self, question: str) -> tuple[tuple[str, str], ...]:
        """The worked examples shown before ``question``, as (user message, assistant reply) turns."""
        return self.examples


DATA_SYSTEM = (
    "You are a careful data analyst. You answer questions about the user's data by writing a short "
    "Python program with pandas that computes the answer and prints it. The user's variables already "
    "exist in the program's session: use them as they are, and never create, load or rebuild them. "
    "Reply with exactly one ```python code block."
)


@dataclass(frozen=True)
class DataPromptStyle(PromptStyle):
    """Worked examples about a DataFrame, described exactly as the user's data is described; then
    up to ``idioms`` short examples of the pandas idioms most like the question (:data:`DATA_IDIOMS`)."""

    idioms: int = 0

    def turns(self, question: str) -> tuple[tuple[str, str], ...]:
        chosen = _idiom_index().most_similar(question, self.idioms) if self.idioms else []
        return _data_turns(self.examples) + tuple((_idiom_text(idiom), idiom.reply()) for idiom in chosen)


@functools.cache
def _data_turns(examples: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    trips = {"trips": example_trips()}
    return tuple((_question_text(question, trips), reply) for question, reply in examples)


@functools.cache
def _idiom_index() -> retrieval.SimilarQuestions[DataExample]:
    return retrieval.SimilarQuestions(DATA_IDIOMS)


@functools.cache  # builds the example frames to describe them: once per idiom, not per question
def _idiom_text(idiom: DataExample) -> str:
    """An idiom's question, short: `trips` was described in full by the fixed examples above it,
    which keeps the added examples to a few dozen tokens each."""
    others = {name: frame for name, frame in example_frames().items() if name in idiom.frames and name != "trips"}
    also = f"\nAlso in the session:\n{describe_variables(others)}" if others else ""
    return f"{idiom.question}\n\nUse `trips` (described above) as it is.{also}"


@dataclass(frozen=True)
class SimilarPromptStyle(PromptStyle):
    """The ``shots`` most similar solved questions of the verified bank (:mod:`.retrieval`), each
    a program whose comments are the solution's steps. Measured against the fixed examples in
    benchmarks/README.md ("Examples chosen for the question"): not the default."""

    shots: int = 2

    def turns(self, question: str) -> tuple[tuple[str, str], ...]:
        return tuple(retrieval.similar_examples(question, self.shots))


PROMPT_STYLES: dict[str, PromptStyle] = {
    style.name: style
    for style in (
        PromptStyle("chat-2shot", "flat script that prints, 2 worked examples", SYSTEM,
                    tuple((e.question, e.as_script()) for e in WORKED_EXAMPLES[:2])),
        PromptStyle("chat-8shot", "flat script that prints, 8 worked examples", SYSTEM,
                    tuple((e.question, e.as_script()) for e in WORKED_EXAMPLES)),
        PromptStyle("pal-8shot", "PAL's def solution() that returns, 8 worked examples", PAL_SYSTEM,
                    tuple((e.question, e.as_pal_function()) for e in WORKED_EXAMPLES)),
        SimilarPromptStyle("chat-similar", "flat script that prints, the 2 most similar of 7,001 verified "
                           "GSM8K train programs", SYSTEM, (), shots=2),
        # What pal-jupyter train fine-tunes on, and so what its adapters are asked with.
        PromptStyle("chat-0shot", "flat script that prints, no worked examples", SYSTEM, ()),
        DataPromptStyle("data-3shot", "pandas on a described DataFrame, 3 worked examples", DATA_SYSTEM,
                        tuple((e.question, e.reply()) for e in DATA_EXAMPLES)),
        DataPromptStyle("data-similar", "data-3shot, then the 2 pandas idioms most like the question",
                        DATA_SYSTEM, tuple((e.question, e.reply()) for e in DATA_EXAMPLES), idioms=2),
        PromptStyle("data-0shot", "pandas on a described DataFrame, no worked examples", DATA_SYSTEM, ()),
    )
}
#: Chosen by measurement on GSM8K train questions that are not worked examples (benchmarks/README.md).
DEFAULT_STYLE = "chat-2shot"
#: For questions about the user's variables (``--use``): measured on the DataFrame suite
#: (docs/benchmarks.md, "Prompts for questions about your data").
DATA_STYLE = "data-similar"
FEW_SHOT = PROMPT_STYLES[DEFAULT_STYLE].examples

REPAIR_REQUEST = (
    "First explain in one or two plain sentences, for a beginner, what went wrong and why "
    "(start with 'Explanation:'). Then give the complete corrected program in one ```python "
    "block that prints the answer."
)

MAX_FEEDBACK_CHARS = 2000  # keep the prompt short: the end of a traceback says the most


def describe_variables(variables: Mapping[str, Any]) -> str:
    """One entry per variable the program can use, the way a pandas user reads data: for a
    table its shape, each column's dtype, missing values and typical values (a model that sees
    'East' and '2026-07-01' in a column writes a filter that matches them), and the first rows."""
    return "\n".join(_describe(name, value) for name, value in variables.items())


def _describe(name: str, value: Any) -> str:
    kind = type(value).__name__
    if hasattr(value, "columns") and hasattr(value, "dtypes") and hasattr(value, "head"):
        rows, cols = value.shape
        lines = [f"- `{name}`: pandas DataFrame, {rows} rows x {cols} columns"]
        lines += [f"    {line}" for line in _column_table(value)]
        preview = value.head(3).to_string(max_colwidth=30, max_cols=12)
        lines += ["  first rows:", textwrap.indent(preview, "    ")]
        return "\n".join(lines)
    if hasattr(value, "dtype") and hasattr(value, "index") and hasattr(value, "head"):  # a Series
        preview = value.head(5).to_string(max_rows=5)
        return (f"- `{name}`: pandas Series {value.name!r} of {len(value)} values, dtype {value.dtype}\n"
                f"  first values:\n{textwrap.indent(preview, '    ')}")
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"- `{name}`: {kind} with shape {value.shape}, dtype {value.dtype}"
    if isinstance(value, (int, float, str, bool)):
        return f"- `{name}`: {kind} = {value!r}"[:120]
    if isinstance(value, Mapping):
        keys = ", ".join(repr(k) for k in list(value)[:8])
        return f"- `{name}`: {kind} of length {len(value)}, keys {keys}{', ...' if len(value) > 8 else ''}"
    if hasattr(value, "__len__"):
        head = repr(list(value)[:5])[:80] if hasattr(value, "__iter__") else ""
        return f"- `{name}`: {kind} of length {len(value)}" + (f", starting {head}" if head else "")
    return f"- `{name}`: {kind}"


def _column_table(frame: Any) -> list[str]:
    """Like ``df.info()``, plus what the values look like."""
    width = max([len(str(c)) for c in frame.columns] + [6])
    lines = [f"{'column':<{width}}  {'dtype':<14}  {'non-null':>8}  values"]
    for column in frame.columns[:30]:
        series = frame[column]
        lines.append(f"{str(column):<{width}}  {str(series.dtype):<14}  {int(series.notna().sum()):>8}  {_values_hint(series)}")
    if len(frame.columns) > 30:
        lines.append(f"... and {len(frame.columns) - 30} more columns")
    return lines


def _values_hint(series: Any) -> str:
    values = series.dropna()
    if values.empty:
        return "(all missing)"
    kind = getattr(series.dtype, "kind", "O")
    if kind in "iuf":
        return f"{values.min():g} to {values.max():g}"
    if kind == "M":
        return f"{values.min()} to {values.max()}"
    if kind == "b":
        return "True/False"
    distinct = values.astype(str).value_counts()
    shown = ", ".join(repr(v[:30]) for v in distinct.index[:5])
    return f"{len(distinct)} distinct: {shown}{', ...' if len(distinct) > 5 else ''}"


_USE_AS_IS = (
    "These variables already exist in the program's Python session, holding the user's real "
    "data. Use them as they are: do not create them, load them from files, or replace them "
    "with sample data."
)
DATA_INSTRUCTIONS = f"{_USE_AS_IS} End by printing the answer (just the number, when the question asks for a number)."
# A chart is checked by the data it draws (engine.charts): the numbers printed first show the user
# what it plots, and the title and labels say what the chart shows.
CHART_INSTRUCTIONS = (f"{_USE_AS_IS} Compute the numbers the chart shows and print them, then draw the chart "
                      "from them, with a title and axis labels taken from the question.")


def _question_text(question: str, variables: Mapping[str, Any] | None, look: str | None = None) -> str:
    """The question, and for one about the user's variables what they hold (and the data look's
    output, once there is one: :mod:`.data_look`)."""
    if not variables:
        return question
    instructions = CHART_INSTRUCTIONS if asks_for_chart(question) else DATA_INSTRUCTIONS
    text = f"{question}\n\n{instructions}\n{describe_variables(variables)}"
    return f"{text}\n\n{data_look.look_text(look)}" if look else text


CONTEXT_INTRO = (
    "For reference only, the last cells I ran in my notebook, oldest first (do not repeat them unless the "
    "question asks):"
)
CONTEXT_QUESTION = "My question:"


def context_block(context: str) -> str:
    """The notebook's cells and last error as the model is shown them, labelled as reference."""
    return f"{CONTEXT_INTRO}\n\n{context.strip()}"


def with_context(text: str, context: str | None) -> str:
    """The question's turn with the notebook context before it (:mod:`pal_jupyter.notebook.context`),
    or ``text`` as it is without any. Only ever the final user turn: the system message and the worked
    examples before it stay the same, and with them the backend's cached prefix."""
    if not context or not context.strip():
        return text
    return f"{context_block(context)}\n\n{CONTEXT_QUESTION}\n{text}"


def pal_messages(
    question: str, variables: Mapping[str, Any] | None = None, style: str = DEFAULT_STYLE, look: str | None = None,
    context: str | None = None,
) -> list[ChatMessage]:
    """The first prompt for a question: the style's system message and worked examples, then the question
    (after the notebook ``context``, when there is one).

    For a fixed style everything before the question is the same for every question, which is
    what lets the backend reuse its key/value cache; a similar-examples style shares the system
    message only, and pays for reading its examples once per question.
    """
    chosen = prompt_style(style)
    messages: list[ChatMessage] = [{"role": "system", "content": chosen.system}]
    for example_question, example_answer in chosen.turns(question):
        messages.append({"role": "user", "content": example_question})
        messages.append({"role": "assistant", "content": example_answer})
    messages.append({"role": "user", "content": with_context(_question_text(question, variables, look), context)})
    return messages


def prompt_style(name: str) -> PromptStyle:
    try:
        return PROMPT_STYLES[name]
    except KeyError:
        raise ValueError(f"Unknown prompt style {name!r}: choose one of {', '.join(PROMPT_STYLES)}.") from None


def repair_messages(
    question: str,
    program: str | None,
    feedback: str,
    variables: Mapping[str, Any] | None = None,
    *,
    repeated: bool = False,
    look: str | None = None,
    context: str | None = None,
) -> list[ChatMessage]:
    """The prompt after a failed attempt: question (after the notebook ``context``, when there is one), failed
    program, interpreter feedback.

    ``repeated``: the last "correction" was the same program as before. Saying so changes the
    prompt, which matters with greedy decoding: the same prompt would get the same reply again.
    """
    if len(feedback) > MAX_FEEDBACK_CHARS:
        feedback = "...\n" + feedback[-MAX_FEEDBACK_CHARS:]
    parts = [context_block(context)] if context and context.strip() else []
    parts.append(f"Question: {_question_text(question, variables, look)}")
    if program is None:
        parts.append("Your previous reply contained no Python code.")
    else:
        parts.append(f"This program was written to answer it:\n```python\n{program}\n```")
    parts.append(f"Running it gave this result:\n```text\n{feedback.rstrip()}\n```")
    if repeated:
        parts.append("This program is unchanged from the previous attempt, which failed the same way. "
                     "Change the line the error points at.")
    parts.append(REPAIR_REQUEST)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def render_for_trace(messages: Sequence[ChatMessage]) -> str:
    """A readable single-string form of a chat, used as the LeTI 'instruction' text."""
    return "\n\n".join(f"<|{m['role']}|>\n{m['content']}" for m in messages)


def execution_feedback(
    result: ExecutionResult,
    correct: bool | None = None,
    code: str | None = None,
    output_limit: int = 600,
    off_target: str | None = None,
) -> str:
    """What the interpreter 'said' about a run, as text for the repair prompt and the trace."""
    printed = result.text_output().strip()
    if len(printed) > output_limit:
        printed = printed[:output_limit] + " ...[cut]"
    if off_target is not None and result.ok:
        return _no_answer_feedback(off_target, printed)
    if result.error is not None:
        head = f"It printed:\n{printed}\n\n" if printed else ""
        error = result.error.traceback.strip() or f"{result.error.ename}: {result.error.evalue}"
        suggestion = name_suggestion(result.error.ename, result.error.evalue, code, result.error.lineno)
        return head + error + (f"\n{suggestion}" if suggestion else "")
    if not result.ok:
        return f"The run stopped: {result.reason.value}."
    if correct is False:
        return f"The program ran and printed:\n{printed or '(nothing)'}\nThat is not the correct answer."
    if not printed and not result.outputs:
        return "The program ran but printed nothing. Print the answer."
    return f"The program ran and printed:\n{printed}" if printed else "The program ran without errors."


def _no_answer_feedback(off_target: str, printed: str) -> str:
    """What to tell the model about a program that ran but gave no usable answer (``Attempt.off_target``)."""
    if off_target == PRINTED_NOTHING:
        return "The program ran but printed nothing. End it by printing the answer, for example print(answer)."
    if off_target == TABLE_FOR_NUMBER:
        return (f"The program ran and printed a table:\n{printed}\nbut the question asks for one number. "
                "Reduce the table to a single value (for example with .sum(), .iloc[0] or .item()) and "
                "print just that number.")
    if off_target == DREW_NO_DATA:
        return (f"The program ran and drew a chart, but it {off_target}. Compute the table to plot first, in "
                "one step from the rows (for example frame.assign(value=frame['a'] * frame['b'])"
                ".groupby('group')['value'].sum()), print it to see its values, then plot that table.")
    if off_target.startswith(TOO_MANY_BARS):
        return (f"The program ran and drew a chart, but it {off_target}. Group the rows first, one value per "
                "group (for example frame.groupby('group')['value'].sum()), print that table, then plot it.")
    if off_target.startswith(NUMBER_FOR_NAME):
        return (f"The program ran and printed:\n{printed}\nbut it {off_target}. Print the name itself: take it "
                "from the index of a grouped result (for example frame.groupby('city')['value'].sum().idxmax()), "
                "or read the name column of the row you found (frame.loc[row, 'name']).")
    if off_target.startswith(IGNORES_PERIOD):
        return (f"The program ran and printed:\n{printed}\nbut it {off_target}, so it computed over every date. "
                "Select the rows of that period first, then compute the answer from those rows only.")
    if off_target.startswith(IGNORES):
        return (f"The program ran and printed:\n{printed}\nbut it {off_target}, so it computed over the wrong "
                "rows. Select the rows the question is about first (for example frame[frame['column'] == "
                "'value']), then compute the answer from those rows only.")
    return (f"The program ran and printed:\n{printed}\nThat is a missing value, not an answer: usually a "
            "filter that matched no rows, a value that is missing in the data, or a division by zero. Print "
            "the rows or values the calculation uses to see which, then print the answer.")


def misspelt_name(
    ename: str, evalue: str, code: str | None, known: Iterable[str] = (), line: int | None = None,
) -> tuple[str, str] | None:
    """(the undefined name, the defined name closest to it) for a NameError, as Python's own
    "Did you mean" finds it. The candidates are the names ``code`` defines (before ``line``, the
    failing line, when it is known: a name first given a value on or after it did not exist yet),
    and ``known`` (a notebook's earlier cells' names)."""
    if ename != "NameError" or not (code or known):
        return None
    match = re.search(r"name '(\w+)' is not defined", evalue)
    if not match:
        return None
    try:
        tree = ast.parse(code or "")
    except SyntaxError:
        return None
    if line is not None and any(_inside(function, line) for function in ast.walk(tree)):
        line = None  # a function runs when called: names given values after it may exist by then
    earlier = [n for n in ast.walk(tree) if line is None or getattr(n, "lineno", line) < line]
    names = {n.id for n in earlier if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names |= {n.name for n in earlier if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names |= {name for name in known if not name.startswith("_")}
    close = difflib.get_close_matches(match.group(1), sorted(names), n=1, cutoff=0.6)
    return (match.group(1), close[0]) if close else None


def _inside(node: ast.AST, line: int) -> bool:
    """Whether ``line`` lies in the body of ``node``, a function (or lambda) definition."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    return isinstance(node, functions) and node.lineno <= line <= (node.end_lineno or node.lineno)


def name_suggestion(ename: str, evalue: str, code: str | None, line: int | None = None) -> str | None:
    """Python's own "Did you mean ...?" for a misspelt name, which IPython's tracebacks omit."""
    names = misspelt_name(ename, evalue, code, line=line)
    return f"Did you mean: '{names[1]}'?" if names else None


def replaced_data_feedback(replaced: Sequence[Any]) -> str:
    """Why a program that overwrote the user's variables was not run (see ``extraction.replaced_variables``)."""
    first = replaced[0]
    names = sorted({r.name for r in replaced})
    listed = ", ".join(f"`{n}`" for n in names)
    return (
        f"The program was not run: it replaced {listed} with data of its own (line {first.lineno}: "
        f"`{first.line}`). {listed} already {'exists' if len(names) == 1 else 'exist'} and "
        f"{'holds' if len(names) == 1 else 'hold'} the user's real data: use {'it' if len(names) == 1 else 'them'} "
        "as it is, and do not create, load or overwrite it."
    )
