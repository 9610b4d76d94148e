"""What `sweep eval TARGET` evaluates, and where its numbers go in MLflow.

TARGET is tried, in this order, as:

1. a checkpoint directory (Hugging Face model, local-trainer checkpoint, verl checkpoint): its own
   run in the MLflow experiment ``eval`` (found again by the tag ``eval_target`` on a re-run);
2. a sweep spec (a path, or a name in configs/sweeps/) whose experiment exists: every trial of it;
   the spec's ``eval:`` section gives the protocol's defaults;
3. a sweep name (an MLflow experiment of the store): every trial run of it;
4. a trial id: the trial run tagged ``trial_id=TARGET`` (``--sweep`` when several sweeps have one).

FAILED trials are skipped (the tables leave them out too). A trial is evaluated at its newest
checkpoint (``<run dir>/<sweep>/ray_results/*/<trial>/checkpoint_*``), its metrics go into its own
run at that checkpoint's step, and its result files live in
``<run dir>/<sweep>/trials/<trial>/eval/step_<N>/<protocol hash>/``; a bare checkpoint's in
``<run dir>/eval/<name>-<hash of its path>/step_<N>/<protocol hash>/``.

``log_eval`` writes one evaluation into a run: the metrics and a tag ``eval_logged/...`` in one
``log_batch`` (one transaction), then the per-problem files as artifacts ``eval/step_<N>/`` (the compact
verdicts as ``verdicts/eval/step_<N>.json``, contract.metrics.verdicts_artifact); a run
that already has the tag is skipped, so a re-run never logs twice.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from contract.env import MLFLOW_ARTIFACTS_PROGRESS
from contract.errors import InputError
from contract.metrics import EVAL_PROTOCOL_TAG, eval_artifacts, verdicts_artifact
from contract.run_layout import STEP_FILE, TRIAL_FILE, RunLayout, checkpoint_candidates
from evaluators.eval_config import EvalConfig
from tracking_store.roles import EVAL, EVAL_TARGET_TAG, TRIAL, eval_tags, role_filter
from trial_eval.eval_run import VERDICTS_FILE, EvalTarget

EVAL_EXPERIMENT = "eval"


ACCEPTED = ("a checkpoint directory (a Hugging Face model, a local-trainer or verl checkpoint), a sweep spec "
            "(a YAML path or a name in configs/sweeps/), or a sweep name or trial id of the MLflow store")
"""What `sweep eval TARGET` takes, as its errors say it."""


class TargetError(InputError):
    """TARGET is none of the accepted forms; the message lists what was tried."""


def without_store(target: str, store: str) -> str | None:
    """Why TARGET cannot be evaluated while there is no MLflow store (``store``: where it was looked for), said
    about the path first: a file that is not a spec, a path or a name that does not exist. None for a spec (it is
    a sweep: the missing store is its error)."""
    from sweeps.specs.load import SpecError, resolve_spec_path

    path = Path(target)
    if path.is_dir():
        return None
    if path.exists() and path.suffix.lower() not in (".yaml", ".yml"):
        return f"{target}: a file, not a checkpoint directory; sweep eval TARGET takes {ACCEPTED}"
    try:
        resolve_spec_path(target)
        return None
    except SpecError:
        pass
    if len(path.parts) > 1 or target.startswith((".", "~")):
        return (f"{target}: no such checkpoint directory ({path.absolute()} does not exist); sweep eval TARGET "
                f"takes {ACCEPTED}")
    return (f"{target}: no such checkpoint directory ({path.absolute()} does not exist), no sweep spec of that name, "
            f"and no MLflow store at {store} to look up a sweep or trial of that name; sweep eval TARGET takes "
            f"{ACCEPTED} (a store elsewhere: --tracking-uri URI or --run-dir DIR)")


@dataclass
class Resolved:
    targets: list[EvalTarget]
    """What to evaluate, in order."""
    sweep: str | None
    """The sweep (MLflow experiment) of trial targets; None for a bare checkpoint."""
    spec_eval: EvalConfig | None = None
    """The spec's `eval:` section when TARGET named a spec that has one."""
    skipped: list[str] | None = None
    """Trials without any checkpoint, with the reason."""


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)[:80]


def checkpoint_target(path: Path, run_dir: Path) -> EvalTarget:
    from trial_eval.checkpoints import checkpoint_kind

    path = Path(path).resolve()
    checkpoint_kind(path)  # raises CheckpointNotUsable with what was expected
    step_file = path / STEP_FILE
    step = int(step_file.read_text().strip()) if step_file.is_file() else 0
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    return EvalTarget(path.name, path, step, RunLayout(run_dir).checkpoint_eval_dir(f"{_safe(path.name)}-{digest}", step))


