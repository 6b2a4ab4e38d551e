"""The %%pal magic in a real IPython kernel, driven over jupyter_client like a frontend would.

A scripted model (registered in the kernel) supplies exact replies; everything else is real:
the user's kernel, the child kernels, the widget display, the payload that inserts a cell.
"""

import pytest
from kernel_driver import UserKernel, text_of
from waiting import wait_until

SETUP = """
import pandas as pd
from pal_jupyter import ScriptedBackend, register_model

def fenced(code, explanation=""):
    return explanation + "\\n```python\\n" + code + "\\n```"

REPLIES = {
    "total": [fenced("print(sales['amount'].sum() * rate)")],
    "typo": [fenced("speed = 60\\nprint(sped * 2.5)"), fenced("speed = 60\\nprint(speed * 2.5)", "Explanation: sped is a typo.")],
    "crash": [fenced("import os\\nos._exit(1)")] * 3,
    "never": [fenced("1/0")] * 5,
    "disagree": [fenced("print(150)"), fenced("x = 60 * 2.5\\nprint(x)"), fenced("print(149)"),
                 fenced("print(1/0)"), fenced("print(148)")],
}
_state = {}

WORDS = "Driving at 60 mph for 2.5 hours covers 60 * 2.5 = 150 miles.\\nAnswer: 150"

def reply(messages):
    if messages[-1] == {"role": "assistant", "content": "Step by step:\\n"}:  # the answer in words
        return WORDS
    if messages[-1]["content"].startswith("Now write a short Python program that follows your steps"):
        return fenced("hours = 2.5\\nprint(60 * hours)")
    question = messages[-1]["content"] if len(messages) > 2 else messages[-1]["content"].split("Question: ")[1]
    key = next(k for k in REPLIES if k in question)
    index = _state.get(key, 0)
    _state[key] = index + 1
    return REPLIES[key][index % len(REPLIES[key])]

register_model("scripted", ScriptedBackend(reply))
sales = pd.DataFrame({"amount": [1, 2, 3]})
rate = 2
%load_ext pal_jupyter
%config PalMagics.model = "scripted"
%config PalMagics.trace = "off"
%config PalMagics.method = "vote"
%config PalMagics.samples = 1
"""


@pytest.fixture(scope="module")
def kernel():
    kernel = UserKernel()
    reply, outputs = kernel.run(SETUP)
    assert reply["status"] == "ok", text_of(outputs)
    yield kernel
    kernel.close()


def test_pal_cell_shows_widget_with_fallbacks_and_inserts_the_program(kernel):
    reply, outputs = kernel.run("%%pal\nWhat is the total of sales times rate?")
    assert reply["status"] == "ok"
    displays = [o for o in outputs if o["output_type"] == "display_data"]  # a no-sandbox notice may come first
    assert any("application/vnd.jupyter.widget-view+json" in o["data"] for o in displays)
    final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]
    assert "Answer: 12" in final["text/plain"] and "Answer: 12" in final["text/html"]
    payload = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert len(payload) == 1 and payload[0]["replace"] is False
    assert payload[0]["text"].startswith("# %%pal: What is the total of sales times rate?\n# attempt 1 of 1")
    assert "print(sales['amount'].sum() * rate)" in payload[0]["text"]


def test_repair_is_shown_with_the_explanation(kernel):
    reply, outputs = kernel.run("%%pal\nA typo question")
    final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]
    assert "attempt 1: NameError" in final["text/plain"] and "explanation: sped is a typo." in final["text/plain"]
    assert "Answer: 150.0" in final["text/plain"]
    assert "What went wrong" in final["text/html"]


def test_failed_program_is_inserted_with_a_warning(kernel):
    reply, outputs = kernel.run("%%pal -n 2\nThis never works")
    assert reply["status"] == "ok"
    text = [p for p in reply["payload"] if p["source"] == "set_next_input"][0]["text"]
    assert "# attempt 2 of 2" in text and "WARNING: this program did not work (ZeroDivisionError)" in text


