"""Acceptance check of the GPU path on any host with one CUDA GPU: one command, one summary.

    python scripts/gpu_check.py                   # on the GPU host, from the project root
    python scripts/gpu_check.py --dry-run         # anywhere: the plan and the GPU spec's main_ppo commands
    python scripts/gpu_check.py --only verl-sweep,eval-hf --out runs/gpu_check

Parts, in order (each ends ok, failed or skipped; its output goes to <out>/<part>.log):
    cuda-tests  pytest tests/trainers/objectives/test_objectives_cuda.py tests/trainers/local/test_local_cuda.py
                tests/trainers/verl_plugin/test_gpu_share.py
    verl-sweep  sweep run verl_gpu_smoke.yaml: two verl trials (GRPO, DHPO-E), FSDP2 in bf16 with NCCL,
                actor and reference on the GPU, the zoo_hf rollout on the GPU, validation, checkpoints,
                MLflow on sqlite
    eval-hf     sweep eval of the GRPO trial's last checkpoint, hf backend on CUDA (--smoke)
    eval-vllm   the same with the vllm backend            (skipped where vllm is not importable)
    verl-vllm   verl_gpu_smoke.yaml --smoke with the vLLM rollout (skipped where vllm is not importable)
and, only when named in --only (the GPU figures, docs/benchmarks.md):
    objectives  benchmarks/objectives.py --device cuda: every objective beside verl's, bf16 and fp32,
                64 x 8192 and 256 x 8192, bandwidth bound, torch.compile beside 3 cases (<out>/objectives.json)
    verl-pack   sweep run verl_gpu_pack.yaml: 4 verl trials at resources.gpus 0.25, all at once on the GPU
    verl-pack-serial  the same 4 trials one at a time (max_concurrent=1): the packing's yardstick

The summary (printed, and <out>/summary.json) gives each part's result and wall time, the GPU's peak
memory in use while it ran (nvidia-smi, every 0.5 s; all processes), and for verl trials the mean
and median verl step time, steps/s and the step-1 metrics (to compare with the same trial on CPU:
verl_cpu_smoke.yaml). Exit status: 0 when no part failed, 1 when one did, 2 on bad arguments, 3 on
a host without a CUDA GPU (nothing is run; --dry-run still works there).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: the project's packages live at the repo root
    sys.path.insert(0, str(REPO))

from contract.run_layout import RunLayout  # noqa: E402  (pure pathlib)

SPEC = "verl_gpu_smoke.yaml"
SWEEP = "verl_gpu_smoke"
EVAL_TRIAL = "grpo.s0"
NO_GPU_EXIT = 3
CUDA_TESTS = ["tests/trainers/objectives/test_objectives_cuda.py", "tests/trainers/local/test_local_cuda.py",
              "tests/trainers/verl_plugin/test_gpu_share.py"]
STEP_KEYS = ("actor/pg_loss", "actor/entropy", "actor/pg_clipfrac", "actor/grad_norm", "critic/score/mean",
             "response_length/mean", "training/rollout_probs_diff_max", "actor/perf/max_memory_allocated_gb")
PACK_SPEC, PACK_SWEEP = "verl_gpu_pack.yaml", "verl_gpu_pack"
DEFAULT_PARTS = ("cuda-tests", "verl-sweep", "eval-hf", "eval-vllm", "verl-vllm")
PARTS = DEFAULT_PARTS + ("objectives", "verl-pack", "verl-pack-serial")
TIMEOUT_S = {"cuda-tests": 600, "verl-sweep": 1200, "eval-hf": 600, "eval-vllm": 900, "verl-vllm": 1200,
             "objectives": 600, "verl-pack": 900, "verl-pack-serial": 1800}
PACK_RUN_DIRS = {"verl-pack": "runs-pack", "verl-pack-serial": "runs-pack-serial"}


@dataclass
class Part:
    name: str
    status: str = "skipped"
    why: str = ""
    wall_s: float | None = None
    gpu_mem_peak_mib: float | None = None
    trials: dict = field(default_factory=dict)
    gpu_processes_max: int = 0
    """Most processes holding the GPU at once (nvidia-smi's compute apps)."""
    gpu_process_peak_mib: float | None = None
    """The largest single process's GPU memory."""


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sweeps.cli", *args]


def plan(out: Path, ray_temp: Path) -> dict[str, list[str]]:
    """The command of each part."""
    run_dir, vllm_dir = out / "runs", out / "runs-vllm"
    common = ["--no-progress", "--ray-temp-dir", str(ray_temp)]
    evaluate = ["eval", EVAL_TRIAL, "--sweep", SWEEP, "--run-dir", str(run_dir), "--smoke",
                "--benchmarks", "easy,hard", "--no-progress"]
    return {
        "cuda-tests": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *CUDA_TESTS],
        "verl-sweep": sweep_cmd("run", SPEC, "--run-dir", str(run_dir), *common),
        "eval-hf": sweep_cmd(*evaluate, "--backend", "hf", "--device", "cuda"),
        "eval-vllm": sweep_cmd(*evaluate, "--backend", "vllm"),
        "verl-vllm": sweep_cmd("run", SPEC, "base.verl.rollout=vllm", "--smoke", "--run-dir", str(vllm_dir), *common),
        "objectives": [sys.executable, "benchmarks/objectives.py", "--device", "cuda", "--json", str(out / "objectives.json")],
        "verl-pack": sweep_cmd("run", PACK_SPEC, "--run-dir", str(out / PACK_RUN_DIRS["verl-pack"]), *common),
        "verl-pack-serial": sweep_cmd("run", PACK_SPEC, "max_concurrent=1", "--run-dir",
                                      str(out / PACK_RUN_DIRS["verl-pack-serial"]), *common),
    }


