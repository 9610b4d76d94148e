"""Throughput of one RL step of the built-in trainer, side by side with TRL's GRPOTrainer.

    python benchmarks/trainer_throughput.py              # 30 timed RL steps each after 2 warm-up (~1 min on 2 cores)
    python benchmarks/trainer_throughput.py --smoke      # 3 timed steps, 1 warm-up, random-init base: ~15 s
    python benchmarks/trainer_throughput.py --no-trl     # ours only (TRL not installed: the same)
    python benchmarks/trainer_throughput.py --profile 10 # then cProfile 10 of our steps, top functions
    python benchmarks/trainer_throughput.py --trl-gradient-checkpointing   # TRL with its own default (recompute)

TRL comes from the ``bench`` extra: ``pip install -c constraints.txt -e '.[bench]'`` (CPU, no vLLM).

Workload: the default preset (trainers/config.py TrialConfig defaults = configs/trainer/local_tiny.yaml,
read at run time; the table header prints the values): the tiny Qwen3 base built by
``ensure_base_checkpoint(cfg, train_problems)`` (before any timing, cached under .cache/base_models),
8 prompts x 8 responses, at most ``max_new_tokens`` new tokens, temperature 1.0, GRPO, 2 AdamW
updates of 32 responses per rollout, one CPU thread, float32.

Ours, per RL step (``LocalTrainer.rl_step``; policy/rollout.py sample/score are wrapped
with timers in this process, nothing in trainers/ is changed):
  rollout   ``sample`` (KV-cache decode; behaviour log-probs recorded while sampling)
  reward    decode to text + ``compute_reward`` + group advantages (between sample and the first score)
  update    the updates_per_rollout x (score forward + loss + backward + clip + AdamW + scheduler)
  step      the whole ``rl_step``

TRL (``trl.GRPOTrainer(...).train()``, CPU, no vLLM, report_to="none") on the identical model
directory, tokenizer, prompts and reward. Config mapping (ours -> GRPOConfig):
  prompts_per_step 8 x group_size 8      num_generations=8, generation_batch_size = 32 x 2 = 64
  updates_per_rollout 2 (mini-batches    per_device_train_batch_size=32, gradient_accumulation_steps=1,
    of 32, one AdamW step each)            steps_per_generation=2, num_iterations=1 (each sample used once)
                                         => one of our RL steps = 2 TRL optimizer steps (max_steps = 2 x N)
  max_new_tokens, temperature 1, top_p 1 max_completion_length=max_new_tokens, temperature=1.0, top_p=1.0, top_k=0
  grpo eps 0.2/0.2, seq-mean-token-mean  loss_type="grpo", epsilon=0.2, beta=0.0 (no reference model, no KL)
  group-std advantages                   scale_rewards="group"
  AdamW lr 1e-3, wd 0.1, clip 1.0,       optim="adamw_torch", learning_rate=1e-3, weight_decay=0.1,
    10 linear warm-up updates              max_grad_norm=1.0, lr_scheduler_type="constant_with_warmup", warmup_steps=10
  no activation checkpointing            gradient_checkpointing=False (TRL's default is True: recompute)
  float32, 1 thread                      use_cpu=True, bf16=False; torch.set_num_threads(1)
  reward: compute_reward(text, answer)   a reward function over the completion strings and the dataset's answer column
Because gradient_accumulation_steps (1) is not a multiple of steps_per_generation (2), TRL runs an extra
no-grad forward over the 64 sequences for the old log-probs (we record them while sampling); that is
TRL's design for a policy that changes within a generation batch, and it is counted in its step.

TRL phases: rollout = ``model.generate`` (wrapped); "reward" = the rest of
``_generate_and_score_completions`` (tokenise, decode, reward, the old-log-prob forward, advantages;
the old-log-prob forward is also shown alone); update = step - _generate_and_score_completions
(2 x forward+backward+optimizer and the Trainer loop around them).

Timing: the two run interleaved in one process so load from other jobs hits both alike. TRL's
``train(max_steps=2 x (warm-up + N))`` has a callback; at every second ``on_step_end`` (one full RL
step of TRL) it records the time since it last returned, then runs one of our ``rl_step``s and
records that. So the sequence is TRL step, ours, TRL step, ours, ... and TRL's time per RL step
covers everything its loop does between two RL steps (data loader, generation, both optimizer
steps, callbacks) but not ours. The first ``--warmup`` steps of each are dropped; the table shows
medians (and the fastest step) over the rest. Tokens are response tokens up to and including
<eos> (padding after <eos> not counted), the same definition as perf/tokens_per_s.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere: `trainers` lives at the repo root
    sys.path.insert(0, str(REPO))
# Everything the libraries cache stays inside the repository (HF, accelerate, datasets, TRL).
for _key, _value in {
    "HF_HOME": str(REPO / ".cache" / "huggingface"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(REPO / ".cache" / "huggingface" / "datasets"),
    "XDG_CACHE_HOME": str(REPO / ".cache"), "MPLCONFIGDIR": str(REPO / ".cache" / "matplotlib"),
    "TRITON_CACHE_DIR": str(REPO / ".cache" / "triton"), "TORCHINDUCTOR_CACHE_DIR": str(REPO / ".cache" / "inductor"),
    "WANDB_MODE": "disabled", "WANDB_DISABLED": "true", "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "DISABLE_MLFLOW_INTEGRATION": "TRUE",
}.items():
    os.environ.setdefault(_key, _value)

import torch  # noqa: E402

import trainers.local.trainer as local_trainer  # noqa: E402
from evaluators.rewards import compute_reward  # noqa: E402
from policy.model import load_policy  # noqa: E402
from trainers.config import TrialConfig  # noqa: E402
from trainers.local.data import load_data  # noqa: E402
from trainers.local.warmstart import ensure_base_checkpoint  # noqa: E402

logging.getLogger("math_verify").setLevel(logging.ERROR)  # one-off "timeout disabled" notes
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)


class OursTimed:
    """LocalTrainer with timers around sample/score (module globals of trainers.local.trainer)."""

    def __init__(self, cfg: TrialConfig):
        self.cur: dict[str, float] = {}
        sample, score = local_trainer.sample, local_trainer.score

        def timed_sample(*args, **kwargs):
            t0 = time.perf_counter()
            ro = sample(*args, **kwargs)
            self.cur["sample_end"] = time.perf_counter()
            self.cur["rollout"] = self.cur["sample_end"] - t0
            self.cur["tokens"] = float(ro.response_mask.sum())
            self.cur["n"] = ro.response_mask.shape[0]
            return ro

        def timed_score(*args, **kwargs):
            self.cur.setdefault("score_start", time.perf_counter())
            return score(*args, **kwargs)

        local_trainer.sample, local_trainer.score = timed_sample, timed_score
        self.trainer = local_trainer.LocalTrainer(cfg, log=lambda s: None)

    def step(self) -> dict[str, float]:
        self.cur = {}
        t0 = time.perf_counter()
        self.trainer.rl_step()
        end = time.perf_counter()
        c = self.cur
        return {"step": end - t0, "rollout": c["rollout"], "reward": c["score_start"] - c["sample_end"],
                "update": end - c["score_start"], "tokens": c["tokens"], "n": c["n"]}


def make_trl(cfg: TrialConfig, base_dir: Path, train_problems, total_rl_steps: int, out_dir: Path, on_rl_step,
             gradient_checkpointing: bool = False):
    """A GRPOTrainer mirroring ``cfg`` (see the mapping in the module docstring) + its timers."""
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    t = cfg.trainer
    model, tokenizer = load_policy(base_dir, torch.device("cpu"), cfg.model.dtype, lean=False)  # TRL runs the HF module
    dataset = Dataset.from_list([{"prompt": p.prompt, "answer": p.answer} for p in train_problems])

    def reward(prompts, completions, answer, **kwargs):
        return [compute_reward(c, a, cfg.reward)["reward"] for c, a in zip(completions, answer)]

    mb = t.prompts_per_step * t.group_size // t.updates_per_rollout
    args = GRPOConfig(
        output_dir=str(out_dir), use_cpu=True, report_to="none", bf16=False, seed=cfg.seed,
        num_generations=t.group_size, per_device_train_batch_size=mb, gradient_accumulation_steps=1,
        steps_per_generation=t.updates_per_rollout, num_iterations=1,
        max_completion_length=t.max_new_tokens, temperature=t.temperature, top_p=t.top_p, top_k=0,
        loss_type="grpo", epsilon=0.2, beta=0.0, scale_rewards="group",
        optim="adamw_torch", learning_rate=t.lr, weight_decay=t.weight_decay, max_grad_norm=t.grad_clip,
        lr_scheduler_type="constant_with_warmup", warmup_steps=t.warmup_steps,
        gradient_checkpointing=gradient_checkpointing,
        max_steps=t.updates_per_rollout * total_rl_steps, logging_steps=10**9, save_strategy="no",
        disable_tqdm=True, dataloader_num_workers=0, log_completions=False,
    )
    cur: dict[str, float] = {"rollout": 0.0, "gen_score": 0.0, "old_logp": 0.0, "tokens": 0.0, "n": 0, "calls": 0}
    eos = tokenizer.eos_token_id

    generate = model.generate

    def timed_generate(*a, **kw):
        t0 = time.perf_counter()
        out = generate(*a, **kw)
        cur["rollout"] += time.perf_counter() - t0
        completion = out[:, kw["input_ids"].shape[1]:]
        is_eos = (completion == eos).long()
        cur["tokens"] += float(((is_eos.cumsum(1) - is_eos) == 0).sum())  # up to and including <eos>
        cur["n"] += completion.shape[0]
        cur["calls"] += 1
        return out

    model.generate = timed_generate  # unwrap_model_for_generation yields this very module on one CPU process

    class Interleave(TrainerCallback):
        def __init__(self):
            self.resumed = None

        def on_train_begin(self, args, state, control, **kw):
            self.resumed = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            if state.global_step % t.updates_per_rollout:
                return
            elapsed = time.perf_counter() - self.resumed
            snap = dict(cur)
            for k in ("rollout", "gen_score", "old_logp", "tokens", "n"):
                cur[k] = 0
            on_rl_step({"step": elapsed, "rollout": snap["rollout"], "reward": snap["gen_score"] - snap["rollout"],
                        "old_logp": snap["old_logp"], "update": elapsed - snap["gen_score"], "tokens": snap["tokens"],
                        "n": snap["n"]})
            self.resumed = time.perf_counter()

    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[Interleave()])
    trainer.remove_callback(PrinterCallback)
    gen_score, logps = trainer._generate_and_score_completions, trainer._get_per_token_logps_and_entropies

    def timed_gen_score(*a, **kw):
        t0 = time.perf_counter()
        out = gen_score(*a, **kw)
        cur["gen_score"] += time.perf_counter() - t0
        return out

    def timed_logps(*a, **kw):
        t0 = time.perf_counter()
        out = logps(*a, **kw)
        if not torch.is_grad_enabled():  # the old-log-prob pass (the loss pass runs with grad)
            cur["old_logp"] += time.perf_counter() - t0
        return out

    trainer._generate_and_score_completions = timed_gen_score
    trainer._get_per_token_logps_and_entropies = timed_logps
    return trainer, cur


def _med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows) if rows else float("nan")


def summarize(rows: list[dict]) -> dict[str, float]:
    """Medians of the per-step times, and token rates from medians of the per-step rates."""
    if not rows:
        return {}
    return {
        "step": _med(rows, "step"), "step_min": min(r["step"] for r in rows),
        "rollout": _med(rows, "rollout"), "reward": _med(rows, "reward"), "update": _med(rows, "update"),
        "old_logp": _med(rows, "old_logp") if "old_logp" in rows[0] else float("nan"),
        "len": statistics.mean(r["tokens"] / r["n"] for r in rows),
        "rollout_tps": statistics.median(r["tokens"] / r["rollout"] for r in rows),
        "update_tps": statistics.median(r["tokens"] / r["update"] for r in rows),
        "step_tps": statistics.median(r["tokens"] / r["step"] for r in rows),
    }


def print_table(ours: dict, trl: dict | None, n: int, cfg: TrialConfig) -> None:
    lines = [
        ("RL step, s (median)", "step", "{:.3f}"), ("RL step, s (fastest)", "step_min", "{:.3f}"),
        ("  rollout (generate), s", "rollout", "{:.3f}"), ("  reward + prep, s", "reward", "{:.3f}"),
        ("    of which old-log-prob fwd, s", "old_logp", "{:.3f}"), ("  update (fwd+bwd+opt), s", "update", "{:.3f}"),
        ("rollout tokens/s", "rollout_tps", "{:,.0f}"), ("update tokens/s", "update_tps", "{:,.0f}"),
        ("RL step tokens/s", "step_tps", "{:,.0f}"), ("mean response length", "len", "{:.1f}"),
    ]
    t = cfg.trainer
    print(f"\nRL step throughput, default preset ({t.prompts_per_step} prompts x {t.group_size}, <= {t.max_new_tokens} "
          f"new tokens, {t.updates_per_rollout} updates), {n} timed steps each")
    print(f"{'':34s} {'ours':>10s} {'TRL':>10s} {'TRL/ours':>9s}")
    for label, key, fmt in lines:
        o = ours.get(key, float("nan"))
        shown_o = "-" if key == "old_logp" else fmt.format(o)
        if trl:
            r = trl[key]
            ratio = r / o if key not in ("old_logp", "len") and o else float("nan")
            if key.endswith("tps"):
                ratio = o / r  # speed-up of ours in rates too: > 1 means ours is faster
            print(f"{label:34s} {shown_o:>10s} {fmt.format(r):>10s} {ratio:>9.2f}" if ratio == ratio
                  else f"{label:34s} {shown_o:>10s} {fmt.format(r):>10s} {'':>9s}")
        else:
            print(f"{label:34s} {shown_o:>10s}")
    if trl:
        print(f"\nratio TRL/ours s per RL step (median): {trl['step'] / ours['step']:.2f}x  (target >= 2x)"
              f"   fastest steps: {trl['step_min'] / ours['step_min']:.2f}x")
        print("(tokens/s rows: the TRL/ours column is ours/TRL, i.e. > 1 = ours faster)")


def profile_ours(ours: OursTimed, steps: int) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        ours.step()
    prof.disable()
    stats = pstats.Stats(prof).strip_dirs()
    print(f"\ncProfile of {steps} of our RL steps: top functions by total (own) time")
    stats.sort_stats("tottime").print_stats(20)
    print("by cumulative time")
    stats.sort_stats("cumulative").print_stats(25)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30, help="timed RL steps of each trainer")
    ap.add_argument("--warmup", type=int, default=2, help="untimed RL steps of each trainer first")
    ap.add_argument("--warm-start-steps", type=int, default=None,
                    help="supervised steps of the base (default: the preset's; --smoke: 0 = random init)")
    ap.add_argument("--smoke", action="store_true", help="3 timed steps, 1 warm-up, a random-init base: seconds")
    ap.add_argument("--trl-gradient-checkpointing", action="store_true",
                    help="TRL's own default (recompute activations in backward); off by default, as ours never does")
    ap.add_argument("--no-trl", action="store_true", help="time ours only")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="then cProfile N of our steps")
    args = ap.parse_args(argv)
    if args.smoke:
        args.steps, args.warmup = 3, 1
        args.warm_start_steps = 0 if args.warm_start_steps is None else args.warm_start_steps

    cfg = TrialConfig()
    cfg.local.warm_start.cache_dir = str(REPO / ".cache" / "base_models")
    if args.warm_start_steps is not None:
        cfg.local.warm_start.steps = args.warm_start_steps
    train_problems, _ = load_data(cfg)
    base_dir = ensure_base_checkpoint(cfg, train_problems)  # excluded from every timing
    print(f"base checkpoint: {base_dir}  ({cfg.local.warm_start.steps} warm-start steps)")

    ours = OursTimed(cfg)  # sets torch threads from cfg.local.threads (1)
    ours_rows: list[dict] = []
    trl_rows: list[dict] = []
    total = args.warmup + args.steps
    use_trl = not args.no_trl
    if use_trl:
        try:
            import trl
        except ImportError:
            print("trl is not installed (pip install -c constraints.txt -e '.[bench]'): timing ours only")
            use_trl = False
    if use_trl:
        def on_trl_step(row: dict) -> None:
            trl_rows.append(row)
            torch.set_num_threads(cfg.local.threads)
            ours_rows.append(ours.step())

        (REPO / "runs").mkdir(exist_ok=True)
        out_dir = Path(tempfile.mkdtemp(prefix="trl_throughput-", dir=REPO / "runs"))  # GRPOConfig.output_dir
        trainer, cur = make_trl(cfg, base_dir, train_problems, total, out_dir, on_trl_step,
                                args.trl_gradient_checkpointing)
        torch.set_num_threads(cfg.local.threads)
        print(f"TRL {trl.__version__}: timing {total} RL steps of each, interleaved ...", flush=True)
        try:
            trainer.train()
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
        if cur["calls"] == 0:
            raise RuntimeError("TRL never called the wrapped model.generate: the rollout timer saw nothing")
    else:
        print(f"timing {total} RL steps of ours ...", flush=True)
        for _ in range(total):
            ours_rows.append(ours.step())
    o = summarize(ours_rows[args.warmup:])
    r = summarize(trl_rows[args.warmup:]) if use_trl else None
    print_table(o, r, args.steps, cfg)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, load avg {os.getloadavg()[0]:.2f}")
    if args.profile:
        profile_ours(ours, args.profile)


if __name__ == "__main__":
    main()
