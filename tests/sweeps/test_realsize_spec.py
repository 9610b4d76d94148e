"""configs/sweeps/verl_gpu_realsize.yaml on the CPU: what its dry run tells verl, and that it builds nothing.

The GPU run itself is scripts/gpu_realsize.py (a GPU host); this is the part a CPU can check: the spec
validates, and its two main_ppo commands carry the real-size settings the issue asks for.

    .venv/bin/python -m pytest tests/sweeps/test_realsize_spec.py -q
"""

from __future__ import annotations

import pytest
import shlex

from typer.testing import CliRunner

from sweeps.cli import app
from sweeps.commands.spec_input import load_user_spec
from trainers.verl_backend import shaped_model

SPEC = "verl_gpu_realsize.yaml"


def commands(output: str) -> dict[str, list[str]]:
    """Trial id -> the argv of its main_ppo command, from the dry run's '# <trial>' blocks."""
    found, trial = {}, None
    for line in output.splitlines():
        if line.startswith("# "):
            trial = line[2:].strip()
        elif trial and "verl.trainer.main_ppo" in line:
            found[trial] = shlex.split(line)
            trial = None
    return found


@pytest.mark.slow
def test_the_dry_run_has_the_real_size_settings_and_builds_nothing(empty_cwd):
    spec = load_user_spec(SPEC, [], smoke=False)
    assert [t.config.algorithm.name for t in spec.trials] == ["grpo", "dhpo"] and len(spec.trials) == 2
    result = CliRunner().invoke(app, ["run", SPEC, "--dry-run"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    argv = commands(result.output)
    assert sorted(argv) == sorted(t.trial_id for t in spec.trials)
    model = shaped_model.model_dir(empty_cwd / ".cache" / "verl" / "models", "qwen3-0.6b")
    for trial, args in argv.items():
        settings = dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-"))
        expected = {
            "actor_rollout_ref.model.path": str(model),          # the 0.6B shape, random weights
            "data.train_batch_size": "8", "actor_rollout_ref.rollout.n": "8",  # 8 prompts x 8 responses
            "data.max_response_length": "512",
            "actor_rollout_ref.actor.strategy": "fsdp2",
            "actor_rollout_ref.rollout.name": "zoo_hf",       # the rollout the GPU bundle has
            "trainer.save_freq": "2", "trainer.max_actor_ckpt_to_keep": "1",  # checkpoints, newest kept
            "trainer.val_before_train": "True", "trainer.test_freq": "4", "trainer.total_training_steps": "4",
            "actor_rollout_ref.model.enable_gradient_checkpointing": "True",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "8",
        }
        assert {k: settings.get(k) for k in expected} == expected, trial
    assert not (empty_cwd / ".cache" / "verl" / "models").exists()  # a 1.2 GB build waits for the trial


def test_the_larger_shape_and_real_weights_are_one_override_away(empty_cwd):
    bigger = load_user_spec(SPEC, ["verl.random_model=qwen3-1.7b"], smoke=False)
    assert {t.config.verl.random_model for t in bigger.trials} == {"qwen3-1.7b"}
    checkpoint = empty_cwd / "Qwen3-0.6B"  # where a user's downloaded checkpoint would be
    checkpoint.mkdir()
    real = load_user_spec(SPEC, ["verl.random_model=null", "model.path=Qwen3-0.6B"], smoke=False)
    assert {(t.config.verl.random_model, t.config.model.path) for t in real.trials} == {(None, str(checkpoint))}
    result = CliRunner().invoke(app, ["run", SPEC, "model.path=Qwen3-0.6B", "--dry-run"])
    assert result.exit_code == 2
    assert (f"verl.random_model: 'qwen3-0.6b' builds the model, and model.path = '{checkpoint}' names one too"
            in " ".join(result.output.split()))
