"""scripts/gpu_realsize.py, the real-size GPU run, on a host without a GPU: it says so and runs nothing
(exit 3), its --dry-run shows each part's command and the spec's main_ppo commands, bad parts are refused,
and the figures it reads from a trial (tokens/s, checkpoints kept and their bytes) are right. The GPU
parts themselves run on a GPU host.

    python -m pytest tests/test_gpu_realsize.py -q
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu_realsize.py"
_spec = importlib.util.spec_from_file_location("gpu_realsize", SCRIPT)
gpu_realsize = importlib.util.module_from_spec(_spec)
sys.modules["gpu_realsize"] = gpu_realsize
_spec.loader.exec_module(gpu_realsize)


def run_script(*args, timeout=180):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here")
def test_without_a_gpu_it_says_so_runs_nothing_and_exits_3(tmp_path):
    proc = run_script("--out", str(tmp_path / "rs"))
    assert proc.returncode == 3 and "no CUDA GPU on this host" in proc.stderr
    assert not (tmp_path / "rs").exists()


@pytest.mark.slow
def test_dry_run_shows_each_part_and_the_specs_commands(tmp_path):
    proc = run_script("--dry-run", "--only", "sweep,eval", "--out", str(tmp_path / "rs"))
    assert proc.returncode == 0, proc.stderr
    lines = {line.split(":", 1)[0]: line for line in proc.stdout.splitlines() if line.split(":", 1)[0] in gpu_realsize.PARTS}
    assert set(lines) == set(gpu_realsize.PARTS)
    assert "(not selected)" in lines["resume"] and "(not selected)" in lines["overhead"]
    assert "(not selected)" not in lines["sweep"] and "run verl_gpu_realsize.yaml" in lines["sweep"]
    assert "name=verl_gpu_realsize_resume variants=[{algorithm: grpo}]" in lines["resume"]
    assert "--backend hf --device cuda" in lines["eval"]
    assert "benchmarks/verl_overhead.py --spec configs/sweeps/verl_gpu_realsize.yaml" in lines["overhead"]
    mains = [shlex.split(line) for line in proc.stdout.splitlines() if "verl.trainer.main_ppo" in line]
    assert len(mains) == 2 and all("data.max_response_length=512" in argv for argv in mains)
    assert not (tmp_path / "rs").exists()


def test_an_unknown_part_is_refused_naming_the_parts():
    proc = run_script("--only", "sweep,train")
    assert proc.returncode == 2 and "unknown part(s) ['train']" in proc.stderr and "'overhead'" in proc.stderr


def test_trial_figures_give_tokens_per_second_and_the_checkpoints_kept(tmp_path):
    trial = tmp_path / "runs" / "s" / "trials" / "grpo.s0"
    rows = [(0, {"val-core/easy/acc/mean@1": 0.0}),
            # 64 responses of 40 prompt + 512 response tokens: 35,328 tokens; 32,768 generated in 8 s
            (1, {"timing_s/step": 20.0, "timing_s/gen": 8.0, "timing_s/update_actor": 4.0, "prompt_length/mean": 40.0,
                 "response_length/mean": 512.0, "perf/total_num_tokens": 35328, "actor/perf/max_memory_allocated_gb": 30.5})]
    (trial / "attempt-1").mkdir(parents=True)
    (trial / "attempt-1" / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in rows))
    (trial / "attempt-2").mkdir()
    (trial / "attempt-2" / "metrics.jsonl").write_text(json.dumps({"step": 2, "data": {"timing_s/step": 18.0}}) + "\n")
    for step, size in ((2, 1000), (10, 3000)):  # kept checkpoints; 10 sorts after 2 by number, not by name
        actor = trial / "checkpoints" / f"global_step_{step}" / "actor"
        actor.mkdir(parents=True)
        (actor / "model.pt").write_bytes(b"x" * size)
        (actor / "extra.json").write_text("{}")
    pruned = trial / "checkpoints" / "global_step_1"  # what verl's pruning leaves: the dataloader's state
    pruned.mkdir()
    (pruned / "data.pt").write_bytes(b"x" * 8)
    figures = gpu_realsize.trial_figures(tmp_path / "runs", "s")["grpo.s0"]
    step1 = figures["steps"][1]
    assert step1["generated_tokens_per_s"] == 4096.0 and step1["trained_tokens_per_s"] == 8832.0
    assert step1["actor/perf/max_memory_allocated_gb"] == 30.5
    assert figures["steps"][2] == {"timing_s/step": 18.0}  # the resumed attempt's step
    assert figures["checkpoints"] == {"kept": ["global_step_2", "global_step_10"], "pruned": ["global_step_1"],
                                      "bytes": {"global_step_1": 8, "global_step_2": 1002, "global_step_10": 3002}}
    text = gpu_realsize.summary_text([gpu_realsize.Part("sweep", "ok", "", 300.0, 40960.0,
                                                        {"grpo.s0": figures})], "GPU X", {})
    assert "grpo.s0 step 1: 20.0 s (gen 8.0 s, 4096.0 tok/s generated, 8832.0 tok/s trained), actor max 30.5 GB" in text
    assert "grpo.s0: checkpoints kept: global_step_2 0.00 GB, global_step_10 0.00 GB; pruned: global_step_1" in text
