"""Learning from the interpreter: collect, the LeTI / SFT examples, LoRA training, adapters, compare.

Real tiny transformers models (built in the tests) and real child kernels; a scripted model
writes the programs where a test needs known ones.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pal_jupyter import KernelPool, ScriptedBackend
from pal_jupyter.backends import load_model
from pal_jupyter.backends.adapters import BAD, FEEDBACK_BEGIN, FEEDBACK_END, GOOD, METADATA, read_adapter
from pal_jupyter.evaluation.compare import compare, format_comparison, mcnemar_exact
from pal_jupyter.errors import ModelLoadError, PalError
from pal_jupyter.training.collect import PROGRAMS, collect, manifest_settings
from pal_jupyter.training.examples import IGNORE, load_examples, select, tokenize
from pal_jupyter.training.lora import TrainSettings, labelled_loss, train
from tiny_model import build_tiny_model

ROWS = [{"question": f"Sam has {i} apples and buys {i} more. How many apples now?", "answer": f"#### {2 * i}"}
        for i in range(1, 5)]


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three programs per question: right, wrong, crashing."""
    replies = []
    for i in range(1, 5):
        replies += [fenced(f"apples = {i}\nprint(apples + {i})"), fenced(f"print({i} * 3)"), fenced("print(apple)")]
    folder = tmp_path_factory.mktemp("collected")
    with KernelPool() as pool:
        stats = collect(enumerate(ROWS), ScriptedBackend(replies), pool, folder, manifest_settings(data="rows"), samples=3)
    assert (stats.questions, stats.programs, stats.ran, stats.correct, stats.solved) == (4, 12, 8, 4, 4)
    return folder / PROGRAMS


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.add_tokens([GOOD, BAD, FEEDBACK_BEGIN, FEEDBACK_END], special_tokens=True)
    return tok


def test_collected_records_carry_verdicts_and_feedback(collected):
    records = [json.loads(line) for line in collected.read_text().splitlines()]
    assert len(records) == 12 and len({r["key"] for r in records}) == 4
    right, wrong, crash = records[:3]
    assert right["correct"] is True and right["ran"] and "printed" in right["feedback"]
    assert wrong["correct"] is False and wrong["ran"] and "not the correct answer" in wrong["feedback"]
    assert crash["ran"] is False and crash["error_type"] == "NameError"
    assert 'File "program.py", line 1' in crash["feedback"] and "site-packages" not in crash["feedback"]
    assert right["model"] == "scripted" and right["settings"] == {"data": "rows"} and right["messages"]


def test_leti_examples_put_no_loss_on_the_reward_and_the_feedback(collected, tokenizer):
    examples, counts = load_examples([collected])
    assert counts == {"records": 12, "without_program": 0, "duplicates": 0}
    crash = next(e for e in examples if not e.ran)
    tokens = tokenize(tokenizer, crash, "leti", 512)
    context = [i for i, label in zip(tokens.input_ids, tokens.labels) if label == IGNORE]
    learned = [i for i, label in zip(tokens.input_ids, tokens.labels) if label != IGNORE]
    assert tokenizer.convert_tokens_to_ids(BAD) in context and tokenizer.convert_tokens_to_ids(FEEDBACK_END) in context
    context_text, learned_text = tokenizer.decode(context), tokenizer.decode(learned)
    assert "NameError" in context_text and "NameError" not in learned_text  # the feedback: context only
    assert learned_text.startswith(crash.question) and "print(apple)" in learned_text  # question and program learn
    assert all(label == i for i, label in zip(tokens.input_ids, tokens.labels) if label != IGNORE)


def test_sft_learns_only_right_programs_and_only_the_program(collected, tokenizer):
    examples, _ = load_examples([collected])
    chosen = select(examples, "sft")
    assert len(chosen) == 4 and all(e.correct for e in chosen)
    tokens = tokenize(tokenizer, chosen[0], "sft", 512)
    learned = tokenizer.decode([i for i, label in zip(tokens.input_ids, tokens.labels) if label != IGNORE])
    assert learned.startswith("```python") and chosen[0].question not in learned


