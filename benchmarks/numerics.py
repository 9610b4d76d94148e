"""The cost of the reproducible numeric mode (local.numerics), side by side with the CPU's native kernels.

    python benchmarks/numerics.py                 # the default study's base (2000 warm-start steps) + 10 RL steps, ~12 min on 2 cores
    python benchmarks/numerics.py --warm-steps 400 --rl-steps 5
    python benchmarks/numerics.py --smoke         # 2 warm-start steps, 1 RL step: ~1 min (4 processes, mostly start-up)

Each mode runs in its own fresh process (the kernels are chosen at a process's start), on the first trial
of configs/sweeps/dhpo_vs_baselines.yaml, with its base built from scratch in a directory of its own
under ``--workdir`` (default ``runs/bench_numerics``):

  native        the CPU's own kernels (local.numerics: native; no kernel variables)
  reproducible  local.numerics: reproducible (AVX2 kernels, MKL's COMPATIBLE branch, oneDNN off)
  no-vector     the wider option: torch's scalar kernels (ATEN_CPU_CAPABILITY=default) and MKL COMPATIBLE

It prints, per mode, the base build's seconds, the seconds per RL step, their ratio to native, the base
weights' sha1 and the kernels the process reported (apply_numerics), and whether two reproducible
processes gave the same bytes. Speed is the machine's: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trainers.local.numerics import KERNELS  # noqa: E402  (no torch: this process only starts others)

MODES = {"native": ("native", {}),
         "reproducible": ("reproducible", {var.name: value for var, value in KERNELS.items()}),
         "no-vector": ("native", {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"})}


def measure(mode: str, warm_steps: int, rl_steps: int, cache: Path) -> dict:
    """In this process (started with the mode's variables): build the base, then time ``rl_steps`` RL steps."""
    from sweeps.specs.load import load_spec
    from trainers.config import TrialConfig
    from trainers.local.trainer import LocalTrainer
    from trainers.local.warmstart import weights_sha1

    data = load_spec("dhpo_vs_baselines").trials[0].config.to_dict()
    data["local"].update(numerics=MODES[mode][0])
    data["local"]["warm_start"].update(steps=warm_steps, cache_dir=str(cache))
    cfg = TrialConfig.from_dict(data, source="benchmark")
    started = time.perf_counter()
    trainer = LocalTrainer(cfg, log=lambda line: None)  # builds the base (cache is empty)
    build_s = time.perf_counter() - started
    base = next(p for p in cache.iterdir() if (p / "READY").exists())
    started = time.perf_counter()
    for _ in range(rl_steps):
        trainer.rl_step()
    step_s = (time.perf_counter() - started) / max(rl_steps, 1)
    return {"build_s": build_s, "step_s": step_s, "sha1": weights_sha1(base), "kernels": trainer.numerics}


def run_mode(mode: str, args: argparse.Namespace, run: int) -> dict:
    """One fresh process of ``mode`` (its variables set at its start, any inherited ones removed)."""
    env = {k: v for k, v in os.environ.items() if k not in {var.name for var in KERNELS}}
    env.update(MODES[mode][1])
    cache = args.workdir / f"{mode}-{run}"
    if cache.exists():
        import shutil

        shutil.rmtree(cache)
    cmd = [sys.executable, __file__, "--child", mode, "--warm-steps", str(args.warm_steps),
           "--rl-steps", str(args.rl_steps), "--workdir", str(cache)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"{mode}: the measuring process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm-steps", type=int, default=2000, help="warm-start steps of the base (the default study's)")
    parser.add_argument("--rl-steps", type=int, default=10, help="timed RL steps after the base")
    parser.add_argument("--smoke", action="store_true", help="2 warm-start steps, 1 RL step (~1 min)")
    parser.add_argument("--workdir", type=Path, default=REPO / "runs" / "bench_numerics")
    parser.add_argument("--child", choices=list(MODES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.warm_steps, args.rl_steps = 2, 1  # 2 steps: enough for native's bytes to differ
    if args.child:
        args.workdir.mkdir(parents=True, exist_ok=True)
        print(json.dumps(measure(args.child, args.warm_steps, args.rl_steps, args.workdir)))
        return 0
    args.workdir = args.workdir.resolve()
    print(f"base: {args.warm_steps} warm-start steps; {args.rl_steps} timed RL steps; one process per mode")
    results = {mode: run_mode(mode, args, 0) for mode in MODES}
    again = run_mode("reproducible", args, 1)
    native = results["native"]
    print(f"{'mode':<14}{'base build s':>13}{'x native':>9}{'s / RL step':>12}{'x native':>9}  {'base sha1':<10} kernels")
    for mode, r in results.items():
        k = r["kernels"]
        print(f"{mode:<14}{r['build_s']:>13.1f}{r['build_s'] / native['build_s']:>9.2f}{r['step_s']:>12.3f}"
              f"{r['step_s'] / native['step_s']:>9.2f}  {r['sha1'][:8]:<10} aten {k['numerics.aten']}, "
              f"MKL {k['numerics.mkl']}, oneDNN {k['numerics.onednn']}, threads {k['numerics.threads']}")
    same = again["sha1"] == results["reproducible"]["sha1"]
    print(f"two reproducible processes, the same base bytes: {'yes' if same else 'NO'} ({again['sha1'][:8]})")
    print(f"reproducible vs native base bytes: {'equal' if results['native']['sha1'] == results['reproducible']['sha1'] else 'differ'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
