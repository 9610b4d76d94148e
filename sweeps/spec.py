"""Sweep specs: load a YAML, compose its base trial config with Hydra, expand the grid, validate.

A spec (configs/sweeps/*.yaml):

    name: dhpo_vs_baselines
    defaults: [{trainer: local_tiny}, {model: tiny_qwen3}, {data: arith}]   # Hydra groups in configs/
    base: {trainer: {steps: 200}}          # optional overrides of the composed base config
    seeds: [0, 1, 2]
    resources: {cpus: 1, gpus: 0}          # per trial; fractional allowed
    max_concurrent: 2
    max_failures: 2                        # retries of a crashed trial, from its last checkpoint
    report_interval_s: 1.0                 # a trial sends its steps to the driver at most this often
    variants:                              # inside a variant a list value is a grid axis
      - {algorithm: grpo, clip: {low: 0.2, high: 0.2}}
      - {algorithm: dhpo, mixing: [averaged, entropy], clip_mode: branch}
    search: {method: optuna, metric: val/avg/acc, mode: max, num_samples: 8, space: {...}}  # optional
    scheduler: {type: asha, metric: val/avg/acc, mode: max, grace_period: 20}              # optional
    report: {table: {select_by: val/avg/acc, at: final}, curves: [actor/entropy, val/avg/acc]}

Variant keys: ``algorithm`` (objective name), ``label`` (method name in tables), ``clip``
({low, high} -> eps_low/eps_high), any objective parameter (eps_low, gate, mixing, tau_pos, ...),
and dotted or nested trial-config keys (``trainer.lr``, ``{trainer: {lr: ...}}``).

Trial ids are readable and stable: algorithm + the variant's values + seed, e.g.
``dhpo-entropy-branch.s1``, ``grpo-clip0.2-0.2.s0``, ``sspo-atanlog-tn0.6-tp0.5.s2``.
Every error names the spec file, the key path and what was expected, before anything runs.
"""

from __future__ import annotations

import copy
import hashlib
import json
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sweeps.spec_errors import SpecError, unknown_key
from sweeps.spec_sections import Resources, check_report, check_scheduler, check_search, parse_resources, positive_int
from trainers.config import ConfigError, TrialConfig, apply_overrides
from trainers.objectives import OBJECTIVES

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIGS_DIR = REPO_ROOT / "configs"
SPEC_KEYS = ("name", "defaults", "base", "seeds", "resources", "max_concurrent", "max_failures",
             "report_interval_s", "variants", "search", "scheduler", "report")
TRIAL_SECTIONS = ("model", "data", "warm_start", "trainer", "reward", "algorithm", "seed", "backend")
SHORT = {"eps_low": "lo", "eps_high": "hi", "tau_pos": "tp", "tau_neg": "tn", "eps_low_token": "lot",
         "eps_high_token": "hit", "eps_low_seq": "los", "eps_high_seq": "his", "entropy_norm": "norm"}
METHOD_NAMES = {"grpo": "GRPO", "gspo": "GSPO", "gmpo": "GMPO", "cispo": "CISPO", "sapo": "SAPO"}


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader that reads ``3e-4`` as a float (YAML 1.2, as Hydra/OmegaConf do), not as a string."""


_SpecLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
                                  list("-+0123456789"))


@dataclass
class Trial:
    trial_id: str  # e.g. 'dhpo-entropy-branch.s1'
    config_id: str  # trial id without the seed: one hyper-parameter configuration
    method: str  # display label, e.g. 'DHPO-E'
    variant: int  # index of the variant in the spec
    config: TrialConfig

    @property
    def config_hash(self) -> str:
        """Fingerprint of the resolved config: a re-run may only continue a trial with the same one."""
        blob = json.dumps(self.config.to_dict(), sort_keys=True, default=str)
        return hashlib.sha1(blob.encode()).hexdigest()[:12]

    @property
    def tags(self) -> dict[str, str]:
        c = self.config
        return {"trial_id": self.trial_id, "config": self.config_id, "method": self.method,
                "config_hash": self.config_hash,
                "algorithm": c.algorithm.name, "variant": str(self.variant), "seed": str(c.seed),
                "model": c.model.name, "backend": c.backend}


@dataclass
class SweepSpec:
    name: str
    path: Path
    trials: list[Trial]
    resources: Resources = field(default_factory=Resources)
    max_concurrent: int = 2
    max_failures: int = 2
    search: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None
    report: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    report_interval_s: float = 1.0
    """Seconds between a trial's reports to the driver (each carries every step since the last; 0 = every step)."""


