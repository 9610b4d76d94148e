"""The verl backend's hooks, registered by reference in trainers/backends.py (the hooks' contract is there).

    from trainers.verl_backend import hooks
    hooks.place(configs, resources, 2, capacity, True, "spec.yaml").gpus_per_trial

Every hook imports its module when called (the launch and Hydra code, the checkpoint export, the placement);
its trial-config section is registered in trainers/sections.py.
"""

from __future__ import annotations

from pathlib import Path


__all__ = ["train", "preflight", "describe", "base_model", "is_checkpoint",
           "export_hf", "resolve_device", "check_gpus", "place", "smoke_overrides", "inherited_env"]


def train(config, report, **options) -> dict:
    from trainers.verl_backend.train import train as train_with_verl

    return train_with_verl(config, report, **options)


def preflight(configs: list, source: str) -> None:
    from trainers.verl_backend.preflight import preflight as check_sweep

    check_sweep(configs, source)


def describe(cfg) -> str:
    from trainers.verl_backend.launch import describe as command_line

    return command_line(cfg)


def base_model(cfg, log=print) -> Path:
    from trainers.verl_backend.launch import base_model_dir

    return base_model_dir(cfg, log)


def is_checkpoint(path: Path) -> bool:
    from trainers.verl_backend.export import is_checkpoint as is_verl_checkpoint

    return is_verl_checkpoint(path)


def export_hf(checkpoint: Path, out_dir: Path, trial_config, log=print) -> None:
    from trainers.verl_backend.export import export_hf as export

    export(checkpoint, out_dir, trial_config, log)


def resolve_device(data: dict, resources) -> None:
    from trainers.verl_backend.placement import resolve_device as resolve

    resolve(data, resources)


def check_gpus(cfg, resources, where: str) -> None:
    from trainers.verl_backend.placement import check_gpus as check

    check(cfg, resources, where)


def place(configs: list, resources, max_concurrent: int, capacity, local: bool, source: str):
    from trainers.verl_backend.placement import place as plan

    return plan(configs, resources, max_concurrent, capacity, local, source)


def smoke_overrides(resources) -> list[str]:
    from trainers.verl_backend.placement import smoke_overrides as overrides

    return overrides(resources)


def inherited_env() -> dict[str, str]:
    from trainers.verl_backend.launch import inherited_env as switches

    return switches()
