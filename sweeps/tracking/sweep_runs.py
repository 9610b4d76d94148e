"""MLflow tracking for a sweep; the driver is the only writer.

Layout: experiment = sweep name; one parent run per sweep (tags role=parent, sweep, spec_file); one nested
child run per trial (run name = trial id; params = flattened resolved config; tags trial_id,
config, method, algorithm, variant, seed, model, backend, role=trial). Metrics arrive through
Ray Tune results and are written in batches (``log_batch``). Re-running a sweep reuses the
parent and the child runs (found by tag), continues after the last logged step (no duplicated
steps), and never re-runs a FINISHED trial.

Logging is atomic per step: a flush writes whole steps only (each step's metrics end with its
``trial/step`` marker, and a ``log_batch`` is one database transaction), so a driver killed
mid-flush leaves every step either fully recorded or absent, and the resume (which continues
after the last ``trial/step``) never logs a key twice at one step.

The parent run carries the provenance (sweeps/tracking/provenance.py: git commit and diff, package versions,
host, Ray cluster) and the resolved spec (``spec/resolved.yaml``, and ``.json`` for the read commands); each child its resolved trial
config (``config/trial.yaml``).

Default store: ``sqlite:///<run dir>/mlflow.db`` with artifacts in ``<run dir>/mlartifacts``.

Ready to compare in the MLflow UI (``sweep ui NAME``; MLflow 3.17's web app): the experiment is tagged
``mlflow.experimentKind = custom_model_development`` (model training) and carries two saved views
(experiment tags ``mlflow.sharedViewState.<id>``, sweeps/ui/views.py), (re)written whenever the sweep runs:

- "Sweep curves" (``sweep-curves``; the main URL, ``store.curves_page_url``): chart mode, trial runs
  grouped by ``method`` (a mean line and min-max band per method), smoothed, only the papers' curves
  (entropy, response length, reward, ``val/avg/acc`` and ``val/<benchmark>/acc``, clip fractions);
- "Sweep trials" (``sweep-trials``; ``store.runs_page_url``): the table of trial runs (``tags.role =
  'trial'``, flat, by run name) with the columns method, seed and the key metrics.

The URLs carry ``viewStateShareKey=<id>``, ``workflowType=machine_learning`` (else the landing tab follows
the browser's GenAI/model-training choice) and, for the curves, ``compareRunsMode=CHART`` (a view cannot
set the mode). MLflow has no default view per experiment: from its experiment list the page opens the
table, and "Views > Sweep curves", then "Chart view", gives the curves.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mlflow.entities import Metric, Param, RunTag

from contract.metrics import TRIAL_STEP, verdicts_artifact
from contract.run_layout import RunLayout
from dashboards.collect.recorded_spec import RESOLVED_SPEC, RESOLVED_SPEC_JSON, dump_resolved
from sweeps.specs.load import REPO_ROOT, SpecError, SweepSpec, Trial
from sweeps.specs.trial_params import logged_params
from tracking_store.client import is_transient, open_client, sweep_parent
from tracking_store.lease import DriverLease
from tracking_store.roles import TRIAL_ID_TAG, children_filter, parent_tags, trial_tags
from tracking_store.uri import is_server, mask_uri
from sweeps.ui.views import KIND_TAG, MODEL_TRAINING, experiment_tags  # noqa: F401 (KIND_TAG...: re-exported)

BATCH_SECONDS = 2.0  # flush buffered metrics at most this often per trial
MAX_BATCH = 1000  # MLflow accepts at most 1000 metrics per log_batch


def _spec_file(path: Path) -> str:
    p = Path(path).resolve()
    return str(p.relative_to(REPO_ROOT)) if p.is_relative_to(REPO_ROOT) else str(p)


class SweepTracker:
    """Creates/reuses the experiment, parent and child runs; buffers and writes metrics."""

    def __init__(self, spec: SweepSpec, tracking_uri: str, run_dir: Path):
        self.spec, self.run_dir = spec, Path(run_dir)
        self.client = open_client(tracking_uri)
        self.tracking_uri = tracking_uri
        exp = self.client.get_experiment_by_name(spec.name)
        if exp is None:
            # a database store (sqlite, PostgreSQL): artifacts in the run dir; a server keeps its own
            artifacts = None if is_server(tracking_uri) else RunLayout(run_dir).artifacts.resolve().as_uri()
            self.experiment_id = self.client.create_experiment(spec.name, artifact_location=artifacts,
                                                               tags=experiment_tags(spec))
        else:
            self.experiment_id = exp.experiment_id
        self.parent_id = self._oldest_parent()
        self.children = self._existing_children() if self.parent_id else {}  # trial_id -> run info dict
        self.check_unchanged(spec.trials)  # before anything recorded is touched
        if self.parent_id is None:
            run = self.client.create_run(self.experiment_id, run_name=spec.name,
                                         tags=parent_tags(spec.name))
            self.parent_id = self._oldest_parent()
            if self.parent_id != run.info.run_id:  # another driver created one at the same time: one parent
                self.client.delete_run(run.info.run_id)
                self.children = self._existing_children()
        self.lease = DriverLease(self.client, self.parent_id, spec.name, run_dir)
        note = self.lease.acquire()  # SweepAlreadyRunning when another driver holds this sweep
        if note:
            print(note, file=sys.stderr)
        if exp is not None:  # recorded before: the UI tags of this spec (columns may have changed)
            for k, v in experiment_tags(spec, exp.tags).items():
                self.client.set_experiment_tag(self.experiment_id, k, v)
        self.client.update_run(self.parent_id, status="RUNNING")
        self.client.set_tag(self.parent_id, "spec_file", _spec_file(spec.path))  # named by the run's description
        self.client.log_artifact(self.parent_id, str(spec.path), "spec")
        self.record_provenance()
        self.buffers: dict[str, list[Metric]] = {}
        self.last_flush: dict[str, float] = {}

    def _oldest_parent(self) -> str | None:
        parent = sweep_parent(self.client, self.experiment_id)
        return parent.info.run_id if parent is not None else None

    def _existing_children(self, trial_id: str | None = None) -> dict[str, dict]:
        """The parent's child runs by trial id (only ``trial_id``'s when given: one indexed query)."""
        query = children_filter(self.parent_id)
        if trial_id is not None:
            query += f" and tags.{TRIAL_ID_TAG} = '{trial_id}'"
        runs = self.client.search_runs([self.experiment_id], query, max_results=50_000)
        out = {}
        for r in runs:
            tid = r.data.tags.get(TRIAL_ID_TAG)
            if tid:
                out[tid] = {"run_id": r.info.run_id, "status": r.info.status,
                            "last_step": int(r.data.metrics.get(TRIAL_STEP, -1)),
                            "config_hash": r.data.tags.get("config_hash"),
                            "stopped_by": r.data.tags.get("stopped_by")}
        return out

    def record_provenance(self) -> None:
        """Code version, packages and host on the parent run (sweeps/tracking/provenance.py), the diff of an
        uncommitted checkout and the resolved spec (after overrides, every trial's config) as artifacts.
        Updated at every (re-)run of the sweep: the tags describe the latest run."""
        from sweeps.tracking.provenance import provenance

        tags, diff = provenance()
        self.client.log_batch(self.parent_id, tags=[RunTag(k, v) for k, v in tags.items()])
        if diff.strip():
            self.client.log_text(self.parent_id, diff, "provenance/git_diff.patch")
        resolved = {"spec": self.spec.raw, "report": self.spec.report,
                    "trials": {t.trial_id: t.config.to_dict() for t in self.spec.trials}}
        as_yaml, as_json = dump_resolved(resolved)
        self.client.log_text(self.parent_id, as_yaml, RESOLVED_SPEC)
        self.client.log_text(self.parent_id, as_json, RESOLVED_SPEC_JSON)

    def check_unchanged(self, trials: list[Trial]) -> None:
        """Refuse to continue recorded trials whose resolved config changed (it would mix two runs)."""
        changed = [t.trial_id for t in trials
                   if t.trial_id in self.children and self.children[t.trial_id]["config_hash"] not in (None, t.config_hash)]
        if changed:
            raise SpecError(f"{self.spec.path}: trials {changed[:5]} were recorded in experiment '{self.spec.name}' "
                            "with a different resolved config; use a new sweep name (name: ...) or another --run-dir "
                            "so the recorded runs stay intact")

    def finished(self, trial: Trial) -> bool:
        """FINISHED with every step, or ended early by the scheduler (ASHA) or a stop rule: nothing left to run."""
        info = self.children.get(trial.trial_id)
        return bool(info and info["status"] == "FINISHED"
                    and (info["last_step"] >= trial.config.trainer.steps or bool(info.get("stopped_by"))))

    def last_step(self, trial_id: str) -> int:
        info = self.children.get(trial_id)
        return info["last_step"] if info else -1

    def start_trial(self, trial: Trial) -> str:
        """Create (or reopen) the child run of a trial; returns its run id."""
        info = self.children.get(trial.trial_id)
        if info is None:  # a retried start whose first try created the run before the store went away
            info = self._existing_children(trial.trial_id).get(trial.trial_id)
            if info:
                self.children[trial.trial_id] = info
        if info:
            self.client.update_run(info["run_id"], status="RUNNING")
            info["status"] = "RUNNING"
            return info["run_id"]
        run = self.client.create_run(self.experiment_id, run_name=trial.trial_id,
                                     tags=trial_tags(self.spec.name, self.parent_id, **trial.tags))
        run_id = run.info.run_id
        params = [Param(k, str(v)[:6000]) for k, v in logged_params(trial).items()]
        for i in range(0, len(params), 100):
            self.client.log_batch(run_id, params=params[i:i + 100])
        self.client.log_dict(run_id, trial.config.to_dict(), "config/trial.yaml")
        self.children[trial.trial_id] = {"run_id": run_id, "status": "RUNNING", "last_step": -1}
        return run_id

    def log_result(self, trial_id: str, step: int, metrics: dict[str, float], timestamp: float | None = None) -> None:
        """Buffer one step's metrics, stamped ``timestamp`` (when the step ended; default now).

        Steps already logged are skipped: retries replay them.
        """
        info = self.children[trial_id]
        if step <= info["last_step"]:
            return
        now_ms = int((time.time() if timestamp is None else timestamp) * 1000)
        if len(metrics) >= MAX_BATCH:
            raise ValueError(f"{trial_id}: step {step} has {len(metrics)} metrics; at most {MAX_BATCH - 1} fit one "
                             "atomic write")
        # One list per step, its trial/step marker last: flush writes whole steps only.
        self.buffers.setdefault(trial_id, []).append(
            [Metric(k, float(v), now_ms, step) for k, v in metrics.items()] + [Metric(TRIAL_STEP, float(step), now_ms, step)])
        info["last_step"] = step
        if time.time() - self.last_flush.get(trial_id, 0.0) > BATCH_SECONDS:
            self.flush(trial_id)

    def flush(self, trial_id: str | None = None) -> None:
        """Write buffered steps, as many whole steps per ``log_batch`` (one transaction) as fit."""
        for tid in [trial_id] if trial_id else list(self.buffers):
            steps = self.buffers.get(tid, [])
            run_id = self.children[tid]["run_id"]
            while steps:
                batch, n = [], 0
                while n < len(steps) and len(batch) + len(steps[n]) <= MAX_BATCH:
                    batch += steps[n]
                    n += 1
                self.client.log_batch(run_id, metrics=batch)
                del steps[:n]  # only what was committed leaves the buffer
            self.buffers.pop(tid, None)
            self.last_flush[tid] = time.time()

    def log_eval(self, trial_id: str, evaluations: list[dict]) -> None:
        """Log a trial's evaluations (sweeps/driver/trial.py final_evaluation) once each: metrics at their step, files."""
        from sweeps.tracking.eval_targets import log_eval

        self.flush(trial_id)
        for e in evaluations:
            log_eval(self.client, self.children[trial_id]["run_id"], int(e["step"]), e["metrics"],
                     [Path(f) for f in e["files"]], e["protocol"])

    def log_verdicts(self, trial_id: str, step: int, text: str) -> None:
        """An evaluation's per-problem verdicts as the run's artifact verdicts/val/step_<N>.json (rewritten
        whole on a replay: idempotent)."""
        self.client.log_text(self.children[trial_id]["run_id"], text, verdicts_artifact("val", step))

    def set_tags(self, trial_id: str, tags: dict[str, str]) -> None:
        run_id = self.children[trial_id]["run_id"]
        self.client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def end_trial(self, trial_id: str, status: str, error: str | None = None, reason: str | None = None) -> None:
        """Close a child run; a FAILED one carries ``failure_reason`` (tag) and the full ``error`` (artifact)."""
        self.flush(trial_id)
        run_id = self.children[trial_id]["run_id"]
        if reason:
            self.client.set_tag(run_id, "failure_reason", reason[:4000])
        if error:
            self.client.set_tag(run_id, "error", error[:4000])
            self.client.log_text(run_id, error, "error.txt")
        self.client.set_terminated(run_id, status=status)
        self.children[trial_id]["status"] = status

    def write_copy(self, final: bool = False) -> int:
        """The trial runs ended since the last segment into the sweep's read copy (tracking_store/read_copy.py),
        with the histories the spec's report reads; the number of runs written. ``final``: the driver's last
        segment (it ends every run of the sweep itself: no clock margin). The copy is derived from the store: a
        store that refuses it (not an outage) ends nothing, it is said and the read commands read the store."""
        from dashboards.model.report import ReportConfig, history_keys
        from tracking_store.read_copy import SKEW_MS, append_segment

        cfg = ReportConfig.from_dict(self.spec.report)
        try:
            return append_segment(self.client, self.tracking_uri, self.experiment_id, self.parent_id,
                                  lambda logged: history_keys(cfg, logged), scratch=self.run_dir,
                                  skew_ms=0 if final else SKEW_MS)
        except Exception as err:  # noqa: BLE001 - an outage is retried by the caller; anything else is a note
            if is_transient(err):
                raise
            print(f"note: the sweep's read copy was not written ({mask_uri(str(err))[:300]}); the read commands read "
                  "the store itself, `sweep report NAME --rebuild` writes the copy anew", file=sys.stderr)
            return 0

    def end_sweep(self, status: str) -> None:
        """Flush everything; close still-RUNNING children (KILLED); the read copy's last segment; close the parent."""
        self.flush()
        for info in self.children.values():
            if info["status"] == "RUNNING":
                self.client.set_terminated(info["run_id"], status="KILLED")
                info["status"] = "KILLED"
        self.write_copy(final=True)
        self.client.set_terminated(self.parent_id, status=status)
        self.lease.release()
