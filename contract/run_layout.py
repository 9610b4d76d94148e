"""Where everything lives under a run directory (``--run-dir``, default ``runs/``), spelled once.

    from contract.run_layout import RunLayout, SweepLayout
    run = RunLayout(Path("runs"))
    run.store                          # runs/mlflow.db
    sweep = run.sweep("grid")
    sweep.ray_results                  # runs/grid/ray_results
    sweep.trial_eval_dir("grpo.s0", 200)   # runs/grid/trials/grpo.s0/eval/step_200
    sweep.lock                         # runs/.locks/grid.lock
    SweepLayout.of_scratch(sweep.scratch) == sweep   # a Ray worker is given only the scratch dir

The tree (``<sweep>`` is the spec's ``name``, ``<trial>`` a trial id such as ``grpo.s0``)::

    <run dir>/
      mlflow.db                          store            the default MLflow store (sqlite)
      mlartifacts/                       artifacts        its artifacts (reports, resolved specs, configs)
      .locks/                            locks
        <sweep>.lock, <sweep>.lock.owner SweepLayout.lock one driver per sweep (sweeps/tracking/lock.py)
        mlflow-store.lock                store_lock       creating a sqlite store (beside any sqlite store)
      .ray/                              ray_temp         the local Ray temp dir (sessions, sockets, logs; tmp/:
                                                          its processes' TMPDIR unless one is set)
      .cache/huggingface/, matplotlib/,  cache(name)      HF_HOME, MPLCONFIGDIR, TORCHINDUCTOR_CACHE_DIR and
        torchinductor/, triton/, tmp/                     TRITON_CACHE_DIR of the sweep's processes; tmp/: the
                                                          TMPDIR of `sweep ui`'s server unless one is set
      logs/mlflow-ui.log                 ui_log           `sweep ui`'s MLflow server output
      eval/                              eval_dir         `sweep eval DIR` of a bare checkpoint (experiment ``eval``)
        <name>-<hash>/step_<N>/          checkpoint_eval_dir(key, step)
        .downloads/<run id>/             eval_download(run_id)   a trial's logged config, fetched back
      <sweep>/                           SweepLayout.dir
        ray_results/                     ray_results      Ray Tune's experiments, one per driver run:
          attempt-<date>-<time>/<trial>/checkpoint_*/{STEP, trial.json}    step_files(trial)
        scratch/                         scratch          what trials and the driver exchange
          <trial>.note, <trial>.stalled  note, stall_marker
          trial-*/                       (ATTEMPT_PREFIX) one attempt's scratch, removed when it ends
        trials/<trial>/                  trial_dir        a trial's durable files, the same for every attempt
          eval/step_<N>/                 trial_eval_dir   its final checkpoint's evaluation
          ...                            the backend's own (verl: checkpoints/, attempt-<k>/)
        base_eval/                       base_eval        the base policies' evaluations, shared by the trials
        tracking/journal-<hash>.jsonl    journal(uri)     steps held for the store (one journal per store URI)
        report/                          report           tables, report.html, figures/

Under an evaluation directory (``step_<N>/``) trial_eval/eval_run.py keeps ``<protocol hash>/`` and
``model/``; under ``report/`` dashboards/report/writer.py its files. Those are theirs, not the run's.

Pure pathlib (no I/O, no platform imports): every floor imports it. Nothing here creates a directory.
Resume depends on these names: changing one orphans the runs already on disk.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

STEP_FILE = "STEP"
"""Written into every checkpoint directory a trial reports: the step it holds."""
TRIAL_FILE = "trial.json"
"""Written beside it: the trial config, so the checkpoint can be evaluated on its own."""
RAY_ATTEMPT_FORMAT = "attempt-%Y%m%d-%H%M%S"
"""``time.strftime`` format of a driver run's Ray Tune experiment under ``ray_results/``."""
ATTEMPT_PREFIX = "trial-"
"""Prefix of one trial attempt's temporary directory under ``scratch/``."""


@dataclass(frozen=True)
class RunLayout:
    """The run directory's own paths (see the module docstring)."""

    dir: Path

    def __post_init__(self):
        object.__setattr__(self, "dir", Path(self.dir))

    @property
    def store(self) -> Path:
        """The default MLflow store, a sqlite file (``sqlite:///<run dir>/mlflow.db``)."""
        return self.dir / "mlflow.db"

    @property
    def artifacts(self) -> Path:
        """The default store's artifact root."""
        return self.dir / "mlartifacts"

    @property
    def locks(self) -> Path:
        """The lock files' folder."""
        return self.dir / ".locks"

    @property
    def store_lock(self) -> Path:
        """Held while a sqlite store in this folder is opened (and, if new, created)."""
        return self.locks / "mlflow-store.lock"

    @property
    def ray_temp(self) -> Path:
        """The default local Ray temp dir."""
        return self.dir / ".ray"

    def cache(self, name: str) -> Path:
        """A tool's cache of the sweep's processes, e.g. ``cache("huggingface")``."""
        return self.dir / ".cache" / name

    @property
    def logs(self) -> Path:
        """Log files of commands that run a server."""
        return self.dir / "logs"

    @property
    def ui_log(self) -> Path:
        """`sweep ui`'s MLflow server output (appended to)."""
        return self.logs / "mlflow-ui.log"

    @property
    def eval_dir(self) -> Path:
        """Evaluations of bare checkpoints (`sweep eval DIR`); named like their MLflow experiment."""
        return self.dir / "eval"

    def checkpoint_eval_dir(self, key: str, step: int) -> Path:
        """A bare checkpoint's evaluation at ``step``; ``key`` names the checkpoint (``<name>-<hash of its path>``)."""
        return self.eval_dir / key / f"step_{step}"

    def eval_download(self, run_id: str) -> Path:
        """Where a trial run's logged files are downloaded to (`sweep eval` of a checkpoint without trial.json)."""
        return self.eval_dir / ".downloads" / run_id

    def sweep(self, name: str) -> SweepLayout:
        """The layout of sweep ``name`` in this run directory."""
        return SweepLayout(self, name)


