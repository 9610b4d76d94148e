"""The Ray Tune trial function and the payload it carries; imported by Ray workers.

Kept light on purpose (no MLflow, no rich): every worker process imports this module.

A Tune function trainable reports synchronously (the training thread waits in
``tune.report`` until the driver has handled the result), so a trial does not report every
step: it buffers steps and sends them at most every ``report_interval_s`` seconds, at every
checkpoint and at the end. Each result carries the latest step's metrics (for Tune, ASHA and
the progress table) and, under ``steps``, every buffered step with its own wall-clock time,
which the driver logs to MLflow one by one.

Every reported checkpoint directory also holds ``STEP`` (its step) and ``trial.json`` (the trial
config), so it can be evaluated on its own later (`sweep eval DIR`).

With an ``eval`` protocol in the payload (the spec's ``eval:`` section), a trial that trained to its
last step evaluates its final checkpoint (trial_eval/eval_run.py: results under
``<sweep dir>/trials/<id>/eval/``, skipped benchmarks already done), with ``base: true`` also its
base policy (once per base for the sweep, under ``<sweep dir>/base_eval/``, logged at step 0), and
sends one more result carrying ``eval`` (a list of {step, metrics, files}) for the driver to log. A trial whose
backend places its own GPUs (verl: trainers/backends.py ``slot_holds_gpus``) runs a GPU-only generator (vllm:
evaluators/generators.py ``needs_gpu``) as a
Ray task holding ``tensor_parallel_size`` GPUs (its own slot holds CPUs only).

Three ways a trial ends that are not a crash:
* A stop rule of the spec fires (sweeps/specs/stop_rules.py): the step is sent carrying ``stopped_by`` (the
  rule and step), the backend is ended by the exception out of its report call, and the trial ends
  FINISHED; the driver tags the run.
* ``TrainingDiverged`` from the backend (a non-finite loss or gradient): the trial sends a last
  result carrying ``diverged`` (the reason) and returns, so Tune does not retry it (a retry from
  the last checkpoint would diverge again); the driver marks it FAILED with that reason.
* A stall: a watchdog thread ends the worker process when the backend has not reported a step for
  ``stall_timeout_s``; it leaves the reason in ``<scratch>/<trial id>.stalled`` for the driver, and
  Tune retries the trial from its last checkpoint like any crashed worker.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from contract.metrics import VAL, last_key
from contract.run_layout import ATTEMPT_PREFIX, STEP_FILE, TRIAL_FILE, SweepLayout
from sweeps.specs.load import Trial, search_trial
from sweeps.specs.stop_rules import StopMonitor, StopRule, TrialStopped


def trial_payload(trial: Trial, resume_from: list[Path], scratch: Path, report_interval_s: float = 1.0,
                  stall_timeout_s: float = 0.0, eval_protocol: dict | None = None, stop: list | None = None) -> dict:
    """What a Tune trial carries: the resolved config (plain data), the checkpoints to resume from
    (newest first: an unreadable one falls back to the next), how often to report, the stall limit,
    the evaluation protocol to run on the final checkpoint (None: none) and the stop rules."""
    return {"trial_id": trial.trial_id, "config_id": trial.config_id, "method": trial.method, "variant": trial.variant,
            "config": trial.config.to_dict(), "scratch_dir": str(scratch),
            "resume_from": [str(p) for p in resume_from], "report_interval_s": report_interval_s,
            "stall_timeout_s": stall_timeout_s, "eval": eval_protocol,
            "stop": [dataclasses.asdict(rule) for rule in stop or []]}


def unpack_steps(result: dict) -> list[tuple[int, float, dict, str | None]]:
    """(step, wall-clock time, metrics, verdicts document or None) of every step a trial's result carries,
    in order; an evaluation's step carries its per-problem verdicts (evaluators/verdicts.py)."""
    return [(int(s["step"]), float(s["time"]), s["metrics"], s.get("verdicts"))
            for s in json.loads(result.get("steps", "[]"))]


