"""The pal-jupyter command, run as users run it: a subprocess."""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from model_server import ModelServer
from pal_jupyter.evaluation.runner import Config, format_summaries, run_benchmark, summarize
from pal_jupyter import KernelPool, ScriptedBackend
from pal_jupyter.backends.huggingface import GPU_DEVICE_FILES
from pal_jupyter import prompts
from pal_jupyter.engine import isolation
from pal_jupyter.kernels import sandbox


def run_cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "pal_jupyter.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def marked_processes(mark):
    """Processes (still) running with PAL_TEST_MARK=mark in their environment."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("PAL_TEST_MARK") == mark:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_empty_question_is_a_clear_error_without_traceback(tmp_path):
    result = run_cli("ask", "--no-trace", "  ")
    assert result.returncode == 2
    assert "question is empty" in result.stderr and "Traceback" not in result.stderr


def test_unreadable_model_path_is_a_clear_error_and_leaves_no_kernel(tmp_path):
    mark = f"cli-{os.getpid()}-missing-model"
    result = run_cli("ask", "--no-trace", "--model", str(tmp_path / "missing-model"), "What is 2+2?",
                     env={**os.environ, "PAL_TEST_MARK": mark})
    assert result.returncode == 2
    assert "No model at" in result.stderr and "Traceback" not in result.stderr
    assert marked_processes(mark) == []  # the warm kernel started at launch was shut down


def test_tiny_model_runs_end_to_end_and_writes_a_trace(tiny_model_dir, tmp_path):
    # Random weights: greedy decoding on this tiny model ends every reply at once. What matters is
    # that every stage runs, the failure is said plainly, and every program is traced.
    trace = tmp_path / "trace.jsonl"
    result = run_cli("ask", "--model", str(tiny_model_dir), "--dtype", "float32", "--max-new-tokens", "8",
                     "--max-attempts", "2", "--method", "vote", "--samples", "1", "--trace", str(trace), "What is 2+2?")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == (
        "pal-jupyter: The model wrote no Python code in 2 program(s); last reply: The model returned an empty "
        "reply. Try rephrasing the question or a larger model.")
    assert [json.loads(line)["error_type"] for line in trace.read_text().splitlines()] == ["NoCode", "NoCode"]


def test_a_question_that_is_not_utf8_is_answered_and_traced(tiny_model_dir, tmp_path):
    trace = tmp_path / "trace.jsonl"
    command = [sys.executable, "-m", "pal_jupyter.cli", "ask", "--model", str(tiny_model_dir), "--dtype", "float32",
               "--max-new-tokens", "8", "--max-attempts", "1", "--method", "vote", "--samples", "1", "--trace", str(trace),
               b"caf\xe9 costs 2 euros; 3 cafes?"]
    result = subprocess.run(command, capture_output=True, timeout=300)
    assert b"Traceback" not in result.stderr and result.returncode == 2, result.stderr
    record = json.loads(trace.read_text(encoding="utf-8"))
    assert record["question"] == "caf\ufffd costs 2 euros; 3 cafes?"


@pytest.mark.parametrize("args, message", [
    (["ask", "--max-attempts", "0", "q"], "max_attempts must be a whole number from 1 to 10"),
    (["ask", "--timeout", "0", "q"], "timeout must be a number above 0"),
    (["ask", "--memory-gib", "1", "q"], "memory_gib must be a number from 1.5 to 4096"),
    (["ask", "--dtype", "float8", "q"], "dtype must be one of auto, float32, bfloat16, float16"),
    (["ask", "--read", "/no/such/folder", "q"], "Readable path '/no/such/folder' refused: it does not exist."),
    (["ask", "--read", "~", "q"], "Readable path '~' refused: ~ (which leads to"),
    (["ask", "--context", "2", "q"], "--context is for %%pal in a notebook, where it sets how many of the notebook's last code cells"),
    (["bench", "--data", "/no/such/file.jsonl"], "No data file at /no/such/file.jsonl."),
    (["bench", "--data", "/"], "/ is a folder, not a JSONL data file."),
    (["bench", "--data", "{bad_json}"], "Line 2 of {bad_json} is not JSON"),
    (["bench", "--data", "{latin1}"], "is not UTF-8 text"),
    (["bench", "--data", "{no_question}"], "Line 1 of {no_question} has no question"),
    (["bench", "--data", "{bad_json}", "--samples", "1,-1"], "samples must be a whole number from 0 to 16"),
    (["leti", "/no/such/trace.jsonl"], "No trace file at /no/such/trace.jsonl."),
    (["report", "{tmp}", "--out", "/proc/no/report.html"], "Could not write the report to /proc/no/report.html"),
    (["prepare", "/no/such/week3.jsonl"], "No assignment at /no/such/week3.jsonl"),
    (["prepare", "{no_question}"], "line 1: each line needs a 'question' and its 'answer'"),
    (["prepare", "{key}", "--out", "/proc/no/week3.pal-pack.json"],
     "Could not write the pack to /proc/no/week3.pal-pack.json"),
])
def test_usage_problems_are_one_line_and_exit_2_before_any_model_loads(tmp_path, args, message):
    files = {"bad_json": tmp_path / "bad.jsonl", "latin1": tmp_path / "latin1.jsonl",
             "no_question": tmp_path / "noq.jsonl", "key": tmp_path / "key.jsonl", "tmp": tmp_path}
    files["key"].write_text('{"question": "What is 2 + 2?", "answer": "#### 4"}\n')
    files["bad_json"].write_text('{"question": "q", "answer": "#### 1"}\n{"question": oops\n')
    files["latin1"].write_bytes('{"question": "caf\xe9?", "answer": "#### 1"}\n'.encode("latin-1"))
    files["no_question"].write_text('{"answer": "#### 1"}\n')
    args = [a.format(**files) for a in args]
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    assert message.format(**files) in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("WARNING")]
    assert len(lines) == 1 and "Traceback" not in result.stderr and "Loading model" not in result.stderr, lines


def test_an_empty_question_starts_no_kernel():
    mark = f"cli-{os.getpid()}-empty"
    result = run_cli("ask", "--no-trace", " ", env={**os.environ, "PAL_TEST_MARK": mark})
    assert result.returncode == 2 and "question is empty" in result.stderr
    assert "Loading model" not in result.stderr and marked_processes(mark) == []


def test_an_unexpected_error_is_one_line_that_names_the_saved_traceback(monkeypatch, capsys):
    from pal_jupyter.cli import commands as cli

    def broken(args):
        raise RuntimeError("an internal slip")

    monkeypatch.setattr(cli, "cmd_models", broken)
    assert cli.main(["models"]) == 70
    line = capsys.readouterr().err.strip()
    assert line.startswith("pal-jupyter: pal-jupyter hit an unexpected error (RuntimeError: an internal slip); "
                           "the full traceback is in ") and "\n" not in line
    saved = line.split("the full traceback is in ")[1].split(". Please report it.")[0]
    assert "raise RuntimeError" in open(saved).read()


def test_models_lists_both_presets():
    result = run_cli("models")
    assert result.returncode == 0
    assert "qwen2.5-coder-1.5b [default]" in result.stdout and "qwen2.5-coder-0.5b [lite]" in result.stdout


DOCTOR_LINES = ["pal-jupyter", "python", "platform", "cpu flags", "model", "backend", "device", "dtype", "isolation",
                "bubblewrap", "user namespaces", "cgroup pids", "jupyter runtime dir", "summary"]


def doctor(env=None):
    """``pal-jupyter doctor``: its exit status and its lines as {name: value}, in order."""
    result = run_cli("doctor", env=env, timeout=60)
    assert "Traceback" not in result.stderr and result.returncode in (0, 1), result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    return result.returncode, lines


def test_doctor_reports_the_machine_one_line_each_without_loading_anything():
    code, lines = doctor()
    assert list(lines) == DOCTOR_LINES
    assert lines["python"].startswith(".".join(map(str, sys.version_info[:3])))
    assert lines["cpu flags"] == "unknown" or lines["cpu flags"].startswith("avx2 ")
    assert lines["backend"].split()[0] in ("llamacpp", "torch")
    assert code == (1 if "cannot run as it is" in lines["summary"] else 0)  # 1 only for a problem
    if sandbox.bubblewrap_problem() is None:
        assert lines["isolation"] == "sandbox (auto: bubblewrap works here)" and lines["user namespaces"] == "ok"
        version = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
        assert lines["bubblewrap"].endswith(f"({version})")


def test_doctor_exits_1_when_the_model_it_would_use_is_missing(tmp_path):
    code, lines = doctor({**os.environ, "PAL_JUPYTER_MODEL": str(tmp_path / "gone")})
    assert code == 1 and lines["model"] == f"{tmp_path / 'gone'}: no such file or folder"
    assert lines["summary"].startswith("1 problem (model)") and lines["summary"].endswith("cannot run as it is")


def test_doctor_does_not_import_torch_without_a_gpu_driver():
    # Importing torch takes seconds; without a GPU driver it is not needed to know the device is the CPU.
    if any(os.path.exists(p) for p in GPU_DEVICE_FILES):
        pytest.skip("a GPU driver is present: torch is what says whether the GPU is usable")
    code = ("import sys; from pal_jupyter.cli.commands import main; main(['doctor']); "
            "print('torch imported:', 'torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines()[-1] == "torch imported: False", result.stdout + result.stderr


def without_bubblewrap(tmp_path):
    """An environment whose PATH holds no bwrap (an empty folder): isolation auto must fall back."""
    return {**os.environ, "PATH": str(tmp_path)}


def test_without_bubblewrap_doctor_warns_and_still_exits_0_for_the_sandbox(tmp_path):
    code, lines = doctor(without_bubblewrap(tmp_path))
    assert lines["bubblewrap"] == "not found on PATH"
    assert lines["isolation"].startswith("process (auto): programs run as plain processes (no sandbox) because "
                                         "bubblewrap (bwrap) is not installed; to get the sandbox, install bubblewrap")
    assert "warning (isolation)" in lines["summary"]
    assert code == (1 if "problem" in lines["summary"] else 0)


def test_without_bubblewrap_a_run_says_once_that_programs_run_as_plain_processes(tmp_path):
    env = without_bubblewrap(tmp_path)
    with ModelServer(["```python\nprint(6 * 7)\n```"]) as server:
        def ask(*options):
            return run_cli("ask", "--no-trace", "--quiet", "--method", "vote", "--samples", "1", "--model", f"openai:tiny@{server.url}",
                           *options, "What is 6 times 7?", env=env, timeout=120)

        fallback, chosen = ask(), ask("--isolation", "process")
    for result in (fallback, chosen):
        assert result.returncode == 0 and "Answer: 42" in result.stdout, result.stderr
    warnings = [line for line in fallback.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and warnings[0].startswith(
        "pal-jupyter: warning: programs run as plain processes (no sandbox) because bubblewrap (bwrap) is not "
        "installed; to get the sandbox, install bubblewrap"), fallback.stderr
    assert "warning" not in chosen.stderr, chosen.stderr  # --isolation process was chosen: nothing to warn about


def test_fallback_note_only_for_auto_without_a_working_sandbox(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "because bubblewrap (bwrap) is not installed" in isolation.fallback_note("auto")
    assert isolation.fallback_note("process") is None and isolation.fallback_note("sandbox") is None


def test_leti_export_of_a_trace(tmp_path):
    trace = tmp_path / "t.jsonl"
    record = {"question": "Q", "code": "print(1)", "execution": {"reason": "ok"}, "reward": "<|good|>", "feedback": "1"}
    trace.write_text(json.dumps(record) + "\n" + '{"question": "torn')  # a torn last line is skipped
    result = run_cli("leti", str(trace))
    assert result.returncode == 0  # what train --format leti learns from: reward, feedback, question, program
    assert result.stdout == "<|good|><|feedback|>1<|/feedback|>Q\n```python\nprint(1)\n```\n\n"


def test_ctrl_c_while_the_commands_are_still_importing_is_one_line(monkeypatch, capsys):
    # A real SIGINT in the first ~0.3 s of the command landed in importlib and printed 40 frames; the
    # interrupt is raised here exactly where that signal landed, in the import of the commands.
    import pal_jupyter.cli as cli

    class Interrupted:
        def find_spec(self, name, path=None, target=None):
            if name == "pal_jupyter.cli.commands":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "pal_jupyter.cli.commands", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupted(), *sys.meta_path])
    assert cli.main(["models"]) == 130
    assert capsys.readouterr().err == "pal-jupyter: interrupted\n"


def test_leti_on_a_file_that_is_not_a_trace_says_so(tmp_path):
    garbage = tmp_path / "notes.jsonl"
    garbage.write_text('garbage\n{"x": 1}\n')
    result = run_cli("leti", str(garbage))
    assert result.returncode == 2 and result.stdout == ""
    assert "holds no program: it is not a pal-jupyter trace" in result.stderr
    assert "Traceback" not in result.stderr


def test_train_refuses_a_file_as_its_adapter_folder_before_any_work(tmp_path):
    data, out = tmp_path / "programs.jsonl", tmp_path / "passwd"
    data.write_text(""), out.write_text("root:x:0:0\n")
    result = run_cli("train", "--out", str(out), str(data), timeout=60)
    assert result.returncode == 2 and "is a file, not a folder" in result.stderr
    assert "Traceback" not in result.stderr and out.read_text() == "root:x:0:0\n"


def test_bench_figures_from_scripted_replies():
    rows = [
        {"question": "q1", "answer": "#### 18"},  # right at once
        {"question": "q2", "answer": "#### 3"},  # crashes, then repaired
        {"input": "q3", "target": 2.5},  # runs but wrong
    ]
    replies = iter(["```python\nprint(18)\n```", "```python\nprint(x)\n```", "```python\nprint(3)\n```",
                    "```python\nprint(7)\n```"])
    model = ScriptedBackend(lambda messages: next(replies))
    with KernelPool() as pool:
        results = list(run_benchmark(rows, lambda config: model, pool, [Config(method="vote", samples=1)], max_attempts=3))
    summary = summarize(results, model="scripted", load_seconds=0.0, check_answers=False)
    assert summary["accuracy"] == pytest.approx(2 / 3)
    assert summary["accuracy_first_program"] == pytest.approx(1 / 3)
    assert summary["pass_at_k"] == pytest.approx(2 / 3)
    assert summary["exec_success_first_round"] == pytest.approx(2 / 3)
    assert summary["exec_success_programs"] == pytest.approx(3 / 4)
    assert summary["mean_rounds"] == pytest.approx(4 / 3)
    assert summary["error_types"] == {"NameError": 1}


def test_bench_vote_pass_at_k_calibration_and_adaptive_effort():
    rows = [{"question": "q1", "answer": "#### 5"}, {"question": "q2", "answer": "#### 6"}]
    replies = iter([f"```python\nprint({n})\n```" for n in (5, 5, 4, 1, 6, 2, 6, 6, 3)])
    model = ScriptedBackend(lambda messages: next(replies))
    with KernelPool() as pool:
        results = list(run_benchmark(rows, lambda config: model, pool,
                                     [Config(method="vote", samples=3, max_programs=6, second_opinion="off")]))
    summary = summarize(results, model="scripted", load_seconds=0.0, check_answers=False)
    # q1: 5, 5, 4 -> 5 (right, 2 of 3). q2: 1, 6, 2 is a three-way tie of one-liners, which 1 (wrong)
    # wins by coming first: too weak to stop at, so 3 more (6, 6, 3) join the vote -> 6 (right, 3 of 6).
    assert summary["accuracy"] == 1.0 and summary["pass_at_k"] == 1.0 and summary["accuracy_first_program"] == 0.5
    assert summary["accuracy_plain_vote"] == 0.5  # what stopping at the weak vote would have answered
    assert summary["questions_with_more_programs"] == 1 and summary["more_programs"] == 3
    assert summary["calibration"] == [
        {"votes": 3, "candidates": 6, "questions": 1, "accuracy": 1.0},
        {"votes": 2, "candidates": 3, "questions": 1, "accuracy": 1.0},
    ]
    assert [r.confidence for r in results] == ["medium", "low"]
    assert "adaptive effort k=3 (up to 6)" in format_summaries([dict(summary, runtime="server", dtype="-")])


def test_bench_reports_the_words_answer_and_where_the_question_would_have_stopped():
    programs = iter([f"```python\nprint({n})\n```" for n in (1, 6, 2)])

    def reply(messages):
        if messages[-1] == {"role": "assistant", "content": prompts.WORDS_OPENING}:
            return "2 * 3 = 6\nAnswer: 6"
        if messages[-1]["content"] == prompts.FOLLOW_YOUR_STEPS:
            return "```python\nprint(2 * 3)\n```"
        return next(programs)

    with KernelPool() as pool:
        results = list(run_benchmark([{"question": "q", "answer": "#### 6"}], lambda config: ScriptedBackend(reply),
                                     pool, [Config(method="vote", samples=3, max_programs=6)]))
    summary = summarize(results, model="scripted", load_seconds=0.0, check_answers=False)
    # 1, 6, 2 is weak (1 wins the tie); the words say 6 and the program after them prints 6: 6 wins, and
    # since the words agree no more programs are written.
    assert summary["accuracy"] == 1.0 and summary["accuracy_plain_vote"] == 0.0
    assert summary["accuracy_before_more_programs"] == 1.0 and summary["more_programs"] == 0
    assert (summary["questions_with_words"], summary["words_correct"], summary["reasoned_correct"]) == (1, 1, 1)
    assert results[0].words_answer == "6" and summary["calibration_shown"] == {"low": {"questions": 1, "accuracy": 1.0}}
    text = format_summaries([dict(summary, runtime="server", dtype="-")])
    assert "reason first k=3 (up to 6) +words" in text and "shown confidence" in text


def test_bench_command_compares_settings_side_by_side(tiny_model_dir, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "What is 2+2?", "answer": "#### 4"}) + "\n")
    out = tmp_path / "report.json"
    result = run_cli("bench", "--data", str(data), "--limit", "1", "--model", str(tiny_model_dir),
                     "--max-new-tokens", "8", "--max-attempts", "1", "--method", "vote", "--samples", "1,2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert [s["config"]["samples"] for s in report["summaries"]] == [1, 2]
    assert all(s["questions"] == 1 and "pass_at_k" in s for s in report["summaries"])
    assert [r["config"]["samples"] for r in report["results"]] == [1, 2]
    assert out.with_suffix(".png").stat().st_size > 1000  # the calibration plot
    assert "maj@k" in result.stdout and "tok/s" in result.stdout and "calibration k=2" in result.stdout


def test_an_interrupted_bench_reports_the_questions_every_config_finished(tiny_model_dir, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {n}+{n}?", "answer": f"#### {2 * n}"}) + "\n"
                            for n in range(200)))
    out, trace = tmp_path / "report.json", tmp_path / "trace.jsonl"
    bench = subprocess.Popen([sys.executable, "-m", "pal_jupyter.cli", "bench", "--data", str(data), "--model",
                              str(tiny_model_dir), "--max-new-tokens", "8", "--max-attempts", "1", "--method", "vote", "--samples", "1,2",
                              "--limit", "200", "--trace", str(trace), "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             # A suite started in the background (`cmd &` in a script) inherits SIGINT
                             # ignored, and Python then keeps ignoring it: give the bench Ctrl-C back.
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while (not trace.exists() or trace.read_text().count("\n") < 7) and time.monotonic() < deadline:
        time.sleep(0.2)  # 7 programs: at least two questions under both configs
    bench.send_signal(signal.SIGINT)
    stdout, stderr = bench.communicate(timeout=120)
    assert bench.returncode == 0, stderr
    report = json.loads(out.read_text())
    finished = report["summaries"][0]["questions"]
    assert 2 <= finished < 200 and report["summaries"][1]["questions"] == finished
    assert f"Interrupted: reporting the {finished} questions" in stderr


@pytest.mark.parametrize("value", ["-1", "abc", "1000"])
def test_bad_sample_counts_get_one_line_and_exit_2(value):
    result = run_cli("ask", "--no-trace", f"--samples={value}", "What is 2+2?")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "samples must be a whole number from 0 to 16" in result.stderr, result.stderr
