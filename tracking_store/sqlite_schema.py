"""A new sqlite MLflow store written from the schema MLflow's own migrations produce: milliseconds, not ~1 CPU-second.

    python -m tracking_store.sqlite_schema --smoke   # exit 1 unless the shipped schema is what the migrations give now
    python -m tracking_store.sqlite_schema --write   # rebuild tracking_store/mlflow_sqlite_schema.sql (the installed MLflow)

Contract: ``write_new_store(path)`` creates the sqlite file ``path`` (which must not exist) from the shipped
schema when it was recorded from the installed MLflow version, and returns True; otherwise it writes nothing and
returns False, and MLflow creates the store itself (its ~50 schema migrations, about a CPU-second) when it first
opens it. The file appears whole (written beside it, then renamed). The schema is MLflow's, dumped from a store its
migrations created (``sqlite3 .dump``, the Default experiment's row left out: MLflow adds it when it opens the
store, with that store's artifact location); its first line records the MLflow version and the schema revision.
MLflow checks the revision on every open (``_verify_schema``), so a stale file could never go unnoticed.
Used by tracking_store/client.py's ``open_client`` (under the store's lock) for every store a driver creates.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import tempfile
from pathlib import Path

SCHEMA_FILE = Path(__file__).with_name("mlflow_sqlite_schema.sql")
_HEADER = re.compile(r"^-- mlflow (\S+), schema revision (\S+)$")
_DEFAULT_EXPERIMENT_ROW = 'INSERT INTO "experiments" VALUES(0,'


def recorded_version(schema_file: Path = SCHEMA_FILE) -> tuple[str, str] | None:
    """(MLflow version, schema revision) the shipped schema was dumped from; None without a readable header."""
    try:
        with schema_file.open() as f:
            match = _HEADER.match(f.readline().rstrip("\n"))
    except OSError:
        return None
    return (match.group(1), match.group(2)) if match else None


def write_new_store(path: Path, schema_file: Path = SCHEMA_FILE) -> bool:
    """Create the sqlite store ``path`` from the shipped schema when it matches the installed MLflow; else False."""
    from mlflow.version import VERSION

    recorded = recorded_version(schema_file)
    if recorded is None or recorded[0] != VERSION or path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        connection = sqlite3.connect(partial)
        try:
            connection.executescript(schema_file.read_text())
        finally:
            connection.close()
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return True


def dump_migrated_store(directory: Path) -> str:
    """The schema script of a store MLflow's migrations create in ``directory`` (the header line first)."""
    import logging

    from mlflow.store.db.utils import _get_latest_schema_revision
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from mlflow.version import VERSION

    logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)  # "Creating initial MLflow database tables"
    db = directory / "migrated.db"
    store = SqlAlchemyStore(f"sqlite:///{db}", str(directory / "artifacts"))
    store.engine.dispose()
    connection = sqlite3.connect(db)
    try:
        lines = [line for line in connection.iterdump() if not line.startswith(_DEFAULT_EXPERIMENT_ROW)]
    finally:
        connection.close()
    return f"-- mlflow {VERSION}, schema revision {_get_latest_schema_revision()}\n" + "\n".join(lines) + "\n"


def schema_of(db: Path) -> dict[str, object]:
    """What must be equal between two stores: each table's and index's columns, constraints and rows (the
    Default experiment's row aside), with a CREATE statement's clauses sorted (the migrations rebuild tables
    with their constraints in no fixed order)."""
    connection = sqlite3.connect(db)
    try:
        objects = {}
        for kind, name, sql in connection.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"):
            objects[(kind, name)] = sorted(part.strip() for part in re.split(r",\s*\n", sql))
        rows = {}
        for (kind, name) in objects:
            if kind == "table":
                found = connection.execute(f'SELECT * FROM "{name}"').fetchall()
                rows[name] = sorted(repr(row) for row in found if not (name == "experiments" and row[0] == 0))
        return {"objects": objects, "rows": rows}
    finally:
        connection.close()


def check(directory: Path, schema_file: Path = SCHEMA_FILE) -> list[str]:
    """Differences between a store written from ``schema_file`` and one MLflow's migrations create; [] if none."""
    from mlflow.store.db.utils import _get_latest_schema_revision
    from mlflow.version import VERSION

    recorded = recorded_version(schema_file)
    if recorded != (VERSION, _get_latest_schema_revision()):
        return [f"{schema_file} records {recorded}, the installed MLflow is {VERSION} at schema revision "
                f"{_get_latest_schema_revision()}"]
    dump_migrated_store(directory)
    shipped = directory / "shipped.db"
    if not write_new_store(shipped, schema_file):
        return [f"{schema_file}: no store written"]
    want, got = schema_of(directory / "migrated.db"), schema_of(shipped)
    problems = [f"{key}: {got['objects'].get(key)} != {value}" for key, value in want["objects"].items()
                if got["objects"].get(key) != value]
    problems += [f"{key}: an object the migrations do not create" for key in got["objects"].keys() - want["objects"].keys()]
    problems += [f"rows of {name}: {got['rows'].get(name)} != {rows}" for name, rows in want["rows"].items()
                 if got["rows"].get(name) != rows]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tracking_store.sqlite_schema", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--smoke", action="store_true", help="compare the shipped schema with a store MLflow's "
                      "migrations create (a temporary directory in the working directory; seconds)")
    mode.add_argument("--write", action="store_true", help=f"rebuild {SCHEMA_FILE.name} from the installed MLflow")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=".", prefix=".sqlite-schema-") as tmp:
        if args.write:
            SCHEMA_FILE.write_text(dump_migrated_store(Path(tmp)))
            print(f"wrote {SCHEMA_FILE} (mlflow {', schema revision '.join(recorded_version() or ())})")
            return 0
        problems = check(Path(tmp))
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"{len(problems)} difference(s) from the migrations' schema: python -m tracking_store.sqlite_schema "
              "--write rebuilds it")
        return 1
    print(f"smoke ok: {SCHEMA_FILE.name} (mlflow {', schema revision '.join(recorded_version() or ())}) is the "
          "schema MLflow's migrations create")
    return 0


if __name__ == "__main__":
    sys.exit(main())
