"""The read copy's format: segments of finished trial runs (their records and metric histories) in one file each.

    data = encode_segment(records, keys, history, complete_to=ms)   # bytes of one .npz file
    segment = decode_segment(data)                                  # Segment(records, keys, arrays, written_ms)
    copy = ReadCopy.merge([segment, ...])                           # each run as its newest segment holds it
    copy.records["<run id>"]                                        # RunRecord: status, tags, params, latest metrics
    twin = encode_records(records, end_times, keys, written_ms)     # the segment's records alone (JSON)
    decode_records(twin)                                            # a Segment with no points: what status reads
    frame = copy.history(run_ids, keys)                             # as tracking_store/history.py reads a store

A segment is an uncompressed NumPy ``.npz``: ``meta`` (UTF-8 JSON: the format version, when it was written, the
keys whose histories it holds, and each run's record: id, name, status, start and end time, artifact URI,
tags, params, latest metrics) and four arrays, one entry per logged point: ``run`` (the run's index in
``meta.runs``), ``key`` (index in ``meta.keys``), ``step`` and ``value`` (float64, NaN as logged). A run held
by several segments is read from the newest (``written_ms``, then its name): a segment never changes once
written, a rewrite of a run (a resumed trial, a later evaluation, ``sweep report --rebuild``) is a new
segment. Beside each ``.npz`` its records alone, ``<same stem>.records.json`` (the same ``meta``): what
`sweep status` reads, a tenth of the bytes at 200 steps a trial. Where and when segments are written and how a reader checks them against the store:
tracking_store/read_copy.py; why: docs/benchmarks.md ("Reads on a server").
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tracking_store.history import coded_history
from tracking_store.tables import RunRecord

FORMAT = 1
COPY_DIR = "read_copy"
"""The segments' folder among the sweep's parent run's artifacts."""
COMPLETE_TO_TAG = "read_copy.complete_to"
"""Parent run tag: every trial run that ended at or before this time (ms since the epoch) is in a segment."""


@dataclass
class Segment:
    """One segment as read: its records, the keys whose histories it holds, one entry per point."""

    records: list[RunRecord]
    end_times: list[int | None]
    keys: list[str]
    run: np.ndarray
    key: np.ndarray
    step: np.ndarray
    value: np.ndarray
    written_ms: int
    name: str = ""


def _record_json(record: RunRecord, end_time: int | None) -> dict:
    return {"run_id": record.run_id, "run_name": record.run_name, "status": record.status,
            "start_time": record.start_time, "end_time": end_time, "artifact_uri": record.artifact_uri,
            "tags": record.tags, "params": record.params, "metrics": record.metrics}


def encode_records(records: list[RunRecord], end_times: list[int | None], keys: list[str], written_ms: int) -> bytes:
    """A segment's ``meta`` (UTF-8 JSON), which is also its twin file's content: its records alone, what status reads."""
    return json.dumps({"format": FORMAT, "written_ms": int(written_ms), "keys": list(keys),
                       "runs": [_record_json(r, e) for r, e in zip(records, end_times)]}).encode()


def encode_segment(records: list[RunRecord], end_times: list[int | None], keys: list[str], history: pd.DataFrame,
                   written_ms: int) -> bytes:
    """A segment's bytes. ``history``: long (run_id, key, step, value) of ``records``' runs and ``keys`` only."""
    index = {r.run_id: i for i, r in enumerate(records)}
    kindex = {k: i for i, k in enumerate(keys)}
    runs = history["run_id"].astype(object).map(index)
    codes = history["key"].astype(object).map(kindex)
    if runs.isna().any() or codes.isna().any():
        raise ValueError("a segment's history names a run or key the segment does not hold")
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(encode_records(records, end_times, keys, written_ms), dtype=np.uint8),
             run=runs.to_numpy(np.int32), key=codes.to_numpy(np.int32),
             step=history["step"].to_numpy(np.int64), value=history["value"].to_numpy(np.float64))
    return buffer.getvalue()


