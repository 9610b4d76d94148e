"""Objective benchmark: forward+backward time and peak memory of every zoo objective, next to verl's.

    python benchmarks/objectives.py             # B x T = 64 x 4096, float32, CPU (~3 min on 2 cores)
    python benchmarks/objectives.py --smoke     # 4 x 256, 3 reps, memory of one case: ~15 s
    python benchmarks/objectives.py --batch 32 --tokens 8192 --reps 15 --threads 2 --no-memory --only grpo,dhpo

For each case (every objective, dhpo averaged/entropy x branch/unified, the five sspo gates)
it times one call of the loss (metrics included, as both return them) plus ``loss.backward()``
on the same right-padded inputs, and where verl 0.9.1 has the same objective (grpo ~ vanilla,
gspo, gmpo ~ geo_mean, cispo, sapo) it runs verl's function on the same inputs with the same
clip ranges and aggregation, and prints ours, verl's and ours/verl. verl missing -> ours only.

Time: median of --reps timed calls after 2 warm-up calls; ours and verl's calls alternate so
drift (thermal, other load) hits both alike. The ratio of the fastest calls (t o/v min) is
printed too: on a shared machine it is the steadier figure. One intra-op thread by default
(--threads): these losses are chains of memory-bound elementwise ops, and on a loaded 2-core
box a second thread mostly measures contention at the thread barrier.

Memory: peak resident memory added by one forward+backward, measured in a fresh subprocess per
(case, implementation). The child builds the inputs, runs one warm-up call, records VmRSS, resets
the kernel's peak-RSS counter (writing 5 to /proc/self/clear_refs resets VmHWM), runs one call and
reads VmHWM: peak = VmHWM - VmRSS before. The child runs with MALLOC_MMAP_THRESHOLD_=65536 so
glibc serves every tensor >= 64 KiB (at the default size each [B, T] float32 tensor is 1 MiB)
with its own mmap and unmaps it on free; freed tensors therefore leave RSS at once and the
delta is the peak of live tensor memory (saved activations, temporaries, the gradient), not
allocator caching. (torch's CPU allocator does not cache; tracemalloc does not see torch memory;
torch.profiler's profile_memory reports per-op allocations, not a peak, and slows the run.) At
--smoke sizes tensors are below the threshold and the memory column is not meaningful.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere: `trainers` lives at the repo root
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from trainers.objectives import PolicyBatch, get_objective  # noqa: E402

GATES = ("atanlog", "siglog", "expatan", "expsig", "gumbel")
SEQ, TOK = "seq-mean-token-mean", "token-mean"


@dataclass(frozen=True)
class Case:
    label: str
    objective: str
    params: dict = field(default_factory=dict)
    agg: str = SEQ
    verl: str | None = None  # name in verl's POLICY_LOSS_REGISTRY
    verl_config: dict = field(default_factory=dict)  # FSDPActorConfig fields
    note: str = ""


# Same clip ranges / temperatures / aggregation on both sides of each comparison.
CASES = [
    Case("grpo", "grpo", {"eps_low": 0.2, "eps_high": 0.2}, TOK, "vanilla", {"clip_ratio_low": 0.2, "clip_ratio_high": 0.2}, "verl adds dual-clip"),
    Case("gspo", "gspo", {"eps_low": 3e-4, "eps_high": 4e-4}, SEQ, "gspo", {"clip_ratio_low": 3e-4, "clip_ratio_high": 4e-4}),
    Case("gmpo (log-space clip)", "gmpo", {"clip_in_log_space": True}, SEQ, "geo_mean", {"clip_ratio_low": 0.4, "clip_ratio_high": 0.4}),
    Case("gmpo (ratio clip)", "gmpo", {}, SEQ, "geo_mean", {"clip_ratio_low": 0.4, "clip_ratio_high": 0.4}, "verl clips log r"),
    Case("cispo", "cispo", {"eps_low": 10.0, "eps_high": 0.2}, TOK, "cispo", {"clip_ratio_low": 10.0, "clip_ratio_high": 0.2}),
    Case("sapo", "sapo", {"tau_pos": 1.0, "tau_neg": 1.05}, SEQ, "sapo", {"tau_pos": 1.0, "tau_neg": 1.05}),
    *[Case(f"sspo {g}", "sspo", {"gate": g}) for g in GATES],
    *[Case(f"dhpo {m} {c}", "dhpo", {"mixing": m, "clip_mode": c}) for m in ("averaged", "entropy") for c in ("branch", "unified")],
]


def make_inputs(batch: int, tokens: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """verl-style float32 inputs: right padding (lengths T/4..T), per-token advantages, entropy."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(tokens // 4, tokens + 1, (batch,), generator=g)
    mask = torch.arange(tokens)[None, :] < lengths[:, None]
    old = -torch.rand(batch, tokens, generator=g) * 3.0
    lp = (old + 0.2 * torch.randn(batch, tokens, generator=g)).requires_grad_(True)
    adv = (torch.randn(batch, 1, generator=g) * mask).contiguous()
    entropy = torch.rand(batch, tokens, generator=g) * 2.0
    return {"lp": lp, "old": old, "adv": adv, "mask": mask, "entropy": entropy}


def ours_step(case: Case, x: dict):
    """A zero-argument callable doing one forward+backward of our objective."""
    fn = get_objective(case.objective, **case.params, agg=case.agg)
    entropy = x["entropy"] if case.params.get("mixing") == "entropy" else None

    def step():
        x["lp"].grad = None
        loss, _ = fn(PolicyBatch(x["lp"], x["old"], x["adv"], x["mask"], entropy))
        loss.backward()

    return step