TRIAL_ID = "trial_id"
"""The key of a grid trial's Tune config: its trial id alone (the payloads reach run_trial through
``tune.with_parameters``). An Optuna sample's config carries the template payload under ``trial`` and
the sampled values under ``search``."""


def trial_id_of(config: dict) -> str:
    """The trial id of a Tune config, without building its config: a grid trial's, or for an Optuna
    sample the id `search_trial` gives it (that needs the sampled config)."""
    return config[TRIAL_ID] if TRIAL_ID in config else trial_from_tune_config(config).trial_id


def trial_from_tune_config(config: dict, payload: dict | None = None) -> Trial:
    """The Trial of a Tune config: its payload's trial (``payload``, else the config's own), or (Optuna
    search) its template + sampled values."""
    from trainers.config import TrialConfig

    p = payload or config["trial"]
    trial = Trial(p["trial_id"], p["config_id"], p["method"], p["variant"], TrialConfig.from_dict(p["config"], p["trial_id"]))
    return search_trial(trial, config["search"]) if config.get("search") else trial


class _Watchdog:
    """Ends this worker process when no step was reported for ``timeout_s`` (0 = off)."""

    def __init__(self, timeout_s: float, marker: Path):
        self.timeout_s, self.marker = timeout_s, marker
        self.last = time.monotonic()
        self.done = threading.Event()
        if timeout_s > 0:
            threading.Thread(target=self._watch, name="stall-watchdog", daemon=True).start()

    def beat(self) -> None:
        self.last = time.monotonic()

    def _watch(self) -> None:
        while not self.done.wait(min(self.timeout_s / 4, 5.0)):
            idle = time.monotonic() - self.last
            if idle > self.timeout_s:
                reason = f"stalled: no step reported for {idle:.0f}s (stall_timeout_s={self.timeout_s:g})"
                try:
                    self.marker.write_text(reason)
                except OSError:
                    pass  # a worker that cannot see the driver's run dir: the error says 'actor died'
                print(f"[{self.marker.stem}] {reason}; ending the worker so the trial is retried", file=sys.stderr,
                      flush=True)
                os._exit(75)


def _log(line: str, startup_log: list[str], started: bool, note: Path | None = None) -> None:
    """The backend's log before its first step (resume, checkpoint fallbacks, building the base policy)
    goes to the worker's log, to the run's ``ray.startup_log`` tag (its first 20 lines) and, the latest
    line, to the ``note`` file the driver shows; its per-step lines after that are dropped (hot path)."""
    if started:
        return
    print(line, file=sys.stderr, flush=True)  # the worker's log under the Ray temp dir
    if len(startup_log) < 20:
        startup_log.append(line)
    if note is not None:
        try:
            note.write_text(line)
        except OSError:
            pass  # a worker that cannot see the driver's run dir: the line is in its log


def _checkpoint_step(path: Path | None) -> int:
    try:
        return int((Path(path) / STEP_FILE).read_text().strip())
    except (OSError, ValueError, TypeError):
        return -1


def _evaluate_in_task(target, protocol, shared: bool):
    from trial_eval.eval_run import evaluate_base, evaluate_checkpoint

    def log(line: str) -> None:
        print(f"[{target.label}] {line}", file=sys.stderr, flush=True)

    return (evaluate_base if shared else evaluate_checkpoint)(target, protocol, log=log)


