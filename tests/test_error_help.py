"""Help where the error is, AI off or limited by the teacher's policy (issue 24).

The step pointer on real child kernels; the notebook flow in a real user kernel with a scripted
model (the same set-up as ``test_tutor.py``), a real comm for the extension's side.
"""

from types import SimpleNamespace

import pytest
from IPython.core.interactiveshell import InteractiveShell
from kernel_driver import UserKernel, text_of
from test_tutor import PROGRAM, SETUP, log_events, start_kernel

from pal_jupyter import KernelPool, ScriptedBackend
from pal_jupyter.classroom import tutor
from pal_jupyter.classroom.steps import Step, first_unmatched_step, step_to_recheck
from pal_jupyter.classroom.cell_error import located_error
from pal_jupyter.classroom.error_hints import typo_hint
from pal_jupyter.engine.options import OPTIONS
from pal_jupyter.notebook.magics import PalMagics

PENCILS = "total = 12 * 24\ngiven = 3 * 85\nprint(total - given)"  # 12 boxes of 24 pencils, 3 each to 85 students


@pytest.fixture(scope="module")
def pool():
    with KernelPool() as pool:
        yield pool


def test_the_first_step_with_a_number_no_correct_step_has_is_the_one_to_recheck():
    reference = [Step(1, [288.0]), Step(2, [255.0]), Step(3, [33.0])]
    assert first_unmatched_step([Step(1, [288.0]), Step(2, [174.0]), Step(3, [114.0])], reference).line == 2
    assert first_unmatched_step([Step(1, [288.0]), Step(2, [255.0])], reference) is None


def test_the_pointer_names_a_mistyped_number_without_giving_the_answer(pool):
    student = "pencils = 12 * 24\ngiven = 3 * 58\nprint(pencils - given)"
    check = step_to_recheck(student, PENCILS, pool)
    assert check is not None and check.step.line == 2 and check.code_line == "given = 3 * 58"
    hint = check.hint()
    assert "`given = 3 * 58`: it gives 174" in hint and "33" not in hint
    # Right steps, wrong thing printed: no line to blame, and it says so.
    printed_wrong = step_to_recheck("total = 12 * 24\ngiven = 3 * 85\nleft = total - given\nprint(given)", PENCILS, pool)
    assert printed_wrong.step is None and "steps are right" in printed_wrong.hint()
    # A bare expression (a notebook's last line) is a step too, evaluated once.
    assert step_to_recheck("n = [0]\nn.append(1)\nlen(n) * 87", PENCILS, pool).step.line == 3


def test_a_failing_cell_is_offered_help_on_the_comm_and_explained_by_its_id(tmp_path):
    kernel = start_kernel(tmp_path, [])
    try:
        kernel.answer_hello()
        reply, outputs = kernel.run("x = 1\nx / 0", cell_id="cell-a")
        assert reply["status"] == "error"
        offers = [c["data"] for c in kernel.comm_messages if c.get("data", {}).get("action") == "offer_help"]
        assert offers == [{"action": "offer_help", "cell_id": "cell-a", "ename": "ZeroDivisionError",
                           "actions": [{"label": "Explain this error", "code": "%pal_explain --cell cell-a",
                                        "title": "Explain the error in plain words (nothing is run again)"}]}]
        kernel.run("print('another cell')", cell_id="cell-b")
        kernel.run("%pal_explain --cell cell-a", cell_id="cell-c")  # a pal cell: offered nothing, remembered not
        reply, outputs = kernel.run("%pal_explain --cell cell-a")
        text = text_of(outputs)
        assert "line 2: x / 0" in text and "ZeroDivisionError" in text and "cannot divide by zero" in text
        reply, outputs = kernel.run("%pal_explain")
        assert "no error to explain: the last cell you ran worked" in text_of(outputs)
        kernel.run("x / 1", cell_id="cell-a")  # fixed: its error is gone
        reply, outputs = kernel.run("%pal_explain --cell cell-a")
        assert "No error is recorded for that cell" in text_of(outputs)
        assert len([c for c in kernel.comm_messages if c.get("data", {}).get("action") == "offer_help"]) == 1
    finally:
        kernel.close()


