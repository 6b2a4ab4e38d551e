"""The llama.cpp backend with a real GGUF file (the tiny random model: junk text, real mechanics).

llama.cpp loads the tiny file in milliseconds, so these tests run the real binding end to end:
k programs in one request, streaming per program, seeds, per-program stopping, interrupts, the
choice of runtime, and what a damaged file does (one line, never a crash of this process).
"""

from __future__ import annotations

import dataclasses
import os

import threading
import time
from pathlib import Path

import pytest

from pal_jupyter.backends import (
    GenerationOptions,
    LlamaCppBackend,
    choose_runtime,
    clear_model_cache,
    load_model,
)
from pal_jupyter.backends.llamacpp import load_llamacpp
from pal_jupyter.backends.gguf_file import read_gguf_info
from pal_jupyter.errors import ModelLoadError, PalError
from tiny_model import build_tiny_gguf

MESSAGES = [
    {"role": "system", "content": "Write Python."},
    {"role": "user", "content": "If a train travels 60 mph for 2.5 hours, how far does it go?"},
]


@pytest.fixture(scope="module")
def tiny(tiny_gguf: Path) -> LlamaCppBackend:
    backend = load_model(str(tiny_gguf), backend="llamacpp")
    assert isinstance(backend, LlamaCppBackend)
    return backend


def _sampled(tokens: int, seed: int | None = 1, **kwargs) -> GenerationOptions:
    return GenerationOptions(max_new_tokens=tokens, temperature=1.0, seed=seed, stop_after_code=False, **kwargs)


def test_k_programs_come_from_one_request_and_stream_per_program(tiny):
    streamed: dict[int, str] = {}
    rows = tiny.generate_many(MESSAGES, 3, _sampled(12),
                              on_token=lambda row, text: streamed.__setitem__(row, streamed.get(row, "") + text))
    assert len(rows) == 3
    assert [streamed.get(i, "") for i in range(3)] == [r.text for r in rows], "each program streams exactly its text"
    assert all(0 < r.completion_tokens <= 12 for r in rows)
    assert len({r.text for r in rows}) > 1, "sampled programs differ"
    assert rows[0].prompt_tokens > 10 and rows[0].first_token_s is not None
    assert tiny.dtype == "Q8_0" and tiny.device == "cpu" and "llama.cpp" in tiny.runtime


def test_a_seed_repeats_the_programs_and_another_seed_does_not(tiny):
    first = [r.text for r in tiny.generate_many(MESSAGES, 2, _sampled(10, seed=7))]
    again = [r.text for r in tiny.generate_many(MESSAGES, 2, _sampled(10, seed=7))]
    other = [r.text for r in tiny.generate_many(MESSAGES, 2, _sampled(10, seed=8))]
    assert first == again
    assert first != other


def test_greedy_is_deterministic(tiny):
    options = GenerationOptions(max_new_tokens=10, stop_after_code=False)
    assert tiny.generate(MESSAGES, options).text == tiny.generate(MESSAGES, options).text


def test_each_program_stops_on_its_own_rule(tiny):
    """A program that stop_when rejects ends at once; the request ends when every program is done."""
    rows = tiny.generate_many(MESSAGES, 3, _sampled(200, stop_when=lambda text: len(text) >= 3))
    assert all(r.completion_tokens < 20 for r in rows), [r.completion_tokens for r in rows]


def test_interrupting_the_stream_cancels_the_request_and_the_model_stays_usable(tiny):
    def interrupt(row: int, text: str) -> None:
        raise KeyboardInterrupt

    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        tiny.generate_many(MESSAGES, 2, _sampled(1000), on_token=interrupt)
    assert time.perf_counter() - start < 5
    deadline = time.monotonic() + 5
    while any(t.name == "pal-llamacpp" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name == "pal-llamacpp" for t in threading.enumerate()), "no generation thread is left"
    assert tiny.generate(MESSAGES, GenerationOptions(max_new_tokens=4, stop_after_code=False)).text


