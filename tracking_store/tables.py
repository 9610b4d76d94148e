"""A sweep's runs read straight from MLflow's tables of a sqlite store: what `sweep status` and `sweep report` list.

    db = sqlite_path(uri)                              # tracking_store/uri.py; None: not a sqlite store
    exp_id = experiment_id(db, "dhpo_vs_baselines")    # None when no active experiment has that name
    trials = read_runs(db, exp_id, role="trial")       # [RunRecord(run_id, status, tags, params, metrics, ...)]
    parent = read_runs(db, exp_id, role="parent", params=False)
    records = [RunRecord.of(run) for run in client.search_runs(...)]   # any other store, through MLflow
    by_id = trial_runs(records)                        # trial id -> record; RuntimeError for a trial run twice

MLflow's ``search_runs`` builds an ORM object per run, tag, param and latest metric: ~10 s for 2,000 trial
runs on a 2-core machine, plus 2-6 s to import MLflow and open the store. Four indexed queries on the file
(opened read-only, ``mode=ro``) take a fraction of a second, and no MLflow import is needed. Read (not
written) are MLflow's tables ``experiments(experiment_id, name, lifecycle_stage)``, ``runs(run_uuid, name,
status, start_time, artifact_uri, experiment_id, lifecycle_stage)`` and ``tags``/``params``/``latest_metrics``
``(key, value, run_uuid)`` (``latest_metrics.is_nan``): only active runs, as ``search_runs`` returns them.
tests/tracking_store/test_tables.py keeps the two paths equal on a store MLflow itself wrote.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from tracking_store.roles import ROLE_TAG


@dataclass(frozen=True)
class RunRecord:
    """One run as the read commands use it: its info, tags, params and latest metric values."""

    run_id: str
    run_name: str | None
    status: str
    start_time: int | None
    artifact_uri: str | None
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, run) -> RunRecord:
        """From an MLflow ``Run`` (a server's or a database's ``search_runs``)."""
        info, data = run.info, run.data
        return cls(info.run_id, info.run_name, info.status, info.start_time, info.artifact_uri,
                   dict(data.tags), dict(data.params), dict(data.metrics))


class UnreadableStore(ValueError):
    """The file is not an MLflow store, or one whose tables are still being created."""


@contextmanager
def _reading(db: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection; a file without MLflow's tables is an ``UnreadableStore`` naming it."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        yield con
    except sqlite3.DatabaseError as err:
        raise UnreadableStore(f"{db}: not readable as an MLflow store ({err}); a sweep creating it? try again "
                              "in a moment") from None
    finally:
        con.close()


def experiment_id(db: Path, name: str) -> str | None:
    """The id of the active experiment called ``name`` (as MLflow's client gives it: a string), else None."""
    with _reading(db) as con:
        rows = con.execute("SELECT experiment_id FROM experiments WHERE name = ? AND lifecycle_stage = 'active'",
                           (name,)).fetchall()
    return str(rows[0][0]) if len(rows) == 1 else None


def experiment_names(db: Path) -> list[str]:
    """Every active experiment's name but MLflow's 'Default' (id 0), sorted: what a message lists as known."""
    with _reading(db) as con:
        rows = con.execute("SELECT name FROM experiments WHERE lifecycle_stage = 'active' AND experiment_id != 0"
                           ).fetchall()
    return sorted(r[0] for r in rows)


def read_runs(db: Path, exp_id: str, role: str | None = None, params: bool = True) -> list[RunRecord]:
    """The experiment's active runs (those tagged ``role=<role>`` when given), oldest first, with their tags,
    params (unless ``params=False``) and latest metric values (NaN where MLflow flagged one)."""
    chosen = "r.experiment_id = :exp AND r.lifecycle_stage = 'active'"
    if role is not None:
        chosen += f" AND r.run_uuid IN (SELECT run_uuid FROM tags WHERE key = '{ROLE_TAG}' AND value = :role)"
    args = {"exp": int(exp_id), "role": role}

    def per_run(table: str, value: str) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for rid, key, val in con.execute(f"SELECT t.run_uuid, t.key, {value} FROM {table} t JOIN runs r "
                                         f"ON r.run_uuid = t.run_uuid WHERE {chosen}", args):
            out.setdefault(rid, {})[key] = val
        return out

    with _reading(db) as con:
        runs = con.execute("SELECT r.run_uuid, r.name, r.status, r.start_time, r.artifact_uri FROM runs r "
                           f"WHERE {chosen} ORDER BY r.start_time, r.run_uuid", args).fetchall()
        tags = per_run("tags", "t.value")
        metrics = per_run("latest_metrics", "CASE WHEN t.is_nan THEN NULL ELSE t.value END")
        values = per_run("params", "t.value") if params else {}
    return [RunRecord(rid, name, status, start, artifact_uri, tags.get(rid, {}), values.get(rid, {}),
                      {k: float("nan") if v is None else float(v) for k, v in metrics.get(rid, {}).items()})
            for rid, name, status, start, artifact_uri in runs]


def local_artifact_dir(artifact_uri: str | None) -> Path | None:
    """The directory of a run's artifacts when they are local files (``file:///...`` or a path: the sqlite
    default), else None (an artifact server or a bucket: fetch through MLflow)."""
    if not artifact_uri:
        return None
    parsed = urlparse(artifact_uri)
    if parsed.scheme not in ("", "file") or (parsed.scheme == "file" and parsed.netloc not in ("", "localhost")):
        return None
    return Path(unquote(parsed.path))


def trial_runs(runs: list[RunRecord]) -> dict[str, RunRecord]:
    """trial id -> its run (``RunRecord``s); ``RuntimeError`` naming them when one
    trial has several runs (a report would otherwise pick one silently)."""
    by_id: dict[str, list] = {}
    for r in runs:
        by_id.setdefault(r.tags.get("trial_id", r.run_name), []).append(r)
    duplicated = {tid: rs for tid, rs in by_id.items() if len(rs) > 1}
    if duplicated:
        tid, rs = next(iter(duplicated.items()))
        raise RuntimeError(f"{len(duplicated)} trial(s) have several runs in this experiment, e.g. {tid!r}: "
                           f"{', '.join(r.run_id for r in rs)}; delete the extra runs (mlflow runs delete "
                           "--run-id ...) so every trial has one")
    return {tid: rs[0] for tid, rs in by_id.items()}
