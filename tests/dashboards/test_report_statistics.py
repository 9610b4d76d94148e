"""`sweep report` on a real MLflow store whose runs carry per-problem verdicts: the paired footnote, intervals,
--power, the aggregates files, and `--significance welch` giving the earlier output."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from contract.metrics import verdicts_artifact
from evaluators.verdicts import dumps

BENCHES = ("easy", "hard")
METHODS = {"GRPO": 0.0, "GSPO": 0.1, "DHPO-E": 1.5}  # logit shift: DHPO-E truly better


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A sweep of 3 methods x 3 seeds, validation at steps 0 and 4, with verdict artifacts that reproduce the
    logged accuracies (64 problems x 4 samples per benchmark, shared difficulty)."""
    from mlflow.entities import Metric

    root = tmp_path_factory.mktemp("verdict_store")
    uri = f"sqlite:///{root}/mlflow.db"
    from tracking_store.client import open_client
    client = open_client(uri)
    exp = client.create_experiment("stats", artifact_location=str(root / "artifacts"))
    parent = client.create_run(exp, run_name="stats", tags={"role": "parent", "sweep": "stats"})
    rng = np.random.default_rng(0)
    difficulty = {b: rng.normal(level, 1.5, 64) for b, level in zip(BENCHES, (0.0, -2.0))}
    base = {(b, s): rng.binomial(4, 1 / (1 + np.exp(-difficulty[b])), 64) for b in BENCHES for s in range(3)}
    for method, shift in METHODS.items():
        for seed in range(3):
            tid = f"{method.lower()}.s{seed}"
            run = client.create_run(exp, run_name=tid, tags={
                "mlflow.parentRunId": parent.info.run_id, "role": "trial", "sweep": "stats", "trial_id": tid,
                "config": method.lower(), "method": method, "seed": str(seed), "model": "tiny"})
            rid, metrics = run.info.run_id, []
            for step in (0, 4):
                records = {}
                for b in BENCHES:
                    hits = base[(b, seed)] if step == 0 else rng.binomial(
                        4, 1 / (1 + np.exp(-(difficulty[b] + shift + rng.normal(0, 0.1)))), 64)
                    records[b] = [{"id": "", "correct": [j < h for j in range(4)]} for h in hits]
                    metrics.append(Metric(f"val/{b}/acc", float(np.mean(hits / 4)), 1000 + step, step))
                client.log_text(rid, dumps(step, records), verdicts_artifact("val", step))
            client.log_batch(rid, metrics=metrics)
            client.set_terminated(rid)
    client.set_terminated(parent.info.run_id)
    return uri


@pytest.fixture
def app():
    from sweeps.cli import app

    return app  # the `sweep` command itself


def _report(app, store, out, *args):
    r = CliRunner().invoke(app, ["report", "stats", "--tracking-uri", store, "--out", str(out), "--no-log",
                                 "--base", "Base", "--baselines", "GRPO,GSPO", "--formats", "md,csv,html,png",
                                 *args])
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.slow
def test_report_gives_the_paired_test_intervals_power_and_aggregates(app, store, tmp_path):
    out = tmp_path / "rep"
    printed = _report(app, store, out, "--cells", "mean +- ci", "--power", "5")
    table = (out / "table.md").read_text()
    assert "| DHPO-E | **" in table and "±" in table
    assert "† differs from the strongest baseline" in table and "Holm's correction" in table
    assert "64 shared problems per benchmark" in table and "n = 3 vs 3 seeds" in table
    assert "seeds per method to find a 5-point difference with 80% power" in printed  # --power prints its lines
    header = (out / "table.csv").read_text().splitlines()[0]
    assert "AVG p_holm" in header and "easy ci_low" in header
    aggregates = (out / "aggregates.md").read_text()
    assert "| DHPO-E |" in aggregates and "IQM" in aggregates and "P(X > Y)" in aggregates
    assert (out / "figures" / "aggregates.png").stat().st_size > 10_000
    html = (out / "report.html").read_text()
    assert "<h2>Aggregates</h2>" in html and "fig-aggregates" in html


def test_welch_on_the_same_store_is_the_earlier_output(app, store, tmp_path):
    out = tmp_path / "welch"
    _report(app, store, out, "--significance", "welch")
    table = (out / "table.md").read_text()
    assert "Welch's two-sided t-test over seeds" in table and "Holm" not in table and "±" not in table
    assert "p_holm" not in (out / "table.csv").read_text()


@pytest.mark.slow
def test_plan_from_a_pilot_sweep_in_the_store(app, store, tmp_path):
    """`sweep plan NAME` reads the sweep as `sweep report` does (its verdicts, the strongest baseline) and prices
    in trials when no compute was logged; a sweep that names no baselines is refused with the option to give."""
    r = CliRunner().invoke(app, ["plan", "stats", "--tracking-uri", store, "--baselines", "GRPO,GSPO", "--detect",
                                 "AVG=20", "-f", "csv"])
    assert r.exit_code == 0, r.output
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(r.stdout))
    strongest = set(frame["baseline"])
    assert len(strongest) == 1 and strongest <= {"GRPO", "GSPO"}
    assert set(frame["method"]) == {"DHPO-E", *({"GRPO", "GSPO"} - strongest)}
    assert (frame["cost_trials"] == 2 * frame["seeds_per_method"]).all()  # no perf/ metrics: a trial costs 1
    dhpo = frame[frame["method"] == "DHPO-E"].iloc[0]
    assert dhpo["detectable_now"] < 20 and dhpo["seeds_per_method"] <= 3  # the known large lift: the pilot suffices
    refused = CliRunner().invoke(app, ["plan", "stats", "--tracking-uri", store, "--seeds", "4"])
    assert refused.exit_code == 2 and "names no baselines" in refused.output and "--baselines" in refused.output