def verl_step(case: Case, x: dict):
    """Same for verl's implementation; None when verl is missing or has no counterpart."""
    if case.verl is None:
        return None
    try:
        from verl.trainer.ppo.core_algos import get_policy_loss_fn
        from verl.workers.config import FSDPActorConfig
    except ImportError:
        return None
    fn = get_policy_loss_fn(case.verl)
    config = FSDPActorConfig(rollout_n=1, ppo_micro_batch_size_per_gpu=x["lp"].shape[0], **case.verl_config)

    def step():
        x["lp"].grad = None
        loss, _ = fn(x["old"], x["lp"], x["adv"], x["mask"], loss_agg_mode=case.agg, config=config)
        loss.backward()

    return step


def time_cases(cases, x, reps: int) -> dict[tuple[str, str], float]:
    """Median seconds per forward+backward, ours and verl's calls interleaved."""
    out = {}
    for case in cases:
        steps = {"ours": ours_step(case, x), "verl": verl_step(case, x)}
        steps = {k: v for k, v in steps.items() if v is not None}
        for step in steps.values():
            for _ in range(2):  # warm-up
                step()
        samples = {k: [] for k in steps}
        for _ in range(reps):
            for impl, step in steps.items():
                t0 = time.perf_counter()
                step()
                samples[impl].append(time.perf_counter() - t0)
        for impl, values in samples.items():
            out[(case.label, impl)] = statistics.median(values)
            out[(case.label, impl + "-min")] = min(values)
        print(f"  timed {case.label}", file=sys.stderr, flush=True)
    return out


def _proc_status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{key} not in /proc/self/status")


def measure_memory_here(case: Case, impl: str, batch: int, tokens: int) -> float:
    """Child side: peak MiB added by one forward+backward (see module docstring)."""
    x = make_inputs(batch, tokens)
    step = ours_step(case, x) if impl == "ours" else verl_step(case, x)
    step()  # warm-up: lazy initialisation, first-call allocations
    x["lp"].grad = None
    gc.collect()
    before = _proc_status_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    step()
    peak = _proc_status_kib("VmHWM")
    return (peak - before) / 1024.0


def measure_memory(case: Case, impl: str, batch: int, tokens: int) -> float | None:
    """Parent side: run measure_memory_here in a fresh interpreter; None on failure."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}
    cmd = [sys.executable, __file__, "--_memory-child", json.dumps([CASES.index(case), impl]),
           "--batch", str(batch), "--tokens", str(tokens), "--threads", str(torch.get_num_threads())]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        print(f"  memory of {case.label}/{impl} failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return float(done.stdout.strip().splitlines()[-1])


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def print_table(cases, times, memory, batch, tokens, reps) -> None:
    print(f"\nObjective forward+backward, B x T = {batch} x {tokens}, float32, CPU, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}; time = median of {reps}")
    head = (f"{'case':<22} {'agg':<19} {'verl':<9} {'ours ms':>8} {'verl ms':>8} {'t o/v':>6} {'(min)':>6} "
            f"{'ours MiB':>9} {'verl MiB':>9} {'m o/v':>6}  note")
    print(head)
    print("-" * len(head))
    for c in cases:
        t_o, t_v = times.get((c.label, "ours")), times.get((c.label, "verl"))
        m_o, m_v = memory.get((c.label, "ours")), memory.get((c.label, "verl"))
        min_ratio = _ratio(times.get((c.label, "ours-min")), times.get((c.label, "verl-min")))
        print(f"{c.label:<22} {c.agg:<19} {c.verl or '-':<9} {_fmt(t_o and t_o * 1e3, '8.2f'):>8} "
              f"{_fmt(t_v and t_v * 1e3, '8.2f'):>8} {_fmt(_ratio(t_o, t_v), '6.2f'):>6} {_fmt(min_ratio, '6.2f'):>6} {_fmt(m_o, '9.1f'):>9} "
              f"{_fmt(m_v, '9.1f'):>9} {_fmt(_ratio(m_o, m_v), '6.2f'):>6}  {c.note}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes and 3 reps: end to end in seconds")
    ap.add_argument("--batch", type=int, default=64, help="responses per micro-batch (B)")
    ap.add_argument("--tokens", type=int, default=4096, help="padded response length (T)")
    ap.add_argument("--reps", type=int, default=15, help="timed repetitions per case (median reported)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (timing and memory children)")
    ap.add_argument("--no-memory", action="store_true", help="skip the per-case memory subprocesses")
    ap.add_argument("--only", default="", help="comma-separated case-label prefixes, e.g. 'grpo,dhpo'")
    ap.add_argument("--_memory-child", dest="memory_child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.smoke:
        args.batch, args.tokens, args.reps = 4, 256, 3
    torch.set_num_threads(args.threads)

    if args.memory_child is not None:  # internal: one memory measurement in this fresh process
        index, impl = json.loads(args.memory_child)
        print(measure_memory_here(CASES[index], impl, args.batch, args.tokens))
        return

    cases = [c for c in CASES if not args.only or any(c.label.startswith(p) for p in args.only.split(","))]
    x = make_inputs(args.batch, args.tokens)
    times = time_cases(cases, x, args.reps)
    memory: dict[tuple[str, str], float | None] = {}
    if not args.no_memory and Path("/proc/self/clear_refs").exists():
        for c in cases[:1] if args.smoke else cases:  # smoke: exercise the path once
            for impl in ("ours", "verl"):
                if (c.label, impl) in times:
                    memory[(c.label, impl)] = measure_memory(c, impl, args.batch, args.tokens)
            print(f"  measured memory of {c.label}", file=sys.stderr, flush=True)
    print_table(cases, times, memory, args.batch, args.tokens, args.reps)


if __name__ == "__main__":
    main()
