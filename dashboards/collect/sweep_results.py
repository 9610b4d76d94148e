"""A sweep's per-trial values out of its metric history: the long results frame a paper table is built from.

    from dashboards.collect.sweep_results import results_from_history
    results, scores = results_from_history(collect("my_sweep").history, TableConfig(at="best"))

Each trial's value at its final step or at its best `select_by` step (picked on the selection split
where one was logged), the base row from step-0 values; dashboards/tables/from_sweep.py builds the
table, dashboards/stats/grid_stats.py judges a grid's picks with the same values.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from contract.metrics import SELECT, selection_key
from dashboards.model.table import AVG, TableConfig


def _bench_pattern(metric: str) -> re.Pattern:
    a, b = metric.split("{benchmark}", 1)
    return re.compile(f"^{re.escape(a)}([^/]+){re.escape(b)}$")


def benchmark_of_keys(history: pd.DataFrame, metric: str) -> dict[str, str]:
    """{key: benchmark} of the history's keys that match `metric` (e.g. val/{benchmark}/acc), avg excluded."""
    pat = _bench_pattern(metric)
    return {k: m.group(1) for k in pd.unique(history["key"]) if (m := pat.match(str(k))) and m.group(1) != "avg"}


def seed_or_run(rows: pd.DataFrame) -> pd.Series:
    """Each row's seed, or its run id for a run without one (it then counts as a seed of its own)."""
    return rows["seed"].astype(object).where(rows["seed"].notna(), rows["run_id"])


def results_from_history(history: pd.DataFrame, cfg: TableConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-trial values from a sweep's history: (results, scores).

    results: long (model, method, config, seed, benchmark, value), plus the base row's step-0
    values when `cfg.base` is set (method = config = cfg.base, one sample per seed).
    scores: (model, method, config, seed, score) = `select_by` at the chosen step, for picking
    the best config per method, with the run_id and the step its benchmark values come from.
    """
    cfg.validate()
    bench_of = benchmark_of_keys(history, cfg.metric)
    wanted = set(cfg.benchmarks) if cfg.benchmarks else set(bench_of.values())
    bench_of = {k: b for k, b in bench_of.items() if b in wanted}
    sel = cfg.select_by
    sel_key = cfg.metric.format(benchmark=sel) if sel and sel in wanted else sel
    split = selection_split(history, cfg, sel_key)
    twins = {selection_key(k): k for k in bench_of} if split == "select" else {}
    if split == "select" and sel != AVG:
        sel_key = selection_key(sel_key)
    h = history[history["key"].isin(set(bench_of) | {sel_key} | set(twins))]
    meta = ["run_id", "model", "method", "config", "seed"]
    runs = h.drop_duplicates("run_id")[meta].copy()
    runs["seed"] = seed_or_run(runs)
    runs["_order"] = range(len(runs))  # keep the history's (= trials') order for the rows
    wide = h.pivot_table(index=["run_id", "step"], columns="key", values="value", aggfunc="last",
                         observed=True)
    wide = wide.reset_index().merge(runs, on="run_id")
    if sel == AVG:
        sel_key = "__avg__"
        on = twins if split == "select" else bench_of
        wide[sel_key] = wide[[k for k in on if k in wide]].mean(axis=1, skipna=False)
    if cfg.at == "final":
        picked = wide.sort_values("step").groupby("run_id", sort=False, observed=True).last()  # last non-null per column
        picked = picked.reset_index()
    else:
        if sel_key not in wide:
            raise ValueError(f"TableConfig.select_by: metric {sel!r} was not logged; "
                             f"logged keys: {', '.join(sorted(map(str, pd.unique(history['key']))))}")
        cand = wide.dropna(subset=[sel_key])
        trained = cand[cand["step"] > 0]
        cand = pd.concat([trained, cand[~cand["run_id"].isin(trained["run_id"])]])
        cand = cand.sort_values(["run_id", "step"])
        idx = (cand.groupby("run_id", observed=True)[sel_key].idxmax() if cfg.mode == "max"
               else cand.groupby("run_id", observed=True)[sel_key].idxmin())
        picked = cand.loc[idx.values]
    picked = picked.sort_values("_order", kind="stable")
    cols = [k for k in bench_of if k in picked]
    results = picked.melt(id_vars=meta, value_vars=cols, var_name="key", value_name="value")
    results["benchmark"] = results["key"].map(bench_of)
    results = results.drop(columns=["key", "run_id"])
    scores = picked[meta[1:]].copy()
    scores["score"] = picked[sel_key] if sel_key in picked else np.nan
    scores["run_id"] = picked["run_id"].values
    scores.attrs["selected_on"] = (split, sel_key if sel != AVG else AVG)
    if cfg.at == "final":  # the last step with every benchmark value (the step the final values come from)
        full = wide.dropna(subset=cols) if cols else wide.iloc[:0]
        last = full.groupby("run_id", observed=True)["step"].max()
        scores["step"] = picked["run_id"].map(last).values
    else:
        scores["step"] = picked["step"].values
    if cfg.base:
        step0 = h[(h["step"] == 0) & h["key"].isin(bench_of)]
        # One sample per (model, seed): the trials of one seed evaluate the same base policy with the
        # same seed (build_table averages their values per seed); a trial without a seed counts alone.
        seeds = seed_or_run(step0)
        base = pd.DataFrame({"model": step0["model"].values, "method": cfg.base, "config": cfg.base,
                             "seed": seeds.values,
                             "benchmark": step0["key"].map(bench_of).values, "value": step0["value"].values})
        results = pd.concat([base, results], ignore_index=True)
    return results, scores


def selection_split(history: pd.DataFrame, cfg: TableConfig, sel_key: str | None) -> str:
    """'select' or 'reported': where `select_by` is read (TableConfig.select_on; 'auto' = the selection
    split where its keys were logged and `select_by` is a validation value or AVG)."""
    has_twin = sel_key == AVG or (isinstance(sel_key, str) and selection_key(sel_key) != sel_key)
    logged = history["key"].astype(str).str.startswith(SELECT).any()
    if cfg.select_on == "select" and not (has_twin and logged):
        raise ValueError(f"TableConfig.select_on: 'select' needs select/ values of {cfg.select_by!r} (a trial "
                         f"setting data.select_size or data.select_files); "
                         + ("none were logged" if not logged else f"{sel_key!r} has no selection-split twin"))
    return "select" if cfg.select_on != "reported" and has_twin and logged else "reported"
