"""Metric histories read in bulk from a tracking store: the one place that knows how.

    from tracking_store.history import read_history_client, read_history_sqlite
    frame = read_history_sqlite(Path("runs/mlflow.db"), run_ids, ["val/avg/acc", "actor/entropy"])
    frame = read_history_client(client, run_ids, {run_id: keys, ...})   # an mlflow server, any other store
    frame = joined_history(run_ids, keys, [from_copy, from_store])      # parts read apart, as one read
    # long: run_id, key (categoricals), step, value; sorted by (run, key, step); a step logged twice: the last

A `sqlite:///` store's ``metrics`` table is read directly and read-only (MLflow's schema: metrics(key, value,
timestamp, run_uuid, step, is_nan)), one indexed query per run. From an `mlflow server` one REST call reads a
key of 100 runs (GetMetricHistoryBulkInterval); any other store falls back to
``MlflowClient.get_metric_history`` for every (run, key) pair. Both are issued from a thread pool.
dashboards/collect/sweep_runs.py decides which to use and joins the trials' tags.
"""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd


def read_history_sqlite(db: Path, run_ids: list[str], keys: list[str]) -> pd.DataFrame:
    """Every logged (run_id, key, step, value) of `run_ids` x `keys`, read from the store file.

    Opened read-only (`mode=ro`). One query per run on MLflow's run_uuid index, only `keys`' rows; keys come
    back as small integer codes (a SQL CASE) and NaNs as NULL, so ~1M points cost ~1.5 s, mostly the
    sqlite3 module building tuples (a report reads only the keys it shows: history_keys). Rows arrive in
    insertion (rowid) order.
    """
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    case = "CASE key " + " ".join(f"WHEN ? THEN {i}" for i in range(len(keys))) + " ELSE -1 END"
    wanted = ", ".join("?" * len(keys))
    sql = (f"SELECT {case}, step, CASE WHEN is_nan THEN NULL ELSE value END FROM metrics "
           f"WHERE run_uuid = ? AND key IN ({wanted})")
    parts, codes = [], []
    try:
        for i, rid in enumerate(run_ids):
            rows = con.execute(sql, [*keys, rid, *keys]).fetchall() if keys else []
            parts.append(np.array(rows, dtype=np.float64).reshape(-1, 3))
            codes.append(np.full(len(rows), i, dtype=np.int64))
    finally:
        con.close()
    a = np.concatenate(parts) if parts else np.empty((0, 3))
    return coded_history(run_ids, keys, np.concatenate(codes) if codes else np.empty(0, np.int64), a)


BULK_RUNS, BULK_ROWS = 100, 2500
"""An MLflow server's GetMetricHistoryBulkInterval: at most 100 runs a call, at most 2500 rows a run
(more are sampled, so such a run's key is read whole with GetMetricHistory instead)."""


def _rest_store(client):
    """The client's RestStore (an `mlflow server`), else None (a database URI: MLflow's SQL store answers
    a bulk call per run anyway)."""
    from mlflow.store.tracking.rest_store import RestStore

    store = client._tracking_client.store
    return store if isinstance(store, RestStore) else None


def _bulk_call(client):
    """(run_ids, key) -> every logged point of ``key`` for up to 100 runs in one call, or None where the store has
    no such call: tracking_store/rest_reads.py's reader, or an MlflowClient of a server."""
    if hasattr(client, "metric_history_bulk"):
        return lambda run_ids, key: client.metric_history_bulk(run_ids, key, BULK_ROWS)
    store = _rest_store(client)
    return None if store is None else (lambda run_ids, key: _bulk_interval(store, run_ids, key))


def _bulk_interval(store, run_ids: list[str], key: str) -> list:
    """Every logged (run_id, step, value, timestamp) of ``key`` for up to 100 runs in one REST call."""
    from mlflow.protos.service_pb2 import GetMetricHistoryBulkInterval
    from mlflow.utils.proto_json_utils import message_to_json

    body = message_to_json(GetMetricHistoryBulkInterval(run_ids=run_ids, metric_key=key, max_results=BULK_ROWS))
    return list(store._call_endpoint(GetMetricHistoryBulkInterval, body).metrics)


