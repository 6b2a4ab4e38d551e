"""Notebook context (``%%pal --context N``): which cells and which error are collected, the token cap,
the note, and where the engine puts it in the prompt; then end to end, in a real IPython kernel driven
like a frontend (as test_magic.py does) with the tiny transformers model."""

from __future__ import annotations

import json
import linecache

import pytest
from kernel_driver import UserKernel, text_of
from tiny_model import build_tokenizer

from pal_jupyter import ScriptedBackend, solve
from pal_jupyter import prompts
from pal_jupyter.engine.options import OPTIONS, Settings
from pal_jupyter.engine.records import PromptContext, program_record
from pal_jupyter.errors import SettingError
from pal_jupyter.notebook.context import (CHARS_PER_TOKEN, ESTIMATE, MAX_CONTEXT_TOKENS, Cell, NotebookContext,
                                          collect, token_counter)
from pal_jupyter.notebook.error_help import cell_error
from pal_jupyter.notebook.magics import CELL_OPTIONS, PalMagics
from pal_jupyter.notebook.session_html import summary_html, summary_text
from pal_jupyter.training.examples import _example


class FakeCompiler:
    """IPython's CachingCompiler's one method used here: a cell's file name -> ("Cell", "In[n]")."""

    def __init__(self) -> None:
        self.files: dict[str, int] = {}

    def format_code_name(self, name: str) -> tuple[str, str] | None:
        return ("Cell", f"In[{self.files[name]}]") if name in self.files else None


class FakeShell:
    """What collect() and cell_error() read of IPython's shell: ``user_ns['In']`` (index = execution
    count), the running cell's number, and the compiler that names cell files."""

    def __init__(self, *cells: str):
        self.user_ns = {"In": ["", *cells]}
        self.execution_count = len(cells)  # the last cell is the one running (the %%pal cell)
        self.compile = FakeCompiler()

    def raise_in(self, number: int):
        """Run In[number] as IPython would (its own file name, its lines in linecache); the record
        of its error, as the cell watcher makes it."""
        source, filename = self.user_ns["In"][number], f"/tmp/ipykernel_0/cell{number}.py"
        self.compile.files[filename] = number
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            exec(compile(source, filename, "exec"), {})
        except Exception as error:  # noqa: BLE001 - the error is the point
            return cell_error(self, error)
        raise AssertionError(f"In[{number}] raised nothing")


def test_the_last_code_cells_oldest_first_without_pal_cells_empty_ones_or_the_running_one():
    shell = FakeShell("a = 1", "b = 2", "%%pal\nWhat is a?", "   \n", "c = a + b\n%pal_hint\n", "d = 4",
                      "%%pal --context 3\nWhy?")
    context = collect(shell, 3)
    assert [(c.number, c.source) for c in context.cells] == [(2, "b = 2"), (5, "c = a + b"), (6, "d = 4")]
    assert context.error is None and context.left_out == 0
    assert context.prompt_text() == ("In [2]:\n```python\nb = 2\n```\n\nIn [5]:\n```python\nc = a + b\n```\n\n"
                                     "In [6]:\n```python\nd = 4\n```")
    assert collect(FakeShell("%pal_explain", "%%pal\nQ"), 2).note() == \
        "Context: nothing sent (no code cell ran before this one)"


def test_the_same_cells_from_ins_transformed_form():
    shell = FakeShell("x = 1", "get_ipython().run_cell_magic('pal', '', 'Q\\n')", "y = 2",
                      "get_ipython().run_cell_magic('pal', '--context 5', 'Why\\n')")
    assert [c.source for c in collect(shell, 5).cells] == ["x = 1", "y = 2"]


