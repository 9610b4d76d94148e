"""A table block's paired statistics: per-problem scores on its cells, intervals, tests with Holm, power.

    from dashboards.stats.cell_stats import attach_scores, add_intervals, paired_block
    attach_scores(row, problems_of_row, benches)     # cell.scores from the long per-problem frame
    notes = paired_block(block, columns, cfg)         # cell.test + "significant" marks; footnotes
    add_intervals(block, columns, cfg)                # cell.ci

The numbers come from dashboards/stats/paired_stats.py; what they mean is in docs/statistics.md. One
block is one model's rows. Per column, each method row is judged with the seed spread of
`cfg.seed_spread` (its own by default; moderated toward, or pooled over, the block's method rows,
never the base row); a method whose seeds vary out of line with the others' is named in a footnote.
The family of Holm's correction is every tested cell of the block, and a cell is tested only when
both rows have per-problem scores that reproduce their table values.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from dashboards.stats.paired_scores import Scores
from dashboards.stats.paired_stats import compare, detectable_difference, holm, interval, seeds_needed
from dashboards.stats.seed_spread import SeedSpread, block_spreads, out_of_line, seed_spread
from dashboards.model.table import AVG, DELTA, Cell, Row, TableConfig

MIN_SEEDS = 2  # a paired test and a seed-level interval need the seeds' spread
AGREE = 1e-6  # a cell's per-problem scores must give its logged value to this precision
OUT_OF_LINE = 0.01
"""A method's seeds are named out of line when the F-test of its seed spread against the other methods'
(pooled) gives p below this (per column, AVG first)."""


def _bench_scores(part: pd.DataFrame, bench: str, seeds: list) -> Scores | None:
    sub = part[part["benchmark"] == bench]
    if sub.empty:
        return None
    wide = sub.pivot_table(index="seed", columns="problem", values="value", aggfunc="mean", observed=True)
    if set(wide.index) != set(seeds) or wide.isna().any().any():
        return None
    wide = wide.reindex(index=seeds)
    return Scores(wide.to_numpy(dtype=float), np.zeros(wide.shape[1], dtype=int), [str(p) for p in wide.columns])


def attach_scores(row: Row, part: pd.DataFrame | None, benches: list[str]) -> None:
    """Set each cell's `scores` (benchmarks and AVG) from the row's per-problem frame, when every seed
    behind the cell has verdicts and they reproduce the cell's per-seed values."""
    if part is None or part.empty:
        return
    per_bench = {}
    for b in benches:
        cell = row.cells[b]
        seeds = sorted(part.loc[part["benchmark"] == b, "seed"].unique(), key=str)
        scores = _bench_scores(part, b, seeds)
        if scores is None or len(seeds) != len(cell.values):
            continue
        if not np.allclose(sorted(scores.x.mean(axis=1)), sorted(cell.values), atol=AGREE, rtol=0):
            continue  # the verdicts of another evaluation: not this cell's
        cell.scores, per_bench[b] = scores, (seeds, scores)
    avg = row.cells.get(AVG)
    if avg is None or len(per_bench) != len(benches) or not benches:
        return
    seed_sets = {tuple(map(str, s)) for s, _ in per_bench.values()}
    if len(seed_sets) != 1:
        return
    parts = [per_bench[b][1] for b in benches]
    avg.scores = Scores(np.concatenate([p.x for p in parts], axis=1),
                        np.concatenate([np.full(p.x.shape[1], i) for i, p in enumerate(parts)]),
                        [f"{b}/{q}" for b, p in zip(benches, parts) for q in p.problems])


def _tested_columns(columns: list[str]) -> list[str]:
    return [c for c in columns if c != DELTA]


def block_seed_spreads(block: list[Row], columns: list[str], cfg: TableConfig) -> dict:
    """{column: {id(row): SeedSpread}} for the block's method rows with scores (cfg.seed_spread); the
    base row, judged alone, gets its own."""
    out = {}
    for col in _tested_columns(columns):
        rows = [r for r in block if not r.is_base and r.cells[col].scores is not None]
        spreads = dict(zip(map(id, rows), block_spreads([r.cells[col].scores for r in rows], cfg.seed_spread))) \
            if rows else {}
        for r in block:
            if r.is_base and r.cells[col].scores is not None:
                spreads[id(r)] = _base_spread(r.cells[col].scores)
        out[col] = spreads
    return out


