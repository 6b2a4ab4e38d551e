"""What the interpreter "said" about a run, in the words the model (and the user) are told.

:func:`execution_feedback` is the feedback of the repair prompt (:mod:`.repairs`), of the trace and
of the training examples (:mod:`.training`): the traceback (with Python's own "Did you mean" for a
misspelt name, which IPython's tracebacks omit), or for a program that ran but gave no usable answer
(``Program.off_target``, one of the phrases below, chosen by :mod:`pal_jupyter.engine.vote`) what to
do instead.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..kernels import ExecutionResult
from .styles import ANALYSIS_LIBRARIES

#: Why a program that ran cleanly gave no usable answer (``Program.off_target``), as "The program ...".
TABLE_FOR_NUMBER = "printed a table, but the question asks for one number"
PRINTED_NOTHING = "printed nothing"
DREW_NO_DATA = ("drew a chart with no data in it (every value it plots is missing or zero): check that the values "
                "line up with their labels (multiplying columns of tables with different indexes gives NaN)")
TOO_MANY_BARS = "drew more bars "


def too_many_bars(drawn: int, column: str, distinct: int) -> str:
    """The ``off_target`` of a chart with more bars than the column it should show one bar per has
    values: usually one bar per row, with no groupby."""
    return (f"{TOO_MANY_BARS}({drawn}) than the data has {column} values ({distinct}), where the question asks for "
            f"one per {column}: it plots rows, not a total per {column}")


OTHER_KIND = "drew the wrong kind of chart"


def other_kind(drawn: str, asked: str) -> str:
    """The ``off_target`` of a chart of another kind than the question asks for ("as a line chart")."""
    return f"{OTHER_KIND}: a {drawn}, where the question asks for a {asked}; draw a {asked}"


def no_value(printed: str) -> str:
    """The ``off_target`` of a program whose answer is a missing value ('nan', 'None')."""
    return f"printed {printed}, which is a missing value, not an answer"


IGNORES = "never uses "


def ignores(where: str) -> str:
    """The ``off_target`` of a program that never uses a value of the data the question names."""
    return f"{IGNORES}{where}, which the question names"


IGNORES_PERIOD = IGNORES + "the rows of "


def ignores_period(period: str, selection: str) -> str:
    """The ``off_target`` of a program that never selects the month or year the question names
    (``engine.filters.NamedPeriod``); ``selection`` is code that does, for the repair prompt."""
    return f"{IGNORES_PERIOD}{period}, which the question names (select them with {selection})"


NUMBER_FOR_NAME = "printed a number ("


def number_for_name(printed: str) -> str:
    """The ``off_target`` of a program that printed a bare number where the question asks for a name
    (a city, a product): usually the row number ``idxmax()`` gives over a frame's default index."""
    return (f"{NUMBER_FOR_NAME}{printed}) where the question asks for a name: probably a row number from "
            "idxmax() or an index, not the name")


TEMPLATE = "printed a template "


def printed_template(field: str) -> str:
    """The ``off_target`` of a program that printed a field's name in braces, not its value."""
    return f"{TEMPLATE}({field}) where the value belongs: an f-string is missing its f"


MISSING_PARTS = "did not print the answer in the form the question asks for"


def missing_parts(names: Sequence[str]) -> str:
    """The ``off_target`` of a program that printed without the ``@name[value]`` parts the question asks for."""
    return f"{MISSING_PARTS}: {', '.join(f'@{name}[...]' for name in names)} is missing"


def boolean_for_words(printed: str, words: Sequence[str]) -> str:
    """The ``off_target`` of a program that printed True or False where the question offers words."""
    offered = ", ".join(f'"{word}"' for word in words[:6])
    return f"{MISSING_PARTS}: it printed {printed} where the question asks for one of its words ({offered})"


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
        missing = missing_module(result.error.ename, result.error.evalue)
        suggestion = (f"{missing} Use those instead." if missing
                      else name_suggestion(result.error.ename, result.error.evalue, code, result.error.lineno))
        return head + error + (f"\n{suggestion}" if suggestion else "")
    if not result.ok:
        return f"The run stopped: {result.reason.value}."
    if correct is False:
        return f"The program ran and printed:\n{printed or '(nothing)'}\nThat is not the correct answer."
    if not printed and not result.outputs:
        return "The program ran but printed nothing. Print the answer."
    return f"The program ran and printed:\n{printed}" if printed else "The program ran without errors."


#: Off-target reasons that name what a program missed (checked in this order: a period is also a
#: filter), and what to tell the model after "but it <reason>".
_MISSED = (
    (NUMBER_FOR_NAME, ". Print the name itself: take it from the index of a grouped result (for example "
                      "frame.groupby('city')['value'].sum().idxmax()), or read the name column of the row you "
                      "found (frame.loc[row, 'name'])."),
    (IGNORES_PERIOD, ", so it computed over every date. Select the rows of that period first, then compute the "
                     "answer from those rows only."),
    (IGNORES, ", so it computed over the wrong rows. Select the rows the question is about first (for example "
              "frame[frame['column'] == 'value']), then compute the answer from those rows only."),
)


def _no_answer_feedback(off_target: str, printed: str) -> str:
    """What to tell the model about a program that ran but gave no usable answer (``Program.off_target``)."""
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
    if off_target.startswith(TEMPLATE):
        return (f"The program ran and printed:\n{printed}\nbut it {off_target}. Put f before the string's opening "
                "quote so that each {name} is replaced by its value.")
    if off_target.startswith(MISSING_PARTS):
        return (f"The program ran and printed:\n{printed}\nbut it {off_target}. End by printing each asked value "
                "exactly as the question's format shows, in its words, for example print(f\"@name[{value}]\").")
    advice = next((advice for reason, advice in _MISSED if off_target.startswith(reason)), None)
    if advice is not None:
        return f"The program ran and printed:\n{printed}\nbut it {off_target}{advice}"
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


_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def missing_module(ename: str, evalue: str) -> str | None:
    """For a program that imports what the programs' kernel lacks, one line: that it is not there, and
    what is (the user reads it above the error; the repair is told it too, or it tends to import it again)."""
    match = _NO_MODULE.search(evalue) if ename in ("ModuleNotFoundError", "ImportError") else None
    if not match:
        return None
    return (f"The module {match.group(1)} is not installed where programs run, and cannot be installed: "
            f"{ANALYSIS_LIBRARIES}")


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
