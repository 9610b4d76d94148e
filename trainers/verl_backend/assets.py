"""Local assets for verl runs, built without downloads: a tiny Qwen3 checkpoint (RL parquet: parquet.py).

    model_dir = tiny_qwen3(Path(".cache/verl_assets"))          # HF dir: config, weights, tokenizer

Tiny Qwen3 (``tiny_qwen3``)
    A ``Qwen3ForCausalLM`` (~100k parameters by default), randomly initialised and then, with
    ``warm_start_steps > 0``, warm-started into a base policy (below), saved with
    ``save_pretrained`` (config.json, model.safetensors, generation_config.json) next to a
    character-level tokenizer (``tokenizers`` WordLevel, one token per character: newline plus
    printable ASCII, so any task prompt and user JSONL in ASCII round-trips; other characters
    become ``<unk>``) wrapped as ``PreTrainedTokenizerFast`` and saved the same way, so
    ``AutoTokenizer.from_pretrained`` loads it. Special tokens follow Qwen's ChatML so verl's
    Qwen Continuous-Token builder accepts the tokenizer (it needs ``<|im_end|>`` and a one-token
    newline): ``<|endoftext|>`` pads (id 0), ``<|im_start|>`` opens a turn, ``<|im_end|>`` ends a
    turn and is the EOS. The chat template renders
    ``<|im_start|>user\\nQ: 12+7=?<|im_end|>\\n<|im_start|>assistant\\n`` (RLHFDataset applies it).
    Warm start: ``warm_start_steps`` supervised steps (trainers.local.warmstart.warm_start: AdamW,
    lr WARM_START["lr"], batch WARM_START["batch_size"], a WARM_START["answer_noise"] share of targets
    with a wrong final answer) on the reference solutions of ``make_split("train", WARM_START["train_size"],
    WARM_START["train_seed"])``, in the exact token format verl feeds and scores: the chat-templated
    prompt (add_generation_prompt=True, as RLHFDataset renders it), then the solution and ``<|im_end|>``
    (the EOS), loss on the response only. Like the local backend's base, it solves some but not all
    easy problems, so RL gets non-zero rewards and gradients; ``warm_start_steps=0`` keeps the random
    model. Deterministic (fixed seeds, torch RNG forked).
    The default base (``VerlConfig.tiny_warm_start_steps`` steps on TINY_DEFAULTS) is shipped in the repository
    (trainers/verl_backend/bases/, trainers/verl_backend/shipped_base.py) and copied into the cache, not built.
    The directory name carries a hash of everything that defines it (sizes, seed, vocabulary,
    template, warm-start settings, ASSET_VERSION), so a changed spec builds a new directory and an unchanged one is
    reused without rebuilding. It is written to a temporary directory next to it and moved into
    place with ``os.replace``: readers never see a half-written checkpoint, and when two processes
    race, the first rename wins and the other's copy is discarded.

RL parquet
    The verl RL parquet files (``rl_parquet``, ``problems_to_parquet``, ``jsonl_to_parquet``,
    ``as_rl_parquet``, ``write_verl_parquet``) are built by trainers/verl_backend/parquet.py, which documents
    their rows; the names are re-exported here for older imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from trainers.verl_backend.parquet import (  # noqa: F401  (moved there; re-exported for older imports)
    ABILITY, as_rl_parquet, jsonl_to_parquet, problem_rows, problems_to_parquet, rl_parquet, write_verl_parquet,
)

ASSET_VERSION = 2
"""Bump when the way the checkpoint is built changes (the hash, hence the directory, changes too)."""
ASSET_MARKER = "zoo_asset.json"
"""Written last into a built checkpoint (its spec): a directory without it is incomplete."""
SHIPPED_DIR = Path(__file__).resolve().parent / "bases"
"""The checkpoints the repository ships (trainers/verl_backend/shipped_base.py): copied into the cache, not built."""
SHIPPED_RECIPE = "RECIPE.json"

PAD, IM_START, IM_END, UNK = "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"
SPECIAL_TOKENS = (PAD, IM_START, IM_END, UNK)
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))
"""One token per character: newline and printable ASCII (covers evaluators.tasks.VOCAB_CHARS)."""
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MAX_POSITIONS = 512
TINY_DEFAULTS = {"hidden_size": 64, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "intermediate_size": 192, "seed": 0}
WARM_START = {"lr": 3e-3, "batch_size": 32, "answer_noise": 0.4, "train_size": 4000, "train_seed": 0}
"""Fixed settings of the warm start (trainers.local.warmstart's defaults); part of the cache key."""
WARM_START_THREADS = 1
"""torch threads of the warm start (fixed: reproducible results, and it runs beside other work)."""


# --------------------------------------------------------------------------- tiny Qwen3

def build_tokenizer(vocab_size: int | None = None):
    """The character-level ChatML tokenizer of the tiny Qwen3 (a PreTrainedTokenizerFast); with
    ``vocab_size``, its vocabulary filled up to that many ids with ``<|reserved_N|>`` tokens (text never
    encodes to them; a model with that many embedding rows can emit them, and they decode)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokens = list(SPECIAL_TOKENS) + list(CHARS)
    if vocab_size is not None:
        if vocab_size < len(tokens):
            raise ValueError(f"build_tokenizer: vocab_size must be at least {len(tokens)}, got {vocab_size}")
        tokens += [f"<|reserved_{i}|>" for i in range(vocab_size - len(tokens))]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # every char, newline too
    tok.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=PAD, eos_token=IM_END, unk_token=UNK, additional_special_tokens=[IM_START],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _spec(sizes: Mapping[str, int], warm_start_steps: int = 0) -> dict:
    warm = {"steps": warm_start_steps, **WARM_START} if warm_start_steps else None
    return {"version": ASSET_VERSION, "chars": CHARS, "specials": SPECIAL_TOKENS, "template": CHAT_TEMPLATE,
            "max_positions": MAX_POSITIONS, "warm_start": warm, **sizes}


def chat_prompt(tokenizer, prompt: str) -> str:
    """``prompt`` as verl's RLHFDataset renders it: one user turn, chat template, generation prompt."""
    return tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                         tokenize=False)


