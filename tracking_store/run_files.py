"""A run's files and tags written back to the store: in place for a sqlite store whose artifacts are local
files, over REST for an `mlflow server` that proxies the run's artifacts, through MLflow for any other store.

    writer = run_writer(uri, run_id)                     # InPlaceWriter, RestWriter or MlflowWriter: the same methods
    writer.log_files([(Path("report/table.md"), "report"), (Path("report/figures/a.png"), "report/figures")])
    spec_file = writer.tag("spec_file")                  # None when the run has no such tag
    writer.set_tag("mlflow.note.content", text)          # the run's description in the MLflow UI
    writer.log_metrics({"curves/m/GRPO/A": 0.35})        # at step 0, now: a report's numbers on the run

What `sweep report` writes at the end (its files and the parent run's description) needs no MLflow client
on the sqlite default: importing MLflow and opening its store takes 3-6 s, longer than the rest of a small
report. In place does what MLflow's own local artifact repository and sqlite store do: a file is copied to
``<run's artifact dir>/<artifact path>/<its name>``; a tag is one row of MLflow's ``tags(key, value,
run_uuid)`` table (primary key (key, run_uuid)), its value cut at MLflow's 8,000 characters; a metric is
a row of ``metrics`` (its history) and its value in ``latest_metrics``, as MLflow's sqlite store logs one.
tests/tracking_store/test_run_files.py checks that MLflow's client reads back exactly what MLflow writes.
"""

from __future__ import annotations

import math
import shutil
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from tracking_store.client import open_existing
from tracking_store.tables import local_artifact_dir
from tracking_store.uri import is_server, sqlite_path

MAX_TAG_VALUE = 8000
"""MLflow cuts a run tag's value at this many characters (mlflow.utils.validation.MAX_TAG_VAL_LENGTH)."""


class InPlaceWriter:
    """A run of a sqlite store whose artifacts are a local directory: written without MLflow."""

    def __init__(self, db: Path, run_id: str, artifact_dir: Path):
        self.db, self.run_id, self.artifact_dir = db, run_id, artifact_dir

    def log_files(self, files: list[tuple[Path, str]]) -> None:
        for path, artifact_path in files:
            target = self.artifact_dir / artifact_path
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / Path(path).name)

    def tag(self, key: str) -> str | None:
        with closing(sqlite3.connect(self.db, timeout=60)) as con:
            row = con.execute("SELECT value FROM tags WHERE run_uuid = ? AND key = ?", (self.run_id, key)).fetchone()
        return None if row is None else row[0]

    def set_tag(self, key: str, value: str) -> None:
        with closing(sqlite3.connect(self.db, timeout=60)) as con, con:  # one transaction
            con.execute("INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?) ON CONFLICT (key, run_uuid) "
                        "DO UPDATE SET value = excluded.value", (key, str(value)[:MAX_TAG_VALUE], self.run_id))

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """Each metric at step 0 and the current time (finite values only: a report's numbers)."""
        now = int(time.time() * 1000)
        rows = [(k, float(v), now, self.run_id) for k, v in metrics.items() if math.isfinite(v)]
        with closing(sqlite3.connect(self.db, timeout=60)) as con, con:  # one transaction
            con.executemany("INSERT OR IGNORE INTO metrics (key, value, timestamp, run_uuid, step, is_nan) "
                            "VALUES (?, ?, ?, ?, 0, 0)", rows)
            con.executemany("INSERT INTO latest_metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES "
                            "(?, ?, ?, ?, 0, 0) ON CONFLICT (key, run_uuid) DO UPDATE SET value = excluded.value, "
                            "timestamp = excluded.timestamp, step = 0", rows)


class MlflowWriter:
    """Any other store (a server, a database, remote artifacts): through an MLflow client."""

    def __init__(self, uri: str, run_id: str):
        self.client, self.run_id = open_existing(uri), run_id

    def log_files(self, files: list[tuple[Path, str]]) -> None:
        for path, artifact_path in files:
            self.client.log_artifact(self.run_id, str(path), artifact_path=artifact_path)

    def tag(self, key: str) -> str | None:
        return self.client.get_run(self.run_id).data.tags.get(key)

    def set_tag(self, key: str, value: str) -> None:
        self.client.set_tag(self.run_id, key, value)

    def log_metrics(self, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()
                                                    if math.isfinite(v)])


class RestWriter:
    """A run of an `mlflow server` whose artifacts the server proxies (``mlflow-artifacts:``): over its REST API
    (tracking_store/rest_reads.py), without importing MLflow (3-6 s of a report's time)."""

    def __init__(self, reader, run_id: str, proxied: str):
        self.reader, self.run_id, self.proxied = reader, run_id, proxied

    def log_files(self, files: list[tuple[Path, str]]) -> None:
        from urllib.parse import quote

        for path, artifact_path in files:
            target = quote(f"{self.proxied}/{artifact_path}/{Path(path).name}".replace("//", "/"))
            self.reader._call("PUT", f"/api/2.0/mlflow-artifacts/artifacts/{target}", data=Path(path).read_bytes(), raw=True)

    def tag(self, key: str) -> str | None:
        return self.reader.get_run(self.run_id).data.tags.get(key)

    def set_tag(self, key: str, value: str) -> None:
        self.reader._call("POST", "/api/2.0/mlflow/runs/set-tag",
                          body={"run_id": self.run_id, "key": key, "value": str(value)[:MAX_TAG_VALUE]})

    def log_metrics(self, metrics: dict[str, float]) -> None:
        now = int(time.time() * 1000)
        rows = [{"key": k, "value": float(v), "timestamp": now, "step": 0} for k, v in metrics.items() if math.isfinite(v)]
        for i in range(0, len(rows), 1000):  # MLflow's log-batch limit
            self.reader._call("POST", "/api/2.0/mlflow/runs/log-batch", body={"run_id": self.run_id, "metrics": rows[i:i + 1000]})


def run_writer(uri: str, run_id: str) -> InPlaceWriter | RestWriter | MlflowWriter:
    """In place where ``uri`` is a sqlite file holding the active run ``run_id`` with local artifacts; over REST
    where it is an `mlflow server` that proxies the run's artifacts; else through MLflow (which names a missing
    store or run)."""
    if is_server(uri):
        from tracking_store.rest_reads import RestReader

        reader = RestReader(uri)
        artifact_uri = reader.get_run(run_id).info.artifact_uri
        if artifact_uri and artifact_uri.startswith("mlflow-artifacts:"):
            return RestWriter(reader, run_id, reader._proxied(artifact_uri))
        return MlflowWriter(uri, run_id)
    db = sqlite_path(uri)
    if db is not None and db.is_file():
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
                row = con.execute("SELECT artifact_uri FROM runs WHERE run_uuid = ? AND lifecycle_stage = 'active'",
                                  (run_id,)).fetchone()
        except sqlite3.DatabaseError:
            row = None
        artifact_dir = local_artifact_dir(row[0]) if row else None
        if artifact_dir is not None:
            return InPlaceWriter(db, run_id, artifact_dir)
    return MlflowWriter(uri, run_id)
