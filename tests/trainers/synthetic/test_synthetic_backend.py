"""The synthetic backend alone: its section's checks, the metrics it reports, checkpoints and resume,
injected faults, and that it stays light (no torch, no MLflow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contract.errors import ConfigError
from contract.metrics import (COMPUTE_GPU_S, COMPUTE_METRICS, COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED,
                              COMPUTE_WALL_S, MIX_WEIGHT, RESPONSE_LENGTH_MEAN, STEP_METRICS, VAL_AVG, selection_key,
                              val_key)
from trainers.api import TrainingDiverged
from trainers.config import TrialConfig
from trainers.synthetic.trainer import FAILURES_FILE, STATE_FILE, crash_step, train

REPO = Path(__file__).resolve().parents[3]


def config(**synthetic) -> TrialConfig:
    return TrialConfig.from_dict({"backend": "synthetic", "synthetic": synthetic,
                                  "trainer": {"steps": 6, "eval_every": 3, "checkpoint_every": 2},
                                  "data": {"benchmarks": ["easy", "hard"]}})


def collect(cfg: TrialConfig, **kwargs) -> list[tuple[int, dict, Path | None]]:
    reports: list[tuple[int, dict, Path | None]] = []
    train(cfg, lambda step, metrics, ckpt: reports.append((step, dict(metrics), ckpt)), log=lambda line: None, **kwargs)
    return reports


def test_a_trial_reports_the_keys_of_a_real_one_and_checkpoints_where_asked(tmp_path):
    reports = collect(config(), workdir=tmp_path)
    assert [step for step, _, _ in reports] == [0, 1, 2, 3, 4, 5, 6]
    evaluated = {val_key("easy"), val_key("hard"), VAL_AVG}
    assert set(reports[0][1]) == evaluated
    for step, metrics, ckpt in reports[1:]:
        want = set(STEP_METRICS) | set(COMPUTE_METRICS) | (evaluated if step in (3, 6) else set())
        assert set(metrics) == want, step
        assert (ckpt is not None) == (step in (2, 4, 6)), step
    assert reports[3][1][VAL_AVG] == pytest.approx((reports[3][1][val_key("easy")] + reports[3][1][val_key("hard")]) / 2)
    assert (reports[-1][2] / STATE_FILE).is_file() and json.loads((reports[-1][2] / STATE_FILE).read_text())["step"] == 6
    dhpo = TrialConfig.from_dict({"backend": "synthetic", "algorithm": {"name": "dhpo"}, "trainer": {"steps": 2}})
    assert MIX_WEIGHT in collect(dhpo)[1][1]
    select = TrialConfig.from_dict({"backend": "synthetic", "trainer": {"steps": 2}, "data": {"select_size": 8}})
    assert selection_key(VAL_AVG) in collect(select)[0][1]


def test_values_depend_on_the_configuration_and_seed_and_nothing_else():
    first, again = collect(config()), collect(config())
    assert first == again
    other_seed = collect(TrialConfig.from_dict({**config().to_dict(), "seed": 1}))
    assert other_seed[6][1][VAL_AVG] != first[6][1][VAL_AVG]
    other_clip = collect(TrialConfig.from_dict({**config().to_dict(), "algorithm": {"name": "grpo", "params": {"eps_low": 0.3}}}))
    assert other_clip[6][1][VAL_AVG] != first[6][1][VAL_AVG]


def test_a_resumed_trial_reports_what_an_uninterrupted_one_does(tmp_path):
    whole = collect(config(), workdir=tmp_path / "whole")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / STATE_FILE).write_text("{not json")
    checkpoint_4 = whole[4][2]
    resumed = collect(config(), workdir=tmp_path / "resumed", resume_from=[tmp_path / "broken", checkpoint_4])
    assert [step for step, _, _ in resumed] == [5, 6]
    assert [m for _, m, _ in resumed] == [m for _, m, _ in whole[5:]]  # the compute sums continue too
    # a checkpoint of another configuration is skipped: the trial starts over
    other = TrialConfig.from_dict({**config().to_dict(), "algorithm": {"name": "gspo"}})
    assert [step for step, _, _ in collect(other, resume_from=checkpoint_4)][:2] == [0, 1]


def test_compute_axes_sum_each_steps_tokens_and_nominal_seconds(tmp_path):
    cfg = TrialConfig.from_dict({**config(step_seconds=0.01).to_dict(), "trainer": {
        "steps": 6, "eval_every": 3, "checkpoint_every": 2, "prompts_per_step": 4, "group_size": 3, "ppo_epochs": 2}})
    reports = collect(cfg, workdir=tmp_path / "whole")
    generated, wall = 0.0, 0.0
    for step, m, _ in reports[1:]:
        assert COMPUTE_GPU_S not in m  # no GPU
        generated += round(m[RESPONSE_LENGTH_MEAN] * 4 * 3)
        wall += 0.01
        assert m[COMPUTE_TOKENS_GENERATED] == generated and m[COMPUTE_TOKENS_TRAINED] == 2 * generated, step
        assert m[COMPUTE_WALL_S] == pytest.approx(wall), step
    resumed = collect(cfg, resume_from=reports[2][2])
    assert [step for step, _, _ in resumed] == [3, 4, 5, 6]
    axes = lambda rows: [[m[k] for k in COMPUTE_METRICS] for _, m, _ in rows]  # noqa: E731
    assert axes(resumed) == axes(reports[3:])  # exact: the sums of steps 1..2 recomputed, then continued


def test_a_failure_happens_on_the_attempts_told_and_a_divergence_always(tmp_path):
    cfg = config(fail_at_step=3, fail_attempts=2)
    for attempt in (1, 2):
        with pytest.raises(RuntimeError, match=f"synthetic failure at step 3 .*attempt {attempt}"):
            collect(cfg, storage_dir=tmp_path)
    assert (tmp_path / FAILURES_FILE).read_text() == "2"
    assert collect(cfg, storage_dir=tmp_path)[-1][0] == 6  # the third attempt gets through
    with pytest.raises(TrainingDiverged) as diverged:
        collect(config(diverge_at_step=2))
    assert (diverged.value.step, diverged.value.what) == (2, "loss")


def test_crash_fraction_crashes_that_share_of_trials_once_each_at_steps_drawn_from_its_seed(tmp_path):
    def trial(seed: int, **synthetic) -> TrialConfig:
        return TrialConfig.from_dict({"backend": "synthetic", "seed": seed, "trainer": {"steps": 20},
                                      "synthetic": {"crash_fraction": 0.3, "crash_seed": 7, **synthetic}})

    steps = [crash_step(trial(seed)) for seed in range(400)]
    assert 0.25 < sum(1 for s in steps if s) / len(steps) < 0.35 and all(0 <= s <= 20 for s in steps)
    assert len({s for s in steps if s}) > 10  # steps spread over the trial
    assert steps == [crash_step(trial(seed)) for seed in range(400)]  # the same draws again
    assert steps != [crash_step(trial(seed, crash_seed=8)) for seed in range(400)]
    assert crash_step(trial(0, fail_at_step=4)) == 4  # an explicit step wins
    seed = next(i for i, s in enumerate(steps) if s)
    with pytest.raises(RuntimeError, match=f"synthetic failure at step {steps[seed]} .synthetic.crash_fraction; attempt 1"):
        collect(trial(seed), storage_dir=tmp_path)
    assert collect(trial(seed), storage_dir=tmp_path)[-1][0] == 20  # the retry gets through (fail_attempts 1)
    quiet = next(i for i, s in enumerate(steps) if not s)
    assert collect(trial(quiet))[-1][0] == 20


@pytest.mark.parametrize("section, message", [
    ({"step_seconds": -1}, "synthetic.step_seconds: expected a number >= 0"),
    ({"fail_at_step": 7}, "synthetic.fail_at_step: expected 0 (never) or a step in 1..trainer.steps = 6"),
    ({"diverge_at_step": -2}, "synthetic.diverge_at_step: expected an integer >= 0"),
    ({"crash_fraction": 1.5}, "synthetic.crash_fraction: expected a number in 0..1"),
    ({"fail_after": 3}, "synthetic.fail_after: unknown key"),
])
def test_bad_settings_are_refused_naming_the_key(section, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        config(**section)


def test_the_section_is_left_out_of_a_trial_dict_at_its_defaults():
    # the fingerprint of every trial config recorded before the section existed stays what it was
    assert set(TrialConfig().to_dict()) == {"model", "data", "trainer", "reward", "algorithm", "seed", "backend",
                                            "local", "verl"}
    set_one = config(step_seconds=0.5).to_dict()
    assert set_one["synthetic"]["step_seconds"] == 0.5
    assert TrialConfig.from_dict(set_one).synthetic.step_seconds == 0.5


def test_a_synthetic_trial_imports_neither_torch_nor_mlflow():
    code = ("import sys; from trainers.config import TrialConfig; from trainers.backends import get_backend; "
            "get_backend('synthetic').train(TrialConfig.from_dict({'backend': 'synthetic', 'trainer': {'steps': 2}}), "
            "lambda *a: None, log=lambda s: None); print(sorted(m for m in ('torch', 'mlflow', 'numpy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