def test_prompts_written_at_once_stream_each_its_own_program_and_keep_their_slots(tiny):
    """The careful method's two views at once (generate_each): a request each, decoded as one batch;
    each streams its own text, ends at its own closing fence and keeps its prompt in its own slot."""
    other = [{"role": "system", "content": "Write short Python. " * 20}, MESSAGES[1]]
    options = GenerationOptions(max_new_tokens=8, temperature=0.0, code_only=True)
    asked = [(MESSAGES, dataclasses.replace(options, cache_key="first")),
             (other, dataclasses.replace(options, cache_key="second"))]
    streamed: dict[int, str] = {}
    order: list[int] = []

    def on_token(index: int, text: str) -> None:
        streamed[index] = streamed.get(index, "") + text
        order.append(index)

    replies = tiny.generate_each(asked, on_token=on_token)
    assert len(replies) == 2 and len(tiny.last_timings) == 2
    assert order.index(1) < len(order) - 1 - order[::-1].index(0), f"written one after the other: {order}"
    for index, reply in enumerate(replies):
        assert reply.text.startswith("```python\n") and reply.text.endswith("\n```"), reply.text
        assert reply.text.startswith(streamed[index]) and 0 < reply.completion_tokens <= 8
    assert replies[1].prompt_tokens > replies[0].prompt_tokens + 50, "each reply counts its own prompt"
    for messages, asked_options in asked:  # each prompt is in its own slot: asked again, only its end is read
        tiny.generate(messages, asked_options)
        assert tiny.last_timings[0]["prompt_n"] < 5, tiny.last_timings
    for key in ("first", "second"):
        tiny._pinned.pop(key)  # the module's backend is shared: the next tests count its pinned slots from none


def test_interrupting_prompts_written_at_once_cancels_them_all(tiny):
    def interrupt(index: int, text: str) -> None:
        raise KeyboardInterrupt

    long = _sampled(1000)
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        tiny.generate_each([(MESSAGES, long), (MESSAGES[1:], long)], on_token=interrupt)
    assert time.perf_counter() - start < 5
    deadline = time.monotonic() + 5
    while any(t.name.startswith("pal-llamacpp") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name.startswith("pal-llamacpp") for t in threading.enumerate()), "no generation thread is left"
    assert tiny.generate(MESSAGES, GenerationOptions(max_new_tokens=4, stop_after_code=False)).text


def test_a_code_only_reply_begins_at_the_fence_and_ends_at_the_closing_one(tiny):
    streamed: dict[int, str] = {}
    options = GenerationOptions(max_new_tokens=8, temperature=1.0, seed=3, code_only=True)
    rows = tiny.generate_many(MESSAGES, 2, options,
                              on_token=lambda row, text: streamed.__setitem__(row, streamed.get(row, "") + text))
    for row, generation in enumerate(rows):
        assert generation.text.startswith("```python\n") and generation.text.endswith("\n```")
        assert generation.text.count("```") == 2 and 0 < generation.completion_tokens <= 8
        assert generation.text.startswith(streamed[row]), "the fence is streamed first, then the code"
    assert tiny._request(MESSAGES, 1, options)["stop"] == ["```"]
    assert tiny._request(MESSAGES, 1, options)["messages"][-1] == {"role": "assistant", "content": "```python\n"}