def test_traces_are_extra_input_labelled_by_whether_they_ran(tmp_path):
    trace = tmp_path / "trace.jsonl"
    lines = [{"question": "q1", "code": "print(1)", "feedback": "ran", "execution": {"reason": "ok"}},
             {"question": "q2", "code": "print(x)", "feedback": "NameError", "execution": {"reason": "error"}},
             {"question": "q3", "code": None, "feedback": ""}, "torn"]
    trace.write_text("\n".join(json.dumps(x) for x in lines[:-1]) + '\n{"question": "to')
    examples, counts = load_examples([trace])
    assert [(e.question, e.ran, e.correct, e.good) for e in examples] == [("q1", True, None, True), ("q2", False, None, False)]
    assert counts["without_program"] == 1 and select(examples, "sft") == []


def test_a_tiny_model_trains_its_loss_goes_down_and_the_adapter_round_trips(collected, tiny_model_dir, tmp_path):
    import torch

    examples, _ = load_examples([collected])
    settings = TrainSettings(format="leti", rank=8, alpha=16, learning_rate=1e-2, epochs=6, batch_size=4, seed=3)
    result = train(examples, str(tiny_model_dir), tmp_path / "adapter", settings, data_files=[str(collected)],
                   dtype="float32", progress=False)
    assert result.steps == 18 and result.examples == {"good": 4, "bad": 8, "total": 12}
    first, last = sum(result.losses[:3]) / 3, sum(result.losses[-3:]) / 3
    assert last < first - 0.3, result.losses  # a random tiny model: the trend, not a target
    info = read_adapter(tmp_path / "adapter")
    assert info.format == "leti" and info.base == str(tiny_model_dir) and info.prompt == "chat-0shot"
    assert info.data == [{"path": str(collected), "sha256": info.data[0]["sha256"]}] and len(info.data[0]["sha256"]) == 64
    assert info.training["last_loss"] < info.training["first_loss"] and info.training["peak_memory_gib"] > 0
    assert len(result.step_seconds) == result.steps and info.training["seconds_per_step_median"] > 0

    backend = load_model(f"{tiny_model_dir}+{tmp_path / 'adapter'}", device="cpu", dtype="float32")
    assert backend.name.endswith("+" + str(tmp_path / "adapter")) and backend.prefix == GOOD
    assert backend.generate([{"role": "user", "content": "Sam has 2 apples"}]).completion_tokens >= 1
    # The trained rows of the four added tokens came back with the adapter (merged into the
    # embeddings), and the adapter holds only them, not a copy of the whole embedding matrix.
    from safetensors.torch import load_file

    saved = load_file(tmp_path / "adapter" / "adapter_model.safetensors")
    assert not [k for k in saved if k.endswith(("embed_tokens.weight", "lm_head.weight", "base_layer.weight"))]
    (delta,) = [v for k, v in saved.items() if k.endswith("trainable_tokens_delta")]
    rows = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())["trainable_token_indices"]["embed_tokens"]
    assert sorted(rows) == sorted(backend.tokenizer.convert_tokens_to_ids([GOOD, BAD, FEEDBACK_BEGIN, FEEDBACK_END]))
    assert torch.allclose(backend.model.get_input_embeddings().weight[rows], delta)
    good = backend.tokenizer.convert_tokens_to_ids(GOOD)
    trained = backend.model.get_input_embeddings()(torch.tensor([good]))
    plain = load_model(str(tiny_model_dir), device="cpu", dtype="float32")
    assert plain is not backend and plain.prefix == "" and len(plain.tokenizer) < len(backend.tokenizer)
    again = load_model(str(tiny_model_dir), adapter=str(tmp_path / "adapter"), device="cpu", dtype="float32")
    assert again is backend  # cached by base and adapter
    assert torch.isfinite(trained).all()


