"""The real-size GPU run: configs/sweeps/verl_gpu_realsize.yaml on one CUDA GPU, measured; one summary.

    python scripts/gpu_realsize.py --out $OUT/rs --ray-temp-dir /tmp/ray     # on the GPU host
    python scripts/gpu_realsize.py --dry-run                                  # anywhere: the plan, the main_ppo commands
    python scripts/gpu_realsize.py --only sweep,eval --out $OUT/rs            # some parts (device time is scarce)

On the offline GPU machine: ``source .gpu_bundle/install.sh || exit 1;`` first (../shared/gpu/README.md).

Parts, in order (each ends ok, failed or skipped; its output goes to <out>/<part>.log):
    sweep     sweep run verl_gpu_realsize.yaml: GRPO and DHPO-E, a Qwen3-0.6B-shaped policy with random weights
              (built once, ~21 s, 1.2 GB), 8 prompts x 8 responses x 512 tokens, 4 steps, checkpoints at steps 2
              and 4 (the newest kept), validation before training and at step 4; both trials to FINISHED
    resume    the GRPO trial alone, as sweep ``verl_gpu_realsize_resume`` in its own run directory: the driver's
              process group is killed (SIGKILL) once step 3 is logged (the step-2 checkpoint recorded), and
              the same command is run again; the trial must resume from global_step_2 and finish. Time to resume: from the
              second command's start to its first new step (step 3), beside the first command's start to step 1
    eval      sweep eval grpo.s0 of the sweep part's last checkpoint (verl's merger, then the hf backend on CUDA),
              the easy and hard benchmarks
    overhead  benchmarks/verl_overhead.py --spec configs/sweeps/verl_gpu_realsize.yaml --steps 4: the same GRPO
              trial run directly with verl's main_ppo and by ``sweep run``; the ratio of the two wall times

The summary (printed, and <out>/summary.json): each part's result, wall time and the GPU's peak memory in
use while it ran (nvidia-smi, all processes, every 0.5 s); per verl trial and step: step time
(``timing_s/step``), generation time, generated tokens/s (responses' tokens / ``timing_s/gen``), trained
tokens/s (``perf/total_num_tokens`` / ``timing_s/update_actor``), the actor's ``max_memory_allocated``, the
checkpoint's save time; per trial the checkpoint directories kept and their bytes on disk; the resume's
times; the overhead benchmark's table (its log). Exit status: 0 when no part failed, 1 when one did,
2 on bad arguments, 3 on a host without a CUDA GPU (nothing is run; --dry-run still works there).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "scripts"):  # the project's packages at the repo root; gpu_check.py beside this file
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from contract.run_layout import RunLayout  # noqa: E402  (pure pathlib)
from gpu_check import (  # noqa: E402
    NO_GPU_EXIT, GpuMemory, Part, end_group, print_plan, run_part, selected_parts, step_rows, sweep_cmd,
)

SPEC, SWEEP, RESUME_SWEEP, EVAL_TRIAL = "verl_gpu_realsize.yaml", "verl_gpu_realsize", "verl_gpu_realsize_resume", "grpo.s0"
PARTS = ("sweep", "resume", "eval", "overhead")
TIMEOUT_S = {"sweep": 1500, "resume": 1200, "eval": 600, "overhead": 1500}
RESUME_AT = 2
"""The checkpoint the resume part resumes from (the spec's checkpoint_every): it kills the driver in step 4."""
STEP_KEYS = ("timing_s/step", "timing_s/gen", "timing_s/update_actor", "timing_s/save_checkpoint",
             "response_length/mean", "prompt_length/mean", "perf/total_num_tokens", "perf/throughput",
             "actor/perf/max_memory_allocated_gb", "critic/score/mean")


def plan(out: Path, ray_temp: Path) -> dict[str, list[str]]:
    """The command of each part (the resume part runs its command twice)."""
    common = ["--no-progress", "--ray-temp-dir", str(ray_temp)]
    return {
        "sweep": sweep_cmd("run", SPEC, "--run-dir", str(out / "runs"), *common),
        "resume": sweep_cmd("run", SPEC, f"name={RESUME_SWEEP}", "variants=[{algorithm: grpo}]", "--no-report",
                            "--run-dir", str(out / "runs-resume"), *common),
        "eval": sweep_cmd("eval", EVAL_TRIAL, "--sweep", SWEEP, "--run-dir", str(out / "runs"), "--backend", "hf",
                          "--device", "cuda", "--benchmarks", "easy,hard", "--greedy", "--limit", "8", "--no-progress"),
        "overhead": [sys.executable, "benchmarks/verl_overhead.py", "--spec", f"configs/sweeps/{SPEC}", "--steps", "4",
                     "--no-report", "--quiet-wait", "0"],
    }


def per_step(data: dict) -> dict:
    """One step's figures: verl's own keys, and tokens/s generated and trained."""
    fig = {k: data[k] for k in STEP_KEYS if k in data}
    gen, update = data.get("timing_s/gen"), data.get("timing_s/update_actor")
    total, prompt, response = data.get("perf/total_num_tokens"), data.get("prompt_length/mean"), data.get("response_length/mean")
    if gen and total and prompt is not None and response:
        responses = total / (prompt + response)  # total_num_tokens = responses x (prompt + response) mean lengths
        fig["generated_tokens_per_s"] = round(response * responses / gen, 1)
    if update and total:
        fig["trained_tokens_per_s"] = round(total / update, 1)
    return fig


def checkpoints(trial_dir: Path) -> dict:
    """A trial's verl checkpoints (global_step_N): those kept (with their actor/ directory; verl's pruning
    deletes actor/ and leaves the small data.pt), and the bytes on disk of each directory."""
    dirs = sorted(trial_dir.glob("checkpoints/global_step_*"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
    size = {p.name: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) for p in dirs}
    return {"kept": [p.name for p in dirs if (p / "actor").is_dir()],
            "pruned": [p.name for p in dirs if not (p / "actor").is_dir()], "bytes": size}


def trial_figures(run_dir: Path, sweep: str) -> dict:
    out = {}
    for trial in sorted(RunLayout(run_dir).sweep(sweep).trials.glob("*")):
        steps = step_rows(trial)
        out[trial.name] = {"steps": {s: per_step(d) for s, d in sorted(steps.items())}, "checkpoints": checkpoints(trial)}
    return out


def first_step_after(metrics: Path, step: int, since: float, timeout_s: float) -> float | None:
    """Seconds from ``since`` until ``metrics`` has a line of a step > ``step`` (polled), or None."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if metrics.is_file():
            for line in metrics.read_text().splitlines():
                if line.strip() and json.loads(line)["step"] > step:
                    return round(time.time() - since, 1)
        time.sleep(0.5)
    return None


def run_resume(part: Part, cmd: list[str], out: Path, timeout_s: float) -> dict:
    """The resume part: the first command killed once step RESUME_AT + 1 is logged (the step-RESUME_AT
    checkpoint is then recorded by the driver: train.py reports a step with its checkpoint), the same
    command again."""
    trial_dir = RunLayout(out / "runs-resume").sweep(RESUME_SWEEP).trial_dir(EVAL_TRIAL)
    figures: dict = {}
    start = time.monotonic()
    with open(out / "resume.log", "w") as sink, GpuMemory() as memory:
        t0 = time.time()
        first = subprocess.Popen(cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        metrics = trial_dir / "attempt-1" / "metrics.jsonl"
        figures["first_start_to_step_1_s"] = first_step_after(metrics, 0, t0, timeout_s)
        if first_step_after(metrics, RESUME_AT, t0, timeout_s) is None:
            end_group(first, 30)
            part.status, part.why = "failed", f"step {RESUME_AT + 1} never logged (exit {first.returncode})"
            return figures
        os.killpg(first.pid, signal.SIGKILL)  # the driver and the local Ray it started, at once
        first.wait()
        figures["killed_after_step"] = max(step_rows(trial_dir), default=None)
        sink.write("\n[gpu_realsize] driver killed; the same command again\n")
        sink.flush()
        t1 = time.time()
        again = subprocess.Popen(cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        figures["resume_start_to_new_step_s"] = first_step_after(trial_dir / "attempt-2" / "metrics.jsonl", RESUME_AT,
                                                                 t1, timeout_s)
        try:
            code = again.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            end_group(again, 30)
            code = None
    part.wall_s, part.gpu_mem_peak_mib = round(time.monotonic() - start, 1), memory.peak
    command = trial_dir / "attempt-2" / "command.sh"
    figures["resumed_from"] = f"global_step_{RESUME_AT}" if command.is_file() and \
        f"global_step_{RESUME_AT}" in command.read_text() else None
    ok = code == 0 and figures["resumed_from"] is not None
    part.status, part.why = ("ok", "") if ok else ("failed", f"exit {code}; resumed from {figures['resumed_from']}")
    return figures


def summary_text(parts: list[Part], device: str, extra: dict) -> str:
    lines = [f"real-size GPU run on {device}", f"{'part':<9} {'result':<7} {'wall s':>7} {'GPU MiB':>8}  notes"]
    for p in parts:
        mem = f"{p.gpu_mem_peak_mib:.0f}" if p.gpu_mem_peak_mib is not None else "-"
        wall = f"{p.wall_s:.0f}" if p.wall_s is not None else "-"
        lines.append(f"{p.name:<9} {p.status:<7} {wall:>7} {mem:>8}  {p.why}")
        for trial, fig in p.trials.items():
            for step, s in fig["steps"].items():
                if "timing_s/step" in s:
                    lines.append(f"    {trial} step {step}: {s['timing_s/step']:.1f} s (gen {s.get('timing_s/gen', 0):.1f} s, "
                                 f"{s.get('generated_tokens_per_s')} tok/s generated, {s.get('trained_tokens_per_s')} "
                                 f"tok/s trained), actor max {s.get('actor/perf/max_memory_allocated_gb')} GB, "
                                 f"responses {s.get('response_length/mean')} tokens")
            ckpt = fig["checkpoints"]
            sizes = ", ".join(f"{k} {ckpt['bytes'][k] / 1e9:.2f} GB" for k in ckpt["kept"])
            lines.append(f"    {trial}: checkpoints kept: {sizes or 'none'}; pruned: {', '.join(ckpt['pruned']) or 'none'}")
    if extra.get("resume"):
        lines.append(f"    resume: {json.dumps(extra['resume'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/gpu_realsize"), help="Where logs, runs and summary.json go.")
    parser.add_argument("--ray-temp-dir", type=Path, default=None, help="Ray's temp dir (default <out>/ray; keep it short).")
    parser.add_argument("--only", default=",".join(PARTS), help=f"Comma-separated parts (default: all: {','.join(PARTS)}).")
    parser.add_argument("--dry-run", action="store_true", help="Print the plan and the spec's main_ppo commands; run nothing.")
    args = parser.parse_args(argv)
    only = selected_parts(parser, args.only, PARTS)
    out = args.out.resolve()
    commands = plan(out, (args.ray_temp_dir or out / "ray").resolve())
    if args.dry_run:
        print_plan(commands, only)
        return subprocess.run(sweep_cmd("run", SPEC, "--dry-run", "--run-dir", str(out / "runs")), cwd=REPO).returncode

    import torch

    if not torch.cuda.is_available():
        print(f"[gpu_realsize] no CUDA GPU on this host (torch {torch.__version__}): nothing run. "
              f"`python scripts/gpu_realsize.py --dry-run` shows the plan.", file=sys.stderr)
        return NO_GPU_EXIT
    device = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}"
    out.mkdir(parents=True, exist_ok=True)
    parts, extra = [Part(name) for name in PARTS], {}
    for part in parts:
        if part.name not in only:
            part.why = "not selected (--only)"
            continue
        if part.name == "eval" and next(p for p in parts if p.name == "sweep").status == "failed":
            part.why = "the sweep part failed (no checkpoint to evaluate)"
            continue
        if part.name == "resume":
            extra["resume"] = run_resume(part, commands["resume"], out, TIMEOUT_S["resume"])
            part.trials = trial_figures(out / "runs-resume", RESUME_SWEEP)
        else:
            run_part(part, commands[part.name], out / f"{part.name}.log", TIMEOUT_S[part.name])
        if part.name == "sweep":
            part.trials = trial_figures(out / "runs", SWEEP)
    (out / "summary.json").write_text(json.dumps({"device": device, "parts": [asdict(p) for p in parts], **extra},
                                                 indent=2))
    print(summary_text(parts, device, extra))
    print(f"[gpu_realsize] details: {out / 'summary.json'}, logs: {out}/<part>.log")
    return 1 if any(p.status == "failed" for p in parts) else 0


if __name__ == "__main__":
    sys.exit(main())
