"""What `sweep status NAME` shows: a sweep's trials as its store records them, and those not started yet.

    runs, parent = recorded_trials(client, uri, "dhpo_vs_baselines")   # trial id -> run; StoreMissing if none
    rows = planned_from_store(client, parent, runs)                    # every trial of the last run's spec

The plan comes from the parent run's ``spec/resolved.json`` (or ``.yaml``: every trial id and config of the spec as last
run, overrides included: sweeps/tracking.py writes it), so a name is enough; trials recorded but no longer
in the spec are shown too. Nothing is written to the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from dashboards.recorded_spec import recorded_spec
from sweeps.store import sweep_experiment, trial_runs

PLAIN_ROWS = 200
"""Above this many trials the table is printed as plain aligned text: rich measures and wraps every cell
(~6 s for 2,000 trials on a 2-core machine), plain text takes milliseconds."""


@dataclass
class StatusRow:
    trial_id: str
    method: str
    steps: int | None  # the trial's planned steps (None: unknown)


def recorded_trials(client, uri: str, sweep: str) -> tuple[dict[str, object], object | None]:
    """The sweep's trial runs by trial id and its parent run (None before one exists)."""
    exp = sweep_experiment(client, uri, sweep)
    parents = client.search_runs([exp.experiment_id], "tags.role = 'parent'", max_results=1,
                                 order_by=["attributes.start_time ASC"])
    return trial_runs(client, exp.experiment_id), (parents[0] if parents else None)


def planned_from_store(client, parent, runs: dict[str, object]) -> list[StatusRow]:
    """Every trial of the resolved spec on ``parent`` (in spec order), then recorded trials not in it."""
    resolved = recorded_spec(client, parent.info.run_id) if parent is not None else {}
    rows = []
    for tid, config in (resolved.get("trials") or {}).items():
        run = runs.get(tid)
        method = run.data.tags.get("method") if run else None
        rows.append(StatusRow(tid, method or str((config.get("algorithm") or {}).get("name", "")),
                              int((config.get("trainer") or {}).get("steps", 0)) or None))
    for tid in sorted(runs.keys() - {r.trial_id for r in rows}):
        run = runs[tid]
        steps = run.data.params.get("trainer.steps")
        rows.append(StatusRow(tid, run.data.tags.get("method", ""), int(steps) if steps and steps.isdigit() else None))
    return rows


def plain_table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Left-aligned columns, as wide as their widest cell, no cell cut: a big sweep's status table."""
    widths = [max(len(str(v)) for v in column) for column in zip(header, *rows)]

    def line(cells) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([title, line(header), line(["-" * w for w in widths]), *map(line, rows)])
