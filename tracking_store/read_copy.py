"""A sweep's read copy in its store: written by the driver as trials finish, read first by the read commands.

    n = append_segment(client, uri, exp_id, parent_id, keys_for)   # the trial runs ended since the last segment
    n = append_segment(client, uri, exp_id, parent_id, keys_for, run_ids=[...])   # these runs again (sweep eval)
    n = rebuild_copy(client, uri, exp_id, parent_id, keys_for)        # every ended trial run: `sweep report --rebuild`
    view = open_copy(client, exp_id, parent)    # CopyView, or None: no copy (read the store directly)
    view = open_copy(client, exp_id, parent, records_only=True)   # the runs only (`sweep status`): the twins
    view.runs, view.live                        # every trial run (copied or read now), the ids read now
    view.copy.history(run_ids, keys)            # the copied histories (tracking_store/columnar.py)

Why: through an ``mlflow server`` every read is MLflow's REST API, which returns runs whole and histories a key
at a time; 2,000 trials x 200 steps took 14.5 s to list and 151 s to report (docs/benchmarks.md). The copy is a
few files of the sweep's parent run (``read_copy/seg-*.npz``): the finished trial runs' records (state, tags,
params, latest metrics) and the histories of the keys the report reads. The store stays the source of truth;
the copy is derived from it and never written anywhere else.

The rule that keeps it true. The parent run's tag ``read_copy.complete_to`` (ms) promises: every trial run that
ended (FINISHED, FAILED, KILLED) at or before it is in a segment as it ended. A writer reads the tag, lists the
trial runs that ended after it, writes them as a new segment, and only then moves the tag to the time it began
listing (less ``SKEW_MS``): a writer killed half-way leaves the tag where it was, and the next one copies those
runs again (a run in two segments is read from the newer). A reader reads the tag *before* the segments, then
asks the store for what the copy cannot know: runs still running, runs that ended after the tag (their records
and histories are read from the store), and deleted trial runs (left out). Runs changed after they ended are
copied again by whoever changes them (``sweep eval``: ``run_ids=``); a store changed behind the product's back
(another client logging into a finished trial run) is read right again after ``sweep report --rebuild``.
"""

from __future__ import annotations

import re
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from contract.env import MLFLOW_ARTIFACTS_PROGRESS
from tracking_store.columnar import (COMPLETE_TO_TAG, COPY_DIR, ReadCopy, decode_records, decode_segment, encode_records,
                                     encode_segment)
from tracking_store.history import read_history_client, read_history_sqlite
from tracking_store.roles import TRIAL, role_filter
from tracking_store.tables import RunRecord, local_artifact_dir
from tracking_store.uri import sqlite_path

TERMINAL = ("FINISHED", "FAILED", "KILLED")
LIVE = ("RUNNING", "SCHEDULED")
SKEW_MS = 2000
"""The tag is moved to when the listing began less this: a run ended by a host whose clock is behind by up to
this much is still listed by the next writer."""
PAGE = 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


def complete_to(tags: dict[str, str]) -> int | None:
    """The parent run's promise (module docstring), or None: the sweep has no read copy."""
    value = tags.get(COMPLETE_TO_TAG)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


ACTIVE_ONLY, DELETED_ONLY = 1, 2  # MLflow's ViewType values (its enum: an import of MLflow)


