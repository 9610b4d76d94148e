"""Objective benchmark: forward+backward time and peak memory of every zoo objective, next to verl's.

    python benchmarks/objectives.py                 # CPU: B x T = 64 x 4096, float32 (~3 min on 2 cores)
    python benchmarks/objectives.py --smoke         # CPU: 4 x 256, 1 rep, memory of one case's ours: ~20 s
    python benchmarks/objectives.py --device cuda   # GPU: 64 x 8192 and 256 x 8192, bf16 and fp32, 30 reps,
                                                    #      bandwidth bound, torch.compile beside 3 cases (last size)
    python benchmarks/objectives.py --device cuda --sizes 256x8192 --dtypes fp32 --only grpo,dhpo --json out.json
    python benchmarks/objectives.py --sizes 32x8192 --reps 15 --threads 2 --no-memory --only grpo,dhpo

For each case (every objective, dhpo averaged/entropy x branch/unified, the five sspo gates)
it times one call of the loss (metrics included, as both return them) plus ``loss.backward()``
on the same right-padded inputs, and where verl 0.9.1 has the same objective (grpo ~ vanilla,
gspo, gmpo ~ geo_mean, cispo, sapo) it runs verl's function on the same inputs with the same
clip ranges and aggregation, and prints ours, verl's and ours/verl. verl missing -> ours only.

Time: median of --reps timed calls after warm-up calls; ours and verl's calls alternate so drift
(thermal, other load) hits both alike. The ratio of the fastest calls (t o/v min) is printed
too. On the CPU each call is timed with perf_counter, one intra-op thread by default
(--threads: these losses are chains of memory-bound elementwise ops, and on a loaded 2-core box
a second thread mostly measures contention); on CUDA with a pair of CUDA events per call
(benchmarks/objectives_gpu.py), which also gives the bandwidth columns: the least bytes a
forward+backward must move over the time, as a share of a device-to-device copy's bandwidth
measured in the same run, and, for the --compile cases at the last size, the same loss under
``torch.compile`` (default mode; the metrics' one host copy stays outside the graph).

Memory on CUDA: the caching allocator's peak above the allocation before the call. On the CPU:
peak resident memory added by one forward+backward, measured in a fresh subprocess per
(case, implementation). The child builds the inputs, runs one warm-up call, records VmRSS, resets
the kernel's peak-RSS counter (writing 5 to /proc/self/clear_refs resets VmHWM), runs one call and
reads VmHWM: peak = VmHWM - VmRSS before. The child runs with MALLOC_MMAP_THRESHOLD_=65536 so
glibc serves every tensor >= 64 KiB with its own mmap and unmaps it on free; freed tensors
therefore leave RSS at once and the delta is the peak of live tensor memory (saved activations,
temporaries, the gradient), not allocator caching. At --smoke sizes tensors are below the
threshold and the memory column is not meaningful.
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
for where in (REPO, REPO / "benchmarks"):  # run as a script from anywhere: `trainers` lives at the repo root
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))

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


DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
DEFAULT_SIZES = {"cpu": "64x4096", "cuda": "64x8192,256x8192"}
DEFAULT_COMPILE = {"cpu": "", "cuda": "grpo,sspo atanlog,dhpo entropy branch"}


def make_inputs(batch: int, tokens: int, seed: int = 0, device: str = "cpu",
                dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """verl-style inputs: right padding (lengths T/4..T), per-token advantages, entropy; drawn in
    float32 on the CPU (the same numbers on every device), then moved and cast."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(tokens // 4, tokens + 1, (batch,), generator=g)
    mask = torch.arange(tokens)[None, :] < lengths[:, None]
    old = -torch.rand(batch, tokens, generator=g) * 3.0
    lp = old + 0.2 * torch.randn(batch, tokens, generator=g)
    adv = (torch.randn(batch, 1, generator=g) * mask).contiguous()
    entropy = torch.rand(batch, tokens, generator=g) * 2.0
    floats = {k: v.to(device, dtype) for k, v in {"lp": lp, "old": old, "adv": adv, "entropy": entropy}.items()}
    floats["lp"].requires_grad_(True)
    return {**floats, "mask": mask.to(device)}


def ours_step(case: Case, x: dict, compiled: bool = False):
    """A zero-argument callable doing one forward+backward of our objective (``compiled``: under torch.compile)."""
    fn = get_objective(case.objective, **case.params, agg=case.agg)
    loss_of = torch.compile(lambda b: fn(b)) if compiled else fn
    entropy = x["entropy"] if case.params.get("mixing") == "entropy" else None

    def step():
        x["lp"].grad = None
        loss, _ = loss_of(PolicyBatch(x["lp"], x["old"], x["adv"], x["mask"], entropy))
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


