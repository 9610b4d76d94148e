"""A real grid with a selection split, end to end: the built-in trainer logs select/<bench>/acc beside
val/, the table picks each method's configuration there and reports the held-out benchmarks, and the
report's grid section holds every configuration with the values MLflow recorded."""

from __future__ import annotations

import pandas as pd
import pytest

from contract.metrics import SELECT_AVG, VAL_AVG
from dashboards.collect.sweep_runs import collect
from dashboards.report.writer import ReportConfig, write_report
from evaluators.tasks import make_split
from sweeps.driver.runner import RunOptions, run_sweep
from sweeps.specs.load import SpecError, load_spec
from sweep_testlib import client_for, kill_ray_processes, refresh_ray_auth, short_ray_dir, write_spec
from trainers.config import TrialConfig
from trainers.local.data import load_data, load_selection

pytestmark = pytest.mark.lane("verl")  # its slow tests' lane (tests/conftest.py)


def test_the_selection_split_is_other_problems_of_the_same_generator():
    cfg = TrialConfig()
    cfg.data.benchmarks, cfg.data.eval_size, cfg.data.select_size = ["easy", "hard"], 16, 8
    _, reported = load_data(cfg)
    selection = load_selection(cfg)
    for name in ("easy", "hard"):
        shown = {p.prompt for p in reported[name]}
        picked = {p.prompt for p in selection[name]}
        assert len(picked) == 8 and not shown & picked
        assert [p.prompt for p in reported[name]] == [p.prompt for p in make_split(name, 16, cfg.data.seed)]
    cfg.data.select_size = 0
    assert load_selection(cfg) == {}


def test_a_file_benchmark_needs_its_own_selection_file(tmp_path):
    spec = write_spec(tmp_path, "g", variants=[{"algorithm": "grpo"}])
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"prompt": "Q: 1+1=?", "answer": "2"}\n')
    with pytest.raises(SpecError, match=r"data.select_size: \['mine'\] are read from files.*data.select_files"):
        load_spec(spec, ["base.data.select_size=4", "base.data.benchmarks=[mine]", f"base.data.eval_files.mine={mine}"])
    with pytest.raises(SpecError, match=r"data.select_files.medium: expected a benchmark of data.benchmarks"):
        load_spec(spec, ["base.data.benchmarks=[easy]", f"base.data.select_files.medium={mine}"])
    both = load_spec(spec, ["base.data.select_size=4", "base.data.benchmarks=[easy,mine]",
                            f"base.data.eval_files.mine={mine}", f"base.data.select_files.mine={mine}"])
    assert both.trials[0].config.data.select_files == {"mine": str(mine)}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_grid_picks_on_the_selection_split_and_reports_every_configuration(tmp_path):
    refresh_ray_auth()
    spec = write_spec(tmp_path, "grid_small", steps=4, variants=[
        {"algorithm": "grpo", "clip": {"low": 0.1, "high": 0.1}}, {"algorithm": "grpo", "clip": {"low": 0.3, "high": 0.3}},
        {"algorithm": "sapo"}])
    ray_dir = short_ray_dir()
    try:
        result = run_sweep(load_spec(spec, ["base.data.select_size=4"]),
                           RunOptions(run_dir=tmp_path / "runs", show_progress=False, num_cpus=2, ray_temp_dir=ray_dir))
    finally:
        kill_ray_processes(ray_dir)
    assert set(result.statuses.values()) == {"FINISHED"} and len(result.statuses) == 6
    data = collect("grid_small", tracking_uri=client_for(tmp_path / "runs").tracking_uri)
    keys = set(data.history["key"])
    assert {SELECT_AVG, "select/easy/acc", VAL_AVG} <= keys
    paths = write_report(data, tmp_path / "report", ReportConfig.from_dict({"table": {"at": "final"},
                                                                           "formats": ["html", "md", "png"]}))
    table = paths["md"].read_text()
    assert "on the selection split (select/avg/acc" in table and "GRPO -> grpo-clip0." in table

    final = data.history[data.history["key"].str.match(r"^(val|select)/avg/acc$")]
    last = final.sort_values("step").groupby(["config", "seed", "key"], observed=True)["value"].last().unstack("key")
    per_config = last.groupby("config", observed=True).mean()
    picked = per_config.loc[["grpo-clip0.1-0.1", "grpo-clip0.3-0.3"], SELECT_AVG].idxmax()
    grid = paths["grid"].read_text()
    for config, row in per_config.iterrows():
        line = next(x for x in grid.splitlines() if f"| {config} |" in x)
        assert f"{row[SELECT_AVG] * 100:.1f}" in line and f"{row[VAL_AVG] * 100:.1f}" in line
    assert "picked" in next(x for x in grid.splitlines() if f"| {picked} |" in x)
    assert "GRPO: configurations" in grid and "Selection bias" in grid and "SAPO: configurations" not in grid
    assert paths["png:grid_sensitivity"].stat().st_size > 1000
    assert "Grid: every configuration (picked on the selection split)" in paths["html"].read_text()
    assert isinstance(per_config, pd.DataFrame)