def read_history_client(client, run_ids: list[str], run_keys: dict[str, list[str]],
                        workers: int = 16) -> pd.DataFrame:
    """For non-sqlite stores. From an `mlflow server`: one GetMetricHistoryBulkInterval call per key per
    100 runs (2,000 runs x 16 keys: 320 calls instead of 32,000), from a thread pool; a (run, key) that
    came back with 2500 rows (maybe sampled), and any store without that call, is read with
    `get_metric_history` per (run, key)."""
    keys = sorted({k for ks in run_keys.values() for k in ks})
    kcode = {k: i for i, k in enumerate(keys)}
    index = {rid: i for i, rid in enumerate(run_ids)}
    bulk_call = _bulk_call(client)

    def one(pair):
        i, rid, key = pair
        ms = sorted(client.get_metric_history(rid, key), key=lambda m: m.timestamp)  # log order
        return i, [(kcode[key], m.step, m.value) for m in ms]

    def bulk(job):
        key, chunk = job
        rows: dict[str, list] = {rid: [] for rid in chunk}
        for m in sorted(bulk_call(chunk, key), key=lambda m: m.timestamp):  # log order: the last wins
            rows[m.run_id].append((kcode[key], m.step, m.value))
        whole = [(index[rid], r) for rid, r in rows.items() if len(r) < BULK_ROWS]
        return whole, [(index[rid], rid, key) for rid, r in rows.items() if len(r) >= BULK_ROWS]

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        if bulk_call is None:  # no bulk call here: one call per (run, key)
            got = list(pool.map(one, [(i, rid, k) for i, rid in enumerate(run_ids) for k in run_keys.get(rid, [])]))
        else:
            by_key: dict[str, list[str]] = {}
            for rid in run_ids:
                for key in run_keys.get(rid, []):
                    by_key.setdefault(key, []).append(rid)
            answers = list(pool.map(bulk, [(key, rids[i:i + BULK_RUNS]) for key, rids in by_key.items()
                                           for i in range(0, len(rids), BULK_RUNS)]))
            got = [g for whole, _ in answers for g in whole]
            got += list(pool.map(one, [p for _, rest in answers for p in rest]))
    a = np.array([r for _, rows in got for r in rows], dtype=np.float64).reshape(-1, 3)
    codes = np.concatenate([np.full(len(rows), i, np.int64) for i, rows in got]) if got else np.empty(0, np.int64)
    return coded_history(run_ids, keys, codes, a)


def coded_history(run_ids: list[str], keys: list[str], run_code: np.ndarray, a: np.ndarray) -> pd.DataFrame:
    """(run_code, [key_code, step, value]) in log order -> run_id/key categoricals sorted by
    (run, key, step); a step logged twice keeps the value logged last."""
    keep = a[:, 0] >= 0
    run_code, a = run_code[keep], a[keep]
    key_code, step = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64)
    span = int(step.max() - step.min() + 1) if len(step) else 1
    composite = (run_code * max(len(keys), 1) + key_code) * span + (step - (step.min() if len(step) else 0))
    order = np.argsort(composite, kind="stable")  # stable: duplicates stay in log order
    composite, run_code, key_code, step, value = (composite[order], run_code[order], key_code[order],
                                                  step[order], a[order, 2])
    last = np.ones(len(step), dtype=bool)
    last[:-1] = composite[1:] != composite[:-1]
    return pd.DataFrame({
        "run_id": pd.Categorical.from_codes(run_code[last], categories=pd.Index(run_ids, dtype=object)),
        "key": pd.Categorical.from_codes(key_code[last], categories=pd.Index(keys, dtype=object)),
        "step": step[last], "value": value[last]})


def joined_history(run_ids: list[str], keys: list[str], frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Histories read in parts (the read copy's and the store's, tracking_store/read_copy.py) as one, ordered as
    ``coded_history`` orders a single read: categories ``run_ids`` and ``keys``; a (run, key) in two parts: the later."""
    run_index, key_index = {r: i for i, r in enumerate(run_ids)}, {k: i for i, k in enumerate(keys)}
    codes, parts = [], []
    for frame in frames:
        run_code = frame["run_id"].astype(object).map(run_index).to_numpy()
        key_code = frame["key"].astype(object).map(key_index).to_numpy()
        keep = ~(pd.isna(run_code) | pd.isna(key_code))
        codes.append(run_code[keep].astype(np.int64))
        parts.append(np.column_stack([key_code[keep].astype(np.float64), frame["step"].to_numpy()[keep],
                                      frame["value"].to_numpy(np.float64)[keep]]))
    a = np.concatenate(parts) if parts else np.empty((0, 3))
    return coded_history(run_ids, keys, np.concatenate(codes) if codes else np.empty(0, np.int64), a)
