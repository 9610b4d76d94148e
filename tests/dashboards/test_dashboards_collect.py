"""collect(): MLflow runs -> trials/history frames; load_results(): CSV/parquet checks."""

from __future__ import annotations

import pandas as pd
import pytest
from dashboards_store import CONFIGS, MODELS, SEEDS

from dashboards.collect.sweep_runs import HISTORY_COLUMNS, collect, load_results, sqlite_path


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    """Plain-string columns (the history uses categoricals), one canonical row order."""
    df = df.astype({c: str for c in ("run_id", "trial_id", "method", "config", "model", "key")})
    return df.sort_values(["run_id", "key", "step"]).reset_index(drop=True)


def test_trials_frame_has_tags_params_and_finals(known_store, known_data):
    trials = known_data.trials
    assert len(trials) == len(MODELS) * len(CONFIGS) * len(SEEDS)
    assert known_data.parent_run_id == known_store.parent_run_id
    assert set(trials["trial_id"]) == set(known_store.truth["trial_id"])
    assert set(trials["method"]) == {"GRPO", "GSPO", "DHPO-E"}
    assert trials["seed"].tolist() and set(trials["seed"]) == set(SEEDS)
    assert {"params.algorithm.params.eps_high", "params.trainer.lr"} <= set(trials.columns)
    truth = known_store.truth
    last = truth.sort_values("step").groupby(["run_id", "key"])["value"].last()
    for _, row in trials.iterrows():
        assert row["last_step"] == 10 and row["n_steps"] == 11  # steps 0..10
        for key in ("val/easy/acc", "val/avg/acc", "actor/entropy"):
            assert row[key] == pytest.approx(last[(row["run_id"], key)])


def test_history_equals_everything_logged(known_store, known_data):
    hist = known_data.history
    assert list(hist.columns) == HISTORY_COLUMNS
    got = _sorted(hist)[["run_id", "key", "step", "value"]]
    exp = _sorted(known_store.truth)[["run_id", "key", "step", "value"]]
    pd.testing.assert_frame_equal(got, exp, check_dtype=False)
    # the metadata columns agree with the trial that logged each point
    full = _sorted(hist).merge(_sorted(known_store.truth), on=["run_id", "key", "step"], suffixes=("", "_t"))
    for col in ("trial_id", "method", "config", "model", "seed"):
        assert (full[col].astype(str) == full[f"{col}_t"].astype(str)).all(), col
    # val metrics are sparse (every 5 steps), training metrics dense
    assert sorted(hist.loc[hist["key"] == "val/easy/acc", "step"].unique()) == [0, 5, 10]


def test_client_fallback_matches_bulk_sql(known_store, known_data):
    slow = collect(known_store.sweep, tracking_uri=known_store.uri, bulk=False, workers=4)
    pd.testing.assert_frame_equal(_sorted(slow.history), _sorted(known_data.history), check_dtype=False)


def test_select_by_parent_run_id_and_keys(known_store):
    data = collect(parent_run_id=known_store.parent_run_id, tracking_uri=known_store.uri,
                   keys=["val/avg/acc"])
    assert data.sweep == "known" and len(data.trials) == 16
    assert set(data.history["key"]) == {"val/avg/acc"}


def test_unknown_sweep_lists_experiments(known_store):
    with pytest.raises(ValueError, match=r"unknown sweep 'knwon'.*did you mean 'known'.*Experiments there: .*known"):
        collect("knwon", tracking_uri=known_store.uri)


def test_sqlite_path_parsing(tmp_path, monkeypatch):
    assert sqlite_path(f"sqlite:///{tmp_path}/x.db") == tmp_path / "x.db"
    monkeypatch.chdir(tmp_path)
    assert sqlite_path("sqlite:///rel.db") == tmp_path / "rel.db"
    assert sqlite_path("http://127.0.0.1:5000") is None
    assert sqlite_path("sqlite://") is None


def test_load_results_csv_and_parquet(tmp_path):
    df = pd.DataFrame({"model": ["m"] * 4, "method": ["A", "A", "B", "B"], "benchmark": ["x", "y"] * 2,
                       "value": [0.1, 0.2, 0.3, 0.4]})
    df.to_csv(tmp_path / "r.csv", index=False)
    df.to_parquet(tmp_path / "r.parquet")
    for name in ("r.csv", "r.parquet"):
        out = load_results(tmp_path / name)
        assert list(out.columns) == ["model", "method", "benchmark", "value", "seed", "config"]
        assert out["config"].tolist() == df["method"].tolist()


def test_load_results_missing_columns_names_file_and_columns(tmp_path):
    p = tmp_path / "bad.csv"
    pd.DataFrame({"method": ["A"], "bench": ["x"], "value": [1.0]}).to_csv(p, index=False)
    with pytest.raises(ValueError) as e:
        load_results(p)
    msg = str(e.value)
    assert str(p) in msg and "['model', 'benchmark']" in msg
    assert "model, method, benchmark, value" in msg and "found: method, bench, value" in msg


