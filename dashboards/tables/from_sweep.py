"""Paper tables from a recorded sweep: per-trial values out of its metric history, benchmark order.

    from dashboards.tables.from_sweep import table_from_sweep
    table = table_from_sweep(collect("my_sweep"), TableConfig(base="Base"))

`table_from_sweep` builds the table (dashboards/tables/build.py `build_table`) of the per-trial values
that dashboards/collect/sweep_results.py reads out of the history, orders the benchmark columns as the
trials declared them and footnotes FAILED and early-stopped trials.
"""

from __future__ import annotations

import ast
from dataclasses import replace

import pandas as pd

from dashboards.collect.sweep_results import benchmark_of_keys, results_from_history, seed_or_run
from dashboards.tables.build import Table, TableConfig, build_table
from evaluators.eval_config import PAPER_BENCHMARKS


BENCHMARKS_PARAM = "params.data.benchmarks"
"""The trials' configured benchmark list (built-in trainer), e.g. "['easy', 'medium', 'hard']"."""


def declared_benchmark_order(trials: pd.DataFrame) -> list[str]:
    """Benchmarks in the order the trials' configs list them (first appearance across trials), from
    the ``data.benchmarks`` param; [] when no trial has a readable one."""
    names: list[str] = []
    for raw in trials.get(BENCHMARKS_PARAM, pd.Series(dtype=object)).dropna().unique():
        try:
            listed = ast.literal_eval(str(raw))
        except (ValueError, SyntaxError):
            continue
        if isinstance(listed, (list, tuple)):
            names += [str(n) for n in listed]
    return list(dict.fromkeys(names))


def with_declared_benchmarks(data, cfg: TableConfig) -> TableConfig:
    """cfg, or without `benchmarks` set: the benchmarks logged (cfg.metric keys) in the trials'
    configured order, then any others (the papers' benchmarks in DHPO Table 1 order, the rest
    sorted). Unchanged when the trials declare none."""
    declared = declared_benchmark_order(data.trials)
    if cfg.benchmarks is not None or not declared:
        return cfg
    logged = set(benchmark_of_keys(data.history, cfg.metric).values())
    order = [b for b in declared if b in logged]
    paper = {name: i for i, name in enumerate(PAPER_BENCHMARKS)}  # eval/ metrics: DHPO Table 1's order first
    rest = sorted(logged - set(order), key=lambda b: (paper.get(b, len(paper)), b))
    return replace(cfg, benchmarks=(order + rest) or None)


def failed_trials(trials):
    """The FAILED rows of a sweep's trials (crash, divergence, stall): no table mean and no curve has them."""
    return trials[trials["status"].eq("FAILED")] if "status" in trials else trials.iloc[:0]


def evaluation_picks(history: pd.DataFrame, scores: pd.DataFrame, cfg: TableConfig) -> pd.DataFrame:
    """(run_id, model, method, config, seed, step) of every evaluation behind the table's values: the
    trials' (from `scores`) and, with a base row, one step-0 run per (model, seed)."""
    cols = ["run_id", "model", "method", "config", "seed", "step"]
    picks = scores.dropna(subset=["step"])[cols] if "step" in scores else pd.DataFrame(columns=cols)
    if cfg.base:
        keys = set(benchmark_of_keys(history, cfg.metric))
        step0 = history[(history["step"] == 0) & history["key"].isin(keys)].drop_duplicates("run_id")
        seeds = seed_or_run(step0)
        base = pd.DataFrame({"run_id": step0["run_id"].values, "model": step0["model"].values, "method": cfg.base,
                             "config": cfg.base, "seed": seeds.values, "step": 0})
        picks = pd.concat([picks, base.drop_duplicates(["model", "seed"])], ignore_index=True)
    return picks


def needs_verdicts(cfg: TableConfig) -> bool:
    """Whether the table uses per-problem verdicts: a paired test, or intervals."""
    return cfg.significance in ("auto", "paired") or cfg.cell_text == "mean ± ci"


def table_from_sweep(data, cfg: TableConfig | None = None) -> Table:
    """Table straight from `collect(...)` output (a SweepData); benchmark columns as in
    `with_declared_benchmarks`; the per-problem verdicts of its evaluations when the table tests or
    shows intervals (dashboards/collect/verdicts.py)."""
    cfg = with_declared_benchmarks(data, (cfg or TableConfig()).validate())
    failed = failed_trials(data.trials)
    history = data.history[~data.history["run_id"].isin(set(failed["run_id"]))] if len(failed) else data.history
    results, scores = results_from_history(history, cfg)
    problems = None
    if needs_verdicts(cfg) and data.tracking_uri:
        from dashboards.collect.verdicts import problem_frame

        problems = problem_frame(data, evaluation_picks(history, scores, cfg), cfg.metric, cfg.benchmarks)
    table = build_table(results, cfg, scores=scores, params=data.trials, problems=problems)
    if len(failed):  # a failed trial (crash, divergence, stall) never enters a mean
        reasons = [f"{r.method} {r.trial_id}" + (f" ({r.failure_reason})" if isinstance(r.failure_reason, str) else "")
                   for r in failed.itertuples()]
        table.footnotes.append(f"Left out: {len(failed)} FAILED trial(s): {'; '.join(reasons)}")
    stopped = data.trials[data.trials["stopped_by"].fillna("").astype(str).str.startswith("rule ")] \
        if "stopped_by" in data.trials else data.trials.iloc[:0]
    if len(stopped):  # ended early by a stop rule: their values are those at the stop
        which = [f"{r.method} {r.trial_id} ({r.stopped_by})" for r in stopped.itertuples()]
        table.footnotes.append(f"Stopped early by a stop rule: {'; '.join(which)}")
    return table
