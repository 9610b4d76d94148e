"""Run an expanded sweep as Ray Tune trials, tracked in MLflow by the driver; resumable.

    result = run_sweep(spec, RunOptions(run_dir=Path("runs")))

* Local ``ray.init`` by default (temp dir ``<run dir>/.ray``, nothing in ~/.ray, token auth on:
  sweeps/driver/ray_cluster.py), or ``address=`` to join an existing cluster; per-trial resources from
  the spec, checked against the cluster before any MLflow run is created.
* One driver per sweep and run directory (sweeps/tracking/lock.py) and per tracking store (the lease on
  the parent run, tracking_store/lease.py); a second one is refused.
* Trials report through ``tune.report`` in batches (sweeps/driver/trial.py; checkpoints included); the
  driver-side callback ``MlflowLogger`` (sweeps/driver/tune_callback.py) journals what they report and the
  tracking writer (sweeps/tracking/writer.py) is the only MLflow writer: trials never wait on MLflow,
  a store outage loses nothing, a re-run first writes what an earlier driver journaled. On a new
  store, MLflow creates its tables in a thread while Ray and Tune start (all take seconds).
* ``FailureConfig(max_failures)`` retries a crashed or stalled trial from its last checkpoint;
  steps it replays are not logged twice. A diverged trial is FAILED at once (no retry).
* Ctrl-C / SIGTERM: the sweep and its running trials end KILLED and ``SweepInterrupted`` is raised
  (sweeps/driver/interrupts.py); nothing recorded is lost.
* Re-running the same command resumes: FINISHED trials (in MLflow) are skipped, interrupted ones
  restart from their newest readable checkpoint under ``<run dir>/<sweep>/ray_results``, new
  seeds or variants added to the spec simply run.
"""

from __future__ import annotations

import signal
import sys
import time
import traceback
import threading
from dataclasses import dataclass
from pathlib import Path

from mlflow.entities import RunTag

from contract.env import WAIT_NOTE_AFTER
from contract.metrics import VAL, last_key
from contract.run_layout import RAY_ATTEMPT_FORMAT, RunLayout, SweepLayout, checkpoint_candidates
from sweeps.driver.interrupts import SweepInterrupted
from sweeps.driver.placement import Placement, plan
from sweeps.driver.progress import LiveProgress
from sweeps.driver.ray_cluster import (check_cluster, check_resources, cluster_capacity, init_ray, local_capacity,
                                       local_temp_dir, prepare_environment)
from sweeps.driver.trial import TRIAL_ID, run_trial, trial_from_tune_config, trial_id_of, trial_payload
from sweeps.driver.tune_callback import DriverState, MlflowLogger
from sweeps.specs.load import SweepSpec
from sweeps.tracking.lock import SweepLock
from sweeps.tracking.sweep_runs import SweepTracker
from sweeps.tracking.writer import Journal, TrackingOutage, TrackingWriter
from tracking_store.client import quiet_mlflow_environment
from tracking_store.uri import default_uri, mask_uri, resolve_uri, where
from trainers.backends import trial_env

INTERRUPTED_DRAIN_S = 15.0  # an interrupted driver writes what it holds for this long; the rest stays journaled


@dataclass
class RunOptions:
    run_dir: Path = Path("runs")
    """Project run directory: MLflow store, Ray temp dir, trial results, reports."""
    tracking_uri: str | None = None
    """MLflow tracking URI; default $MLFLOW_TRACKING_URI, else sqlite:///<run_dir>/mlflow.db."""
    address: str | None = None
    """Ray cluster (GCS) address to join, e.g. head:6379 or auto (ray:// is refused); default: a local ray.init."""
    num_cpus: int | None = None
    """CPUs of the local Ray instance (default: all)."""
    show_progress: bool = True
    """Live rich table on the terminal; status lines when stdout is not one (sweeps/driver/progress.py)."""
    status_every: float = 60.0
    """Seconds between status lines when stdout is not a terminal; 0: none (the table once, at the end)."""
    wait_note_after_s: float = WAIT_NOTE_AFTER.default
    """Seconds trials may wait with none running before the driver says what they need and what is free."""
    ray_temp_dir: Path | None = None
    """Local Ray temp dir (keep it short: Unix socket paths); default <run_dir>/.ray."""
    tracking_outage_limit_s: float = 3600.0
    """How long the tracking store may stay unreachable before the sweep stops (as an interruption)."""