def test_the_last_error_comes_with_the_cells_that_raised_it():
    shell = FakeShell("speed = 60", "hours = 2\nprint(sped * hours)", "%%pal --context 2\nFix the error above")
    context = collect(shell, 2, shell.raise_in(2))
    assert context.error is not None and context.error.name == "NameError"
    assert context.prompt_text().endswith(
        "The last error (In [2], line 2: print(sped * hours)):\nNameError: name 'sped' is not defined")
    assert context.note() == ("Context sent: the last 2 cells (3 lines) and the last error (NameError), "
                              f"~{context.tokens} tokens (estimated: characters / {CHARS_PER_TOKEN:g})")
    assert context.tokens == -(-len(context.prompt_text()) // CHARS_PER_TOKEN)


def test_an_older_error_is_not_sent():
    shell = FakeShell("1/0", "a = 1", "b = 2", "%%pal --context 2\nQ")
    error = shell.raise_in(1)
    assert collect(shell, 2, error).error is None  # raised before the 2 cells sent: likely fixed since
    assert collect(shell, 3, error).error.name == "ZeroDivisionError"
    # (An error of a pal cell is ours, not the notebook's: the watcher never records one, see
    # test_one_error_is_one_record_for_the_hints_the_context_and_pal_explain.)


def test_a_syntax_error_names_its_line():
    shell = FakeShell("x = (1,\ny = 2", "%%pal --context 1\nWhat is wrong?")
    shell.compile.files["/tmp/ipykernel_0/cell1.py"] = 1
    try:
        compile(shell.user_ns["In"][1], "/tmp/ipykernel_0/cell1.py", "exec")
    except SyntaxError as raised:
        error = cell_error(shell, raised)
    context = collect(shell, 1, error)
    assert context.error is not None and context.error.name == "SyntaxError" and context.error.failed_at.cell == 1
    assert context.prompt_text().endswith("The last error (In [1], line 1: x = (1,):\n"
                                          f"SyntaxError: {error.message}")


def test_the_cap_leaves_out_older_cells_first_and_says_so():
    big = "\n".join(f"value_{i} = {i} * 1000" for i in range(60))  # ~1,200 characters: ~350 tokens estimated
    shell = FakeShell(big, big, big, "tail = 1", "%%pal --context 4\nQ")
    context = collect(shell, 4)
    assert [c.number for c in context.cells] == [2, 3, 4] and context.left_out == 1
    assert context.tokens <= MAX_CONTEXT_TOKENS
    assert context.note().endswith(f"~{context.tokens} tokens (estimated: characters / 3.5); 1 older cell left "
                                   "out by the 1000-token cap")
    assert "value_" in context.prompt_text() and context.prompt_text().startswith("In [2]:")


def test_one_cell_over_the_cap_alone_keeps_its_last_lines():
    huge = "\n".join(f"row_{i} = {i} * 1000" for i in range(400))
    context = collect(FakeShell("early = 0", huge, "%%pal --context 2\nQ"), 2)
    (cell,) = context.cells
    assert cell.number == 2 and cell.cut > 0 and cell.source.endswith("row_399 = 399 * 1000")
    assert cell.lines + cell.cut == 400 and context.tokens <= MAX_CONTEXT_TOKENS
    assert context.prompt_text().startswith(f"In [2]:\n```python\n# ... (its first {cell.cut} lines left out)\n")
    assert context.note().endswith(f"; 1 older cell and the first {cell.cut} lines of In [2] left out by the "
                                   "1000-token cap")
    # A single line over the cap: nothing of that cell fits, and the note says that too.
    alone = collect(FakeShell("x = '" + "a" * 5000 + "'", "%%pal --context 1\nQ"), 1)
    assert alone.cells == () and alone.note() == "Context: nothing sent: 1 older cell left out by the 1000-token cap"


def test_the_models_tokenizer_counts_when_the_backend_has_one():
    class Backend:
        tokenizer = build_tokenizer()

    counter = token_counter(Backend())
    assert counter.exact and token_counter(ScriptedBackend([])) is ESTIMATE
    context = NotebookContext(candidates=(Cell(1, "print(60 * 2.5)"),)).fitted()  # estimated, as resolve() does
    sent = context.sent_to(Backend())
    expected = len(Backend.tokenizer(context.prompt_text(), add_special_tokens=False)["input_ids"])
    assert sent.text == context.prompt_text()
    assert sent.note == f"Context sent: the last cell (1 line), {expected} tokens (the model's tokenizer)"


def test_context_is_an_option_a_trait_and_a_cell_flag():
    assert OPTIONS["context"].default == 0 and Settings().context == 0 and Settings(context=20).context == 20
    with pytest.raises(SettingError, match="context must be a whole number from 0 to 20"):
        Settings(context=21)
    assert "context" in CELL_OPTIONS and PalMagics.class_traits(config=True)["context"].default_value == 0


def test_every_prompt_style_is_unchanged_without_context_and_keeps_its_prefix_with_it():
    for style in prompts.PROMPT_STYLES:
        plain = prompts.pal_messages("How far is it?", style=style)
        assert prompts.pal_messages("How far is it?", style=style, notebook_text="") == plain
        shown = prompts.pal_messages("How far is it?", style=style, notebook_text="In [3]:\n```python\nx = 1\n```")
        assert shown[:-1] == plain[:-1]  # the system message and worked examples: the cached prefix
        assert shown[-1]["content"] == (f"{prompts.CONTEXT_INTRO}\n\nIn [3]:\n```python\nx = 1\n```\n\n"
                                        f"{prompts.CONTEXT_QUESTION}\n{plain[-1]['content']}")


def test_solve_shows_the_context_in_every_prompt_and_keeps_it_in_the_session(tmp_path):
    model = ScriptedBackend(["```python\nprint(sped)\n```", "Explanation: a typo.\n```python\nprint(60)\n```"])
    context = PromptContext("In [2]:\n```python\nspeed = 60\n```", "Context sent: the last cell (1 line), ~9 tokens")
    trace = tmp_path / "trace.jsonl"
    session = solve("Fix the error above", model=model, method="vote", samples=1, max_attempts=2, context=context, trace=trace)
    first, repair = model.calls
    assert first[-1]["content"].startswith(prompts.CONTEXT_INTRO) and "speed = 60" in first[-1]["content"]
    assert first[-1]["content"].endswith(f"{prompts.CONTEXT_QUESTION}\nFix the error above")
    assert repair[-1]["content"].startswith(prompts.CONTEXT_INTRO) and "Question: Fix the error above" in repair[-1]["content"]
    assert session.context == context and session.answer == "60"
    record = program_record(session, session.programs[0])
    assert record["context"] == {"text": context.text, "note": context.note}
    assert "speed = 60" in _example(record).question  # a training example is what the model saw
    with pytest.raises(TypeError, match="not the number of notebook cells|not 3"):
        solve("Q", model=ScriptedBackend([]), context=3)


def test_the_summaries_show_the_note_and_fold_the_text_sent():
    session = solve("What is 6 times 7", model=ScriptedBackend(["```python\nprint(42)\n```"]), method="vote", samples=1,
                    context=PromptContext("In [1]:\n```python\nx = 6\n```", "Context sent: the last cell (1 line)"))
    text = summary_text(session, session.question, "done")
    assert text.splitlines()[:2] == ["%%pal: What is 6 times 7", "Context sent: the last cell (1 line)"]
    page = summary_html(session, session.question, "done")
    assert "<details class='pal-context'><summary class='pal-status'>Context sent: the last cell (1 line)" in page
    assert "For reference only, the last cells I ran" in page and "x = 6" in page
    plain = solve("What is 6 times 7", model=ScriptedBackend(["```python\nprint(42)\n```"]), method="vote", samples=1)
    assert "Context" not in summary_text(plain, plain.question, "done") and "pal-context" not in \
        summary_html(plain, plain.question, "done")


# ---------------------------------------------------------------------- end to end: a kernel, a real model


def _run_ok(kernel: UserKernel, code: str) -> list[dict]:
    reply, outputs = kernel.run(code)
    assert reply["status"] == "ok", text_of(outputs)
    return outputs


def _last_prompt(trace) -> dict:
    """The last program's trace record: its ``messages`` are exactly what the model was given."""
    return json.loads(trace.read_text().splitlines()[-1])


def test_a_notebook_sends_its_last_cells_and_error_to_the_model_only_when_asked(tiny_model_dir, tmp_path):
    # The tiny model's weights are random: what it writes is junk (most likely no code at all, which
    # %%pal reports in one line). What is checked is what it was given and what the user is shown.
    trace = tmp_path / "trace.jsonl"
    kernel = UserKernel()
    try:
        _run_ok(kernel, f"%load_ext pal_jupyter\n%config PalMagics.model = {str(tiny_model_dir)!r}\n"
                        '%config PalMagics.device = "cpu"\n%config PalMagics.dtype = "float32"\n'
                        "%config PalMagics.max_new_tokens = 8\n%config PalMagics.samples = 1\n"
                        f"%config PalMagics.max_attempts = 1\n%config PalMagics.trace = {str(trace)!r}")
        _run_ok(kernel, "speed = 60")
        reply, outputs = kernel.run("hours = 2.5\nprint(sped * hours)")
        assert reply["status"] == "error" and reply["ename"] == "NameError", (reply, outputs)

        _, outputs = kernel.run("%%pal --context 2\nFix the error above")
        sent = _last_prompt(trace)
        asked = sent["messages"][-1]["content"]
        assert asked.startswith(prompts.CONTEXT_INTRO) and asked.endswith(f"{prompts.CONTEXT_QUESTION}\nFix the error above")
        assert "In [2]:\n```python\nspeed = 60\n```" in asked and "print(sped * hours)" in asked
        assert "The last error (In [3], line 2: print(sped * hours)):\nNameError: name 'sped' is not defined" in asked
        assert "load_ext" not in asked  # two cells asked for, two sent
        note = sent["context"]["note"]
        assert note.startswith("Context sent: the last 2 cells (3 lines) and the last error (NameError), ")
        assert note.endswith(" tokens (the model's tokenizer)")  # transformers: counted, not estimated
        shown = [o["data"] for o in outputs if o["output_type"] == "update_display_data"][-1]
        assert note in shown["text/plain"] and "pal-context" in shown["text/html"]
        assert "speed = 60" in shown["text/html"]  # the text sent, folded under the note

        _, outputs = kernel.run("%%pal\nFix the error above")
        plain = _last_prompt(trace)
        assert plain["context"] is None and plain["messages"][-1]["content"] == "Fix the error above"
        assert not any("sped" in m["content"] or "speed = 60" in m["content"] for m in plain["messages"])
        assert "Context" not in text_of(outputs)
        assert plain["prompt_tokens"] < sent["prompt_tokens"]  # the model read fewer tokens without it
    finally:
        kernel.close()
