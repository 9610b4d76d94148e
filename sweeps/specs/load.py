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
    stall_timeout_s: 1800                  # a trial with no step for this long is ended and retried (0 = never)
    max_trials: 10000                      # fail before expanding a grid of more trials (variants x seeds)
    variants:                              # inside a variant a list value is a grid axis
      - {algorithm: grpo, clip: {low: 0.2, high: 0.2}}
      - {algorithm: dhpo, mixing: [averaged, entropy], clip_mode: branch}
    search: {method: optuna, metric: val/avg/acc, mode: max, num_samples: 8, space: {...}}  # optional
    scheduler: {type: asha, metric: val/avg/acc, mode: max, grace_period: 20}              # optional
    report: {table: {select_by: val/avg/acc, at: final}, curves: [actor/entropy, val/avg/acc]}
    eval: {benchmarks: [aime24, math500], samples: null}  # optional: the papers' protocol on each final checkpoint
    stop: [{metric: actor/entropy, below: 0.01, for_steps: 20}]  # optional early stops (sweeps/specs/stop_rules.py)

Variant keys: ``algorithm`` (objective name), ``label`` (method name in tables), ``clip``
({low, high} -> eps_low/eps_high), ``seed_offset`` (added to each seed for this variant's trials: a
replicate on other seeds), any objective parameter (eps_low, gate, mixing, tau_pos, ...), and dotted
or nested trial-config keys (``trainer.lr``, ``{trainer: {lr: ...}}``).

Trial ids are readable and stable: algorithm + the variant's values (+ ``seed+N`` for a seed offset)
+ seed, e.g. ``dhpo-entropy-branch.s1``, ``grpo-clip0.2-0.2.s0``, ``sspo-atanlog-tn0.6-tp0.5.s2``,
``grpo-clip0.2-0.2-seed+100.s100``; only
``A-Za-z0-9_.+-`` (anything else becomes ``_``), at most 120 characters (a longer one keeps its
head and gets a hash of the whole). The sweep name is 1-100 of ``A-Za-z0-9_.-``; a label at most
60 characters, no control characters. The YAML is read safely (spec_yaml.py: no anchors/aliases,
no duplicate keys, no ``${...}`` interpolation, no .nan/.inf) and presets stay inside configs/.
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

from sweeps.specs.errors import SpecError, unknown_key
from sweeps.specs.presets import CONFIGS_DIR, compose_base, preset_groups
from sweeps.specs.variants import MAX_LABEL, MAX_SEED, flatten, seed_offset, variant_axes
from sweeps.specs.sections import (Resources, check_eval, check_report, check_scheduler, check_search, parse_resources,
                                  positive_int, report_with_defaults)
from sweeps.specs.yaml_input import check_values, parse_overrides, parse_yaml
from sweeps.specs.stop_rules import StopRuleError, parse_stop_rules
from sweeps.specs.overrides import (TrialOverride, apply_spec_overrides, apply_trial_overrides, blame_override,
                                   check_reach, check_sections, param_overrides)
from sweeps.specs.trial_ids import cap_id, config_id, id_part
from trainers.backends import absolute_paths, check_resources, preflight, resolve_resources
from trainers.config import ConfigError, TrialConfig, trial_schema
from trainers.objectives import OBJECTIVES
from trainers.sections import sections

__all__ = ["CONFIGS_DIR", "SPEC_KEYS", "SpecError", "SweepSpec", "Trial", "compose_base", "load_spec",
           "method_label", "resolve_spec_path", "search_trial", "MAX_LABEL"]
REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC_KEYS = ("name", "defaults", "base", "seeds", "resources", "max_concurrent", "max_failures",
             "report_interval_s", "stall_timeout_s", "max_trials", "variants", "search", "scheduler", "report", "eval", "stop")
SECTIONS = tuple(k for k, v in trial_schema().items() if v is not None)  # mappings of the trial config
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


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
    stall_timeout_s: float = 1800.0
    """A trial that reports no step for this many seconds is ended and retried from its checkpoint (0 = never)."""
    eval: Any = None
    """The `eval:` section (evaluators.eval_config.EvalConfig): evaluate each trial's final checkpoint; None = no."""
    stop: list = field(default_factory=list)
    """The `stop:` section: rules that end a trial early (sweeps/specs/stop_rules.py StopRule)."""
    override_reach: list = field(default_factory=list)
    """Each trial-config override as typed and the ids of the trials it applies to (`--dry-run` shows it)."""


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


