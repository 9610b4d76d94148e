"""Any trained checkpoint -> a Hugging Face model directory that both generation backends load.

    model_dir = materialize(path, out_dir, trial_config=cfg)   # cached: done once per checkpoint

Accepted checkpoints (``checkpoint_kind``):

* ``hf``     a directory with ``config.json`` and weights (``*.safetensors`` / ``*.bin``): used as is.
* ``local``  a local-trainer checkpoint (``trainer_state.pt``, trainers/local/checkpoint.py): its model
             state dict on top of the trial's base model (the tiny Qwen3 of the trial config, rebuilt
             from the warm-start cache), written as ``model.safetensors`` next to the base's config and
             tokenizer files. Needs the trial config (``trial.json`` in the checkpoint, written by the
             sweep, or the caller's).
* ``verl``   verl's ``global_step_N`` (or its ``actor/``), or our pointer directory
             (``verl_checkpoint.json``): merged with verl's own tool
             (``python -m verl.model_merger merge --backend fsdp``), which also works on CPU.

A materialized directory is written to a temporary name and renamed when complete, so an interrupted
export is redone, never half-used.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TRIAL_FILE = "trial.json"  # the trial config, written into every checkpoint a sweep trial reports
VERL_POINTER = "verl_checkpoint.json"  # trainers/verl_backend/train.py POINTER
WEIGHT_SUFFIXES = (".safetensors", ".bin")


class CheckpointNotUsable(ValueError):
    """A path that is no checkpoint we can evaluate; the message says what was expected."""


def checkpoint_kind(path: Path) -> str:
    """'hf', 'local' or 'verl' (see the module docstring); raises CheckpointNotUsable otherwise."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointNotUsable(f"{path}: not a directory")
    if (path / "config.json").is_file() and any(p.suffix in WEIGHT_SUFFIXES for p in path.iterdir()):
        return "hf"
    if (path / "trainer_state.pt").is_file():
        return "local"
    if (path / VERL_POINTER).is_file() or (path / "actor").is_dir() or (path / "huggingface").is_dir():
        return "verl"
    raise CheckpointNotUsable(
        f"{path}: not a checkpoint; expected a Hugging Face model directory (config.json + *.safetensors), a "
        "local-trainer checkpoint (trainer_state.pt) or a verl checkpoint (global_step_N/ or verl_checkpoint.json)")


def read_trial_config(checkpoint: Path):
    """The TrialConfig stored beside a sweep checkpoint (``trial.json``), or None."""
    from trainers.config import TrialConfig

    f = Path(checkpoint) / TRIAL_FILE
    return TrialConfig.from_dict(json.loads(f.read_text()), str(f)) if f.is_file() else None


def materialize(path: Path, out_dir: Path, trial_config=None, log=print) -> Path:
    """A Hugging Face model directory for checkpoint `path` (itself for 'hf'; else built under `out_dir`)."""
    path = Path(path)
    kind = checkpoint_kind(path)
    if kind == "hf":
        return path
    target = Path(out_dir) / "model"
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".model-", dir=target.parent))
    try:
        if kind == "local":
            cfg = trial_config or read_trial_config(path)
            if cfg is None:
                raise CheckpointNotUsable(f"{path}: a local-trainer checkpoint without {TRIAL_FILE}; evaluate it by "
                                          "its trial id (sweep eval TRIAL_ID) so the trial's config is known")
            _export_local(cfg, path, tmp, log)
        else:
            _merge_verl(_verl_actor_dir(path), tmp, log)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _export_local(cfg, checkpoint: Path, out: Path, log) -> None:
    import torch
    from safetensors.torch import save_file

    from trainers.local.checkpoint import read_state
    from trainers.local.data import load_data
    from trainers.local.warmstart import ensure_base_checkpoint

    train, _ = load_data(cfg)
    base = ensure_base_checkpoint(cfg, train, log)
    state = read_state(checkpoint, "cpu")["model"]
    config = json.loads((base / "config.json").read_text())
    for f in base.iterdir():  # config, tokenizer, generation config: everything but the weights
        if f.is_file() and f.suffix not in WEIGHT_SUFFIXES and not f.name.endswith(".index.json"):
            shutil.copy2(f, out / f.name)
    tensors = {k: v.detach().to(torch.float32 if v.is_floating_point() else v.dtype).contiguous().clone()
               for k, v in state.items()}
    if config.get("tie_word_embeddings"):  # safetensors refuses shared storage; HF re-ties on load
        tensors.pop("lm_head.weight", None)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})


def _verl_actor_dir(path: Path) -> Path:
    if (path / VERL_POINTER).is_file():
        path = Path(json.loads((path / VERL_POINTER).read_text())["path"])
    actor = path / "actor" if (path / "actor").is_dir() else path
    if not (actor / "huggingface" / "config.json").is_file():
        raise CheckpointNotUsable(f"{actor}: a verl checkpoint needs actor/huggingface/config.json (verl writes it "
                                  "with every checkpoint)")
    return actor


def _merge_verl(actor: Path, out: Path, log) -> None:
    log(f"merging verl checkpoint {actor} into a Hugging Face model (python -m verl.model_merger)")
    cmd = [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp", "--local_dir", str(actor),
           "--target_dir", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not (out / "config.json").is_file():
        tail = (done.stderr or done.stdout)[-2000:]
        raise RuntimeError(f"verl model merger failed on {actor} (exit {done.returncode}):\n{tail}")