def resolve_spec_path(name_or_path: str | Path) -> Path:
    """A path as given, else configs/sweeps/<name>(.yaml) of the repository."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    for candidate in (CONFIGS_DIR / "sweeps" / p.name, CONFIGS_DIR / "sweeps" / f"{p.name}.yaml"):
        if candidate.is_file():
            return candidate
    shipped = sorted(x.name for x in (CONFIGS_DIR / "sweeps").glob("*.yaml"))
    raise SpecError(f"{name_or_path}: spec file not found (looked in the cwd and {CONFIGS_DIR / 'sweeps'}: {shipped})")


def compose_base(defaults: list, source: str) -> dict[str, Any]:
    """Compose configs/<group>/<name>.yaml for each default with Hydra's compose API."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    overrides = []
    for i, item in enumerate(defaults or []):
        if not isinstance(item, dict) or len(item) != 1:
            raise SpecError(f"{source}: defaults[{i}]: expected a one-key mapping like {{trainer: local_tiny}}, got {item!r}")
        (group, option), = item.items()
        groups = sorted(d.name for d in CONFIGS_DIR.iterdir() if d.is_dir() and d.name != "sweeps")
        if group not in groups:
            raise unknown_key(f"{source}: defaults[{i}]", group, groups)
        if not (CONFIGS_DIR / group / f"{option}.yaml").is_file():
            options = sorted(x.stem for x in (CONFIGS_DIR / group).glob("*.yaml"))
            raise SpecError(f"{source}: defaults[{i}].{group}: no preset {option!r}; expected one of {options}")
        overrides.append(f"+{group}={option}")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIGS_DIR), version_base=None):
        cfg = compose(overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)


def _set_dotted(target: dict, dotted: str, value: Any) -> dict:
    node = target
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return target


def _example(dist: dict) -> Any:
    """A value inside a search distribution (used to validate the key path and type early)."""
    if dist["type"] == "choice":
        return dist["values"][0]
    mid = (dist["low"] + dist["high"]) / 2
    return int(mid) if dist["type"] == "int" else float(mid)


def search_trial(template: Trial, values: dict[str, Any]) -> Trial:
    """The trial of one search sample: the template config with the sampled values applied."""
    data = template.config.to_dict()
    for key, value in values.items():
        _set_dotted(data, key, value)
    cfg = TrialConfig.from_dict(data, source="search sample")
    suffix = "-".join(_id_part(k, round(v, 6) if isinstance(v, float) else v) for k, v in sorted(values.items()))
    config_id = f"{template.config_id}-{suffix}"
    return Trial(f"{config_id}.s{cfg.seed}", config_id, template.method, template.variant, cfg)


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flatten(v, f"{prefix}{k}."))
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
        if key in ("algorithm", "label"):
            continue
        if key == "clip":
            if not isinstance(value, dict) or set(value) - {"low", "high"} or not value:
                raise SpecError(f"{where}.clip: expected a mapping with 'low' and/or 'high', got {value!r}")
            for side, v in value.items():
                pairs.append((f"algorithm.params.eps_{side}", v))
        elif key == "seed":  # the trial seed is set per trial from the spec's `seeds`
            raise SpecError(f"{where}.seed: a variant cannot set the seed; list seeds in the top-level 'seeds' key")
        elif key in param_names:
            pairs.append((f"algorithm.params.{key}", value))
        elif key.split(".")[0] in TRIAL_SECTIONS:
            if isinstance(value, dict) and "." not in key:
                pairs.extend((f"{key}.{k}", v) for k, v in _flatten(value).items())
            else:
                pairs.append((key, value))
        else:
            raise unknown_key(where, key, ["label", "clip", "algorithm"] + param_names + list(TRIAL_SECTIONS))
    return pairs