def warm_start_tiny(model, tokenizer, steps: int, log=print, stop_after: int | None = None) -> None:
    """Supervised warm start of ``model`` in place (see the module docstring), through
    trainers.local.warmstart.warm_start on problems whose prompt is the chat-templated prompt; ``stop_after``:
    only that many of its ``steps`` (the same schedule: the prefix trainers/verl_backend/shipped_base.py checks)."""
    import dataclasses

    import torch

    from evaluators.tasks import make_split
    from trainers.config import TrialConfig
    from trainers.local.config import WarmStartConfig
    from trainers.local.warmstart import warm_start

    cfg = TrialConfig()
    cfg.local.warm_start = WarmStartConfig(steps=steps, lr=WARM_START["lr"], batch_size=WARM_START["batch_size"],
                                           answer_noise=WARM_START["answer_noise"])
    problems = [dataclasses.replace(p, prompt=chat_prompt(tokenizer, p.prompt))
                for p in make_split("train", WARM_START["train_size"], WARM_START["train_seed"])]
    threads = torch.get_num_threads()
    torch.set_num_threads(WARM_START_THREADS)
    try:
        warm_start(model, tokenizer, problems, cfg, log, stop_after=stop_after)
    finally:
        torch.set_num_threads(threads)


def _build_model_dir(out: Path, sizes: Mapping[str, int], warm_start_steps: int = 0, log=print) -> None:
    model, tokenizer = build_tiny_model(sizes, warm_start_steps, log)
    save_model_dir(out, model, tokenizer, _spec(sizes, warm_start_steps))


