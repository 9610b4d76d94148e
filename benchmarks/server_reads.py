"""The read commands on a big sweep behind `mlflow server` + PostgreSQL, beside the same sweep in sqlite.

    python benchmarks/server_reads.py runs/sweep_scale/sqlite/scale-grid-2000-sweep    # a kept sweep_scale store
    python benchmarks/server_reads.py --smoke      # synthetic: 8 methods x 2 seeds x 10 steps, 1 run each (~2 min)

Filling a server through its REST API runs at a few hundred metric rows a second here (docs/benchmarks.md),
so 2,000 trials x 200 steps (4.8 M rows) would take hours. Instead the sweep's sqlite store (kept by
`benchmarks/sweep_scale.py --keep`) is copied table by table into PostgreSQL, under the schema `mlflow
server` itself creates there (benchmarks/scale_stores.py: Debian's PostgreSQL as the postgres user, root
needed); its parent run's artifacts (the recorded spec, the read copy: tracking_store/read_copy.py) go
behind the server's artifact proxy, as a sweep run against the server has them. A store without a read
copy (the smoke's, or one kept before the copy existed) gets one first, by `sweep report --rebuild`.
Then, N runs each, median and spread, and each command's peak RSS:

  sweep status|report NAME --tracking-uri http://... --direct   every run through MLflow's REST API
  sweep status|report NAME --tracking-uri http://...            the read copy, the rest from the server
  sweep status|report NAME --run-dir SQLITE_DIR                 the sqlite file's tables

(each report logged to the parent run, as by default), with --peer DIR another checkout's commands on the
server beside them (`git worktree add DIR COMMIT`: the code before the read copy), and the reports' table.md
compared. Only what the read commands read is copied: experiments, runs,
tags, params, metrics and latest metrics. Everything is written under --out (removed at the end unless
--keep); the servers end by pid.
"""

from __future__ import annotations

import argparse
import os
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

SMOKE = {"seeds": (0, 1), "steps": 10, "eval_every": 5}
"""--smoke's store (dashboards/collect/synthetic_store.py's 8 methods): a mean over 2 seeds in every cell."""
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


RSS_LAUNCHER = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[2:]); "
                "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
                "sys.exit(rc)")
"""Runs a command and writes its peak RSS (KiB: the command's process or any of its own, the largest). A child
starts its count at the RSS of the process it was forked from, so the command is started by this small
process, not by the benchmark's (a few hundred MB of pandas and MLflow)."""


def timed(args: list[str], cwd: Path, runs: int, code: Path = REPO) -> tuple[float, float, float, float]:
    """(median, min, max) wall seconds of ``runs`` runs of the CLI command ``args`` (of the checkout ``code``), and
    its peak RSS in MB (the most of any run)."""
    times, peak = [], 0.0
    env = {**os.environ, "PYTHONPATH": str(code)}
    for _ in range(runs):
        with tempfile.TemporaryDirectory(dir=cwd) as tmp:
            rss = Path(tmp).resolve() / "rss"
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", RSS_LAUNCHER, str(rss), sys.executable, "-m", "sweeps.cli",
                                   *args], cwd=cwd, capture_output=True, text=True, timeout=3600, stdin=subprocess.DEVNULL,
                                  env=env)
            times.append(time.perf_counter() - t0)
            if done.returncode != 0:
                raise RuntimeError(f"sweep {' '.join(args)} failed:\n{done.stderr[-3000:]}")
            peak = max(peak, int(rss.read_text()) / 1024)
    return statistics.median(times), min(times), max(times), peak


def smoke_store(root: Path) -> tuple[Path, str]:
    """A small synthetic sweep (dashboards/collect/synthetic_store.py) in sqlite under ``root``: (its folder, its name)."""
    from dashboards.collect.synthetic_store import fill_store

    fill_store(f"sqlite:///{root}/mlflow.db", "reads-smoke", artifact_root=(root / "mlartifacts").as_uri(), **SMOKE)
    return root, "reads-smoke"


