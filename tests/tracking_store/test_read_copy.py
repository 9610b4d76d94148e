"""The read copy (tracking_store/columnar.py, tracking_store/read_copy.py) on a real MLflow sqlite store: what it
copies is what the store holds, and what changed after it was written is read from the store."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from contract.metrics import VAL_AVG
from dashboards.collect.synthetic_store import METHODS, fill_store
from tracking_store.client import open_client
from tracking_store.columnar import COMPLETE_TO_TAG, ReadCopy, decode_segment, encode_segment
from tracking_store.history import joined_history, read_history_sqlite
from tracking_store.read_copy import append_segment, complete_to, ended_trial_runs, open_copy
from tracking_store.roles import PARENT, TRIAL, role_filter
from tracking_store.tables import RunRecord, experiment_id, read_runs


def _all(logged: set[str]) -> list[str]:
    return sorted(logged)


def _frame(rows):
    return pd.DataFrame(rows, columns=["run_id", "key", "step", "value"])


def test_a_segment_keeps_records_and_points_bit_for_bit():
    records = [RunRecord("r1", "t.s0", "FINISHED", 5, "file:///a", {"role": "trial"}, {"seed": "0"},
                         {"acc": 0.5, "nan": math.nan}),
               RunRecord("r2", "t.s1", "FAILED", 6, None, {}, {}, {})]
    history = _frame([("r1", "acc", 0, 0.1), ("r1", "acc", 3, 0.5), ("r1", "nan", 3, math.nan), ("r2", "acc", 1, 1e-300)])
    segment = decode_segment(encode_segment(records, [10, None], ["acc", "nan"], history, 123), "s")
    assert segment.records[0].run_id == "r1" and segment.records[0].params == {"seed": "0"}
    assert math.isnan(segment.records[0].metrics["nan"]) and segment.end_times == [10, None]
    copy = ReadCopy.merge([segment])
    got = copy.history(["r2", "r1"], ["nan", "acc"])
    assert list(got["run_id"].astype(str)) == ["r2", "r1", "r1", "r1"]  # ordered as the asked run ids
    assert got["value"].iloc[0] == 1e-300 and np.isnan(got["value"].iloc[1])  # keys in the asked order too
    with pytest.raises(ValueError, match="names a run or key"):
        encode_segment(records, [1, 2], ["acc"], history, 1)
    with pytest.raises(ValueError, match="segment bad.npz: not readable"):
        decode_segment(b"not a zip", "bad.npz")


def test_the_newest_segment_of_a_run_wins_and_holds_says_what_it_has():
    old = RunRecord("r1", "t", "FINISHED", 1, None, {}, {}, {"acc": 0.1, "loss": 1.0})
    new = RunRecord("r1", "t", "FINISHED", 1, None, {}, {}, {"acc": 0.9, "loss": 1.0})
    first = decode_segment(encode_segment([old], [5], ["acc"], _frame([("r1", "acc", 0, 0.1)]), 100), "a")
    second = decode_segment(encode_segment([new], [9], ["acc"], _frame([("r1", "acc", 0, 0.9)]), 200), "b")
    copy = ReadCopy.merge([second, first])
    assert copy.records["r1"].metrics["acc"] == 0.9 and copy.end_times["r1"] == 9
    assert copy.history(["r1"], ["acc"])["value"].tolist() == [0.9]
    assert copy.holds("r1", "acc") and not copy.holds("r1", "loss")  # logged, not copied
    assert copy.holds("r1", "never-logged") and not copy.holds("r2", "acc")


@pytest.fixture()
def store(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    fill_store(uri, "copied", artifact_root=(tmp_path / "artifacts").as_uri(), methods=METHODS[:2], seeds=(0, 1),
               steps=6, eval_every=3)
    client = open_client(uri)
    exp_id = client.get_experiment_by_name("copied").experiment_id
    parent = client.search_runs([exp_id], role_filter(PARENT))[0].info.run_id
    return uri, client, exp_id, parent, tmp_path


def _parent(client, parent_id):
    return RunRecord.of(client.get_run(parent_id))


@pytest.mark.slow
def test_a_copy_reads_back_what_the_store_holds(store):
    uri, client, exp_id, parent_id, tmp = store
    assert open_copy(client, exp_id, _parent(client, parent_id)) is None  # no copy yet: read the store
    assert append_segment(client, uri, exp_id, parent_id, _all, scratch=tmp, skew_ms=0) == 4
    view = open_copy(client, exp_id, _parent(client, parent_id), scratch=tmp)
    direct = read_runs(tmp / "mlflow.db", experiment_id(tmp / "mlflow.db", "copied"), role=TRIAL)
    assert view.live == set() and view.segments == 1
    assert sorted(view.runs, key=lambda r: r.run_id) == sorted(direct, key=lambda r: r.run_id)
    run_ids, keys = [r.run_id for r in direct], sorted({k for r in direct for k in r.metrics})
    pd.testing.assert_frame_equal(view.copy.history(run_ids, keys), read_history_sqlite(tmp / "mlflow.db", run_ids, keys))
    assert append_segment(client, uri, exp_id, parent_id, _all, scratch=tmp, skew_ms=0) == 0  # nothing ended since


@pytest.mark.slow
def test_what_changed_after_the_copy_is_read_from_the_store(store):
    uri, client, exp_id, parent_id, tmp = store
    append_segment(client, uri, exp_id, parent_id, _all, scratch=tmp, skew_ms=0)
    tag = complete_to(client.get_run(parent_id).data.tags)
    runs = sorted(client.search_runs([exp_id], role_filter(TRIAL)), key=lambda r: r.info.run_name)
    resumed, deleted = runs[0].info.run_id, runs[1].info.run_id
    client.update_run(resumed, status="RUNNING")  # a resumed trial: its old end time stays until it ends again
    client.delete_run(deleted)
    late = client.create_run(exp_id, run_name="late.s0", tags={"role": "trial", "trial_id": "late.s0",
                                                                "mlflow.parentRunId": parent_id})
    client.log_metric(late.info.run_id, VAL_AVG, 0.75, step=2)
    client.set_terminated(late.info.run_id)
    view = open_copy(client, exp_id, _parent(client, parent_id), scratch=tmp)
    by_id = {r.run_id: r for r in view.runs}
    assert view.live == {resumed, late.info.run_id}
    assert by_id[resumed].status == "RUNNING" and deleted not in by_id and by_id[late.info.run_id].metrics[VAL_AVG] == 0.75
    assert len(by_id) == 4
    # the next writer copies the late run only (the resumed one has not ended again), and moves the tag on
    assert append_segment(client, uri, exp_id, parent_id, _all, scratch=tmp, skew_ms=0) == 1
    assert complete_to(client.get_run(parent_id).data.tags) > tag
    view = open_copy(client, exp_id, _parent(client, parent_id), scratch=tmp)
    assert view.live == {resumed} and view.segments == 2


@pytest.mark.slow
def test_a_run_changed_after_it_ended_is_copied_again_and_the_tag_stays(store):
    uri, client, exp_id, parent_id, tmp = store
    append_segment(client, uri, exp_id, parent_id, _all, scratch=tmp, skew_ms=0)
    tag = client.get_run(parent_id).data.tags[COMPLETE_TO_TAG]
    rid = client.search_runs([exp_id], role_filter(TRIAL))[0].info.run_id
    client.log_metric(rid, "eval/gsm8k/pass_1", 0.5, step=6)  # sweep eval logs into a finished trial run
    assert append_segment(client, uri, exp_id, parent_id, _all, run_ids=[rid], scratch=tmp, skew_ms=0) == 1
    assert client.get_run(parent_id).data.tags[COMPLETE_TO_TAG] == tag
    view = open_copy(client, exp_id, _parent(client, parent_id), scratch=tmp)
    record = next(r for r in view.runs if r.run_id == rid)
    assert record.metrics["eval/gsm8k/pass_1"] == 0.5 and view.copy.holds(rid, "eval/gsm8k/pass_1")
    history = view.copy.history([rid], ["eval/gsm8k/pass_1"])
    assert history["value"].tolist() == [0.5]


@pytest.mark.slow
def test_parts_read_apart_join_as_one_read(store):
    uri, client, exp_id, parent_id, tmp = store
    records, _ = ended_trial_runs(client, exp_id)
    run_ids = [r.run_id for r in records]
    keys = sorted({k for r in records for k in r.metrics})
    whole = read_history_sqlite(tmp / "mlflow.db", run_ids, keys)
    parts = [read_history_sqlite(tmp / "mlflow.db", run_ids[:1], keys), read_history_sqlite(tmp / "mlflow.db", run_ids[1:], keys)]
    pd.testing.assert_frame_equal(joined_history(run_ids, keys, parts[::-1]), whole)


def test_a_segments_twin_holds_its_records_and_no_points():
    from tracking_store.columnar import decode_records, encode_records

    records = [RunRecord("r1", "t.s0", "FINISHED", 5, "file:///a", {"role": "trial"}, {"seed": "0"}, {"acc": math.nan})]
    history = _frame([("r1", "acc", 0, 0.1)])
    whole = decode_segment(encode_segment(records, [10], ["acc"], history, 123), "s.npz")
    twin = decode_records(encode_records(records, [10], ["acc"], 123), "s.records.json")
    assert [r.run_id for r in twin.records] == ["r1"] and twin.records[0].params == whole.records[0].params
    assert math.isnan(twin.records[0].metrics["acc"]) and twin.end_times == [10] and twin.written_ms == 123
    assert len(twin.run) == 0 and twin.keys == []  # holds no key's history: a reader of it asks the store
    copy = ReadCopy.merge([twin])
    assert not copy.holds("r1", "acc") and copy.holds("r1", "never-logged")
    with pytest.raises(ValueError, match="records bad.records.json: not readable"):
        decode_records(b"\xff not json", "bad.records.json")


@pytest.mark.slow
def test_status_reads_the_twins_and_a_copy_without_them_reads_the_segments(store):
    uri, client, exp_id, parent_id, tmp = store
    append_segment(client, uri, exp_id, parent_id, _all, scratch=tmp, skew_ms=0)
    folder = tmp / "artifacts" / parent_id / "artifacts" / "read_copy"
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 2 and names[0].endswith(".npz") and names[1] == names[0][:-4] + ".records.json"
    whole = open_copy(client, exp_id, _parent(client, parent_id), scratch=tmp)
    lean = open_copy(client, exp_id, _parent(client, parent_id), scratch=tmp, records_only=True)
    assert [r.run_id for r in lean.runs] == [r.run_id for r in whole.runs] and lean.live == whole.live
    assert {r.run_id: r.metrics for r in lean.runs} == {r.run_id: r.metrics for r in whole.runs}
    assert [s.name for s in lean.copy.segments] == [names[1]] and len(lean.copy.segments[0].run) == 0
    assert len(whole.copy.segments[0].run) > 0
    (folder / names[1]).unlink()  # a copy written before the twins existed
    old = open_copy(client, exp_id, _parent(client, parent_id), scratch=tmp, records_only=True)
    assert [s.name for s in old.copy.segments] == [names[0]] and [r.run_id for r in old.runs] == [r.run_id for r in whole.runs]
