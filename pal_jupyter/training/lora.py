"""Fine-tune a LoRA adapter on checked programs: ``pal-jupyter train``.

A plain PyTorch loop over ``peft``: LoRA on every attention and MLP projection, and for LeTI the
embeddings of the four added tokens (``<|good|>``, ``<|bad|>``, ``<|feedback|>``,
``<|/feedback|>``) trained as well (peft's trainable tokens; the rest of the embedding matrix
stays frozen). bf16 on a CPU that computes it natively or a GPU (the adapter's own weights stay
fp32), fp32 elsewhere. Batches of similar length, AdamW, linear decay, a progress bar with the
loss; ``seed`` fixes the order, the initial weights and dropout.

The adapter directory holds its own metadata (:class:`~pal_jupyter.backends.adapters.AdapterInfo`):
the base model and its fingerprint, the data files and their SHA-256, the settings, the
examples used (good / bad), and the training's seconds, loss and peak memory.
"""

from __future__ import annotations

import logging
import math
import random
import resource
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..backends.adapters import SPECIAL_TOKENS, AdapterInfo, file_sha256, fingerprint
from ..backends.huggingface import model_directory, resolve_device, resolve_dtype, resolve_source
from ..errors import PalError
from ..prompts.training import TRAINED_STYLE
from .examples import IGNORE, Example, Tokenized, select, tokenize

log = logging.getLogger(__name__)

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class TrainSettings:
    format: str = "leti"  # "leti" (every program, behind its reward and feedback) or "sft" (right ones only)
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.05
    learning_rate: float = 2e-4
    epochs: float = 1.0
    batch_size: int = 4
    max_length: int = 384  # tokens per example; longer ones are cut
    max_steps: int | None = None  # stop early (tests, a time budget)
    seed: int = 0

    def check(self) -> None:
        if self.format not in ("leti", "sft"):
            raise PalError(f"format must be leti or sft, not {self.format!r}.")
        for name, low in (("rank", 1), ("alpha", 1), ("batch_size", 1), ("max_length", 32)):
            if getattr(self, name) < low:
                raise PalError(f"{name} must be at least {low}, not {getattr(self, name)!r}.")
        if not 0 < self.learning_rate < 1 or self.epochs <= 0 or not 0 <= self.dropout < 1:
            raise PalError("learning_rate must be in (0, 1), epochs above 0 and dropout in [0, 1).")


@dataclass
class TrainResult:
    adapter: Path
    steps: int
    examples: dict[str, int]
    losses: list[float] = field(default_factory=list)  # per step
    seconds: float = 0.0  # the whole run: loading, every step, saving
    peak_memory_gib: float = 0.0
    step_seconds: list[float] = field(default_factory=list)  # forward, backward and update of each step

    @property
    def last_loss(self) -> float:
        """The mean of the last five steps' losses: one step's loss depends on its batch."""
        tail = self.losses[-5:]
        return sum(tail) / len(tail)

    @property
    def seconds_per_step(self) -> float:
        """The median step: the first one, warming up, and the widest batches would skew a mean."""
        return statistics.median(self.step_seconds)


