"""One method's per-run, per-problem scores of one table cell, and their alignment with another's.

    from dashboards.stats.paired_scores import Scores, align
    a = Scores(x, strata, problems)   # x: (seeds, problems) fraction of samples correct; strata: benchmark per problem
    a.mean, a.weights                 # the cell's value; each benchmark weighs the same, problems equally within it
    a, b = align(a, b)                # both restricted to the problems they share, in a's order

The statistics on them: dashboards/stats/seed_spread.py (how the runs vary), dashboards/stats/paired_stats.py
(the paired test, intervals, power).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Scores:
    """One method's per-run, per-problem scores of one cell."""

    x: np.ndarray
    """(seeds, problems): the fraction of each problem's samples judged correct in each run."""
    strata: np.ndarray
    """(problems,) integer benchmark index of each problem (one stratum for a benchmark column)."""
    problems: list[str] | None = None
    """(problems,) stable problem ids, to align two methods (None: already aligned)."""

    @property
    def weights(self) -> np.ndarray:
        """Per-problem weight: each stratum weighs the same, problems equally within it."""
        _, inverse, counts = np.unique(self.strata, return_inverse=True, return_counts=True)
        return 1.0 / (counts[inverse] * len(counts))

    @property
    def mean(self) -> float:
        return float(self.x.mean(axis=0) @ self.weights)


def align(a: Scores, b: Scores) -> tuple[Scores, Scores]:
    """a and b restricted to the problems both have, in a's order (ids must be given to differ)."""
    if a.problems is None or b.problems is None or list(a.problems) == list(b.problems):
        if a.x.shape[1] != b.x.shape[1]:
            raise ValueError(f"scores of {a.x.shape[1]} and {b.x.shape[1]} problems without ids to align them")
        return a, b
    where = {p: i for i, p in enumerate(b.problems)}
    ia = [i for i, p in enumerate(a.problems) if p in where]
    ib = [where[a.problems[i]] for i in ia]
    if not ia:
        raise ValueError("the two methods share no problem id")
    keep = [a.problems[i] for i in ia]
    return (Scores(a.x[:, ia], a.strata[ia], keep), Scores(b.x[:, ib], b.strata[ib], keep))
