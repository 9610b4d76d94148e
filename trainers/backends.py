"""The trainer backends: name -> where its train function and its checks live (imported lazily).

A backend is one package with a ``train`` function (the contract in trainers/api.py) and, in
``trainers/config.py``, one section of the trial config that only it reads (``local:``,
``verl:``). Adding a backend means: its package, its section dataclass, and one entry here.

    from trainers.backends import get_trainer, backend_names
    train = get_trainer("verl")        # imports trainers.verl_backend.train only now

Hooks besides ``train`` (all optional, "module:function" strings):
    validate  (cfg, source) -> None           range checks of its section, ConfigError naming the key
    preflight (trials, source) -> None        checks of a whole sweep before any trial starts
                                              (e.g. verl composes its Hydra config for each trial)
    describe  (cfg) -> str                    what ``sweep run --dry-run`` prints for a trial
    base_model (cfg, log) -> Path             the Hugging Face directory of the trial's base policy
                                              (built if need be), for evaluating it (`eval.base`)
    is_checkpoint (path) -> bool              whether a directory is a checkpoint this backend reported
    export_hf (checkpoint, out_dir, trial_config, log) -> None
                                              write that checkpoint into the empty out_dir as a Hugging
                                              Face model directory; ``trial_config()`` returns the
                                              trial's TrialConfig (a backend calls it only if it needs
                                              it); CheckpointNotUsable when it cannot be exported
A backend with these two hooks also names its checkpoints (``checkpoints``) for the message of a
directory that is no checkpoint. trial_eval/checkpoints.py is their caller:

    get_backend("local").load("export_hf")(ckpt, out_dir, lambda: cfg, print)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable


class CheckpointNotUsable(ValueError):
    """A path that is no checkpoint we can evaluate; the message says what was expected."""


@dataclass(frozen=True)
class Backend:
    name: str
    train: str
    """"module:function" of the train function (trainers/api.py contract)."""
    summary: str
    """One line for docs and errors."""
    validate: str | None = None
    preflight: str | None = None
    describe: str | None = None
    base_model: str | None = None
    is_checkpoint: str | None = None
    export_hf: str | None = None
    checkpoints: str | None = None
    """What its checkpoints look like, for messages ("a local-trainer checkpoint (trainer_state.pt)")."""

    def load(self, hook: str = "train") -> Callable[..., Any] | None:
        target = getattr(self, hook)
        if target is None:
            return None
        module, _, function = target.partition(":")
        return getattr(importlib.import_module(module), function)


BACKENDS: dict[str, Backend] = {
    "local": Backend("local", "trainers.local.trainer:train",
                     "the built-in trainer (tiny Qwen3 or a local checkpoint; CPU or one GPU)",
                     validate="trainers.local.config:validate_local_section",
                     base_model="trainers.local.warmstart:base_model_dir",
                     is_checkpoint="trainers.local.export:is_checkpoint",
                     export_hf="trainers.local.export:export_hf",
                     checkpoints="a local-trainer checkpoint (trainer_state.pt)"),
    "verl": Backend("verl", "trainers.verl_backend.train:train",
                    "verl main_ppo, one Ray driver per trial (GPU cluster with vLLM, or CPU)",
                    validate="trainers.verl_backend.config:validate_verl_section",
                    preflight="trainers.verl_backend.preflight:preflight",
                    describe="trainers.verl_backend.launch:describe",
                    base_model="trainers.verl_backend.launch:base_model_dir",
                    is_checkpoint="trainers.verl_backend.export:is_checkpoint",
                    export_hf="trainers.verl_backend.export:export_hf",
                    checkpoints="a verl checkpoint (global_step_N/ or verl_checkpoint.json)"),
}


def backend_names() -> list[str]:
    return list(BACKENDS)


def get_backend(name: str) -> Backend:
    if name not in BACKENDS:
        raise ValueError(f"backend: unknown trainer backend {name!r}; expected one of {backend_names()}")
    return BACKENDS[name]


def preflight(configs: list, source: str) -> None:
    """Run each backend's preflight hook on its trials' configs (ConfigError naming the key)."""
    by_backend: dict[str, list] = {}
    for cfg in configs:
        by_backend.setdefault(cfg.backend, []).append(cfg)
    for name, group in by_backend.items():
        hook = get_backend(name).load("preflight")
        if hook is not None:
            hook(group, source)


def describe(cfg) -> str | None:
    """What ``sweep run --dry-run`` prints for a trial of a backend with a describe hook, else None."""
    hook = get_backend(cfg.backend).load("describe")
    return hook(cfg) if hook is not None else None


def get_trainer(name: str):
    """The train function of backend ``name`` (imported now, not when this module is)."""
    return get_backend(name).load("train")