def final_evaluation(payload: dict, cfg, checkpoint: Path, step: int, beat) -> list[dict]:
    """Evaluate the final checkpoint (and with ``base: true`` the base policy, shared by the sweep's
    trials) with the payload's protocol; the evaluations the driver logs."""
    from evaluators.eval_config import EvalConfig
    from evaluators.generators import get_generator_backend
    from trainers.backends import slot_holds_gpus
    from trial_eval.eval_run import EvalTarget, base_target

    protocol = EvalConfig.from_dict(payload["eval"])
    layout = SweepLayout.of_scratch(payload["scratch_dir"])

    def log(line: str) -> None:
        beat()
        print(f"[{payload['trial_id']}] {line}", file=sys.stderr, flush=True)

    eval_dir = layout.trial_eval_dir(payload["trial_id"], step)
    targets = [(EvalTarget(payload["trial_id"], Path(checkpoint), step, eval_dir, cfg), False)]
    if protocol.base:
        targets.insert(0, (base_target(cfg, layout.base_eval, log=log), True))
    done = []
    for target, shared in targets:
        if get_generator_backend(protocol.backend).needs_gpu and not slot_holds_gpus(cfg.backend):  # no GPU slot (verl)
            import ray

            task = ray.remote(num_cpus=1, num_gpus=protocol.tensor_parallel_size)(_evaluate_in_task)
            ref = task.remote(target, protocol, shared)
            while not ray.wait([ref], timeout=30)[0]:
                beat()
            metrics, files = ray.get(ref)
        else:
            from trial_eval.eval_run import evaluate_base, evaluate_checkpoint

            run = evaluate_base if shared else evaluate_checkpoint
            metrics, files = run(target, protocol, log=log, progress=lambda *_: (lambda _done: beat()))
        done.append({"step": target.step, "metrics": metrics, "files": [str(f) for f in files],
                     "protocol": protocol.protocol_hash()})
    return done


class _Reporter:
    """A trial's side of its results: steps buffered and sent to the driver (at most every
    ``report_interval_s``, at every checkpoint, at a stop and at the end), each checkpoint marked with
    its step and config, the stop rules applied, an evaluation's verdicts sent with their step."""

    def __init__(self, cfg, payload: dict, meta: dict, watchdog: _Watchdog):
        self.cfg, self.meta, self.watchdog = cfg, meta, watchdog
        self.interval = float(payload.get("report_interval_s", 0.0))
        self.monitor = StopMonitor([StopRule(**rule) for rule in payload.get("stop") or []])
        self.startup_log: list[str] = []  # the backend's lines before its first step (resume, checkpoint fallbacks)
        self.last_val: dict[str, float] = {}
        self.pending: list[dict] = []  # steps not yet sent to the driver
        self.last_sent = float("-inf")  # the first result goes out at once (tags, progress)
        self.last_checkpoint: Path | None = None  # the newest reported checkpoint, kept for the final evaluation
        self.verdicts: dict[int, str] = {}  # an evaluation's per-problem verdicts, sent with its step

    @property
    def started(self) -> bool:
        return "resumed_from" in self.meta

    def record_verdicts(self, step: int, text: str) -> None:
        self.verdicts[step] = text

    def send(self, step: int, metrics: dict, checkpoint_dir: Path | None) -> None:
        from ray import tune

        result = {**metrics, **self.last_val, "step": step, "meta": json.dumps(self.meta),
                  "checkpointed": checkpoint_dir is not None, "steps": json.dumps(self.pending)}
        self.pending.clear()
        self.last_sent = time.monotonic()
        if checkpoint_dir is None:
            tune.report(result)
            return
        (Path(checkpoint_dir) / STEP_FILE).write_text(str(step))
        (Path(checkpoint_dir) / TRIAL_FILE).write_text(json.dumps(self.cfg.to_dict()))
        tune.report(result, checkpoint=tune.Checkpoint.from_directory(str(checkpoint_dir)))
        if self.last_checkpoint is not None:  # Tune keeps its persisted copies
            shutil.rmtree(self.last_checkpoint, ignore_errors=True)
        self.last_checkpoint = Path(checkpoint_dir)

    def report(self, step: int, metrics: dict, checkpoint_dir: Path | None) -> None:
        """The backend's report callback: one step (TrialStopped out of it when a stop rule fires)."""
        self.watchdog.beat()
        if not self.started:  # the first step after (re)start: step 0 is the base evaluation
            self.meta["resumed_from"] = max(step - 1, 0)
            self.meta["startup_log"] = " | ".join(self.startup_log)[-1000:]
        self.last_val.update({last_key(k): v for k, v in metrics.items() if k.startswith(VAL)})
        record = {"step": step, "time": time.time(), "metrics": metrics}
        if step in self.verdicts:
            record["verdicts"] = self.verdicts.pop(step)
        self.pending.append(record)
        stopped = self.monitor.update(step, metrics) if step > 0 else None  # step 0: the base, before any training
        if stopped:  # this step is sent (with its checkpoint, if any), then the backend is ended
            self.send(step, {**metrics, "stopped_by": stopped}, checkpoint_dir)
            raise TrialStopped(stopped)
        if checkpoint_dir is not None or time.monotonic() - self.last_sent >= self.interval:
            self.send(step, metrics, checkpoint_dir)

    def flush(self, final: dict | None) -> None:
        """The steps still buffered when a backend ended without a final checkpoint."""
        if self.pending:
            self.send(self.pending[-1]["step"], final or self.pending[-1]["metrics"], None)

    def diverged(self, err) -> None:
        """A last result carrying ``diverged``: the driver marks the trial FAILED, Tune does not retry it."""
        last = self.pending[-1] if self.pending else {"step": err.step, "metrics": {}}
        self.send(last["step"], {**last["metrics"], "diverged": str(err)}, None)