def test_without_an_extension_the_tip_shows_once_and_only_when_the_policy_asks(tmp_path):
    kernel = start_kernel(tmp_path, ['c.TeacherPolicy.error_help = "tip"'])
    try:
        first = text_of(kernel.run("undefined_name + 1")[1])
        second = text_of(kernel.run("1 / 0")[1])
        assert "Stuck on this error? Run %pal_explain" in first and "Stuck on" not in second
    finally:
        kernel.close()
    kernel = start_kernel(tmp_path / "default", [])
    try:
        assert "Stuck on" not in text_of(kernel.run("undefined_name + 1")[1])
    finally:
        kernel.close()


def test_a_clean_cell_with_a_wrong_number_gets_the_step_to_recheck_and_the_next_hint(tmp_path):
    kernel = start_kernel(tmp_path, ['c.TeacherPolicy.mode = "tutor"', "c.TeacherPolicy.allow_solutions = False"])
    try:
        reply, outputs = kernel.run("%%pal\nNatalia sold 48 clips in April and half as many in May. How many in total?")
        assert reply["status"] == "ok", text_of(outputs)
        kernel.run("april = 48")
        kernel.run("may = april * 2\nprint(april + may)")  # 144, not 72
        reply, outputs = kernel.run("%pal_explain")
        text = text_of(outputs)
        assert "Your program runs, but the answer is not right" in text
        assert "line 1: may = april * 2" in text and "Re-check `may = april * 2`: it gives 96" in text
        assert "The next hint: run %pal_hint (1 left)" in text and "72" not in text
        assert log_events(tmp_path)[-1]["event"] == "check"
    finally:
        kernel.close()


def test_ai_off_answers_with_the_teachers_message_and_starts_nothing(tmp_path):
    kernel = start_kernel(tmp_path, ['c.TeacherPolicy.mode = "off"', 'c.TeacherPolicy.off_message = "Exam: no AI."',
                                     'c.TeacherPolicy.locked = ["mode"]'])
    try:
        for cell in ("%%pal\nWhat is 6 times 7?", "%pal_hint", "%pal_explain"):
            reply, outputs = kernel.run(cell)
            assert reply["status"] == "ok" and text_of(outputs).strip() == "Exam: no AI.", text_of(outputs)
        assert kernel.child_kernels() == []  # no warm kernel, no model
        reply, outputs = kernel.run("%pal_mode assist")
        assert "locked by your teacher's policy" in text_of(outputs)
    finally:
        kernel.close()


def test_a_notebook_can_switch_ai_off_unless_the_mode_is_locked(tmp_path):
    kernel = start_kernel(tmp_path, [])
    try:
        assert "off (changed in the notebook)" in text_of(kernel.run("%pal_mode off")[1])
        assert "turned off" in text_of(kernel.run("%%pal\nWhat is 6 times 7?")[1])
        assert "assist" in text_of(kernel.run("%pal_mode assist")[1])
    finally:
        kernel.close()


def test_the_hourly_limit_counts_requests_from_the_class_log(tmp_path):
    kernel = start_kernel(tmp_path, ["c.TeacherPolicy.max_requests_per_hour = 2"])
    try:
        for _ in range(2):
            reply, outputs = kernel.run("%%pal -q --no-insert\nNatalia sold 48 clips in April and half as many in May.")
            assert "72" in text_of(outputs), text_of(outputs)
        reply, outputs = kernel.run("%%pal -q\nAnd in June?")
        assert "used the 2 AI requests per hour" in text_of(outputs)
        assert [e["event"] for e in log_events(tmp_path)] == ["question", "question"]
    finally:
        kernel.close()


def test_a_misspelt_name_is_said_plainly_with_the_name_meant():
    error = located_error("NameError", "name 'totl' is not defined", 2, "print(totl)")
    assert "spelling slip for `total`" in typo_hint("total = 3\nprint(totl)", error)
    assert "spelling slip for `total`" in typo_hint("print(totl)", error, known=["total"])  # an earlier cell's name
    assert typo_hint("print(zzz)", located_error("NameError", "name 'zzz' is not defined"), known=["total"]) is None
    assert typo_hint("1 / 0", located_error("ZeroDivisionError", "division by zero")) is None