def test_the_loss_on_labelled_tokens_alone_equals_the_models_own_loss(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (3, 12))
    mask = torch.ones_like(ids)
    mask[2, 9:] = 0  # a padded row
    labels = ids.clone()
    labels[:, :5] = IGNORE  # context
    labels[2, 9:] = IGNORE
    ours = labelled_loss(model, ids, mask, labels)
    theirs = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    assert torch.allclose(ours, theirs, atol=1e-5), (ours, theirs)
    ours.backward()  # and it trains: gradients reach the model
    assert model.get_input_embeddings().weight.grad.abs().sum() > 0


def test_training_is_deterministic_with_a_seed(collected, tiny_model_dir, tmp_path):
    examples, _ = load_examples([collected])
    settings = TrainSettings(format="sft", rank=4, alpha=8, learning_rate=5e-3, max_steps=3, batch_size=2, seed=7)
    one = train(examples, str(tiny_model_dir), tmp_path / "a", settings, dtype="float32", progress=False)
    two = train(examples, str(tiny_model_dir), tmp_path / "b", settings, dtype="float32", progress=False)
    assert one.losses == two.losses and one.examples == {"good": 4, "bad": 0, "total": 4}
    sft = load_model(str(tiny_model_dir), adapter=str(tmp_path / "a"), device="cpu", dtype="float32")
    assert sft.prefix == "" and GOOD not in sft.tokenizer.get_vocab()  # SFT adds no tokens
    assert sft.generate([{"role": "user", "content": "Sam has 2 apples"}]).completion_tokens >= 1


def test_examples_cut_before_their_first_trained_token_are_one_clear_error(collected, tiny_model_dir, tmp_path):
    examples, _ = load_examples([collected])
    with pytest.raises(PalError, match="raise --max-length"):
        train(examples, str(tiny_model_dir), tmp_path / "a", TrainSettings(max_length=32), dtype="float32", progress=False)
    assert not (tmp_path / "a").exists()  # nothing half-written


def test_an_adapter_is_refused_on_another_base_and_the_base_still_works(collected, tiny_model_dir, tmp_path):
    examples, _ = load_examples([collected])
    train(examples, str(tiny_model_dir), tmp_path / "adapter", TrainSettings(max_steps=1), dtype="float32",
          progress=False)
    other = build_tiny_model(tmp_path / "other")
    config = json.loads((other / "config.json").read_text())
    config["num_hidden_layers"] = 3
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match=r"was trained on .*tiny-model.* not on .*other"):
        load_model(str(other), adapter=str(tmp_path / "adapter"), device="cpu")
    assert load_model(str(tiny_model_dir), device="cpu", dtype="float32").generate(
        [{"role": "user", "content": "hi"}]).completion_tokens >= 1


def test_missing_or_damaged_adapters_are_one_clear_line(collected, tiny_model_dir, tmp_path):
    with pytest.raises(ModelLoadError, match="No adapter at"):
        load_model(str(tiny_model_dir), adapter=str(tmp_path / "nothing"), device="cpu")
    examples, _ = load_examples([collected])
    folder = tmp_path / "adapter"
    train(examples, str(tiny_model_dir), folder, TrainSettings(max_steps=1), dtype="float32", progress=False)
    (folder / METADATA).write_text("{not json")
    with pytest.raises(ModelLoadError, match="damaged"):
        load_model(str(tiny_model_dir), adapter=str(folder), device="cpu")
    (folder / METADATA).unlink()
    with pytest.raises(ModelLoadError, match="not an adapter trained by pal-jupyter train"):
        load_model(str(tiny_model_dir), adapter=str(folder), device="cpu")