def _is_axis(key: str, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    if key == "data.benchmarks":  # a list-valued field: a list of lists is an axis
        return all(isinstance(v, list) for v in value)
    return True


def _id_part(key: str, value: Any) -> str:
    leaf = key.split(".")[-1]
    if isinstance(value, bool):
        return leaf if value else f"no-{leaf}"
    if isinstance(value, str):
        return value.replace("/", "_")
    if isinstance(value, list):
        return "+".join(map(str, value))
    return f"{SHORT.get(leaf, leaf)}{value:g}" if isinstance(value, (int, float)) else f"{leaf}{value}"


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _config_id(name: str, pairs: list[tuple[str, Any]]) -> str:
    """Readable id of one configuration: the algorithm, then each variant value in spec order."""
    values = dict(pairs)
    lo, hi = "algorithm.params.eps_low", "algorithm.params.eps_high"
    both = lo in values and hi in values  # shown together as clip<low>-<high>
    parts = [name]
    for key, value in pairs:
        if key == "algorithm.name" or (both and key == hi):
            continue
        parts.append(f"clip{_fmt(value)}-{_fmt(values[hi])}" if both and key == lo else _id_part(key, value))
    return "-".join(parts)


def method_label(cfg: TrialConfig) -> str:
    """Display name of a method in tables: GRPO, SSPO (atanlog), DHPO-A, DHPO-E (unified), ..."""
    name, params = cfg.algorithm.name, cfg.algorithm.params
    if name == "sspo":
        return f"SSPO ({params.get('gate', 'atanlog')})"
    if name == "dhpo":
        label = "DHPO-E" if params.get("mixing") == "entropy" else "DHPO-A"
        return label + (" (unified)" if params.get("clip_mode") == "unified" else "")
    return METHOD_NAMES[name]


def _absolute_paths(data: dict, base: Path) -> None:
    """Paths are resolved against the directory `sweep run` was started in (workers may chdir)."""
    ws = data.setdefault("warm_start", {})
    ws["cache_dir"] = str((base / ws.get("cache_dir", ".cache/base_models")).resolve())
    d = data.get("data", {})
    if d.get("train_file"):
        d["train_file"] = str((base / d["train_file"]).resolve())
    if d.get("eval_files"):
        d["eval_files"] = {k: str((base / v).resolve()) for k, v in d["eval_files"].items()}
    if data.get("model", {}).get("path"):
        data["model"]["path"] = str((base / data["model"]["path"]).resolve())


def load_spec(name_or_path: str | Path, overrides: list[str] | None = None, cwd: Path | None = None) -> SweepSpec:
    """Load, compose, expand and validate a sweep spec. ``overrides``: ``key.path=value`` on the spec."""
    path = resolve_spec_path(name_or_path)
    src = str(path)
    try:
        raw = yaml.load(path.read_text(), Loader=_SpecLoader)
    except yaml.YAMLError as err:
        raise SpecError(f"{src}: not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{src}: expected a mapping at the top level")
    try:
        apply_overrides(raw, overrides or [], source=f"{src} (command-line overrides)")
    except ConfigError as err:
        raise SpecError(str(err)) from None
    for key in raw:
        if key not in SPEC_KEYS:
            raise unknown_key(src, key, SPEC_KEYS)
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "/\\ "):
        raise SpecError(f"{src}: name: expected a non-empty string without spaces or slashes, got {name!r}")
    seeds = raw.get("seeds", [0])
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise SpecError(f"{src}: seeds: expected a non-empty list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise SpecError(f"{src}: seeds: duplicate seeds in {seeds}")
    variants = raw.get("variants")
    if not isinstance(variants, list) or not variants:
        raise SpecError(f"{src}: variants: expected a non-empty list of variants (the grid is empty)")
    base = compose_base(raw.get("defaults", []), src)
    if raw.get("base") is not None:
        if not isinstance(raw["base"], dict):
            raise SpecError(f"{src}: base: expected a mapping of trial-config overrides")
        for key, value in _flatten(raw["base"]).items():
            _set_dotted(base, key, value)
    resources = parse_resources(raw.get("resources", {}), src)
    max_concurrent = positive_int(raw, "max_concurrent", 2, src)
    max_failures = positive_int(raw, "max_failures", 2, src, minimum=0)
    report_interval_s = raw.get("report_interval_s", 1.0)
    if isinstance(report_interval_s, bool) or not isinstance(report_interval_s, (int, float)) or report_interval_s < 0:
        raise SpecError(f"{src}: report_interval_s: expected a number of seconds >= 0, got {report_interval_s!r}")

    trials: list[Trial] = []
    seen: dict[str, str] = {}
    for vi, variant in enumerate(variants):
        where = f"{src}: variants[{vi}]"
        pairs = _variant_settings(variant, where)
        axes = [(k, v) if _is_axis(k, v) else (k, [v]) for k, v in pairs]
        for k, v in axes:
            if not v:
                raise SpecError(f"{where}.{k}: empty list: a grid axis needs at least one value")
        label = variant.get("label")
        if label is not None and not isinstance(label, str):
            raise SpecError(f"{where}.label: expected a string, got {label!r}")
        for combo in itertools.product(*[values for _, values in axes]):
            chosen = [(k, value) for (k, _), value in zip(axes, combo)]
            config_id = _config_id(chosen[0][1], chosen)
            for seed in seeds:
                data = copy.deepcopy(base)
                if data.get("algorithm", {}).get("name") != chosen[0][1]:
                    data["algorithm"] = {"name": chosen[0][1], "params": {}}  # base params belong to another objective
                for key, value in chosen:
                    _set_dotted(data, key, value)
                data["seed"] = seed
                _absolute_paths(data, cwd or Path.cwd())
                try:
                    cfg = TrialConfig.from_dict(data, source=where)
                except ConfigError as err:
                    raise SpecError(str(err)) from None
                trial_id = f"{config_id}.s{seed}"
                if trial_id in seen:
                    raise SpecError(f"{where}: duplicate trial id {trial_id!r} (also from {seen[trial_id]}); "
                                    "give the variants different values or a distinguishing key")
                seen[trial_id] = where
                trials.append(Trial(trial_id, config_id, label or method_label(cfg), vi, cfg))
    search = check_search(raw.get("search"), src)
    if search is not None:
        configs = {t.config_id for t in trials}
        if len(configs) != 1:
            raise SpecError(f"{src}: search: expected exactly one variant without grid axes to search around, "
                            f"got {len(configs)} configurations ({sorted(configs)[:4]}...)")
        for key in search["space"]:
            template = _set_dotted(copy.deepcopy(trials[0].config.to_dict()), key, _example(search["space"][key]))
            try:
                TrialConfig.from_dict(template, source=f"{src}: search.space")
            except ConfigError as err:
                raise SpecError(str(err)) from None
    scheduler = check_scheduler(raw.get("scheduler"), src)
    report = check_report(raw.get("report", {}), src)
    return SweepSpec(name, path, trials, resources, max_concurrent, max_failures, search, scheduler, report, raw,
                     float(report_interval_s))
