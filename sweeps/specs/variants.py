"""A sweep spec's variants as grid axes: each variant's settings normalised to (trial-config key, values).

    axes = variant_axes(spec["variants"], seeds=[0, 1], max_trials=10_000, src="my.yaml")
    # [[("algorithm.name", ["dhpo"]), ("algorithm.params.mixing", ["averaged", "entropy"]), ...], ...]

A variant's keys: ``algorithm``, ``label``, ``clip`` ({low, high} -> eps_low/eps_high), ``seed_offset``
(an integer >= 0 added to each of the spec's seeds for this variant's trials: a replicate of another
variant on other seeds), the objective's parameters, and dotted or nested trial-config keys. A list value
is an axis (``data.benchmarks``: a list of lists). The grid's size is checked against max_trials before
anything is expanded (sweeps/specs/load.py).

    seed_offset(variant, seeds=[0, 1, 2], where="my.yaml: variants[2]")   # {seed_offset: 100} -> 100
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from sweeps.specs.errors import SpecError, unknown_key
from trainers.config import trial_schema
from trainers.objectives import OBJECTIVES

TRIAL_SECTIONS = tuple(trial_schema())  # model, data, ..., seed, backend and each backend's own section
MAX_LABEL = 60
MAX_SEED = 2**32 - 1
OWN_KEYS = ("algorithm", "label", "seed_offset")  # variant keys that are not trial-config settings


def flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _variant_settings(variant: dict, where: str) -> list[tuple[str, Any]]:
    """Normalise a variant into ordered (key path, value-or-axis) pairs."""
    if not isinstance(variant, dict):
        raise SpecError(f"{where}: expected a mapping, got {variant!r}")
    if "algorithm" not in variant:
        raise SpecError(f"{where}: missing key 'algorithm' (one of {sorted(OBJECTIVES)})")
    name = variant["algorithm"]
    if not isinstance(name, str) or name not in OBJECTIVES:
        raise unknown_key(f"{where}.algorithm", name, OBJECTIVES)
    param_names = list(OBJECTIVES[name].param_docs())
    pairs: list[tuple[str, Any]] = [("algorithm.name", name)]
    for key, value in variant.items():
        if key in OWN_KEYS:
            continue
        if key == "clip":
            if not isinstance(value, dict) or set(value) - {"low", "high"} or not value:
                raise SpecError(f"{where}.clip: expected a mapping with 'low' and/or 'high', got {value!r}")
            for side, v in value.items():
                pairs.append((f"algorithm.params.eps_{side}", v))
        elif key == "seed":  # the trial seed is set per trial from the spec's `seeds`
            raise SpecError(f"{where}.seed: a variant cannot set the seed; list seeds in the top-level 'seeds' key, "
                            "or shift this variant's seeds with seed_offset: N")
        elif key in param_names:
            pairs.append((f"algorithm.params.{key}", value))
        elif key.split(".")[0] in TRIAL_SECTIONS:
            if isinstance(value, dict) and "." not in key:
                pairs.extend((f"{key}.{k}", v) for k, v in flatten(value).items())
            else:
                pairs.append((key, value))
        else:
            raise unknown_key(where, key, list(OWN_KEYS) + ["clip"] + param_names + list(TRIAL_SECTIONS))
    return pairs


def _is_axis(key: str, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    if key == "data.benchmarks":  # a list-valued field: a list of lists is an axis
        return all(isinstance(v, list) for v in value)
    return True


def _check_label(label: Any, where: str) -> None:
    bad = label is None or not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL or any(
        unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in label)
    if bad:
        raise SpecError(f"{where}.label: expected a method name of 1-{MAX_LABEL} characters (spaces allowed; no "
                        f"control characters or line breaks), got {label!r}")


def seed_offset(variant: dict, seeds: list, where: str) -> int:
    """The variant's ``seed_offset`` (0 when absent): an integer >= 0, one value (not a grid axis), that
    keeps every shifted seed within [0, MAX_SEED]; SpecError naming the key otherwise."""
    offset = variant.get("seed_offset", 0)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise SpecError(f"{where}.seed_offset: expected one integer >= 0 (added to each of the spec's seeds for this "
                        f"variant's trials), got {offset!r}")
    if max(seeds) + offset > MAX_SEED:
        raise SpecError(f"{where}.seed_offset: the largest seed {max(seeds)} + {offset} exceeds {MAX_SEED}; expected "
                        f"an offset <= {MAX_SEED - max(seeds)}")
    return offset


def variant_axes(variants: list, seeds: list, max_trials: int, src: str) -> list[list[tuple[str, list]]]:
    """Each variant's checked axes and label; SpecError, before anything is expanded, when the grid
    (axis lengths x seeds, summed over the variants) exceeds max_trials."""
    all_axes, total = [], 0
    for vi, variant in enumerate(variants):
        where = f"{src}: variants[{vi}]"
        axes = [(k, v) if _is_axis(k, v) else (k, [v]) for k, v in _variant_settings(variant, where)]
        for k, v in axes:
            if not v:
                raise SpecError(f"{where}.{k}: empty list: a grid axis needs at least one value")
        if "label" in variant:
            _check_label(variant["label"], where)
        seed_offset(variant, seeds, where)
        n = math.prod(len(v) for _, v in axes) * len(seeds)
        total += n
        if total > max_trials:
            shape = " x ".join(str(len(v)) for _, v in axes if len(v) > 1) or "1"
            so_far = f"; {total} with the variants before it" if vi else ""
            raise SpecError(f"{where}: expands to {n} trials ({shape} configuration(s) x {len(seeds)} seed(s)){so_far}, "
                            f"more than max_trials = {max_trials}; expected a smaller grid, or raise the cap with "
                            f"the top-level key max_trials: {total} (or the override max_trials={total})")
        all_axes.append(axes)
    return all_axes
