"""Randomly initialised checkpoints of real model shapes, built from their configuration (no download).

    python -m trainers.verl_backend.shaped_model qwen3-0.6b --cache-dir .cache/verl/models
    python -m trainers.verl_backend.shaped_model qwen3-1.7b --plan     # sizes only, nothing built
    python -m trainers.verl_backend.shaped_model --smoke               # 2 layers, 1,024 ids: built, loaded, checked

In a verl spec, ``verl.random_model: qwen3-0.6b`` (with ``model.path`` null) makes every trial start from
this checkpoint (configs/sweeps/verl_gpu_realsize.yaml). The compute, memory and bytes on disk are the real
model's; the weights are random, so the reward stays near 0 and responses run to the length cap.

Shapes (``SHAPES``): the published ``config.json`` of Qwen3-0.6B and Qwen3-1.7B (hidden size, MLP width,
layers, query and key/value heads, head_dim 128, 151,936-row embedding tied to the output, RoPE theta 1e6,
40,960 positions). Parameters: 596,049,920 and 1,720,574,976 (``parameter_count``).

Tokenizer: the tiny Qwen3's character-level ChatML tokenizer (assets.build_tokenizer), its vocabulary
filled up to the embedding's rows with ``<|reserved_N|>`` tokens, so every id a random policy samples
decodes (detokenisers fail on an id the tokenizer does not have); text still encodes one token per
character, so the synthetic task's prompts are short.

Weights: transformers' own initialisation (normal, std 0.02) after ``torch.manual_seed(seed)``, in float32,
then saved in bfloat16 (the real checkpoints' dtype) with ``save_pretrained``. The directory
``<shape>-random-<hash>`` under the cache directory is built once (assets.build_once: written beside,
moved into place) and reused; the hash covers the shape, seed, tokenizer and ASSET_VERSION.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainers.verl_backend import assets

_QWEN3_COMMON = {"head_dim": 128, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
                 "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1.0e6, "rms_norm_eps": 1e-6,
                 "tie_word_embeddings": True}
SHAPES = {
    "qwen3-0.6b": {"hidden_size": 1024, "intermediate_size": 3072, **_QWEN3_COMMON},
    "qwen3-1.7b": {"hidden_size": 2048, "intermediate_size": 6144, **_QWEN3_COMMON},
}
"""Named shapes: Qwen3Config fields of the published checkpoints."""
SMOKE = {"num_hidden_layers": 2, "vocab_size": 1024}
"""What ``--smoke`` changes in a shape: a build in seconds that goes through every step."""
BYTES_PER_PARAMETER = 2
"""bfloat16 on disk."""


def shape_of(name: str, **changes) -> dict:
    """The Qwen3Config fields of shape ``name`` with ``changes``; ValueError naming the known shapes."""
    if name not in SHAPES:
        raise ValueError(f"unknown model shape {name!r}; expected one of {sorted(SHAPES)}")
    unknown = sorted(set(changes) - set(SHAPES[name]))
    if unknown:
        raise ValueError(f"shape {name!r}: unknown fields {unknown}; expected some of {sorted(SHAPES[name])}")
    return {**SHAPES[name], **changes}


def parameter_count(shape: dict) -> int:
    """Parameters of a shape, counted on the meta device (no memory, no time); tied embeddings once."""
    import torch
    from transformers import Qwen3ForCausalLM

    with torch.device("meta"):
        model = Qwen3ForCausalLM(_config(shape, pad_id=0, eos_id=0))
    return sum(p.numel() for p in model.parameters())


def model_dir(cache_dir: Path, name: str, seed: int = 0, **changes) -> Path:
    """Where shape ``name`` (with ``changes``) and ``seed`` is, or will be, built under ``cache_dir``."""
    return Path(cache_dir).resolve() / f"{name}-random-{assets.spec_key(_spec(shape_of(name, **changes), seed))}"


def build(cache_dir: Path, name: str, seed: int = 0, log=print, **changes) -> Path:
    """The directory of shape ``name`` with random weights (module docstring), built once under ``cache_dir``."""
    shape = shape_of(name, **changes)
    final = model_dir(cache_dir, name, seed, **changes)
    if not (final / assets.ASSET_MARKER).is_file():
        log(f"building {final.name}: {size_text(shape)}, random weights")
    return assets.build_once(final, lambda out: _build(out, shape, seed))


def size_text(shape: dict) -> str:
    """'596,049,920 parameters, 1.19 GB in bfloat16' for a shape (counted once, on the meta device)."""
    n = parameter_count(shape)
    return f"{n:,} parameters, {n * BYTES_PER_PARAMETER / 1e9:.2f} GB in bfloat16"


def _spec(shape: dict, seed: int) -> dict:
    return {"version": assets.ASSET_VERSION, "shape": shape, "seed": seed, "chars": assets.CHARS,
            "specials": assets.SPECIAL_TOKENS, "template": assets.CHAT_TEMPLATE, "weights": "bfloat16"}


def _config(shape: dict, pad_id: int, eos_id: int):
    from transformers import Qwen3Config

    fields = {k: v for k, v in shape.items() if k != "rope_theta"}
    return Qwen3Config(**fields, rope_parameters={"rope_type": "default", "rope_theta": shape["rope_theta"]},
                       pad_token_id=pad_id, eos_token_id=eos_id, bos_token_id=None)


def _build(out: Path, shape: dict, seed: int) -> None:
    import torch
    from transformers import Qwen3ForCausalLM

    tokenizer = assets.build_tokenizer(vocab_size=shape["vocab_size"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(_config(shape, tokenizer.pad_token_id, tokenizer.eos_token_id))
    assets.save_model_dir(out, model.to(torch.bfloat16), tokenizer, _spec(shape, seed))


def smoke(name: str, log=print) -> str:
    """Build shape ``name`` with SMOKE's changes in a temporary directory under the working directory,
    load it back and check it; the directory is removed. Returns the line it prints."""
    import tempfile

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    with tempfile.TemporaryDirectory(prefix=".shaped-model-smoke-", dir=".") as tmp:
        where = build(Path(tmp), name, log=log, **SMOKE)
        model = AutoModelForCausalLM.from_pretrained(where)
        tokenizer = AutoTokenizer.from_pretrained(where)
        shape = shape_of(name, **SMOKE)
        n = sum(p.numel() for p in model.parameters())
        checks = {
            "bfloat16 weights": model.dtype == torch.bfloat16,
            "the shape's config": all(getattr(model.config, k) == v for k, v in shape.items() if k != "rope_theta"),
            "the counted parameters": n == parameter_count(shape),
            "a token per embedding row": len(tokenizer) == shape["vocab_size"],
            "every id decodes": all(tokenizer.decode([i]) for i in range(shape["vocab_size"])),
            "text one token per character": tokenizer.encode("12+7", add_special_tokens=False)
            == [tokenizer.convert_tokens_to_ids(c) for c in "12+7"],
        }
    failed = [what for what, ok in checks.items() if not ok]
    if failed:
        raise RuntimeError(f"smoke of {name}: not as built: {failed}")
    return (f"smoke ok: {name} with {SMOKE['num_hidden_layers']} layers and {SMOKE['vocab_size']:,} ids: "
            f"{n:,} parameters built, loaded back in bfloat16, every id decodes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainers.verl_backend.shaped_model",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shape", nargs="?", default="qwen3-0.6b", help=f"one of {sorted(SHAPES)} (default: %(default)s)")
    parser.add_argument("--cache-dir", default=".cache/verl/models",
                        help="where the checkpoint is built (default: %(default)s, verl.cache_dir's models/)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default: %(default)s)")
    parser.add_argument("--plan", action="store_true", help="print the directory and sizes; build nothing")
    parser.add_argument("--smoke", action="store_true",
                        help=f"build the shape with {SMOKE} in a temporary directory, load it back, check it")
    args = parser.parse_args(argv)
    if args.shape not in SHAPES:
        parser.error(f"unknown model shape {args.shape!r}; expected one of {sorted(SHAPES)}")
    if args.smoke:
        print(smoke(args.shape))
        return 0
    print(f"{args.shape}: {size_text(SHAPES[args.shape])} -> {model_dir(Path(args.cache_dir), args.shape, args.seed)}")
    if not args.plan:
        print(build(Path(args.cache_dir), args.shape, args.seed, log=lambda line: None))  # the size is printed above
    return 0


if __name__ == "__main__":
    sys.exit(main())