def test_child_kernel_death_is_reported_and_the_user_kernel_survives(kernel):
    reply, outputs = kernel.run("%%pal -n 1 --no-insert\nA crash question")
    final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]["text/plain"]
    assert "KernelDied" in final
    assert not [p for p in reply["payload"] if p["source"] == "set_next_input"]
    reply, outputs = kernel.run("print(sales.shape, rate)")
    assert "(3, 1) 2" in text_of(outputs)


@pytest.mark.parametrize(
    "cell, message",
    [
        ("%%pal\n   \n", "cell is empty"),
        ("%%pal --use nothere\nQ", "do not exist in your notebook: nothere"),
        ("import threading\nlock = threading.Lock()\n%pal --use lock what is in lock", "cannot be copied"),
        ("%%pal --model /no/such/model\nQ", "No model at /no/such/model"),
        ("%%pal --bogus\nQ", "unrecognized arguments: --bogus"),
        ("%%pal --method vote --samples 0\nQ", "samples 0 leaves the vote method no program to write"),
        ("%%pal --samples -1\nQ", "samples must be a whole number from 0 to 16 (method vote: programs sampled per attempt"),
        ("%%pal --samples abc\nQ", "samples must be a whole number from 0 to 16"),
        ("%%pal --samples 1000\nQ", "samples must be a whole number from 0 to 16"),
        ("%%pal --samples 3 --temperature 0\nQ", "temperature 0 (greedy decoding) would write the same program 3 times"),
        ("%%pal -t -5\nQ", "timeout must be a number above 0 and at most 3600 (seconds a program may run), not '-5'"),
        ("%%pal --timeout 0\nQ", "timeout must be a number above 0"),
        ("%%pal -n 0\nQ", "max_attempts must be a whole number from 1 to 10"),
        ("%%pal --read /no/such/folder\nQ", "Readable path '/no/such/folder' refused: it does not exist."),
        ("%%pal --read /\nQ", "Readable path '/' refused: / is the whole filesystem"),
        ("%%pal --tutor --check\nprint(1)", "--check checks your own code in the cell; it does not go with --tutor"),
        ("%%pal --tutor --assist\nQ", "Choose one of --tutor and --assist."),
        ("%config PalMagics.samples = -1", "samples must be a whole number from 0 to 16"),
        ("%config PalMagics.memory_gib = 1", "memory_gib must be a number from 1.5 to 4096"),
    ],
)
def test_bad_input_gives_a_short_message_and_keeps_the_kernel(kernel, cell, message):
    reply, outputs = kernel.run(cell)
    text = text_of(outputs)
    assert message in text, text
    assert "Traceback" not in text
    assert not [p for p in reply.get("payload", []) if p["source"] == "set_next_input"]
    reply, outputs = kernel.run("print(rate)")
    assert reply["status"] == "ok" and "2" in text_of(outputs)


def test_line_form_quiet_prints_a_summary_without_widget(kernel):
    # IPython reads a trailing "?" on a line as a help request, so the line form leaves it off.
    reply, outputs = kernel.run("%pal --quiet --no-insert What is the total of sales times rate")
    assert reply["status"] == "ok"
    assert not [o for o in outputs if o["output_type"] == "display_data"]
    assert "Answer: 12" in text_of(outputs)


def run_ok(kernel, code):
    reply, outputs = kernel.run(code)
    assert reply["status"] == "ok", text_of(outputs)
    return outputs


def test_pal_config_lists_settings(kernel):
    run_ok(kernel, "%config PalMagics.max_attempts = 4")
    reply, outputs = kernel.run("%pal_config")
    text = text_of(outputs)
    assert "PalMagics.max_attempts    = 4" in text and "PalMagics.model           = 'scripted'" in text
    reply, outputs = kernel.run("%config PalMagics")
    assert "max_attempts" in text_of(outputs)


