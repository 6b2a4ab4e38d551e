"""Hints for a beginner's commonest errors, in short common words, without the model.

Python's own message already says what went wrong; a beginner cannot read it yet. For the
errors that beginners make most (a misspelt or missing name, text joined to a number, a
division by zero, a missing key, a list place that does not exist, a number used like a
function, ...) the hint is written here from that message: it names the line, says what
happened in plain words, and asks one question that leads to the fix, without writing it.

Why not the model: on the planted errors of ``benchmarks/bench_hints.py`` the default model's
hints were often wrong (it advised defining a misspelt name) and read at grade 9 to 10, above
the grade-8 target, even when told to use short common words. The words here are checked by
the same benchmark. Errors not covered return ``None`` and are left to the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from .. import prompts
from .cell_error import CellError, CellLine

# Python's type names as a beginner says them.
KINDS = {
    "int": "a whole number", "float": "a number", "str": "text", "NoneType": "None (no value)",
    "list": "a list", "dict": "a dictionary", "tuple": "a tuple", "set": "a set", "bool": "True or False",
    "function": "a function", "builtin_function_or_method": "a function", "method": "a function",
    "type": "a type", "DataFrame": "a table", "Series": "a column", "module": "a module",
}
MODULES = {"math": "math", "np": "numpy", "pd": "pandas", "plt": "matplotlib.pyplot", "random": "random",
           "statistics": "statistics", "datetime": "datetime", "numpy": "numpy", "pandas": "pandas"}

Rule = Callable[[re.Match[str]], str]


def kind(name: str) -> str:
    return KINDS.get(name, f"a `{name}`")


def typo_hint(code: str, error: CellError, known: Iterable[str] = ()) -> str | None:
    """A misspelt name, said plainly from Python's own "Did you mean" (``known``: the names the
    notebook already has). Also used outside tutor mode: the model, even told the suggestion,
    mostly advised defining the misspelt name."""
    at = _failing_line(error)
    line = at.line if at is not None and at.cell == error.cell else None  # another cell's line bounds nothing here
    names = prompts.misspelt_name(error.name, _printed_message(error), code, known, line=line)
    if names is None:
        return None
    bad, good = names
    return (f"Python does not know the name `{bad}`: nothing got that name before this line. Is it a "
            f"spelling slip for `{good}`? Compare the two names letter by letter.")


def plain_hint(code: str, error: CellError, known: Iterable[str] = ()) -> str | None:
    """A hint for ``error``, raised by ``code``: the line, what happened, one question. ``None``
    when the error is not one of the covered."""
    said = typo_hint(code, error, known) or _rule_hint(error)
    if said is None:
        return None
    where = _where(error)
    return f"{where} {said}" if where else said


def _rule_hint(error: CellError) -> str | None:
    message = _printed_message(error)
    for name, pattern, rule in RULES:
        match = re.search(pattern, message) if name == error.name else None
        if match is not None:
            return rule(match)
    return None


def _printed_message(error: CellError) -> str:
    """The message as Python prints it after the exception's name, on the last line of its text
    ("name 'totl' is not defined. Did you mean: 'total'?"; a SyntaxError's without its file)."""
    return error.exception_text.splitlines()[-1].partition(": ")[2] if error.exception_text else ""


def _failing_line(error: CellError) -> CellLine | None:
    """The failing line a hint can name: one whose code is known."""
    at = error.failed_at
    return at if at is not None and at.code else None


def _where(error: CellError) -> str:
    """"Look at line 3: `total = a + b`." (or "... line 3 of cell [2] ..."), or "" when unknown."""
    at = _failing_line(error)
    if at is None:
        return ""
    cell = f" of cell [{at.cell}]" if at.cell != error.cell else ""
    return f"Look at line {at.line}{cell}: `{at.code}`."


def _joined_text(m: re.Match[str]) -> str:
    other = kind(m.group(2))
    return (f"Python was asked to join text and {other} with `+`. It can join text to text, or add numbers, "
            f"but it cannot mix the two. Which value here is text, and which is {other}?")


def _operands(m: re.Match[str]) -> str:
    op, left, right = m.group(1), kind(m.group(2)), kind(m.group(3))
    said = f"Python cannot use `{op}` on {left} and {right}."
    if "NoneType" in (m.group(2), m.group(3)):
        return (f"{said} A None often comes from a function with no `return`, or from `print`, which gives "
                "back None. Where did that value come from?")
    if "str" in (m.group(2), m.group(3)):
        return f"{said} One of them is text, even if it looks like a number. Where did that value get its text?"
    return f"{said} Which value on this line is not the kind you expected?"


def _not_callable(m: re.Match[str]) -> str:
    return (f"Python was asked to call {kind(m.group(1))} as if it were a function, because a `(` comes right "
            "after it. Is a `*` missing before a bracket? Or does a name that was a function now hold a value?")


def _not_subscriptable(m: re.Match[str]) -> str:
    return (f"Square brackets pick one item out of a list, text or table. Here they were used on "
            f"{kind(m.group(1))}, which has no items. Which name on this line holds it?")


def _not_iterable(m: re.Match[str]) -> str:
    return (f"Python was asked to go through the items of {kind(m.group(1))}, but it has no items. A `for` "
            "loop, `sum` and `max` all need a list. What should they go through?")


def _repeat(m: re.Match[str]) -> str:
    return (f"With `*`, Python can repeat text or a list a whole number of times, but here the other side is "
            f"{kind(m.group(1))}. Are both values numbers, as you think? Where did the text come from?")


def _arguments(m: re.Match[str]) -> str:
    return (f"The function `{m.group(1)}` did not get the number of values it needs (Python says: "
            f"\"{m.group(0)}\"). Count the values inside its brackets. Which one is missing, or extra?")


def _zero(m: re.Match[str]) -> str:
    return ("This line divides by a value that is 0 when it runs. Which value here is 0? Print it just "
            "before this line, then ask why it is 0.")


def _missing_name(m: re.Match[str]) -> str:
    name = m.group(1)
    if name in MODULES:
        return (f"`{name}` is a module, and a module must be imported before it is used. Which line of your "
                "code brings it in, and does it run before this one?")
    return (f"Python does not know the name `{name}`: nothing gave it a value before this line. Where should "
            f"`{name}` get its value? If another cell makes it, has that cell been run?")


def _missing_key(m: re.Match[str]) -> str:
    return (f"There is no key {m.group(1)} here. Check its spelling and its capital letters. Which keys are "
            "there? Print them to see.")


def _no_place(m: re.Match[str]) -> str:
    what = {"list": "list", "string": "text", "tuple": "tuple"}.get(m.group(1), m.group(1))
    return (f"This line asks for an item at a place the {what} does not have. Places start at 0, so 3 items "
            f"have places 0, 1 and 2. How many items does the {what} have?")


def _not_a_number(m: re.Match[str]) -> str:
    tool, text = m.group(1), m.group(2)
    what = "a whole number" if tool == "int" else "a number"
    return (f"`{tool}()` can only turn text that holds {what} into a number, and here it got {text}. What is "
            "in that text, and where did it come from?")


def _no_attribute(m: re.Match[str]) -> str:
    owner, attribute = m.group(1), m.group(2)
    if owner == "NoneType":
        return (f"The value here is None, so it has no `.{attribute}`. Where did the None come from? A "
                "function with no `return` gives None, and so does `.sort()` on a list.")
    return (f"{kind(owner).capitalize()} has nothing called `.{attribute}`. Is the name spelt right? Is the "
            "value the kind you think it is?")


def _module_attribute(m: re.Match[str]) -> str:
    return f"The module `{m.group(1)}` has nothing called `{m.group(2)}`. Is the name spelt right?"


def _no_module(m: re.Match[str]) -> str:
    return (f"The module `{m.group(1)}` cannot be found where this code runs. Is its name spelt right? If "
            "it is, ask your teacher how to get it.")


def _unreadable(m: re.Match[str]) -> str:
    said = re.sub(r" \([^()]*, line \d+\)$", "", m.group(0))  # the kernel's evalue ends "(file, line N)"
    return (f"Python could not read this line, so none of the cell ran. It says: \"{said}\". Look for a "
            "missing bracket, quote, colon or comma here or on the line before.")


def _indent(m: re.Match[str]) -> str:
    return ("The spaces at the start of this line do not match the lines around it. Lines of one block must "
            "start at the same place. Which line is out of step?")


# (exception name, pattern over its message, the hint): the first match wins.
RULES: list[tuple[str, str, Rule]] = [
    ("TypeError", r'can only concatenate (str) \(not "(\w+)"\) to str', _joined_text),
    ("TypeError", r"unsupported operand type\(s\) for ([^:]+): '(\w+)' and '(\w+)'", _operands),
    ("TypeError", r"'(\w+)' object is not callable", _not_callable),
    ("TypeError", r"'(\w+)' object is not subscriptable", _not_subscriptable),
    ("TypeError", r"'(\w+)' object is not iterable", _not_iterable),
    ("TypeError", r"can't multiply sequence by non-int of type '(\w+)'", _repeat),
    ("TypeError", r"(\w+)\(\) ((?:takes|missing) .+)", _arguments),
    ("ZeroDivisionError", r".*", _zero),
    ("NameError", r"name '(\w+)' is not defined", _missing_name),
    ("KeyError", r"^(.+)$", _missing_key),
    ("IndexError", r"(list|string|tuple) index out of range", _no_place),
    ("ValueError", r"invalid literal for (int)\(\) with base 10: (.+)", _not_a_number),
    ("ValueError", r"could not convert string to (float): (.+)", _not_a_number),
    ("AttributeError", r"module '([\w.]+)' has no attribute '(\w+)'", _module_attribute),
    ("AttributeError", r"'(\w+)' object has no attribute '(\w+)'", _no_attribute),
    ("ModuleNotFoundError", r"No module named '([\w.]+)'", _no_module),
    ("IndentationError", r".+", _indent),
    ("SyntaxError", r".+", _unreadable),
]
