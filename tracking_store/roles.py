"""The runs of a sweep in a tracking store, and how they are found: the one declaration of their roles and tags.

    from tracking_store.roles import PARENT, TRIAL, has_role, parent_tags, role_filter, trial_tags
    client.create_run(exp_id, run_name=sweep, tags=parent_tags(sweep))
    client.search_runs([exp_id], role_filter(TRIAL))          # "tags.role = 'trial'"

A sweep is an experiment named after it. Its runs carry a ``role`` tag:

    parent   one per sweep: the spec, the provenance, the report, the driver's lease
    trial    one per trial, nested under the parent (``mlflow.parentRunId``), tagged with its trial id, method,
             config, seed, model and backend
    eval     one per checkpoint that `sweep eval` evaluated outside a trial (tag ``eval_target``: its path)

Every writer (the driver, `sweep eval`, the synthetic stores of tests and benchmarks) and every reader (`sweep
status`, `sweep report`, `sweep ui`, the sqlite table reads) takes these names from here;
tests/test_tracking_store.py fails when a filter or a role tag is spelled out anywhere else.
"""

from __future__ import annotations

ROLE_TAG = "role"
PARENT, TRIAL, EVAL = "parent", "trial", "eval"
ROLES = (PARENT, TRIAL, EVAL)
SWEEP_TAG = "sweep"
TRIAL_ID_TAG = "trial_id"
EVAL_TARGET_TAG = "eval_target"
PARENT_RUN_TAG = "mlflow.parentRunId"  # MLflow's own nesting tag


def role_filter(role: str) -> str:
    """The search filter of a role's runs: ``tags.role = 'trial'``."""
    if role not in ROLES:
        raise ValueError(f"role: expected one of {', '.join(ROLES)}, got {role!r}")
    return f"tags.{ROLE_TAG} = '{role}'"


def children_filter(parent_run_id: str) -> str:
    """The search filter of the runs nested under ``parent_run_id``."""
    return f"tags.`{PARENT_RUN_TAG}` = '{parent_run_id}'"


def has_role(tags: dict, role: str) -> bool:
    return tags.get(ROLE_TAG) == role


def parent_tags(sweep: str) -> dict[str, str]:
    """The tags a sweep's parent run is created with."""
    return {ROLE_TAG: PARENT, SWEEP_TAG: sweep}


def trial_tags(sweep: str, parent_run_id: str, trial_id: str, **tags: str) -> dict[str, str]:
    """The tags a trial run is created with: its role, its sweep and parent, its id, then ``tags`` (method, ...)."""
    return {PARENT_RUN_TAG: parent_run_id, ROLE_TAG: TRIAL, SWEEP_TAG: sweep, TRIAL_ID_TAG: trial_id, **tags}


def eval_tags(target: str) -> dict[str, str]:
    """The tags an evaluation run of a checkpoint outside any trial is created with."""
    return {ROLE_TAG: EVAL, EVAL_TARGET_TAG: target}
