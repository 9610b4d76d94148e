"""Significance marks: Welch's t-test against hand-computed cases, and the table's daggers/footnote."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dashboards.stats.significance import welch_p
from dashboards.tables.build import TableConfig, build_table

T_CRIT_DF4 = 2.776445  # two-sided 5% critical value of Student's t with 4 degrees of freedom (t tables)


def pair(t: float, s: float = 0.01) -> tuple[list[float], list[float]]:
    """Two groups of 3 with equal variance s^2 (so Welch's df is exactly 4) whose t statistic is `t`."""
    d = t * s * math.sqrt(2 / 3)
    return [0.5 + d - s, 0.5 + d, 0.5 + d + s], [0.5 - s, 0.5, 0.5 + s]


def test_welch_p_at_the_tabulated_critical_value():
    assert welch_p(*pair(T_CRIT_DF4)) == pytest.approx(0.05, abs=1e-5)
    assert welch_p(*pair(2.70)) > 0.05 > welch_p(*pair(2.85))
    assert welch_p(*pair(12.247)) == pytest.approx(0.000254, abs=2e-5)  # t = 12.247, df = 4


def test_welch_with_unequal_variances_uses_satterthwaite_df():
    # a: mean 2.5, var 5/3, n 4; b: mean 20, var 100, n 3 -> t = -3.012, df = 2.05 (by hand)
    p = welch_p([1, 2, 3, 4], [10, 20, 30])
    assert 0.05 < p < 0.15  # with df ~2 the 5% critical value is 4.30: |t| = 3.01 is not significant
    assert welch_p([1], [2, 3]) is None
    assert welch_p([1, 1, 1], [2, 2, 2]) == 0.0 and welch_p([1, 1], [1, 1]) == 1.0


def results(seeds: int) -> pd.DataFrame:
    per_method = {"GRPO": [0.50, 0.51, 0.52, 0.50], "GSPO": [0.50, 0.53, 0.49, 0.52], "DHPO-E": [0.60, 0.61, 0.62, 0.60]}
    rows = [dict(model="m", method=m, benchmark=b, value=v + (0.1 if b == "hard" else 0), seed=i)
            for m, vs in per_method.items() for i, v in enumerate(vs[:seeds]) for b in ("easy", "hard")]
    return pd.DataFrame(rows)


def test_table_marks_only_the_method_that_differs_from_the_strongest_baseline():
    table = build_table(results(3), TableConfig(baselines=["GRPO", "GSPO"], benchmarks=["easy", "hard"]))
    md = table.to_markdown()
    dhpo = next(line for line in md.splitlines() if line.startswith("| DHPO-E"))
    gspo = next(line for line in md.splitlines() if line.startswith("| GSPO"))
    assert dhpo.count("†") == 3  # easy, hard, AVG
    assert "†" not in gspo
    note = next(n for n in table.footnotes if "Welch" in n)
    assert "strongest baseline GSPO" in note or "strongest baseline GRPO" in note
    assert "n = 3 vs 3" in note and "p < 0.05" in note
    assert "$^\\dagger$" in table.to_latex() and "<sup>†</sup>" in table.to_html()


def test_auto_needs_three_seeds_welch_two_off_none():
    two = results(2)
    assert "†" not in build_table(two, TableConfig(baselines=["GRPO"])).to_markdown()
    assert "†" in build_table(two, TableConfig(baselines=["GRPO"], significance="welch")).to_markdown()
    assert "†" not in build_table(results(3), TableConfig(baselines=["GRPO"], significance="off")).to_markdown()
    same = results(3)
    same = same[same["method"] != "DHPO-E"]  # GSPO alone vs GRPO: within noise
    table = build_table(same, TableConfig(baselines=["GRPO"]))
    assert "†" not in table.to_markdown().split("\n\n")[0]
    assert any(n.startswith("m: no cell differs from the strongest baseline GRPO") for n in table.footnotes)
    assert "†" not in build_table(results(3), TableConfig()).to_markdown()  # no baselines: nothing to compare with
    with pytest.raises(ValueError, match="TableConfig.significance"):
        TableConfig(significance="bootstrap").validate()
    with pytest.raises(ValueError, match="TableConfig.alpha"):
        TableConfig(alpha=1.5).validate()


def test_html_shows_the_per_seed_values_behind_each_mean():
    page = build_table(results(3), TableConfig(baselines=["GRPO"], benchmarks=["easy", "hard"])).to_html()
    assert 'title="per seed: 60.0, 61.0, 62.0"' in page  # DHPO-E easy
    assert "Per-seed values" in page and "DHPO-E, easy: 60.0, 61.0, 62.0" in page
