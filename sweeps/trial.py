"""The Ray Tune trial function and the payload it carries; imported by Ray workers.

Kept light on purpose (no MLflow, no rich): every worker process imports this module.

A Tune function trainable reports synchronously (the training thread waits in
``tune.report`` until the driver has handled the result), so a trial does not report every
step: it buffers steps and sends them at most every ``report_interval_s`` seconds, at every
checkpoint and at the end. Each result carries the latest step's metrics (for Tune, ASHA and
the progress table) and, under ``steps``, every buffered step with its own wall-clock time,
which the driver logs to MLflow one by one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from sweeps.spec import Trial, search_trial

STEP_FILE = "STEP"  # written into every checkpoint directory: the step it holds


def trial_payload(trial: Trial, resume_from: Path | None, scratch: Path, report_interval_s: float = 1.0) -> dict:
    """What a Tune trial carries: the resolved config (plain data), where to resume from, how often to report."""
    return {"trial_id": trial.trial_id, "config_id": trial.config_id, "method": trial.method, "variant": trial.variant,
            "config": trial.config.to_dict(), "scratch_dir": str(scratch),
            "resume_from": str(resume_from) if resume_from else None, "report_interval_s": report_interval_s}


def unpack_steps(result: dict) -> list[tuple[int, float, dict]]:
    """(step, wall-clock time, metrics) of every step a trial's result carries, in order."""
    return [(int(s["step"]), float(s["time"]), s["metrics"]) for s in json.loads(result.get("steps", "[]"))]


def trial_from_tune_config(config: dict) -> Trial:
    """The Trial of a Tune config: the payload's trial, or (Optuna search) its template + sampled values."""
    from trainers.config import TrialConfig

    p = config["trial"]
    trial = Trial(p["trial_id"], p["config_id"], p["method"], p["variant"], TrialConfig.from_dict(p["config"], p["trial_id"]))
    return search_trial(trial, config["search"]) if config.get("search") else trial


def _checkpoint_step(directory: Path | None) -> int:
    if directory is None or not (directory / STEP_FILE).is_file():
        return 0
    return int((directory / STEP_FILE).read_text().strip())


def run_trial(config: dict) -> None:
    """Ray Tune function trainable: one trial of the configured backend."""
    import ray
    from ray import tune

    from trainers.api import get_trainer

    payload = config["trial"]
    cfg = trial_from_tune_config(config).config
    scratch = Path(tempfile.mkdtemp(prefix="trial-", dir=payload["scratch_dir"]))
    resume = None
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:  # a retry after a crash, within this run
        resume = Path(checkpoint.to_directory(str(scratch / "resume")))
    elif payload.get("resume_from") and Path(payload["resume_from"]).is_dir():  # an earlier run of the sweep
        resume = Path(payload["resume_from"])
    meta = {"node_id": ray.get_runtime_context().get_node_id(), "gpu_ids": ",".join(map(str, ray.get_gpu_ids())),
            "pid": os.getpid(), "resumed_from": _checkpoint_step(resume)}
    last_val: dict[str, float] = {}
    interval = float(payload.get("report_interval_s", 0.0))
    pending: list[dict] = []  # steps not yet sent to the driver
    last_sent = [float("-inf")]  # the first result goes out at once (tags, progress)

    def send(step: int, metrics: dict, checkpoint_dir: Path | None) -> None:
        result = {**metrics, **last_val, "step": step, "meta": json.dumps(meta),
                  "checkpointed": checkpoint_dir is not None, "steps": json.dumps(pending)}
        pending.clear()
        last_sent[0] = time.monotonic()
        if checkpoint_dir is None:
            tune.report(result)
            return
        (Path(checkpoint_dir) / STEP_FILE).write_text(str(step))
        tune.report(result, checkpoint=tune.Checkpoint.from_directory(str(checkpoint_dir)))
        shutil.rmtree(checkpoint_dir, ignore_errors=True)  # Tune keeps its persisted copy

    def report(step: int, metrics: dict, checkpoint_dir: Path | None) -> None:
        last_val.update({f"last/{k}": v for k, v in metrics.items() if k.startswith("val/")})
        pending.append({"step": step, "time": time.time(), "metrics": metrics})
        if checkpoint_dir is not None or time.monotonic() - last_sent[0] >= interval:
            send(step, metrics, checkpoint_dir)

    try:
        final = get_trainer(cfg.backend)(cfg, report, resume_from=resume, workdir=scratch / "checkpoints",
                                         log=lambda s: None)
        if pending:  # a backend that ended without a final checkpoint
            send(pending[-1]["step"], final or pending[-1]["metrics"], None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