def _set_dotted(target: dict, dotted: str, value: Any, where: str = "config") -> dict:
    node = target
    parts = dotted.split(".")
    for i, part in enumerate(parts[:-1]):
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise SpecError(f"{where}: {'.'.join(parts[:i + 1])}: expected a mapping to set {dotted} in, got {node!r}")
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
    suffix = "-".join(id_part(k, v, exact=True) for k, v in sorted(values.items()))
    cid = cap_id(f"{template.config_id}-{suffix}")
    return Trial(f"{cid}.s{cfg.seed}", cid, template.method, template.variant, cfg)


def method_label(cfg: TrialConfig) -> str:
    """Display name of a method in tables: GRPO, SSPO (atanlog), DHPO-A, DHPO-E (unified), ...
    (the objective's ObjectiveSpec.label_for its parameters)."""
    return OBJECTIVES[cfg.algorithm.name].label_for(cfg.algorithm.params)


def _absolute_paths(data: dict, base: Path) -> None:
    """Paths are resolved against the directory `sweep run` was started in (workers may chdir).
    A value of the wrong type is left alone for TrialConfig to name."""
    absolute_paths(data, base)  # the backends' sections: their `paths` hooks (trainers/backends.py)
    d = data.get("data")
    if isinstance(d, dict) and d.get("train_file") and isinstance(d["train_file"], str):
        d["train_file"] = str((base / d["train_file"]).resolve())
    for files in ("eval_files", "select_files"):
        if isinstance(d, dict) and isinstance(d.get(files), dict):
            d[files] = {k: str((base / v).resolve()) if isinstance(v, str) else v for k, v in d[files].items()}
    if isinstance(d, dict) and isinstance(d.get("benchmarks"), list):  # the papers' benchmarks: their files, found now
        from evaluators.benchmarks import DEFAULT_DATA_DIR, PAPER_BENCHMARKS, find_benchmark_file

        files = d.setdefault("eval_files", {})
        for name in d["benchmarks"]:
            found = find_benchmark_file(name, base / DEFAULT_DATA_DIR) if name in PAPER_BENCHMARKS else None
            if isinstance(files, dict) and name not in files and found is not None:
                files[name] = str(found.resolve())
    m = data.get("model")
    if isinstance(m, dict) and m.get("path") and isinstance(m["path"], str):
        m["path"] = str((base / m["path"]).resolve())


def load_spec(name_or_path: str | Path, overrides: list[str] | None = None, cwd: Path | None = None) -> SweepSpec:
    """Load, compose, expand and validate a sweep spec. ``overrides``: Hydra overrides of the spec
    (``seeds=[0]``, ``+max_trials=50``, ``~search``), of its base trial config (``base.trainer.lr=3e-4``,
    ``~base.trainer.lr``) and of its presets (``model=qwen3_0.6b_local``); see sweeps/specs/overrides.py."""
    try:
        return _load(resolve_spec_path(name_or_path), overrides or [], cwd)
    except SpecError as err:
        if overrides and "command-line override" not in str(err):  # an error the overrides may have caused
            raise SpecError(f"{err} (with the command-line overrides {' '.join(overrides)})") from None
        raise


