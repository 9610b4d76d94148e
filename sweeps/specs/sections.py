"""Validation of a sweep spec's non-grid sections: resources, search, scheduler, report, eval.

Each check raises SpecError naming the spec file, the key path and what was expected.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.metrics import EVAL, VAL_AVG
from sweeps.specs.errors import SpecError, unknown_key


@dataclass
class Resources:
    cpus: float = 1.0
    gpus: float = 0.0


def positive_int(raw: dict, key: str, default: int, src: str, minimum: int = 1) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"{src}: {key}: expected an integer >= {minimum}, got {value!r}")
    return value


def parse_resources(value: Any, src: str) -> Resources:
    if not isinstance(value, dict):
        raise SpecError(f"{src}: resources: expected a mapping like {{cpus: 1, gpus: 0}}, got {value!r}")
    for key, v in value.items():
        if key not in ("cpus", "gpus"):
            raise unknown_key(f"{src}: resources", key, ["cpus", "gpus"])
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise SpecError(f"{src}: resources.{key}: expected a number >= 0 (fractions allowed), got {v!r}")
    res = Resources(float(value.get("cpus", 1)), float(value.get("gpus", 0)))
    if res.cpus <= 0:
        raise SpecError(f"{src}: resources.cpus: expected a number > 0, got {res.cpus}")
    return res


def check_section(section: Any, name: str, allowed: tuple[str, ...], src: str) -> None:
    """A mapping with known keys only, and mode (if any) in max/min."""
    if not isinstance(section, dict):
        raise SpecError(f"{src}: {name}: expected a mapping with keys {list(allowed)}")
    for key in section:
        if key not in allowed:
            raise unknown_key(f"{src}: {name}", key, allowed)
    if section.get("mode", "max") not in ("max", "min"):
        raise SpecError(f"{src}: {name}.mode: expected 'max' or 'min', got {section.get('mode')!r}")


def check_search(search: Any, src: str) -> dict | None:
    if search is None:
        return None
    check_section(search, "search", ("method", "metric", "mode", "num_samples", "space"), src)
    if search.get("method", "optuna") != "optuna":
        raise SpecError(f"{src}: search.method: expected 'optuna', got {search.get('method')!r}")
    if not isinstance(search.get("metric"), str):
        raise SpecError(f"{src}: search.metric: expected a metric name such as val/avg/acc")
    n = search.get("num_samples", 8)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SpecError(f"{src}: search.num_samples: expected an integer >= 1, got {n!r}")
    space = search.get("space")
    if not isinstance(space, dict) or not space:
        raise SpecError(f"{src}: search.space: expected a mapping key.path -> {{type: float|int|choice, ...}}")
    for key, dist in space.items():
        where = f"{src}: search.space.{key}"
        if not isinstance(dist, dict) or dist.get("type") not in ("float", "int", "choice"):
            raise SpecError(f"{where}: expected {{type: float|int, low, high[, log]}} or {{type: choice, values: [...]}}")
        if dist["type"] == "choice":
            if not isinstance(dist.get("values"), list) or not dist["values"]:
                raise SpecError(f"{where}.values: expected a non-empty list")
        elif not all(isinstance(dist.get(b), (int, float)) for b in ("low", "high")) or dist["low"] >= dist["high"]:
            raise SpecError(f"{where}: expected numbers low < high, got low={dist.get('low')!r} high={dist.get('high')!r}")
    return {"method": "optuna", "mode": search.get("mode", "max"), "num_samples": n, **search}


def check_scheduler(scheduler: Any, src: str) -> dict | None:
    if scheduler is None:
        return None
    check_section(scheduler, "scheduler", ("type", "metric", "mode", "grace_period", "reduction_factor"), src)
    if scheduler.get("type") != "asha":
        raise SpecError(f"{src}: scheduler.type: expected 'asha', got {scheduler.get('type')!r}")
    merged = {"metric": VAL_AVG, "mode": "max", "grace_period": 20, "reduction_factor": 2, **scheduler}
    checks = (("metric", lambda v: isinstance(v, str) and bool(v), "a metric name such as val/avg/acc"),
              ("mode", lambda v: v in ("max", "min"), "'max' or 'min'"),
              ("grace_period", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "an integer >= 1"),
              ("reduction_factor", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 1,
               "a number > 1"))
    for key, ok, expected in checks:
        if not ok(merged[key]):
            raise SpecError(f"{src}: scheduler.{key}: expected {expected}, got {merged[key]!r}")
    return merged


def check_report(report: Any, src: str) -> dict:
    if not isinstance(report, dict):
        raise SpecError(f"{src}: report: expected a mapping, got {report!r}")
    try:
        from dashboards.model.report import ReportConfig  # no pandas or plotly: the report itself is not drawn

        ReportConfig.from_dict(report)
    except ImportError:
        pass
    except ValueError as err:
        msg = str(err)
        raise SpecError(f"{src}: {msg}" if msg.startswith("report") else f"{src}: report: {msg}") from None
    return report


def report_with_defaults(report: dict, trials: list, eval_cfg) -> dict:
    """The `report:` section as the sweep's report uses it (recorded with the sweep, so `sweep report
    NAME` makes the same report): unless the spec says otherwise, benchmark columns in config order
    (the eval: section's for eval/ metrics) and method rows in spec order."""
    report = copy.deepcopy(report)
    table = report.setdefault("table", {})
    evaluated = str(table.get("metric", "")).startswith(EVAL) and eval_cfg is not None
    if trials:
        table.setdefault("benchmarks", list(eval_cfg.benchmarks if evaluated else trials[0].config.data.benchmarks))
    if table.get("rows", "method") == "method":
        table.setdefault("methods", list(dict.fromkeys(t.method for t in trials)))
    return report


def check_eval(section: Any, src: str, cwd: Path, trial_files: dict[str, str] | None = None):
    """The `eval:` section as an EvalConfig (paths made absolute against `cwd`), or None when absent.
    A benchmark without an `eval.files` entry uses the trials' `data.eval_files` one of that name
    (`trial_files`, already absolute), before `eval.data_dir`. Every benchmark file is found and read
    now: a missing one is a spec error before any trial runs."""
    if section is None:
        return None
    from evaluators.eval_config import EvalConfig, EvalConfigError
    from trial_eval.eval_run import load_problems

    if not isinstance(section, dict):
        raise SpecError(f"{src}: eval: expected a mapping like {{benchmarks: [aime24, math500]}}, got {section!r}")
    try:
        cfg = EvalConfig.from_dict(section, where=f"{src}: eval")
        cfg.data_dir = str((cwd / cfg.data_dir).resolve())
        cfg.files = {name: str((cwd / path).resolve()) for name, path in cfg.files.items()}
        for name in cfg.benchmarks:
            if name not in cfg.files and name in (trial_files or {}):
                cfg.files[name] = trial_files[name]
        load_problems(cfg, log=lambda note: None)  # size notes are printed when the evaluation runs
    except (EvalConfigError, ValueError, OSError) as err:
        msg = str(err)
        raise SpecError(msg if msg.startswith(src) else f"{src}: eval: {msg}") from None
    return cfg
