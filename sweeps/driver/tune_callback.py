"""The driver's Tune callback: trial results -> MLflow child runs, outcomes and the live table.

    state = DriverState(by_id=..., progress=LiveProgress(...) or None, guard=InterruptGuard())
    state.writer = TrackingWriter(...)       # sweeps/tracking/writer.py: the journal and the MLflow writer thread
    callbacks=[MlflowLogger(state)]          # state.tracker may be set later, from a thread

The callback never waits on MLflow: it journals what trials report (durable when it returns) and the
writer thread writes it to the store, through outages. Its loop hook raises the writer's failure (a
real store error, or ``TrackingOutage`` after an outage longer than the limit).

Tune pickles its callbacks into the experiment directory (for ``Tuner.restore``, which the sweep
does not use). Everything driver-only (the writer, the rich Live table with its lock, the
signal guard) lives in ``DriverState``, which ``MlflowLogger`` leaves out of its pickled state.

Outcomes, as the runner and the report see them (``state.outcomes``: trial id -> status):
FINISHED (all steps, or stopped early by the scheduler: tag ``stopped_by=scheduler``, or by a stop
rule: ``stopped_by=rule <name> at step N``), FAILED
(a crash after its retries, a divergence, a stall; tag ``failure_reason``), KILLED (set by the
runner when the sweep is interrupted).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ray.tune import Callback

from sweeps.driver.interrupts import InterruptGuard
from sweeps.driver.progress import LiveProgress
from sweeps.specs.load import Trial
from tracking_store.uri import mask_uri
from contract.run_layout import SweepLayout
from sweeps.driver.trial import trial_from_tune_config, trial_id_of, unpack_steps
from sweeps.tracking.sweep_runs import SweepTracker
from sweeps.tracking.writer import TrackingWriter
from contract.env import WAIT_NOTE_AFTER
from contract.metrics import LOGGED_PREFIXES, is_logged

log = logging.getLogger(__name__)

TRACKER_WAIT_S = 600.0  # opening a new MLflow store takes seconds; this long means it is stuck


@dataclass
class DriverState:
    by_id: dict[str, Trial] = field(default_factory=dict)
    progress: LiveProgress | None = None
    guard: InterruptGuard = field(default_factory=InterruptGuard)
    tracker: SweepTracker | None = None
    writer: TrackingWriter | None = None
    failure: BaseException | None = None  # opening the store failed (set by the opener thread)
    outcomes: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # trial id -> why it FAILED
    stopped: dict[str, str] = field(default_factory=dict)  # trial id -> the stop rule that ended it
    seen_meta: dict[str, str] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)  # reported keys not logged (each warned about once)
    scratch: Path | None = None  # where a stalled trial's watchdog leaves its reason (sweeps/driver/trial.py)
    slot: dict[str, float] = field(default_factory=dict)  # what one trial asks of Ray (its Tune slot)
    waiting_since: float | None = None  # trials pending and none running since then
    waiting_said: bool = False
    wait_note_after_s: float = WAIT_NOTE_AFTER.default  # trials pending and none running for this long: say why
    notes_read_at: float = 0.0

    def stall_reason(self, trial_id: str) -> str | None:
        marker = SweepLayout.of_scratch(self.scratch).stall_marker(trial_id) if self.scratch else None
        if marker is None or not marker.is_file():
            return None
        reason = marker.read_text()[:500]
        marker.unlink(missing_ok=True)
        return reason

    def wait_for_tracker(self, timeout: float = TRACKER_WAIT_S) -> SweepTracker:
        deadline = time.monotonic() + timeout
        while self.tracker is None:
            if self.failure is not None:
                raise self.failure
            if time.monotonic() > deadline:
                raise TimeoutError(f"the MLflow store did not open within {timeout:.0f}s")
            time.sleep(0.01)
        return self.tracker


class MlflowLogger(Callback):
    """Driver-side single writer: Tune results -> MLflow child runs, in batches."""

    def __init__(self, state: DriverState):
        self.state = state

    def __getstate__(self):
        return {"state": None}  # a pickled copy is inert: the driver's state never leaves the driver

    def on_step_begin(self, iteration, trials, **info):
        if self.state is not None:
            self.state.writer.raise_if_failed()
            _say_if_waiting(self.state, trials)
            _show_startup_notes(self.state, trials)

    def on_trial_start(self, iteration, trials, trial, **info):
        if self.state is None:
            return
        s, tid = self.state, trial_id_of(trial.config)
        t = s.by_id.get(tid) or trial_from_tune_config(trial.config)  # a grid trial is known by its id
        search_sample = t.trial_id not in s.by_id
        if search_sample:
            s.by_id[t.trial_id] = t
            if s.progress:
                s.progress.add(t)
        with s.guard.critical():
            s.writer.start_trial(t.trial_id, dict(trial.config) if search_sample else None)
        if s.progress:
            s.progress.update(t.trial_id, state="RUNNING")

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if self.state is None:
            return
        s, tid = self.state, _tid(trial)
        s.writer.raise_if_failed()
        steps = unpack_steps(result)
        with s.guard.critical():
            meta = result.get("meta", "{}")
            if meta != s.seen_meta.get(tid):  # first result of each (re)start of the trial
                s.seen_meta[tid] = meta
                if s.scratch is not None:
                    SweepLayout.of_scratch(s.scratch).note(tid).unlink(missing_ok=True)
                s.writer.set_tags(tid, meta_tags(json.loads(meta)))
            # every step since the trial's previous result; journaled (on disk) before the trial goes on
            s.writer.log_steps(tid, [(step, when, logged_metrics(values, s.dropped)) for step, when, values, _ in steps])
            for step, _, _, text in steps:  # an evaluation's per-problem verdicts: an artifact
                if text:
                    s.writer.log_verdicts(tid, step, text)
            if result.get("stopped_by"):  # a stop rule ended it (sweeps/specs/stop_rules.py)
                s.stopped[tid] = result["stopped_by"]
                s.writer.set_tags(tid, {"stopped_by": result["stopped_by"]})
            if result.get("eval"):  # the final checkpoint's evaluation (the spec's eval: section)
                s.writer.log_eval(tid, json.loads(result["eval"]))
        # Journaled: out of the result, which Tune keeps (with copies) as each trial's last result for the
        # whole sweep (callbacks may change it in place): at 2,000 trials those strings are the bulk of its memory.
        result["steps"] = "[]"
        if result.get("diverged"):
            s.reasons[tid] = result["diverged"]
        if s.progress and steps:
            s.progress.update(tid, state="RUNNING", step=steps[-1][0], metrics=logged_metrics(result))

    def on_trial_save(self, iteration, trials, trial, **info):
        """Tune keeps the result a checkpoint came with (its own copy of it, as the trial sent it) for the
        whole sweep, and writes it into every experiment snapshot: its steps are journaled already."""
        saved = trial.run_metadata.checkpoint_manager.latest_checkpoint_result
        if saved is not None and isinstance(saved.metrics, dict) and "steps" in saved.metrics:
            saved.metrics["steps"] = "[]"

    def on_trial_complete(self, iteration, trials, trial, **info):
        if self.state is None:
            return
        s, tid = self.state, _tid(trial)
        with s.guard.critical():
            if tid in s.reasons:  # diverged: the trial ended itself, with no retry (it would diverge again)
                s.writer.end_trial(tid, "FAILED", reason=s.reasons[tid])
                s.outcomes[tid] = "FAILED"
            else:
                if s.writer.last_step(tid) < s.by_id[tid].config.trainer.steps and tid not in s.stopped:
                    s.writer.set_tags(tid, {"stopped_by": "scheduler"})  # e.g. ASHA ended it early
                s.writer.end_trial(tid, "FINISHED")
                s.outcomes[tid] = "FINISHED"
        if s.progress:
            s.progress.update(tid, state=s.outcomes[tid])

    def on_trial_recover(self, iteration, trials, trial, **info):
        if self.state is None:
            return
        s, tid = self.state, _tid(trial)
        error = s.stall_reason(tid) or _last_line(_error_text(trial))
        with s.guard.critical():
            _ensure_run(s, tid)  # a worker can die before Tune ever started the trial
            s.writer.set_tags(tid, {"retries": str(trial.run_metadata.num_failures), "last_error": error})

    def on_trial_error(self, iteration, trials, trial, **info):
        if self.state is None:
            return
        s, tid = self.state, _tid(trial)
        error = _error_text(trial)
        reason = s.reasons.get(tid) or s.stall_reason(tid) or _last_line(error)
        with s.guard.critical():
            _ensure_run(s, tid)
            s.writer.end_trial(tid, "FAILED", error=error, reason=reason)
        s.outcomes[tid] = "FAILED"
        s.reasons[tid] = reason
        if s.progress:
            s.progress.update(tid, state="FAILED")


def _say_if_waiting(state: DriverState, trials) -> None:
    """Once per wait: 'waiting for resources: each trial needs X; the cluster has Y free of Z'."""
    statuses = [t.status for t in trials]
    if "RUNNING" in statuses or "PENDING" not in statuses:
        state.waiting_since, state.waiting_said = None, False
        return
    now = time.monotonic()
    if state.waiting_since is None:
        state.waiting_since = now
    if state.waiting_said or now - state.waiting_since < state.wait_note_after_s:
        return
    state.waiting_said = True
    import ray

    free, total = ray.available_resources(), ray.cluster_resources()

    def show(res: dict) -> str:
        return ", ".join(f"{res.get(k, 0):g} {k}" for k in ("CPU", "GPU"))

    need = ", ".join(f"{v:g} {k.upper()}" for k, v in state.slot.items() if v) or "nothing"
    print(f"waiting for resources: {statuses.count('PENDING')} trial(s) pending, none running for "
          f"{now - state.waiting_since:.0f}s; each trial needs {need}; the cluster has {show(free)} free of "
          f"{show(total)} (other jobs on the cluster hold the rest)", file=sys.stderr, flush=True)


NOTE_EVERY_S = 2.0


def _show_startup_notes(state: DriverState, trials) -> None:
    """Every few seconds: the latest line of each running trial that has not sent a step yet
    (contract/run_layout.py ``SweepLayout.note``), e.g. its base policy's warm start, for the terminal."""
    now = time.monotonic()
    if state.progress is None or state.scratch is None or now - state.notes_read_at < NOTE_EVERY_S:
        return
    state.notes_read_at = now
    for trial in trials:
        if trial.status != "RUNNING":
            continue
        tid = _tid(trial)
        if tid in state.seen_meta:  # it reports steps: the table shows them
            continue
        try:
            text = SweepLayout.of_scratch(state.scratch).note(tid).read_text()[:200].strip()
        except OSError:
            continue
        if text:
            state.progress.note(tid, text)


