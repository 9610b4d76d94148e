"""Run an expanded sweep as Ray Tune trials, tracked in MLflow by the driver; resumable.

    result = run_sweep(spec, RunOptions(run_dir=Path("runs")))

* Local ``ray.init`` by default (temp dir ``<run dir>/.ray``, nothing in ~/.ray), or
  ``address=`` to join an existing cluster; per-trial resources from the spec.
* Trials report through ``tune.report`` in batches (sweeps/trial.py; checkpoints included); the
  driver-side callback ``MlflowLogger`` is the only MLflow writer. On a new store, MLflow creates
  its tables in a thread while Ray and Tune start (all take seconds).
* ``FailureConfig(max_failures)`` retries a crashed trial from its last checkpoint; steps it
  replays are not logged twice.
* Re-running the same command resumes: FINISHED trials (in MLflow) are skipped, interrupted ones
  restart from their newest checkpoint under ``<run dir>/<sweep>/ray_results``, new seeds or
  variants added to the spec simply run.
"""

from __future__ import annotations

import json
import logging
import os
import time
import traceback
import threading
from dataclasses import dataclass
from pathlib import Path

from sweeps.progress import LiveProgress
from sweeps.spec import SweepSpec, Trial
from sweeps.trial import STEP_FILE, run_trial, trial_from_tune_config, trial_payload, unpack_steps
from sweeps.tracking import SweepTracker, default_tracking_uri

LOGGED_PREFIXES = ("actor/", "response_length/", "reward/", "val/", "perf/")


@dataclass
class RunOptions:
    run_dir: Path = Path("runs")
    """Project run directory: MLflow store, Ray temp dir, trial results, reports."""
    tracking_uri: str | None = None
    """MLflow tracking URI; default sqlite:///<run_dir>/mlflow.db."""
    address: str | None = None
    """Ray cluster address to join (e.g. ray://head:10001 or auto); default: a local ray.init."""
    num_cpus: int | None = None
    """CPUs of the local Ray instance (default: all)."""
    show_progress: bool = True
    """Live rich table on the terminal."""
    ray_temp_dir: Path | None = None
    """Local Ray temp dir (keep it short: Unix socket paths); default <run_dir>/.ray."""


@dataclass
class SweepResult:
    tracking_uri: str
    parent_run_id: str
    statuses: dict[str, str]  # trial id -> FINISHED / FAILED / SKIPPED
    seconds: float


