"""New sqlite stores copied from an empty one that MLflow migrated once per MLflow version.

MLflow creates a sqlite store by running its schema migrations (about 1.4 CPU-seconds on this project's
2-core machine); a copy of an empty migrated store takes milliseconds. Worth it where many stores are made
(a test suite, scripts that give every run its own run directory); a user's one store gains nothing, so
it is off unless ``SWEEP_STORE_TEMPLATE_DIR`` names a directory (created if missing):

    SWEEP_STORE_TEMPLATE_DIR=.cache/store-template sweep run spec.yaml

Contract (tracking_store/client.py's ``open_client`` calls both under the store's lock):

    copied = copy_template(path, directory)   # path (missing) made from <directory>/mlflow-<version>.db: True
    save_template(path, directory)            # path just made by MLflow's migrations: its empty copy kept

A template is the store MLflow's own migrations made, with the Default experiment's row removed (MLflow
adds it again on the first open, with that store's artifact location). It is written beside its final name
and renamed, so a reader sees a whole file or none. A template is copied only when its schema revision is the
installed MLflow's newest; one that is not (edited, or damaged) is removed, MLflow migrates the new store and it
becomes the template. MLflow itself checks the revision on every open (``_verify_schema``).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def template_path(directory: Path) -> Path:
    """Where the installed MLflow's template lives in ``directory``."""
    from mlflow.version import VERSION

    return directory / f"mlflow-{VERSION}.db"


def copy_template(path: Path, directory: Path) -> bool:
    """Create the missing store ``path`` from ``directory``'s template; False (nothing written) without one."""
    template = template_path(directory)
    if path.exists() or not template.is_file():
        return False
    if _revision(template) != _newest_revision():
        template.unlink(missing_ok=True)  # not what this MLflow makes: remade by save_template
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    _copy(template, path)
    return True


def save_template(path: Path, directory: Path) -> None:
    """Keep the store ``path`` that MLflow has just created (only its Default experiment, no run) as
    ``directory``'s template, unless one is there. A store with anything else in it is never a template."""
    template = template_path(directory)
    if template.exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f".{template.name}.{os.getpid()}.new"
    try:
        _copy(path, partial)
        connection = sqlite3.connect(partial)
        try:
            experiments = connection.execute("SELECT experiment_id FROM experiments").fetchall()
            runs = connection.execute("SELECT count(*) FROM runs").fetchone()[0]
            if experiments != [(0,)] or runs:
                return  # not a new store after all: keep no template of it
            connection.execute("DELETE FROM experiment_tags WHERE experiment_id = 0")
            connection.execute("DELETE FROM experiments WHERE experiment_id = 0")
            connection.commit()
        finally:
            connection.close()
        os.replace(partial, template)
    finally:
        partial.unlink(missing_ok=True)


def _revision(db: Path) -> str | None:
    """The schema revision recorded in the store ``db``; None for a file that is not a store of MLflow's."""
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return connection.execute("SELECT version_num FROM alembic_version").fetchone()[0]
        finally:
            connection.close()
    except (sqlite3.Error, TypeError):  # not a database, no such table, no row
        return None


def _newest_revision() -> str:
    """The schema revision the installed MLflow's migrations end at (read from its migration scripts)."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    return _get_latest_schema_revision()


def _copy(source: Path, target: Path) -> None:
    """``source`` copied to ``target`` through sqlite's backup (a consistent copy even of an open store),
    written beside ``target`` and renamed onto it."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.copy")
    try:
        src, dst = sqlite3.connect(source), sqlite3.connect(partial)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
