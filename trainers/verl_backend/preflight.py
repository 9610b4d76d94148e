"""Checks of a verl sweep before any trial starts (``--dry-run`` text: launch.describe).

    preflight(configs, source)   every trial's main_ppo overrides composed with verl's own Hydra
                                 config and converted by verl's config dataclasses
                                 (trainers/verl_backend/translate.py); a bad combination is a
                                 ConfigError naming the key. Also: a GPU trial needs a real model.

Trials with identical overrides are validated once per process (a seed grid differs only in the seed; a spec
loaded again, by `sweep report` after `sweep run` or by the test suite, is not validated twice).
"""

from __future__ import annotations

from pathlib import Path

from trainers.config import ConfigError, TrialConfig
from trainers.verl_backend.config import needs_user_model


SUPPORTED_VERL = "0.9.1"  # the version whose config schema, registries and loss signature we use
VALIDATED: set[tuple[str, ...]] = set()
"""main_ppo overrides that translate.validate_overrides passed in this process (about half a second each)."""


def check_verl_installed(source: str) -> None:
    """ConfigError before anything starts when verl is missing or another version than 0.9.1."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("verl")
    except PackageNotFoundError:
        found = None
    if found != SUPPORTED_VERL:
        raise ConfigError(f"{source}: backend: 'verl' needs verl {SUPPORTED_VERL} exactly (its config schema, "
                          f"platform and rollout registries), found {found or 'no verl'}; install it with "
                          "bash scripts/setup.sh")


def _check_inputs(cfg: TrialConfig, source: str) -> None:
    if needs_user_model(cfg.verl) and cfg.model.path is None:
        raise ConfigError(f"{source}: model.path: a verl trial on GPUs with verl.rollout {cfg.verl.rollout!r} needs "
                          "a local Hugging Face model directory (the built-in tiny Qwen3 is for verl's CPU platform, "
                          "resources.gpus: 0, and the zoo_hf check rollout); got none")


def preflight(configs: list[TrialConfig], source: str) -> None:
    from trainers.verl_backend import translate
    from trainers.verl_backend.launch import build_launch, prepare_inputs

    check_verl_installed(source)
    for cfg in configs:
        _check_inputs(cfg, source)
        launch = build_launch(cfg, prepare_inputs(cfg, build=False), checkpoint_dir=Path("/checkpoints"),
                              resume_path=None, metrics_file=Path("/metrics.jsonl"), namespace="preflight",
                              ray_address=None, experiment="preflight")
        overrides = tuple(launch.argv[3:])  # after: python -m verl.trainer.main_ppo
        if overrides not in VALIDATED:
            translate.validate_overrides(list(overrides), source)  # a ConfigError leaves them out of VALIDATED
            VALIDATED.add(overrides)
