"""Checks of a verl sweep before any trial starts, and what ``sweep run --dry-run`` prints.

    preflight(configs, source)   every trial's main_ppo overrides composed with verl's own Hydra
                                 config and converted by verl's config dataclasses
                                 (trainers/verl_backend/translate.py); a bad combination is a
                                 ConfigError naming the key. Also: a GPU trial needs a real model.
    describe(cfg)                the exact main_ppo command line of a trial

Trials with identical overrides are validated once (a seed grid differs only in the seed).
"""

from __future__ import annotations

from pathlib import Path

from trainers.config import ConfigError, TrialConfig


def _check_inputs(cfg: TrialConfig, source: str) -> None:
    if cfg.verl.device == "cuda" and cfg.model.path is None:
        raise ConfigError(f"{source}: model.path: a verl trial on GPUs needs a local Hugging Face model directory "
                          "(the built-in tiny Qwen3 is for verl's CPU platform, resources.gpus: 0); got none")


def preflight(configs: list[TrialConfig], source: str) -> None:
    from trainers.verl_backend import translate
    from trainers.verl_backend.launch import build_launch, prepare_inputs

    seen: set[tuple[str, ...]] = set()
    for cfg in configs:
        _check_inputs(cfg, source)
        launch = build_launch(cfg, prepare_inputs(cfg, build=False), checkpoint_dir=Path("/checkpoints"),
                              resume_path=None, metrics_file=Path("/metrics.jsonl"), namespace="preflight",
                              ray_address=None, experiment="preflight")
        overrides = tuple(launch.argv[3:])  # after: python -m verl.trainer.main_ppo
        if overrides in seen:
            continue
        seen.add(overrides)
        translate.validate_overrides(list(overrides), source)


def describe(cfg: TrialConfig) -> str:
    from trainers.verl_backend.launch import describe as command

    return command(cfg)
