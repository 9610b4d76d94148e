"""Overhead of `sweep run` on ONE verl trial: the same verl ``main_ppo`` run directly vs by the sweep, on CPU.

    python benchmarks/verl_overhead.py               # 20 RL steps per run (~3 min on 2 cores)
    python benchmarks/verl_overhead.py --smoke       # 3 steps (~2 min: start-up dominates)
    python benchmarks/verl_overhead.py --steps 50 --reps 2   # longer runs, 2 alternating repetitions (medians)
    python benchmarks/verl_overhead.py --no-report   # `sweep run --no-report` (no end-of-sweep report)
    python benchmarks/verl_overhead.py --keep        # keep the run directory (logs, MLflow store, metrics)
    python benchmarks/verl_overhead.py --quiet-wait 0   # start each run at once, even on a busy machine
    python benchmarks/verl_overhead.py --spec configs/sweeps/verl_gpu_realsize.yaml --steps 4   # on a GPU host

What is compared: one GRPO trial, seed 0, of configs/sweeps/verl_cpu_smoke.yaml (or ``--spec``: e.g. the
real-size GPU spec, with its resources) as it is (its tiny
warm-started Qwen3, batch, response length, data; resources.gpus 0 = verl's CPU platform) with
``--steps`` steps, validation before training and after the last step, a verl checkpoint every
``--checkpoint-every`` steps and no retries, run two ways:

  direct  ``python -m verl.trainer.main_ppo <overrides>`` as trainers/verl_backend/launch.py builds it
          for that trial (``build_launch`` with no Ray address): verl's own ``ray.init`` starts a
          local Ray (the CPU platform's logical CPUs/GPUs), runs, and stops it at exit.
  sweep   ``sweep run SPEC.yaml --no-progress`` as a user types it (a subprocess; the report at the
          end unless --no-report): CLI, spec load + verl preflight, a local Ray, the MLflow store,
          Tune, the trial worker, which runs the same main_ppo command (it writes it to
          ``<run-dir>/<sweep>/trials/<trial>/attempt-1/command.sh``; the differences, printed, are
          only runtime items: Ray address and namespace, checkpoint/metrics paths, experiment name,
          and the logical resources that only a process starting its own Ray declares), joining the
          sweep's Ray instead of starting one.

So the direct run pays for one Ray start (verl's own), the sweep for one too (the sweep's; verl
joins it): the comparison is whole command vs whole command, and the table shows both Ray starts.
Inputs (tiny model, parquet files, under .cache/verl_bench) are built before anything is timed.
Both runs get ``PYTHONUNBUFFERED=1``, token-authenticated Ray (the sweep's default, set for the
direct run too) and Ray temp dirs under <repo>/.rt (short: Unix sockets); nothing is written
outside the repository. With ``--reps R`` the two modes alternate (direct first on even reps).

Wall time: launch to exit of the command. Where it goes comes from timestamps outside the measured
processes: the sweep's stdout lines (read as they arrive), Ray's own logs (GCS start, each driver's
core-worker start = connected), the mtime of command.sh (the trial worker launched verl), each
metrics.jsonl line as verl's file logger writes it (polled every 0.1 s), and the verl driver's exit
(polled). The overhead is mostly fixed (start-up and shut-down): the break-even trial length for the
5% target is printed too.

CPU time: user+system seconds of the whole process tree of each command (Ray's daemons and
workers included), by role: sweep driver, Ray daemons, Ray workers still starting (a new worker
imports Ray and, in verl's jobs, verl + torch before it takes a task), the Tune trial worker, the verl
driver, verl's Ray workers. A /proc sampler reads utime+stime of every descendant every 0.2 s
(this process is a child subreaper, prctl, so orphans stay in its tree); a process loses at most
its last 0.2 s when it exits. (getrusage(RUSAGE_CHILDREN) cannot be used: the raylet ignores
SIGCHLD, so its workers are reaped by the kernel and their CPU reaches no parent's rusage.) The
machine has 2 cores and may be shared: the CPU seconds that other processes used during each run
are printed too (they slow both modes; compare runs taken under similar load).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere: `trainers` lives at the repo root
    sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from benchmarks.verl_process_tree import (  # noqa: E402
                                          ROLES, TreeMeter, Watcher, become_subreaper, ray_times, wait_for_quiet,
                                          )

RT = REPO / ".rt"  # Ray temp dirs (git-ignored, short: Unix socket paths)
CACHE = REPO / ".cache" / "verl_bench"  # tiny Qwen3 + parquet files, built once, reused
SMOKE = REPO / "configs" / "sweeps" / "verl_cpu_smoke.yaml"  # the trial's sizes
SWEEP = "verl_overhead"
TARGET = 0.05  # overhead target: <= 5% of the direct run's wall time


# ------------------------------------------------------------------ the spec, the direct command


def write_spec(directory: Path, steps: int, checkpoint_every: int, source: Path = SMOKE) -> Path:
    """``source`` (configs/sweeps/verl_cpu_smoke.yaml: its sizes, model, data, resources) as one GRPO trial:
    ``steps`` steps, validation before training and after the last step, no retries, an absolute verl cache."""
    spec = yaml.safe_load(source.read_text())
    spec["name"] = SWEEP
    trainer = spec["base"]["trainer"]
    trainer.update(steps=steps, eval_every=steps, checkpoint_every=checkpoint_every)
    spec["base"].setdefault("verl", {})["cache_dir"] = str(CACHE)
    spec.update(seeds=[0], max_concurrent=1, max_failures=0, variants=[{"algorithm": "grpo"}])
    spec["report"]["table"].pop("baselines", None)
    path = directory / f"{SWEEP}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def direct_launch(cfg, out_dir: Path, ray_temp: Path):
    """The trial's main_ppo argv + env with no Ray address (verl starts its own Ray)."""
    from trainers.verl_backend.launch import build_launch, prepare_inputs

    inputs = prepare_inputs(cfg)  # builds (once) what both modes read: not timed
    launch = build_launch(cfg, inputs, checkpoint_dir=out_dir / "checkpoints", resume_path=None,
                          metrics_file=out_dir / "metrics.jsonl", namespace="verl-direct", ray_address=None,
                          experiment=out_dir.name)
    argv = launch.argv + [f"+ray_kwargs.ray_init._temp_dir={ray_temp}"]  # not /tmp/ray
    return argv, launch.env