def _load(path: Path, overrides: list[str], cwd: Path | None) -> SweepSpec:
    src = str(path)
    raw, trial_overrides = _read_raw(path, overrides)
    name, seeds = _name_and_seeds(raw, src)
    variants = raw.get("variants")
    if not isinstance(variants, list) or not variants:
        raise SpecError(f"{src}: variants: expected a non-empty list of variants (the grid is empty)")
    max_trials = positive_int(raw, "max_trials", 10_000, src)
    all_axes = variant_axes(variants, seeds, max_trials, src)
    check_reach(trial_overrides, variants, [[k for k, _ in axes] for axes in all_axes], src)
    base = _base_config(raw, [o for o in trial_overrides if not o.is_param], src)
    resources = parse_resources(raw.get("resources", {}), src)
    max_concurrent = positive_int(raw, "max_concurrent", 2, src)
    max_failures = positive_int(raw, "max_failures", 2, src, minimum=0)
    report_interval_s = _seconds(raw, "report_interval_s", 1.0, src)
    stall_timeout_s = _seconds(raw, "stall_timeout_s", 1800.0, src)
    trials = _expand(variants, all_axes, seeds, base, resources, src, cwd or Path.cwd(), trial_overrides)
    check_sections(trial_overrides, {t.config.backend for t in trials}, [s.backend for s in sections()])
    search = check_search(raw.get("search"), src)
    if search is not None:
        _check_search_space(search, trials, src)
    try:  # e.g. verl: each trial's main_ppo config composed and checked by verl's own schema
        preflight([t.config for t in trials], src)
    except ConfigError as err:
        raise SpecError(str(err)) from None
    scheduler = check_scheduler(raw.get("scheduler"), src)
    eval_cfg = check_eval(raw.get("eval"), src, cwd or Path.cwd(), trials[0].config.data.eval_files if trials else {})
    report = report_with_defaults(check_report(raw.get("report", {}), src), trials, eval_cfg)
    try:
        stop = parse_stop_rules(raw.get("stop"), src)
    except StopRuleError as err:
        raise SpecError(str(err)) from None
    return SweepSpec(name, path, trials, resources, max_concurrent, max_failures, search, scheduler, report, raw,
                     report_interval_s, stall_timeout_s, eval_cfg, stop, _reach(trial_overrides, trials))


def _reach(overrides: list[TrialOverride], trials: list[Trial]) -> list[tuple[str, list[str]]]:
    """Each trial-config override as typed, with the trials it applies to (an objective parameter: those
    whose objective has it), for `sweep run --dry-run`."""
    reach = []
    for o in overrides:
        name = o.key[len("algorithm.params."):].split(".")[0]
        reach.append((o.ov.input_line or o.shown, [
            t.trial_id for t in trials if not o.is_param or name in OBJECTIVES[t.config.algorithm.name].param_docs()]))
    return reach


def _read_raw(path: Path, overrides: list[str]) -> tuple[dict, list[TrialOverride]]:
    """(the spec's mapping with the spec's own overrides applied, the overrides left for the trial config)."""
    src = str(path)
    try:
        raw = parse_yaml(path.read_text(encoding="utf-8"), src)
    except UnicodeDecodeError as err:
        raise SpecError(f"{src}: expected UTF-8 text ({err})") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{src}: expected a mapping at the top level")
    check_values(raw, src)
    trial_overrides = apply_spec_overrides(raw, parse_overrides(overrides, src), SPEC_KEYS)
    for key in raw:
        if key not in SPEC_KEYS:
            raise unknown_key(src, key, SPEC_KEYS)
    return raw, trial_overrides


