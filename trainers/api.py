"""The trainer contract shared by every backend and by the sweep runner.

    train(config: TrialConfig, report: Reporter, resume_from: Path | None, workdir: Path | None) -> dict
    Reporter(step, metrics: dict[str, float], checkpoint_dir: Path | None)

A backend calls ``report`` once per logged step with the metric names below (see
../shared/DESIGN.md) and, when it wrote a checkpoint at that step, the checkpoint directory.
``resume_from`` is a directory previously passed to ``report``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from trainers.config import TrialConfig

Reporter = Callable[[int, dict, "Path | None"], None]

# Logged at every training step by every backend and objective.
STEP_METRICS = (
    "actor/entropy", "response_length/mean", "response_length/max", "reward/mean",
    "actor/pg_clipfrac", "actor/clipfrac_token", "actor/clipfrac_seq", "actor/ppo_kl",
    "actor/grad_norm", "perf/step_time_s", "perf/tokens_per_s",
)
# Logged only by DHPO (mean mixing weight w).
DHPO_METRICS = ("actor/mix_weight",)
# Logged at step 0 (the base model), every eval_every steps and at the last step.
def val_metrics(benchmarks: list[str]) -> list[str]:
    return [f"val/{b}/acc" for b in benchmarks] + ["val/avg/acc"]


class Trainer(Protocol):
    def __call__(self, config: TrialConfig, report: Reporter, resume_from: Path | None = None,
                 workdir: Path | None = None) -> dict: ...


def get_trainer(backend: str) -> Trainer:
    if backend == "local":
        from trainers.local.trainer import train

        return train
    raise ValueError(f"backend: unknown trainer backend {backend!r}; expected 'local'")
