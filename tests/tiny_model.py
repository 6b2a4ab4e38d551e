"""Tiny real transformers models built in code, for fast tests of the loading and generation paths.

The weights are random, so the text they write is junk: tests use them for mechanics (loading,
streaming, token counts, caching, GGUF conversion) and use ScriptedBackend where specific code
is needed.
"""

from __future__ import annotations

from pathlib import Path

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    "print(60 * 2.5)", "distance = speed * time", "```python\nx = 1\nprint(x)\n```",
    "The answer is 150.", "def solution():\n    return 42", "import pandas as pd",
] * 20


def build_tokenizer(chat_template: str | None = CHATML):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    core.train_from_iterator(CORPUS, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    if chat_template:
        tokenizer.chat_template = chat_template
    return tokenizer


def _tiny_qwen2(chat_template: str | None):
    """The tokenizer, config and seeded random model that both builders save."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = build_tokenizer(chat_template)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    return tokenizer, config, model


def build_tiny_model(path: Path, chat_template: str | None = CHATML) -> Path:
    """Save a 2-layer, hidden-64 Qwen2 model with a trained byte-level BPE tokenizer to ``path``."""
    tokenizer, config, model = _tiny_qwen2(chat_template)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# llama.cpp's tensor names for the Qwen2 weights (tied embeddings: no separate output.weight).
_GGUF_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
}
_GGUF_LAYER_NAMES = {
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
}


def _gguf_name(hf_name: str) -> str:
    if hf_name in _GGUF_NAMES:
        return _GGUF_NAMES[hf_name]
    _, _, layer, rest = hf_name.split(".", 3)  # model.layers.N.<module>.<weight|bias>
    module, kind = rest.rsplit(".", 1)
    return f"blk.{layer}.{_GGUF_LAYER_NAMES[module]}.{kind}"


def build_tiny_gguf(path: Path, chat_template: str | None = CHATML) -> Path:
    """Write the same tiny Qwen2 model as a real GGUF file at ``path`` and return ``path``.

    Matrices are stored Q8_0 (so loading exercises de-quantisation), norms and biases F32. The
    tokenizer travels as llama.cpp metadata (``gpt2`` byte-level BPE: tokens, token types, merges,
    special ids, chat template), which is all ``from_pretrained(dir, gguf_file=name)`` reads.
    """
    import json

    import gguf
    import numpy as np

    tokenizer, config, model = _tiny_qwen2(chat_template)
    rope_theta = float((getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0))

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), arch="qwen2")
    writer.add_name("tiny-qwen2")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_freq_base(rope_theta)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)

    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    assert [i for _, i in vocab] == list(range(len(vocab))), "tokenizer ids must be dense"
    special = set(tokenizer.all_special_ids)
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list([token for token, _ in vocab])
    writer.add_token_types([gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for _, i in vocab])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_bos_token_id(tokenizer.pad_token_id)  # as Qwen2.5's GGUFs: <|endoftext|>, never added
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_add_bos_token(False)
    if chat_template:
        writer.add_chat_template(chat_template)

    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":  # tied to the embeddings
            continue
        data = tensor.detach().float().numpy()
        if data.ndim == 2 and data.shape[-1] % 32 == 0:
            quantized = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(_gguf_name(name), quantized, raw_shape=quantized.shape,
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(_gguf_name(name), np.ascontiguousarray(data, dtype=np.float32))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
