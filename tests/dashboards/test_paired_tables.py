"""Tables with per-problem verdicts: the paired test with Holm, intervals in cells and table.csv, power lines,
and the older outputs (`welch`, `auto` without verdicts) unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboards.stats.paired_stats import holm
from dashboards.tables.build import TableConfig, build_table

BENCHES = ("easy", "medium", "hard")


def study(shift: dict[str, float] | None = None, seeds=(0, 1, 2), problems=64, samples=4, seed=0,
          run_sd: dict[str, float] | None = None):
    """(results, problems) frames of Base + 4 methods on shared problems; `shift`: logit shift per method;
    `run_sd`: a method's run (seed) effect's logit sd (default 0.1)."""
    rng = np.random.default_rng(seed)
    shift, run_sd = shift or {}, run_sd or {}
    res, per = [], []
    for b, level in zip(BENCHES, (0.3, -0.5, -2.5)):
        difficulty = level + rng.normal(0, 1.5, problems)
        for method in ("Base", "GRPO", "GSPO", "DHPO-A", "DHPO-E"):
            for s in seeds:
                p = 1 / (1 + np.exp(-(difficulty + shift.get(method, 0.0) + rng.normal(0, run_sd.get(method, 0.1)))))
                frac = rng.binomial(samples, p) / samples
                res.append({"model": "m", "method": method, "config": method, "seed": s, "benchmark": b,
                            "value": float(frac.mean())})
                per.append(pd.DataFrame({"model": "m", "method": method, "config": method, "seed": s, "benchmark": b,
                                         "problem": [f"{b}-{i}" for i in range(problems)], "value": frac}))
    return pd.DataFrame(res), pd.concat(per, ignore_index=True)


CFG = dict(base="Base", baselines=["GRPO", "GSPO"])


def test_paired_test_marks_the_real_difference_with_holm_and_names_it():
    results, problems = study({"DHPO-A": 1.2})
    t = build_table(results, TableConfig(**CFG), problems=problems)
    rows = {r.label: r for r in t.rows}
    strongest = next(r for r in t.rows if "baseline" in r.cells["AVG"].marks)
    assert "significant" in rows["DHPO-A"].cells["AVG"].marks
    assert "significant" not in rows["DHPO-E"].cells["AVG"].marks
    note = next(n for n in t.footnotes if "Holm" in n)
    assert f"strongest baseline {strongest.label}" in note and "over the block's 12 tested cells" in note
    assert "64 shared problems per benchmark" in note and "n = 3 vs 3 seeds" in note
    # Holm over the block's tested cells, in table order
    cells = [r.cells[c] for r in t.rows if not r.is_base and r is not strongest for c in (*BENCHES, "AVG")]
    assert [c.test["p_holm"] for c in cells] == pytest.approx(holm([c.test["p"] for c in cells]))
    d = rows["DHPO-A"].cells["AVG"]
    assert d.test["diff"] == pytest.approx(d.mean - strongest.cells["AVG"].mean, abs=1e-12)
    assert d.test["diff_low"] > 0  # the interval agrees with the mark


def test_no_true_difference_marks_nothing_and_the_power_lines_follow():
    results, problems = study()
    t = build_table(results, TableConfig(**CFG, power=2.0), problems=problems)
    assert not any("significant" in c.marks for r in t.rows for c in r.cells.values())
    assert any(n.startswith("m: no cell differs") and "Holm" in n for n in t.footnotes)
    detect = next(n for n in t.footnotes if "detectable with 80% power" in n)
    assert "3 seeds per method" in detect and "Holm's first step (p < 0.05/12)" in detect
    needs = next(n for n in t.footnotes if "seeds per method to find a 2-point difference" in n)
    assert "AVG" in needs


def test_intervals_in_cells_latex_and_csv():
    results, problems = study({"DHPO-A": 0.6})
    t = build_table(results, TableConfig(**CFG, cells="mean ± ci"), problems=problems)
    grpo = next(r for r in t.rows if r.label == "GRPO")
    lo, hi = grpo.cells["AVG"].ci
    assert lo < grpo.cells["AVG"].mean < hi
    half = f"{(hi - lo) / 2 * 100:.1f}"
    assert f"{grpo.cells['AVG'].mean * 100:.1f} ± {half}" in t.to_markdown()
    assert f" $\\pm$ {half}" in t.to_latex()
    assert f" ± {half}" in t.to_html()
    frame = pd.read_csv(__import__("io").StringIO(t.to_csv()))
    for col in (*BENCHES, "AVG"):
        for stat in ("ci_low", "ci_high", "diff", "diff_low", "diff_high", "p", "p_holm"):
            assert f"{col} {stat}" in frame.columns
    row = frame[frame["method"] == "GRPO"].iloc[0]
    assert row["AVG ci_low"] == pytest.approx(lo * 100, abs=0.01)
    base = frame[frame["method"] == "Base"].iloc[0]
    assert not np.isnan(base["AVG ci_low"]) and np.isnan(base["AVG p"])  # the base row: an interval, no test


def test_ascii_cells_option_and_bad_values_are_named():
    assert TableConfig(cells="mean +- ci").validate().cells == "mean ± ci"
    with pytest.raises(ValueError, match="TableConfig.cells"):
        TableConfig(cells="median").validate()
    with pytest.raises(ValueError, match="TableConfig.significance"):
        TableConfig(significance="bootstrap").validate()
    with pytest.raises(ValueError, match="TableConfig.power"):
        TableConfig(power=-1).validate()


def test_welch_output_is_unchanged_by_verdicts_and_auto_without_them_is_welch():
    results, problems = study({"DHPO-A": 1.2})
    welch = build_table(results, TableConfig(**CFG, significance="welch"))
    welch_with = build_table(results, TableConfig(**CFG, significance="welch"), problems=problems)
    assert welch_with.to_markdown() == welch.to_markdown() and welch_with.to_csv() == welch.to_csv()
    auto_old = build_table(results, TableConfig(**CFG))
    assert auto_old.to_markdown() == welch.to_markdown()  # 3 seeds: auto and welch test alike
    assert "Welch's two-sided t-test" in auto_old.to_markdown()


def test_verdicts_that_do_not_reproduce_the_values_are_not_used():
    results, problems = study()
    wrong = problems.assign(value=1.0 - problems["value"])  # another evaluation's verdicts
    t = build_table(results, TableConfig(**CFG), problems=wrong)
    assert all(c.scores is None for r in t.rows for c in r.cells.values())
    assert "Welch's two-sided t-test" in t.to_markdown()


def test_one_seed_gets_no_paired_test_and_says_why():
    results, problems = study(seeds=(0,))
    t = build_table(results, TableConfig(**CFG, significance="paired"), problems=problems)
    assert any("no paired test: fewer than 2 seeds" in n for n in t.footnotes)
    assert not any(c.test for r in t.rows for c in r.cells.values())


def test_a_method_whose_runs_vary_more_is_named_and_judged_with_its_own_spread():
    results, problems = study(run_sd={"DHPO-E": 1.2}, seeds=(0, 1, 2, 3), seed=4)
    t = build_table(results, TableConfig(**CFG), problems=problems)
    note = next(n for n in t.footnotes if "runs vary" in n)
    assert note.startswith("m: DHPO-E's runs vary") and "each method is judged with its own seed spread" in note
    assert "each method's own seed spread" in next(n for n in t.footnotes if "Holm" in n)
    frame = pd.read_csv(__import__("io").StringIO(t.to_csv())).set_index("method")
    assert frame.loc["DHPO-E", "AVG seed_sd"] > 3 * frame.loc["DHPO-A", "AVG seed_sd"]
    rows = {r.label: r for r in t.rows}
    own_se = rows["DHPO-E"].cells["AVG"].test["diff_high"] - rows["DHPO-E"].cells["AVG"].test["diff_low"]
    pooled = build_table(results, TableConfig(**CFG, seed_spread="pooled"), problems=problems)
    assert any("the pooled spread understates its variance" in n for n in pooled.footnotes)
    p_rows = {r.label: r for r in pooled.rows}
    pooled_se = p_rows["DHPO-E"].cells["AVG"].test["diff_high"] - p_rows["DHPO-E"].cells["AVG"].test["diff_low"]
    assert own_se > pooled_se  # its own spread: a wider interval for the unstable method
    with pytest.raises(ValueError, match="TableConfig.seed_spread"):
        TableConfig(seed_spread="mine").validate()