@dataclass
class SweepResult:
    tracking_uri: str
    parent_run_id: str
    statuses: dict[str, str]  # trial id -> FINISHED / FAILED / SKIPPED
    seconds: float


def _open_tracker(spec: SweepSpec, tracking_uri: str, run_dir: Path) -> SweepTracker:
    """The sweep's tracker; its client is opened under the store's lock (tracking_store.client.open_client:
    two processes creating one new sqlite file race on its schema)."""
    return SweepTracker(spec, tracking_uri, run_dir)


def run_sweep(spec: SweepSpec, options: RunOptions) -> SweepResult:
    """Run every trial of ``spec`` that is not FINISHED yet; returns the per-trial statuses.

    Raises SpecError (nothing created) for resources no node has or a ray:// address,
    ClusterUnavailable when the cluster cannot be joined, SweepAlreadyRunning when another driver holds
    this sweep, SweepInterrupted on Ctrl-C/SIGTERM and TrackingOutage after a tracking outage longer than
    the limit (runs marked KILLED where the store answers).
    """
    started = time.time()
    run_dir = options.run_dir.resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    prepare_environment(run_dir)
    quiet_mlflow_environment()
    placement = None
    if options.address:  # ray:// refused, the token's mode set, the GCS asked: before anything is created
        check_cluster(options.address)
    else:  # before any run exists: Tune would wait forever for a trial that cannot fit
        capacity = local_capacity(options.num_cpus)
        placement = plan(spec, capacity, local=True)
        check_resources(spec, capacity, placement.tune_resources)
        local_temp_dir(run_dir, options.ray_temp_dir)
    with SweepLock(RunLayout(run_dir).sweep(spec.name).lock, spec.name):
        if options.address:
            init_ray(address=options.address, run_dir=run_dir, temp_dir=None, num_cpus=None,
                     env_vars=trial_env([t.config for t in spec.trials]))
            capacity = cluster_capacity(options.address)
            placement = plan(spec, capacity, local=False)
            check_resources(spec, capacity, placement.tune_resources)
        return _run_locked(spec, options, run_dir, started, placement)


