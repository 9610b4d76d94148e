"""The synthetic backend's hooks, registered by reference in trainers/backends.py (the hooks' contract is there).

    from trainers.synthetic import hooks
    hooks.train(cfg, report, workdir=Path("checkpoints"))

Its trial-config section is registered in trainers/sections.py.
"""

from __future__ import annotations

__all__ = ["train"]


def train(config, report, **options) -> dict:
    from trainers.synthetic.trainer import train as train_synthetic

    return train_synthetic(config, report, **options)