def test_a_reply_begun_after_a_programs_prompt_reads_only_its_opening(tiny):
    """The careful method's words after its program: the same prompt up to the reply, on the same key,
    the reply begun with the words' opening: llama.cpp continues that turn, reads only the opening
    (the worked examples and the question are in the slot), and returns only what follows it."""
    prompt = [{"role": "system", "content": "Answer. " + "Worked example. " * 60},
              {"role": "user", "content": "Question: " + "how many apples? " * 20}]
    tiny.generate(prompt, GenerationOptions(max_new_tokens=4, code_only=True, cache_key="shots"))
    begun = [*prompt, {"role": "assistant", "content": "Step by step:\n"}]
    words = tiny.generate(begun, GenerationOptions(max_new_tokens=4, stop_after_code=False, cache_key="shots"))
    timing = tiny.last_timings[0]
    assert timing["prompt_n"] <= len("Step by step:\n") + 2 and timing["cache_n"] > 1000, timing  # of ~1,200
    assert not words.text.startswith("Step by step:")
    assert tiny._request(begun, 1, GenerationOptions())["messages"][-1] == begun[-1]
    tiny._pinned.pop("shots")  # the module's backend is shared: the next tests count its pinned slots from none


def test_prompts_with_their_own_cache_keys_keep_their_caches(tiny):
    """The careful method's first view, then another prompt sharing its worked examples (which
    llama.cpp would put in the first one's slot), then the first view's next question: with a cache key
    each, the next question is read from the cache up to the question itself."""
    examples = [{"role": "system", "content": "Write Python. " + "Worked example. " * 60}]

    def question(text: str) -> list[dict[str, str]]:
        return examples + [{"role": "user", "content": f"Data: {'a b c d ' * 40}\nQuestion: {text}"}]

    other = examples + [{"role": "user", "content": "Idiom " * 120}, {"role": "assistant", "content": "x"},
                        {"role": "user", "content": "Question: three?"}]
    greedy = GenerationOptions(max_new_tokens=2, temperature=0.0, stop_after_code=False)
    tiny.generate(question("one?"), dataclasses.replace(greedy, cache_key="first"))
    tiny.generate(other, dataclasses.replace(greedy, cache_key="other"))
    tiny.generate_many(other, 3, _sampled(2, cache_key="other"))  # samples fill free slots, not the views'
    tiny.generate(question("two?"), dataclasses.replace(greedy, cache_key="first"))
    reused, read = tiny.last_timings[0]["cache_n"], tiny.last_timings[0]["prompt_n"]
    assert read < 15 and reused > 150, tiny.last_timings  # only "two?" and the turn's end were read
    assert tiny._request(other, 1, dataclasses.replace(greedy, cache_key="other"))["id_slot"] == tiny.slots - 2


def test_two_prompts_on_one_cache_key_read_only_what_follows_their_common_start(tiny):
    """The fixed examples' prompt, then on the same key the chart idioms' prompt (the same examples and
    data, then the idioms): the idioms read only themselves and the question, and the next question
    about the same data only itself."""
    examples = [{"role": "system", "content": "Write Python. " + "Worked example. " * 60}]
    data = f"Data: {'a b c d ' * 40}\n"

    def asked(text: str) -> list[dict[str, str]]:
        return examples + [{"role": "user", "content": data + text}]

    greedy = GenerationOptions(max_new_tokens=2, temperature=0.0, stop_after_code=False, cache_key="data")
    tiny.generate(asked("Question: one?"), greedy)
    tiny.generate(asked("Idioms: x = 1\nQuestion: one?"), greedy)
    assert tiny.last_timings[0]["cache_n"] > 200 and tiny.last_timings[0]["prompt_n"] < 60, tiny.last_timings
    tiny.generate(asked("Question: two?"), greedy)
    assert tiny.last_timings[0]["cache_n"] > 200 and tiny.last_timings[0]["prompt_n"] < 30, tiny.last_timings


