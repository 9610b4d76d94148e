"""Significance: which methods differ from the strongest baseline, per table column.

    notes = mark_significance(block, columns, cfg)   # adds "significant" to cells, returns the footnotes

`significance: paired` (and `auto` where the cells have per-problem verdicts) is the paired
two-level bootstrap with Holm's correction over the block (dashboards/stats/cell_stats.py, docs/statistics.md).
`welch` (and `auto` on runs recorded without verdicts) is the test below, unchanged.

The Welch test is Welch's two-sided t-test (unequal variances) on the per-seed values of a cell (a
benchmark, or AVG = each seed's mean over the benchmarks) against the same column of the strongest
baseline row (the baseline with the best AVG, set in italics), at level ``cfg.alpha``. A cell is
tested only when both rows have at least ``min_seeds`` values: 3 under ``significance: auto`` (the
report default), 2 under ``significance: welch``; ``off`` never marks. Two constant groups with
different means count as different (p = 0); identical constant groups do not. Marked cells get a
dagger (†) and the footnote names the test, the level, the baseline and the seed counts (or says
that no cell differs). No
multiple-comparison correction: each cell is one test, as a reader comparing two numbers would do.
"""

from __future__ import annotations

import math
from typing import Sequence

from dashboards.model.table import DELTA, Row, TableConfig

MIN_SEEDS = {"auto": 3, "welch": 2}


def welch_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of Welch's t-test; None when a side has fewer than 2 values."""
    if len(a) < 2 or len(b) < 2:
        return None
    from scipy import stats

    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    se2 = va / len(a) + vb / len(b)
    if se2 == 0:
        return 1.0 if ma == mb else 0.0
    t = (ma - mb) / math.sqrt(se2)
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))  # Welch-Satterthwaite
    return float(2 * stats.t.sf(abs(t), df))


def strongest_baseline(block: list[Row], cfg: TableConfig) -> Row | None:
    """The block's strongest baseline row (the one set in italics), or None."""
    return next((r for r in block if not r.is_base and r.label in cfg.baselines
                 and any("baseline" in c.marks for c in r.cells.values())), None)


def mark_significance(block: list[Row], columns: list[str], cfg: TableConfig) -> list[str]:
    """Mark the cells of one model block that differ from its strongest baseline; the footnotes."""
    if cfg.significance == "off":
        return []
    strongest = strongest_baseline(block, cfg)
    if strongest is None:
        return []
    if cfg.significance in ("auto", "paired") and any(c.scores is not None for c in strongest.cells.values()):
        from dashboards.stats.cell_stats import paired_block

        return paired_block(block, columns, cfg, strongest)
    if cfg.significance == "paired":
        where = f"{strongest.model}: " if strongest.model else ""
        return [f"{where}no paired test: the strongest baseline {strongest.label} has no per-problem verdicts"]
    note = welch_block(block, columns, cfg, strongest)
    return [note] if note else []


def welch_block(block: list[Row], columns: list[str], cfg: TableConfig, strongest: Row) -> str | None:
    """Welch's t-test over seeds of every cell against the strongest baseline; the footnote, or None."""
    need = MIN_SEEDS[cfg.significance]
    tested, marked, counts = 0, 0, set()
    for row in block:
        if row.is_base or row is strongest:
            continue
        for col in columns:
            if col == DELTA:
                continue
            mine, theirs = row.cells[col].values, strongest.cells[col].values
            if len(mine) < need or len(theirs) < need:
                continue
            tested += 1
            counts.add((len(mine), len(theirs)))
            p = welch_p(mine, theirs)
            if p is not None and p < cfg.alpha:
                row.cells[col].marks.add("significant")
                marked += 1
    if not tested:
        return None
    n = ", ".join(f"{a} vs {b}" for a, b in sorted(counts))
    where = f"{strongest.model}: " if strongest.model else ""
    what = "† differs" if marked else "no cell differs"
    return (f"{where}{what} from the strongest baseline {strongest.label} at p < {cfg.alpha:g} (Welch's two-sided "
            f"t-test over seeds, n = {n} seeds; no multiple-comparison correction)")
