"""The verl backend's train function: one trial = one verl ``main_ppo`` driver process, watched.

    train(config, report, resume_from=None, workdir=None, log=print, storage_dir=None) -> dict

(the contract of trainers/api.py). What it does, in order:

1. Inputs: the user's model directory and parquet files, or the tiny Qwen3 and the synthetic
   task built under ``verl.cache_dir`` (trainers/verl_backend/assets.py).
2. Resume: ``resume_from`` holds pointer directories this function reported earlier, newest
   first; each names one of verl's own checkpoints (``<storage>/checkpoints/global_step_N``). The
   first whose ``actor/`` directory is still there is passed to verl as
   ``trainer.resume_mode=resume_path``; none -> a fresh start (``resume_mode=disable``). The pointer
   also holds the compute sums reported at its step (metrics.py ``ComputeAxes``), which the resumed
   run continues; a pointer without them (written before they existed, or unreadable ones) restarts
   them at 0, logged.
3. GPUs: on a GPU cluster it waits (logging once, up to ``verl.gpu_wait_s``) until the cluster has
   the trial's nnodes x n_gpus_per_node GPUs free, because verl refuses to start otherwise
   ("Total available GPUs ..."); the sweep's concurrency limit keeps its own trials from
   competing for them (trainers/verl_backend/placement.py).
4. Launch: ``python -m verl.trainer.main_ppo`` (trainers/verl_backend/launch.py) in its own
   process group, joining the sweep's Ray cluster under its own namespace, with verl's ``file``
   logger writing a fresh ``attempt-K/metrics.jsonl`` (verl truncates that file on resume, so
   every attempt gets its own).
5. Watch: each complete metrics line becomes ``report(step, metrics, checkpoint)`` in contract
   names (trainers/verl_backend/metrics.py), the running compute sums added. verl saves a step's
   checkpoint before it logs the step, so a step whose ``global_step_N`` exists is reported with a
   pointer to it (holding the sums after that step). A non-finite grad norm, policy loss or
   entropy ends the process and raises TrainingDiverged (verl has applied that update already:
   unlike the local backend, the check comes after the step).
6. End: exit 0 -> the last step's metrics; any other exit -> RuntimeError with the tail of the
   process's log (Tune retries the trial from its newest checkpoint, up to max_failures).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from contract.env import CUDA_VISIBLE_DEVICES, TMPDIR
from trainers.api import Reporter, ResumeFrom, TrainingDiverged
from trainers.compute import ComputeTally
from trainers.config import TrialConfig
from trainers.verl_backend.launch import build_launch, prepare_inputs, uses_cpu
from trainers.verl_backend.metrics import ComputeAxes, MetricsTail, non_finite, translate
from trainers.verl_backend.placement import held_gpus

POINTER = "verl_checkpoint.json"  # inside each reported checkpoint directory
POLL_S = 0.5


def _candidates(resume_from: ResumeFrom) -> list[Path]:
    if resume_from is None:
        return []
    return [Path(resume_from)] if isinstance(resume_from, (str, os.PathLike)) else [Path(p) for p in resume_from]


def pick_resume(resume_from: ResumeFrom, log: Callable[[str], None]) -> tuple[str | None, int, ComputeTally | None]:
    """(verl checkpoint directory, its step, the compute sums at that step) of the newest usable candidate,
    else (None, 0, None); the sums are None (logged) when its pointer has none that can be read."""
    for candidate in _candidates(resume_from):
        try:
            pointer = json.loads((candidate / POINTER).read_text())
            path, step = Path(pointer["path"]), int(pointer["step"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            log(f"resume: skipping {candidate}: no readable {POINTER} ({type(err).__name__})")
            continue
        if not (path / "actor").is_dir():
            log(f"resume: skipping step {step}: verl checkpoint {path} is gone (max_actor_ckpt_to_keep?)")
            continue
        log(f"resume: from verl checkpoint {path} (step {step})")
        return str(path), step, _compute_of(pointer, log)
    if resume_from:
        log("resume: no usable checkpoint; starting from step 0")
    return None, 0, None


def _compute_of(pointer: dict, log: Callable[[str], None]) -> ComputeTally | None:
    try:
        return ComputeTally.from_state(pointer["compute"])
    except (KeyError, ValueError) as err:
        log(f"resume: the compute sums (perf/tokens_generated, ...) restart at 0: the pointer has none ({err})")
        return None


def _next_attempt(storage: Path) -> Path:
    storage.mkdir(parents=True, exist_ok=True)
    k = 1 + max((int(p.name.split("-")[1]) for p in storage.glob("attempt-*") if p.name.split("-")[1].isdigit()),
                default=0)
    attempt = storage / f"attempt-{k}"
    attempt.mkdir()
    return attempt


def _checkpoint_of(checkpoint_dir: Path, step: int) -> Path | None:
    path = checkpoint_dir / f"global_step_{step}"
    return path if (path / "actor").is_dir() else None


def _pointer(workdir: Path, path: Path, step: int, compute: dict | None = None) -> Path:
    """The directory reported for verl's checkpoint ``path`` of ``step``: its POINTER file names it, with the
    compute sums at that step (ComputeTally.state()) when given."""
    out = workdir / f"pointer-{step}"
    out.mkdir(parents=True, exist_ok=True)
    record = {"path": str(path), "step": step} | ({"compute": compute} if compute is not None else {})
    (out / POINTER).write_text(json.dumps(record))
    return out


def wait_for_gpus(needed: int, timeout_s: float, log: Callable[[str], None]) -> None:
    """Block until the Ray cluster this worker belongs to has ``needed`` GPUs free."""
    import ray

    deadline, told = time.monotonic() + timeout_s, False
    while True:
        free = ray.available_resources().get("GPU", 0.0)
        if free >= needed:
            return
        if time.monotonic() > deadline:
            total = ray.cluster_resources().get("GPU", 0.0)
            raise RuntimeError(f"verl trial needs {needed} GPUs; the Ray cluster had {free:g} of {total:g} free for "
                               f"{timeout_s:g}s (verl.gpu_wait_s). Free GPUs or lower max_concurrent.")
        if not told:
            log(f"waiting for {needed} free GPUs (the cluster has {free:g} free now)")
            told = True
        time.sleep(2.0)


def _ray_context() -> tuple[str | None, str]:
    """(the cluster's GCS address, a namespace prefix) when this runs inside a Ray worker."""
    try:
        import ray

        if ray.is_initialized():
            return ray.get_runtime_context().gcs_address, ray.get_runtime_context().get_job_id()
    except Exception:  # noqa: BLE001 - not in Ray: verl starts its own local instance
        pass
    return None, "local"


def _stop(proc: subprocess.Popen) -> None:
    """End the verl driver's process group: SIGTERM, then SIGKILL after 15 s."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGKILL when the thread that started it dies, so a trial
    worker killed by Ray (driver killed, stall watchdog) never leaves a verl run behind that would
    keep writing checkpoints into the trial's directory."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:  # not Linux: the process group is still ended by _stop on every normal path
        pass


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def train(config: TrialConfig, report: Reporter, resume_from: ResumeFrom = None, workdir: Path | None = None,
          log: Callable[[str], None] = print, storage_dir: Path | None = None, verdicts=None) -> dict[str, float]:
    """Run one trial through verl main_ppo (see the module docstring). ``verdicts`` is not called: verl's
    validation hands over aggregate accuracies only (trainers/api.py)."""
    workdir = Path(workdir or storage_dir or Path.cwd() / ".verl-trial")
    storage = Path(storage_dir or workdir / "storage")
    workdir.mkdir(parents=True, exist_ok=True)
    attempt = _next_attempt(storage)
    checkpoint_dir = storage / "checkpoints"
    resume_path, resumed_step, resumed_compute = pick_resume(resume_from, log)
    t = config.trainer
    compute = ComputeAxes(t.prompts_per_step * t.group_size, t.ppo_epochs,
                          None if uses_cpu(config) else held_gpus(config), resumed_compute)
    inputs = prepare_inputs(config)
    address, job = _ray_context()
    if address and not uses_cpu(config):
        wait_for_gpus(config.verl.nnodes * config.verl.n_gpus_per_node, config.verl.gpu_wait_s, log)
    launch = build_launch(config, inputs, checkpoint_dir=checkpoint_dir, resume_path=resume_path,
                          metrics_file=attempt / "metrics.jsonl", namespace=f"verl-{storage.name}-{attempt.name}-{job}",
                          ray_address=address, experiment=storage.name,
                          node_gpus=CUDA_VISIBLE_DEVICES.raw() or "")
    Path(launch.env[TMPDIR.name]).mkdir(parents=True, exist_ok=True)
    (attempt / "command.sh").write_text(launch.shell() + "\n")
    log(f"verl main_ppo: {attempt / 'command.sh'} (log: {attempt / 'main_ppo.log'})")
    benchmarks = list(config.data.benchmarks)
    tail = MetricsTail(attempt / "metrics.jsonl")
    last: dict[str, float] = {}
    with open(attempt / "main_ppo.log", "wb") as out:
        proc = subprocess.Popen(launch.argv, env={**os.environ, **launch.env}, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, cwd=attempt,
                                preexec_fn=_die_with_parent)
        try:
            while True:
                rc = proc.poll()
                for step, data in tail.read():
                    if step <= resumed_step and resume_path is not None:
                        continue  # a resumed verl repeats nothing, but be safe: steps are reported once
                    metrics = translate(data, config.verl.data_sources, benchmarks)
                    metrics.update(compute.update(data))
                    bad = non_finite(metrics)
                    if bad is not None:
                        _stop(proc)
                        raise TrainingDiverged(step, *bad)
                    ckpt = _checkpoint_of(checkpoint_dir, step)
                    report(step, metrics, _pointer(workdir, ckpt, step, compute.tally.state()) if ckpt else None)
                    last = metrics
                if rc is not None:
                    break
                time.sleep(POLL_S)
        finally:
            _stop(proc)
    if rc != 0:
        raise RuntimeError(f"verl main_ppo exited with code {rc}; the end of {attempt / 'main_ppo.log'}:\n"
                           f"{_tail(attempt / 'main_ppo.log')}")
    return {k: v for k, v in last.items() if not (isinstance(v, float) and math.isnan(v))}