def _search(client, exp_id: str, filter_string: str, deleted: bool = False) -> list:
    runs, token = [], None
    while True:
        page = client.search_runs([exp_id], filter_string, DELETED_ONLY if deleted else ACTIVE_ONLY,
                                  max_results=PAGE, page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def ended_trial_runs(client, exp_id: str, since_ms: int | None = None,
                     run_ids: list[str] | None = None) -> tuple[list[RunRecord], list[int | None]]:
    """The experiment's ended trial runs (those ended after ``since_ms``; only ``run_ids`` when given), oldest first,
    with their end times. A resumed trial keeps its old end time while it runs again: only ended states count."""
    query = role_filter(TRIAL)
    if since_ms is not None:
        query += f" and attributes.end_time > {int(since_ms)}"
    if run_ids is not None:
        if not run_ids:
            return [], []
        query += " and attributes.run_id IN (" + ", ".join(f"'{r}'" for r in run_ids) + ")"
    runs = sorted((r for r in _search(client, exp_id, query) if r.info.status in TERMINAL),
                  key=lambda r: (r.info.start_time or 0, r.info.run_id))
    return [RunRecord.of(r) for r in runs], [r.info.end_time for r in runs]


def read_histories(client, uri: str, records: list[RunRecord], keys: list[str]) -> pd.DataFrame:
    """``keys``' histories of ``records``' runs, as the read commands read a store (sqlite file: its table)."""
    run_ids = [r.run_id for r in records]
    db = sqlite_path(uri)
    if db is not None and db.exists():
        return read_history_sqlite(db, run_ids, keys)
    return read_history_client(client, run_ids, {r.run_id: [k for k in r.metrics if k in keys] for r in records})


SEGMENT_NAME = re.compile(r"^(seg|full)-(\d{13})-[0-9a-f]{8}\.npz$")
"""``seg-<ms>-<hex>.npz``: some runs; ``full-...``: every ended trial run (a rebuild): older files are not read."""
RECORDS = ".records.json"
"""The suffix of a segment's twin (its records alone) in place of ``.npz``; a copy written before twins has none."""


def write_segment(client, parent_id: str, records: list[RunRecord], end_times: list[int | None], keys: list[str],
                  history: pd.DataFrame, complete_to_ms: int | None = None, scratch: Path | None = None,
                  full: bool = False) -> str:
    """One segment as an artifact of the parent run (its name returned), then the tag moved to ``complete_to_ms``
    (never back). ``scratch``: where the file is made before upload (default the working directory). ``full``:
    ``records`` are every ended trial run of the sweep; the segments before it are no longer read."""
    written = _now_ms()
    name = f"{'full' if full else 'seg'}-{written:013d}-{uuid.uuid4().hex[:8]}.npz"
    files = {name: encode_segment(records, end_times, keys, history, written),
             _twin(name): encode_records(records, end_times, keys, written)}
    with tempfile.TemporaryDirectory(dir=scratch or Path.cwd(), prefix=".read-copy-") as tmp:
        for file_name, data in files.items():  # the segment, then its twin; the tag moves after both
            path = Path(tmp) / file_name
            path.write_bytes(data)
            client.log_artifact(parent_id, str(path), COPY_DIR)
    if complete_to_ms is not None:
        current = complete_to(client.get_run(parent_id).data.tags)
        client.set_tag(parent_id, COMPLETE_TO_TAG, str(max(complete_to_ms, current or 0)))
    return name


def append_segment(client, uri: str, exp_id: str, parent_id: str, keys_for: Callable[[set[str]], list[str]],
                   run_ids: list[str] | None = None, scratch: Path | None = None, skew_ms: int = SKEW_MS) -> int:
    """Copy the trial runs ended since the tag (the driver, as trials finish), or ``run_ids`` again (a run
    changed after it ended: the tag is left alone, and nothing is written for a sweep without a copy).
    ``keys_for(logged keys)``: the keys whose histories are copied. ``skew_ms=0`` where no other host ends this
    sweep's runs (the driver's last segment, under its lease). Returns the number of runs written."""
    began = _now_ms() - skew_ms
    since = complete_to(client.get_run(parent_id).data.tags)
    if run_ids is not None and since is None:
        return 0
    records, end_times = ended_trial_runs(client, exp_id, None if run_ids is not None else since, run_ids)
    if not records and run_ids is not None:
        return 0
    keys = sorted(keys_for({k for r in records for k in r.metrics}))
    history = read_histories(client, uri, records, keys)  # none: an empty frame
    if records or since is None:
        write_segment(client, parent_id, records, end_times, keys, history,
                      complete_to_ms=None if run_ids is not None else began, scratch=scratch)
    elif began > since:
        client.set_tag(parent_id, COMPLETE_TO_TAG, str(began))
    return len(records)


def rebuild_copy(client, uri: str, exp_id: str, parent_id: str, keys_for: Callable[[set[str]], list[str]],
                 scratch: Path | None = None, skew_ms: int = SKEW_MS) -> int:
    """Every ended trial run of the sweep read from the store into one full segment (`sweep report --rebuild`):
    the copy is as the store is now, whatever was written before. Returns the number of runs written."""
    began = _now_ms() - skew_ms
    records, end_times = ended_trial_runs(client, exp_id)
    keys = sorted(keys_for({k for r in records for k in r.metrics}))
    history = read_histories(client, uri, records, keys)  # none: an empty frame
    write_segment(client, parent_id, records, end_times, keys, history, complete_to_ms=began, scratch=scratch,
                  full=True)
    return len(records)


def _read_from(names: list[str]) -> list[str]:
    """The segment files a reader reads, oldest first: from the newest full one on."""
    ordered = sorted((m.group(2), name) for name in names if (m := SEGMENT_NAME.match(name)))
    fulls = [i for i, (_, name) in enumerate(ordered) if name.startswith("full-")]
    return [name for _, name in ordered[fulls[-1] if fulls else 0:]]


def _twin(name: str) -> str:
    return name[:-len(".npz")] + RECORDS


def _chosen(listed: list[str], records_only: bool) -> list[str]:
    """The files a reader reads: the segments from the newest full one on, each as its twin where the reader
    wants the records only and the twin exists."""
    present = set(listed)
    names = _read_from(listed)
    return [_twin(n) if records_only and _twin(n) in present else n for n in names]


def _segment_files(client, parent: RunRecord, scratch: Path | None, records_only: bool = False) -> list[tuple[str, bytes]]:
    local = local_artifact_dir(parent.artifact_uri)
    if local is not None:
        folder = local / COPY_DIR
        names = _chosen([p.name for p in folder.iterdir()] if folder.is_dir() else [], records_only)
        return [(name, (folder / name).read_bytes()) for name in names]
    names = _chosen([Path(a.path).name for a in client.list_artifacts(parent.run_id, COPY_DIR)], records_only)
    if not names:
        return []
    bar = MLFLOW_ARTIFACTS_PROGRESS.raw()
    MLFLOW_ARTIFACTS_PROGRESS.set("false")
    try:
        with tempfile.TemporaryDirectory(dir=scratch or Path.cwd(), prefix=".read-copy-") as tmp:
            paths = [Path(client.download_artifacts(parent.run_id, f"{COPY_DIR}/{name}", tmp)) for name in names]
            return [(path.name, path.read_bytes()) for path in paths]
    finally:
        MLFLOW_ARTIFACTS_PROGRESS.set(bar) if bar is not None else MLFLOW_ARTIFACTS_PROGRESS.unset()


@dataclass
class CopyView:
    """A sweep's trial runs as the copy and the store agree on them."""

    copy: ReadCopy
    runs: list[RunRecord]
    """Every active trial run, oldest first: the copy's record, or the store's where ``live``."""
    live: set[str]
    """Ids of the runs read from the store now: running, ended after the tag, or not in the copy."""
    segments: int


def open_copy(client, exp_id: str, parent: RunRecord, scratch: Path | None = None,
              records_only: bool = False) -> CopyView | None:
    """The sweep's trial runs through its read copy (``parent``: its parent run, tags read just now), or None when
    it has none. A segment that cannot be read is a ValueError naming it (``sweep report --rebuild`` writes anew).
    ``records_only``: the runs without their histories (the segments' twins where they exist: `sweep status`)."""
    since = complete_to(parent.tags)
    if since is None:
        return None
    files = _segment_files(client, parent, scratch, records_only)
    copy = ReadCopy.merge([decode_records(data, name) if name.endswith(RECORDS) else decode_segment(data, name)
                           for name, data in files])
    trial = role_filter(TRIAL)
    live: dict[str, RunRecord] = {}
    for query in [*(f"{trial} and attributes.status = '{s}'" for s in LIVE), f"{trial} and attributes.end_time > {since}"]:
        live.update({r.info.run_id: RunRecord.of(r) for r in _search(client, exp_id, query)})
    deleted = {r.info.run_id for r in _search(client, exp_id, trial, deleted=True)}
    runs = {rid: record for rid, record in copy.records.items() if rid not in deleted}
    runs.update(live)
    ordered = sorted(runs.values(), key=lambda r: (r.start_time or 0, r.run_id))
    return CopyView(copy, ordered, set(live), len(copy.segments))