def test_a_slot_per_set_of_data_keeps_each_datas_description(tiny):
    """Worked examples, then data A, data B, and data A again. On one cache key llama.cpp drops A's part
    when B comes (the slot keeps more than half, so it is not saved) and reads A's description again.
    With a key per set of data in one family ("shared:a", "shared:b": views.View.cache_key_for), B's new
    slot starts as a copy of A's, so B reads only its data, and A's third question only itself."""
    examples = [{"role": "system", "content": "Write Python. " + "Worked example. " * 60}]

    def asked(data: str, text: str) -> list[dict[str, str]]:
        return examples + [{"role": "user", "content": f"Data: {(data + ' ') * 60}\nQuestion: {text}"}]

    greedy = GenerationOptions(max_new_tokens=2, temperature=0.0, stop_after_code=False)
    for keys in (("shared", "shared"), ("shared:a", "shared:b")):
        options = [dataclasses.replace(greedy, cache_key=key) for key in keys]
        tiny.generate(asked("apple", "one?"), options[0])
        tiny.generate(asked("pear", "two?"), options[1])
        assert tiny.last_timings[0]["cache_n"] > 800, tiny.last_timings  # the worked examples, from the cache
        tiny.generate(asked("apple", "three?"), options[0])
        read = tiny.last_timings[0]["prompt_n"]
        if keys[0] == keys[1]:
            assert read > 120, tiny.last_timings  # A's description read again
        else:
            assert read < 30, tiny.last_timings  # only "three?" and the turn's end (the data: 120 or more)
    assert not [name for name in os.listdir(tiny._socket_dir) if name.endswith(".bin")]  # no copy is kept


