"""What `sweep status NAME` shows: a sweep's trials as its store records them, and those not started yet.

    runs, parent, resolved = recorded_trials(uri, "dhpo_vs_baselines")  # trial id -> RunRecord; StoreMissing if none
    rows = planned_from_store(resolved, runs)                           # every trial of the spec as last run
    cells = status_cells(rows, runs)                                    # STATUS_HEADER's columns, one row a trial

The plan comes from the parent run's ``spec/resolved.json`` (or ``.yaml``: every trial id and config of the spec as last
run, overrides included: sweeps/tracking/sweep_runs.py writes it), so a name is enough; trials recorded but no longer
in the spec are shown too. Nothing is written to the store, and a sqlite store is read without MLflow
(2,000 trials: well under a second of reading).
"""

from __future__ import annotations

from dataclasses import dataclass

from contract.metrics import TRIAL_STEP, VAL_AVG
from dashboards.collect.recorded_spec import recorded_spec
from tracking_store.client import StoreMissing, require_store, sweep_experiment, sweep_parent
from tracking_store.rest_reads import open_reader
from tracking_store.roles import PARENT, TRIAL, role_filter
from tracking_store.tables import RunRecord, experiment_id, experiment_names, read_runs, trial_runs
from tracking_store.uri import sqlite_path, where

PLAIN_ROWS = 200
"""Above this many trials the table is printed as plain aligned text: rich measures and wraps every cell
(~6 s for 2,000 trials on a 2-core machine), plain text takes milliseconds."""


@dataclass
class StatusRow:
    trial_id: str
    method: str
    steps: int | None  # the trial's planned steps (None: unknown)


def recorded_trials(uri: str, sweep: str, read: str = "auto") -> tuple[dict[str, RunRecord], RunRecord | None, dict]:
    """The sweep's trial runs by trial id, its first parent run (None before one exists) and the spec
    recorded on it ({} when none). A sqlite store's tables are read directly (tracking_store/tables.py:
    no MLflow import); any other store through MLflow, by its read copy where it has one
    (tracking_store/read_copy.py; ``read``: "auto", "copy" on any store, "direct" never). ``StoreMissing`` for
    no store or no such sweep."""
    db = sqlite_path(uri)
    if db is not None and read != "copy":
        require_store(uri)
        exp_id = experiment_id(db, sweep)
        if exp_id is None:
            raise StoreMissing(f"no sweep {sweep!r} in {where(uri)}; known: {', '.join(experiment_names(db)) or 'none'}")
        runs, parents, client = read_runs(db, exp_id, role=TRIAL), read_runs(db, exp_id, role=PARENT, params=False), None
    else:
        client = open_reader(uri)
        exp_id = sweep_experiment(client, uri, sweep).experiment_id
        from tracking_store.read_copy import open_copy  # numpy and pandas: not for a sqlite file's status

        parents = [RunRecord.of(r) for r in [sweep_parent(client, exp_id)] if r is not None]
        view = open_copy(client, exp_id, parents[0], records_only=True) if parents and read != "direct" else None
        runs = view.runs if view is not None else [
            RunRecord.of(r) for r in client.search_runs([exp_id], role_filter(TRIAL), max_results=50_000)]
    parent = min(parents, key=lambda r: r.start_time or 0) if parents else None
    resolved = recorded_spec(client, parent.run_id, parent.artifact_uri) if parent is not None else {}
    return trial_runs(runs), parent, resolved


def planned_from_store(resolved: dict, runs: dict[str, RunRecord]) -> list[StatusRow]:
    """Every trial of the recorded spec (in spec order), then recorded trials not in it."""
    rows = []
    for tid, config in (resolved.get("trials") or {}).items():
        run = runs.get(tid)
        method = run.tags.get("method") if run else None
        rows.append(StatusRow(tid, method or str((config.get("algorithm") or {}).get("name", "")),
                              int((config.get("trainer") or {}).get("steps", 0)) or None))
    for tid in sorted(runs.keys() - {r.trial_id for r in rows}):
        run = runs[tid]
        steps = run.params.get("trainer.steps")
        rows.append(StatusRow(tid, run.tags.get("method", ""), int(steps) if steps and steps.isdigit() else None))
    return rows


STATUS_HEADER = ("trial id", "method", "state", "step", VAL_AVG)


def status_cells(planned: list[StatusRow], runs: dict[str, RunRecord]) -> list[tuple[str, ...]]:
    """One row of STATUS_HEADER per planned trial: its MLflow state (NOT STARTED without a run), the last
    logged step out of the planned ones and the last val/avg/acc."""
    rows = []
    for row in planned:
        r = runs.get(row.trial_id)
        state = r.status if r else "NOT STARTED"
        step = int(r.metrics.get(TRIAL_STEP, 0)) if r else 0
        acc = f"{r.metrics[VAL_AVG]:.3f}" if r and VAL_AVG in r.metrics else ""
        rows.append((row.trial_id, row.method, state, f"{step}/{row.steps}" if row.steps else str(step), acc))
    return rows


def plain_table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns, as wide as their widest cell, no cell cut: a big sweep's status table."""
    widths = [max(len(str(v)) for v in column) for column in zip(header, *rows)]

    def line(cells) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([title, line(header), line(["-" * w for w in widths]), *map(line, rows)])
