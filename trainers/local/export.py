"""A local-trainer checkpoint as a Hugging Face model directory (the backend's checkpoint hooks).

    is_checkpoint(path)                                 # path/trainer_state.pt exists
    export_hf(path, out_dir, trial_config, log)         # out_dir/model.safetensors + config, tokenizer

A checkpoint holds the trainer's state (checkpoint.py), not a model directory: its model state
dict goes on top of the trial's base model (the tiny Qwen3 of the trial config, rebuilt from the
warm-start cache, warmstart.py), written as ``model.safetensors`` next to the base's config and
tokenizer files. That needs the trial's config: ``trial_config()`` returns it (or raises, saying
how to give it). trainers/backends.py names these hooks; trial_eval/checkpoints.py calls them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

from trainers.local.checkpoint import STATE_FILE

WEIGHT_SUFFIXES = (".safetensors", ".bin")  # the base's weight files: not copied, replaced by the trained ones


def is_checkpoint(path: Path) -> bool:
    """Whether directory ``path`` is a checkpoint the local trainer reported."""
    return (Path(path) / STATE_FILE).is_file()


def export_hf(checkpoint: Path, out_dir: Path, trial_config: Callable[[], object], log=print) -> None:
    """Write checkpoint ``checkpoint`` into the (empty) directory ``out_dir`` as a Hugging Face model."""
    import torch
    from safetensors.torch import save_file

    from trainers.local.checkpoint import read_state
    from trainers.local.data import load_data
    from trainers.local.warmstart import ensure_base_checkpoint

    cfg = trial_config()
    train, _ = load_data(cfg)
    base = ensure_base_checkpoint(cfg, train, log)
    state = read_state(checkpoint, "cpu")["model"]
    config = json.loads((base / "config.json").read_text())
    for f in base.iterdir():  # config, tokenizer, generation config: everything but the weights
        if f.is_file() and f.suffix not in WEIGHT_SUFFIXES and not f.name.endswith(".index.json"):
            shutil.copy2(f, out_dir / f.name)
    tensors = {k: v.detach().to(torch.float32 if v.is_floating_point() else v.dtype).contiguous().clone()
               for k, v in state.items()}
    if config.get("tie_word_embeddings"):  # safetensors refuses shared storage; HF re-ties on load
        tensors.pop("lm_head.weight", None)
    save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
