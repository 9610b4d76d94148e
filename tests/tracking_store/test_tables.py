"""tracking_store/tables.py: a sqlite store's runs read from its tables equal MLflow's own search_runs."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from tracking_store.tables import RunRecord, experiment_id, experiment_names, local_artifact_dir, read_runs


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    """Two experiments (one deleted), a parent, two trials (one with a NaN metric), a deleted trial."""
    from mlflow.entities import Metric, Param

    root = tmp_path_factory.mktemp("store_tables")
    uri = f"sqlite:///{root}/mlflow.db"
    from tracking_store.client import open_client
    client = open_client(uri)
    exp = client.create_experiment("tables", artifact_location=str(root / "artifacts"))
    gone = client.create_experiment("gone")
    client.delete_experiment(gone)
    parent = client.create_run(exp, run_name="tables", tags={"role": "parent", "sweep": "tables"}).info.run_id
    for i, tid in enumerate(("a.s0", "a.s1", "a.s2")):
        rid = client.create_run(exp, run_name=tid, tags={"role": "trial", "trial_id": tid,
                                                          "mlflow.parentRunId": parent}).info.run_id
        metrics = [Metric("val/avg/acc", 0.1 * s + i, 1000 + s, s) for s in range(3)]
        metrics.append(Metric("actor/entropy", float("nan") if i == 1 else 0.5, 2000, 2))
        client.log_batch(rid, metrics=metrics, params=[Param("trainer.steps", "3"), Param("seed", str(i))])
        client.set_terminated(rid, "FAILED" if i == 1 else "FINISHED")
        if tid == "a.s2":
            client.delete_run(rid)
    return client, Path(f"{root}/mlflow.db"), exp


def by_id(records: list[RunRecord]) -> dict[str, RunRecord]:
    return {r.run_id: r for r in records}


def same(a: RunRecord, b: RunRecord) -> bool:
    """Equal, NaN metrics included (NaN != NaN)."""
    nan_a = {k for k, v in a.metrics.items() if math.isnan(v)}
    nan_b = {k for k, v in b.metrics.items() if math.isnan(v)}
    strip = lambda r, nans: {**r.__dict__, "metrics": {k: v for k, v in r.metrics.items() if k not in nans}}  # noqa: E731
    return nan_a == nan_b and strip(a, nan_a) == strip(b, nan_b)


@pytest.mark.slow
@pytest.mark.parametrize("role", ["trial", "parent", None])
def test_tables_equal_mlflows_search(small_store, role):
    client, db, exp = small_store
    filt = f"tags.role = '{role}'" if role else ""
    expected = by_id([RunRecord.of(r) for r in client.search_runs([exp], filt)])
    got = by_id(read_runs(db, exp, role=role))
    assert got.keys() == expected.keys() and len(got) == {"trial": 2, "parent": 1, None: 3}[role]
    assert all(same(got[rid], expected[rid]) for rid in got)


def test_nan_metric_status_and_no_params(small_store):
    client, db, exp = small_store
    runs = {r.tags["trial_id"]: r for r in read_runs(db, exp, role="trial", params=False)}
    assert set(runs) == {"a.s0", "a.s1"}  # a.s2 was deleted
    assert math.isnan(runs["a.s1"].metrics["actor/entropy"]) and runs["a.s0"].metrics["actor/entropy"] == 0.5
    assert runs["a.s1"].metrics["val/avg/acc"] == pytest.approx(1.2)  # the latest step's value
    assert (runs["a.s0"].status, runs["a.s1"].status) == ("FINISHED", "FAILED")
    assert runs["a.s0"].params == {}


def test_experiments_by_name(small_store):
    _, db, exp = small_store
    assert experiment_id(db, "tables") == exp
    assert experiment_id(db, "gone") is None and experiment_id(db, "nope") is None
    assert experiment_names(db) == ["tables"]  # not the deleted one, not MLflow's Default


def test_local_artifact_dir():
    assert local_artifact_dir("file:///abs/mlartifacts/1/x/artifacts") == Path("/abs/mlartifacts/1/x/artifacts")
    assert local_artifact_dir("/abs/dir%20x") == Path("/abs/dir x")
    assert local_artifact_dir("file://localhost/abs") == Path("/abs")
    for remote in ("mlflow-artifacts:/1/x/artifacts", "s3://bucket/x", "http://host/x", "file://otherhost/x", None, ""):
        assert local_artifact_dir(remote) is None, remote


def test_a_file_that_is_no_store_is_named(tmp_path):
    from tracking_store.tables import UnreadableStore

    empty = tmp_path / "mlflow.db"
    con = sqlite3.connect(empty)
    con.execute("CREATE TABLE other (x)")
    con.close()
    with pytest.raises(UnreadableStore, match=r"mlflow\.db: not readable as an MLflow store \(no such table"):
        experiment_id(empty, "x")
    (tmp_path / "text.db").write_text("not a database at all " * 100)
    with pytest.raises(UnreadableStore, match=r"text\.db: not readable as an MLflow store"):
        read_runs(tmp_path / "text.db", "1")