def decode_segment(data: bytes, name: str = "") -> Segment:
    """A segment from its bytes; ValueError naming ``name`` for a file that is not one (or a newer format)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            meta = json.loads(npz["meta"].tobytes().decode())
            arrays = [npz[a] for a in ("run", "key", "step", "value")]
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"read copy segment {name or '(unnamed)'}: not readable ({err})") from None
    return _segment(meta, meta["keys"], arrays, name)


def decode_records(data: bytes, name: str = "") -> Segment:
    """A segment's records from its twin (``encode_records``): no points, and no key's history held."""
    try:
        meta = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"read copy records {name or '(unnamed)'}: not readable ({err})") from None
    empty = [np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.float64)]
    return _segment(meta, [], empty, name)


def _segment(meta: dict, keys: list[str], arrays: list[np.ndarray], name: str) -> Segment:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise ValueError(f"read copy segment {name}: format {found!r}, this version reads {FORMAT}")
    records = [RunRecord(r["run_id"], r["run_name"], r["status"], r["start_time"], r["artifact_uri"], r["tags"],
                         r["params"], {k: float(v) if v is not None else math.nan for k, v in r["metrics"].items()})
               for r in meta["runs"]]
    return Segment(records, [r["end_time"] for r in meta["runs"]], keys, *arrays,
                   written_ms=int(meta["written_ms"]), name=name)


@dataclass
class ReadCopy:
    """The segments merged: each run as its newest segment holds it."""

    records: dict[str, RunRecord]
    end_times: dict[str, int | None]
    source: dict[str, tuple[int, int]] = field(default_factory=dict)
    """run id -> (segment number, the run's index in that segment)"""
    segments: list[Segment] = field(default_factory=list)

    @classmethod
    def merge(cls, segments: list[Segment]) -> ReadCopy:
        ordered = sorted(segments, key=lambda s: (s.written_ms, s.name))
        records, end_times, source = {}, {}, {}
        for number, segment in enumerate(ordered):
            for i, (record, end) in enumerate(zip(segment.records, segment.end_times)):
                records[record.run_id], end_times[record.run_id], source[record.run_id] = record, end, (number, i)
        return cls(records, end_times, source, ordered)

    def holds(self, run_id: str, key: str) -> bool:
        """Whether the copy has ``key``'s history of ``run_id`` (a key the run never logged counts as held)."""
        if run_id not in self.source:
            return False
        number, _ = self.source[run_id]
        return key in self.segments[number].keys or key not in self.records[run_id].metrics

    def history(self, run_ids: list[str], keys: list[str]) -> pd.DataFrame:
        """Long (run_id, key, step, value) of ``run_ids`` x ``keys`` from the copy, as
        ``tracking_store.history.coded_history`` orders a store's (categories: ``run_ids``, ``keys``)."""
        wanted = {rid: i for i, rid in enumerate(run_ids)}
        kwanted = {k: i for i, k in enumerate(keys)}
        parts, codes = [], []
        for number, segment in enumerate(self.segments):
            run_map = np.full(len(segment.records), -1, dtype=np.int64)
            for i, record in enumerate(segment.records):
                if self.source.get(record.run_id) == (number, i) and record.run_id in wanted:
                    run_map[i] = wanted[record.run_id]
            key_map = np.array([kwanted.get(k, -1) for k in segment.keys] or [-1], dtype=np.int64)
            if not len(segment.run):
                continue
            run_code, key_code = run_map[segment.run], key_map[segment.key]
            keep = (run_code >= 0) & (key_code >= 0)
            codes.append(run_code[keep])
            parts.append(np.column_stack([key_code[keep], segment.step[keep], segment.value[keep]]).astype(np.float64))
        a = np.concatenate(parts) if parts else np.empty((0, 3))
        return coded_history(run_ids, keys, np.concatenate(codes) if codes else np.empty(0, np.int64), a)
