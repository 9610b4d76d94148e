"""A sweep spec as the user gave it on the command line: a YAML path or a shipped name, key=value overrides
and --smoke, loaded and validated (sweeps/spec.py load_spec), or one error line and exit 2.

    spec = load_user_spec("dhpo_vs_baselines", ["trainer.steps=50", "seeds=[0]"], smoke=False)

``trainer.steps=50`` is shorthand for ``base.trainer.steps=50``; the spec's own keys (seeds, search, ...)
stay as they are. --smoke shrinks every trial (SMOKE_OVERRIDES plus what its backends add) and names the
sweep NAME_smoke, so smoke trials never mix with the real ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweeps.commands.options import fail
from sweeps.spec_errors import SpecError

if TYPE_CHECKING:
    from sweeps.spec import SweepSpec

SMOKE_OVERRIDES = ["base.trainer.steps=4", "base.trainer.eval_every=2", "base.trainer.checkpoint_every=2",
                   "base.data.eval_size=8", "base.trainer.eval_k=1", "base.trainer.prompts_per_step=4",
                   "base.trainer.group_size=4", "seeds=[0]"]
SMOKE_RESPONSES = 16  # responses per smoke step (4 prompts x 4): updates_per_rollout must divide it


def split_overrides(overrides: list[str]) -> tuple[list[str], list[str]]:
    """(the spec's own keys, the base trial config's keys as base.KEY), in Hydra's forms: key=value,
    +key=value, ++key=value, ~key[=value]."""
    from sweeps.spec import SPEC_KEYS

    spec_overrides, base_overrides = [], []
    for o in overrides:
        op = "++" if o.startswith("++") else o[:1] if o.startswith(("+", "~")) else ""
        key = o[len(op):].split("=", 1)[0].strip()
        if key.split(".")[0] in SPEC_KEYS:  # seeds, search.num_samples, ...
            spec_overrides.append(o)
        else:  # trainer.steps=50 is shorthand for base.trainer.steps=50 (+trainer.x=1: +base.trainer.x=1)
            base_overrides.append(f"{op}base.{o[len(op):]}")
    return spec_overrides, base_overrides


def _smoke_overrides(spec: str, user: list[str]) -> list[str]:
    """SMOKE_OVERRIDES, plus what the spec's backends add (verl: one node x one GPU) and, for a stale-policy
    spec (32 updates per rollout), as many updates per rollout as a smoke step's 16 responses allow."""
    from sweeps.spec import load_spec
    from trainers.backends import smoke_overrides

    full = load_spec(spec, user)
    extra = smoke_overrides([t.config for t in full.trials], full.resources)
    stale = any(SMOKE_RESPONSES % t.config.trainer.updates_per_rollout for t in full.trials)
    return SMOKE_OVERRIDES + ([f"base.trainer.updates_per_rollout={SMOKE_RESPONSES}"] if stale else []) + extra


def load_user_spec(spec: str, overrides: list[str], smoke: bool) -> SweepSpec:
    from sweeps.spec import load_spec  # Hydra and the trial configs (no torch: test_spec_light_imports.py)

    spec_overrides, base_overrides = split_overrides(overrides)
    user = spec_overrides + base_overrides
    try:
        loaded = load_spec(spec, (_smoke_overrides(spec, user) if smoke else []) + user)
    except SpecError as err:
        raise fail(f"error: {err}") from None  # paths stay whole for copy-paste
    if smoke:
        loaded.name = f"{loaded.name}_smoke"
    return loaded
