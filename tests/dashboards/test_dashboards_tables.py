"""Tables built from a real MLflow store equal the recorded metrics averaged over seeds."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from dashboards_store import BENCH, MODELS

from dashboards.tables.from_sweep import table_from_sweep
from dashboards.tables.build import AVG, DELTA, TableConfig, build_table


def _expected(truth: pd.DataFrame, model: str, config: str, step: int | None, bench: str) -> float:
    """Mean over seeds of val/<bench>/acc at `step` (None = last logged step), x100."""
    t = truth[(truth["model"] == model) & (truth["config"] == f"{model}-{config}")
              & (truth["key"] == f"val/{bench}/acc")]
    t = t[t["step"] == (t["step"].max() if step is None else step)]
    assert t["seed"].nunique() == 2
    return 100 * t["value"].mean()


def _row(table, model, label):
    return next(r for r in table.rows if r.model == model and r.label == label)


@pytest.mark.slow
def test_final_step_values_mean_over_seeds(known_store, known_data):
    cfg = TableConfig(benchmarks=["hard", "easy", "medium"], base="Base", delta_avg=True)
    table = table_from_sweep(known_data, cfg)
    assert table.columns == ["hard", "easy", "medium", AVG, DELTA]
    assert table.models == list(MODELS)
    for model in MODELS:
        labels = [r.label for r in table.rows if r.model == model]
        assert labels == ["Base", "GRPO", "GSPO", "DHPO-E"]  # base first, then trial order
        for method, config in (("GRPO", "grpo-hi"), ("GSPO", "gspo"), ("DHPO-E", "dhpo-entropy-branch")):
            row = _row(table, model, method)
            assert row.n == 2 and row.config == f"{model}-{config}"
            exp = {b: _expected(known_store.truth, model, config, None, b) for b in BENCH}
            for b in BENCH:
                assert 100 * row.cells[b].mean == pytest.approx(exp[b])
            assert 100 * row.cells[AVG].mean == pytest.approx(sum(exp.values()) / 3)
        # base row = step-0 values averaged per seed (the trials of a seed evaluate one base policy),
        # then over the seeds: n counts seeds, not trials
        base = _row(table, model, "Base")
        t = known_store.truth
        step0 = t[(t["model"] == model) & (t["step"] == 0) & (t["key"] == "val/easy/acc")]
        per_seed = step0.groupby("seed")["value"].mean()
        assert len(step0) == 8 and base.n == len(per_seed) == 2 and base.cells["easy"].n == 2
        assert base.cells["easy"].mean == pytest.approx(per_seed.mean())
        assert base.cells["easy"].values == pytest.approx(list(per_seed))
        grpo = _row(table, model, "GRPO")
        delta = sum(grpo.cells[b].mean - base.cells[b].mean for b in BENCH) / 3
        assert grpo.cells[DELTA].mean == pytest.approx(delta)


def test_hand_checked_cell_values(known_data):
    table = table_from_sweep(known_data, TableConfig(benchmarks=BENCH, base="Base", delta_avg=True))
    md = table.to_markdown()
    # m-small GRPO(grpo-hi) easy: seeds 0.45 and 0.462 -> 45.6; DHPO-E: 0.5 and 0.512 -> 50.6
    assert re.search(r"\| GRPO \| <u>45\.6</u> \|", md)  # second best: underlined
    assert re.search(r"\| DHPO-E \| \*\*50\.6\*\* \|", md)  # best: bold
    # base easy: 0.300 and 0.302 -> 30.1 (never emphasised); Delta Avg of GRPO over base:
    # gain 15 + mean seed term (0.6 + 1.2 + 1.8) / 3 - base noise 0.1 = 16.1
    assert "| Base | 30.1 | 40.1 | 50.1 | 40.1 | — |" in md
    assert md.count("+16.1") == 2


def test_best_config_per_method_by_select_metric(known_data):
    table = table_from_sweep(known_data, TableConfig())
    for model in MODELS:
        assert _row(table, model, "GRPO").config == f"{model}-grpo-hi"  # gain 0.15 beats 0.10
    assert table.footnotes and "GRPO -> m-small-grpo-hi (algorithm.params.eps_high=0.28)" in "\n".join(table.footnotes)
    lo = table_from_sweep(known_data, TableConfig(mode="min"))
    assert _row(lo, "m-small", "GRPO").config == "m-small-grpo-lo"
    every = table_from_sweep(known_data, TableConfig(rows="config"))
    assert {r.label for r in every.rows if r.model == "m-small"} == {
        "m-small-grpo-lo", "m-small-grpo-hi", "m-small-gspo", "m-small-dhpo-entropy-branch"}


def test_at_best_uses_the_best_step(known_store, known_data):
    final = table_from_sweep(known_data, TableConfig(at="final"))
    best = table_from_sweep(known_data, TableConfig(at="best", select_by="val/avg/acc"))
    # DHPO-E peaks at step 5; the others are best at their final step
    for b in BENCH:
        assert 100 * _row(best, "m-large", "DHPO-E").cells[b].mean == pytest.approx(
            _expected(known_store.truth, "m-large", "dhpo-entropy-branch", 5, b))
        assert _row(best, "m-large", "GSPO").cells[b].mean == pytest.approx(_row(final, "m-large", "GSPO").cells[b].mean)


def test_std_and_seed_count_rendering(known_data):
    table = table_from_sweep(known_data, TableConfig(benchmarks=["easy"], std=True, seeds=True, decimals=2))
    row = _row(table, "m-small", "GSPO")
    # seeds: 0.42 and 0.432 -> mean 42.60, sample std 0.8485 -> 0.85
    assert row.cells["easy"].std * 100 == pytest.approx(0.848528, abs=1e-5)
    assert "| GSPO | 2 | 42.60 ± 0.85 | 42.60 ± 0.85 |" in table.to_markdown()


def test_csv_results_with_base_row_and_delta():
    df = pd.DataFrame({
        "model": "Qwen2.5-7B", "method": ["Base"] * 2 + ["GRPO"] * 4 + ["SSPO"] * 4,
        "benchmark": ["gsm8k", "a25"] + ["gsm8k", "a25"] * 4,
        "value": [0.80, 0.10, 0.85, 0.15, 0.87, 0.17, 0.90, 0.20, 0.92, 0.22],
        "seed": [0, 0, 0, 0, 1, 1, 0, 0, 1, 1]})
    t = build_table(df, TableConfig(base="Base", delta_avg=True, avg=False, select_by="AVG",
                                    benchmarks=["gsm8k", "a25"], baselines=["GRPO"]))
    assert t.columns == ["gsm8k", "a25", DELTA]
    frame = t.to_frame().set_index("method")
    assert frame.loc["GRPO", "gsm8k"] == 86.0 and frame.loc["SSPO", DELTA] == 11.0
    assert frame.loc["GRPO", DELTA] == 6.0


def test_missing_base_names_the_field():
    df = pd.DataFrame({"model": "m", "method": ["A"], "benchmark": ["x"], "value": [0.5], "seed": [0]})
    with pytest.raises(ValueError, match="TableConfig.base: no results for base row 'Base'"):
        build_table(df, TableConfig(base="Base", select_by="AVG"))
    with pytest.raises(ValueError, match="TableConfig.baselines"):
        build_table(df, TableConfig(baselines=["Z"], select_by="AVG"))


@pytest.mark.parametrize("kwargs, field", [
    ({"at": "last"}, "at"), ({"mode": "up"}, "mode"), ({"scale": 0}, "scale"), ({"decimals": 1.5}, "decimals"),
    ({"decimals": -1}, "decimals"), ({"benchmarks": "easy"}, "benchmarks"), ({"delta_avg": True}, "delta_avg"),
    ({"metric": "val/acc"}, "metric"), ({"std": "yes"}, "std"), ({"at": "best", "select_by": None}, "select_by"),
    ({"baselines": "GRPO"}, "baselines"), ({"rows": "seed"}, "rows"), ({"lower_is_better": [1]}, "lower_is_better"),
])
def test_table_config_validation_names_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"^TableConfig\.{field}:"):
        TableConfig(**kwargs).validate()


def _declared_store(tmp_path, declared: str | None):
    """A small store whose trials logged val/<b>/acc for hard, easy, zeta; `declared` is their
    data.benchmarks param (as the sweep runner logs the flattened config), or none."""

    from dashboards.collect.sweep_runs import collect
    from dashboards.collect.synthetic_store import METHODS, fill_store

    tmp_path.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    fill_store(uri, "order", methods=METHODS[:2], seeds=(0,), steps=4, eval_every=2,
               benchmarks=("hard", "easy", "zeta"))
    data = collect("order", tracking_uri=uri)
    if declared is not None:
        from tracking_store.client import open_client
        client = open_client(uri)
        for run_id in data.trials["run_id"]:
            client.log_param(run_id, "data.benchmarks", declared)
        data = collect("order", tracking_uri=uri)
    return data


@pytest.mark.slow
def test_columns_follow_the_trials_configured_benchmark_order(tmp_path):
    from dashboards.report.writer import ReportConfig, write_report

    data = _declared_store(tmp_path, "['medium', 'hard', 'easy']")  # medium: declared, never logged
    assert table_from_sweep(data).columns[:3] == ["hard", "easy", "zeta"]  # then the undeclared ones, sorted
    assert table_from_sweep(data, TableConfig(benchmarks=["zeta", "easy"])).columns[:2] == ["zeta", "easy"]
    paths = write_report(data, tmp_path / "report", ReportConfig(formats=["md"]))
    assert paths["md"].read_text().splitlines()[0].startswith("| Method | hard | easy | zeta | AVG |")


@pytest.mark.slow
def test_columns_are_sorted_without_a_declared_order(tmp_path):
    data = _declared_store(tmp_path, None)
    assert table_from_sweep(data).columns[:3] == ["easy", "hard", "zeta"]
    unreadable = _declared_store(tmp_path / "b", "not a list")
    assert table_from_sweep(unreadable).columns[:3] == ["easy", "hard", "zeta"]


def test_latex_names_stay_literal_text_on_their_line():
    """A method label or benchmark name with line breaks or LaTeX specials cannot become live LaTeX in
    table.tex: not in a cell, not in the header, not by ending a footnote comment line."""
    evil = "GRPO\n\\input{/etc/passwd}\r\n\n% x\u2028y"
    bench = "b_1 & $x$ #^~\n\\def"
    df = pd.DataFrame({"model": "m", "method": [evil] * 4 + ["B"] * 2, "config": ["c1", "c1", "c2", "c2", "b", "b"],
                       "benchmark": bench, "value": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "seed": [0, 1] * 3})
    table = build_table(df, TableConfig(select_by="AVG"))
    assert table.footnotes and any("\\input" in n for n in table.footnotes)  # the label reaches a % comment
    tex = table.to_latex(caption="A & B\n\\input{c}", label="tab:x}\n\\input{d}")
    for line in tex.splitlines():
        assert "\\input" not in line or line.startswith("%"), f"live LaTeX: {line!r}"
        assert "\\def" not in line or line.startswith("%"), f"live LaTeX: {line!r}"
    assert "\n\n" not in tex  # no paragraph break inside the tabular
    assert "GRPO \\textbackslash{}input\\{/etc/passwd\\}   \\% x y & " in tex
    assert "b\\_1 \\& \\$x\\$ \\#\\^{}\\textasciitilde{} \\textbackslash{}def" in tex
    assert "\\caption{A \\& B \\textbackslash{}input\\{c\\}}" in tex and "\\label{tab:x \\input" not in tex