def _name_and_seeds(raw: dict, src: str) -> tuple[str, list[int]]:
    name = raw.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        raise SpecError(f"{src}: name: expected 1-100 characters of letters, digits, '_', '.', '-' (starting with a "
                        f"letter or digit, no '..'), without spaces or slashes, got {name!r}")
    seeds = raw.get("seeds", [0])
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED for s in seeds):
        raise SpecError(f"{src}: seeds: expected a non-empty list of integers in [0, {MAX_SEED}], got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise SpecError(f"{src}: seeds: duplicate seeds in {seeds}")
    return name, seeds


def _base_config(raw: dict, trial_overrides: list[TrialOverride], src: str) -> dict:
    """The base trial config: the defaults: presets composed, the base: section over them, then the overrides."""
    base = compose_base(raw.get("defaults", []), src)
    if raw.get("base") is not None:
        if not isinstance(raw["base"], dict):
            raise SpecError(f"{src}: base: expected a mapping of trial-config overrides")
        for key, value in raw["base"].items():
            if key in SECTIONS and not isinstance(value, dict):
                hint = (f"; to switch the {key} preset use defaults: [{{{key}: {value}}}] or the override {key}={value}"
                        if key in preset_groups() and isinstance(value, str) else "")
                raise SpecError(f"{src}: base.{key}: expected a mapping of {key} settings, got {value!r}{hint}")
        for key, value in flatten(raw["base"]).items():
            _set_dotted(base, key, value, f"{src}: base")
    apply_trial_overrides(base, trial_overrides)
    return base


def _expand(variants: list, all_axes: list, seeds: list[int], base: dict, resources, src: str, cwd: Path,
            overrides: list[TrialOverride]) -> list[Trial]:
    """Every trial: each variant's grid of axis values times the seeds, each config validated; ``overrides``:
    the trial-config overrides (the objective parameters among them applied once the variant chose the objective;
    an error at an override's key names the override)."""
    trials: list[Trial] = []
    seen: dict[str, str] = {}
    replicates = any(v.get("seed_offset") for v in variants)  # then no trial may repeat another's config and seed
    runs: dict[str, tuple[str, int]] = {}  # config hash -> (where, its variant's seed offset)
    for vi, (variant, axes) in enumerate(zip(variants, all_axes)):
        where = f"{src}: variants[{vi}]"
        label = variant.get("label")
        offset = seed_offset(variant, seeds, where)
        for combo in itertools.product(*[values for _, values in axes]):
            chosen = [(k, value) for (k, _), value in zip(axes, combo)]
            cid = config_id(chosen[0][1], chosen, seed_offset=offset)
            for seed in seeds:
                data = copy.deepcopy(base)
                if data.get("algorithm", {}).get("name") != chosen[0][1]:
                    data["algorithm"] = {"name": chosen[0][1], "params": {}}  # base params belong to another objective
                param_overrides(data, overrides)
                for key, value in chosen:
                    _set_dotted(data, key, value, where)
                data["seed"] = seed + offset
                _absolute_paths(data, cwd)
                resolve_resources(data, resources)  # e.g. verl.device: auto -> cpu or cuda
                try:
                    cfg = TrialConfig.from_dict(data, source=where)
                    check_resources(cfg, resources, where)
                except ConfigError as err:
                    raise SpecError(blame_override(str(err), where, overrides, chosen[0][1])) from None
                trial_id = f"{cid}.s{cfg.seed}"
                if trial_id in seen:
                    raise SpecError(f"{where}: duplicate trial id {trial_id!r} (also from {seen[trial_id]}); "
                                    "give the variants different values or a distinguishing key")
                seen[trial_id] = where
                trial = Trial(trial_id, cid, label or method_label(cfg), vi, cfg)
                if replicates:
                    _check_replicate(trial, offset, runs, seeds, src, f"variants[{vi}] ({trial_id})")
                trials.append(trial)
    return trials


def _check_replicate(trial: Trial, offset: int, runs: dict[str, tuple[str, int]], seeds: list[int], src: str,
                     here: str) -> None:
    """A variant with a seed offset is a replicate on other seeds: refuse one of its trials that has the same
    config and seed as another variant's (the two rows would report bit-identical numbers)."""
    twin = runs.get(trial.config_hash)
    if twin is not None and (offset or twin[1]):
        raise SpecError(f"{src}: {here}: the same configuration and seed {trial.config.seed} as {twin[0]}: a variant "
                        f"with seed_offset must run other seeds than the one it replicates; expected a seed_offset "
                        f"greater than the seeds' spread {max(seeds) - min(seeds)} (e.g. seed_offset: 100)")
    runs.setdefault(trial.config_hash, (here, offset))


def _check_search_space(search: dict, trials: list[Trial], src: str) -> None:
    """A search runs around one configuration, and each key of its space is a valid trial-config key."""
    configs = {t.config_id for t in trials}
    if len(configs) != 1:
        raise SpecError(f"{src}: search: expected exactly one variant without grid axes to search around, "
                        f"got {len(configs)} configurations ({sorted(configs)[:4]}...)")
    for key in search["space"]:
        template = _set_dotted(copy.deepcopy(trials[0].config.to_dict()), key, _example(search["space"][key]),
                               f"{src}: search.space.{key}")
        try:
            TrialConfig.from_dict(template, source=f"{src}: search.space")
        except ConfigError as err:
            raise SpecError(str(err)) from None


def _seconds(raw: dict, key: str, default: float, src: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SpecError(f"{src}: {key}: expected a number of seconds >= 0, got {value!r}")
    return float(value)