def _base_spread(scores) -> SeedSpread:
    """The base row's spread: one model evaluated under each seed, so its seed variance is known to be 0."""
    return replace(seed_spread(scores), one_model=True)


def _set_seed_sds(block: list[Row], columns: list[str]) -> None:
    """Each cell's seed sd: its own runs' spread with the sampling noise taken away, as its test uses it (an upper
    bound where the estimate is 0, dashboards/stats/seed_spread.py; the base row's 0 stands) (table.csv)."""
    for row in block:
        for col in _tested_columns(columns):
            scores = row.cells[col].scores
            if scores is not None and scores.x.shape[0] >= MIN_SEEDS:
                spread = _base_spread(scores) if row.is_base else seed_spread(scores)
                row.cells[col].seed_sd = float(np.sqrt(spread.run_var))


def spread_notes(block: list[Row], columns: list[str], cfg: TableConfig) -> list[str]:
    """A footnote for each method whose runs vary more than the other methods' (one-sided F-test on the runs'
    means, p < OUT_OF_LINE), in the first column where they do (AVG first)."""
    rows = [r for r in block if not r.is_base]
    notes = []
    for row in rows:
        for col in [c for c in (AVG, *columns) if c in columns and c != DELTA]:
            mine = row.cells[col].scores
            others = [r.cells[col].scores for r in rows if r is not row and r.cells[col].scores is not None]
            if mine is None or mine.x.shape[0] < MIN_SEEDS or not others:
                continue
            own, rest = seed_spread(mine), seed_spread(*others)
            p = out_of_line(own, rest)
            if p is None or p >= OUT_OF_LINE:
                continue
            where = f"{row.model}: " if row.model else ""
            ratio = np.sqrt(own.level_var / rest.level_var)
            judged = {"own": "each method is judged with its own seed spread",
                      "moderated": "its spread is moderated toward the others' (calibrated only where spreads are alike)",
                      "pooled": "the pooled spread understates its variance: use seed_spread: own"}[cfg.seed_spread]
            notes.append(f"{where}{row.label}'s runs vary {ratio:.1f}x as much as the other methods' on "
                         f"{cfg.labels.get(col, col)} (seed sd {_points(np.sqrt(own.run_var), cfg)} vs "
                         f"{_points(np.sqrt(rest.run_var), cfg)} points; F-test p = {p:.2g}): {judged}")
            break
    return notes


def paired_block(block: list[Row], columns: list[str], cfg: TableConfig, strongest: Row) -> list[str]:
    """Test every method cell against the strongest baseline's (paired, Holm over the block); the
    footnotes: the test's verdict and the power analysis. [] when no cell could be tested."""
    spreads = block_seed_spreads(block, columns, cfg)
    _set_seed_sds(block, columns)
    tested: list[tuple[str, Cell, object]] = []
    untested = few_seeds = 0
    for row in block:
        if row.is_base or row is strongest:
            continue
        for col in _tested_columns(columns):
            mine, theirs = row.cells[col], strongest.cells[col]
            if mine.mean is None or theirs.mean is None:
                continue
            if mine.scores is None or theirs.scores is None or id(row) not in spreads[col] \
                    or id(strongest) not in spreads[col]:
                untested += 1
                continue
            if min(mine.scores.x.shape[0], theirs.scores.x.shape[0]) < MIN_SEEDS:
                few_seeds += 1
                continue
            c = compare(mine.scores, theirs.scores, spread_a=spreads[col][id(row)],
                        spread_b=spreads[col][id(strongest)], alpha=cfg.alpha)
            tested.append((col, mine, c))
    if not tested:
        where = f"{strongest.model}: " if strongest.model else ""
        return [f"{where}no paired test: fewer than {MIN_SEEDS} seeds per method (a seed's spread cannot be "
                "estimated from one)"] if few_seeds else []
    adjusted = holm([c.p for _, _, c in tested])
    for (_, cell, c), p_holm in zip(tested, adjusted):
        cell.test = {"diff": c.diff, "diff_low": c.ci_low, "diff_high": c.ci_high, "p": c.p, "p_holm": p_holm}
        if p_holm < cfg.alpha:
            cell.marks.add("significant")
    return [_test_note(block, strongest, cfg, tested, untested), *_power_notes(block, strongest, cfg, tested),
            *spread_notes(block, columns, cfg)]


