"""The pal-jupyter command, run as users run it: a subprocess."""

import json
import os
import subprocess
import sys

import psutil
import pytest

from pal_jupyter.benchmark.runner import Config, run_benchmark, summarize
from pal_jupyter import KernelPool, ScriptedBackend


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
    # Random weights write junk, so the question fails: what matters is that every stage runs,
    # the failure is reported plainly, and every attempt is traced.
    trace = tmp_path / "trace.jsonl"
    result = run_cli("ask", "--model", str(tiny_model_dir), "--max-new-tokens", "8", "--max-attempts", "2",
                     "--samples", "2", "--trace", str(trace), "What is 2+2?")
    assert result.returncode in (1, 2), result.stderr
    assert "Traceback" not in result.stderr
    if result.returncode == 1:
        assert "No working program after 2 attempt(s)" in result.stdout
        assert len(trace.read_text().splitlines()) == 4  # 2 attempts of 2 programs
    else:
        assert "no Python code in 4 program" in result.stderr


def test_models_lists_both_presets():
    result = run_cli("models")
    assert result.returncode == 0
    assert "qwen2.5-coder-1.5b [default]" in result.stdout and "qwen2.5-coder-0.5b [lite]" in result.stdout


def test_leti_export_of_a_trace(tmp_path):
    trace = tmp_path / "t.jsonl"
    record = {"question": "Q", "code": "print(1)", "reward": "<|good|>", "feedback": "1"}
    trace.write_text(json.dumps(record) + "\n" + '{"question": "torn')  # a torn last line is skipped
    result = run_cli("leti", str(trace))
    assert result.returncode == 0 and result.stdout.count("<|good|>") == 1 and "print(1)" in result.stdout


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
        results = list(run_benchmark(rows, lambda config: model, pool, [Config(samples=1)], max_attempts=3))
    summary = summarize(results, model="scripted", load_seconds=0.0, check_answers=False)
    assert summary["accuracy"] == pytest.approx(2 / 3)
    assert summary["accuracy_first_program"] == pytest.approx(1 / 3)
    assert summary["pass_at_k"] == pytest.approx(2 / 3)
    assert summary["exec_success_first_round"] == pytest.approx(2 / 3)
    assert summary["exec_success_programs"] == pytest.approx(3 / 4)
    assert summary["mean_rounds"] == pytest.approx(4 / 3)
    assert summary["error_types"] == {"NameError": 1}


def test_bench_vote_pass_at_k_and_calibration():
    rows = [{"question": "q1", "answer": "#### 5"}, {"question": "q2", "answer": "#### 6"}]
    replies = iter([f"```python\nprint({n})\n```" for n in (5, 5, 4, 6, 1, 2)])
    model = ScriptedBackend(lambda messages: next(replies))
    with KernelPool() as pool:
        results = list(run_benchmark(rows, lambda config: model, pool, [Config(samples=3)]))
    summary = summarize(results, model="scripted", load_seconds=0.0, check_answers=False)
    # q1: 5, 5, 4 -> 5 (right, 2 of 3); q2: 6, 1, 2 -> a three-way tie, all one line: 6 came first (right).
    assert summary["accuracy"] == 1.0 and summary["accuracy_first_program"] == 1.0 and summary["pass_at_k"] == 1.0
    assert summary["calibration"] == [
        {"votes": 2, "candidates": 3, "questions": 1, "accuracy": 1.0},
        {"votes": 1, "candidates": 3, "questions": 1, "accuracy": 1.0},
    ]
    assert [r.confidence for r in results] == ["medium", "low"]


def test_bench_command_compares_settings_side_by_side(tiny_model_dir, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "What is 2+2?", "answer": "#### 4"}) + "\n")
    out = tmp_path / "report.json"
    result = run_cli("bench", "--data", str(data), "--limit", "1", "--model", str(tiny_model_dir),
                     "--max-new-tokens", "8", "--max-attempts", "1", "--samples", "1,2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert [s["config"]["samples"] for s in report["summaries"]] == [1, 2]
    assert all(s["questions"] == 1 and "pass_at_k" in s for s in report["summaries"])
    assert [r["config"]["samples"] for r in report["results"]] == [1, 2]
    assert out.with_suffix(".png").stat().st_size > 1000  # the calibration plot
    assert "maj@k" in result.stdout and "tok/s" in result.stdout and "calibration k=2" in result.stdout


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1000"])
def test_bad_sample_counts_get_one_line_and_exit_2(value):
    result = run_cli("ask", "--no-trace", f"--samples={value}", "What is 2+2?")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "expected a whole number from 1 to 16" in result.stderr, result.stderr
