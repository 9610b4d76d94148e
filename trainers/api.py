"""The trainer contract shared by every backend and by the sweep runner.

    train(config: TrialConfig, report: Reporter, resume_from: Path | list[Path] | None = None,
          workdir: Path | None = None, log=print, storage_dir: Path | None = None,
          verdicts: VerdictSink | None = None) -> dict
    Reporter(step, metrics: dict[str, float], checkpoint_dir: Path | None)
    VerdictSink(step, text)

A backend calls ``report`` once per logged step with the metric names of the contract in
contract/metrics.py (``STEP_METRICS`` every step, ``val_metrics`` at evaluations) and, when it
wrote a checkpoint at that step, the checkpoint directory.

A backend that knows which problems each evaluation got right calls ``verdicts(step, text)`` before
the ``report`` of that step, ``text`` an evaluators/verdicts.py document (the local backend does;
verl's validation hands over aggregates only, so the verl backend ignores it). The sweep's trial
logs it as the artifact contract.metrics.verdicts_artifact("val", step) of the trial's run.

``workdir`` is this attempt's scratch space (deleted when the attempt ends); ``storage_dir`` is
the trial's durable directory, the same path for every retry and re-run of the trial (the local
backend does not need it; the verl backend keeps verl's own checkpoints there and passes
``report`` a small pointer directory, because Tune copies every reported checkpoint).

``resume_from`` is a directory previously passed to ``report``, or a list of such directories
ordered newest first. The backend resumes from the first candidate it can read completely
(a missing, truncated, corrupt or mismatched checkpoint is skipped with a log line and the
next older one is tried); when none is readable it logs so and starts from step 0. A bad
newest checkpoint therefore costs the steps since the older one, never the whole trial.
Checkpoints are loaded without unpickling arbitrary objects (``torch.load(weights_only=True)``),
so a file planted in a run directory cannot execute code.

A backend raises ``TrainingDiverged`` when training diverges (a non-finite loss, gradient
norm or logged metric), before the offending update touches the parameters. The sweep runner
marks such a trial FAILED and does not retry it: a retry from the last checkpoint would
replay the same deterministic steps into the same divergence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from trainers.config import TrialConfig

Reporter = Callable[[int, dict, "Path | None"], None]
VerdictSink = Callable[[int, str], None]
# One checkpoint directory, or candidates ordered newest first (see the module docstring).
ResumeFrom = Path | list[Path] | None


class TrainingDiverged(RuntimeError):
    """Training produced a non-finite value; the trial is a failure, not worth a retry.

    ``step`` is the RL step being computed (1-based, as reported), ``what`` the quantity that
    went non-finite: ``"loss"``, ``"grad_norm"`` or a logged metric name such as
    ``"actor/entropy"``; ``value`` is that value (nan, inf or -inf).
    """

    def __init__(self, step: int, what: str, value: float = float("nan")):
        super().__init__(f"diverged at step {step}: non-finite {what} ({value})")
        self.step, self.what, self.value = step, what, value

    def __reduce__(self):  # picklable across processes (Ray) with its attributes intact
        return (type(self), (self.step, self.what, self.value))


class Trainer(Protocol):
    def __call__(self, config: TrialConfig, report: Reporter, resume_from: ResumeFrom = None,
                 workdir: Path | None = None, log: Callable[[str], None] = print,
                 storage_dir: Path | None = None, verdicts: VerdictSink | None = None) -> dict: ...


class CheckpointNotUsable(ValueError):
    """A path that is no checkpoint we can evaluate (a backend's ``export_hf`` hook); the message says what was expected."""


@dataclass
class Placement:
    """Where a sweep's trials run on Ray (a backend's ``placement`` hook, or the Tune slot alone)."""

    tune_resources: dict[str, float]
    """The Tune slot of each trial."""
    max_concurrent: int
    """Trials at once."""
    gpus_per_trial: int
    """GPUs (logical on a CPU platform) each trial's own placement groups take outside its slot; 0: none."""
    local_cpus: int | None = None
    """CPUs a local ray.init declares (None: the machine's)."""
    local_gpus: int | None = None
    """GPUs a local ray.init declares (None: the visible ones)."""
    local_gpu_ids: str | None = None
    """CUDA_VISIBLE_DEVICES of a local Ray's node (packing: the one GPU's id once per trial sharing it); None: as is."""
