"""A sweep spec as the user gave it on the command line: a YAML path or a shipped name, key=value overrides
and --smoke, loaded and validated (sweeps/specs/load.py load_spec), or one error line and exit 2.

    spec = load_user_spec("dhpo_vs_baselines", ["trainer.steps=50", "seeds=[0]"], smoke=False)

``trainer.steps=50`` is shorthand for ``base.trainer.steps=50`` (sweeps/specs/overrides.py: an override a
variant would overwrite is refused); the spec's own keys (seeds, search, ...) stay as they are. --smoke
shrinks every trial (SMOKE_OVERRIDES plus what its backends add) and names the sweep NAME_smoke (``smoke_name``), so smoke trials never mix with the real ones: their own MLflow experiment,
run folder and report. ``smoke_note`` is what `sweep run --smoke` prints about it; the read commands take
--smoke for the same name (``sweep status NAME --smoke`` = ``sweep status NAME_smoke``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweeps.commands.options import fail
from sweeps.specs.errors import SpecError

if TYPE_CHECKING:
    from sweeps.specs.load import SweepSpec

SMOKE_OVERRIDES = ["base.trainer.steps=4", "base.trainer.eval_every=2", "base.trainer.checkpoint_every=2",
                   "base.data.eval_size=8", "base.trainer.eval_k=1", "base.trainer.prompts_per_step=4",
                   "base.trainer.group_size=4", "seeds=[0]"]
SMOKE_RESPONSES = 16  # responses per smoke step (4 prompts x 4): updates_per_rollout must divide it
SMOKE_SUFFIX = "_smoke"


def smoke_name(name: str) -> str:
    """The sweep name --smoke gives a spec named ``name``: NAME_smoke."""
    return f"{name}{SMOKE_SUFFIX}"


def smoke_note(name: str, done: bool = False) -> str:
    """What `sweep run --smoke` says when it starts (and, ``done``, when it ends) about the smoke sweep ``name``
    (NAME_smoke): its name, and how to look at it."""
    real = name.removesuffix(SMOKE_SUFFIX)
    if done:
        return f"smoke sweep {name}: sweep status {name} | sweep report {name} | sweep ui {name} --open"
    return (f"note: --smoke: this sweep is named {name} (its own MLflow experiment and run folder: smoke trials "
            f"never mix with {real}'s); look at it with: sweep status {name} (or sweep status {real} --smoke; "
            "sweep report and sweep ui the same)")


def _smoke_overrides(spec: str, user: list[str]) -> list[str]:
    """SMOKE_OVERRIDES, plus what the spec's backends add (verl: one node x one GPU) and, for a stale-policy
    spec (32 updates per rollout), as many updates per rollout as a smoke step's 16 responses allow."""
    from sweeps.specs.load import load_spec
    from trainers.backends import smoke_overrides

    full = load_spec(spec, user)
    extra = smoke_overrides([t.config for t in full.trials], full.resources)
    stale = any(SMOKE_RESPONSES % t.config.trainer.updates_per_rollout for t in full.trials)
    return SMOKE_OVERRIDES + ([f"base.trainer.updates_per_rollout={SMOKE_RESPONSES}"] if stale else []) + extra


def load_user_spec(spec: str, overrides: list[str], smoke: bool) -> SweepSpec:
    from sweeps.specs.load import load_spec  # Hydra and the trial configs (no torch: test_spec_light_imports.py)

    user = list(overrides)
    try:
        loaded = load_spec(spec, (_smoke_overrides(spec, user) if smoke else []) + user)
    except SpecError as err:
        raise fail(f"error: {err}") from None  # paths stay whole for copy-paste
    if smoke:
        loaded.name = smoke_name(loaded.name)
    return loaded


def names_spec(sweep: str, overrides: list[str] | None, smoke: bool) -> bool:
    """Whether a read command's SWEEP names a spec (a YAML, a file, a shipped name with overrides or --smoke)
    rather than a sweep of the store; with --smoke a name that is no spec is a sweep's: NAME_smoke."""
    from pathlib import Path

    from sweeps.specs.load import resolve_spec_path

    if sweep.endswith((".yaml", ".yml")) or Path(sweep).is_file() or overrides:
        return True
    if not smoke:
        return False
    try:
        resolve_spec_path(sweep)
    except SpecError:
        return False
    return True