def _cpu_call_s(step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def case_steps(case: Case, x: dict, compiled: bool) -> dict[str, object]:
    """The implementations timed for ``case``: ours, verl's where it has one, ours compiled when asked."""
    steps = {"ours": ours_step(case, x), "verl": verl_step(case, x),
             "compiled": ours_step(case, x, compiled=True) if compiled else None}
    return {k: v for k, v in steps.items() if v is not None}


def time_cases(cases, x, reps: int, device: str = "cpu", compile_labels=()) -> dict[tuple[str, str], float]:
    """Median (and min) seconds per forward+backward of each implementation, the calls interleaved."""
    if device == "cuda":
        from objectives_gpu import call_s  # CUDA events
    else:
        call_s = _cpu_call_s
    out = {}
    for case in cases:
        steps = case_steps(case, x, case.label in compile_labels)
        for step in steps.values():
            for _ in range(3 if device == "cuda" else 2):  # warm-up (and torch.compile's compilation)
                step()
        samples = {k: [] for k in steps}
        for _ in range(reps):
            for impl, step in steps.items():
                samples[impl].append(call_s(step))
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
    """Child side (CPU): peak MiB added by one forward+backward (see module docstring)."""
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
    """Parent side (CPU): run measure_memory_here in a fresh interpreter; None on failure."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}
    cmd = [sys.executable, __file__, "--_memory-child", json.dumps([CASES.index(case), impl]),
           "--sizes", f"{batch}x{tokens}", "--threads", str(torch.get_num_threads())]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        print(f"  memory of {case.label}/{impl} failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return float(done.stdout.strip().splitlines()[-1])


def measure_all_memory(cases, x, args, batch: int, tokens: int, times) -> dict[tuple[str, str], float | None]:
    """Peak MiB per (case, ours|verl): the allocator's on CUDA, a subprocess's RSS on the CPU."""
    memory: dict[tuple[str, str], float | None] = {}
    if args.no_memory or (args.device == "cpu" and not Path("/proc/self/clear_refs").exists()):
        return memory
    for c in cases[:1] if args.smoke else cases:  # smoke: exercise the path once (one child process)
        for impl in ("ours",) if args.smoke else ("ours", "verl"):
            if (c.label, impl) not in times:
                continue
            if args.device == "cuda":
                from objectives_gpu import peak_mib

                memory[(c.label, impl)] = peak_mib(ours_step(c, x) if impl == "ours" else verl_step(c, x))
            else:
                memory[(c.label, impl)] = measure_memory(c, impl, batch, tokens)
        print(f"  measured memory of {c.label}", file=sys.stderr, flush=True)
    return memory


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def table_rows(cases, times, memory, batch: int, tokens: int, dtype: str, bandwidth: float | None) -> list[dict]:
    """One dict per case: times (ms), memory (MiB), ratios and, on CUDA, bandwidth-bound fractions."""
    rows = []
    for c in cases:
        row = {"case": c.label, "agg": c.agg, "verl": c.verl, "batch": batch, "tokens": tokens, "dtype": dtype,
               "note": c.note}
        for impl in ("ours", "verl", "compiled"):
            t = times.get((c.label, impl))
            row[f"{impl}_ms"] = None if t is None else t * 1e3
        row["t_ratio"] = _ratio(times.get((c.label, "ours")), times.get((c.label, "verl")))
        row["t_ratio_min"] = _ratio(times.get((c.label, "ours-min")), times.get((c.label, "verl-min")))
        row["ours_mib"], row["verl_mib"] = memory.get((c.label, "ours")), memory.get((c.label, "verl"))
        row["m_ratio"] = _ratio(row["ours_mib"], row["verl_mib"])
        if bandwidth:
            from objectives_gpu import min_bytes

            row["min_bytes"] = min_bytes(batch, tokens, DTYPES[dtype], c.params.get("mixing") == "entropy")
            row["bound_us"] = row["min_bytes"] / bandwidth * 1e6
            for impl in ("ours", "verl", "compiled"):
                ms = row[f"{impl}_ms"]
                row[f"{impl}_bw"] = None if ms is None else row["bound_us"] / (ms * 1e3)
        rows.append(row)
    return rows


def print_table(rows: list[dict], heading: str, gpu: bool) -> None:
    print(f"\n{heading}")
    head = (f"{'case':<22} {'agg':<19} {'verl':<9} {'ours ms':>8} {'verl ms':>8} {'t o/v':>6} {'(min)':>6} "
            f"{'ours MiB':>9} {'verl MiB':>9} {'m o/v':>6}")
    compiled = any(r["compiled_ms"] is not None for r in rows)
    if gpu:
        head += f" {'bound us':>9} {'ours bw':>7} {'verl bw':>7}"
    if compiled:
        head += f" {'comp ms':>8}" + (f" {'comp bw':>7}" if gpu else "")
    print(head + "  note")
    print("-" * (len(head) + 6))
    for r in rows:
        ms = {k: r[f"{k}_ms"] for k in ("ours", "verl", "compiled")}
        line = (f"{r['case']:<22} {r['agg']:<19} {r['verl'] or '-':<9} {_fmt(ms['ours'], '8.3f'):>8} "
                f"{_fmt(ms['verl'], '8.3f'):>8} {_fmt(r['t_ratio'], '6.2f'):>6} {_fmt(r['t_ratio_min'], '6.2f'):>6} "
                f"{_fmt(r['ours_mib'], '9.1f'):>9} {_fmt(r['verl_mib'], '9.1f'):>9} {_fmt(r['m_ratio'], '6.2f'):>6}")
        if gpu:
            line += (f" {_fmt(r.get('bound_us'), '9.1f'):>9} {_fmt(r.get('ours_bw'), '7.1%'):>7} "
                     f"{_fmt(r.get('verl_bw'), '7.1%'):>7}")
        if compiled:
            line += f" {_fmt(ms['compiled'], '8.3f'):>8}" + (f" {_fmt(r.get('compiled_bw'), '7.1%'):>7}" if gpu else "")
        print(line + f"  {r['note']}")


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'64x8192,256x8192' -> [(64, 8192), (256, 8192)]."""
    try:
        sizes = [tuple(int(n) for n in part.lower().split("x")) for part in text.split(",") if part.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(len(s) != 2 or min(s) < 1 for s in sizes):
        raise SystemExit(f"--sizes: expected BxT[,BxT...] like 64x8192,256x8192, got {text!r}")
    return sizes  # type: ignore[return-value]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="4 x 256, 1 rep, the memory of the first case's ours only: "
                    "end to end in ~20 s")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--sizes", default=None, help="B x T per table, e.g. 64x8192,256x8192 (default per device)")
    ap.add_argument("--dtypes", default=None, help="comma list of fp32, bf16 (default: fp32 on cpu, bf16,fp32 on cuda)")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions per case (median; default 15 cpu, 30 cuda)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU timing and memory children)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    ap.add_argument("--only", default="", help="comma-separated case-label prefixes, e.g. 'grpo,dhpo'")
    ap.add_argument("--compile", default=None, help="case labels also timed under torch.compile "
                    f"(default: '{DEFAULT_COMPILE['cuda']}' on cuda, none on cpu; '' for none)")
    ap.add_argument("--json", default=None, help="also write every row to this JSON file")
    ap.add_argument("--_memory-child", dest="memory_child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is visible to torch here")
    sizes = parse_sizes(args.sizes or ("4x256" if args.smoke else DEFAULT_SIZES[args.device]))
    dtypes = [d.strip() for d in (args.dtypes or ("fp32" if args.device == "cpu" else "bf16,fp32")).split(",")]
    if any(d not in DTYPES for d in dtypes):
        raise SystemExit(f"--dtypes: expected a comma list of {list(DTYPES)}, got {args.dtypes!r}")
    reps = 1 if args.smoke else args.reps or (30 if args.device == "cuda" else 15)
    compile_labels = {s.strip() for s in (DEFAULT_COMPILE[args.device] if args.compile is None else args.compile).split(",")
                      if s.strip()}
    torch.set_num_threads(args.threads)

    if args.memory_child is not None:  # internal: one CPU memory measurement in this fresh process
        index, impl = json.loads(args.memory_child)
        print(measure_memory_here(CASES[index], impl, *sizes[0]))
        return

    cases = [c for c in CASES if not args.only or any(c.label.startswith(p) for p in args.only.split(","))]
    bandwidth, where = None, f"CPU, {torch.get_num_threads()} threads, torch {torch.__version__}"
    if args.device == "cuda":
        from objectives_gpu import copy_bandwidth, device_line

        bandwidth, where = copy_bandwidth(), device_line()
        print(f"device-to-device copy: {bandwidth / 1e12:.2f} TB/s (read + written), the bound's bandwidth")
    all_rows = []
    for batch, tokens in sizes:
        for dtype in dtypes:
            x = make_inputs(batch, tokens, device=args.device, dtype=DTYPES[dtype])
            compiled_here = compile_labels if (batch, tokens) == sizes[-1] else set()  # one compilation per dtype
            times = time_cases(cases, x, reps, args.device, compiled_here)
            memory = measure_all_memory(cases, x, args, batch, tokens, times)
            rows = table_rows(cases, times, memory, batch, tokens, dtype, bandwidth)
            print_table(rows, f"Objective forward+backward, B x T = {batch} x {tokens}, {dtype}, {where}; "
                              f"time = median of {reps}", gpu=bandwidth is not None)
            all_rows += rows
            del x
    if args.json:
        Path(args.json).write_text(json.dumps({"device": where, "bandwidth": bandwidth, "reps": reps,
                                               "rows": all_rows}, indent=1))


if __name__ == "__main__":
    main()
