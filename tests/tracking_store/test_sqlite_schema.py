"""A new sqlite store from the shipped schema (tracking_store/sqlite_schema.py): the migrations' schema, used only
for the MLflow version it was dumped from, and a store MLflow then works with as with one it created itself.
(That the shipped file equals what the installed MLflow's migrations create is the module's --smoke, run by
tests/test_entry_points.py.)"""

from __future__ import annotations

import sqlite3

from tracking_store.client import open_client
from tracking_store.sqlite_schema import SCHEMA_FILE, check, recorded_version, schema_of, write_new_store


def test_a_store_from_the_schema_takes_runs_and_gets_its_default_experiment_where_mlflow_puts_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "runs" / "mlflow.db"
    client = open_client(f"sqlite:///{db}")
    assert db.is_file() and not list(db.parent.glob(".*.new"))  # written whole, nothing left beside it
    default = client.get_experiment("0")
    assert default.name == "Default" and default.artifact_location == str(tmp_path / "mlruns" / "0")
    exp = client.create_experiment("s")
    run = client.create_run(exp)
    for step in range(3):
        client.log_metric(run.info.run_id, "actor/entropy", 1.0 / (step + 1), step=step)
    client.set_terminated(run.info.run_id)
    reopened = open_client(f"sqlite:///{db}")
    history = reopened.get_metric_history(run.info.run_id, "actor/entropy")
    assert [(m.step, m.value) for m in history] == [(0, 1.0), (1, 0.5), (2, 1.0 / 3)]
    assert reopened.get_run(run.info.run_id).info.status == "FINISHED"


def test_the_schema_of_another_mlflow_version_is_not_used(tmp_path):
    version, revision = recorded_version()
    other = tmp_path / "schema.sql"
    other.write_text(SCHEMA_FILE.read_text().replace(f"-- mlflow {version},", "-- mlflow 0.0.1,", 1))
    assert recorded_version(other) == ("0.0.1", revision)
    assert not write_new_store(tmp_path / "a.db", other) and not (tmp_path / "a.db").exists()
    headless = tmp_path / "headless.sql"
    headless.write_text(SCHEMA_FILE.read_text().split("\n", 1)[1])
    assert recorded_version(headless) is None and not write_new_store(tmp_path / "b.db", headless)
    (tmp_path / "c.db").write_bytes(b"")  # an existing file is never overwritten
    assert not write_new_store(tmp_path / "c.db") and (tmp_path / "c.db").read_bytes() == b""


def test_the_check_names_a_column_or_row_the_migrations_would_not_make(tmp_path):
    text = SCHEMA_FILE.read_text()
    assert "\tvalue FLOAT NOT NULL" in text
    changed = tmp_path / "changed.sql"
    changed.write_text(text.replace("\tvalue FLOAT NOT NULL", "\tvalue INTEGER NOT NULL", 1)
                       .replace("COMMIT;", "INSERT INTO \"alembic_version\" VALUES('0000');\nCOMMIT;"))
    (tmp_path / "work").mkdir()
    problems = check(tmp_path / "work", changed)
    assert any("value INTEGER NOT NULL" in p for p in problems), problems
    assert any(p.startswith("rows of alembic_version") for p in problems), problems
    # the comparison itself: clause order aside, a store equals itself written again from its own dump
    written = tmp_path / "again.db"
    assert write_new_store(written) and schema_of(written) == schema_of(written)
    assert sqlite3.connect(written).execute("SELECT version_num FROM alembic_version").fetchall() == [(recorded_version()[1],)]
