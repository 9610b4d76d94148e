"""A verl checkpoint as a Hugging Face model directory (the backend's checkpoint hooks).

    is_checkpoint(path)                                 # global_step_N/, its actor/, or a pointer dir
    export_hf(path, out_dir, trial_config, log)         # python -m verl.model_merger merge --backend fsdp

Accepted: verl's own ``global_step_N`` (or its ``actor/``), or the pointer directory a trial
reports (``verl_checkpoint.json``, train.py POINTER, naming the ``global_step_N`` it stands for).
The actor is merged with verl's own tool, which also works on CPU; the trial config is not needed
(``actor/huggingface/`` holds the model's config and tokenizer). trainers/backends.py names these
hooks; trial_eval/checkpoints.py calls them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

from trainers.api import CheckpointNotUsable
from trainers.verl_backend.train import POINTER


def is_checkpoint(path: Path) -> bool:
    """Whether directory ``path`` is a verl checkpoint or a pointer to one."""
    path = Path(path)
    return (path / POINTER).is_file() or (path / "actor").is_dir() or (path / "huggingface").is_dir()


def actor_dir(path: Path) -> Path:
    """The ``actor/`` directory a checkpoint (or pointer) stands for; CheckpointNotUsable if unmergeable."""
    path = Path(path)
    if (path / POINTER).is_file():
        path = Path(json.loads((path / POINTER).read_text())["path"])
    actor = path / "actor" if (path / "actor").is_dir() else path
    if not (actor / "huggingface" / "config.json").is_file():
        raise CheckpointNotUsable(f"{actor}: a verl checkpoint needs actor/huggingface/config.json (verl writes it "
                                  "with every checkpoint)")
    return actor


def export_hf(checkpoint: Path, out_dir: Path, trial_config: Callable[[], object], log=print) -> None:
    """Merge checkpoint ``checkpoint`` into the (empty) directory ``out_dir`` as a Hugging Face model."""
    actor = actor_dir(checkpoint)
    log(f"merging verl checkpoint {actor} into a Hugging Face model (python -m verl.model_merger)")
    cmd = [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp", "--local_dir", str(actor),
           "--target_dir", str(out_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not (out_dir / "config.json").is_file():
        tail = (done.stderr or done.stdout)[-2000:]
        raise RuntimeError(f"verl model merger failed on {actor} (exit {done.returncode}):\n{tail}")