def build_tiny_model(sizes: Mapping[str, int], warm_start_steps: int = 0, log=print, stop_after: int | None = None):
    """The tiny Qwen3 of ``sizes`` and its tokenizer in memory, warm-started (the first ``stop_after`` steps only,
    when given): what ``tiny_qwen3`` saves."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_tokenizer()
    # Not trainers.local.model.build_tiny_model: that one forks the RNG around the initialisation,
    # while the warm start here continues the same seeded stream (cached bases keep their hash).
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=sizes["hidden_size"],
        intermediate_size=sizes["intermediate_size"],
        num_hidden_layers=sizes["num_layers"],
        num_attention_heads=sizes["num_heads"],
        num_key_value_heads=sizes["num_kv_heads"],
        head_dim=sizes["hidden_size"] // sizes["num_heads"],
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(sizes["seed"])
        model = Qwen3ForCausalLM(config)
        if warm_start_steps:
            warm_start_tiny(model, tokenizer, warm_start_steps, log, stop_after)
    return model, tokenizer


def save_model_dir(out: Path, model, tokenizer, spec: Mapping) -> None:
    """``model`` (a generation config of the tokenizer's EOS and pad, no BOS) and ``tokenizer`` saved in Hugging
    Face format into ``out``, then ``spec`` as ASSET_MARKER, last: a directory with it is complete."""
    from transformers import GenerationConfig
    from transformers.utils import logging as hf_logging

    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(out)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    tokenizer.save_pretrained(out)
    (out / ASSET_MARKER).write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")


def tiny_qwen3(cache_dir: Path, warm_start_steps: int = 0, log=print, **sizes: int) -> Path:
    """Directory of a tiny Qwen3 HF checkpoint + tokenizer under ``cache_dir``, built once.

    ``warm_start_steps`` > 0 warm-starts it into a base policy (module docstring; 0: random init).
    ``sizes`` may override TINY_DEFAULTS (hidden_size, num_layers, num_heads, num_kv_heads,
    intermediate_size, seed). Reused when the directory for the same spec exists. ``log`` gets the
    warm start's progress lines.
    """
    if not isinstance(warm_start_steps, int) or warm_start_steps < 0:
        raise ValueError(f"tiny_qwen3: warm_start_steps must be an integer >= 0, got {warm_start_steps!r}")
    unknown = sorted(set(sizes) - set(TINY_DEFAULTS))
    if unknown:
        raise ValueError(f"tiny_qwen3: unknown size keys {unknown}; expected some of {sorted(TINY_DEFAULTS)}")
    sizes = {**TINY_DEFAULTS, **sizes}
    if sizes["hidden_size"] % sizes["num_heads"] or sizes["num_heads"] % sizes["num_kv_heads"]:
        raise ValueError(f"tiny_qwen3: hidden_size must divide by num_heads and num_heads by num_kv_heads: {sizes}")
    final = Path(cache_dir).resolve() / f"tiny-qwen3-{spec_key(_spec(sizes, warm_start_steps))}"
    shipped = SHIPPED_DIR / final.name
    if (shipped / ASSET_MARKER).is_file():  # the repository ships it (shipped_base.py): copied, not built
        return build_once(final, lambda out: _copy_files(shipped, out))
    return build_once(final, lambda out: _build_model_dir(out, sizes, warm_start_steps, log))


def _copy_files(source: Path, out: Path) -> None:
    """The checkpoint's files (not shipped_base.py's RECIPE.json), the marker last."""
    for path in sorted(source.iterdir(), key=lambda p: p.name == ASSET_MARKER):
        if path.is_file() and path.name != SHIPPED_RECIPE:
            shutil.copyfile(path, out / path.name)


def spec_key(spec: Mapping) -> str:
    """12 hex digits of a checkpoint spec's hash: the suffix of its cache directory."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def build_once(final: Path, build: Callable[[Path], None]) -> Path:
    """``final``, built by ``build(tmp)`` into a temporary directory beside it and moved into place
    (module docstring) unless a complete copy, one with ``zoo_asset.json``, is already there."""
    if (final / ASSET_MARKER).is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        build(tmp)
        try:
            os.replace(tmp, final)
        except OSError:  # another process put a complete copy there first
            if not (final / ASSET_MARKER).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final
