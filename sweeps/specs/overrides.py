"""Overrides of a sweep spec (Hydra's grammar, parsed by trainers/overrides.py), applied to the spec.

Spec keys (``seeds=[0]``, ``search.num_samples=4``) change the spec itself; preset switches
(``model=x``, ``+model=x``, ``~model``) change its ``defaults``; trial-config keys (``trainer.lr=1e-4``,
or the same as ``base.trainer.lr=1e-4``) are applied to the composed base trial config with the trial
config's schema and defaults. No override is dropped: one that a variant would overwrite in its own
trials is refused, naming where that setting lives (``check_reach``), and an objective parameter
(``algorithm.params.eps_low=0.3``) applies to every trial whose objective has it, after the variant
chose the objective (``param_overrides``), or is refused when no trial's objective has it.

    trial = apply_spec_overrides(raw, parsed, SPEC_KEYS)   # [TrialOverride(where, ov, key, shown), ...]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.suggest import did_you_mean
from sweeps.specs.errors import SpecError
from sweeps.specs.presets import preset_groups, switch_preset
from trainers.config import TrialConfig, trial_schema
from trainers.objectives import OBJECTIVES
from trainers.overrides import OverrideError, apply as apply_override

PARAMS = "algorithm.params."
CLIP_HINT = ("objective parameters are algorithm.params.<name> (a clip range: algorithm.params.eps_low / eps_high, "
             "or a variant's clip: {low, high})")


@dataclass
class TrialOverride:
    where: str
    """The spec and the override as typed, for messages."""
    ov: Any
    """Hydra's parsed Override."""
    key: str
    """The trial-config key path (``trainer.lr``), without ``base.``."""
    shown: str
    """The key as the user typed it (``trainer.lr`` or ``base.trainer.lr``)."""

    @property
    def is_param(self) -> bool:
        return self.key.startswith(PARAMS)


