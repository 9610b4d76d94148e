"""tracking_store/store_template.py through open_client: with SWEEP_STORE_TEMPLATE_DIR set, the first new sqlite
store is made by MLflow's migrations and kept (emptied) as the template; later new stores are its copies, each
with its own Default experiment, the same schema, and fully usable; a template of another schema revision is replaced; a store
holding runs never becomes one."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from contract.env import STORE_TEMPLATE_DIR
from tracking_store.client import open_client
from tracking_store.store_template import save_template, template_path


def _schema(db: Path) -> list:
    """Every table's and index's definition, each CREATE statement's clauses sorted (MLflow's migrations rebuild
    tables with their constraints in no fixed order), and the schema revision."""
    connection = sqlite3.connect(db)
    try:
        objects = [(kind, name, sorted(part.strip() for part in re.split(r",\s*\n", sql or "")))
                   for kind, name, sql in connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY 1, 2")]
        return objects + connection.execute("SELECT version_num FROM alembic_version").fetchall()
    finally:
        connection.close()


def _experiments(db: Path) -> list[tuple]:
    connection = sqlite3.connect(db)
    try:
        return connection.execute("SELECT experiment_id, name, artifact_location FROM experiments").fetchall()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """One store made by MLflow's migrations with the template directory set: (its path, the template dir)."""
    root = tmp_path_factory.mktemp("template")
    templates = root / "templates"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(STORE_TEMPLATE_DIR.name, str(templates))
        mp.chdir(root)
        open_client(f"sqlite:///{root}/first/mlflow.db")
    return root / "first" / "mlflow.db", templates


def test_the_first_new_store_is_kept_empty_as_the_template(migrated):
    first, templates = migrated
    template = template_path(templates)
    assert template.is_file() and [p.name for p in templates.iterdir()] == [template.name]  # no partial file left
    assert _experiments(template) == []  # the Default experiment (with the first store's location) removed
    assert _experiments(first) and _experiments(first)[0][:2] == (0, "Default")
    assert _schema(template) == _schema(first)


def test_a_new_store_is_a_copy_with_its_own_default_experiment_and_takes_runs(migrated, tmp_path, monkeypatch):
    first, templates = migrated
    monkeypatch.setenv(STORE_TEMPLATE_DIR.name, str(templates))
    monkeypatch.chdir(tmp_path)
    before = template_path(templates).stat().st_mtime_ns
    client = open_client(f"sqlite:///{tmp_path}/second/mlflow.db")
    second = tmp_path / "second" / "mlflow.db"
    assert template_path(templates).stat().st_mtime_ns == before  # copied from, not written again
    assert _schema(second) == _schema(first)
    ((exp_id, name, location),) = _experiments(second)
    assert (exp_id, name) == (0, "Default") and location.startswith(str(tmp_path))  # this store's, not the first's
    exp = client.create_experiment("copied")
    run = client.create_run(exp).info.run_id
    client.log_metric(run, "reward/mean", 0.25, step=3)
    client.set_terminated(run, "FINISHED")
    again = open_client(f"sqlite:///{second}")  # an existing store is opened as it is
    assert [(m.step, m.value) for m in again.get_metric_history(run, "reward/mean")] == [(3, 0.25)]
    assert again.get_run(run).info.status == "FINISHED"


def test_a_template_of_another_schema_is_replaced_and_the_store_is_made_by_the_migrations(migrated, tmp_path,
                                                                                          monkeypatch):
    first, _ = migrated
    templates = tmp_path / "templates"
    templates.mkdir()
    stale = template_path(templates)
    connection = sqlite3.connect(stale)
    connection.executescript("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL);"
                             "INSERT INTO alembic_version VALUES ('0123456789ab');")  # an unknown schema revision
    connection.close()
    monkeypatch.setenv(STORE_TEMPLATE_DIR.name, str(templates))
    monkeypatch.chdir(tmp_path)
    client = open_client(f"sqlite:///{tmp_path}/third/mlflow.db")
    assert client.get_experiment("0").name == "Default"
    assert _schema(tmp_path / "third" / "mlflow.db") == _schema(first)
    assert _schema(stale) == _schema(first) and _experiments(stale) == []  # the stale template replaced


def test_a_store_with_runs_never_becomes_a_template(migrated, tmp_path):
    first, _ = migrated
    store = tmp_path / "used.db"
    source, target = sqlite3.connect(first), sqlite3.connect(store)
    source.backup(target)
    source.close()
    target.close()
    open_client(f"sqlite:///{store}").create_run("0")
    save_template(store, tmp_path / "templates")
    assert not template_path(tmp_path / "templates").exists()
    assert not list((tmp_path / "templates").iterdir())  # no partial file either
