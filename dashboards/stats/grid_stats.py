"""A grid's own numbers: every configuration of every method, the selection bias, and whether the
setting matters more than the seed.

    frame = grid_frame(history, table_config)   # one row per trial: selection score, reported AVG
    rows = grid_rows(frame)                      # per configuration: means, 95% t-intervals, rank, picks,
                                                 # mean clip fraction and gate weight over the steps
    shares = variance_shares(frame)              # per method: configurations' vs seeds' share of variance
    bias = selection_bias(rows)                  # per method: what picking on the reported split claims

A trial's *selection score* is the table's own ``select_by`` read where the table reads it
(``select_on``: the selection split or the reported benchmarks), at its step (``at``); its *reported
AVG* is the mean over the table's benchmarks at that step: the held-out value when the selection
split picked it. Ranks and the pick are by the mean selection score over seeds, as the table picks.

"Does the setting matter" is a one-way random-effects decomposition of the reported AVG over a
method's configurations (k configurations, N trials): MS_between and MS_within from the usual ANOVA,
sigma2_config = max(0, (MS_between - MS_within) / n0) with n0 = (N - sum n_i^2 / N) / (k - 1),
sigma2_seed = MS_within; the configurations' share is sigma2_config / (sigma2_config + sigma2_seed),
with F = MS_between / MS_within and its p-value (scipy's F distribution).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dashboards.collect.sweep_results import results_from_history
from dashboards.model.report import MECHANISMS
from dashboards.model.table import TableConfig

KEYS = ["model", "method", "config"]


def grid_frame(history: pd.DataFrame, cfg: TableConfig) -> pd.DataFrame:
    """(model, method, config, seed, selection, reported, split): one row per trial of the history."""
    cfg = replace(cfg, base=None, delta_avg=False, rows="method")
    results, scores = results_from_history(history, cfg)
    split = scores.attrs.get("selected_on", ("reported", None))[0]
    reported = (results.groupby(KEYS + ["seed"], observed=True)["value"].mean()  # AVG over the benchmarks
                .rename("reported").reset_index())
    frame = scores[KEYS + ["seed", "score"]].rename(columns={"score": "selection"}).merge(
        reported, on=KEYS + ["seed"], how="inner")
    frame["split"] = split
    return frame.merge(mechanisms(history), on=KEYS + ["seed"], how="left")


def mechanisms(history: pd.DataFrame) -> pd.DataFrame:
    """(model, method, config, seed, clip_fraction, gate_weight): each trial's mean over its training
    steps of the objective's clip fraction and SAPO/SSPO gate weight (NaN where not logged)."""
    h = history[history["key"].isin(MECHANISMS.values()) & (history["step"] > 0)].copy()
    h["seed"] = h["seed"].astype(object).where(h["seed"].notna(), h["run_id"])
    wide = h.pivot_table(index=KEYS + ["seed"], columns="key", values="value", aggfunc="mean", observed=True)
    wide = wide.reindex(columns=list(MECHANISMS.values())).rename(columns={v: k for k, v in MECHANISMS.items()})
    return wide.reset_index()


def _mean_ci(values: np.ndarray) -> tuple[float, float | None]:
    """Mean and the half-width of its 95% t-interval (None with one value)."""
    from scipy import stats

    values = values[~np.isnan(values)]
    if len(values) == 0:
        return math.nan, None
    if len(values) < 2:
        return float(values.mean()), None
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    return float(values.mean()), float(half)