def train(
    examples: list[Example],
    base: str,
    out: str | Path,
    settings: TrainSettings,
    *,
    data_files: list[str] | None = None,
    device: str = "auto",
    dtype: str = "auto",
    progress: bool = True,
) -> TrainResult:
    """Fine-tune an adapter for ``base`` on ``examples``; write it to ``out``."""
    import torch
    from peft import LoraConfig, get_peft_model
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    settings.check()
    chosen = select(examples, settings.format)
    if not chosen:
        raise PalError(f"No examples to train on in the {settings.format} format "
                       f"({'no program with a verified right answer' if settings.format == 'sft' else 'no programs'}).")
    started = time.perf_counter()
    torch.manual_seed(settings.seed)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    resolved = resolve_source(base, dtype)
    tokenizer = AutoTokenizer.from_pretrained(resolved)
    model = AutoModelForCausalLM.from_pretrained(resolved, dtype=getattr(torch, dtype))
    trainable_tokens = None
    if settings.format == "leti":  # SFT's plain prompt needs no new tokens
        tokenizer.add_tokens(list(SPECIAL_TOKENS), special_tokens=True)
        if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
            model.resize_token_embeddings(len(tokenizer))
        trainable_tokens = {"embed_tokens": tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS))}
    config = LoraConfig(
        r=settings.rank, lora_alpha=settings.alpha, lora_dropout=settings.dropout, task_type="CAUSAL_LM",
        target_modules=[m for m in PROJECTIONS if any(n.endswith(m) for n, _ in model.named_modules())],
        trainable_token_indices=trainable_tokens,
    )
    model = get_peft_model(model, config).to(device)
    model.train()
    tokenized = [tokenize(tokenizer, e, settings.format, settings.max_length) for e in chosen]
    batches = _batches([t for t in tokenized if any(label != IGNORE for label in t.labels)],
                       settings.batch_size, settings.seed)
    if not batches:
        raise PalError(f"Every example is longer than max_length={settings.max_length} before its first "
                       "trained token: raise --max-length.")
    total = math.ceil(len(batches) * settings.epochs)
    if settings.max_steps is not None:
        total = min(total, settings.max_steps)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=settings.learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1 - step / max(1, total)))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    losses: list[float] = []
    step_seconds: list[float] = []
    bar = tqdm(total=total, desc=f"training ({settings.format})", unit="step", disable=not progress)
    for step in range(total):
        step_started = time.perf_counter()
        batch = batches[step % len(batches)]
        ids, labels, mask = _padded(batch, pad, device)
        loss = labelled_loss(model.get_base_model(), ids, mask, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        step_seconds.append(time.perf_counter() - step_started)
        bar.update()
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
    bar.close()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # The trained rows of the added tokens are saved with the adapter; a copy of the whole
    # embedding matrix and output layer (peft's default after a resize) would be 0.5 GB for lite.
    model.save_pretrained(out, save_embedding_layers=False)
    tokenizer.save_pretrained(out)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB on Linux -> GiB
    counts = {"good": sum(e.good for e in chosen), "bad": sum(not e.good for e in chosen), "total": len(chosen)}
    result = TrainResult(out, total, counts, losses, seconds, peak, step_seconds)
    AdapterInfo(
        format=settings.format, base=base, base_fingerprint=fingerprint(model_directory(resolved)), prompt=TRAINED_STYLE,
        data=[{"path": str(f), "sha256": file_sha256(f)} for f in data_files or []],
        examples=counts, settings=asdict(settings) | {"device": device, "dtype": dtype},
        training={"steps": total, "seconds": round(seconds, 1),
                  "seconds_per_step_median": round(result.seconds_per_step, 2), "first_loss": round(losses[0], 4),
                  "last_loss": round(result.last_loss, 4), "peak_memory_gib": round(peak, 2)},
    ).save(out)
    log.info("adapter written to %s (%d steps, %.0f s)", out, total, seconds)
    return result


def labelled_loss(causal_lm: Any, ids: Any, mask: Any, labels: Any) -> Any:
    """Mean cross-entropy over the labelled next tokens, with logits computed only there.

    The model's own ``loss`` computes fp32 logits over the whole vocabulary (151,936 tokens for
    Qwen) at every position, context included, and runs the backward pass of the tied, partly
    trainable output layer through all of them. Here only the positions whose next token carries
    a label reach the output layer. The value is the same. In LeTI examples about three quarters
    of the tokens carry a label, so the saving is modest there (``benchmarks/bench_training.py``).
    """
    import torch

    if getattr(causal_lm.config, "final_logit_softcapping", None):  # Gemma-2 style heads reshape logits
        return causal_lm(input_ids=ids, attention_mask=mask, labels=labels).loss
    hidden = causal_lm.get_decoder()(input_ids=ids, attention_mask=mask).last_hidden_state
    targets = labels[:, 1:]
    labelled = targets != IGNORE
    logits = causal_lm.get_output_embeddings()(hidden[:, :-1][labelled])
    return torch.nn.functional.cross_entropy(logits.float(), targets[labelled])


def _batches(items: list[Tokenized], size: int, seed: int) -> list[list[Tokenized]]:
    """Batches of similar length (little padding), in a seeded random order."""
    ordered = sorted(items, key=lambda t: len(t.input_ids))
    batches = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    random.Random(seed).shuffle(batches)
    return batches


def _padded(batch: list[Tokenized], pad: int, device: str) -> tuple[Any, Any, Any]:
    import torch

    width = max(len(t.input_ids) for t in batch)
    ids = [t.input_ids + [pad] * (width - len(t.input_ids)) for t in batch]
    labels = [t.labels + [IGNORE] * (width - len(t.labels)) for t in batch]
    mask = [[1] * len(t.input_ids) + [0] * (width - len(t.input_ids)) for t in batch]
    as_tensor = lambda rows: torch.tensor(rows, device=device)  # noqa: E731
    return as_tensor(ids), as_tensor(labels), as_tensor(mask)