def test_explain_names_a_name_from_an_earlier_cell(tmp_path):
    kernel = start_kernel(tmp_path, [])
    try:
        kernel.run("pencils_left = 33")
        kernel.run("print(pencils_lft)")
        text = text_of(kernel.run("%pal_explain")[1])
        assert "line 1: print(pencils_lft)" in text and "spelling slip for `pencils_left`" in text, text
    finally:
        kernel.close()


def test_tutor_mode_explains_a_common_error_in_plain_words_without_the_model(tmp_path):
    kernel = start_kernel(tmp_path, ['c.TeacherPolicy.mode = "tutor"'])
    try:
        kernel.run("divisor = 0\nprint(12 / divisor)")
        text = text_of(kernel.run("%pal_explain")[1])
        assert "A hint: Look at line 2: `print(12 / divisor)`. This line divides by a value that is 0" in text, text
        assert "cannot divide by zero" not in text  # the scripted model's words: it was not asked
    finally:
        kernel.close()


def test_an_error_raised_before_the_extension_loaded_is_still_explained(tmp_path):
    kernel = UserKernel(env={"PAL_JUPYTER_LOG_DIR": str(tmp_path / "logs"), "IPYTHONDIR": str(tmp_path / "ipython")})
    try:
        kernel.run("divisor = 0\nprint(12 / divisor)")
        reply, outputs = kernel.run(SETUP.format(program=PROGRAM))  # %load_ext runs in this cell
        assert reply["status"] == "ok", text_of(outputs)
        text = text_of(kernel.run("%pal_explain")[1])
        assert "line 2: print(12 / divisor)" in text and "ZeroDivisionError" in text and "cannot divide by zero" in text
    finally:
        kernel.close()


def test_one_error_is_one_record_for_the_hints_the_context_and_pal_explain(tmp_path, monkeypatch, capsys):
    """A real in-process IPython shell: the error the watcher records from the cell is the very
    record the context sends, %pal_explain explains and the hints read."""
    monkeypatch.setenv("PAL_JUPYTER_LOG_DIR", str(tmp_path))
    monkeypatch.delattr("sys.last_value", raising=False)  # no error from before the watch
    shell = InteractiveShell.instance()
    magics = PalMagics(shell)
    runtime = magics.runtime
    runtime.cells.register(shell)
    monkeypatch.setattr(runtime, "backend", lambda settings: ScriptedBackend([]))  # no model is asked
    hinted = []  # the records the hints are given
    monkeypatch.setattr(tutor, "typo_hint", lambda code, error, known=(): hinted.append(error) or typo_hint(code, error, known))
    try:
        shell.run_cell("speed = 60", store_history=True)
        shell.run_cell("hours = 2\nprint(sped * hours)", store_history=True)
        error = runtime.cells.last_error
        ran = shell.execution_count - 1
        assert error is runtime.cells.last_run.error and error.name == "NameError" and error.cell == ran
        assert error.failed_at == (ran, 2, "print(sped * hours)") and error.source == "hours = 2\nprint(sped * hours)"
        shell.run_cell("%%pal --context 2\nQ", store_history=True)  # a pal cell's own error is not the notebook's
        assert runtime.cells.last_error is error

        args = SimpleNamespace(**{**{name: None for name in OPTIONS}, "use": [], "context": 2})
        context = runtime.resolve(args, "Fix the error above").context
        assert context.error is error
        assert context.prompt_text().endswith(
            f"The last error (In [{ran}], line 2: print(sped * hours)):\nNameError: name 'sped' is not defined")

        magics.pal_explain("")
        shown = capsys.readouterr().out
        assert hinted == [error]  # %pal_explain gave the hints the watcher's record
        assert "line 2: print(sped * hours)\nNameError: name 'sped' is not defined" in shown
        assert "spelling slip for `speed`" in shown
    finally:
        runtime.close()