def _resume_candidates(payload: dict, scratch: Path) -> list[Path]:
    """Newest first: Tune's checkpoint of this run (a retry after a crash), then earlier runs' ones."""
    from ray import tune

    resume = [Path(p) for p in payload.get("resume_from") or [] if Path(p).is_dir()]
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        resume.insert(0, Path(checkpoint.to_directory(str(scratch / "resume"))))
    return resume


def run_trial(config: dict, payloads: dict[str, dict] | None = None) -> None:
    """Ray Tune function trainable: one trial of the configured backend. A grid trial's payload is
    ``payloads[config[TRIAL_ID]]`` (sweeps/driver/runner.py ``_trainable``), a search sample's ``config["trial"]``."""
    import ray
    from ray import tune

    from trainers.api import TrainingDiverged
    from trainers.backends import get_backend
    from trainers.backends import trial_setup

    payload = payloads[config[TRIAL_ID]] if TRIAL_ID in config else config["trial"]
    cfg = trial_from_tune_config(config, payload).config
    scratch = Path(tempfile.mkdtemp(prefix=ATTEMPT_PREFIX, dir=payload["scratch_dir"]))
    resume = _resume_candidates(payload, scratch)
    meta = {"node_id": ray.get_runtime_context().get_node_id(), "gpu_ids": ",".join(map(str, ray.get_gpu_ids())),
            "pid": os.getpid(), "provenance": trial_setup(cfg)}  # e.g. the numeric mode, applied and checked
    layout, trial_id = SweepLayout.of_scratch(payload["scratch_dir"]), payload["trial_id"]
    note = layout.note(trial_id)  # its lines before the first step, for the driver's terminal
    watchdog = _Watchdog(float(payload.get("stall_timeout_s") or 0.0), layout.stall_marker(trial_id))
    reporter = _Reporter(cfg, payload, meta, watchdog)
    try:
        final = get_backend(cfg.backend).train(cfg, reporter.report, resume_from=resume or None, workdir=scratch / "checkpoints",
                                         log=lambda line: _log(line, reporter.startup_log, reporter.started, note),
                                         storage_dir=layout.trial_dir(trial_id), verdicts=reporter.record_verdicts)
        reporter.flush(final)
        if payload.get("eval"):
            # the final checkpoint: reported by this attempt, else the one it resumed from (a retry after training)
            final_ckpt = reporter.last_checkpoint or (resume[0] if resume else None)
            step = _checkpoint_step(final_ckpt)
            if step >= cfg.trainer.steps:
                evaluations = final_evaluation(payload, cfg, final_ckpt, step, watchdog.beat)
                tune.report({"step": step, "meta": json.dumps(meta), "checkpointed": False, "steps": "[]",
                             "eval": json.dumps(evaluations)})
    except TrialStopped:  # a stop rule fired: the trial ends FINISHED (the driver tags it stopped_by)
        pass
    except TrainingDiverged as err:  # a failure of the trial, not of the worker: no retry
        reporter.diverged(err)
    finally:
        watchdog.done.set()
        shutil.rmtree(scratch, ignore_errors=True)
