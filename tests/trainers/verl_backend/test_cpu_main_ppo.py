"""End to end: ``python -m verl.trainer.main_ppo`` on CPU with our loss, tiny Qwen3, parquet and reward.

Two GRPO steps (zoo_grpo) with validation and a checkpoint after each, verl starting its own Ray
(a sweep's trials join the sweep's cluster instead, and resume from verl's checkpoint with
``resume_mode=resume_path``: tests/sweeps/test_sweep_verl_e2e.py). Everything it writes stays in
pytest's tmp dir, except Ray's session dir, which must have a short path (Unix socket paths are
limited to ~107 characters) and goes to <repo>/.rt/<short> (git-ignored), removed afterwards.

    .venv/bin/python -m pytest tests/trainers/verl_backend/test_cpu_main_ppo.py -q
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators.tasks import make_split
from trainers.verl_backend.assets import rl_parquet, tiny_qwen3
from trainers.verl_backend.cpu_runtime import cpu_runtime

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[3]
BENCHES = ("easy", "medium")
RUN_TIMEOUT_S = 420


@pytest.fixture
def ray_dir():
    path = REPO / ".rt" / f"t{os.getpid()}"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_main_ppo(tmp: Path, ray_dir: Path, log_file: Path, extra: list[str]) -> subprocess.CompletedProcess:
    env, overrides = cpu_runtime()
    env = {
        **os.environ, **env,
        "HF_HOME": str(tmp / "hf"), "HF_DATASETS_CACHE": str(tmp / "hf" / "datasets"),
        "XDG_CACHE_HOME": str(tmp / "xdg"), "TMPDIR": str(tmp / "tmp"), "TORCHINDUCTOR_CACHE_DIR": str(tmp / "inductor"),
        "VERL_FILE_LOGGER_PATH": str(log_file), "HYDRA_FULL_ERROR": "1",
    }
    (tmp / "tmp").mkdir(exist_ok=True)
    trial = [
        f"+ray_kwargs.ray_init._temp_dir={ray_dir}",
        f"hydra.run.dir={tmp / 'hydra'}",
        "algorithm.adv_estimator=grpo",
        f"data.train_files={tmp / 'data' / 'train.parquet'}",
        "data.val_files=[" + ",".join(str(tmp / "data" / f"val_{b}.parquet") for b in BENCHES) + "]",
        "data.train_batch_size=4", "data.max_prompt_length=64", "data.max_response_length=16",
        f"actor_rollout_ref.model.path={tiny_qwen3(tmp / 'models')}",
        "actor_rollout_ref.actor.ppo_mini_batch_size=4", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.actor.use_kl_loss=False", "actor_rollout_ref.actor.policy_loss.loss_mode=zoo_grpo",
        "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
        "reward.custom_reward_function.path=pkg://trainers.verl_backend.reward",
        "reward.custom_reward_function.name=compute_score",
        "trainer.save_freq=1", "trainer.test_freq=1", "trainer.logger=[console,file]",
        "trainer.project_name=zoo_cpu", "trainer.experiment_name=e2e", f"trainer.default_local_dir={tmp / 'ckpt'}",
        *extra,
    ]
    cmd = [sys.executable, "-m", "verl.trainer.main_ppo", *overrides, *trial]
    return subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def training_steps(lines: list[dict]) -> list[int]:
    return [line["step"] for line in lines if "actor/entropy" in line["data"]]


def check(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"main_ppo failed ({result.returncode}):\n{(result.stdout + result.stderr)[-6000:]}"


def test_main_ppo_on_cpu_two_steps_with_validation_and_checkpoints(tmp_path, ray_dir):
    rl_parquet(tmp_path / "data", make_split("train", 16, seed=7), {b: make_split(b, 6, seed=7) for b in BENCHES})

    first = tmp_path / "run1.jsonl"
    check(run_main_ppo(tmp_path, ray_dir, first, ["trainer.total_training_steps=2"]))
    lines = read_log(first)
    assert training_steps(lines) == [1, 2]
    for line in lines:
        data = line["data"]
        if "actor/entropy" not in data:
            continue
        for key in ("actor/entropy", "response_length/mean", "actor/pg_clipfrac", "critic/score/mean", "actor/pg_loss"):
            assert math.isfinite(data[key]), (line["step"], key, data[key])
        assert 0 < data["response_length/mean"] <= 16
        # zoo_hf's token log-probs are the FSDP actor's (both fp32 on CPU)
        assert data["training/rollout_probs_diff_max"] < 1e-3
    val_keys = {k for line in lines for k in line["data"] if k.startswith("val-core/")}
    for bench in BENCHES:
        assert any(re.fullmatch(rf"val-core/{bench}/acc/mean@\d+", k) for k in val_keys), val_keys
    ckpt = tmp_path / "ckpt"
    assert (ckpt / "global_step_2" / "actor").is_dir()
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