def trial_target(client, run, run_dir: Path, sweep: str) -> EvalTarget | str:
    """The newest checkpoint of a trial run, or the reason there is none."""
    trial_id = run.data.tags["trial_id"]
    layout = RunLayout(run_dir).sweep(sweep)
    found = checkpoint_candidates(layout.ray_results, trial_id, max_step=10**12, keep=1)
    if not found:
        return f"{trial_id}: no checkpoint under {layout.ray_results}"
    step = int((found[0] / STEP_FILE).read_text().strip())
    config = None if (found[0] / TRIAL_FILE).is_file() else _logged_config(client, run, run_dir)
    return EvalTarget(trial_id, found[0], step, layout.trial_eval_dir(trial_id, step), config, run.info.run_id)


def _logged_config(client, run, run_dir: Path):
    """The trial config the sweep logged with the run (checkpoints from before trial.json), or None."""
    import yaml

    from trainers.config import TrialConfig

    MLFLOW_ARTIFACTS_PROGRESS.set_default("false")
    out = RunLayout(run_dir).eval_download(run.info.run_id)
    out.mkdir(parents=True, exist_ok=True)
    try:
        text = Path(client.download_artifacts(run.info.run_id, "config/trial.yaml", str(out))).read_text()
        return TrialConfig.from_dict(yaml.safe_load(text), f"{run.data.tags.get('trial_id')} config/trial.yaml")
    except Exception:  # noqa: BLE001 - without it a local checkpoint says what is missing when it is used
        return None


def _trial_runs(client, experiment_id: str) -> list:
    runs = client.search_runs([experiment_id], role_filter(TRIAL), max_results=50_000)
    return sorted(runs, key=lambda r: r.data.tags.get("trial_id", ""))


def resolve(target: str, client, run_dir: Path, sweep: str | None = None,
            spec_overrides: list[str] | None = None) -> Resolved:
    """TARGET -> Resolved (see the module docstring); raises TargetError listing what was tried."""
    path = Path(target)
    if path.is_dir():
        return Resolved([checkpoint_target(path, run_dir)], None)
    tried = [f"a checkpoint directory ({path} does not exist)"]

    spec_eval, sweep_name = None, None
    if not sweep:  # --sweep names the sweep of a trial id: no spec lookup then
        from sweeps.specs.load import SpecError, load_spec, resolve_spec_path

        try:
            spec_path = resolve_spec_path(target)
        except SpecError:
            tried.append("a sweep spec (no such file in the cwd or configs/sweeps/)")
        else:
            spec = load_spec(spec_path, spec_overrides or [])  # a bad spec is an error of its own
            sweep_name, spec_eval = spec.name, spec.eval
    if sweep_name is None and client.get_experiment_by_name(target) is not None:
        sweep_name = target
    if sweep_name is not None:
        exp = client.get_experiment_by_name(sweep_name)
        if exp is None:
            raise TargetError(f"{target}: sweep '{sweep_name}' has no MLflow experiment at {client.tracking_uri}; "
                              "run it first (sweep run), or pass --tracking-uri / --run-dir of its store")
        targets, skipped = [], []
        for run in _trial_runs(client, exp.experiment_id):
            if run.info.status == "FAILED":  # left out of the tables too
                skipped.append(f"{run.data.tags['trial_id']}: FAILED ({run.data.tags.get('failure_reason', '')[:200]})")
                continue
            got = trial_target(client, run, run_dir, sweep_name)
            (skipped if isinstance(got, str) else targets).append(got)
        if not targets:
            raise TargetError(f"{target}: no trial of sweep '{sweep_name}' has a checkpoint ({'; '.join(skipped[:5])})")
        return Resolved(targets, sweep_name, spec_eval, skipped)
    tried.append("a sweep name (no MLflow experiment of that name)")

    filt = f"tags.trial_id = '{target}'" if "'" not in target else None
    if filt:
        experiments = [e for e in client.search_experiments() if sweep in (None, e.name)]
        runs = client.search_runs([e.experiment_id for e in experiments], filt, max_results=100) if experiments else []
        sweeps = sorted({client.get_experiment(r.info.experiment_id).name for r in runs})
        if len(sweeps) > 1:
            raise TargetError(f"{target}: trial id found in several sweeps {sweeps}; pass --sweep NAME")
        if runs:
            name = sweeps[0]
            got = trial_target(client, runs[0], run_dir, name)
            if isinstance(got, str):
                raise TargetError(got)
            return Resolved([got], name)
    tried.append(f"a trial id (no run tagged trial_id={target!r}{f' in sweep {sweep!r}' if sweep else ''})")
    raise TargetError(f"{target}: not found as " + "; nor as ".join(tried) + f" (MLflow store {client.tracking_uri})")