def _run_locked(spec: SweepSpec, options: RunOptions, run_dir: Path, started: float,
                placement: Placement) -> SweepResult:
    tracking_uri = resolve_uri(options.tracking_uri, run_dir)
    layout = RunLayout(run_dir).sweep(spec.name)
    state = DriverState(scratch=layout.scratch, slot=dict(placement.tune_resources),
                        wait_note_after_s=options.wait_note_after_s,
                        by_id={} if spec.search else {t.trial_id: t for t in spec.trials})
    journal = Journal(layout.journal(tracking_uri))
    state.writer = TrackingWriter(journal, state.wait_for_tracker, options.tracking_outage_limit_s, _echo,
                                  trial_of=lambda tid, tune_config: state.by_id.get(tid) or trial_from_tune_config(tune_config))
    try:
        recorded, opener = _start_tracking(spec, options, tracking_uri, run_dir, state, journal)
    except SystemExit as err:  # SIGTERM while joining a cluster's store, before our handler is in: Ray's sys.exit
        _close_tracking(state, "KILLED", {})
        raise SweepInterrupted(signal.SIGTERM) from err
    layout.scratch.mkdir(parents=True, exist_ok=True)
    if spec.search:  # the one trial of the spec is the template the samples are drawn around
        statuses, pending, shown = {}, spec.trials[:1], []
    else:
        statuses = {t.trial_id: "SKIPPED" for t in spec.trials if recorded and recorded.finished(t)}
        pending = [t for t in spec.trials if t.trial_id not in statuses]
        shown = spec.trials
    state.progress = (LiveProgress(spec.name, shown, statuses, status_every=options.status_every)
                      if options.show_progress else None)
    status = "FINISHED"
    cluster: dict[str, str] = {}
    try:
        # ray.init installs its own SIGTERM handler (sys.exit): ours go in after it.
        init_ray(address=options.address, run_dir=run_dir, temp_dir=options.ray_temp_dir,
                 num_cpus=placement.local_cpus or options.num_cpus, num_gpus=placement.local_gpus,
                 gpu_ids=placement.local_gpu_ids, env_vars=trial_env([t.config for t in spec.trials]))
        cluster = _cluster_tag()
        with state.guard.installed():
            search_kwargs = _search(spec, recorded)
            if spec.search and search_kwargs["num_samples"] == 0:
                pending = []  # every requested sample already FINISHED in an earlier run
            if pending:
                _fit(spec, state, placement, recorded, pending, layout, search_kwargs)
                statuses.update(state.outcomes)
                if any(s == "FAILED" for s in statuses.values()):
                    status = "FAILED"
    except TrackingOutage:
        status = "KILLED"
        _stop_local_ray(options)
        raise
    except (KeyboardInterrupt, SystemExit) as err:  # SweepInterrupted, or a signal outside our handler: Ray's C++
        status = "KILLED"  # layer re-raises one as a bare KeyboardInterrupt, its SIGTERM handler is sys.exit
        _stop_local_ray(options)
        if not isinstance(err, SweepInterrupted):
            signum = signal.SIGTERM if isinstance(err, SystemExit) else signal.SIGINT
            raise SweepInterrupted(state.guard.received or signum) from err
        raise
    except Exception:
        status = "FAILED"
        error = mask_uri(traceback.format_exc()[-4000:])  # an MLflow error names the store's URI
        if opener is not None:
            opener.join()
        if state.tracker is not None:  # (else MLflow itself failed: that error propagates)
            _best_effort(lambda: state.tracker.client.set_tag(state.tracker.parent_id, "error", error))
        raise
    finally:
        if opener is not None:
            opener.join()
        _close_tracking(state, status, cluster)
    return SweepResult(tracking_uri, state.wait_for_tracker().parent_id, statuses, time.time() - started)


def _start_tracking(spec: SweepSpec, options: RunOptions, tracking_uri: str, run_dir: Path, state: DriverState,
                    journal: Journal) -> tuple[SweepTracker | None, threading.Thread | None]:
    """(what the store records of the sweep, the thread opening a new store): the tracker opened and the
    tracking writer started. A new default store records nothing, so every trial runs: MLflow creates its
    tables (seconds of CPU) in a thread while Ray starts and Tune starts the trial workers (the writer waits
    for the tracker if need be). An existing store is opened first, an earlier driver's unwritten steps
    replayed into it, and the steps it holds are what the writer accepts as written."""
    if tracking_uri == default_uri(run_dir) and not RunLayout(run_dir).store.exists():
        if journal.pending():  # written for a store that is gone: it cannot be replayed anywhere
            kept = journal.set_aside("store-gone")
            _echo(f"note: the journal of this sweep held steps for a store that no longer exists "
                  f"({mask_uri(tracking_uri)}); kept in {kept}, starting a new one")

        def open_store():
            try:
                state.tracker = _open_tracker(spec, tracking_uri, run_dir)
            except BaseException as err:  # noqa: BLE001 - re-raised by the callbacks and by _run_locked
                state.failure = err

        opener = threading.Thread(target=open_store, daemon=True)
        opener.start()  # Ray starts in _run_locked's try (a failure there ends the sweep FAILED)
        state.writer.start()
        return None, opener
    # before any trial; a store that is unreachable now (a server restarting) is waited out as an outage is:
    # said, retried, TrackingOutage (exit 75) past the limit. Opening is idempotent (experiment, parent run and
    # lease are found again), so a try cut short by the outage is simply made again.
    opened: list[SweepTracker] = []
    state.writer.store_name = where(tracking_uri)
    state.writer.retrying(lambda: opened.append(_open_tracker(spec, tracking_uri, run_dir)))
    recorded = state.tracker = opened[-1]
    if journal.pending():  # an earlier driver's steps that never reached the store: written first
        _replay(journal, state, options.tracking_outage_limit_s)
    state.writer.start()
    state.writer.accepted = {tid: info["last_step"] for tid, info in recorded.children.items()}
    return recorded, None


