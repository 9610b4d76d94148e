"""Any trained checkpoint -> a Hugging Face model directory that both generation backends load.

    model_dir = materialize(path, out_dir, trial_config=cfg)   # cached: done once per checkpoint

Accepted checkpoints (``checkpoint_kind``):

* ``hf``     a directory with ``config.json`` and weights (``*.safetensors`` / ``*.bin``): used as is.
* a trainer backend's name (``local``, ``verl``): a directory that backend's ``is_checkpoint`` hook
  accepts (trainers/backends.py), exported by its ``export_hf`` hook: trainers/local/export.py puts
  the checkpoint's model state on the trial's base model, which needs the trial config (``trial.json``
  in the checkpoint, written by the sweep, or the caller's); trainers/verl_backend/export.py merges
  the actor with verl's own tool (``python -m verl.model_merger merge --backend fsdp``, also on CPU).

A materialized directory is written to a temporary name and renamed when complete, so an interrupted
export is redone, never half-used.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from contract.run_layout import TRIAL_FILE  # the trial config, written into every checkpoint a sweep trial reports
from trainers.api import CheckpointNotUsable
from trainers.backends import backend_names, get_backend

__all__ = ["TRIAL_FILE", "CheckpointNotUsable", "checkpoint_kind", "materialize", "read_trial_config"]

WEIGHT_SUFFIXES = (".safetensors", ".bin")


def checkpoint_kind(path: Path) -> str:
    """'hf' or the name of the backend whose checkpoint it is (see the module docstring); raises
    CheckpointNotUsable otherwise."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointNotUsable(f"{path}: not a directory")
    if (path / "config.json").is_file() and any(p.suffix in WEIGHT_SUFFIXES for p in path.iterdir()):
        return "hf"
    backends = [get_backend(name) for name in backend_names()]  # plug-ins' too
    for backend in backends:
        accepts = backend.is_checkpoint
        if accepts is not None and accepts(path):
            return backend.name
    forms = [b.checkpoints for b in backends if b.checkpoints]
    expected = ", ".join(["a Hugging Face model directory (config.json + *.safetensors)"] + forms[:-1])
    raise CheckpointNotUsable(f"{path}: not a checkpoint; expected {expected}" + (f" or {forms[-1]}" if forms else ""))


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

    def config():  # asked for only by a backend that needs it (the local trainer's base model)
        cfg = trial_config or read_trial_config(path)
        if cfg is None:
            raise CheckpointNotUsable(f"{path}: a {kind}-trainer checkpoint without {TRIAL_FILE}; evaluate it by "
                                      "its trial id (sweep eval TRIAL_ID) so the trial's config is known")
        return cfg

    tmp = Path(tempfile.mkdtemp(prefix=".model-", dir=target.parent))
    try:
        get_backend(kind).export_hf(path, tmp, config, log)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
