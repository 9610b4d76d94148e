"""The tiny policy of the local trainer, built in code: a character tokenizer and a small Qwen3.

    tokenizer = build_char_tokenizer("char_tags")
    model = build_tiny_model(cfg.local, tokenizer, seed=0)

* ``build_char_tokenizer()`` makes a character-level tokenizer (Hugging Face ``tokenizers``
  WordLevel over the task alphabet, wrapped as a ``PreTrainedTokenizerFast``), so nothing is
  downloaded. ``<eos>`` ends a response, ``<pad>`` pads.
* ``build_tiny_model(cfg, tokenizer)`` instantiates ``Qwen3ForCausalLM`` from a small config.

Loading a policy from a directory (``load_policy``, ``resolve_device``) is policy/model.py, shared
with the evaluators. transformers is imported inside the functions that need it, never at module
import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from evaluators.rewards import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN
from evaluators.tasks import VOCAB_CHARS
from trainers.local.config import TOKENIZERS, LocalConfig

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast, Qwen3ForCausalLM

PAD, EOS = "<pad>", "<eos>"
MAX_POSITIONS = 512


RESPONSE_TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)  # the format reward's tags


def build_char_tokenizer(kind: str = "char") -> PreTrainedTokenizerFast:
    """One token per character of the task alphabet, plus <pad> (id 0) and <eos> (id 1).

    ``kind='char_tags'`` also makes each of the four response tags one token (after the
    characters' ids), as Qwen3's tokenizer has <think> and </think>: a response is then
    about half as many tokens, nearly all of the removed ones certain to the policy.
    """
    from transformers import PreTrainedTokenizerFast

    if kind not in TOKENIZERS:
        raise ValueError(f"local.tokenizer: expected one of {list(TOKENIZERS)}, got {kind!r}")
    chars = sorted(set(VOCAB_CHARS))
    vocab = {PAD: 0, EOS: 1} | {c: i + 2 for i, c in enumerate(chars)}
    pattern = "."
    if kind == "char_tags":
        vocab |= {tag: len(vocab) + i for i, tag in enumerate(RESPONSE_TAGS)}
        pattern = "|".join(RESPONSE_TAGS) + "|."  # a tag wins over its first character
    tok = Tokenizer(models.WordLevel(vocab, unk_token=PAD))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS)


def build_tiny_model(cfg: LocalConfig, tokenizer: PreTrainedTokenizerFast, seed: int) -> Qwen3ForCausalLM:
    """A randomly initialised Qwen3-architecture causal LM (deterministic from ``seed``)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        head_dim=cfg.hidden_size // cfg.num_heads,
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Qwen3ForCausalLM(config)