def _fit(spec: SweepSpec, state: DriverState, placement: Placement, recorded: SweepTracker | None,
         pending: list, layout: SweepLayout, search_kwargs: dict) -> None:
    """One Tune run of the pending trials (each resumed from its newest usable checkpoint), the live table
    drawn while it runs; each trial's outcome lands in ``state.outcomes``."""
    from ray import tune

    protocol = spec.eval.to_dict() if spec.eval else None
    payloads = [trial_payload(t, checkpoint_candidates(layout.ray_results, t.trial_id, recorded.last_step(t.trial_id))
                              if recorded else [], layout.scratch, spec.report_interval_s, spec.stall_timeout_s,
                              protocol, spec.stop)
                for t in pending]
    tuner = tune.Tuner(
        tune.with_resources(_trainable(spec, payloads), placement.tune_resources),
        param_space=_param_space(spec, payloads),
        tune_config=tune.TuneConfig(max_concurrent_trials=placement.max_concurrent,
                                    scheduler=_scheduler(spec),
                                    reuse_actors=True,  # later trials skip worker start-up + imports
                                    trial_dirname_creator=_dirname, trial_name_creator=_dirname,
                                    **search_kwargs),
        run_config=tune.RunConfig(
            name=time.strftime(RAY_ATTEMPT_FORMAT), storage_path=str(layout.ray_results),
            failure_config=tune.FailureConfig(max_failures=spec.max_failures),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=3),
            callbacks=[MlflowLogger(state)], verbose=0),
    )
    if state.progress:
        with state.progress:
            tuner.fit()
    else:
        tuner.fit()


def _replay(journal: Journal, state: DriverState, limit_s: float) -> None:
    """Write what an earlier driver journaled, before any trial starts (checkpoints are chosen by what the store
    has). Operations the store refuses (not an outage) are kept aside, said, and the sweep goes on: the trials
    resume from a checkpoint early enough to report those steps again."""
    _echo(f"writing {journal.held} steps an earlier driver of {state.tracker.spec.name} journaled ({journal.path})")
    replay = TrackingWriter(journal, lambda: state.tracker, limit_s, _echo, trial_of=state.writer.trial_of)
    replay.start()
    try:
        replay.drain(None)  # an outage (TrackingOutage, a KeyboardInterrupt) propagates
    except Exception as err:  # noqa: BLE001 - a refused operation must not block every later run
        kept = journal.set_aside("rejected")
        _echo(f"note: the tracking store refused what an earlier driver journaled ({mask_uri(str(err))[:300]}); "
              f"kept in {kept}; going on")
    finally:
        replay.close()


def _echo(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _close_tracking(state: DriverState, status: str, cluster: dict[str, str]) -> None:
    """Write what the driver holds, then close the runs. A finished sweep waits through an outage (up to the
    limit: TrackingOutage); an interrupted one writes for INTERRUPTED_DRAIN_S and leaves the rest journaled for
    the next run; after a store failure the runs are closed if the store answers at all."""
    writer, tracker = state.writer, state.tracker
    if tracker is None:
        writer.close()
        return
    if writer.failure is None:
        try:
            drained = writer.drain(None if status != "KILLED" else INTERRUPTED_DRAIN_S)
        except TrackingOutage:
            drained = False
            if status != "KILLED":
                writer.close()
                _best_effort(lambda: tracker.end_sweep("KILLED"), timeout_s=INTERRUPTED_DRAIN_S)
                raise
        writer.close()
        if not drained:
            _echo(f"{writer.journal.held} steps are held in {writer.journal.path}; the next run of this sweep writes them")

        def end():
            if cluster:
                tracker.client.log_batch(tracker.parent_id, tags=[RunTag(k, v) for k, v in cluster.items()])
            tracker.end_sweep(status)

        if drained and status != "KILLED":
            writer.retrying(end)
        else:
            _best_effort(end, timeout_s=INTERRUPTED_DRAIN_S)
    else:
        writer.close()
        _best_effort(lambda: tracker.end_sweep("KILLED" if isinstance(writer.failure, KeyboardInterrupt) else status),
                     timeout_s=INTERRUPTED_DRAIN_S)


def _best_effort(call, timeout_s: float = 30.0) -> None:
    """Try a store write that may fail (the store is down): in a thread, given up after ``timeout_s``."""
    def attempt():
        try:
            call()
        except Exception as err:  # noqa: BLE001 - the store is unreachable: said, not raised
            _echo(f"note: could not update the tracking store ({mask_uri(str(err).splitlines()[0][:200])})")

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout_s)


