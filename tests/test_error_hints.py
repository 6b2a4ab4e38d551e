"""Hints without the model for a beginner's commonest errors, from errors Python really raises.

Each case runs its code as a notebook cell, and the hint is made from the record of its error
that the notebook's cell watcher makes (``notebook.error_help.cell_error``).
"""

import linecache
import warnings
from types import SimpleNamespace

import pytest

from pal_jupyter.classroom.cell_error import CellError, CellLine
from pal_jupyter.classroom.error_hints import plain_hint
from pal_jupyter.notebook.error_help import cell_error

# (code, a phrase the hint must say): the phrase is what makes the hint right for that error.
CASES = [
    ('n = 3\nprint("The answer is " + n)', "join text and a whole number"),
    ('def f():\n    pass\ny = f() + 2', "function with no `return`"),
    ("total = 3(4 + 5)", "Is a `*` missing before a bracket?"),
    ("n = 5\nprint(n[0])", "used on a whole number, which has no items"),
    ("for i in 7:\n    pass", "go through the items of a whole number"),
    ('x = "3" * "4"', "the other side is text"),
    ("def f(a, b):\n    return a\nf(1)", "missing 1 required positional argument"),
    ("d = 0\nprint(10 / d)", "divides by a value that is 0"),
    ("print(pencils)", "nothing gave it a value"),
    ("print(math.sqrt(4))", "must be imported"),
    ('d = {"a": 1}\nprint(d["b"])', "There is no key 'b'"),
    ("a = [1, 2]\nprint(a[2])", "Places start at 0"),
    ('int("3.5")', "it got '3.5'"),
    ("x = [1, 2]\nx.sort().append(3)", "`.sort()` on a list"),
    ("import math\nmath.sqroot(2)", "nothing called `sqroot`"),
    ("import no_such_module_here", "cannot be found"),
]


def error_of(code: str) -> CellError:
    """The record of the error ``code`` raises, run as cell In [1] (as IPython names and caches a cell)."""
    filename = "/tmp/ipykernel_0/cell1.py"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    shell = SimpleNamespace(user_ns={"In": ["", code]}, compile=SimpleNamespace(
        format_code_name=lambda name: ("Cell", "In[1]") if name == filename else None))
    try:
        with warnings.catch_warnings():  # "perhaps you missed a comma?": the error itself is wanted
            warnings.simplefilter("ignore", SyntaxWarning)
            compiled = compile(code, filename, "exec")
        exec(compiled, {})
    except Exception as error:  # noqa: BLE001 - the error is the point
        return cell_error(shell, error, code, 1)
    raise AssertionError(f"no error from {code!r}")


@pytest.mark.parametrize("code, says", CASES, ids=[c[1][:30] for c in CASES])
def test_the_hint_names_the_line_says_what_happened_and_asks(code, says):
    error = error_of(code)
    hint = plain_hint(code, error)
    assert hint is not None and hint.startswith(f"Look at line {error.failed_at.line}: `"), (error, hint)
    assert says in hint and "?" in hint, hint
    assert len(hint.split()) <= 60, hint  # the target is 120 words; these are much shorter


def test_a_syntax_error_names_its_line_from_python_s_own_format():
    code = "total = 3\nif total > 1\n    print(total)"
    hint = plain_hint(code, error_of(code))
    assert hint is not None and hint.startswith("Look at line 2: `if total > 1`") and "expected ':'" in hint, hint


def test_a_misspelt_name_is_a_spelling_slip_not_a_missing_value():
    code = "pencils_left = 33\nprint(pencils_lft)"
    assert "spelling slip for `pencils_left`" in plain_hint(code, error_of(code))


def test_a_name_made_on_the_failing_line_is_not_offered_as_the_right_spelling():
    code = "white_fiber = blue_fiber / 2\nprint(white_fiber)"  # blue_fiber's own line removed
    hint = plain_hint(code, error_of(code))
    assert "nothing gave it a value" in hint and "white_fiber`?" not in hint, hint


def test_errors_not_covered_are_left_to_the_model():
    code = "def f(n):\n    return f(n + 1)\nf(0)"
    assert plain_hint(code, error_of(code)) is None  # RecursionError
    assert plain_hint("", CellError("ValueError", "math domain error", "ValueError: math domain error")) is None
    assert plain_hint("", CellError("", "", "")) is None


def test_a_line_of_an_earlier_cell_is_named_with_its_cell():
    # The function was made in cell [3] and called from this cell: the line to look at is there.
    error = CellError("NameError", "name 'totl' is not defined", "NameError: name 'totl' is not defined",
                      (CellLine(4, 1, "print(double())"), CellLine(3, 2, "return 2 * totl")), 4, "print(double())")
    hint = plain_hint("print(double())", error, known=["total", "double"])
    assert hint.startswith("Look at line 2 of cell [3]: `return 2 * totl`.") and "slip for `total`" in hint, hint