def test_a_prompt_start_every_question_shares_is_kept_for_the_next_session(tiny_gguf, isolated_cache):
    """The system message and fixed worked examples (``shared_messages``) are read once, by the first
    session ever, and kept on disk: a later session's first question reads only what follows them.
    The user's question is never part of what is kept; a backend that keeps nothing reads it all."""
    shared = [{"role": "system", "content": "Write Python. " + "Worked example. " * 60},
              {"role": "user", "content": "Example question: " + "one two three " * 20},
              {"role": "assistant", "content": "```python\nprint(1)\n```"}]
    options = GenerationOptions(max_new_tokens=2, temperature=0.0, stop_after_code=False, cache_key="data:a",
                                shared_messages=len(shared))

    def first_question(backend: LlamaCppBackend, text: str) -> dict[str, float]:
        try:
            backend.generate(shared + [{"role": "user", "content": text}], options)
            return backend.last_timings[0]
        finally:
            backend.close()

    first = load_llamacpp(tiny_gguf, "tiny")
    assert first.kept_dir is not None and str(first.kept_dir).startswith(str(isolated_cache))
    read = first_question(first, "Question: the secret word is zebra?")
    assert read["cache_n"] > 1000 and read["prompt_n"] < 60, read  # the shared start was read just before
    kept = list(first.kept_dir.glob("prompt-*.bin"))
    assert len(kept) == 1 and kept[0].stat().st_size > 0
    later = first_question(load_llamacpp(tiny_gguf, "tiny"), "Question: another one?")
    assert later["cache_n"] > 1000 and later["prompt_n"] < 60, later  # restored from the kept copy
    unkept = load_llamacpp(tiny_gguf, "tiny")
    unkept.kept_dir = None
    assert first_question(unkept, "Question: another one?")["prompt_n"] > 1000
    assert list(first.kept_dir.glob("*")) == kept, "one copy, no partial file left"


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_kept_prompt_start_is_read_afresh_and_replaced(tiny_gguf, isolated_cache, damage):
    """A kept copy damaged on disk (garbage, or cut short) costs only the time to read the prompt:
    the question is answered as without a copy, and the damaged file is replaced by a good one."""
    shared = [{"role": "system", "content": "Write Python. " + "Worked example. " * 60}]
    options = GenerationOptions(max_new_tokens=2, temperature=0.0, stop_after_code=False, cache_key="data:a",
                                shared_messages=len(shared))

    def first_question(text: str) -> tuple[LlamaCppBackend, dict[str, float], str]:  # a session of its own
        backend = load_llamacpp(tiny_gguf, "tiny")
        try:
            reply = backend.generate(shared + [{"role": "user", "content": text}], options)
            return backend, backend.last_timings[0], reply.text
        finally:
            backend.close()

    first, _, expected = first_question("Question: one?")
    [kept] = list(first.kept_dir.glob("prompt-*.bin"))
    good = kept.read_bytes()
    kept.write_bytes(b"not a slot file " * 64 if damage == "garbage" else good[: len(good) // 2])

    # llama.cpp aborts this whole process on a slot file cut short: the copy must never reach it
    assert first_question("Question: one?")[2] == expected  # the same answer as with a good copy
    [again] = list(first.kept_dir.glob("prompt-*.bin"))  # the prompt start read afresh and kept again
    assert again.read_bytes() == good, "the damaged copy is replaced"


def test_a_kept_copy_without_a_digest_of_its_contents_is_read_afresh(tiny_gguf, isolated_cache):
    """A copy kept before its contents were checked (``prompt-{digest}.bin``) is never restored
    unchecked: removed, read afresh, kept again with the digest."""
    shared = [{"role": "system", "content": "Write Python. " + "Worked example. " * 60}]
    options = GenerationOptions(max_new_tokens=2, temperature=0.0, stop_after_code=False, cache_key="data:a",
                                shared_messages=len(shared))
    backend = load_llamacpp(tiny_gguf, "tiny")
    try:
        backend.generate(shared + [{"role": "user", "content": "Question: one?"}], options)
    finally:
        backend.close()
    [kept] = list(backend.kept_dir.glob("prompt-*.bin"))
    unchecked = kept.with_name(kept.name.rsplit("-", 1)[0] + ".bin")
    kept.rename(unchecked)
    later = load_llamacpp(tiny_gguf, "tiny")
    try:
        later.generate(shared + [{"role": "user", "content": "Question: two?"}], options)
    finally:
        later.close()
    assert not unchecked.exists() and [p.name for p in backend.kept_dir.glob("prompt-*.bin")] == [kept.name]


def test_cache_keys_beyond_the_pinned_slots_take_the_least_recent_ones_slot(tiny):
    backend = dataclasses.replace(tiny, _pinned={}, _socket_dir="")  # the slot table alone (no family: no copy)
    pinned = backend.slots // 2
    slots = {f"k{i}": backend._slot_for(f"k{i}")[0] for i in range(pinned)}
    assert sorted(slots.values()) == list(range(backend.slots - pinned, backend.slots))
    assert backend._slot_for("k0") == (slots["k0"], False)  # asked again: now the most recent
    assert backend._slot_for("new") == (slots["k1"], True)  # k1 was asked least recently
    assert backend._slot_for("k0")[0] == slots["k0"] and backend._slot_for("k2")[0] == slots["k2"]
    assert backend._slot_for(None) == (None, False)


def test_more_programs_than_slots_is_one_clear_error(tiny):
    with pytest.raises(PalError, match="at most 16 programs"):
        tiny.generate_many(MESSAGES, 17, _sampled(4))


def test_the_loaded_model_is_reused(tiny, tiny_gguf):
    assert load_model(str(tiny_gguf), backend="llamacpp") is tiny
    assert load_model(str(tiny_gguf)) is tiny, "auto picks llama.cpp for a GGUF file on this CPU"


# ------------------------------------------------------------------ choosing the runtime


def test_runtime_choice_on_a_cpu(tiny_model_dir, monkeypatch):
    from pal_jupyter.backends import registry

    monkeypatch.setattr(registry, "gpu_available", lambda: False)
    assert choose_runtime("default").name == "llamacpp"
    assert choose_runtime("model.gguf").name == "llamacpp"
    assert choose_runtime(str(tiny_model_dir)).name == "torch"  # a transformers folder
    assert choose_runtime("default", adapter="runs/adapter").name == "torch"
    assert choose_runtime("default", dtype="float32").name == "torch"
    assert choose_runtime("default", "torch").name == "torch"
    monkeypatch.setattr(registry, "gpu_available", lambda: True)
    assert choose_runtime("default").reason == "a GPU runs transformers in bf16"
    assert choose_runtime("default", "llamacpp").name == "llamacpp"  # forced: the CPU build still runs


@pytest.mark.parametrize("kwargs, says", [
    (dict(adapter="runs/adapter"), "LoRA adapters"),
    (dict(device="cuda"), "runs on the CPU"),
    (dict(dtype="bfloat16"), "own quantisation"),
])
def test_forcing_llamacpp_where_it_cannot_work_says_why(kwargs, says):
    with pytest.raises(ModelLoadError, match=says):
        choose_runtime("default", "llamacpp", **kwargs)


def test_forcing_llamacpp_on_a_model_folder_says_to_use_torch(tiny_model_dir):
    with pytest.raises(ModelLoadError, match="use --backend torch for a model folder"):
        load_model(str(tiny_model_dir), backend="llamacpp")


# ------------------------------------------------------------------ damaged and unsuitable files


def test_a_truncated_gguf_is_one_line_and_this_process_survives(tiny_gguf, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_gguf.read_bytes()[: tiny_gguf.stat().st_size * 2 // 3])
    with pytest.raises(ModelLoadError, match=r"cut\.gguf is cut short: its tensors need [\d,]+ bytes, the file has") as err:
        load_model(str(cut), backend="llamacpp")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("content, says", [
    (b"GGUF" + bytes(range(256)) * 40, "version"),
    (b"PK\x03\x04 not a model", "not a GGUF file"),
    (b"GG", "cut short"),
])
def test_a_corrupt_gguf_is_one_line(tmp_path, content, says):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(content)
    with pytest.raises(ModelLoadError, match=says):
        load_model(str(bad), backend="llamacpp")


def test_a_gguf_without_a_chat_template_is_refused_with_the_way_out(tmp_path):
    plain = build_tiny_gguf(tmp_path / "plain.gguf", chat_template=None)
    with pytest.raises(ModelLoadError, match="no chat template"):
        load_model(str(plain), backend="llamacpp")


def test_the_header_reader_names_the_quantisation(tiny_gguf):
    info = read_gguf_info(tiny_gguf)
    assert (info.architecture, info.file_type, info.has_chat_template) == ("qwen2", "Q8_0", True)
    assert info.tensors > 10 and info.size == tiny_gguf.stat().st_size


def test_a_missing_gguf_is_one_line():
    clear_model_cache()
    with pytest.raises(ModelLoadError, match="No model at /nonexistent/x.gguf"):
        load_model("/nonexistent/x.gguf", backend="llamacpp")


# ------------------------------------------------------------------ the packaged lite model, for real


@pytest.mark.slow
def test_lite_model_answers_end_to_end_on_llamacpp():
    """The packaged lite GGUF through llama.cpp: no conversion, five programs streamed from one
    request, run in kernels, voted on; then Ctrl-C in the middle of a question leaves it usable."""
    from pal_jupyter import KernelPool, solve
    from pal_jupyter.backends import presets
    from pal_jupyter.engine.loop import SolveObserver

    class Tokens(SolveObserver):
        def __init__(self) -> None:
            self.rows: dict[int, str] = {}

        def token(self, attempt, text):
            self.rows[attempt.sample] = self.rows.get(attempt.sample, "") + text

    # An earlier test (vLLM, the hub) may have converted lite for itself: what matters is that
    # llama.cpp reads the assembled GGUF and converts nothing.
    prepared_before = presets.is_prepared("lite")
    model = load_model("lite")
    assert isinstance(model, LlamaCppBackend) and model.dtype == "Q4_K_M"
    assert model.gguf.path == presets.gguf_file("lite"), "llama.cpp reads the packaged GGUF itself"
    assert presets.is_prepared("lite") == prepared_before, "llama.cpp needs no converted copy"
    seen = Tokens()
    with KernelPool() as pool:
        session = solve("If a train travels 60 mph for 2.5 hours, how far does it go?", model=model,
                        executor=pool, observer=seen, method="vote", samples=5, max_programs=5)
        assert session.succeeded and float(session.answer) == pytest.approx(150)
        assert session.runtime.startswith("llama.cpp")
        assert sorted(seen.rows) == [1, 2, 3, 4, 5], "every program streamed its own tokens"
        first = session.round(1)
        assert all(a.completion == seen.rows[a.sample] for a in first)
        assert len({a.generate_s for a in first}) == 1, "the five programs came from one request"

        class Interrupt(SolveObserver):
            def token(self, attempt, text):
                raise KeyboardInterrupt

        start = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            solve("What is 17 times 23?", model=model, executor=pool, observer=Interrupt(), method="vote")
        assert time.perf_counter() - start < 30
        again = solve("What is 17 times 23?", model=model, executor=pool, method="vote", samples=1)
        assert again.succeeded and float(again.answer) == pytest.approx(391)


@pytest.mark.slow
def test_lite_model_careful_method_two_greedy_programs_ending_at_their_fences():
    """The default method with the packaged lite model: two greedy programs, code only (the reply is the
    fence, the code and the closing fence: no token after it); for a word problem then the words, when
    both programs worked, and no samples."""
    from pal_jupyter import KernelPool, solve

    model = load_model("lite")
    with KernelPool() as pool:
        session = solve("A shop packs 12 apples in a box. How many apples are in 7 boxes?", model=model,
                        executor=pool, samples=2)
    first, second = session.round(1)[:2]
    assert (first.view, second.view) == ("zero", "shots")
    for program in (first, second):
        assert program.completion.startswith("```python\n") and program.completion.endswith("\n```")
        assert program.completion.count("```") == 2 and program.completion_tokens < 200, program.completion
    assert session.succeeded and float(session.answer) == pytest.approx(84)
    assert len(session.round(1)) == 2, "no samples for a word problem"
    assert (session.second_opinion is not None) == (first.good and second.good), "the words check two that worked"


@pytest.mark.slow
def test_lite_model_on_a_dataframe_writes_more_programs_while_the_vote_is_weak_and_leaves_the_frame_alone():
    """A real question about a six-row frame: the data prompt is used, a round grows only while its
    vote is weak (and then to the cap), no program that re-created the data ran, the frame is unchanged."""
    import pandas as pd

    from pal_jupyter import KernelPool, solve
    from pal_jupyter import prompts
    from pal_jupyter.engine.loop import weak_vote
    from pal_jupyter.engine.vote import take_vote

    sales = pd.DataFrame({"region": ["East", "West", "East", "North", "West", "East"],
                          "units": [3, 5, 2, 7, 1, 4], "price": [20.0, 15.0, 22.5, 10.0, 30.0, 13.5]})
    before = sales.copy()
    with KernelPool() as pool:
        session = solve("What is the total revenue (units times price) of the East region? Print just the number.",
                        model=load_model("lite"), executor=pool, method="vote", samples=3, max_programs=9, variables={"sales": sales},
                        generation=GenerationOptions(seed=7))
    pd.testing.assert_frame_equal(sales, before)
    assert session.programs[0].messages[0]["content"] == prompts.DATA_SYSTEM
    for index in range(1, session.rounds + 1):
        programs = session.round(index)
        grew = [w for w in session.weak_votes if w.round == index]
        assert len(programs) == 3 + sum(w.more for w in grew) and [a.sample for a in programs] == list(range(1, len(programs) + 1))
        for weak in grew:  # each weak vote was the vote of the programs written until then
            assert weak_vote(take_vote(programs[:weak.candidates])) and weak.more == min(3, 9 - weak.candidates)
        vote = take_vote(programs)
        assert not weak_vote(vote) or len(programs) == 9, "a weak vote stops only at the cap"
    assert all(a.execution is None for a in session.programs if a.replaced), "re-created data never ran"
