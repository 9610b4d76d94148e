"""Fast tests of the store module and the tracking writer on a real sqlite store, no Ray: credential
masking, transient errors, the lease across "hosts", the journal's durability, and an outage of the store
(injected into the real client) that loses nothing and is said once and on recovery."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from sweeps.specs.load import load_spec
from tracking_store.client import StoreMissing, is_transient, open_existing
from tracking_store.lease import DriverLease, LEASE_TAG, SweepAlreadyRunning, end_abandoned
from tracking_store.uri import default_uri, mask_uri
from sweeps.tracking.sweep_runs import SweepTracker
from sweeps.tracking.writer import Journal, TrackingOutage, TrackingWriter, journal_path
from sweep_testlib import steps_of, write_spec


@pytest.mark.parametrize("uri, shown", [
    ("postgresql+psycopg2://alice:p%40ss@db:5432/mlflow", "postgresql+psycopg2://alice:***@db:5432/mlflow"),
    ("http://bob:tok3n@10.0.0.1:5000", "http://bob:***@10.0.0.1:5000"),
    ("error at https://u:x@h/api?token=abc&x=1 failed", "error at https://u:***@h/api?token=***&x=1 failed"),
    ("sqlite:////abs/mlflow.db", "sqlite:////abs/mlflow.db"),
    ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
])
def test_credentials_are_masked_and_nothing_else_changes(uri, shown):
    assert mask_uri(uri) == shown


def test_transient_errors_are_told_from_real_ones():
    try:
        try:
            raise ConnectionRefusedError("[Errno 111] Connection refused")
        except ConnectionRefusedError as cause:
            raise MlflowException("API request to http://h/api/2.0/mlflow/runs/log-batch failed") from cause
    except MlflowException as err:
        assert is_transient(err)
    assert is_transient(MlflowException("API request failed: too many 503 error responses"))
    assert not is_transient(MlflowException("INVALID_PARAMETER_VALUE: Invalid metric name: 'a@b'"))


def test_read_commands_never_create_a_store(tmp_path):
    uri = default_uri(tmp_path / "runs")
    with pytest.raises(StoreMissing, match="no MLflow store at .*mlflow.db"):
        open_existing(uri)
    assert not (tmp_path / "runs" / "mlflow.db").exists()


@pytest.fixture
def spec(tmp_path):
    return load_spec(write_spec(tmp_path, "store_unit", seeds=(0,), variants=[{"algorithm": "grpo"}]))


@pytest.mark.slow
def test_a_second_driver_anywhere_is_refused_and_a_stale_lease_is_taken_over(spec, tmp_path, monkeypatch):
    run_dir = tmp_path / "runs"
    tracker = SweepTracker(spec, default_uri(run_dir), run_dir)  # holds the lease
    other = DriverLease(MlflowClient(default_uri(run_dir)), tracker.parent_id, spec.name, tmp_path / "elsewhere")
    other.me["host"] = "another-host"
    with pytest.raises(SweepAlreadyRunning, match=r"already running against this tracking store: pid \d+ on "):
        other.acquire()
    held = json.loads(tracker.client.get_run(tracker.parent_id).data.tags[LEASE_TAG])
    assert held["token"] == tracker.lease.me["token"]  # the refused driver changed nothing
    monkeypatch.setattr("tracking_store.lease.LEASE_STALE_S", 0.0)  # the holder stopped renewing (a dead host)
    assert "taking over the lease" in other.acquire()
    with pytest.raises(SweepAlreadyRunning, match="taken over"):
        tracker.lease.heartbeat()  # the first driver learns it at its next heartbeat and stops
    other.release()
    assert LEASE_TAG not in tracker.client.get_run(tracker.parent_id).data.tags


@pytest.mark.slow
def test_only_a_dead_drivers_own_sweep_is_closed_after_it(spec, tmp_path):
    """end_abandoned (a `sweep slurm` job's driver ended by its own Ray node): the runs of the lease's holder are
    closed KILLED and the lease freed only when that process is gone; a live holder's or another host's are left."""
    run_dir = tmp_path / "runs"
    tracker = SweepTracker(spec, default_uri(run_dir), run_dir)  # this process holds the lease
    trial_run = tracker.start_trial(spec.trials[0])
    client, exp_id, parent = tracker.client, tracker.experiment_id, tracker.parent_id
    me = tracker.lease.me
    assert end_abandoned(client, exp_id, parent, me["host"], me["pid"]) == []  # alive: nothing touched
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    client.set_tag(parent, LEASE_TAG, json.dumps({**me, "pid": dead.pid}))
    assert end_abandoned(client, exp_id, parent, "another-host", dead.pid) == []  # not this host's driver
    assert end_abandoned(client, exp_id, parent, me["host"], dead.pid + 1) == []  # not that driver's lease
    assert client.get_run(parent).info.status == "RUNNING"
    assert end_abandoned(client, exp_id, parent, me["host"], dead.pid) == [trial_run, parent]
    assert [client.get_run(r).info.status for r in (trial_run, parent)] == ["KILLED", "KILLED"]
    assert LEASE_TAG not in client.get_run(parent).data.tags


def test_the_journal_drops_a_torn_line_and_keeps_its_offset(tmp_path):
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append({"op": "steps", "trial": "a", "steps": [[1, 0.0, {}], [2, 0.0, {}]]})
    journal.append({"op": "tags", "trial": "a", "tags": {}})
    with open(path, "ab") as f:
        f.write(b'{"op": "steps", "tri')  # a driver killed mid-append
    again = Journal(path)
    ops, end = again.read()
    assert [op["op"] for op in ops] == ["steps", "tags"] and again.held == 2
    again.commit(ops[:1], len(path.read_bytes().splitlines(keepends=True)[0]))
    third = Journal(path)
    assert [op["op"] for op in third.read()[0]] == ["tags"] and third.held == 0
    third.commit(third.read()[0], third.size)
    assert path.stat().st_size == 0 and not Journal(path).pending()  # caught up: emptied


class _Outage:
    """The real client's writes fail as an unreachable server's do while ``down`` is true."""

    def __init__(self, client):
        self.client, self.down, self.calls = client, False, 0

    def __getattr__(self, name):
        real = getattr(self.client, name)
        if name not in ("log_batch", "set_tag", "create_run", "update_run", "set_terminated", "get_run"):
            return real

        def call(*args, **kwargs):
            self.calls += 1
            if self.down:
                try:
                    raise ConnectionRefusedError("[Errno 111] Connection refused")
                except ConnectionRefusedError as cause:
                    raise MlflowException("API request to http://127.0.0.1:5000 failed") from cause
            return real(*args, **kwargs)
        return call


def _writer(spec, run_dir, limit: float, said: list):
    tracker = SweepTracker(spec, default_uri(run_dir), run_dir)
    tracker.client = outage = _Outage(tracker.client)
    tracker.lease.client = outage
    journal = Journal(journal_path(run_dir / spec.name, default_uri(run_dir)))
    writer = TrackingWriter(journal, lambda: tracker, limit, said.append, trial_of=lambda tid, _: spec.trials[0])
    writer.start()
    return tracker, outage, writer


@pytest.mark.slow
def test_an_outage_loses_nothing_and_is_said_once_and_on_recovery(spec, tmp_path):
    run_dir, said = tmp_path / "runs", []
    tracker, outage, writer = _writer(spec, run_dir, limit=60.0, said=said)
    tid = spec.trials[0].trial_id
    writer.start_trial(tid)
    writer.log_steps(tid, [(s, 1000.0 + s, {"actor/entropy": s / 10}) for s in range(1, 6)])
    assert writer.drain(30)
    outage.down = True
    started = time.monotonic()
    for s in range(6, 41):  # the driver goes on accepting steps; none of these calls waits on the store
        writer.log_steps(tid, [(s, 1000.0 + s, {"actor/entropy": s / 10})])
    writer.log_steps(tid, [(s, 0.0, {"actor/entropy": -1.0}) for s in range(30, 41)])  # a retry replaying steps
    assert time.monotonic() - started < 5
    time.sleep(3)
    assert not writer.drain(0.1) and sum("unreachable since" in m for m in said) == 1
    outage.down = False
    assert writer.drain(60)
    writer.end_trial(tid, "FINISHED")
    assert writer.drain(30)
    writer.close()
    assert any("reachable again after" in m and "writing 35 held steps" in m for m in said), said
    client = MlflowClient(default_uri(run_dir))
    run_id = tracker.children[tid]["run_id"]
    history = client.get_metric_history(run_id, "actor/entropy")
    assert sorted(m.step for m in history) == list(range(1, 41))  # each step exactly once
    assert all(m.value == m.step / 10 for m in history)  # the replayed values were not logged
    assert client.get_run(run_id).info.status == "FINISHED"


@pytest.mark.slow
def test_an_outage_past_the_limit_ends_as_an_interruption_and_the_journal_keeps_it(spec, tmp_path):
    run_dir, said = tmp_path / "runs", []
    tracker, outage, writer = _writer(spec, run_dir, limit=2.0, said=said)
    tid = spec.trials[0].trial_id
    writer.start_trial(tid)
    assert writer.drain(30)
    outage.down = True
    writer.log_steps(tid, [(s, 1000.0 + s, {"actor/entropy": 0.5}) for s in range(1, 11)])
    with pytest.raises(TrackingOutage, match=r"unreachable for \d+s \(limit 2s.*10 steps are held in .*run the same "):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            writer.raise_if_failed()
            time.sleep(0.1)
    assert TrackingOutage.exit_code == 75
    # The next driver (the store is back) writes what this one journaled, each step once.
    outage.down = False
    again = Journal(writer.journal.path)
    assert again.held == 10
    replay = TrackingWriter(again, lambda: tracker, 60.0, said.append, trial_of=lambda tid, _: spec.trials[0])
    replay.start()
    assert replay.drain(30)
    replay.close()
    assert steps_of(MlflowClient(default_uri(run_dir)), tracker.children[tid]["run_id"], "actor/entropy") == \
        list(range(1, 11))


@pytest.mark.slow
def test_a_journal_the_store_refuses_is_kept_aside_and_does_not_block_the_sweep(spec, tmp_path):
    from sweeps.driver.tune_callback import DriverState
    from sweeps.driver.runner import _replay

    run_dir = tmp_path / "runs"
    tracker = SweepTracker(spec, default_uri(run_dir), run_dir)
    tid = spec.trials[0].trial_id
    journal = Journal(journal_path(run_dir / spec.name, default_uri(run_dir)))
    journal.append({"op": "start", "trial": tid})
    journal.append({"op": "steps", "trial": tid, "steps": [[1, 1000.0, {"actor/entropy": 0.5}]]})
    journal.append({"op": "tags", "trial": tid, "tags": {"x" * 300: "a tag key longer than MLflow allows"}})
    state = DriverState(by_id={tid: spec.trials[0]})
    state.tracker = tracker
    state.writer = TrackingWriter(journal, lambda: tracker, 60.0, print, trial_of=lambda t, _: spec.trials[0])
    _replay(journal, state, 60.0)
    assert not journal.pending()
    kept = list(journal.path.parent.glob("*.rejected-*.jsonl"))
    assert len(kept) == 1 and '"op":"tags"' in kept[0].read_text()  # what the store refused, kept for the user
    assert steps_of(MlflowClient(default_uri(run_dir)), tracker.children[tid]["run_id"], "actor/entropy") == [1]


@pytest.mark.slow
def test_every_journal_operation_is_written_by_one_driver_method_and_reaches_the_store(spec, tmp_path):
    """The operations are one enumeration: each driver method journals its Op, and APPLY takes each to the store."""
    from contract.metrics import verdicts_artifact
    from sweeps.tracking.writer import APPLY, Op

    assert set(APPLY) == set(Op)
    run_dir = tmp_path / "runs"
    tracker = SweepTracker(spec, default_uri(run_dir), run_dir)
    tid = spec.trials[0].trial_id
    journal = Journal(journal_path(run_dir / spec.name, default_uri(run_dir)))
    writer = TrackingWriter(journal, lambda: tracker, 60.0, print, trial_of=lambda t, _: spec.trials[0])
    writer.start_trial(tid)
    writer.log_steps(tid, [(1, 1000.0, {"actor/entropy": 0.5}), (2, 1001.0, {"actor/entropy": 0.4})])
    writer.set_tags(tid, {"stopped_by": "scheduler"})
    writer.log_verdicts(tid, 2, json.dumps({"problems": []}))
    writer.log_eval(tid, [])
    writer.end_trial(tid, "FINISHED")
    journaled = [op["op"] for op in journal.read()[0]]
    assert journaled == ["start", "steps", "tags", "verdicts", "eval", "end"] and set(journaled) == {op.value for op in Op}
    writer._round(tracker)
    assert not journal.pending()
    run = MlflowClient(default_uri(run_dir)).get_run(tracker.children[tid]["run_id"])
    assert run.info.status == "FINISHED" and run.data.tags["stopped_by"] == "scheduler"
    assert steps_of(MlflowClient(default_uri(run_dir)), run.info.run_id, "actor/entropy") == [1, 2]
    files = [f.path for f in MlflowClient(default_uri(run_dir)).list_artifacts(run.info.run_id, "verdicts/val")]
    assert files == [verdicts_artifact("val", 2)]


@pytest.mark.slow
def test_the_writer_copies_ended_trials_in_segments_and_the_last_at_the_end(tmp_path, monkeypatch):
    """The read copy (tracking_store/read_copy.py) as the driver writes it: a segment once COPY_EVERY trials have
    ended, the rest when the sweep ends; the copy then holds every trial as the store does."""
    import sweeps.tracking.writer as writer_module
    from tracking_store.read_copy import open_copy
    from tracking_store.roles import TRIAL, role_filter
    from tracking_store.tables import RunRecord, local_artifact_dir

    monkeypatch.setattr(writer_module, "COPY_EVERY", 2)
    spec = load_spec(write_spec(tmp_path, "copy_unit", seeds=(0, 1, 2), variants=[{"algorithm": "grpo"}]))
    run_dir = tmp_path / "runs"
    tracker = SweepTracker(spec, default_uri(run_dir), run_dir)
    journal = Journal(journal_path(run_dir / spec.name, default_uri(run_dir)))
    by_id = {t.trial_id: t for t in spec.trials}
    writer = TrackingWriter(journal, lambda: tracker, 60.0, print, trial_of=lambda tid, _: by_id[tid])
    writer.start()
    try:
        for n, trial in enumerate(spec.trials):
            writer.start_trial(trial.trial_id)
            writer.log_steps(trial.trial_id, [(s, 1000.0 + s, {"val/avg/acc": n + s / 10}) for s in range(3)])
        for trial in spec.trials[:2]:
            writer.end_trial(trial.trial_id, "FINISHED")
        assert writer.drain(30)
    finally:
        writer.close()
    parent = lambda: RunRecord.of(tracker.client.get_run(tracker.parent_id))  # noqa: E731
    folder = local_artifact_dir(parent().artifact_uri) / "read_copy"
    assert len(list(folder.glob("seg-*.npz"))) == 1
    view = open_copy(tracker.client, tracker.experiment_id, parent(), scratch=tmp_path)
    third = tracker.children[spec.trials[2].trial_id]["run_id"]
    assert len(view.copy.records) == 2 and third in view.live and len(view.runs) == 3  # it runs: read from the store
    tracker.end_sweep("FINISHED")  # ends the third (KILLED) and writes the last segment
    assert len(list(folder.glob("seg-*.npz"))) == 2
    view = open_copy(tracker.client, tracker.experiment_id, parent(), scratch=tmp_path)
    stored = sorted((RunRecord.of(r) for r in tracker.client.search_runs([tracker.experiment_id], role_filter(TRIAL))),
                    key=lambda r: r.run_id)
    assert view.live == set() and sorted(view.runs, key=lambda r: r.run_id) == stored
    assert {r.status for r in view.runs} == {"FINISHED", "KILLED"}
    history = view.copy.history([r.run_id for r in stored], ["val/avg/acc"])
    assert len(history) == 9 and sorted(history["value"].round(6).tolist()) == sorted(
        round(n + s / 10, 6) for n in range(3) for s in range(3))


@pytest.mark.slow
def test_an_evaluation_logged_after_the_sweep_reaches_the_read_copy(tmp_path):
    from sweeps.tracking.eval_targets import log_eval, recopy_runs
    from tracking_store.read_copy import open_copy
    from tracking_store.tables import RunRecord

    spec = load_spec(write_spec(tmp_path, "recopy_unit", seeds=(0,), variants=[{"algorithm": "grpo"}]))
    run_dir = tmp_path / "runs"
    tracker = SweepTracker(spec, default_uri(run_dir), run_dir)
    trial = spec.trials[0]
    run_id = tracker.start_trial(trial)
    tracker.log_result(trial.trial_id, 1, {"val/avg/acc": 0.25})
    tracker.end_trial(trial.trial_id, "FINISHED")
    tracker.end_sweep("FINISHED")
    result = tmp_path / "result.json"
    result.write_text("{}")
    assert log_eval(tracker.client, run_id, 1, {"eval/gsm8k/avg_at_k": 0.5}, [result], "p1") == ["gsm8k"]
    assert recopy_runs(tracker.client, [run_id]) == 1
    view = open_copy(tracker.client, tracker.experiment_id, RunRecord.of(tracker.client.get_run(tracker.parent_id)),
                     scratch=tmp_path)
    assert view.copy.records[run_id].metrics["eval/gsm8k/avg_at_k"] == 0.5
    assert view.copy.history([run_id], ["eval/gsm8k/avg_at_k"])["value"].tolist() == [0.5]
