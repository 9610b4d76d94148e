"""The built-in RLVR trainer: group sampling, verifiable rewards, any objective of the zoo.

One step = sample ``prompts_per_step`` prompts x ``group_size`` responses at temperature 1
(KV cache, behaviour log-probs recorded at sampling), score them with the verifier,
group-normalise advantages (DHPO eq. 1), then ``updates_per_rollout`` AdamW mini-batch
updates with the configured objective (later mini-batches are off-policy: SSPO's mu), repeated
``ppo_epochs`` times over the same mini-batches in the same order (verl's ppo_epochs).
Evaluation (Avg@k or greedy Pass@1 per benchmark) runs at step 0 (the base model), every
``eval_every`` steps and at the last step. Every step also reports the compute spent so far
(trainers/compute.py): response tokens sampled, response tokens trained on (each of the ppo_epochs
passes counting: generated x ppo_epochs), wall seconds of the steps (evaluation and checkpoint
writes excluded) and, on cuda, GPU-seconds (wall x the GPU share Ray gave the trial, else 1).
Checkpoints hold model, optimizer, scheduler, RNG states, the step and those sums, so a resumed run
continues bit-exactly (CPU, same thread count; wall-clock values aside); they are
written atomically and loaded with weights_only=True (trainers/local/checkpoint.py), and a
resume falls back from an unreadable checkpoint to the next older candidate.

Divergence (a non-finite loss, gradient norm or logged metric) raises
trainers.api.TrainingDiverged before the optimizer applies the offending update, so the
parameters never hold NaN/inf and the trial ends as a failure instead of "finishing" on garbage.

    python -m trainers.local [CONFIG.yaml] [key=value ...] [--smoke]
"""

from __future__ import annotations

import math
import os
import random
import time
from pathlib import Path

import torch

from contract.metrics import CLIP_FRACTION, CLIP_FRACTION_SEQ, CLIP_FRACTION_TOKEN, ENTROPY, GRAD_NORM, LR, PG_LOSS, RESPONSE_LENGTH_MAX, RESPONSE_LENGTH_MEAN, REWARD_ANSWER_MEAN, REWARD_FORMAT_MEAN, REWARD_MEAN, STEP_TIME, TOKENS_PER_S, VAL, VAL_AVG, selection_key, val_key
from evaluators.generation import HFGenerator, SamplingParams
from evaluators.rewards import compute_reward
from evaluators.scoring import evaluate_benchmark
from evaluators.tasks import Problem
from evaluators.verdicts import dumps as dumps_verdicts
from policy.model import load_policy, resolve_device
from policy.rollout import Rollout, sample, score
from trainers.api import Reporter, ResumeFrom, TrainingDiverged, VerdictSink
from trainers.compute import ComputeTally, ray_gpu_share
from trainers.config import TrialConfig
from trainers.local.advantages import group_advantages
from trainers.local.checkpoint import check_model_state, check_optimizer_state, read_state, write_state
from trainers.local.data import load_data, load_selection
from trainers.local.numerics import apply_numerics
from trainers.local.optimizer import WarmupAdamW
from trainers.local.warmstart import ensure_base_checkpoint
from trainers.objectives import OBJECTIVES, PolicyBatch

EVAL_CHUNK = 256  # sequences per evaluation generation batch


