"""Paper-style comparison tables (DHPO Table 1, SSPO Table 1) from a sweep or a results file.

    from dashboards.tables.build import TableConfig, build_table
    table = build_table(load_results("results.csv"), TableConfig(base="Base", delta_avg=True, select_by="AVG"))
    print(table.to_markdown()); open("t.tex", "w").write(table.to_latex())
    # from a recorded sweep: dashboards.tables.from_sweep.table_from_sweep(collect("my_sweep"), cfg)

Layout: one block per model (a header row), rows = methods (optional base-model row first),
columns = benchmarks in the chosen order, AVG (mean of the benchmark columns) and optionally
Delta Avg = mean over benchmarks of (row - base row), the SSPO "average absolute improvement".

Values: each trial contributes the metric at its final logged step (at="final") or at the step
where `select_by` is best (at="best", step 0 excluded unless it is the only one); a cell is the
mean over seeds (sample std, ddof=1, with std=True). AVG = mean of the row's benchmark means
(missing if any benchmark cell is missing); its std is over seeds of the per-seed average.
With several configs per method (a hyper-parameter grid) each method shows the config whose
mean-over-seeds `select_by` score is best; a footnote lists the chosen configs.

Emphasis, computed per model block and per column (benchmarks, AVG, Delta Avg), over method rows
(never the base row), on values rounded to the displayed precision, direction-aware
(`lower_is_better`), missing cells ("—") excluded:
  * bold      = best value (all ties bold);
  * underline = second place under standard competition ranking: rows with exactly one row
                strictly better (so when two rows tie for best, nothing is underlined);
  * italic    = every cell of the strongest baseline row: the ONE row among `baselines` with the best
                AVG (computed even when the AVG column is hidden; a tie at the shown precision goes
                to the better unrounded AVG, then to the baseline listed first). Marks combine:
                a strongest-baseline cell that is also the column best is bold italic.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from dashboards.tables.render import Table
from dashboards.stats.cell_stats import add_intervals, attach_scores
from dashboards.stats.significance import mark_significance
from dashboards.model.table import AVG, DELTA, Cell, Row, TableConfig

__all__ = ["AVG", "DELTA", "Cell", "Row", "Table", "TableConfig", "build_table"]


def _select_configs(res: pd.DataFrame, scores: pd.DataFrame | None, cfg: TableConfig,
                    benches: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Keep, per (model, method), the config with the best mean-over-seeds score (ties: the
    first config in name order)."""
    n_cfg = res.groupby(["model", "method"], observed=True)["config"].nunique()
    if cfg.rows == "config" or (n_cfg <= 1).all():
        return res, []
    sel = cfg.select_by
    if scores is None or scores["score"].isna().all():
        if sel in benches:
            per_seed = res[res["benchmark"] == sel]
        elif sel in (None, AVG):
            per_seed = res.groupby(["model", "method", "config", "seed"], as_index=False, observed=True)["value"].mean()
        else:
            raise ValueError(f"TableConfig.select_by: {sel!r} is neither 'AVG' nor a benchmark "
                             f"({', '.join(benches)}); cannot pick the best config per method")
        scores = per_seed.rename(columns={"value": "score"})
    mean = scores.groupby(["model", "method", "config"], observed=True)["score"].mean().reset_index()
    mean = mean.sort_values(["model", "method", "config"])
    pick = mean.groupby(["model", "method"], observed=True)["score"]
    best = mean.loc[pick.idxmax() if cfg.mode == "max" else pick.idxmin()]
    notes = []
    for _, b in best.iterrows():
        if n_cfg.get((b["model"], b["method"]), 1) > 1:
            notes.append((b["model"], b["method"], b["config"], b["score"]))
    first = {k: i for i, k in enumerate(dict.fromkeys(zip(res["model"], res["method"])))}
    notes.sort(key=lambda n: first[(n[0], n[1])])  # footnotes in row order
    keep = set(zip(best["model"], best["method"], best["config"]))
    mask = [(m, me, c) in keep for m, me, c in zip(res["model"], res["method"], res["config"])]
    return res[mask], notes