def apply_spec_overrides(raw: dict, parsed: list, spec_keys: tuple[str, ...]) -> list:
    """Apply the overrides of spec keys (seeds=[0], search.num_samples=4, ...) and preset switches
    (model=x, +model=x, ++model=x, ~model[=x]; also base.model=x) to ``raw``; returns the trial-config
    ones (trainer.lr=..., base.trainer.lr=...), applied by apply_trial_overrides and param_overrides.

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
        elif key.startswith("base.") or key.split(".")[0] not in spec_keys:  # trainer.lr: short for base.trainer.lr
            head = group.split(".")[0]
            if not key.startswith("base.") and head not in trial_schema():
                raise SpecError(f"{where}: {head}: unknown key{did_you_mean(head, spec_keys) or did_you_mean(head, trial_schema())}; "
                                f"expected a spec key {sorted(spec_keys)} or a trial-config key {sorted(trial_schema())}")
            trial.append(TrialOverride(where, ov, group, key))
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


def apply_trial_overrides(base: dict, overrides: list[TrialOverride]) -> None:
    """Apply the trial-config overrides to the composed base trial config (presets + the spec's base):
    the trial config's schema and dataclass defaults, as in ``python -m trainers.local``."""
    schema, defaults = trial_schema(), TrialConfig().to_dict()
    for o in overrides:
        _apply(base, o, schema, defaults)


def param_overrides(data: dict, overrides: list[TrialOverride]) -> None:
    """Apply the objective-parameter overrides to one trial's config dict, whose objective is now chosen:
    those of parameters its objective has (the others name other objectives' trials)."""
    names = OBJECTIVES[data["algorithm"]["name"]].param_docs()
    for o in overrides:
        if o.is_param and o.key[len(PARAMS):].split(".")[0] in names:
            _apply(data, o, trial_schema(), TrialConfig().to_dict())


def _apply(tree: dict, o: TrialOverride, schema: dict, defaults: dict) -> None:
    prefix = o.shown[:len(o.shown) - len(o.key)]  # "base." when typed so
    try:
        apply_override(tree, o.ov, schema, defaults, key=o.key, prefix=prefix)
    except OverrideError as err:
        hint = f"; {CLIP_HINT}" if o.key.startswith("algorithm.") and not o.is_param else ""
        raise SpecError(f"{o.where}: {err}{hint}") from None


def blame_override(text: str, where: str, overrides: list[TrialOverride], objective: str) -> str:
    """A trial's config error (``where: key: ...``) at the key of an override, rewritten to name the override as
    typed: the override caused it, since check_reach refused any override a variant sets itself. Checked on the
    expanded trial, with every override and the spec's base applied, so an error between keys that the other
    overrides resolve (``data.benchmarks=[mine]`` with ``data.eval_files.mine=...``) is not one."""
    for o in overrides:
        if o.ov.is_delete():
            continue
        saids = [f"{o.key}:"]
        if o.is_param:
            saids.insert(0, f"algorithm: {objective}.{o.key[len(PARAMS):].split('.')[0]}:")
        for said in saids:
            if text.startswith(f"{where}: {said}"):
                return f"{o.where}: {o.shown}:{text[len(where) + 2 + len(said):]}"
    return text


def check_reach(overrides: list[TrialOverride], variants: list, variant_keys: list[list[str]], src: str) -> None:
    """Refuse an override that some trials would not get: one a variant sets itself (its own value wins in
    its trials), the objective (every variant names its own), the seed (set per trial from ``seeds``), and
    an objective parameter that no trial's objective has. ``variant_keys``: each variant's trial-config keys."""
    for o in overrides:
        if o.key in ("algorithm", "algorithm.name") or (o.key == "algorithm.params" and not o.ov.is_delete()):
            raise SpecError(f"{o.where}: {o.shown}: every variant names its own objective (variants[i].algorithm); "
                            f"change it there, or set one parameter for every trial that has it: {PARAMS}<name>=...")
        if o.key == "seed":
            raise SpecError(f"{o.where}: {o.shown}: the seed is set per trial from the spec's seeds; override "
                            f"seeds=[...] instead")
        for vi, keys in enumerate(variant_keys):
            clash = next((k for k in keys if k == o.key or k.startswith(o.key + ".") or o.key.startswith(k + ".")), None)
            if clash is not None:
                raise SpecError(f"{o.where}: {o.shown}: variants[{vi}] sets {_as_written(clash, variants[vi])} "
                                f"itself, so its trials would not get this override; change it in the variant "
                                f"({src}) or remove it there")
        if o.is_param:
            name = o.key[len(PARAMS):].split(".")[0]
            objectives = sorted({v.get("algorithm") for v in variants if isinstance(v, dict)})
            if not any(name in OBJECTIVES[a].param_docs() for a in objectives if a in OBJECTIVES):
                has = sorted(a for a, spec in OBJECTIVES.items() if name in spec.param_docs())
                raise SpecError(f"{o.where}: {o.shown}: no trial's objective has the parameter {name!r} "
                                f"(this sweep's objectives: {objectives}; objectives with it: {has or 'none'})")


def _as_written(key: str, variant: dict) -> str:
    """Where a variant sets a trial-config key, as its spec writes it (clip.low for eps_low)."""
    if key.startswith(PARAMS + "eps_") and isinstance(variant.get("clip"), dict):
        side = key[len(PARAMS + "eps_"):]
        if side in variant["clip"]:
            return f"clip.{side} (= {key})"
    return key


def check_sections(overrides: list[TrialOverride], backends: set[str], section_owners: list[str]) -> None:
    """Refuse an override of a backend's own section (``verl.nnodes``) when no trial runs that backend: no
    trial would read it. ``backends``: the trials' backends; ``section_owners``: the backends with a section."""
    for o in overrides:
        head = o.key.split(".")[0]
        if head in section_owners and head not in backends:
            raise SpecError(f"{o.where}: {o.shown}: only trials of the {head} backend read the {head}: section, and "
                            f"this sweep's trials run {sorted(backends)}; expected a key their backend reads "
                            f"(or backend={head} in a variant)")
