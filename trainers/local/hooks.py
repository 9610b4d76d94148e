"""The local backend's hooks, registered by reference in trainers/backends.py (the hooks' contract is there).

    from trainers.local import hooks
    hooks.train(cfg, report, workdir=Path("checkpoints"))    # imports the trainer (torch) only now

Its numeric mode's checks are light and referenced as they are; the hooks whose code imports torch import
it when called, so a sweep driver, `sweep --help` and a spec check never load torch. Its trial-config section
is registered in trainers/sections.py.
"""

from __future__ import annotations

from pathlib import Path

from trainers.local.numerics import check_modes as preflight
from trainers.local.numerics import trial_env, trial_setup

__all__ = ["preflight", "trial_env", "trial_setup", "train", "base_model",
           "base_fingerprint", "is_checkpoint", "export_hf"]


def train(config, report, **options) -> dict:
    from trainers.local.trainer import train as train_locally

    return train_locally(config, report, **options)


def base_model(cfg, log=print) -> Path:
    from trainers.local.warmstart import base_model_dir

    return base_model_dir(cfg, log)


def base_fingerprint(cfg) -> str | None:
    from trainers.local.warmstart import base_fingerprint as fingerprint

    return fingerprint(cfg)


def is_checkpoint(path: Path) -> bool:
    from trainers.local.export import is_checkpoint as is_local_checkpoint

    return is_local_checkpoint(path)


def export_hf(checkpoint: Path, out_dir: Path, trial_config, log=print) -> None:
    from trainers.local.export import export_hf as export

    export(checkpoint, out_dir, trial_config, log)
