"""Overrides of a sweep spec (Hydra's grammar, parsed by trainers/overrides.py), applied to the spec.

Spec keys (``seeds=[0]``, ``search.num_samples=4``) change the spec itself; preset switches
(``model=x``, ``+model=x``, ``~model``) change its ``defaults``; ``base.<trial key>`` overrides
are applied to the composed base trial config with the trial config's schema and defaults.
"""

from __future__ import annotations

from typing import Any

from sweeps.spec_errors import SpecError
from sweeps.spec_presets import preset_groups, switch_preset
from trainers.config import TrialConfig, trial_schema
from trainers.overrides import OverrideError, apply as apply_override


def apply_spec_overrides(raw: dict, parsed: list, spec_keys: tuple[str, ...]) -> list:
    """Apply the overrides of spec keys (seeds=[0], search.num_samples=4, ...) and preset switches
    (model=x, +model=x, ++model=x, ~model[=x]; also base.model=x) to ``raw``; returns the
    base.<trial key> ones, applied to the composed base config by apply_trial_overrides.

    Hydra's semantics (trainers/overrides.py) with the spec's top-level keys as the closed schema.
    A spec is not a structured config: a spec key exists when the file writes it (``+seeds=[0]``
    adds seeds to a spec without them; ``~seeds`` puts them back at the default [0]), and its
    sections (resources, search, scheduler, report) are open mappings that load_spec checks after.
    ``~model`` (a preset group) removes the group's preset from defaults."""
    trial = []
    for where, ov in parsed:
        key = ov.key_or_group
        group = key[len("base."):] if key.startswith("base.") else key
        if group in preset_groups() and (isinstance(ov.value(), str) or (ov.is_delete() and ov.value() is None)):
            group_override(raw, group, ov, where)
        elif key.startswith("base."):
            trial.append((where, ov))
        else:
            try:
                apply_override(raw, ov, dict.fromkeys(spec_keys))
            except OverrideError as err:
                raise SpecError(f"{where}: {err}") from None
    return trial


def group_override(raw: dict, group: str, ov: Any, where: str) -> None:
    """``model=x`` switches (or adds) the model preset; ``+model=x`` adds it (an error if defaults
    has one), ``++model=x`` switches or adds, ``~model[=x]`` removes it from defaults."""
    defaults = raw.get("defaults") or []
    current = [d[group] for d in defaults if isinstance(d, dict) and list(d) == [group]] if isinstance(defaults, list) else []
    name = ("+" if ov.is_add() else "~" if ov.is_delete() else "") + ov.key_or_group
    if ov.is_add() and current:
        raise SpecError(f"{where}: {ov.key_or_group} already exists (defaults has the {group} preset {current[0]!r}); "
                        f"use {ov.key_or_group}=... or ++{ov.key_or_group}=... to switch it")
    if not ov.is_delete():
        switch_preset(raw, group, ov.value(), where)
        return
    if not current:
        raise SpecError(f"{where}: {name}: defaults has no {group} preset to delete")
    if ov.value() is not None and ov.value() != current[0]:
        raise SpecError(f"{where}: {name}: not deleted: the {group} preset is {current[0]!r}, not {ov.value()!r}")
    raw["defaults"] = [d for d in defaults if not (isinstance(d, dict) and list(d) == [group])]


def apply_trial_overrides(base: dict, parsed: list) -> None:
    """Apply ``base.<key>`` overrides to the composed base trial config (presets + the spec's base):
    the trial config's schema and dataclass defaults, as in ``python -m trainers.local``."""
    schema, defaults = trial_schema(), TrialConfig().to_dict()
    for where, ov in parsed:
        try:
            apply_override(base, ov, schema, defaults, key=ov.key_or_group[len("base."):], prefix="base.")
        except OverrideError as err:
            raise SpecError(f"{where}: {err}") from None