def _encode(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def _decode(tokenizer, ids: torch.Tensor, mask: torch.Tensor) -> list[str]:
    return [tokenizer.decode(row[m.bool()].tolist(), skip_special_tokens=True) for row, m in zip(ids, mask)]


def evaluate(model, tokenizer, benchmarks: dict[str, list[Problem]], cfg: TrialConfig, step: int,
             records: dict[str, list[dict]] | None = None) -> dict[str, float]:
    """val/<benchmark>/acc and val/avg/acc: Pass@1, greedy or averaged over eval_k samples at temperature 1,
    through the shared evaluation path (evaluators/scoring.py) on raw prompts. ``records``: filled with
    each benchmark's per-problem records (for the verdicts artifact, evaluators/verdicts.py)."""
    t = cfg.trainer
    greedy = t.eval_mode == "greedy"
    params = SamplingParams(n=1 if greedy else t.eval_k, temperature=1.0, max_new_tokens=t.max_new_tokens,
                            greedy=greedy)
    generator = HFGenerator(model, tokenizer, batch_size=EVAL_CHUNK)
    # A separate generator: evaluation never perturbs the training RNG stream.
    stream = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
    metrics = {}
    for name, problems in benchmarks.items():
        result = evaluate_benchmark(generator, name, problems, params, torch_generator=stream)
        metrics[val_key(name)] = result.metrics["avg_at_k"]
        if records is not None:
            records[name] = result.records
    metrics[VAL_AVG] = sum(metrics.values()) / len(metrics)
    return metrics


def _subset(ro: Rollout, idx: torch.Tensor) -> Rollout:
    """Rows ``idx`` without all-padding columns (leading prompt ones, trailing response ones)."""
    width = int(ro.response_mask[idx].sum(1).max().item())
    start = ro.prompt_mask.shape[1] - int(ro.prompt_mask[idx].sum(1).max().item())
    return Rollout(ro.prompt_ids[idx, start:], ro.prompt_mask[idx, start:], ro.response_ids[idx, :width],
                   ro.response_mask[idx, :width], ro.old_log_probs[idx, :width])


def _check_finite(step: int, metrics: dict[str, float]) -> None:
    """Raise TrainingDiverged naming the first non-finite metric (floats only: no device work)."""
    for key, value in metrics.items():
        if not math.isfinite(value):
            raise TrainingDiverged(step, key, value)


def _complete_metrics(name: str, m: dict[str, float]) -> dict[str, float]:
    """Every objective logs the same clip-fraction keys: its actor/pg_clipfrac also fills
    actor/clipfrac_<level> for the level its ObjectiveSpec.clipfrac_level declares; 0 where it has no such clip."""
    level = OBJECTIVES[name].clipfrac_level
    if level:
        m.setdefault({"token": CLIP_FRACTION_TOKEN, "seq": CLIP_FRACTION_SEQ}[level], m.get(CLIP_FRACTION, 0.0))
    m.setdefault(CLIP_FRACTION, 0.0)
    m.setdefault(CLIP_FRACTION_TOKEN, 0.0)
    m.setdefault(CLIP_FRACTION_SEQ, 0.0)
    return m


class LocalTrainer:
    """State of one trial; ``run`` drives the loop. Use ``train(...)`` below."""

    def __init__(self, cfg: TrialConfig, log=print):
        self.cfg, self.log = cfg, log
        self.numerics = apply_numerics(cfg.local)  # NumericsError when the mode does not hold in this process
        torch.set_num_threads(cfg.local.threads)
        torch.manual_seed(cfg.seed)
        self.train_problems, self.benchmarks = load_data(cfg)
        self.selection = load_selection(cfg)  # {} unless data.select_size / select_files
        base_dir = ensure_base_checkpoint(cfg, self.train_problems, log)
        self.device = resolve_device(cfg.local.device)
        self.model, self.tokenizer = load_policy(base_dir, self.device, cfg.local.dtype)
        self.objective = cfg.algorithm.objective()
        self.opt = self._new_optimizer()
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.rng = random.Random(cfg.seed)
        self.step = 0
        self.compute = ComputeTally()
        self.gpus = ray_gpu_share() if self.device.type == "cuda" else None  # None: no perf/gpu_s on the CPU

    def _new_optimizer(self) -> WarmupAdamW:
        t = self.cfg.trainer
        return WarmupAdamW(self.model.parameters(), lr=t.lr, weight_decay=t.weight_decay,
                           warmup_steps=t.warmup_steps,
                           fused=self.device.type in ("cpu", "cuda"))  # one kernel for all parameters

    # ---- checkpoints (format and safety: trainers/local/checkpoint.py) -----------------------
    def save(self, directory: Path) -> Path:
        return write_state(Path(directory), {
            "step": self.step, "model": self.model.state_dict(), "opt": self.opt.state_dict(),
            "sched": self.opt.schedule_state_dict(), "gen": self.gen.get_state(), "rng": self.rng.getstate(),
            "torch_rng": torch.get_rng_state(), "compute": self.compute.state(),
        })

    def load(self, directory: Path) -> None:
        """Restore a checkpoint, or raise and leave this trainer exactly as it was.

        Everything is read and checked first; each piece of state is built on a fresh object
        (optimizer, generators) that is swapped in only once all of them succeeded. Generator
        states stay on the CPU (map_location) whatever the model's device.
        """
        state = read_state(Path(directory), "cpu")
        check_model_state(self.model, state["model"])
        check_optimizer_state(self.opt.params, state["opt"])
        opt = self._new_optimizer()
        opt.load_state_dict(state["opt"], state["sched"])
        gen = torch.Generator().set_state(state["gen"])
        rng = random.Random()
        rng.setstate(state["rng"])
        # a checkpoint written before the compute sums existed restarts them at 0
        compute = ComputeTally.from_state(state["compute"]) if state["compute"] is not None else ComputeTally()
        torch.Generator().set_state(state["torch_rng"])  # validates the global generator's state, same layout
        # Nothing below can fail on state that passed the checks above.
        self.model.load_state_dict(state["model"])
        self.opt, self.gen, self.rng, self.step, self.compute = opt, gen, rng, state["step"], compute
        torch.set_rng_state(state["torch_rng"])

    def resume(self, candidates: list[Path]) -> Path | None:
        """Load the first readable candidate (newest first); None (and step 0) when none is."""
        for n, directory in enumerate(candidates, 1):
            try:
                self.load(directory)
                return directory
            except Exception as err:  # any unreadable candidate: missing, truncated, unsafe, mismatched
                then = "; falling back to the next older one" if n < len(candidates) else ""
                self.log(f"checkpoint {directory} unreadable ({_brief(err)}){then}")
        if candidates:
            self.log(f"no readable checkpoint among {len(candidates)} candidates; starting from step 0")
        return None

    # ---- one RL step ---------------------------------------------------------------------
    def rl_step(self) -> dict[str, float]:
        t, tok = self.cfg.trainer, self.tokenizer
        started = time.perf_counter()
        problems = self.rng.sample(self.train_problems, min(t.prompts_per_step, len(self.train_problems)))
        group = [p for p in problems for _ in range(t.group_size)]
        self.model.eval()
        ro = sample(self.model, [_encode(tok, p.prompt) for p in group], max_new_tokens=t.max_new_tokens,
                    eos_id=tok.eos_token_id, pad_id=tok.pad_token_id, temperature=t.temperature,
                    top_p=t.top_p, generator=self.gen)
        texts = _decode(tok, ro.response_ids, ro.response_mask)
        rewards = [compute_reward(x, p.answer, self.cfg.reward) for x, p in zip(texts, group)]
        reward = torch.tensor([r["reward"] for r in rewards], dtype=torch.float32)
        advantages = group_advantages(reward.view(len(problems), t.group_size)).flatten().to(self.device)
        lengths = ro.response_mask.sum(1).float()

        self.model.train()
        order = torch.randperm(len(group), generator=self.gen).to(self.device)
        sums: dict[str, float] = {}
        mini_batches = [(idx, _subset(ro, idx)) for idx in order.chunk(t.updates_per_rollout)]
        n_updates = len(mini_batches) * t.ppo_epochs
        generated = int(ro.response_mask.sum())
        trained = sum(int(mb.response_mask.sum()) for _, mb in mini_batches) * t.ppo_epochs  # every pass counts
        # verl's order: every epoch walks the same mini-batches in the same order
        for idx, mb in mini_batches * t.ppo_epochs:
            log_probs, entropy = score(self.model, mb, temperature=t.temperature)
            batch = PolicyBatch(log_probs, mb.old_log_probs, advantages[idx], mb.response_mask, entropy)
            loss, m = self.objective(batch)
            # Divergence checks, each on a float the step logs anyway (one host sync each), all
            # before opt.step(): a NaN/inf loss or gradient never reaches the parameters.
            m[PG_LOSS] = float(loss.detach())
            if not math.isfinite(m[PG_LOSS]):
                raise TrainingDiverged(self.step, "loss", m[PG_LOSS])
            self.opt.zero_grad()
            loss.backward()
            # clip_grad_norm_ returns the pre-clip total norm: non-finite iff some gradient is.
            m[GRAD_NORM] = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.grad_clip))
            if not math.isfinite(m[GRAD_NORM]):
                raise TrainingDiverged(self.step, "grad_norm", m[GRAD_NORM])
            m[ENTROPY] = float((entropy * mb.response_mask).sum() / mb.response_mask.sum().clamp(min=1))
            _check_finite(self.step, m)
            self.opt.step()
            for key, value in m.items():
                sums[key] = sums.get(key, 0.0) + value / n_updates
        elapsed = time.perf_counter() - started
        metrics = _complete_metrics(self.objective.name, sums)
        metrics.update({
            RESPONSE_LENGTH_MEAN: float(lengths.mean()), RESPONSE_LENGTH_MAX: float(lengths.max()),
            REWARD_MEAN: float(reward.mean()),
            REWARD_ANSWER_MEAN: sum(r["answer"] for r in rewards) / len(rewards),
            REWARD_FORMAT_MEAN: sum(r["format"] for r in rewards) / len(rewards),
            LR: self.opt.lr,
            STEP_TIME: elapsed, TOKENS_PER_S: float(lengths.sum()) / elapsed,
        })
        metrics.update(self.compute.add(generated, trained, elapsed, self.gpus))
        _check_finite(self.step, metrics)
        return metrics

    def _evaluate(self, verdicts: VerdictSink | None) -> dict[str, float]:
        records: dict[str, list[dict]] = {}
        metrics = evaluate(self.model, self.tokenizer, self.benchmarks, self.cfg, self.step, records)
        if verdicts is not None:
            verdicts(self.step, dumps_verdicts(self.step, records))
        if self.selection:  # after the reported benchmarks, so their values never depend on it
            selected = evaluate(self.model, self.tokenizer, self.selection, self.cfg, self.step)
            metrics.update({selection_key(k): v for k, v in selected.items()})
        return metrics

    def run(self, report: Reporter, workdir: Path | None, verdicts: VerdictSink | None = None) -> dict[str, float]:
        t = self.cfg.trainer
        final: dict[str, float] = {}
        if self.step == 0:
            final = self._evaluate(verdicts)
            report(0, dict(final), None)
            self.log(_format(0, t.steps, final))
        while self.step < t.steps:
            self.step += 1
            metrics = self.rl_step()
            if self.step % t.eval_every == 0 or self.step == t.steps:
                metrics.update(self._evaluate(verdicts))
            checkpoint = None
            due = t.checkpoint_every and self.step % t.checkpoint_every == 0
            if workdir is not None and (due or self.step == t.steps):
                checkpoint = self.save(Path(workdir) / f"checkpoint_{self.step:06d}")
            report(self.step, metrics, checkpoint)
            self.log(_format(self.step, t.steps, metrics))
            final.update(metrics)
        return final