def overrides_of(argv: list[str]) -> set[str]:
    return {a for a in argv if "=" in a and not a.startswith("-")}


def command_sh_argv(path: Path) -> list[str]:
    words = shlex.split(path.read_text())
    start = next(i for i, w in enumerate(words) if "=" not in w)  # after the K=V assignments
    return words[start:]


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "ZOO_VERL_")) and k != "MLFLOW_TRACKING_URI"}
    env.update(PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0")
    return env


# ------------------------------------------------------------------ the two modes


def run_direct(argv: list[str], launch_env: dict[str, str], out_dir: Path, ray_temp: Path) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    (ray_temp / "ray").mkdir(parents=True, exist_ok=True)
    env = {**base_env(), **launch_env, "RAY_TMPDIR": str(ray_temp), "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    with TreeMeter() as meter:
        watch = Watcher(out_dir / "metrics.jsonl", meter, None)
        t0 = time.time()
        with open(out_dir / "main_ppo.log", "wb") as log:
            proc = subprocess.Popen(argv, env=env, cwd=out_dir, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
            rc = proc.wait()
        t_exit = time.time()
        watch.stop()
        t_quiet = meter.wait_quiet()
    if rc != 0:
        raise SystemExit(f"direct main_ppo failed ({rc}); see {out_dir / 'main_ppo.log'}")
    ray = ray_times(ray_temp, {"verl": proc.pid})
    steps = watch.steps
    return {"t0": t0, "ray_start": ray["ray_start"], "verl_ray": ray["verl"], "step0": steps.get(0),
            "last_step": steps.get(max(steps)) if steps else None, "n_steps": max(steps) if steps else 0,
            "verl_exit": t_exit, "exit": t_exit, "quiet": t_quiet, "meter": meter}


def run_sweep(spec: Path, run_dir: Path, ray_temp: Path, report: bool) -> dict:
    exe = REPO / ".venv" / "bin" / "sweep"
    argv = [str(exe) if exe.exists() else "sweep", "run", str(spec), "--run-dir", str(run_dir),
            "--ray-temp-dir", str(ray_temp), "--no-progress"] + ([] if report else ["--no-report"])
    lines: list[tuple[float, str]] = []
    with TreeMeter() as meter:
        trial_dir = None
        t0 = time.time()
        proc = subprocess.Popen(argv, env=base_env(), cwd=run_dir.parent, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def read() -> None:
            for raw in proc.stdout:
                lines.append((time.time(), raw.decode(errors="replace").rstrip()))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        trials = run_dir / SWEEP / "trials"
        watch = None
        while proc.poll() is None and watch is None:  # the trial's directory is known once it exists
            found = sorted(trials.glob("*/attempt-1")) if trials.is_dir() else []
            if found:
                trial_dir = found[0]
                watch = Watcher(trial_dir / "metrics.jsonl", meter, "verl driver (main_ppo)")
            time.sleep(0.05)
        rc = proc.wait()
        t_exit = time.time()
        reader.join()
        if watch:
            watch.stop()
        t_quiet = meter.wait_quiet()
    text = "\n".join(line for _, line in lines)
    (run_dir / "sweep_stdout.log").write_text("".join(f"{t - t0:8.2f}  {line}\n" for t, line in lines))
    if rc != 0 or trial_dir is None:
        raise SystemExit(f"sweep run failed ({rc}):\n{text[-3000:]}")

    def line_time(pattern: str) -> float | None:
        return next((t for t, line in lines if re.search(pattern, line)), None)

    steps = watch.steps
    ray = ray_times(ray_temp, {"sweep": proc.pid, "verl": watch.exit_pid})
    return {"t0": t0, "table": line_time(r"resources per trial"), "ray_start": ray["ray_start"],
            "sweep_ray": ray["sweep"],
            "command": (trial_dir / "command.sh").stat().st_mtime, "verl_ray": ray["verl"], "step0": steps.get(0),
            "last_step": steps.get(max(steps)) if steps else None, "n_steps": max(steps) if steps else 0,
            "verl_exit": watch.exited, "done": line_time(r"^sweep \S+ done in"),
            "report": line_time(r"^report:") if report else None, "exit": t_exit, "quiet": t_quiet,
            "meter": meter, "command_sh": trial_dir / "command.sh"}


# ------------------------------------------------------------------ the table


def span(r: dict, a: str, b: str) -> float | None:
    return r[b] - r[a] if r.get(a) is not None and r.get(b) is not None else None


PHASES = [  # (label, mode -> (from, to))
    ("sweep: CLI start, imports, spec load + verl preflight", None, ("t0", "table")),
    ("sweep: lock, MLflow store (thread), local Ray start", None, ("table", "sweep_ray")),
    ("sweep: Tune set-up, trial worker, inputs, launch command", None, ("sweep_ray", "command")),
    ("verl: process start -> connected to Ray", ("t0", "verl_ray"), ("command", "verl_ray")),
    ("verl: workers, model, rollout, validation (step 0)", ("verl_ray", "step0"), ("verl_ray", "step0")),
    ("verl: training steps (+ final validation)", ("step0", "last_step"), ("step0", "last_step")),
    ("verl: last step -> process exit", ("last_step", "verl_exit"), ("last_step", "verl_exit")),
    ("sweep: last result -> Tune -> MLflow, sweep end", None, ("verl_exit", "done")),
    ("sweep: report (tables, curves, HTML)", None, ("done", "report")),
    ("sweep: Ray shutdown + interpreter exit", None, ("report", "exit")),
]


PHASES_ORDER = {label: i for i, (label, *_) in enumerate(PHASES)}


def median(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(x: float | None, width: int = 8, digits: int = 1) -> str:
    return f"{x:{width}.{digits}f}" if x is not None else " " * (width - 1) + "-"


def print_table(direct: list[dict], sweep: list[dict], steps: int) -> None:
    for r in sweep:  # without --no-report, "report" is the end of the report; else the sweep's end
        if r.get("report") is None:
            r["report"] = r["done"]
    w, line = 56, "-" * 83
    print(f"\nwall time (s), median of {len(direct)} run(s) per mode; {steps} RL steps per run\n")
    print(f"{'phase':<{w}} {'direct':>8} {'sweep':>8} {'diff':>8}")
    print(line)
    rows = {}
    for label, d_span, s_span in PHASES:
        d = median([span(r, *d_span) for r in direct]) if d_span else None
        s = median([span(r, *s_span) for r in sweep]) if s_span else None
        rows[label] = (s or 0.0) - (d or 0.0)
        print(f"{label:<{w}} {fmt(d)} {fmt(s)} {fmt(rows[label])}")
    d_ray = median([span(r, "ray_start", "verl_ray") for r in direct])
    s_ray = median([span(r, "ray_start", "sweep_ray") for r in sweep])
    print(f"{'  Ray start inside those (GCS up -> 1st driver connected)':<{w}} {fmt(d_ray)} {fmt(s_ray)}")
    print(line)
    d_total = median([span(r, "t0", "exit") for r in direct])
    s_total = median([span(r, "t0", "exit") for r in sweep])
    print(f"{'total wall: launch -> exit':<{w}} {fmt(d_total)} {fmt(s_total)} {fmt(s_total - d_total)}")
    d_verl = median([span(r, "t0", "verl_exit") for r in direct])
    s_verl = median([span(r, "command", "verl_exit") for r in sweep])
    print(f"{'  of which verl main_ppo, its start -> its exit':<{w}} {fmt(d_verl)} {fmt(s_verl)} {fmt(s_verl - d_verl)}")
    d_q = median([span(r, "exit", "quiet") for r in direct])
    s_q = median([span(r, "exit", "quiet") for r in sweep])
    print(f"{'(after exit: leftover processes ending, not counted)':<{w}} {fmt(d_q)} {fmt(s_q)}")

    print(f"\nCPU time (s, user+system of the whole process tree; processes by their last role), median of {len(direct)} run(s)\n")
    print(f"{'role':<{w}} {'direct':>8} {'sweep':>8} {'diff':>8}")
    print(line)
    for role in ROLES:
        d = median([r["meter"].by_role[role] for r in direct])
        s = median([r["meter"].by_role[role] for r in sweep])
        dn = median([r["meter"].count[role] for r in direct])
        sn = median([r["meter"].count[role] for r in sweep])
        if d or s:
            print(f"{role + f' ({dn:g} / {sn:g} processes)':<{w}} {fmt(d)} {fmt(s)} {fmt(s - d)}")
    d_cpu = median([r["meter"].cpu for r in direct])
    s_cpu = median([r["meter"].cpu for r in sweep])
    print(line)
    print(f"{'total CPU':<{w}} {fmt(d_cpu)} {fmt(s_cpu)} {fmt(s_cpu - d_cpu)}")
    d_o = median([r["meter"].others for r in direct])
    s_o = median([r["meter"].others for r in sweep])
    print(f"{'(other processes on the machine meanwhile: CPU s)':<{w}} {fmt(d_o)} {fmt(s_o)}")
    print(f"{'(... as cores busy on average, of 2)':<{w}} {fmt(d_o / d_total, 8, 2)} {fmt(s_o / s_total, 8, 2)}")

    overhead = s_total - d_total
    ratio = overhead / d_total
    first_verl = min(PHASES_ORDER[k] for k in rows if k.startswith("verl:"))
    before = sum(v for k, v in rows.items() if k.startswith("sweep:") and PHASES_ORDER[k] < first_verl)
    after = sum(v for k, v in rows.items() if k.startswith("sweep:") and PHASES_ORDER[k] > first_verl)
    inside = sum(v for k, v in rows.items() if k.startswith("verl:"))
    print(f"\noverhead of `sweep run`: {overhead:+.1f} s wall = {100 * ratio:+.1f}% of the direct run "
          f"({d_total:.1f} s); target <= {100 * TARGET:.0f}%: {'met' if ratio <= TARGET else 'NOT met'}")
    print(f"  before verl starts {before:+.1f} s (CLI + spec/preflight, Ray, Tune, trial worker); verl itself "
          f"{inside:+.1f} s (joins the sweep's Ray instead of starting its own; load noise); after verl exits "
          f"{after:+.1f} s (results -> MLflow, report, Ray shutdown)")
    print(f"CPU: {s_cpu - d_cpu:+.1f} s = {100 * (s_cpu - d_cpu) / d_cpu:+.1f}% of the direct run's {d_cpu:.1f} s")
    if overhead > 0:
        print(f"the overhead is fixed per trial (start-up, shut-down): <= {100 * TARGET:.0f}% for trials whose direct "
              f"run takes >= {overhead / TARGET:.0f} s on this machine")


def show_command_difference(direct_argv: list[str], command_sh: Path) -> None:
    swept = command_sh_argv(command_sh)
    only_direct = sorted(overrides_of(direct_argv) - overrides_of(swept))
    only_sweep = sorted(overrides_of(swept) - overrides_of(direct_argv))
    same = len(overrides_of(direct_argv) & overrides_of(swept))
    print(f"\nmain_ppo command: {same} overrides identical; differing (runtime items only):")
    for o in only_direct:
        print(f"  direct only: {o[:150]}")
    for o in only_sweep:
        print(f"  sweep only:  {o[:150]}")


def report_run(r: dict) -> None:
    wall = span(r, "t0", "exit")
    print(f"  {wall:.1f} s wall, CPU {r['meter'].cpu:.1f} s; other processes meanwhile "
          f"{r['meter'].others / wall:.2f} cores", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", type=Path, default=SMOKE,
                    help="the verl spec whose GRPO trial is run (default configs/sweeps/verl_cpu_smoke.yaml)")
    ap.add_argument("--steps", type=int, default=20, help="RL steps of the trial (default 20)")
    ap.add_argument("--checkpoint-every", type=int, default=None,
                    help="verl checkpoint every N steps (default: steps // 2; 0 = none)")
    ap.add_argument("--reps", type=int, default=1, help="repetitions of both modes, alternating order")
    ap.add_argument("--smoke", action="store_true", help="3 steps, checkpoint every 2")
    ap.add_argument("--no-report", dest="report", action="store_false", help="sweep run --no-report")
    ap.add_argument("--keep", action="store_true", help="keep the run directory")
    ap.add_argument("--quiet-wait", type=float, default=60.0,
                    help="before each run, wait up to this many seconds for the machine to be idle (default 60)")
    args = ap.parse_args(argv)
    steps = 3 if args.smoke else args.steps
    every = 2 if args.smoke else (args.checkpoint_every if args.checkpoint_every is not None else max(steps // 2, 1))

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    become_subreaper()
    from sweeps.specs.load import load_spec

    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = REPO / "runs" / f"verl_overhead-{stamp}"
    root.mkdir(parents=True)
    RT.mkdir(exist_ok=True)
    spec_path = write_spec(root, steps, every, args.spec.resolve())
    print(f"spec {spec_path}: 1 verl trial (GRPO), {steps} steps, checkpoint every {every}; building inputs ...")
    trial = load_spec(spec_path).trials[0]
    temps: list[Path] = []
    direct, sweep = [], []
    try:
        for rep in range(args.reps):
            order = ("direct", "sweep") if rep % 2 == 0 else ("sweep", "direct")
            for mode in order:
                load = wait_for_quiet(args.quiet_wait)
                print(f"rep {rep}: {mode} (other processes' load before it: {load:.2f} cores) ...", flush=True)
                temp = RT / f"vo{os.getpid()}{mode[0]}{rep}"
                temps.append(temp)
                if mode == "direct":
                    out = root / f"direct-{rep}"
                    direct_argv, launch_env = direct_launch(trial.config, out, temp)
                    direct.append(run_direct(direct_argv, launch_env, out, temp))
                    report_run(direct[-1])
                else:
                    run_dir = root / f"sweep-{rep}" / "runs"
                    run_dir.mkdir(parents=True)
                    shutil.copy(spec_path, run_dir.parent / spec_path.name)
                    sweep.append(run_sweep(run_dir.parent / spec_path.name, run_dir, temp, args.report))
                    report_run(sweep[-1])
        show_command_difference(direct_argv, sweep[-1]["command_sh"])
        print_table(direct, sweep, steps)
    finally:
        for temp in temps:
            shutil.rmtree(temp, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"\nkept {root}")


if __name__ == "__main__":
    main()