def _cluster_tag() -> dict[str, str]:
    """The Ray cluster's size for the parent run's provenance (sweeps/tracking/provenance.py)."""
    import ray

    from sweeps.tracking.provenance import cluster_tag

    return cluster_tag(ray.cluster_resources(), sum(1 for n in ray.nodes() if n.get("Alive")))


def _stop_local_ray(options: RunOptions) -> None:
    """An interrupted local sweep stops its trial workers now, not at interpreter exit."""
    if options.address:
        return
    import ray

    ray.shutdown()


def _dirname(tune_trial) -> str:
    return trial_id_of(tune_trial.config)


def _scheduler(spec: SweepSpec):
    if not spec.scheduler:
        return None
    from ray.tune.schedulers import ASHAScheduler

    s = spec.scheduler
    metric = s["metric"]
    return ASHAScheduler(metric=_tune_metric(metric), mode=s["mode"],
                         time_attr="step", grace_period=s["grace_period"], reduction_factor=s["reduction_factor"],
                         max_t=max(t.config.trainer.steps for t in spec.trials))


def _tune_metric(metric: str) -> str:
    """Validation metrics are reported every eval_every steps; 'last/<metric>' carries the latest value."""
    return last_key(metric) if metric.startswith(VAL) else metric


def _trainable(spec: SweepSpec, payloads: list[dict]):
    """run_trial; for a grid with the payloads put in Ray's object store once (``tune.with_parameters``),
    the Tune configs naming only a trial id: Tune deep-copies the whole grid for every variant it
    generates, so payloads inside the grid cost O(trials^2) (minutes of driver CPU at 2,000 trials)."""
    from ray import tune

    if spec.search:
        return run_trial
    return tune.with_parameters(run_trial, payloads={p["trial_id"]: p for p in payloads})


def _param_space(spec: SweepSpec, payloads: list[dict]) -> dict:
    from ray import tune

    if not spec.search:
        return {TRIAL_ID: tune.grid_search([p["trial_id"] for p in payloads])}
    space = {}
    for key, dist in spec.search["space"].items():
        if dist["type"] == "choice":
            space[key] = tune.choice(dist["values"])
        elif dist["type"] == "int":
            space[key] = tune.randint(int(dist["low"]), int(dist["high"]) + 1)
        else:
            space[key] = (tune.loguniform if dist.get("log") else tune.uniform)(dist["low"], dist["high"])
    return {"trial": payloads[0], "search": space}


def _search(spec: SweepSpec, recorded: SweepTracker | None) -> dict:
    """Optuna search: num_samples minus the samples already FINISHED in earlier runs (``recorded``)."""
    if not spec.search:
        return {}
    from ray.tune.search.optuna import OptunaSearch

    done = sum(1 for info in recorded.children.values() if info["status"] == "FINISHED") if recorded else 0
    return {"search_alg": OptunaSearch(metric=_tune_metric(spec.search["metric"]), mode=spec.search["mode"],
                                       seed=spec.trials[0].config.seed),
            "num_samples": max(spec.search["num_samples"] - done, 0)}