class GpuMemory:
    """Peak of the GPU's memory in use (MiB, all processes) while the block runs, from nvidia-smi."""

    def __init__(self, every_s: float = 0.5):
        self.every_s, self.peak, self._stop = every_s, None, threading.Event()
        self.processes, self.process_peak = 0, None  # most processes on the GPU at once; largest one's MiB
        self._smi = shutil.which("nvidia-smi")

    def _sample_processes(self) -> None:
        try:
            out = subprocess.run([self._smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10).stdout
            used = [float(line.split(",")[1]) for line in out.splitlines() if line.strip()]
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return
        self.processes = max(self.processes, len(used))
        if used:
            self.process_peak = max(self.process_peak or 0.0, max(used))

    def _sample(self) -> float | None:
        try:
            out = subprocess.run([self._smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10).stdout
            return max(float(x) for x in out.split())
        except (OSError, ValueError, subprocess.SubprocessError):
            return None

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            value = self._sample()
            if value is not None:
                self.peak = value if self.peak is None else max(self.peak, value)
            self._sample_processes()

    def __enter__(self):
        if self._smi:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._smi:
            self._thread.join()


def group_members(pgid: int) -> list[int]:
    """Live processes (not zombies) of process group ``pgid``, from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp ...
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def group_gone(pgid: int, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for process group ``pgid`` to have no live process (its leader included)."""
    deadline = time.monotonic() + timeout_s
    while group_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def end_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM a part's whole process group, SIGKILL what is left of it after ``grace_s`` (children that
    outlive or ignore the leader's end included), and return once none of it runs."""
    os.killpg(proc.pid, signal.SIGTERM)
    if not group_gone(proc.pid, grace_s):
        with contextlib.suppress(ProcessLookupError):  # gone in between
            os.killpg(proc.pid, signal.SIGKILL)
        group_gone(proc.pid, 30)  # a killed process is gone once the kernel has run it once more
    proc.wait()


def run_part(part: Part, cmd: list[str], log: Path, timeout_s: float, grace_s: float = 30) -> None:
    """Run one part's command (its own process group), its output into ``log``; fill status and figures.
    Past ``timeout_s`` the group gets SIGTERM, and SIGKILL after ``grace_s``."""
    print(f"[gpu_check] {part.name}: {' '.join(cmd)}", flush=True)
    start = time.monotonic()
    with open(log, "w") as sink, GpuMemory() as memory:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            end_group(proc, grace_s)
            code = None
    part.wall_s, part.gpu_mem_peak_mib = round(time.monotonic() - start, 1), memory.peak
    part.gpu_processes_max, part.gpu_process_peak_mib = memory.processes, memory.process_peak
    if code == 0:
        part.status = "ok"
    else:
        part.status = "failed"
        part.why = f"timed out after {timeout_s:g} s" if code is None else f"exit {code}"
        tail = log.read_text(errors="replace").splitlines()[-25:]
        print("\n".join(f"    | {line}" for line in tail), flush=True)
    print(f"[gpu_check] {part.name}: {part.status} in {part.wall_s} s", flush=True)


def step_rows(trial_dir: Path) -> dict[int, dict]:
    """Step -> verl's metrics of that step, over every attempt of a trial (a later attempt wins)."""
    steps = {}
    for path in sorted(trial_dir.glob("attempt-*/metrics.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                steps[row["step"]] = row["data"]
    return steps


def trial_figures(run_dir: Path, sweep: str) -> dict:
    """Per verl trial: steps logged, mean verl step time (timing_s/step), steps/s, step-1 metrics and
    the validation before training, from its attempt-*/metrics.jsonl files."""
    out = {}
    for trial in sorted(RunLayout(run_dir).sweep(sweep).trials.glob("*")):
        steps = step_rows(trial)
        times = [d["timing_s/step"] for d in steps.values() if "timing_s/step" in d]
        first = steps.get(1, {})
        commands, metrics = sorted(trial.glob("attempt-*/command.sh")), sorted(trial.glob("attempt-*/metrics.jsonl"))
        out[trial.name] = {
            "started": commands[0].stat().st_mtime if commands else None,  # launch written, main_ppo started
            "ended": metrics[-1].stat().st_mtime if metrics else None,  # its last metrics line
            "steps": max((s for s, d in steps.items() if "timing_s/step" in d), default=0),
            "step_time_s": round(sum(times) / len(times), 3) if times else None,
            "step_time_median_s": round(statistics.median(times), 3) if times else None,  # without the warm-up
            "steps_per_s": round(len(times) / sum(times), 3) if times else None,
            "step1": {k: first[k] for k in STEP_KEYS if k in first},
            "val_before_train": {k: v for k, v in steps.get(0, {}).items() if k.startswith("val-core/")},
        }
    return out


def selected_parts(parser: argparse.ArgumentParser, value: str, parts: tuple[str, ...]) -> list[str]:
    """The parts named by ``--only`` (comma-separated); an unknown one is a usage error naming the parts."""
    only = [p for p in value.split(",") if p]
    unknown = [p for p in only if p not in parts]
    if unknown:
        parser.error(f"--only: unknown part(s) {unknown}; expected some of {list(parts)}")
    return only


def print_plan(commands: dict[str, list[str]], only: list[str]) -> None:
    for name, cmd in commands.items():
        print(f"{name}: {' '.join(cmd)}" + ("" if name in only else "   (not selected)"))


def summary_text(parts: list[Part], device: str) -> str:
    lines = [f"GPU check on {device}", f"{'part':<11} {'result':<8} {'wall s':>7} {'GPU MiB':>8}  notes"]
    for p in parts:
        mem = f"{p.gpu_mem_peak_mib:.0f}" if p.gpu_mem_peak_mib is not None else "-"
        wall = f"{p.wall_s:.0f}" if p.wall_s is not None else "-"
        procs = f"; at most {p.gpu_processes_max} processes on the GPU at once" if p.gpu_processes_max else ""
        lines.append(f"{p.name:<11} {p.status:<8} {wall:>7} {mem:>8}  {p.why}{procs}")
        starts = [f["started"] for f in p.trials.values() if f.get("started")]
        for trial, fig in p.trials.items():
            if starts and fig.get("started") and fig.get("ended"):
                lines.append(f"    {trial}: main_ppo from +{fig['started'] - min(starts):.0f} s to "
                             f"+{fig['ended'] - min(starts):.0f} s")
            s1 = fig["step1"]
            lines.append(f"    {trial}: {fig['steps']} steps, {fig['step_time_s']} s/step, median "
                         f"{fig['step_time_median_s']} s ({fig['steps_per_s']} steps/s); step 1 pg_loss "
                         f"{s1.get('actor/pg_loss')}, entropy {s1.get('actor/entropy')}, actor max memory "
                         f"{s1.get('actor/perf/max_memory_allocated_gb')} GB")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/gpu_check"), help="Where logs, runs and summary.json go.")
    parser.add_argument("--ray-temp-dir", type=Path, default=None, help="Ray's temp dir (default <out>/ray; keep it short).")
    parser.add_argument("--only", default=",".join(DEFAULT_PARTS),
                        help=f"Comma-separated parts to run (default: {','.join(DEFAULT_PARTS)}; also: "
                             f"{','.join(p for p in PARTS if p not in DEFAULT_PARTS)}).")
    parser.add_argument("--dry-run", action="store_true", help="Print the plan and the GPU spec's main_ppo commands; run nothing on the GPU.")
    args = parser.parse_args(argv)
    only = selected_parts(parser, args.only, PARTS)
    out = args.out.resolve()
    commands = plan(out, (args.ray_temp_dir or out / "ray").resolve())

    if args.dry_run:
        print_plan(commands, only)
        specs = [SPEC] + ([PACK_SPEC] if any(p in PACK_RUN_DIRS for p in only) else [])
        return max(subprocess.run(sweep_cmd("run", spec, "--dry-run", "--run-dir", str(out / "runs")), cwd=REPO).returncode
                   for spec in specs)

    import torch

    if not torch.cuda.is_available():
        print(f"[gpu_check] no CUDA GPU on this host (torch {torch.__version__}, torch.cuda.is_available() is False): "
              f"nothing run. `python scripts/gpu_check.py --dry-run` shows the plan.", file=sys.stderr)
        return NO_GPU_EXIT
    device = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}"
    import importlib.util

    has_vllm = importlib.util.find_spec("vllm") is not None
    out.mkdir(parents=True, exist_ok=True)
    parts = [Part(name) for name in PARTS]
    for part in parts:
        if part.name not in only:
            part.why = "not selected (--only)"
            continue
        if part.name in ("eval-vllm", "verl-vllm") and not has_vllm:
            part.why = "vllm is not importable here"
            continue
        if part.name.startswith("eval-") and next(p for p in parts if p.name == "verl-sweep").status == "failed":
            part.why = "verl-sweep failed (no checkpoint to evaluate)"
            continue
        run_part(part, commands[part.name], out / f"{part.name}.log", TIMEOUT_S[part.name])
        if part.name == "verl-sweep":
            part.trials = trial_figures(out / "runs", SWEEP)
        if part.name == "verl-vllm":
            part.trials = trial_figures(out / "runs-vllm", SWEEP + "_smoke")  # --smoke names it so
        if part.name in PACK_RUN_DIRS:
            part.trials = trial_figures(out / PACK_RUN_DIRS[part.name], PACK_SWEEP)

    (out / "summary.json").write_text(json.dumps({"device": device, "parts": [asdict(p) for p in parts]}, indent=2))
    print(summary_text(parts, device))
    print(f"[gpu_check] details: {out / 'summary.json'}, logs: {out}/<part>.log")
    return 1 if any(p.status == "failed" for p in parts) else 0


if __name__ == "__main__":
    sys.exit(main())