def prepare_environment(run_dir: Path) -> None:
    """Keep every write inside the run directory and silence Ray's extras."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    os.environ.setdefault("RAY_CHDIR_TO_TRIAL_DIR", "0")
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    # MLflow is the record: no Tune CSV/JSON/TensorBoard files per trial (driver CPU on every result,
    # and Tune reads them all back at the end); Tune's "could not fetch metrics" warning is silenced below.
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    os.environ.setdefault("HF_HOME", str((run_dir / ".cache" / "huggingface").resolve()))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("MPLCONFIGDIR", str((run_dir / ".cache" / "matplotlib").resolve()))


def latest_checkpoint(results_dir: Path, trial_id: str, max_step: int) -> Path | None:
    """Newest checkpoint of a trial across earlier attempts holding a step <= ``max_step``.

    ``max_step`` is the last step recorded in MLflow: a killed driver may have lost the metrics of
    the steps after it, so the trial resumes early enough to replay them (already-logged steps are
    skipped), and every step ends up logged exactly once.
    """
    best, best_step = None, -1
    for step_file in results_dir.glob(f"*/{trial_id}/checkpoint_*/{STEP_FILE}"):
        try:
            step = int(step_file.read_text().strip())
        except ValueError:
            continue
        if best_step < step <= max_step:
            best, best_step = step_file.parent, step
    return best


# ---- the driver -------------------------------------------------------------------------


def _make_logger():
    """The driver's MLflow writer as a Tune callback; run_sweep sets its tracker, trials and progress table."""
    from ray.tune import Callback

    seen_meta: dict[str, str] = {}

    class MlflowLogger(Callback):
        """Driver-side single writer: Tune results -> MLflow child runs, in batches.

        ``tracker`` may still be opening a new MLflow store when the trials start (run_sweep sets it
        from a thread); the callbacks then wait for it.
        """

        def __init__(self):
            self.tracker: SweepTracker | None = None
            self.failure: BaseException | None = None  # opening the store failed
            self.by_id: dict[str, Trial] = {}
            self.progress: LiveProgress | None = None

        def wait_for_tracker(self) -> SweepTracker:
            while self.tracker is None:
                if self.failure is not None:
                    raise self.failure
                time.sleep(0.01)
            return self.tracker

        def on_trial_start(self, iteration, trials, trial, **info):
            t = trial_from_tune_config(trial.config)
            tid = t.trial_id
            if tid not in self.by_id:  # a search sample
                self.by_id[tid] = t
                if self.progress:
                    self.progress.add(t)
            self.wait_for_tracker().start_trial(t)
            if self.progress:
                self.progress.update(tid, state="RUNNING")

        def on_trial_result(self, iteration, trials, trial, result, **info):
            tid = _tid(trial)
            tracker = self.wait_for_tracker()
            meta = result.get("meta", "{}")
            if meta != seen_meta.get(tid):  # first result of each (re)start of the trial
                seen_meta[tid] = meta
                tracker.set_tags(tid, {f"ray.{k}": v for k, v in json.loads(meta).items()})
            steps = unpack_steps(result)
            for step, when, values in steps:  # every step since the trial's previous result
                tracker.log_result(tid, step, _logged(values), timestamp=when)
            if result.get("checkpointed"):
                tracker.flush(tid)  # what a checkpoint covers is on disk before the trial goes on
            if self.progress and steps:
                self.progress.update(tid, state="RUNNING", step=steps[-1][0], metrics=_logged(result))

        def on_trial_complete(self, iteration, trials, trial, **info):
            tid = _tid(trial)
            self.wait_for_tracker().end_trial(tid, "FINISHED")
            if self.progress:
                self.progress.update(tid, state="FINISHED")

        def on_trial_error(self, iteration, trials, trial, **info):
            tid = _tid(trial)
            has_file = trial.error_file and Path(trial.error_file).is_file()
            error = Path(trial.error_file).read_text() if has_file else f"trial failed: {trial.error_msg}"
            self.wait_for_tracker().end_trial(tid, "FAILED", error=str(error))
            if self.progress:
                self.progress.update(tid, state="FAILED")

    return MlflowLogger()


def _init_ray(options: RunOptions, run_dir: Path) -> None:
    import ray

    if ray.is_initialized():
        return
    if options.address:
        ray.init(address=options.address, log_to_driver=False)
    else:
        temp = (options.ray_temp_dir or run_dir / ".ray").resolve()
        temp.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("RAY_TMPDIR", str(temp))  # Ray's address file, instead of /tmp/ray
        ray.init(num_cpus=options.num_cpus, _temp_dir=str(temp), include_dashboard=False,
                 log_to_driver=False, configure_logging=False)


