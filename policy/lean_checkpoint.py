"""Load a Qwen3 checkpoint directory without importing ``transformers``.

A trial of the local trainer only needs the policy's parameters (run by fast_qwen3.LeanQwen3)
and a tokenizer that encodes and decodes. Importing transformers' modeling and tokenizer code
costs ~1.4 CPU-seconds per trial process, a large part of a sweep's per-trial start-up on a
laptop CPU. This module reads the same files that ``from_pretrained`` reads:

* ``config.json`` -> ``Qwen3Settings``: the fields LeanQwen3 uses, named as in Hugging Face's
  ``Qwen3Config`` (old ``rope_theta``/``rope_scaling`` and new ``rope_parameters`` layouts);
* ``model.safetensors`` (or sharded via ``model.safetensors.index.json``) -> ``Qwen3Weights``:
  a parameter-only ``nn.Module`` whose ``state_dict`` keys, parameter order, tying and
  embedding ``padding_idx`` are those of ``Qwen3ForCausalLM``, so trainer checkpoints and
  optimizer states are interchangeable with the Hugging Face module;
* ``tokenizer.json`` + ``tokenizer_config.json`` -> ``LeanTokenizer`` (Hugging Face
  ``tokenizers``), exposing the calls the trainer makes (``encode``, ``decode``, eos/pad ids).

``lean_loadable(path)`` says whether a directory can be loaded this way (a Qwen3 that LeanQwen3
supports, and a plain ``tokenizers`` tokenizer); model.load_policy falls back to transformers
otherwise. tests/policy/test_lean_checkpoint.py checks parameters, logits and
tokenization against the transformers load of the same directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from torch import nn

from policy.fast_qwen3 import LeanQwen3

# Tokenizer classes whose encode/decode are exactly the tokenizers library's (no extra cleanup).
PLAIN_TOKENIZER_CLASSES = {"TokenizersBackend", "PreTrainedTokenizerFast"}


@dataclass(frozen=True)
class Qwen3Settings:
    """The config.json fields of a Qwen3 causal LM that the lean forward reads."""

    vocab_size: int  # rows of the embedding (and of the head)
    hidden_size: int  # model width C
    intermediate_size: int  # SwiGLU inner width
    num_hidden_layers: int  # decoder layers
    num_attention_heads: int  # query heads H
    num_key_value_heads: int  # key/value heads KV (grouped-query attention)
    head_dim: int  # per-head width D
    max_position_embeddings: int  # RoPE table length
    rms_norm_eps: float  # RMSNorm epsilon
    rope_parameters: dict  # {"rope_type": ..., "rope_theta": ...}
    tie_word_embeddings: bool  # head shares the embedding matrix
    pad_token_id: int | None  # embedding padding_idx (no gradient), as in Hugging Face
    model_type: str = "qwen3"  # architecture name
    hidden_act: str = "silu"  # MLP activation
    attention_bias: bool = False  # biases on q/k/v/o projections
    attention_dropout: float = 0.0  # dropout on attention probabilities
    use_sliding_window: bool = False  # sliding-window attention on some layers
    layer_types: list = field(default_factory=list)  # per-layer attention kind

    @classmethod
    def from_json(cls, raw: dict) -> "Qwen3Settings":
        rope = raw.get("rope_parameters")
        if rope is None:  # transformers < 5: rope_theta + rope_scaling
            scaling = raw.get("rope_scaling") or {}
            rope = {"rope_type": scaling.get("rope_type", scaling.get("type", "default")),
                    "rope_theta": raw.get("rope_theta", 10000.0)}
        heads = raw["num_attention_heads"]
        return cls(
            vocab_size=raw["vocab_size"], hidden_size=raw["hidden_size"], intermediate_size=raw["intermediate_size"],
            num_hidden_layers=raw["num_hidden_layers"], num_attention_heads=heads,
            num_key_value_heads=raw.get("num_key_value_heads") or heads,
            head_dim=raw.get("head_dim") or raw["hidden_size"] // heads,
            max_position_embeddings=raw["max_position_embeddings"], rms_norm_eps=raw.get("rms_norm_eps", 1e-6),
            rope_parameters=dict(rope), tie_word_embeddings=raw.get("tie_word_embeddings", True),
            pad_token_id=raw.get("pad_token_id"), model_type=raw.get("model_type", ""),
            hidden_act=raw.get("hidden_act", "silu"), attention_bias=raw.get("attention_bias", False),
            attention_dropout=raw.get("attention_dropout", 0.0), use_sliding_window=raw.get("use_sliding_window", False),
            layer_types=list(raw.get("layer_types") or []),
        )


# ---- parameters, laid out as Qwen3ForCausalLM's -----------------------------------------------
class _Norm(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(width))


class _Weight(nn.Module):
    """A weight matrix, left uninitialised: the checkpoint fills it. (nn.Linear / nn.Embedding would
    run their random init, which on the meta device goes through torch._refs and imports
    torch._dynamo + sympy: ~0.8 CPU-s per trial process.)"""

    def __init__(self, rows: int, cols: int, padding_idx: int | None = None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, cols))
        self.padding_idx = padding_idx  # embeddings: the row that gets no gradient, as nn.Embedding's


def _linear(n_in: int, n_out: int) -> _Weight:
    return _Weight(n_out, n_in)  # nn.Linear's layout: (out, in)


class _Attention(nn.Module):
    def __init__(self, s: Qwen3Settings):
        super().__init__()
        q, kv = s.num_attention_heads * s.head_dim, s.num_key_value_heads * s.head_dim
        self.q_proj, self.k_proj, self.v_proj = _linear(s.hidden_size, q), _linear(s.hidden_size, kv), _linear(s.hidden_size, kv)
        self.o_proj = _linear(q, s.hidden_size)
        self.q_norm, self.k_norm = _Norm(s.head_dim), _Norm(s.head_dim)


class _MLP(nn.Module):
    def __init__(self, s: Qwen3Settings):
        super().__init__()
        self.gate_proj = _linear(s.hidden_size, s.intermediate_size)
        self.up_proj = _linear(s.hidden_size, s.intermediate_size)
        self.down_proj = _linear(s.intermediate_size, s.hidden_size)


class _Layer(nn.Module):
    def __init__(self, s: Qwen3Settings):
        super().__init__()
        self.self_attn, self.mlp = _Attention(s), _MLP(s)
        self.input_layernorm, self.post_attention_layernorm = _Norm(s.hidden_size), _Norm(s.hidden_size)


class _Body(nn.Module):
    def __init__(self, s: Qwen3Settings):
        super().__init__()
        self.embed_tokens = _Weight(s.vocab_size, s.hidden_size, s.pad_token_id)
        self.layers = nn.ModuleList(_Layer(s) for _ in range(s.num_hidden_layers))
        self.norm = _Norm(s.hidden_size)


class Qwen3Weights(nn.Module):
    """Qwen3ForCausalLM's parameters (same names, order and tying) with no forward of its own:
    fast_qwen3.LeanQwen3 computes the model from them."""

    def __init__(self, settings: Qwen3Settings):
        super().__init__()
        self.config = settings
        self.model = _Body(settings)
        self.lm_head = _linear(settings.hidden_size, settings.vocab_size)
        if settings.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, *args, **kwargs):
        raise TypeError("Qwen3Weights holds parameters only: run it with policy.fast_qwen3.LeanQwen3")


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    index = path / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return {k: v for shard in shards for k, v in load_file(path / shard).items()}
    return load_file(path / "model.safetensors")


def load_qwen3_weights(path: str | Path, device: torch.device, dtype: torch.dtype) -> Qwen3Weights:
    """Qwen3Weights filled from ``path``'s safetensors, on ``device`` in ``dtype``."""
    path = Path(path)
    settings = Qwen3Settings.from_json(json.loads((path / "config.json").read_text()))
    with torch.device("meta"):
        model = Qwen3Weights(settings)
    tensors = {k: v.to(device=device, dtype=dtype) for k, v in _read_tensors(path).items()}
    expected = set(model.state_dict())
    if settings.tie_word_embeddings:  # the head is the embedding (some writers still store a copy)
        tensors.pop("lm_head.weight", None)
        expected.discard("lm_head.weight")
    if set(tensors) != expected:
        missing, unexpected = sorted(expected - set(tensors)), sorted(set(tensors) - expected)
        raise ValueError(f"{path}: safetensors do not match a Qwen3 with this config.json "
                         f"(missing {missing[:5]}, unexpected {unexpected[:5]})")
    if settings.tie_word_embeddings:
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    model.load_state_dict(tensors, strict=True, assign=True)
    if settings.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    return model


