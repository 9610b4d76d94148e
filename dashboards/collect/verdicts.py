"""The per-problem verdicts behind a sweep table's cells, read from the trials' MLflow artifacts.

    from dashboards.collect.verdicts import problem_frame
    problems = problem_frame(data, picks, cfg)   # long: model, method, config, seed, benchmark, problem, value
                                                 # None when the table's metric has no per-problem form

`picks` names the evaluation behind each value of the table: (run_id, model, method, config, seed, step),
the base row's as method = config = cfg.base at step 0. A value is the share of the problem's samples
judged correct, so a (seed, benchmark)'s mean over problems is the logged Avg@k. Verdicts exist for
the accuracy metrics (val/{benchmark}/acc: the artifact verdicts/val/step_<N>.json; eval/{benchmark}/
avg_at_k: verdicts/eval/step_<N>.json); runs recorded before verdicts were stored have none, and their
cells are left to the tests over seeds. Artifacts are fetched in parallel, each (run, step) once.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from contract.env import MLFLOW_ARTIFACTS_PROGRESS
from contract.metrics import VAL_TEMPLATE, eval_key, verdicts_artifact
from evaluators.verdicts import loads
from tracking_store.client import open_existing
from tracking_store.tables import local_artifact_dir

COLUMNS = ["model", "method", "config", "seed", "benchmark", "problem", "value"]


def verdict_family(metric: str) -> str | None:
    """'val' or 'eval' for a table metric with per-problem verdicts, else None (pass@k, maj@k, others)."""
    if metric == VAL_TEMPLATE:
        return "val"
    if metric == eval_key("{benchmark}", "avg_at_k"):
        return "eval"
    return None


def _fetch(client, run_id: str, path: str, scratch: str, artifact_uri: str | None = None) -> str | None:
    local_root = local_artifact_dir(artifact_uri)
    if local_root is not None:  # read in place: no MLflow download per file
        try:
            return (local_root / path).read_text(encoding="utf-8")
        except OSError:
            return None
    try:
        Path(scratch).mkdir(parents=True, exist_ok=True)
        local = client.download_artifacts(run_id, path, scratch)
    except Exception:  # noqa: BLE001 - not recorded (an older run) or unreadable: the cell falls back
        return None
    try:
        return Path(local).read_text(encoding="utf-8")
    except OSError:
        return None


def fetch_verdicts(client, wanted: list[tuple[str, int]], family: str, workers: int = 8,
                   artifact_uris: dict[str, str] | None = None) -> dict[tuple[str, int], dict]:
    """{(run_id, step): {benchmark: BenchmarkVerdicts}} of the (run, step) pairs that have them (MLflow's
    per-download progress bar off unless the user set MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR). A run whose
    ``artifact_uris`` entry is a local directory is read there, without a download."""
    artifact_uris = artifact_uris or {}
    if not MLFLOW_ARTIFACTS_PROGRESS.is_set():
        MLFLOW_ARTIFACTS_PROGRESS.set("false")
    out: dict[tuple[str, int], dict] = {}
    with tempfile.TemporaryDirectory(prefix="verdicts-") as scratch:
        def one(pair):
            run_id, step = pair
            sub = Path(scratch) / f"{run_id}-{step}"  # made only for a download (_fetch)
            return pair, _fetch(client, run_id, verdicts_artifact(family, step), str(sub), artifact_uris.get(run_id))

        with ThreadPoolExecutor(max_workers=workers) as pool:
            for pair, text in pool.map(one, list(dict.fromkeys(wanted))):
                if text is None:
                    continue
                try:
                    out[pair] = loads(text)
                except (ValueError, KeyError, TypeError):
                    continue
    return out


def problem_frame(data, picks: pd.DataFrame, metric: str, benchmarks: list[str] | None = None) -> pd.DataFrame | None:
    """The long per-problem frame of `picks` (see the module docstring); None without a verdict family."""
    family = verdict_family(metric)
    if family is None or picks.empty:
        return None
    wanted = [(str(r), int(s)) for r, s in zip(picks["run_id"], picks["step"])]
    uris = dict(zip(data.trials["run_id"], data.trials["artifact_uri"])) if "artifact_uri" in data.trials else {}
    remote = any(local_artifact_dir(uris.get(run_id)) is None for run_id, _ in wanted)
    found = fetch_verdicts(open_existing(data.tracking_uri) if remote else None, wanted, family, artifact_uris=uris)
    columns: dict[str, list] = {c: [] for c in COLUMNS}
    for pick, key in zip(picks.itertuples(index=False), wanted):
        for bench, v in (found.get(key) or {}).items():
            if benchmarks is not None and bench not in benchmarks:
                continue
            n = len(v.ids)
            for col, value in (("model", pick.model), ("method", pick.method), ("config", pick.config),
                               ("seed", pick.seed), ("benchmark", bench)):
                columns[col].extend([value] * n)
            columns["problem"].extend(v.ids)
            columns["value"].extend(v.fractions)
    return pd.DataFrame(columns) if columns["value"] else pd.DataFrame(columns=COLUMNS)