def _test_note(block, strongest: Row, cfg: TableConfig, tested, untested: int) -> str:
    where = f"{strongest.model}: " if strongest.model else ""
    marked = sum("significant" in cell.marks for _, cell, _ in tested)
    seeds = sorted({c.seeds for _, _, c in tested})
    problems = sorted({c.problems for col, _, c in tested if col != AVG})
    what = "† differs" if marked else "no cell differs"
    left = f"; {untested} cell(s) without per-problem verdicts not tested" if untested else ""
    spread = {"own": "each method's own", "moderated": "each method's moderated",
              "pooled": "the block's pooled"}[cfg.seed_spread]
    return (f"{where}{what} from the strongest baseline {strongest.label} at p < {cfg.alpha:g} after Holm's "
            f"correction over the block's {len(tested)} tested cells (paired t-test in closed form over the "
            f"{'/'.join(map(str, problems))} shared problems per benchmark and {spread} seed spread, n = "
            f"{', '.join(f'{a} vs {b}' for a, b in seeds)} seeds{left}; differences, intervals and p-values in table.csv)")


def _points(v: float, cfg: TableConfig) -> str:
    return f"{v * cfg.scale:.{cfg.decimals}f}"


def _power_notes(block, strongest: Row, cfg: TableConfig, tested) -> list[str]:
    """The detectable difference per column (median over the block's comparisons) at the study's seeds,
    per cell and at Holm's first step; with `cfg.power`, the seeds per method that difference needs."""
    where = f"{strongest.model}: " if strongest.model else ""
    by_col: dict[str, list] = {}
    for col, _, c in tested:
        by_col.setdefault(col, []).append(c)
    seeds = min(min(c.seeds) for _, _, c in tested)
    m = len(tested)
    per_cell = ", ".join(f"{cfg.labels.get(col, col)} {_points(float(np.median([detectable_difference(c, alpha=cfg.alpha) for c in cs])), cfg)}"
                         for col, cs in by_col.items())
    notes = [f"{where}detectable with 80% power (paired test, {seeds} seeds per method, median over the "
             f"comparisons with {strongest.label}): {per_cell} at p < {cfg.alpha:g} per cell"]
    if AVG in by_col and m > 1:
        first = float(np.median([detectable_difference(c, alpha=cfg.alpha / m) for c in by_col[AVG]]))
        notes[0] += f"; AVG {_points(first, cfg)} at Holm's first step (p < {cfg.alpha:g}/{m})"
    if cfg.power is not None:
        target = cfg.power / cfg.scale
        needs = []
        for col, cs in by_col.items():
            counts = [seeds_needed(c, target, alpha=cfg.alpha) for c in cs]
            known = [n for n in counts if n is not None]
            shown = str(int(np.median(known))) if len(known) * 2 > len(counts) else "more than 1000 (more problems needed)"
            needs.append(f"{cfg.labels.get(col, col)} {shown}")
        notes.append(f"{where}seeds per method to find a {cfg.power:g}-point difference with 80% power (p < "
                     f"{cfg.alpha:g} per cell, median over the comparisons): {', '.join(needs)}")
    return notes


def add_intervals(block: list[Row], columns: list[str], cfg: TableConfig) -> None:
    """Each cell's 95% interval: the score interval over problems and seeds (dashboards/stats/paired_stats.py
    `interval`, the row's seed spread) when it has per-problem scores, else a t-interval over its seeds
    (none with one seed), kept inside [0, 1] when the table shows fractions as percentages."""
    from scipy import stats

    spreads = block_seed_spreads(block, columns, cfg)
    for row in block:
        for col in _tested_columns(columns):
            cell = row.cells[col]
            if cell.mean is None:
                continue
            if cell.scores is not None and cell.scores.x.shape[0] >= MIN_SEEDS:
                cell.ci = interval(cell.scores, spread=spreads[col].get(id(row)), alpha=cfg.alpha)
            elif len(cell.values) > 1 and cell.std is not None:
                half = float(stats.t.ppf(1 - cfg.alpha / 2, len(cell.values) - 1)) * cell.std / np.sqrt(len(cell.values))
                lo, hi = cell.mean - half, cell.mean + half
                fractions = cfg.scale == 100 and all(0 <= v <= 1 for v in cell.values)
                cell.ci = (max(lo, 0.0), min(hi, 1.0)) if fractions else (lo, hi)
