"""`sweep plan` (dashboards/stats/seed_plan.py, sweeps/commands/plan.py): seeds for a difference, the difference
a number of seeds or a budget finds, from a per-sample pilot; the planning level is Holm's first step."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dashboards.stats.paired_stats import detectable_difference
from dashboards.stats.seed_plan import Target, make_plan
from dashboards.tables.build import TableConfig, build_table
from sweeps.commands.plan import parse_detect

BENCHES = ("easy", "hard")


def pilot(seeds: dict[str, int] | None = None, problems: int = 40) -> pd.DataFrame:
    """Per-sample rows: GRPO, Same (its A/A twin) and Strong (+0.2), each with its number of seeds; run effects."""
    seeds = seeds or {"GRPO": 3, "Same": 3, "Strong": 3}
    rng = np.random.default_rng(3)
    difficulty = {b: rng.uniform(0.15, 0.75, problems) for b in BENCHES}
    rows = []
    for method, lift in (("GRPO", 0.0), ("Same", 0.0), ("Strong", 0.2)):
        for seed in range(seeds[method]):
            run = rng.normal(0, 0.04)
            for b in BENCHES:
                for j, p in enumerate(difficulty[b]):
                    hits = rng.binomial(4, float(np.clip(p + lift + run, 0, 1)))
                    rows += [dict(model="tiny", method=method, config=method, seed=seed, benchmark=b, problem=f"{b}-{j}", sample=s,
                                  correct=int(s < hits)) for s in range(4)]
    return pd.DataFrame(rows)


def table_of(frame: pd.DataFrame):
    from dashboards.collect.sample_results import aggregate

    data = aggregate(frame, "pilot")
    cfg = TableConfig(baselines=["GRPO"], benchmarks=list(BENCHES), significance="paired", cells="mean ± ci", scale=100.0)
    return build_table(data.results, cfg, problems=data.problems)


def test_seeds_for_a_difference_are_the_fewest_that_detect_it_at_holms_first_step():
    plan = make_plan(table_of(pilot()), Target(detect={"AVG": 8.0, "easy": 12.0}))
    m = 2 * 3  # Same and Strong against GRPO, on easy, hard and AVG: the table's tested cells
    assert {(r.method, r.column) for r in plan.rows} == {(x, c) for x in ("Same", "Strong") for c in ("AVG", "easy")}
    for r in plan.rows:
        c, level, scale = plan.curves_of[("tiny", r.method, r.column)]
        assert level == pytest.approx(0.05 / m) and scale == 100.0
        assert r.detectable_now == pytest.approx(100 * detectable_difference(c, alpha=0.05 / m))
        target = {"AVG": 8.0, "easy": 12.0}[r.column]
        assert r.target == target and r.seeds is not None
        assert 100 * detectable_difference(c, r.seeds, alpha=0.05 / m) <= target  # enough ...
        assert r.seeds == 2 or 100 * detectable_difference(c, r.seeds - 1, alpha=0.05 / m) > target  # ... the fewest
        assert r.cost == 2 * r.seeds  # trials: the method's and the baseline's
    assert plan.block_cost["tiny"] == 3 * max(r.seeds for r in plan.rows)  # every method of the block at the most
    assert any("p < 0.05/6" in n and "Holm's first step" in n for n in plan.notes)


def test_seeds_and_a_budget_give_the_detectable_difference_and_it_shrinks_with_seeds():
    table = table_of(pilot())
    at = {s: make_plan(table, Target(seeds=s)) for s in (3, 6, 12)}
    for key in ("Same", "Strong"):
        shown = [next(r.target for r in at[s].rows if r.method == key and r.column == "AVG") for s in (3, 6, 12)]
        assert shown[0] > shown[1] > shown[2] > 0, shown
    # the round trip: what 6 seeds detect needs at most 6 seeds
    six = next(r for r in at[6].rows if r.method == "Strong" and r.column == "AVG")
    assert next(r.seeds for r in make_plan(table, Target(detect={"AVG": six.target + 1e-9})).rows
                if r.method == "Strong") <= 6
    costs = {"GRPO": 2.0, "Same": 1.5, "Strong": 2.5}  # GPU-hours a trial
    budget = make_plan(table, Target(budget=40.0), costs, "GPU-hours")
    assert {r.seeds for r in budget.rows} == {math.floor(40.0 / 6.0)}  # 6 GPU-hours buy one seed of each method
    assert any("buys 6 seed(s) per method" in n for n in budget.notes)
    with pytest.raises(ValueError, match="buys 1 seed"):
        make_plan(table, Target(budget=7.0), costs, "GPU-hours")
    with pytest.raises(ValueError, match="no cost per trial is known for"):
        make_plan(table, Target(budget=40.0), {"GRPO": 2.0}, "GPU-hours")


def test_a_method_with_one_seed_borrows_the_pooled_spread_of_the_others_and_is_named():
    plan = make_plan(table_of(pilot({"GRPO": 3, "Same": 3, "Strong": 1})), Target(seeds=5))
    strong = [r for r in plan.rows if r.method == "Strong"]
    assert strong and all(r.borrowed and r.pilot_seeds == (1, 3) for r in strong)
    assert not any(r.borrowed for r in plan.rows if r.method == "Same")
    assert any("Strong has one seed in the pilot" in n for n in plan.notes)
    assert "*" in plan.markdown()


@pytest.mark.parametrize("kw, message", [
    ({}, "give exactly one of --detect, --seeds or --budget (got none)"),
    ({"seeds": 4, "budget": 10.0}, "give exactly one of --detect, --seeds or --budget (got --seeds, --budget)"),
    ({"seeds": 1}, "--seeds: at least 2 seeds per method"),
    ({"budget": -3.0}, "--budget: a positive number"),
    ({"detect": {"AVG": 0.0}}, "--detect: differences must be positive"),
    ({"seeds": 3, "power": 1.0}, "--power: between 0 and 1"),
])
def test_a_target_that_cannot_be_planned_is_refused_naming_the_option(kw, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Target(**kw)


def test_detect_is_parsed_per_column_and_a_bad_item_is_named():
    assert parse_detect("AVG=3, aime24=5.5") == {"AVG": 3.0, "aime24": 5.5}
    for bad in ("AVG3", "AVG=x", "=3"):
        with pytest.raises(ValueError, match=f"--detect: '{bad}' is not COLUMN=DIFFERENCE"):
            parse_detect(bad)


def test_the_command_on_a_per_sample_file_prints_md_and_csv_draws_the_figure_and_refuses_bad_input(tmp_path):
    from sweeps.cli import app

    path = tmp_path / "pilot.csv"
    pilot().to_csv(path, index=False)
    run = CliRunner().invoke
    md = run(app, ["plan", str(path), "--baselines", "GRPO", "--detect", "AVG=8", "--figure",
                   str(tmp_path / "plan.png")])
    assert md.exit_code == 0, md.output
    assert "| tiny | Strong vs GRPO | AVG | 3 vs 3 |" in md.stdout and "Holm's first step" in md.stdout
    assert (tmp_path / "plan.png").stat().st_size > 5000
    csv = run(app, ["plan", str(path), "--baselines", "GRPO", "--seeds", "6", "-f", "csv"])
    assert csv.exit_code == 0, csv.output
    frame = pd.read_csv(pd.io.common.StringIO(csv.stdout))
    assert set(frame["seeds_per_method"]) == {6} and (frame["difference"] > 0).all()
    assert list(frame.columns[:4]) == ["model", "method", "baseline", "column"]
    for args, said in ((["--detect", "AVG3"], "--detect: 'AVG3' is not COLUMN=DIFFERENCE"),
                       (["--seeds", "4"], "--baselines: name the baseline methods"),
                       (["--baselines", "GRPO", "--detect", "AVG=3,aime=3"],
                        "--detect: no column aime in the pilot's table; its columns are easy, hard, AVG")):
        bad = run(app, ["plan", str(path), *args])
        assert bad.exit_code == 2 and said in bad.output, bad.output
    per_seed = tmp_path / "per_seed.csv"
    pd.DataFrame({"model": "m", "method": ["A", "B"], "benchmark": "x", "value": [0.5, 0.6]}).to_csv(per_seed)
    refused = run(app, ["plan", str(per_seed), "--baselines", "A", "--seeds", "4"])
    assert refused.exit_code == 2 and "a plan needs per-problem scores" in refused.output, refused.output