def grid_rows(frame: pd.DataFrame, mode: str = "max") -> pd.DataFrame:
    """Per configuration: n, selection and reported mean ± 95% half-width, rank within its method by
    the selection score (1 = picked, as the table picks), and whether it is the best on the reported AVG."""
    out = []
    for (model, method, config), g in frame.groupby(KEYS, observed=True, sort=False):
        sel, sel_ci = _mean_ci(g["selection"].to_numpy(float))
        rep, rep_ci = _mean_ci(g["reported"].to_numpy(float))
        out.append({"model": model, "method": method, "config": config, "n": len(g), "selection": sel,
                    "selection_ci": sel_ci, "reported": rep, "reported_ci": rep_ci, "split": g["split"].iloc[0],
                    **{k: g[k].mean() if k in g else np.nan for k in MECHANISMS}})
    rows = pd.DataFrame(out)
    if rows.empty:
        return rows
    first = {key: i for i, key in enumerate(dict.fromkeys(zip(rows["model"], rows["method"])))}
    rows = rows.iloc[sorted(range(len(rows)), key=lambda i: first[(rows["model"].iloc[i], rows["method"].iloc[i])])]
    rows = rows.reset_index(drop=True)  # a method's configurations together, in the trials' order
    ascending = mode != "max"
    ordered = rows.sort_values(["model", "method", "config"])  # ties: the first config in name order, as the table
    rows["rank"] = (ordered.groupby(["model", "method"], observed=True)["selection"]
                    .rank(method="first", ascending=ascending, na_option="bottom").reindex(rows.index).astype(int))
    best = ordered.groupby(["model", "method"], observed=True)["reported"].rank(method="first", ascending=ascending,
                                                                             na_option="bottom")
    rows["best_reported"] = best.reindex(rows.index) == 1
    return rows


@dataclass
class Share:
    model: str
    method: str
    configs: int
    trials: int
    config_share: float
    """sigma2_config / (sigma2_config + sigma2_seed) of the reported AVG, in [0, 1]."""
    f: float
    p: float
    spread: float
    """Largest minus smallest configuration mean of the reported AVG."""


def variance_shares(frame: pd.DataFrame) -> list[Share]:
    """One-way random-effects decomposition per method with >= 2 configurations and a seed to spare."""
    from scipy import stats

    out = []
    for (model, method), g in frame.groupby(["model", "method"], observed=True, sort=False):
        groups = [v["reported"].dropna().to_numpy(float) for _, v in g.groupby("config", observed=True)]
        groups = [x for x in groups if len(x)]
        k, n = len(groups), sum(len(x) for x in groups)
        if k < 2 or n <= k:
            continue
        grand = np.concatenate(groups).mean()
        ss_between = sum(len(x) * (x.mean() - grand) ** 2 for x in groups)
        ss_within = sum(((x - x.mean()) ** 2).sum() for x in groups)
        ms_b, ms_w = ss_between / (k - 1), ss_within / (n - k)
        n0 = (n - sum(len(x) ** 2 for x in groups) / n) / (k - 1)
        sigma_c, sigma_s = max(0.0, (ms_b - ms_w) / n0), ms_w
        total = sigma_c + sigma_s
        share = sigma_c / total if total > 0 else 0.0
        f = ms_b / ms_w if ms_w > 0 else math.inf
        p = float(stats.f.sf(f, k - 1, n - k)) if math.isfinite(f) else 0.0
        means = [x.mean() for x in groups]
        out.append(Share(str(model), str(method), k, n, share, f, p, float(max(means) - min(means))))
    return out


def selection_bias(rows: pd.DataFrame) -> pd.DataFrame:
    """Per method with >= 2 configurations: the picked configuration's selection score and reported AVG,
    and the best reported AVG of any configuration (what picking on the reported split would claim);
    bias = best reported - picked reported (0 when both picks agree)."""
    out = []
    for (model, method), g in rows.groupby(["model", "method"], observed=True, sort=False):
        if len(g) < 2:
            continue
        picked, best = g[g["rank"] == 1].iloc[0], g[g["best_reported"]].iloc[0]
        out.append({"model": model, "method": method, "picked": picked["config"], "picked_selection": picked["selection"],
                    "picked_reported": picked["reported"], "best_reported_config": best["config"],
                    "best_reported": best["reported"], "bias": best["reported"] - picked["reported"],
                    "split": picked["split"]})
    return pd.DataFrame(out)