def test_collect_resumes_after_a_kill_without_losing_or_repeating(tiny_model_dir, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {i} times {i}?", "answer": f"#### {i * i}"}) + "\n"
                            for i in range(40)))
    out = tmp_path / "collected"
    command = [sys.executable, "-m", "pal_jupyter.cli", "collect", "--data", str(data), "--out", str(out),
               "--model", str(tiny_model_dir), "--dtype", "float32", "--samples", "2", "--max-new-tokens", "24"]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    programs = out / PROGRAMS
    deadline = time.monotonic() + 120
    while not (programs.exists() and programs.read_text().count("\n") >= 6):
        assert time.monotonic() < deadline and first.poll() is None, "collect did not start writing"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    done_before = {json.loads(line)["key"] for line in programs.read_text().splitlines() if line.strip()}
    assert 3 <= len(done_before) < 40, "killed mid-run"
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{40 - len(done_before)} question(s) answered now, {len(done_before)} already in" in resumed.stdout
    records = [json.loads(line) for line in programs.read_text().splitlines()]
    per_question = {}
    for record in records:
        per_question.setdefault(record["key"], []).append(record.get("sample", 1))
    assert len(per_question) == 40 and all(len(samples) in (1, 2) for samples in per_question.values())
    assert sum(len(s) for s in per_question.values()) == len(records)
    # The same folder with other settings is refused rather than mixed.
    changed = subprocess.run([*command[:-2], "--max-new-tokens", "8"], capture_output=True, text=True, timeout=120)
    assert changed.returncode == 2 and "holds a collection made with other settings (max_new_tokens)" in changed.stderr


def _report(path: Path, right: list[bool]) -> Path:
    config = {"samples": 1, "dtype": "auto", "prompt": None, "temperature": None, "guard": True}
    results = [{"index": i, "question": f"q{i}", "correct": ok, "config": config} for i, ok in enumerate(right)]
    path.write_text(json.dumps({"summaries": [{"model": path.stem, "config": config}], "results": results}))
    return path


def test_compare_pairs_the_questions_and_tests_the_difference(tmp_path):
    before = _report(tmp_path / "base.json", [True] * 50 + [False] * 50)
    after = _report(tmp_path / "tuned.json", [True] * 48 + [False] * 2 + [True] * 12 + [False] * 38)
    (pair,) = compare(before, after)
    assert (pair.questions, pair.only_a, pair.only_b, pair.both, pair.neither) == (100, 2, 12, 48, 38)
    assert pair.p_value == pytest.approx(mcnemar_exact(2, 12)) and pair.p_value < 0.05
    text = format_comparison([pair])
    assert "accuracy A 50.0%, B 60.0% (B - A = +10.0 points)" in text and "a real difference" in text
    other = _report(tmp_path / "other.json", [True] * 10)
    other_data = json.loads(other.read_text())
    other_data["results"][0]["question"] = "something else"
    other.write_text(json.dumps(other_data))
    with pytest.raises(PalError, match="run on different data"):
        compare(before, other)


def test_train_and_ask_from_the_command_line(collected, tiny_model_dir, tmp_path):
    out = tmp_path / "adapter"
    trained = subprocess.run([sys.executable, "-m", "pal_jupyter.cli", "train", str(collected), "--base",
                              str(tiny_model_dir), "--out", str(out), "--max-steps", "2", "--dtype", "float32"],
                             capture_output=True, text=True, timeout=300)
    assert trained.returncode == 0, trained.stderr
    assert "12 program(s) to learn from" in trained.stderr and "2 steps on 12 examples (4 good, 8 bad)" in trained.stdout
    asked = subprocess.run([sys.executable, "-m", "pal_jupyter.cli", "ask", "--no-trace", "--model", str(tiny_model_dir),
                            "--adapter", str(out), "--samples", "1", "--max-new-tokens", "4", "--max-attempts", "1",
                            "--dtype", "float32", "What is 2+2?"], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in asked.stderr and f"+{out}" in asked.stderr or asked.returncode in (1, 2), asked.stderr
    missing = subprocess.run([sys.executable, "-m", "pal_jupyter.cli", "ask", "--no-trace", "--model",
                              str(tiny_model_dir), "--adapter", str(tmp_path / "none"), "q"],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and f"No adapter at {tmp_path / 'none'}" in missing.stderr
