"""`sweep status SWEEP`: each trial of a sweep with its method, MLflow state, last step and val/avg/acc.

    sweep status dhpo_vs_baselines                       # by the sweep's name (its MLflow experiment)
    sweep status my.yaml trainer.steps=50                # by its spec and the overrides it ran with
    sweep status dhpo_vs_baselines --smoke               # the smoke sweep: dhpo_vs_baselines_smoke
    sweep status big_grid --tracking-uri http://mlflow:5000

A sweep run by `sweep slurm` also shows its job and the job's state (squeue, else sacct, where they are on the PATH).

The store is never created: a missing one is exit 2 naming where it was looked for (sweeps/tracking/status.py reads it).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sweeps.commands.options import Direct, StoreOptions, fail, grouped
from sweeps.commands.spec_input import load_user_spec, names_spec, smoke_name

console = Console()


@grouped
def status(
    sweep: Annotated[str, typer.Argument(help="Sweep name (its MLflow experiment), or its YAML path or name in configs/sweeps/.")],
    overrides: Annotated[Optional[list[str]], typer.Argument(help="With a YAML: the overrides the sweep was run with.")] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="The smoke-size sweep (sweep run --smoke): SWEEP_smoke.")] = False,
    store: StoreOptions = StoreOptions(),
    direct: Direct = False,
) -> None:
    """Show each trial of a sweep with its method, MLflow state, last logged step and val/avg/acc.

    SWEEP is a name looked up in the store (trials not started yet come from the last run's spec), or a YAML.

    The store is never created: a missing one is an error naming where it was looked for.
    """
    from sweeps.tracking.status import (PLAIN_ROWS, STATUS_HEADER, StatusRow, plain_table, planned_from_store,
                                        recorded_trials, status_cells)
    from tracking_store.client import StoreMissing
    from tracking_store.uri import mask_uri, resolve_uri

    loaded = load_user_spec(sweep, overrides or [], smoke) if names_spec(sweep, overrides, smoke) else None
    name = loaded.name if loaded else smoke_name(sweep) if smoke else sweep
    uri = resolve_uri(store.tracking_uri, store.run_dir)
    try:
        runs, parent, resolved = recorded_trials(uri, name, read="direct" if direct else "auto")
        planned = ([StatusRow(t.trial_id, t.method, t.config.trainer.steps) for t in loaded.trials] if loaded
                   else planned_from_store(resolved, runs))
    except StoreMissing as err:
        raise fail(f"error: {err}") from None
    except (RuntimeError, ValueError) as err:  # several runs of one trial; a file that is not a store
        raise fail(f"error: {mask_uri(str(err))}") from None
    rows, title = status_cells(planned, runs), f"{name} ({mask_uri(uri)})"
    if len(rows) > PLAIN_ROWS:
        print(plain_table(title, STATUS_HEADER, rows))
    else:
        table = Table(title=title)
        for col in STATUS_HEADER:
            table.add_column(col, no_wrap=col == "trial id")
        for cells in rows:
            table.add_row(*map(Text, cells))
        console.print(table)
    if parent is not None:
        _slurm_line(parent.tags)


def _slurm_line(parent_tags: dict[str, str]) -> None:
    """The Slurm job of the sweep's last run and its state, for a sweep run by `sweep slurm`."""
    from sweeps.tracking.provenance import SLURM_JOB_TAG

    job = parent_tags.get(SLURM_JOB_TAG, "")
    if not job.isdigit():
        return
    from sweeps.slurm.queue import job_state

    state = job_state(job)
    print(f"Slurm job {job}: {state or 'not known to squeue or sacct here'}", flush=True)