def eval_run_for(client, target: EvalTarget) -> str:
    """The run a bare checkpoint's metrics go to: found by its tag, else created."""
    exp = client.get_experiment_by_name(EVAL_EXPERIMENT)
    exp_id = exp.experiment_id if exp else client.create_experiment(EVAL_EXPERIMENT)
    path = str(Path(target.checkpoint).resolve())
    for run in client.search_runs([exp_id], role_filter(EVAL), max_results=50_000):
        if run.data.tags.get(EVAL_TARGET_TAG) == path:
            return run.info.run_id
    run = client.create_run(exp_id, run_name=target.label, tags=eval_tags(path))
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id


def log_eval(client, run_id: str, step: int, metrics: dict[str, float], files: list[Path], protocol: str) -> list[str]:
    """Log an evaluation's benchmarks into `run_id`, skipping those already logged there at this step
    under this protocol (tag ``eval_logged/step_<N>/<protocol>/<benchmark>``); returns the benchmarks
    logged now. Artifacts go first, then each benchmark's metrics with its tag in one ``log_batch``
    (one transaction): a crash in between leaves the benchmark unmarked, so a re-run logs it."""
    import time

    from mlflow.entities import Metric, RunTag

    from trial_eval.eval_run import AVG_KEY

    tags = client.get_run(run_id).data.tags
    by_bench: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        if key != AVG_KEY:
            by_bench.setdefault(key.split("/")[1], {})[key] = value
    marker = {b: f"eval_logged/step_{step}/{protocol}/{b}" for b in by_bench}
    new = [b for b in by_bench if marker[b] not in tags]
    if not new:
        return []
    for f in files:
        if Path(f).name == VERDICTS_FILE and Path(f).is_file():  # where the paired statistics look for them
            client.log_text(run_id, Path(f).read_text(encoding="utf-8"), verdicts_artifact("eval", step))
        elif Path(f).is_file() and (Path(f).stem in new or Path(f).suffix != ".jsonl"):
            client.log_artifact(run_id, str(f), eval_artifacts(step))
    now = int(time.time() * 1000)
    for i, bench in enumerate(new):
        values = dict(by_bench[bench])
        if i == len(new) - 1 and AVG_KEY in metrics:
            values[AVG_KEY] = metrics[AVG_KEY]
        client.log_batch(run_id, metrics=[Metric(k, float(v), now, step) for k, v in sorted(values.items())],
                         tags=[RunTag(marker[bench], "1"), RunTag(EVAL_PROTOCOL_TAG, protocol)])
    return new


def recopy_runs(client, run_ids: list[str]) -> int:
    """The sweep trial runs an evaluation logged into, copied again into their sweep's read copy
    (tracking_store/read_copy.py: a run changed after it ended), with the histories the sweep's recorded report
    reads; a sweep without a copy is left alone. Returns the number of runs copied."""
    from dashboards.collect.recorded_spec import recorded_report_section, recorded_spec
    from dashboards.model.report import ReportConfig, history_keys
    from tracking_store.read_copy import append_segment
    from tracking_store.roles import PARENT_RUN_TAG, ROLE_TAG

    by_parent: dict[tuple[str, str], list[str]] = {}
    for run_id in dict.fromkeys(run_ids):
        run = client.get_run(run_id)
        parent_id = run.data.tags.get(PARENT_RUN_TAG)
        if parent_id and run.data.tags.get(ROLE_TAG) == TRIAL:
            by_parent.setdefault((run.info.experiment_id, parent_id), []).append(run_id)
    copied = 0
    for (exp_id, parent_id), ids in by_parent.items():
        section, _ = recorded_report_section(recorded_spec(client, parent_id))
        cfg = ReportConfig.from_dict(section or {})
        copied += append_segment(client, client.tracking_uri, exp_id, parent_id,
                                 lambda logged, cfg=cfg: history_keys(cfg, logged), run_ids=ids)
    return copied