def build_table(results: pd.DataFrame, cfg: TableConfig | None = None,
                scores: pd.DataFrame | None = None, params: pd.DataFrame | None = None,
                problems: pd.DataFrame | None = None) -> Table:
    """Aggregate a long results frame (model, method, config, seed, benchmark, value) into a Table.

    scores: optional (model, method, config, seed, score) for best-config selection (else the
    selection uses `select_by` as a benchmark name or 'AVG'). params: optional trials frame with
    config + params.* columns, to list the chosen hyper-parameters in the footnote. problems:
    optional per-problem values (model, method, config, seed, benchmark, problem, value) behind the
    results, for the paired test and intervals (dashboards/stats/cell_stats.py).
    """
    cfg = (cfg or TableConfig()).validate()
    res = results.copy()
    for c in ("config", "seed"):
        if c not in res:
            res[c] = res["method"] if c == "config" else 0
    res = res.dropna(subset=["value"])
    found = list(dict.fromkeys(sorted(res.loc[res["method"] != cfg.base, "benchmark"].unique())))
    benches = list(cfg.benchmarks) if cfg.benchmarks else found
    absent = [b for b in benches if b not in set(res["benchmark"])]
    if absent:
        warnings.warn(f"TableConfig.benchmarks: no values for {absent}; shown as '—'", stacklevel=2)
    res = res[res["benchmark"].isin(benches)]
    base_rows = res[res["method"] == cfg.base] if cfg.base else res.iloc[:0]
    if cfg.base and base_rows.empty:
        raise ValueError(f"TableConfig.base: no results for base row {cfg.base!r} (sweeps: step-0 validation "
                         f"values; results files: rows with method {cfg.base!r}); methods found: "
                         f"{', '.join(sorted(res['method'].unique()))}")
    res = res[res["method"] != cfg.base] if cfg.base else res
    res, chosen = _select_configs(res, scores, cfg, benches)
    key = "config" if cfg.rows == "config" else "method"
    order = list(dict.fromkeys(res[key]))
    if cfg.methods:
        unknown = [m for m in cfg.methods if m not in order]
        if len(unknown) == len(cfg.methods):
            raise ValueError(f"TableConfig.methods: none of {cfg.methods} found; rows: {', '.join(order)}")
        order = [m for m in cfg.methods if m in order]
    missing_bl = [b for b in cfg.baselines if b not in order]
    if missing_bl:
        raise ValueError(f"TableConfig.baselines: unknown {missing_bl}; rows: {', '.join(order)}")
    columns = benches + ([AVG] if cfg.avg else []) + ([DELTA] if cfg.delta_avg else [])
    rows: list[Row] = []
    significance_notes: list[str | None] = []
    for model in dict.fromkeys(list(base_rows["model"]) + list(res["model"])):
        block = [_row(base_rows[base_rows["model"] == model], model, cfg.base, benches, True)] \
            if cfg.base and (base_rows["model"] == model).any() else []
        sub = res[res["model"] == model]
        for name in order:
            part = sub[sub[key] == name]
            if not part.empty:
                block.append(_row(part, model, name, benches, False))
        if problems is not None:
            for row in block:
                attach_scores(row, _problems_of(problems, row, cfg), benches)
        if cfg.delta_avg:
            _add_delta(block, benches)
        _mark_best(block, columns, cfg)
        significance_notes += mark_significance(block, columns, cfg)
        if cfg.cell_text == "mean ± ci" or any(c.test for r in block for c in r.cells.values()):
            add_intervals(block, columns, cfg)
        rows += block
    table = Table(columns, rows, cfg)
    selected_on = scores.attrs.get("selected_on") if scores is not None else None
    table.footnotes = _footnotes(chosen, cfg, params, selected_on) + [n for n in significance_notes if n]
    if problems is not None and cfg.significance in ("auto", "paired") \
            and not any(c.scores is not None for r in rows for c in r.cells.values()):
        table.notes.append("No per-problem verdicts recorded for these runs (recorded before they were stored, or "
                           "a metric without them): " + ("Welch's test over seeds, no paired test."
                                                         if cfg.significance == "auto" else "no paired test."))
    return table


def _problems_of(problems: pd.DataFrame, row: Row, cfg: TableConfig) -> pd.DataFrame:
    """The per-problem values behind one row: its model, and its method and chosen config (or the base)."""
    part = problems[problems["model"] == row.model]
    if row.is_base:
        return part[part["method"] == cfg.base]
    configs = set((row.config or "").split(","))
    key = "config" if cfg.rows == "config" else "method"
    return part[(part[key] == row.label) & part["config"].isin(configs)]