@dataclass(frozen=True)
class SweepLayout:
    """One sweep's paths in a run directory (see the module docstring).

    A Ray worker is given only a path inside the sweep dir; ``of_dir``, ``of_scratch`` and
    ``of_ray_results`` rebuild the layout from one (the inverse of ``dir``, ``scratch`` and
    ``ray_results``). A path that is not such a directory of some
    layout is a ValueError: a wrong path fails here instead of pointing elsewhere."""

    run: RunLayout
    name: str

    @classmethod
    def of_dir(cls, sweep_dir: Path | str) -> SweepLayout:
        """The layout whose ``dir`` is ``sweep_dir``."""
        sweep_dir = Path(sweep_dir)
        return cls(RunLayout(sweep_dir.parent), sweep_dir.name)

    @classmethod
    def of_scratch(cls, scratch: Path | str) -> SweepLayout:
        """The layout whose ``scratch`` is ``scratch`` (a trial payload's ``scratch_dir``)."""
        return cls.of_dir(Path(scratch).parent)._inverse_of("scratch", scratch)

    @classmethod
    def of_ray_results(cls, ray_results: Path | str) -> SweepLayout:
        """The layout whose ``ray_results`` is ``ray_results`` (Tune's ``storage_path``)."""
        return cls.of_dir(Path(ray_results).parent)._inverse_of("ray_results", ray_results)

    def _inverse_of(self, attribute: str, path: Path | str) -> SweepLayout:
        if getattr(self, attribute) != Path(path):
            raise ValueError(f"{path} is not a sweep's {attribute} directory (<sweep dir>/{getattr(self, attribute).name})")
        return self

    @property
    def dir(self) -> Path:
        """The sweep's own directory, ``<run dir>/<sweep>``."""
        return self.run.dir / self.name

    @property
    def lock(self) -> Path:
        """The sweep's driver lock (its holder in ``<lock>.owner`` beside it)."""
        return self.run.locks / f"{self.name}.lock"

    @property
    def ray_results(self) -> Path:
        """Ray Tune's storage path: one experiment per driver run (``RAY_ATTEMPT_FORMAT``), checkpoints in it."""
        return self.dir / "ray_results"

    def step_files(self, trial_id: str) -> list[Path]:
        """The ``STEP`` files of trial ``trial_id``'s checkpoints under ``ray_results``, every driver run's."""
        return list(self.ray_results.glob(f"*/{trial_id}/checkpoint_*/{STEP_FILE}"))

    @property
    def scratch(self) -> Path:
        """Files trials and the driver exchange, and each attempt's temporary directory."""
        return self.dir / "scratch"

    def note(self, trial_id: str) -> Path:
        """A trial's latest line before its first step, shown by the driver."""
        return self.scratch / f"{trial_id}.note"

    def stall_marker(self, trial_id: str) -> Path:
        """Where a stalled trial's watchdog leaves the reason for the driver."""
        return self.scratch / f"{trial_id}.stalled"

    @property
    def trials(self) -> Path:
        """The trials' durable directories."""
        return self.dir / "trials"

    def trial_dir(self, trial_id: str) -> Path:
        """A trial's durable directory (the backends' ``storage_dir``): the same for every attempt."""
        return self.trials / trial_id

    def trial_eval_dir(self, trial_id: str, step: int) -> Path:
        """The evaluation directory of a trial's checkpoint at ``step``."""
        return self.trial_dir(trial_id) / "eval" / f"step_{step}"

    @property
    def base_eval(self) -> Path:
        """The base policies' evaluations, ``<hash of the base>/`` each, shared by the sweep's trials."""
        return self.dir / "base_eval"

    def journal(self, tracking_uri: str) -> Path:
        """The tracking journal for store ``tracking_uri``: one per store, so two stores never share steps."""
        digest = hashlib.sha1(tracking_uri.encode()).hexdigest()[:12]
        return self.dir / "tracking" / f"journal-{digest}.jsonl"

    @property
    def report(self) -> Path:
        """The end-of-sweep report (`sweep run`, `sweep report NAME`)."""
        return self.dir / "report"


def checkpoint_candidates(results_dir: Path, trial_id: str, max_step: int, keep: int = 3) -> list[Path]:
    """A trial's checkpoints across earlier attempts holding a step <= ``max_step``, newest first;
    ``results_dir`` is a sweep's ``ray_results`` (contract/run_layout.py, else a ValueError).

    ``max_step`` is the last step recorded in MLflow: a killed driver may have lost the metrics of
    the steps after it, so the trial resumes early enough to replay them (already-logged steps are
    skipped), and every step ends up logged exactly once. Older candidates are fallbacks for a
    newest one that turns out unreadable (truncated, corrupt).
    """
    found = []
    for step_file in SweepLayout.of_ray_results(results_dir).step_files(trial_id):
        try:
            step = int(step_file.read_text().strip())
        except (OSError, ValueError):
            continue
        if step <= max_step:
            found.append((step, step_file.stat().st_mtime, step_file.parent))
    return [path for _, _, path in sorted(found, reverse=True)[:keep]]
