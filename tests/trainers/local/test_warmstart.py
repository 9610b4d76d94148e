"""The base policy's cache key and the tiny model's tokenizer option (local.tokenizer: char | char_tags)."""

from __future__ import annotations

import pytest

from evaluators.tasks import make_split
from trainers.config import ConfigError, load_trial_config
from policy.lean_checkpoint import LeanTokenizer
from trainers.local.model import RESPONSE_TAGS, build_char_tokenizer
from trainers.local.warmstart import base_key


def test_native_base_key_is_unchanged_by_the_tokenizer_and_numerics_options():
    # Bases cached before local.tokenizer and local.numerics existed (native kernels) stay valid: their
    # defaults are not hashed; the reproducible mode (the default) builds its own base.
    native = ["local.numerics=native"]
    assert base_key(load_trial_config(None, native)) == "dd4cc49ab7df5f3d"
    assert base_key(load_trial_config(None, [*native, "local.tokenizer=char_tags"])) != "dd4cc49ab7df5f3d"
    assert base_key(load_trial_config(None, [])) != "dd4cc49ab7df5f3d"


def test_tokenizer_option_is_validated():
    with pytest.raises(ConfigError, match=r"local.tokenizer: expected 'char' or 'char_tags', got 'bpe'"):
        load_trial_config(None, ["local.tokenizer=bpe"])
    with pytest.raises(ValueError, match="local.tokenizer"):
        build_char_tokenizer("bpe")


def test_char_tags_makes_each_tag_one_token_and_round_trips(tmp_path):
    chars, tags = build_char_tokenizer(), build_char_tokenizer("char_tags")
    assert len(tags) == len(chars) + 4
    assert chars.get_vocab().items() <= tags.get_vocab().items()  # the characters keep their ids
    for p in make_split("train", 50, seed=0):
        text = p.prompt + p.solution
        by_char, by_tag = chars.encode(text, add_special_tokens=False), tags.encode(text, add_special_tokens=False)
        assert len(by_char) == len(text)
        assert len(by_tag) == len(text) - sum(len(t) - 1 for t in RESPONSE_TAGS)  # each tag once per solution
        assert tags.decode(by_tag) == text
    # a tag split by other text, or a partial tag, stays characters
    assert tags.encode("<thin>", add_special_tokens=False) == chars.encode("<thin>", add_special_tokens=False)
    # saved and read back by the trainer's lean loader: the same ids
    tags.save_pretrained(tmp_path)
    lean = LeanTokenizer.from_directory(tmp_path)
    text = "Q: 3+4=?<think>3+4=7</think><answer>7</answer>"
    assert lean.encode(text) == tags.encode(text, add_special_tokens=False) and lean.decode(lean.encode(text)) == text
    assert lean.eos_token_id == tags.eos_token_id == 1


@pytest.mark.slow  # two warm starts of a larger tiny model
def test_the_base_is_the_same_whatever_thread_count_the_caller_has(tmp_path):
    """The warm start's float sums depend on torch's thread count: a base built by a process with 2
    threads (sweep eval, a test, a benchmark) once differed from a trainer's (local.threads: 1) under
    the same cache key, and every later trial and golden value silently changed with it."""
    import hashlib

    import torch

    from trainers.local.data import load_data
    from trainers.local.warmstart import ensure_base_checkpoint

    def build(threads: int, cache: str) -> str:
        cfg = load_trial_config(None, [f"local.warm_start.cache_dir={tmp_path / cache}", "local.warm_start.steps=30",
                                       "local.hidden_size=128", "local.intermediate_size=512"])
        torch.set_num_threads(threads)
        try:
            base = ensure_base_checkpoint(cfg, load_data(cfg)[0], log=lambda s: None)
            assert torch.get_num_threads() == threads  # the caller's setting is given back
        finally:
            torch.set_num_threads(before)
        return hashlib.sha1((base / "model.safetensors").read_bytes()).hexdigest()

    before = torch.get_num_threads()
    assert build(1, "one") == build(4, "four")
