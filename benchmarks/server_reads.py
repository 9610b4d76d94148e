"""The read commands on a big sweep behind `mlflow server` + PostgreSQL, beside the same sweep in sqlite.

    python benchmarks/server_reads.py runs/sweep_scale/sqlite/scale-grid-2000-sweep    # a kept sweep_scale store
    python benchmarks/server_reads.py --smoke      # a synthetic 2-method x 3-seed store, a minute

Filling a server through its REST API runs at a few hundred metric rows a second here (docs/benchmarks.md),
so 2,000 trials x 200 steps (4.8 M rows) would take hours. Instead the sweep's sqlite store (kept by
`benchmarks/sweep_scale.py --keep`) is copied table by table into PostgreSQL, under the schema `mlflow
server` itself creates there (benchmarks/scale_stores.py: Debian's PostgreSQL as the postgres user, root
needed). Then, N runs each, median and spread:

  sweep status NAME --tracking-uri http://...    and   --run-dir SQLITE_DIR
  sweep report NAME --tracking-uri http://...    and   --run-dir SQLITE_DIR   (--out a scratch folder)

Only what the read commands read is copied: experiments, runs, tags, params, metrics and latest metrics
(the artifacts stay where the runs' artifact URIs point: the local files of the kept store). Everything
is written under --out (removed at the end unless --keep); the servers end by pid.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "benchmarks"))
from scale_stores import mlflow_server, postgres_server  # noqa: E402

TABLES = ("experiments", "runs", "tags", "params", "metrics", "latest_metrics")  # in the order keys need
BATCH = 20_000


def copy_store(sqlite_db: Path, db_uri: str) -> dict[str, int]:
    """Every row of TABLES from the sqlite file into the (empty, migrated) PostgreSQL database; rows per table."""
    import psycopg2
    from psycopg2.extras import execute_values

    dsn = db_uri.replace("postgresql+psycopg2://", "postgresql://")
    counts = {}
    with closing(sqlite3.connect(f"file:{sqlite_db}?mode=ro", uri=True)) as src, closing(psycopg2.connect(dsn)) as dst:
        with dst, dst.cursor() as cur:
            cur.execute(f"TRUNCATE {', '.join(TABLES)} CASCADE")  # the server's own Default experiment
            for table in TABLES:
                cur.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
                            (table,))
                types = dict(cur.fetchall())
                columns = [c[1] for c in src.execute(f"PRAGMA table_info({table})") if c[1] in types]
                booleans = [i for i, c in enumerate(columns) if types[c] == "boolean"]
                rows = src.execute(f"SELECT {', '.join(columns)} FROM {table}")
                counts[table] = 0
                while batch := rows.fetchmany(BATCH):
                    if booleans:
                        batch = [tuple(bool(v) if i in booleans and v is not None else v for i, v in enumerate(row))
                                 for row in batch]
                    execute_values(cur, f"INSERT INTO {table} ({', '.join(columns)}) VALUES %s", batch,
                                   page_size=BATCH)
                    counts[table] += len(batch)
            cur.execute("SELECT setval(pg_get_serial_sequence('experiments', 'experiment_id'), "
                        "(SELECT max(experiment_id) FROM experiments))")
    return counts


def timed(args: list[str], cwd: Path, runs: int) -> tuple[float, float, float]:
    """(median, min, max) wall seconds of `runs` runs of the CLI command ``args``."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "sweeps.cli", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(f"sweep {' '.join(args)} failed:\n{done.stderr[-3000:]}")
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def smoke_store(root: Path) -> tuple[Path, str]:
    """A small synthetic sweep (dashboards/collect/synthetic_store.py) in sqlite under ``root``: (its folder, its name)."""
    from dashboards.collect.synthetic_store import fill_store

    fill_store(f"sqlite:///{root}/mlflow.db", "reads-smoke", artifact_root=str(root / "mlartifacts"), seeds=(0, 1, 2),
               steps=20, eval_every=5)
    return root, "reads-smoke"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path, nargs="?", help="Folder of a kept sweep: its mlflow.db, named after it.")
    parser.add_argument("--name", default=None, help="The sweep's name (default: the folder's name).")
    parser.add_argument("--runs", type=int, default=3, help="Runs of each command (default 3).")
    parser.add_argument("--smoke", action="store_true", help="A synthetic 6-trial store instead, one run each.")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "server_reads", help="Scratch folder.")
    parser.add_argument("--keep", action="store_true", help="Keep --out.")
    ns = parser.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    if ns.smoke:
        store, name, runs = *smoke_store(Path(tempfile.mkdtemp(prefix="store-", dir=ns.out))), 1
    elif ns.store is None or not (ns.store / "mlflow.db").is_file():
        sys.exit(f"server_reads: expected a folder holding mlflow.db (benchmarks/sweep_scale.py --keep), got {ns.store}")
    else:
        store, name, runs = ns.store.resolve(), ns.name or ns.store.resolve().name, ns.runs
    try:
        with postgres_server(ns.out) as db_uri, mlflow_server(db_uri, ns.out) as uri:
            t0 = time.perf_counter()
            counts = copy_store(store / "mlflow.db", db_uri)
            print(f"copied in {time.perf_counter() - t0:.0f} s: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()),
                  flush=True)
            figures = {}
            for command in ("status", "report"):
                for where, place in (("server", ["--tracking-uri", uri]), ("sqlite", ["--run-dir", str(store)])):
                    extra = ["--out", str(ns.out / f"report-{where}")] if command == "report" else []
                    figures[command, where] = timed([command, name, *place, *extra], ns.out, runs)
                    print(f"sweep {command} on {where}: median {figures[command, where][0]:.1f} s", flush=True)
            tables = [(ns.out / f"report-{where}" / "table.md").read_text(encoding="utf-8") for where in ("server", "sqlite")]
    finally:
        if not ns.keep:
            shutil.rmtree(ns.out, ignore_errors=True)
    print(f"\n## {name}: read commands, {runs} run(s) each (median, min-max)\n")
    print("| command | `mlflow server` + PostgreSQL | sqlite file |\n|---|---|---|")
    for command in ("status", "report"):
        cells = [f"{m:.1f} s ({lo:.1f}-{hi:.1f})" for m, lo, hi in (figures[command, w] for w in ("server", "sqlite"))]
        print(f"| `sweep {command}` | {cells[0]} | {cells[1]} |")
    print(f"\nthe report's table.md the same from both stores: {'yes' if tables[0] == tables[1] else 'NO'}")


if __name__ == "__main__":
    main()