def _format(step: int, total: int, m: dict[str, float]) -> str:
    keys = (REWARD_MEAN, ENTROPY, RESPONSE_LENGTH_MEAN, CLIP_FRACTION, VAL_AVG)
    shown = "  ".join(f"{k}={m[k]:.4g}" for k in keys if k in m)
    extra = "  ".join(f"{k}={v:.4g}" for k, v in m.items() if k.startswith(VAL) and k != VAL_AVG)
    return f"step {step}/{total}  {shown}  {extra}".rstrip()


def _brief(err: BaseException) -> str:
    """One line for the log, without the paragraphs of advice torch wraps weights_only errors in."""
    boilerplate = ("Weights only load failed", "Please file an issue", "Check the documentation")
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    text = " ".join(line for line in lines if not line.startswith(boilerplate)) or " ".join(lines)
    return f"{type(err).__name__}: {text}"[:300]


def train(config: TrialConfig, report: Reporter, resume_from: ResumeFrom = None,
          workdir: Path | None = None, log=print, storage_dir: Path | None = None,
          verdicts: VerdictSink | None = None) -> dict[str, float]:
    """Run one trial of the local backend (the trainer contract of trainers/api.py).

    ``resume_from``: a checkpoint directory or candidates ordered newest first; unreadable
    ones are skipped (logged), and with none readable the run starts from step 0.
    Raises TrainingDiverged when training diverges. ``storage_dir`` is not needed (checkpoints
    are small enough for Tune to copy). ``verdicts``: called with each evaluation's per-problem verdicts.
    """
    trainer = LocalTrainer(config, log)
    if resume_from is not None:
        candidates = [resume_from] if isinstance(resume_from, (str, os.PathLike)) else list(resume_from)
        resumed = trainer.resume([Path(c) for c in candidates])
        if resumed is not None:
            log(f"resumed from {resumed} at step {trainer.step}")
    return trainer.run(report, workdir, verdicts)
