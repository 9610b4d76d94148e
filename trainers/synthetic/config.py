"""The ``synthetic:`` section of a trial config: pace and faults of a synthetic trial.

    synthetic:
      step_seconds: 0.05     # sleep per training step
      fail_at_step: 3        # raise an error at step 3 (a crash, which the sweep retries) ...
      fail_attempts: 1       # ... on the first attempt only (0: on every attempt)
      diverge_at_step: 0     # 0: never; N: a non-finite loss at step N (TrainingDiverged, no retry)
      crash_fraction: 0.2    # besides: this share of trials crash at a random step (fail_attempts times) ...
      crash_seed: 7          # ... trials and steps drawn from this seed, the trial's configuration and its seed

Other backends ignore this section; a trial config leaves it out while it is at its defaults (its registry
entry's ``omitted_at_defaults``, trainers/sections.py), so the fingerprints of trial configs recorded before it existed are
unchanged (trainers/config.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from contract.errors import require


@dataclass
class SyntheticConfig:
    step_seconds: float = 0.0
    """Seconds each training step sleeps (the trial's pace)."""
    eval_seconds: float = 0.0
    """Seconds each evaluation sleeps (step 0, every trainer.eval_every steps and the last step)."""
    fail_at_step: int = 0
    """0: never; N: the trial raises an error at step N (a crash: the sweep retries it from its last checkpoint)."""
    fail_attempts: int = 1
    """How many attempts of the trial fail at fail_at_step (0: every attempt)."""
    diverge_at_step: int = 0
    """0: never; N: a non-finite loss at step N (TrainingDiverged: the trial is FAILED, not retried)."""
    crash_fraction: float = 0.0
    """Share of trials (0..1) that crash at a random step, as fail_at_step does (fail_attempts attempts): which
    trials and at which step in 1..trainer.steps is drawn from crash_seed, the trial's algorithm, params and seed
    (benchmarks/chaos.py). A trial with fail_at_step set crashes there instead."""
    crash_seed: int = 0
    """Seed of crash_fraction's draws: another seed, other trials and steps."""


def validate_synthetic_section(cfg, source: str) -> None:
    """Range checks of the ``synthetic:`` section; ConfigError naming the key path."""
    s = cfg.synthetic
    for name in ("step_seconds", "eval_seconds"):
        require(getattr(s, name) >= 0, source, f"synthetic.{name}", "a number >= 0", getattr(s, name))
    require(0.0 <= s.crash_fraction <= 1.0, source, "synthetic.crash_fraction", "a number in 0..1", s.crash_fraction)
    for name in ("fail_at_step", "fail_attempts", "diverge_at_step", "crash_seed"):
        require(getattr(s, name) >= 0, source, f"synthetic.{name}", "an integer >= 0", getattr(s, name))
    steps = cfg.trainer.steps
    for name in ("fail_at_step", "diverge_at_step"):
        require(getattr(s, name) <= steps, source, f"synthetic.{name}",
                f"0 (never) or a step in 1..trainer.steps = {steps}", getattr(s, name))

