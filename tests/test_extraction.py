import pytest

from pal_jupyter.errors import NoCodeError
from pal_jupyter.engine.extraction import extract_code


def test_first_python_fence_wins_and_chatter_is_dropped():
    reply = "Sure! Here is the program:\n```python\nx = 2\nprint(x * 3)\n```\nIt prints 6.\n```python\nprint('other')\n```"
    extracted = extract_code(reply)
    assert extracted.code == "x = 2\nprint(x * 3)"
    assert extracted.fenced


def test_non_python_fences_are_skipped():
    reply = "Output:\n```text\n6\n```\n```bash\npip install x\n```\n```py\nprint(6)\n```"
    assert extract_code(reply).code == "print(6)"


def test_untagged_fence_is_taken():
    assert extract_code("```\ntotal = 1 + 2\nprint(total)\n```").code == "total = 1 + 2\nprint(total)"


def test_unclosed_fence_at_token_limit_still_yields_code():
    assert extract_code("```python\na = 1\nprint(a)").code == "a = 1\nprint(a)"


def test_explanation_before_code_is_kept_without_its_label():
    reply = "Explanation: `totl` is misspelled, so Python does not know it.\n\n```python\ntotal = 3\nprint(total)\n```"
    extracted = extract_code(reply)
    assert extracted.explanation == "`totl` is misspelled, so Python does not know it."
    assert extracted.code == "total = 3\nprint(total)"


def test_bold_explanation_label_is_removed():
    assert extract_code("**Explanation:** x was never defined.\n```python\nx=1\n```").explanation == "x was never defined."


def test_bare_program_without_fence_strips_prose_around_it():
    reply = "Here you go\nspeed = 60\ntime = 2.5\nprint(speed * time)\nThat gives 150 miles."
    extracted = extract_code(reply)
    assert extracted.code == "speed = 60\ntime = 2.5\nprint(speed * time)"
    assert not extracted.fenced


def test_pal_style_solution_function_is_called_when_never_called():
    code = extract_code("```python\ndef solution():\n    return 6 * 7\n```").code
    assert code.endswith("print(solution())")


def test_solution_already_called_is_left_alone():
    code = extract_code("```python\ndef solution():\n    return 1\n\nprint(solution())\n```").code
    assert code.count("solution()") == 2


def test_indented_block_is_dedented():
    assert extract_code("```python\n    x = 1\n    print(x)\n```").code == "x = 1\nprint(x)"


def test_syntax_error_code_is_returned_for_the_interpreter_to_judge():
    assert extract_code("```python\nprint(1 +\n```").code == "print(1 +"


@pytest.mark.parametrize(
    "reply, message",
    [
        ("", "empty reply"),
        ("   \n ", "empty reply"),
        ("The answer is 150 miles because 60 times 2.5 is 150.", "no Python code"),
        ("Hello", "no Python code"),
        ("```python\n\n```", "no Python code"),
    ],
)
def test_no_code_is_a_clear_error(reply, message):
    with pytest.raises(NoCodeError, match=message):
        extract_code(reply)


def test_lead_in_to_the_code_is_not_part_of_the_explanation():
    reply = "Explanation: `toulose` is misspelt. The corrected program is:\n```python\nprint(1)\n```"
    assert extract_code(reply).explanation == "`toulose` is misspelt."
