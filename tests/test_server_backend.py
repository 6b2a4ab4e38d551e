"""The model-server backend against a real HTTP server on loopback, well-behaved and not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc

import pytest

from kernel_driver import UserKernel, text_of
from model_server import ModelServer, free_port
from pal_jupyter.backends import GenerationOptions, ServerBackend, load_model
from pal_jupyter.backends.registry import clear_model_cache
from pal_jupyter.errors import ModelLoadError, ModelServerError

PROGRAM = "Let me compute it.\n```python\nprint(6 * 7)\n```\nThe answer is printed."
SECRET = "sk-test-do-not-print-0123456789"


def backend(server: ModelServer, **kwargs) -> ServerBackend:
    kwargs.setdefault("backoff_s", 0.01)
    return ServerBackend("tiny", server.url, **kwargs)


def test_k_programs_are_one_request_with_n_and_stream_row_by_row():
    with ModelServer([PROGRAM]) as server:
        streamed: dict[int, str] = {}
        results = backend(server).generate_many(
            [{"role": "user", "content": "6 times 7?"}], 3, GenerationOptions(temperature=0.7, seed=5),
            lambda row, text: streamed.__setitem__(row, streamed.get(row, "") + text))
    body = server.requests[0]["body"]
    assert len(server.requests) == 1 and body["n"] == 3 and body["stream"] is True
    assert body["temperature"] == 0.7 and body["top_p"] == 0.95 and body["seed"] == 5
    # Each row stops where its code block closes, as the local backend does.
    assert [r.text for r in results] == ["Let me compute it.\n```python\nprint(6 * 7)\n```\n"] * 3
    assert streamed == {row: results[row].text for row in range(3)}
    assert results[0].completion_tokens == 9 and results[0].first_token_s > 0


def test_one_program_is_greedy_and_a_reply_read_to_its_end_has_the_usage():
    with ModelServer(["no code in this reply"]) as server:
        result = backend(server).generate([{"role": "user", "content": "q"}])
    assert server.requests[0]["body"]["temperature"] == 0.0 and "top_p" not in server.requests[0]["body"]
    # The server counts prompt tokens at the end; a reply cut at its code block does not wait for them.
    assert result.text == "no code in this reply" and result.prompt_tokens == 17


def test_a_reply_begun_in_the_prompt_is_continued_with_vllms_flags():
    begun = [{"role": "user", "content": "6 times 7?"}, {"role": "assistant", "content": "Step by step:\n"}]
    with ModelServer(["6 * 7 = 42\nAnswer: 42", "x"]) as server:
        backend(server).generate(begun, GenerationOptions(stop_after_code=False))
        backend(server).generate(begun[:1])
    continued, fresh = (r["body"] for r in server.requests)
    assert continued["messages"] == begun
    assert continued["continue_final_message"] is True and continued["add_generation_prompt"] is False
    assert "continue_final_message" not in fresh and "add_generation_prompt" not in fresh


def test_a_server_that_ignores_n_gets_one_request_per_missing_program():
    with ModelServer([PROGRAM]) as server:
        server.mode = "ignore_n"
        results = backend(server).generate_many([{"role": "user", "content": "q"}], 3, GenerationOptions())
    assert len(results) == 3 and len(server.requests) == 3
    assert [r["body"]["n"] for r in server.requests] == [3, 1, 1]


def test_the_key_goes_in_the_header_and_nowhere_else(monkeypatch):
    monkeypatch.setenv("PAL_JUPYTER_API_KEY", SECRET)
    with ModelServer([PROGRAM], key=SECRET) as server:
        model = backend(server)
        model.generate([{"role": "user", "content": "q"}])
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in model.name and SECRET not in repr(model)


def test_a_wrong_key_is_one_clear_error_without_the_key():
    with ModelServer([PROGRAM], key=SECRET) as server:
        with pytest.raises(ModelServerError, match=r"refused the API key \(HTTP 401\).*PAL_JUPYTER_API_KEY") as error:
            backend(server, api_key="sk-wrong-key-123").generate([{"role": "user", "content": "q"}])
    assert "sk-wrong-key-123" not in str(error.value)


def test_a_model_the_server_does_not_serve_names_what_it_serves():
    with ModelServer([PROGRAM]) as server:
        with pytest.raises(ModelServerError, match=r"does not serve a model named 'qwen'; it serves 'tiny'"):
            ServerBackend.connect(f"openai:qwen@{server.url}")
        with pytest.raises(ModelServerError, match=r"does not serve 'qwen' \(HTTP 404"):
            ServerBackend("qwen", server.url).generate([{"role": "user", "content": "q"}])


def test_a_busy_server_is_retried_with_back_off_then_answers():
    with ModelServer([PROGRAM]) as server:
        server.mode, server.busy_count, server.status = "busy", 2, 429
        result = backend(server, retries=3).generate([{"role": "user", "content": "q"}])
    assert "print(6 * 7)" in result.text and len(server.requests) == 3


def test_a_server_busy_for_longer_than_the_retries_is_one_clear_error():
    with ModelServer([PROGRAM]) as server:
        server.mode, server.busy_count = "busy", 10
        with pytest.raises(ModelServerError, match=r"is busy \(HTTP 503\) after 3 tries"):
            backend(server, retries=2).generate([{"role": "user", "content": "q"}])
    assert len(server.requests) == 3


def test_a_server_that_is_down_is_retried_then_one_clear_error():
    port = free_port()
    start = time.perf_counter()
    with pytest.raises(ModelServerError, match=r"Cannot reach the model server at http://127.0.0.1:\d+/v1 "
                                               r"\(connection refused\)\. Is it running"):
        ServerBackend("tiny", f"http://127.0.0.1:{port}/v1", retries=2, backoff_s=0.2).generate(
            [{"role": "user", "content": "q"}])
    assert time.perf_counter() - start >= 0.6  # two waits: 0.2 s, then 0.4 s


def test_a_slow_first_token_times_out_with_the_setting_to_change():
    with ModelServer([PROGRAM]) as server:
        server.mode, server.delay_s = "slow", 6.0
        start = time.perf_counter()
        with pytest.raises(ModelServerError, match=r"sent nothing for 0.5 s .* --server-timeout"):
            backend(server, timeout_s=0.5).generate([{"role": "user", "content": "q"}])
        assert time.perf_counter() - start < 4.0  # the user's limit, not the server's 6 s


@pytest.mark.parametrize("mode", ["cut", "ended"])
def test_a_reply_cut_off_mid_stream_returns_nothing(mode):
    streamed = []
    with ModelServer([PROGRAM]) as server:
        server.mode = mode
        with pytest.raises(ModelServerError, match=r"(cut its reply off|ended its reply before it was complete).*"
                                                   r"nothing was kept"):
            backend(server).generate([{"role": "user", "content": "q"}], on_token=streamed.append)
    assert streamed  # some words had arrived: they are shown, never returned as a program


def test_an_error_in_the_middle_of_a_stream_is_passed_on_in_one_line():
    with ModelServer([PROGRAM]) as server:
        server.mode = "error"
        with pytest.raises(ModelServerError, match=r"^The model server stopped with an error: CUDA out of memory$"):
            backend(server).generate([{"role": "user", "content": "q"}])


@pytest.mark.parametrize("drip_s, limits, deadline", [
    (0.2, {"deadline_s": 2.0}, r"2 s \(the most one reply may take\)"),
    # Bytes within the 10 s read timeout but the next one after the deadline: the watchdog cuts the read.
    (1.5, {"deadline_s": 2.0, "timeout_s": 10.0}, r"2 s \(the most one reply may take\)"),
    # By default the deadline is 10 read timeouts, and the message says so.
    (0.02, {"timeout_s": 0.25}, r"2.5 s \(the most one reply may take, 10 times --server-timeout\)"),
], ids=["byte-every-0.2s", "byte-every-1.5s", "default-deadline"])
def test_a_server_that_drips_bytes_is_stopped_at_the_deadline(drip_s, limits, deadline):
    with ModelServer([PROGRAM]) as server:
        server.mode, server.delay_s = "drip", drip_s
        model = backend(server, **limits)
        start = time.perf_counter()
        with pytest.raises(ModelServerError, match=rf"^The model server at {server.url} did not finish within "
                                                   rf"{deadline}\. It may be .* allow longer with --server-timeout\.$"):
            model.generate([{"role": "user", "content": "q"}])
        elapsed = time.perf_counter() - start
    assert model.call_deadline_s - 0.1 < elapsed < model.call_deadline_s + 0.8


def test_one_endless_line_is_an_error_at_its_cap_not_a_buffer_without_end():
    with ModelServer([PROGRAM]) as server:
        server.mode = "long_line"
        start = time.perf_counter()
        tracemalloc.start()
        try:
            with pytest.raises(ModelServerError, match=r"sent a line longer than 1 MiB.*OpenAI-compatible"):
                backend(server).generate([{"role": "user", "content": "q"}])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert time.perf_counter() - start < 3.0 and peak < 16 * 2**20


def test_a_reply_of_endless_chatter_is_an_error_at_the_byte_cap():
    with ModelServer([PROGRAM]) as server:
        server.mode = "chatter"
        start = time.perf_counter()
        with pytest.raises(ModelServerError, match=r"sent more than 8 MiB for one reply.*nothing was kept"):
            backend(server).generate([{"role": "user", "content": "q"}], GenerationOptions(max_new_tokens=20))
    assert time.perf_counter() - start < 3.0


def test_a_server_that_ignores_max_tokens_is_stopped_at_the_token_cap():
    streamed = []
    with ModelServer([PROGRAM]) as server:
        server.mode = "no_stop"
        with pytest.raises(ModelServerError, match=r"sent more than 56 pieces of text where 1 x 20 tokens were "
                                                   r"asked for: it ignores max_tokens\. Nothing was kept"):
            backend(server).generate([{"role": "user", "content": "q"}], GenerationOptions(max_new_tokens=20),
                                     on_token=streamed.append)
    assert server.requests[0]["body"]["max_tokens"] == 20 and len(streamed) == 57


def test_server_sources_parse_and_read_the_environment(monkeypatch):
    from pal_jupyter.backends.openai_api import parse_source

    assert parse_source("openai:tiny@http://h:8000/v1/") == ("tiny", "http://h:8000/v1")
    monkeypatch.setenv("PAL_JUPYTER_API_BASE", "http://class-server:8000/v1")
    assert parse_source("openai:tiny") == ("tiny", "http://class-server:8000/v1")
    with pytest.raises(ModelLoadError, match="must start with http"):
        parse_source("openai:tiny@class-server:8000")
    monkeypatch.delenv("PAL_JUPYTER_API_BASE")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelLoadError, match=r"openai:MODEL@URL"):
        parse_source("openai:tiny")
    with pytest.raises(ModelLoadError, match="An adapter is loaded by the model server"):
        load_model("openai:tiny@http://h/v1", adapter="runs/adapter")


def test_ask_through_a_server_end_to_end_without_leaking_the_key(tmp_path):
    trace = tmp_path / "trace.jsonl"
    env = {**os.environ, "PAL_JUPYTER_API_KEY": SECRET, "PAL_JUPYTER_TRACE": str(trace)}
    with ModelServer([PROGRAM], key=SECRET) as server:
        result = subprocess.run(
            [sys.executable, "-m", "pal_jupyter.cli", "ask", "--model", f"openai:tiny@{server.url}", "--method", "vote", "--samples", "3",
             "What is 6 times 7?"], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert "Vote: 3 of 3 programs agree on 42" in result.stdout and "Answer: 42" in result.stdout
    assert [r["body"]["n"] for r in server.requests] == [3]
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(records) == 3 and all(r["model"] == f"openai:tiny@{server.url}" for r in records)
    for text in (result.stdout, result.stderr, trace.read_text()):
        assert SECRET not in text


def test_a_pal_cell_through_a_server_answers_and_inserts_the_program():
    with ModelServer([PROGRAM]) as server:
        user = UserKernel()
        try:
            reply, outputs = user.run("%load_ext pal_jupyter\n%config PalMagics.trace = 'off'")
            assert reply["status"] == "ok", text_of(outputs)
            reply, outputs = user.run(f"%%pal --model openai:tiny@{server.url} --method vote --samples 2\nWhat is 6 times 7?")
        finally:
            user.close()
    assert reply["status"] == "ok", text_of(outputs)
    final = [o for o in outputs if o["output_type"] == "update_display_data"][-1]["data"]
    assert "Answer: 42" in final["text/plain"]
    assert "2 of 2 programs, written independently, agree" in final["text/plain"]
    inserted = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert inserted and "print(6 * 7)" in inserted[0]["text"]
    assert [r["body"]["n"] for r in server.requests] == [2]


def test_ask_with_the_server_down_is_one_line_and_exit_2():
    port = free_port()
    result = subprocess.run([sys.executable, "-m", "pal_jupyter.cli", "ask", "--model",
                             f"openai:tiny@http://127.0.0.1:{port}/v1", "What is 6 times 7?"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"pal-jupyter: Cannot reach the model server at http://127.0.0.1:{port}/v1 (connection refused).")
    assert "Loading model" in result.stderr and "Traceback" not in result.stderr


@pytest.fixture(autouse=True)
def _forget_loaded_servers():
    yield
    clear_model_cache()