def run_sweep(spec: SweepSpec, options: RunOptions) -> SweepResult:
    """Run every trial of ``spec`` that is not FINISHED yet; returns the per-trial statuses."""
    from ray import tune

    started = time.time()
    run_dir = options.run_dir.resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    prepare_environment(run_dir)
    tracking_uri = options.tracking_uri or default_tracking_uri(run_dir)
    logger = _make_logger()
    opener = None
    if options.tracking_uri is None and not (run_dir / "mlflow.db").exists():
        # A new store: nothing is recorded, every trial runs. MLflow creates its tables (seconds of
        # CPU) in a thread while Ray starts (the driver mostly waits for its daemons) and Tune starts the
        # trial workers; the callbacks wait for the tracker if need be.
        recorded = None

        def open_store():
            try:
                logger.tracker = SweepTracker(spec, tracking_uri, run_dir)
            except BaseException as err:  # noqa: BLE001 - re-raised by the callbacks and below
                logger.failure = err

        opener = threading.Thread(target=open_store, daemon=True)
        opener.start()  # Ray starts at the top of the try below (a failure there ends the sweep FAILED)
    else:
        recorded = logger.tracker = SweepTracker(spec, tracking_uri, run_dir)  # before any trial
    sweep_dir = run_dir / spec.name
    results_dir = sweep_dir / "ray_results"
    scratch = sweep_dir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    if spec.search:  # the one trial of the spec is the template the samples are drawn around
        statuses, pending, by_id = {}, spec.trials[:1], {}
        shown = []
    else:
        statuses = {t.trial_id: "SKIPPED" for t in spec.trials if recorded and recorded.finished(t)}
        pending = [t for t in spec.trials if t.trial_id not in statuses]
        by_id = {t.trial_id: t for t in spec.trials}
        shown = spec.trials
    progress = LiveProgress(spec.name, shown, statuses) if options.show_progress else None
    logger.by_id, logger.progress = by_id, progress
    status = "FINISHED"
    try:
        if opener is not None:
            _init_ray(options, run_dir)
        search_kwargs = _search(spec, recorded)
        if spec.search and search_kwargs["num_samples"] == 0:
            pending = []  # every requested sample already FINISHED in an earlier run
        if pending:
            payloads = [trial_payload(t, latest_checkpoint(results_dir, t.trial_id, recorded.last_step(t.trial_id))
                                      if recorded else None, scratch, spec.report_interval_s) for t in pending]
            _init_ray(options, run_dir)
            tuner = tune.Tuner(
                tune.with_resources(run_trial, {"cpu": spec.resources.cpus, "gpu": spec.resources.gpus}),
                param_space=_param_space(spec, payloads),
                tune_config=tune.TuneConfig(max_concurrent_trials=spec.max_concurrent, scheduler=_scheduler(spec),
                                            reuse_actors=True,  # later trials skip worker start-up + imports
                                            trial_dirname_creator=_dirname, trial_name_creator=_dirname,
                                            **search_kwargs),
                run_config=tune.RunConfig(
                    name=time.strftime("attempt-%Y%m%d-%H%M%S"), storage_path=str(results_dir),
                    failure_config=tune.FailureConfig(max_failures=spec.max_failures),
                    checkpoint_config=tune.CheckpointConfig(num_to_keep=3),
                    callbacks=[logger], verbose=0),
            )
            if progress:
                with progress:
                    grid = tuner.fit()
            else:
                grid = tuner.fit()
            for r in grid:
                tid = trial_from_tune_config(r.config).trial_id
                statuses[tid] = "FAILED" if r.error else "FINISHED"
            if any(s == "FAILED" for s in statuses.values()):
                status = "FAILED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    except Exception:
        status = "FAILED"
        error = traceback.format_exc()[-4000:]
        if opener is not None:
            opener.join()
        if logger.tracker is not None:  # (else MLflow itself failed: that error propagates)
            logger.tracker.client.set_tag(logger.tracker.parent_id, "error", error)
        raise
    finally:
        if opener is not None:
            opener.join()
        if logger.tracker is not None:
            logger.tracker.end_sweep(status)
    return SweepResult(tracking_uri, logger.wait_for_tracker().parent_id, statuses, time.time() - started)


def _logged(values: dict) -> dict[str, float]:
    return {k: v for k, v in values.items() if k.startswith(LOGGED_PREFIXES) and isinstance(v, (int, float))}


def _tid(tune_trial) -> str:
    return trial_from_tune_config(tune_trial.config).trial_id


def _dirname(tune_trial) -> str:
    return _tid(tune_trial)


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
    return f"last/{metric}" if metric.startswith("val/") else metric


def _param_space(spec: SweepSpec, payloads: list[dict]) -> dict:
    from ray import tune

    if not spec.search:
        return {"trial": tune.grid_search(payloads)}
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