def test_options_on_the_kernel_command_line_are_read_as_their_types():
    """``--PalMagics.seed=0`` in a kernel spec's argv arrives as the string "0": it is read as the
    trait reads it (an int), not dropped as a wrong type."""
    kernel = UserKernel(arguments=["--PalMagics.seed=0", "--PalMagics.max_attempts=4", "--PalMagics.timeout=12.5",
                                   "--PalMagics.trace=off"])
    try:
        run_ok(kernel, "%load_ext pal_jupyter")
        text = text_of(run_ok(kernel, "%pal_config"))
        assert "PalMagics.seed            = 0" in text and "PalMagics.max_attempts    = 4" in text, text
        assert "PalMagics.timeout         = 12.5" in text, text
    finally:
        kernel.close()


def test_unload_releases_child_kernels(kernel):
    assert kernel.child_kernels(), "a warm child kernel is kept after %load_ext"
    run_ok(kernel, "%unload_ext pal_jupyter")
    wait_until(lambda: kernel.child_kernels() == [], timeout=5, what="the child kernels to be released")


def test_freeze_leaves_static_html_only(kernel):
    run_ok(kernel, "%load_ext pal_jupyter")  # a no-op when loaded; reloads after the unload test
    run_ok(kernel, '%config PalMagics.freeze = True\n%config PalMagics.model = "scripted"')
    reply, outputs = kernel.run("%%pal --no-insert\nWhat is the total of sales times rate?")
    final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]
    assert set(final) == {"text/plain", "text/html"} and "Answer: 12" in final["text/html"], [(o["output_type"], list(o.get("data", {})), o.get("text")) for o in outputs]
    run_ok(kernel, "%config PalMagics.freeze = False")


def test_run_without_the_extension_runs_the_program_in_the_users_kernel(kernel):
    run_ok(kernel, "%load_ext pal_jupyter")
    run_ok(kernel, '%config PalMagics.model = "scripted"\n%config PalMagics.trace = "off"')
    reply, outputs = kernel.run("%%pal --run --quiet\nWhat is the total of sales times rate?")
    assert reply["status"] == "ok"
    printed = "".join(o["text"] for o in outputs if o["output_type"] == "stream")
    assert printed.rstrip().endswith("* rate)\n12")  # the summary, then the program's own output here
    payload = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert len(payload) == 1  # and the cell is still inserted below


def test_several_programs_vote_and_the_widget_says_they_disagree(kernel):
    reply, outputs = kernel.run("%%pal --samples 5 --max-programs 5\nA disagree question: how far?")
    assert reply["status"] == "ok"
    final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]
    text, page = final["text/plain"], final["text/html"]
    assert "Answer: 150" in text
    assert "I am not sure: the programs disagree (2 say 150, 1 says 149, 1 says 148 and 1 gave no answer)" in text
    assert "attempt 1, program 4 of 5: ZeroDivisionError" in text
    assert "pal-tally" in page and "2 of 5" in page and "data-confidence='low'" in page
    inserted = [p for p in reply["payload"] if p["source"] == "set_next_input"][0]["text"]
    assert "# attempt 1 of 1, program 1 of 5" in inserted and "# 2 of 5 programs agree on 150" in inserted
    assert "NOT SURE: the programs disagreed" in inserted and inserted.rstrip().endswith("print(150)")


def test_a_weak_vote_writes_more_programs_and_the_widget_says_why(kernel):
    # The scripted replies repeat every 5: 2 of 5 agree on 150, so 5 more are written, then the cap.
    reply, outputs = kernel.run("%%pal --samples 5 --max-programs 10 --second-opinion off\n"
                                "A disagree question, again: how far?")
    assert reply["status"] == "ok"
    final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]
    text, page = final["text/plain"], final["text/html"]
    assert "Only 2 of 5 programs agreed (on 150): 5 more were written." in text
    assert "attempt 1, program 10 of 10:" in text and "I am not sure: the programs disagree (4 say 150" in text
    assert "4 of 10" in page and "Only 2 of 5 programs agreed (on 150): 5 more were written." in page