def _row(part: pd.DataFrame, model: str, label: str, benches: list[str], is_base: bool) -> Row:
    row = Row(model, label, is_base, config=None if is_base else ",".join(dict.fromkeys(part["config"])))
    pivot = part.pivot_table(index="seed", columns="benchmark", values="value", aggfunc="mean", observed=True)
    for b in benches:
        v = pivot[b].dropna() if b in pivot else pd.Series(dtype=float)
        row.cells[b] = Cell(float(v.mean()) if len(v) else None,
                            float(v.std(ddof=1)) if len(v) > 1 else None, len(v), values=[float(x) for x in v])
    means = [row.cells[b].mean for b in benches]
    complete = pivot.reindex(columns=benches).dropna()
    row.cells[AVG] = Cell(float(np.mean(means)) if benches and None not in means else None,
                          float(complete.mean(axis=1).std(ddof=1)) if len(complete) > 1 else None,
                          len(complete), values=[float(x) for x in complete.mean(axis=1)])
    row.n = int(pivot.index.nunique())
    return row


def _add_delta(block: list[Row], benches: list[str]) -> None:
    base = next((r for r in block if r.is_base), None)
    for r in block:
        if base is None or r.is_base:
            r.cells[DELTA] = Cell()
            continue
        d = [r.cells[b].mean - base.cells[b].mean for b in benches
             if r.cells[b].mean is not None and base.cells[b].mean is not None]
        r.cells[DELTA] = Cell(float(np.mean(d)) if d else None, None, len(d))


def _shown(v: float | None, cfg: TableConfig) -> float | None:
    """The value as displayed, back as a float: ranking happens at this precision."""
    if v is None or not np.isfinite(v):
        return None
    return float(f"{v * cfg.scale:.{cfg.decimals}f}")


def _mark_best(block: list[Row], columns: list[str], cfg: TableConfig) -> None:
    rows = [r for r in block if not r.is_base]
    for col in columns:
        sign = -1.0 if col in cfg.lower_is_better else 1.0
        vals = [(r, _shown(r.cells[col].mean, cfg)) for r in rows]
        vals = [(r, sign * v) for r, v in vals if v is not None]
        for r, v in vals:
            better = sum(1 for _, w in vals if w > v)
            if better == 0:
                r.cells[col].marks.add("best")
            elif better == 1:
                r.cells[col].marks.add("second")
    sign = -1.0 if AVG in cfg.lower_is_better else 1.0
    cand = [(r, _shown(r.cells[AVG].mean, cfg)) for r in rows if r.label in cfg.baselines]
    cand = [(r, sign * v) for r, v in cand if v is not None]
    if cand:  # ONE strongest baseline (the one the significance footnote names): a tie at the shown
        # precision goes to the better unrounded AVG, then to the baseline listed first
        listed = {name: i for i, name in enumerate(cfg.baselines)}
        strongest, _ = max(cand, key=lambda rv: (rv[1], sign * rv[0].cells[AVG].mean, -listed[rv[0].label]))
        for col in columns:
            if strongest.cells[col].mean is not None:
                strongest.cells[col].marks.add("baseline")


def _footnotes(chosen: list, cfg: TableConfig, params: pd.DataFrame | None,
               selected_on: tuple[str, str] | None = None) -> list[str]:
    if not chosen:
        return []
    what = "AVG over benchmarks" if cfg.select_by in (None, AVG) else cfg.select_by
    split, key = selected_on or ("reported", what)
    if split == "select":
        where = (f" on the selection split ({'select/ AVG over benchmarks' if key == AVG else key}: other problems of "
                 f"the same benchmarks; the cells are the held-out reported ones)")
    else:
        where = " on the reported benchmarks themselves (the papers' way: the winners' scores are biased upward)"
    notes = [f"Best config per method by mean {what} over seeds ({cfg.mode}, at the {cfg.at} step),{where}:"]
    for model, method, config, score in chosen:
        detail = ""
        if params is not None and {"config", "method", "model"} <= set(params.columns):
            # the hyper-parameters that differ between this method's configs, at the chosen one
            same = params[(params["method"] == method) & (params["model"] == model)]
            varying = [c for c in params.columns if c.startswith("params.") and c != "params.seed"
                       and not c.endswith(".seed") and same[c].astype(str).nunique() > 1]
            mine = params[params["config"] == config]
            if varying and len(mine):
                detail = " (" + ", ".join(f"{c[7:]}={mine[c].iloc[0]}" for c in varying) + ")"
        notes.append(f"{model + ': ' if model else ''}{method} -> {config}{detail}, score {score:.4g}")
    return notes