# ---- tokenizer --------------------------------------------------------------------------------
def _token_text(entry) -> str | None:
    """tokenizer_config.json stores special tokens as strings or as AddedToken dicts."""
    return entry.get("content") if isinstance(entry, dict) else entry


class LeanTokenizer:
    """The tokenizer calls the trainer makes, on a ``tokenizers.Tokenizer``."""

    def __init__(self, tokenizer: Tokenizer, eos_token: str, pad_token: str | None):
        self._tok = tokenizer
        self.eos_token_id = self._id(eos_token, "eos_token")
        self.pad_token_id = self._id(pad_token, "pad_token") if pad_token else self.eos_token_id  # as load_policy

    def _id(self, token: str, key: str) -> int:
        found = self._tok.token_to_id(token)
        if found is None:
            raise ValueError(f"tokenizer_config.json: {key} {token!r} is not in tokenizer.json's vocabulary")
        return found

    @classmethod
    def from_directory(cls, path: str | Path) -> "LeanTokenizer":
        path = Path(path)
        config = json.loads((path / "tokenizer_config.json").read_text())
        return cls(Tokenizer.from_file(str(path / "tokenizer.json")), _token_text(config.get("eos_token")),
                   _token_text(config.get("pad_token")))

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self._tok.decode(ids, skip_special_tokens=skip_special_tokens)

    def __len__(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)


# ---- what can be loaded this way -------------------------------------------------------------
def lean_loadable(path: str | Path) -> bool:
    """True when ``path`` holds a Qwen3 that LeanQwen3 runs and a plain ``tokenizers`` tokenizer."""
    path = Path(path)
    files = ("config.json", "tokenizer.json", "tokenizer_config.json")
    if not all((path / f).exists() for f in files):
        return False
    if not ((path / "model.safetensors").exists() or (path / "model.safetensors.index.json").exists()):
        return False
    tok_config = json.loads((path / "tokenizer_config.json").read_text())
    if tok_config.get("tokenizer_class") not in PLAIN_TOKENIZER_CLASSES or tok_config.get("clean_up_tokenization_spaces"):
        return False
    if not _token_text(tok_config.get("eos_token")):
        return False
    raw = json.loads((path / "config.json").read_text())
    try:
        settings = Qwen3Settings.from_json(raw)
    except KeyError:
        return False
    return LeanQwen3.supports_config(settings)
