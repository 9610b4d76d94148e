"""The synthetic backend's train function (the trainer contract of trainers/api.py), without a model.

Every step sleeps ``synthetic.step_seconds`` and reports ``STEP_METRICS`` and the compute axes
``COMPUTE_METRICS`` (plus DHPO's mixing weight for DHPO); step 0, every ``trainer.eval_every`` steps
and the last step also report ``val/<benchmark>/acc`` and ``val/avg/acc`` (and ``select/...`` with
``data.select_size``). The values are a deterministic function of (algorithm, params, seed, step,
key), so a resumed trial reports exactly what an uninterrupted one does.

The compute axes are nominal sums over steps 1..k of such functions: each step samples
round(response_length/mean x prompts_per_step x group_size) tokens, trains on that x ppo_epochs and
takes ``synthetic.step_seconds`` (the perf/step_time_s it reports, not the measured sleep); no GPU,
so no perf/gpu_s. A resume recomputes the sums up to its step, so they too equal an uninterrupted run's.

A checkpoint (``synthetic_state.json`` in ``<workdir>/checkpoint_<step>``) is written every
``trainer.checkpoint_every`` steps and at the last.

    from trainers.synthetic.trainer import train
    train(TrialConfig.from_dict({"backend": "synthetic", "trainer": {"steps": 5}}), print_report)
"""

from __future__ import annotations

import json
import math
import os
import random
import time
import zlib
from pathlib import Path

from contract.metrics import (CLIP_FRACTION, CLIP_FRACTION_SEQ, CLIP_FRACTION_TOKEN, ENTROPY, GRAD_NORM, MIX_WEIGHT,
                              PPO_KL, RESPONSE_LENGTH_MAX, RESPONSE_LENGTH_MEAN, REWARD_MEAN, STEP_TIME, TOKENS_PER_S,
                              VAL_AVG, selection_key, val_key)
from trainers.api import Reporter, ResumeFrom, TrainingDiverged, VerdictSink
from trainers.compute import ComputeTally
from trainers.config import TrialConfig

STATE_FILE = "synthetic_state.json"
FAILURES_FILE = "synthetic_failures"
"""In the trial's durable directory: how many attempts have failed at ``synthetic.fail_at_step``."""


def _config_key(cfg: TrialConfig) -> str:
    return json.dumps([cfg.algorithm.name, cfg.algorithm.params], sort_keys=True, default=str)


def _noise(*parts: object) -> float:
    """A number in [-1, 1) fixed by ``parts`` (string seeds are hashed with SHA-512: no PYTHONHASHSEED)."""
    return random.Random("|".join(map(str, parts))).uniform(-1.0, 1.0)


def crash_step(cfg: TrialConfig, key: str | None = None) -> int:
    """The step a trial crashes at: ``synthetic.fail_at_step``, else, for ``crash_fraction`` of the trials, one
    drawn from crash_seed, the configuration and the seed; 0: never."""
    s = cfg.synthetic
    if s.fail_at_step or not s.crash_fraction:
        return s.fail_at_step
    draw = random.Random(f"crash|{s.crash_seed}|{key or _config_key(cfg)}|{cfg.seed}")
    return draw.randint(1, cfg.trainer.steps) if draw.random() < s.crash_fraction else 0