def parents(db: Path, name: str) -> list[tuple[str, str, str]]:
    """(run id, experiment id, artifact URI) of the sweep's parent runs in the sqlite store."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        return con.execute("SELECT r.run_uuid, r.experiment_id, r.artifact_uri FROM runs r JOIN experiments e ON "
                           "e.experiment_id = r.experiment_id JOIN tags t ON t.run_uuid = r.run_uuid WHERE e.name = ? "
                           "AND t.key = 'role' AND t.value = 'parent'", (name,)).fetchall()


def has_copy(db: Path, name: str) -> bool:
    from tracking_store.columnar import COMPLETE_TO_TAG

    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        return any(con.execute("SELECT 1 FROM tags WHERE run_uuid = ? AND key = ?", (run_id, COMPLETE_TO_TAG)).fetchone()
                   for run_id, _, _ in parents(db, name))


def serve_parent_artifacts(db: Path, name: str, db_uri: str, destination: Path) -> None:
    """The parent runs' artifacts (the recorded spec, the read copy) behind the server's artifact proxy, as a
    sweep run against the server has them: copied under ``destination`` and the runs' URIs made
    ``mlflow-artifacts:/...`` in PostgreSQL. The trial runs' artifacts stay local files (the read commands do
    not read them)."""
    import psycopg2

    from tracking_store.tables import local_artifact_dir

    with closing(psycopg2.connect(db_uri.replace("postgresql+psycopg2://", "postgresql://"))) as con, con, \
            con.cursor() as cur:
        for run_id, exp_id, artifact_uri in parents(db, name):
            local = local_artifact_dir(artifact_uri)
            if local is not None and local.is_dir():
                shutil.copytree(local, destination / str(exp_id) / run_id / "artifacts", dirs_exist_ok=True)
            cur.execute("UPDATE runs SET artifact_uri = %s WHERE run_uuid = %s",
                        (f"mlflow-artifacts:/{exp_id}/{run_id}/artifacts", run_id))


READS = (("server, every run from the store (`--direct`)", "server", ["--direct"]),
         ("server, through the read copy", "server", []),
         ("sqlite file", "sqlite", []))
"""(column, store, options); with --peer a first column: that checkout's commands on the server, as they were."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path, nargs="?", help="Folder of a kept sweep: its mlflow.db, named after it.")
    parser.add_argument("--name", default=None, help="The sweep's name (default: the folder's name).")
    parser.add_argument("--runs", type=int, default=3, help="Runs of each command (default 3).")
    parser.add_argument("--smoke", action="store_true", help="A synthetic 16-trial store (8 methods x 2 seeds, "
                        "10 steps) instead, one run each (~2 min).")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "server_reads", help="Scratch folder.")
    parser.add_argument("--keep", action="store_true", help="Keep --out.")
    parser.add_argument("--peer", type=Path, default=None,
                        help="A checkout of other code (git worktree add DIR COMMIT) whose commands are timed on the "
                             "server too, in a first column.")
    ns = parser.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    if ns.smoke:
        store, name, runs = *smoke_store(Path(tempfile.mkdtemp(prefix="store-", dir=ns.out))), 1
    elif ns.store is None or not (ns.store / "mlflow.db").is_file():
        sys.exit(f"server_reads: expected a folder holding mlflow.db (benchmarks/sweep_scale.py --keep), got {ns.store}")
    else:
        store, name, runs = ns.store.resolve(), ns.name or ns.store.resolve().name, ns.runs
    db = store / "mlflow.db"
    try:
        if not has_copy(db, name):  # a store written before the read copy existed, or the smoke's
            t0 = time.perf_counter()
            timed(["report", name, "--run-dir", str(store), "--rebuild", "--no-log", "--out", str(ns.out / "rebuild")],
                  ns.out, 1)
            print(f"read copy written (sweep report --rebuild on the sqlite file) in {time.perf_counter() - t0:.1f} s",
                  flush=True)
        with postgres_server(ns.out) as db_uri, mlflow_server(db_uri, ns.out) as uri:
            t0 = time.perf_counter()
            counts = copy_store(db, db_uri)
            serve_parent_artifacts(db, name, db_uri, ns.out / "server-artifacts")
            print(f"copied in {time.perf_counter() - t0:.0f} s: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()),
                  flush=True)
            figures, reads = {}, list(READS)
            if ns.peer is not None:
                peer = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ns.peer, capture_output=True,
                                      text=True).stdout.strip()
                reads.insert(0, (f"server, commit {peer or ns.peer}", "peer", []))
            for command in ("status", "report"):
                for i, (label, where, extra) in enumerate(reads):
                    place = ["--tracking-uri", uri] if where in ("server", "peer") else ["--run-dir", str(store)]
                    out = ["--out", str(ns.out / f"report-{i}")] if command == "report" else []
                    figures[command, i] = timed([command, name, *place, *extra, *out], ns.out, runs,
                                                ns.peer.resolve() if where == "peer" else REPO)
                    print(f"sweep {command}, {label}: median {figures[command, i][0]:.1f} s", flush=True)
            tables = [(ns.out / f"report-{i}" / "table.md").read_text(encoding="utf-8") for i in range(len(reads))]
    finally:
        if not ns.keep:
            shutil.rmtree(ns.out, ignore_errors=True)
    print(f"\n## {name}: read commands, {runs} run(s) each (median, min-max; peak RSS)\n")
    print("| command | " + " | ".join(label for label, _, _ in reads) + " |\n|---|" + "---|" * len(reads))
    for command in ("status", "report"):
        cells = [f"{m:.1f} s ({lo:.1f}-{hi:.1f}); {rss:.0f} MB"
                 for m, lo, hi, rss in (figures[command, i] for i in range(len(reads)))]
        print(f"| `sweep {command}` | " + " | ".join(cells) + " |")
    same = all(t == tables[0] for t in tables)
    print(f"\nthe report's table.md the same from all {len(reads)} reads: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
