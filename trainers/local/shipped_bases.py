"""The base policies the repository ships: the shipped studies' starting checkpoints, committed as what they
stand for, the pretrained model an RL study starts from.

``trainers/local/bases/<key>/`` is a Hugging Face directory (``save_pretrained`` model + tokenizer) with
the cache's ``READY`` file and a ``RECIPE.json``; ``<key>`` is ``warmstart.base_key`` of the trial configs
it serves. A trial whose base key is shipped starts from that directory and nothing is built; any other
base (other shapes, tokenizers, warm starts, a user's model) is built once into
``local.warm_start.cache_dir`` (trainers/local/warmstart.py).

``RECIPE.json`` says how the bytes were made and lets a test check that the recipe still makes them:

    {"key": ..., "args": [overrides of `python -m trainers.local.warmstart`], "weights_sha1": ...,
     "probe_steps": 50, "probe_sha1": sha1 of the weights after the recipe's first 50 warm-start steps, ...}

    python -m trainers.local.warmstart --ship                         # rebuild the default study's base (minutes)
    python -m trainers.local.warmstart --ship local.tokenizer=char_tags   # objective_dynamics.yaml's
    python -m trainers.local.warmstart --check-shipped                # each shipped base's probe, rebuilt (seconds)

This module only finds and describes them (no torch): building and checking are warmstart's.
"""

from __future__ import annotations

import json
from pathlib import Path

SHIPPED_DIR = Path(__file__).resolve().parent / "bases"
RECIPE_FILE = "RECIPE.json"
PROBE_STEPS = 50
"""Warm-start steps of the recipe rebuilt to check a shipped base (its full build takes minutes on 2 cores)."""


def shipped_base(key: str) -> Path | None:
    """The shipped base directory of this base key, or None when the repository does not ship it."""
    path = SHIPPED_DIR / key
    return path if (path / "READY").is_file() and (path / RECIPE_FILE).is_file() else None


def shipped_keys() -> list[str]:
    """The base keys the repository ships, sorted."""
    return sorted(p.parent.name for p in SHIPPED_DIR.glob(f"*/{RECIPE_FILE}") if (p.parent / "READY").is_file())


def recipe(key: str) -> dict:
    """A shipped base's RECIPE.json (KeyError naming the key when it is not shipped)."""
    path = shipped_base(key)
    if path is None:
        raise KeyError(f"no shipped base {key} under {SHIPPED_DIR} (shipped: {', '.join(shipped_keys()) or 'none'})")
    return json.loads((path / RECIPE_FILE).read_text())


def state_sha1(model) -> str:
    """sha1 of a model's parameters and buffers in memory (name order, raw bytes): the probe's fingerprint."""
    import hashlib

    digest = hashlib.sha1()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()