def test_a_weak_vote_is_worked_out_in_words_and_the_widget_shows_the_steps(kernel):
    # 2 of 5 agree on 150: the words answer (150) and the program that follows it (150) join the vote.
    reply, outputs = kernel.run("%%pal --samples 5 --max-programs 10\nA disagree question, in words: how far?")
    assert reply["status"] == "ok"
    final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]
    text, page = final["text/plain"], final["text/html"]
    assert ("Only 2 of 5 programs agreed (on 150): the question was worked out in words, and one more program "
            "followed those steps.") in text
    assert "Worked out in words, the answer is also 150." in text and "attempt 1, program 6 of 6: answer 150.0" in text
    assert ("I am not sure: the programs disagree (3 say 150, 1 says 149, 1 says 148 and 1 gave no answer). "
            "Worked out in words, the answer is also 150.") in text
    assert "Worked out in words</summary>" in page and "60 * 2.5 = 150 miles" in page
    assert "data-confidence='low'" in page and "programs 1, 2, 6" in page
    inserted = [p for p in reply["payload"] if p["source"] == "set_next_input"][0]["text"]
    assert "# 3 of 6 programs agree on 150\n# Worked out in words, the answer is also 150.\n" in inserted


def test_a_cells_timeout_keeps_the_warm_pool(kernel):
    run_ok(kernel, "%load_ext pal_jupyter")
    run_ok(kernel, '%config PalMagics.model = "scripted"\n%config PalMagics.method = "vote"\n%config PalMagics.samples = 1')
    pool_id = "print(id(get_ipython()._pal_magics.runtime._pool))"
    before = text_of(run_ok(kernel, pool_id)).strip()
    outputs = run_ok(kernel, "%%pal -t 5 --quiet --no-insert\nWhat is the total of sales times rate?")
    assert "Answer: 12" in text_of(outputs)
    assert text_of(run_ok(kernel, pool_id)).strip() == before


def test_the_line_form_does_not_expand_variables_in_the_question(kernel):
    run_ok(kernel, "%pal --quiet --no-insert What is the total of sales times {rate} and $rate")
    prompt = text_of(run_ok(kernel, "from pal_jupyter.backends import registry\n"
                                    "print(registry._REGISTERED['scripted'].calls[-1][-1]['content'])"))
    assert "{rate} and $rate" in prompt


def test_an_extension_loaded_by_the_profile_does_not_multiply_child_kernels(tmp_path):
    """A teacher's system-wide config that loads the extension: its child kernels must not load it too."""
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text("c.InteractiveShellApp.extensions = ['pal_jupyter']\n")
    user = UserKernel(env={"IPYTHONDIR": str(tmp_path / "ipython")})
    try:
        outputs = run_ok(user, "print('PalMagics' in get_ipython().magics_manager.registry)")
        assert text_of(outputs).strip() == "True"
        import time

        time.sleep(8)  # before the fix: 6 kernels after 3 s, 10 after 6 s
        assert len(user.child_kernels()) == 1
    finally:
        user.close()


def test_without_a_sandbox_the_first_cell_says_so_once(tmp_path):
    # No bwrap on PATH: isolation "auto" falls back to plain processes, and the notebook must say so,
    # once per session (not in every cell), and not at all when "process" is the user's own choice.
    kernel = UserKernel(env={"PATH": str(tmp_path)})
    try:
        reply, outputs = kernel.run(SETUP)
        assert reply["status"] == "ok", text_of(outputs)
        notices = []
        for options in ("--isolation process", "", ""):
            reply, outputs = kernel.run(f"%%pal --no-insert {options}\nWhat is the total of sales times rate?")
            assert reply["status"] == "ok", text_of(outputs)
            assert "Answer: 12" in text_of(outputs)
            notices.append([o["data"] for o in outputs
                            if o["output_type"] == "display_data" and "pal-notice" in o["data"].get("text/html", "")])
    finally:
        kernel.close()
    assert [len(shown) for shown in notices] == [0, 1, 0]
    text = notices[1][0]["text/plain"]
    assert text.startswith("Programs run as plain processes (no sandbox) because bubblewrap (bwrap) is not installed")
    assert "sudo apt-get install bubblewrap" in text and "\n" not in text