def _ensure_run(state: DriverState, trial_id: str) -> None:
    if trial_id not in state.writer.started:
        state.writer.start_trial(trial_id)


def logged_metrics(values: dict, dropped: set[str] | None = None) -> dict[str, float]:
    """The numeric values under the contract's namespaces. With ``dropped`` (the keys warned about so
    far), a reported key that is not logged is named once in a warning instead of vanishing."""
    out = {k: v for k, v in values.items() if is_logged(k) and isinstance(v, (int, float)) and not isinstance(v, bool)}
    if dropped is not None:
        for key in values.keys() - out.keys() - dropped:
            dropped.add(key)
            log.warning("metric %r is not logged to MLflow: a metric must be a number named under one of %s "
                        "(contract/metrics.py)", key, ", ".join(LOGGED_PREFIXES))
    return out


def meta_tags(meta: dict) -> dict[str, str]:
    """A trial's meta as tags: ``ray.<key>`` (node, pid, startup log), and under ``provenance`` what its
    backend's trial_setup applied (the numeric mode) as ``provenance.<key>``."""
    tags = {f"ray.{k}": str(v) for k, v in meta.items() if k != "provenance"}
    tags.update({f"provenance.{k}": str(v) for k, v in (meta.get("provenance") or {}).items()})
    return tags


def _tid(tune_trial) -> str:
    return trial_id_of(tune_trial.config)


def _error_text(trial) -> str:
    has_file = trial.error_file and Path(trial.error_file).is_file()
    return mask_uri(Path(trial.error_file).read_text() if has_file else f"trial failed: {trial.error_msg}")


def _last_line(error: str) -> str:
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else "unknown error"