class SyntheticRun:
    def __init__(self, cfg: TrialConfig, log):
        self.cfg, self.log, self.step = cfg, log, 0
        self.key = _config_key(cfg)
        self.strength = (zlib.crc32(self.key.encode()) % 1000) / 1000  # each configuration its own curve
        self.crash_at = crash_step(cfg, self.key)
        self.compute = ComputeTally()

    def accuracy(self, benchmark: str, step: int) -> float:
        t = self.cfg.trainer
        rise = 1.0 - math.exp(-3.0 * step / max(t.steps, 1))
        base = 0.15 + 0.1 * ((zlib.crc32(benchmark.encode()) % 100) / 100)
        value = base + 0.3 * self.strength * rise + 0.03 * _noise(self.key, self.cfg.seed, step, benchmark)
        return min(1.0, max(0.0, value))

    def evaluate(self, step: int) -> dict[str, float]:
        time.sleep(self.cfg.synthetic.eval_seconds)
        d = self.cfg.data
        scores = {val_key(b): self.accuracy(b, step) for b in d.benchmarks}
        scores[VAL_AVG] = sum(scores.values()) / len(scores)
        if d.select_size or d.select_files:
            names = list(d.select_files) or list(d.benchmarks)
            select = {val_key(b): self.accuracy("select:" + b, step) for b in names}
            select[VAL_AVG] = sum(select.values()) / len(select)
            scores.update({selection_key(k): v for k, v in select.items()})
        return scores

    def response_length(self, step: int) -> float:
        """response_length/mean of a step: 40 tokens rising to 50 over the trial, +-2."""
        progress = step / max(self.cfg.trainer.steps, 1)
        return 40.0 + 10.0 * progress + 2.0 * _noise(self.key, self.cfg.seed, step, "length")

    def spend(self, step: int) -> dict[str, float]:
        """Fold step ``step`` into the compute sums (steps in order); the cumulative COMPUTE_METRICS after it."""
        t = self.cfg.trainer
        generated = round(self.response_length(step) * t.prompts_per_step * t.group_size)
        return self.compute.add(generated, generated * t.ppo_epochs, self.cfg.synthetic.step_seconds, None)

    def step_metrics(self, step: int) -> dict[str, float]:
        """The step's metrics, the compute sums included: call once per step, in order."""
        t, n = self.cfg.trainer, lambda what: _noise(self.key, self.cfg.seed, step, what)
        progress = step / max(t.steps, 1)
        metrics = {ENTROPY: 1.2 * (1.0 - 0.5 * progress) + 0.05 * n("entropy"),
                   RESPONSE_LENGTH_MEAN: self.response_length(step),
                   RESPONSE_LENGTH_MAX: float(t.max_new_tokens),
                   REWARD_MEAN: self.accuracy("train", step),
                   CLIP_FRACTION: 0.02 + 0.01 * n("clip"), CLIP_FRACTION_TOKEN: 0.02 + 0.01 * n("clip_token"),
                   CLIP_FRACTION_SEQ: 0.01 + 0.005 * n("clip_seq"), PPO_KL: 1e-3 * (1.5 + n("kl")),
                   GRAD_NORM: 0.5 + 0.2 * n("grad"), STEP_TIME: self.cfg.synthetic.step_seconds,
                   TOKENS_PER_S: 1000.0 + 100.0 * n("tps")}
        if self.cfg.algorithm.name == "dhpo":
            metrics[MIX_WEIGHT] = 0.5 + 0.1 * n("mix")
        metrics.update(self.spend(step))
        return metrics

    def save(self, directory: Path, final: dict[str, float]) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps({"step": self.step, "config": self.key, "final": final}))
        os.replace(tmp, directory / STATE_FILE)
        return directory

    def resume(self, candidates: list[Path]) -> dict[str, float] | None:
        """The newest readable checkpoint of this configuration (its last metrics), or None: step 0."""
        for path in candidates:
            try:
                state = json.loads((Path(path) / STATE_FILE).read_text())
                if state["config"] != self.key or not isinstance(state["step"], int):
                    raise ValueError(f"a checkpoint of another configuration ({state['config']})")
            except (OSError, ValueError, KeyError, TypeError) as err:
                self.log(f"skipping checkpoint {path}: {type(err).__name__}: {err}")
                continue
            self.step = state["step"]
            for step in range(1, self.step + 1):  # the sums an uninterrupted run had at this step
                self.spend(step)
            self.log(f"resumed from {path} at step {self.step}")
            return dict(state["final"])
        self.log("no readable checkpoint: starting from step 0")
        return None

    def fail_if_told(self, step: int, storage_dir: Path | None) -> None:
        s = self.cfg.synthetic
        if step == s.diverge_at_step:
            raise TrainingDiverged(step, "loss")
        if step != self.crash_at:
            return
        counter = Path(storage_dir) / FAILURES_FILE if storage_dir is not None else None
        failed = int(counter.read_text()) if counter is not None and counter.is_file() else 0
        if s.fail_attempts and failed >= s.fail_attempts:
            return
        if counter is not None:
            counter.parent.mkdir(parents=True, exist_ok=True)
            counter.write_text(str(failed + 1))
        why = "synthetic.fail_at_step" if s.fail_at_step else "synthetic.crash_fraction"
        raise RuntimeError(f"synthetic failure at step {step} ({why}; attempt {failed + 1})")


def train(config: TrialConfig, report: Reporter, resume_from: ResumeFrom = None, workdir: Path | None = None,
          log=print, storage_dir: Path | None = None, verdicts: VerdictSink | None = None) -> dict[str, float]:
    """Run one synthetic trial (trainers/api.py contract); ``verdicts`` is not called (no problems)."""
    run, t = SyntheticRun(config, log), config.trainer
    final: dict[str, float] = {}
    if resume_from is not None:
        candidates = [resume_from] if isinstance(resume_from, (str, os.PathLike)) else list(resume_from)
        final = run.resume([Path(c) for c in candidates]) or {}
    if run.step == 0:
        final = run.evaluate(0)
        report(0, dict(final), None)
    while run.step < t.steps:
        step = run.step + 1
        time.sleep(config.synthetic.step_seconds)
        run.fail_if_told(step, storage_dir)
        run.step = step
        metrics = run.step_metrics(step)
        if step % t.eval_every == 0 or step == t.steps:
            metrics.update(run.evaluate(step))
        final.update(metrics)
        checkpoint = None
        due = t.checkpoint_every and step % t.checkpoint_every == 0
        if workdir is not None and (due or step == t.steps):
            checkpoint = run.save(Path(workdir) / f"checkpoint_{step:06d}", final)
        report(step, metrics, checkpoint)
    return final
