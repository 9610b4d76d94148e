"""scripts/gpu_check.py, the GPU acceptance check, on a host without a GPU: what it does there (says so,
exit 3), its --dry-run (the plan and the GPU spec's exact main_ppo commands), its bad arguments, how
it runs a part and reads a verl trial's history. The GPU parts themselves run on a GPU host.

    python -m pytest tests/test_gpu_check.py -q
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu_check.py"
_spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(_spec)
sys.modules["gpu_check"] = gpu_check  # its dataclasses look their module up
_spec.loader.exec_module(gpu_check)


def run_script(*args, cwd=REPO, timeout=180):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here")
def test_without_a_gpu_it_says_so_runs_nothing_and_exits_3(tmp_path):
    out = tmp_path / "gc"
    proc = run_script("--out", str(out))
    assert proc.returncode == gpu_check.NO_GPU_EXIT == 3
    assert "no CUDA GPU on this host" in proc.stderr and "--dry-run" in proc.stderr
    assert not out.exists()


@pytest.mark.slow
def test_dry_run_shows_every_part_and_the_gpu_specs_main_ppo_commands(tmp_path):
    proc = run_script("--dry-run", "--out", str(tmp_path / "gc"), "--only", "verl-sweep")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for part in gpu_check.PARTS:
        line = next(x for x in lines if x.startswith(f"{part}: "))
        assert line.endswith("(not selected)") == (part != "verl-sweep"), line
    assert "sweeps.cli run verl_gpu_smoke.yaml --run-dir" in proc.stdout
    commands = [shlex.split(x) for x in lines if "verl.trainer.main_ppo" in x]
    assert len(commands) == 2  # GRPO and DHPO-E
    for argv in commands:
        env = dict(a.split("=", 1) for a in argv[:argv.index("-m") - 1])
        ovs = argv[argv.index("verl.trainer.main_ppo") + 1:]
        # GPU path: nothing of the CPU platform; the zoo_hf rollout registered by its own module
        assert "VERL_PLATFORM" not in env
        assert env["VERL_USE_EXTERNAL_MODULES"] == "trainers.verl_plugin,trainers.verl_backend.hf_rollout"
        assert "actor_rollout_ref.rollout.name=zoo_hf" in ovs and "actor_rollout_ref.actor.strategy=fsdp2" in ovs
        assert "trainer.n_gpus_per_node=1" in ovs and "trainer.total_training_steps=20" in ovs
        assert not [o for o in ovs if o.startswith(("trainer.device=", "+actor_rollout_ref.actor.fsdp_config.mixed"))]
    assert "ZOO_VERL_FORWARD_ENTROPY=1" in [x for x in lines if "verl.trainer.main_ppo" in x][1]


def test_an_unknown_part_is_refused_naming_the_parts():
    proc = run_script("--only", "verl-sweep,bogus")
    assert proc.returncode == 2
    assert "--only: unknown part(s) ['bogus']" in proc.stderr and "'eval-hf'" in proc.stderr


def test_a_failing_part_is_failed_with_its_exit_code_and_log(tmp_path, capsys):
    part = gpu_check.Part("cuda-tests")
    log = tmp_path / "p.log"
    gpu_check.run_part(part, [sys.executable, "-c", "import sys; print('boom'); sys.exit(4)"], log, 60)
    assert (part.status, part.why) == ("failed", "exit 4")
    assert log.read_text().strip() == "boom" and "| boom" in capsys.readouterr().out
    ok = gpu_check.Part("eval-hf")
    gpu_check.run_part(ok, [sys.executable, "-c", "pass"], tmp_path / "ok.log", 60)
    assert ok.status == "ok" and ok.wall_s is not None


@pytest.mark.slow
def test_a_part_past_its_time_is_ended_with_its_children(tmp_path):
    """The part's leader ends on SIGTERM; its child ignores SIGTERM and outlives it, and is killed too."""
    pid_file = tmp_path / "child.pid"
    child_code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"
    code = ("import subprocess, sys, time; "
            f"c = subprocess.Popen([sys.executable, '-c', {child_code!r}]); "
            f"open({str(pid_file)!r}, 'w').write(str(c.pid)); time.sleep(120)")
    part = gpu_check.Part("verl-sweep")
    gpu_check.run_part(part, [sys.executable, "-c", code], tmp_path / "p.log", 3, grace_s=2)
    assert (part.status, part.why) == ("failed", "timed out after 3 s")
    child = int(pid_file.read_text())
    assert not Path(f"/proc/{child}").exists() or "zombie" in Path(f"/proc/{child}/status").read_text().lower()


def test_trial_figures_read_every_attempt_of_each_trial(tmp_path):
    trials = tmp_path / "runs" / "s" / "trials"

    def write(trial, attempt, rows):
        path = trials / trial / f"attempt-{attempt}" / "metrics.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in rows))

    write("grpo.s0", 1, [(0, {"val-core/easy/acc/mean@1": 0.25, "val-aux/x": 1}),
                         (1, {"timing_s/step": 2.0, "actor/pg_loss": -0.5, "actor/entropy": 1.5, "other": 3,
                              "actor/perf/max_memory_allocated_gb": 0.07}),
                         (2, {"timing_s/step": 1.0})])
    write("grpo.s0", 2, [(3, {"timing_s/step": 3.0})])  # a resumed attempt
    write("dhpo.s0", 1, [(0, {"val-core/easy/acc/mean@1": 0.5})])  # failed before step 1
    command = trials / "grpo.s0" / "attempt-1" / "command.sh"  # when its main_ppo started
    command.write_text("python -m verl.trainer.main_ppo\n")
    os.utime(command, (1000.0, 1000.0))
    os.utime(trials / "grpo.s0" / "attempt-2" / "metrics.jsonl", (1090.0, 1090.0))  # its last metrics line
    figures = gpu_check.trial_figures(tmp_path / "runs", "s")
    assert figures["grpo.s0"] == {"started": 1000.0, "ended": 1090.0, "steps": 3, "step_time_s": 2.0, "step_time_median_s": 2.0, "steps_per_s": 0.5,
                                  "step1": {"actor/pg_loss": -0.5, "actor/entropy": 1.5,
                                            "actor/perf/max_memory_allocated_gb": 0.07},
                                  "val_before_train": {"val-core/easy/acc/mean@1": 0.25}}
    assert figures["dhpo.s0"]["steps"] == 0 and figures["dhpo.s0"]["step_time_s"] is None
    text = gpu_check.summary_text([gpu_check.Part("verl-sweep", "ok", "", 10.0, 2048.0, figures)], "GPU X")
    assert "verl-sweep  ok            10     2048" in text
    assert ("grpo.s0: 3 steps, 2.0 s/step, median 2.0 s (0.5 steps/s); step 1 pg_loss -0.5, entropy 1.5, "
            "actor max memory 0.07 GB") in text
    assert "grpo.s0: main_ppo from +0 s to +90 s" in text  # the packing figure's spans
    assert figures["dhpo.s0"]["started"] is None