@pytest.mark.slow
def test_nan_values_duplicate_steps_and_untagged_runs(tmp_path):
    """NaN stays NaN; a step logged twice keeps the value logged last; runs written without
    role/config/method tags are still found (nested runs) with fallbacks from the run name."""
    from mlflow.entities import Metric

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    from tracking_store.client import open_client
    c = open_client(uri)
    exp = c.create_experiment("raw", artifact_location=str(tmp_path / "art"))
    parent = c.create_run(exp, run_name="raw").info.run_id
    rid = c.create_run(exp, run_name="grpo-x.s3", tags={"mlflow.parentRunId": parent, "algorithm": "grpo"}).info.run_id
    c.log_batch(rid, metrics=[Metric("val/a/acc", 0.5, 1, 0), Metric("val/a/acc", float("nan"), 2, 1),
                              Metric("val/a/acc", 0.7, 3, 2)])
    c.log_batch(rid, metrics=[Metric("val/a/acc", 0.9, 4, 2)])  # step 2 re-logged (a resumed trial)
    c.set_terminated(rid, status="FAILED")
    for bulk in (True, False):
        data = collect("raw", tracking_uri=uri, bulk=bulk)
        h = data.history
        assert h["step"].tolist() == [0, 1, 2] and h["value"].isna().tolist() == [False, True, False]
        assert h["value"].iloc[2] == 0.9
        t = data.trials.iloc[0]
        assert (t["trial_id"], t["config"], t["method"], t["seed"], t["status"]) == ("grpo-x.s3", "grpo-x", "grpo", 3, "FAILED")
        assert t["val/a/acc"] == 0.9
    assert collect("raw", tracking_uri=uri, statuses=("FAILED",)).trials.shape[0] == 1
    with pytest.raises(ValueError, match=r"no trial runs with status in \['FINISHED'\] \(statuses found: \{'FAILED': 1\}\)"):
        collect("raw", tracking_uri=uri, statuses=("FINISHED",))


@pytest.fixture(scope="module")
def known_server(known_store):
    """`mlflow server` over the known store's sqlite file (one worker), killed by pid at the end."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    from contract.env import MLFLOW_SERVER_JOBS

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri", known_store.uri,
                               "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                              env={**os.environ, MLFLOW_SERVER_JOBS.name: "false"}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                assert time.time() < deadline and server.poll() is None, "mlflow server did not come up"
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


@pytest.mark.slow
def test_a_server_store_is_read_in_bulk_calls_and_matches_the_database(known_server, known_data, monkeypatch):
    """Through the read commands' REST reader (tracking_store/rest_reads.py) and through MLflow's client alike."""
    from mlflow.tracking import MlflowClient

    import tracking_store.history as history_module
    from tracking_store.rest_reads import RestReader

    calls = {"bulk": 0, "mlflow": 0}
    bulk, mlflow_bulk = RestReader.metric_history_bulk, history_module._bulk_interval

    def counted_bulk(self, run_ids, key, max_results):
        calls["bulk"] += 1
        return bulk(self, run_ids, key, max_results)

    def counted_mlflow_bulk(store, run_ids, key):
        calls["mlflow"] += 1
        return mlflow_bulk(store, run_ids, key)
    monkeypatch.setattr(RestReader, "metric_history_bulk", counted_bulk)
    monkeypatch.setattr(history_module, "_bulk_interval", counted_mlflow_bulk)
    served = collect(known_data.sweep, tracking_uri=known_server, workers=4)
    pd.testing.assert_frame_equal(_sorted(served.history), _sorted(known_data.history), check_dtype=False)
    assert calls["bulk"] == served.history["key"].nunique() and calls["mlflow"] == 0  # 16 runs: one call per key
    run_ids = served.trials["run_id"].tolist()
    keys = sorted(served.history["key"].unique())
    by_mlflow = history_module.read_history_client(MlflowClient(known_server), run_ids, {r: keys for r in run_ids})
    assert calls["mlflow"] == len(keys)
    plain = lambda df: df[["run_id", "key", "step", "value"]].astype({"run_id": str, "key": str}).sort_values(  # noqa: E731
        ["run_id", "key", "step"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(plain(by_mlflow), plain(served.history), check_dtype=False)
    # a run with as many rows as a bulk call returns may have been sampled: read whole, one call per (run, key)
    monkeypatch.setattr(history_module, "BULK_ROWS", 3)
    capped = collect(known_data.sweep, tracking_uri=known_server, workers=4)
    pd.testing.assert_frame_equal(_sorted(capped.history), _sorted(known_data.history), check_dtype=False)
