"""The MLflow UI pages of a sweep: its saved views (ids, tags, filters) and the URLs that open them.

    runs_page_url(server, experiment_id, tags)     # the sweep's trials table (its saved view when recorded)
    curves_page_url(server, experiment_id, tags)   # its curves, grouped by method, in chart mode
    grid_page_url(server, experiment_id, tags)     # a grid's parallel coordinates (None: not a grid)
    run_page_url(server, experiment_id, run_id)

sweeps/ui/views.py writes the views; sweeps/ui/server.py prints and opens the pages.
"""

from __future__ import annotations

from urllib.parse import urlencode

from tracking_store.roles import TRIAL, role_filter

VIEW_ID = "sweep-trials"  # the experiment's saved view of the trial runs (sweeps/tracking/sweep_runs.py writes it)
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_ID}"  # where the MLflow UI keeps a saved view (experiment tag)
CURVES_VIEW_ID = "sweep-curves"  # the saved view of the curves, grouped by method (sweeps/ui/views.py)
CURVES_VIEW_TAG = f"mlflow.sharedViewState.{CURVES_VIEW_ID}"
GRID_VIEW_ID = "sweep-grid"  # a grid's saved view: its parallel coordinates (sweeps/ui/views.py)
GRID_VIEW_TAG = f"mlflow.sharedViewState.{GRID_VIEW_ID}"
TRIALS_FILTER = role_filter(TRIAL)
CURVES_FILTER = f"{TRIALS_FILTER} and attributes.status != 'FAILED'"
"""The curves view's runs: FAILED trials are left out of its means and bands, as the table and the report's figures leave them out."""
BY_RUN_NAME = "tags.`mlflow.runName`"  # the UI's sort key of the Run Name column


def runs_page_url(server: str, experiment_id: str, tags: dict[str, str] | None = None) -> str:
    """The MLflow UI page of a sweep's trial runs: the saved trials view when the experiment has it
    (sweeps recorded before it was introduced: the same filter and sort, default columns)."""
    return _runs_page(server, experiment_id, VIEW_ID if VIEW_TAG in (tags or {}) else None)


def curves_page_url(server: str, experiment_id: str, tags: dict[str, str] | None = None) -> str:
    """The MLflow UI page of a sweep's curves: the saved curves view (grouped by method) in chart mode, which
    is the URL's ``compareRunsMode`` (a saved view cannot set it); sweeps recorded before the view: the trial
    runs' default charts."""
    return _runs_page(server, experiment_id, CURVES_VIEW_ID if CURVES_VIEW_TAG in (tags or {}) else None,
                      compareRunsMode="CHART")


def grid_page_url(server: str, experiment_id: str, tags: dict[str, str] | None = None) -> str | None:
    """The MLflow UI page of a grid's parallel coordinates (its saved view, chart mode); None for a sweep
    that is not a grid (no such view)."""
    if GRID_VIEW_TAG not in (tags or {}):
        return None
    return _runs_page(server, experiment_id, GRID_VIEW_ID, compareRunsMode="CHART")


def _runs_page(server: str, experiment_id: str, view: str | None, **extra: str) -> str:
    query = {"viewStateShareKey": view} if view else \
        {"searchFilter": TRIALS_FILTER, "orderByKey": BY_RUN_NAME, "orderByAsc": "true"}
    query.update(extra)
    query["workflowType"] = "machine_learning"  # the "Model training" side of the UI (landing tab: runs)
    return f"{server.rstrip('/')}/#/experiments/{experiment_id}/runs?{urlencode(query)}"


def run_page_url(server: str, experiment_id: str, run_id: str) -> str:
    return f"{server.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}?workflowType=machine_learning"
