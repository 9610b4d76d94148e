"""The built-in trainer: every objective trains, contract metrics, determinism, bit-exact resume, errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from contract.metrics import (COMPUTE_GPU_S, COMPUTE_METRICS, COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED,
                              COMPUTE_WALL_S, DHPO_METRICS, RESPONSE_LENGTH_MEAN, STEP_METRICS, STEP_TIME,
                              TOKENS_PER_S, val_metrics)
from trainers.config import ConfigError, load_trial_config
from trainers.local.trainer import train
from trainers.objectives import OBJECTIVES

pytestmark = pytest.mark.lane("local")  # its slow tests' lane (tests/conftest.py)

REPO = Path(__file__).resolve().parents[3]
SMALL = ["trainer.steps=4", "trainer.eval_every=2", "trainer.prompts_per_step=2", "trainer.group_size=4",
         "trainer.max_new_tokens=24", "trainer.eval_k=1", "data.eval_size=4", "data.train_size=200",
         "local.warm_start.steps=150", f"local.warm_start.cache_dir={REPO / '.cache' / 'test_base_models'}"]


def run(overrides, resume_from=None, workdir=None):
    history = []
    cfg = load_trial_config(None, SMALL + overrides)
    train(cfg, lambda step, metrics, ckpt: history.append((step, dict(metrics), ckpt)), resume_from=resume_from,
          workdir=workdir, log=lambda s: None)
    return history


WALL_CLOCK = (STEP_TIME, TOKENS_PER_S, COMPUTE_WALL_S, COMPUTE_GPU_S)
"""The metrics that measure time; every other one (the token counters too) is deterministic."""


def comparable(history):
    """Every metric except wall-clock ones."""
    return [(step, {k: v for k, v in m.items() if k not in WALL_CLOCK}) for step, m, _ in history]


# Every registered objective trains once with its defaults, except these, which train these variants instead.
VARIANTS = {"gmpo": [["algorithm.params.clip_in_log_space=true"]],
            "sspo": [["algorithm.params.gate=gumbel"], []],
            "dhpo": [["algorithm.params.mixing=entropy"], ["algorithm.params.clip_mode=unified"]]}
OPTIONS = [(name, extra) for name in OBJECTIVES for extra in VARIANTS.get(name, [[]])]


def test_options_cover_every_registered_objective():
    assert set(VARIANTS) <= set(OBJECTIVES)
    assert {name for name, _ in OPTIONS} == set(OBJECTIVES)


@pytest.mark.slow
@pytest.mark.parametrize("name,extra", OPTIONS, ids=[f"{n}{'-' + e[0].split('=')[1] if e else ''}" for n, e in OPTIONS])
def test_every_objective_trains_and_logs_contract_metrics(name, extra):
    history = run([f"algorithm.name={name}"] + extra)
    steps = [step for step, _, _ in history]
    assert steps == [0, 1, 2, 3, 4]
    benches = ["easy", "medium", "hard"]
    assert set(history[0][1]) == set(val_metrics(benches))  # step 0 = base model evaluation
    expected = set(STEP_METRICS) | set(COMPUTE_METRICS) | (set(DHPO_METRICS) if name == "dhpo" else set())
    for step, metrics, _ in history[1:]:
        assert expected <= set(metrics), expected - set(metrics)
        assert all(math.isfinite(v) for v in metrics.values()), metrics
        assert 0 <= metrics["actor/pg_clipfrac"] <= 1
        level = OBJECTIVES[name].clipfrac_level  # its clip fraction is also logged at its level
        if level:
            assert metrics[f"actor/clipfrac_{level}"] == metrics["actor/pg_clipfrac"]
        assert (set(val_metrics(benches)) <= set(metrics)) == (step % 2 == 0)
    assert any(m["actor/grad_norm"] > 0 for _, m, _ in history[1:])  # the objective produced gradients


@pytest.mark.slow
def test_same_seed_identical_different_seed_different():
    a, b, c = run(["seed=3"]), run(["seed=3"]), run(["seed=4"])
    assert comparable(a) == comparable(b)
    assert comparable(a) != comparable(c)


@pytest.mark.slow
def test_resume_from_checkpoint_is_bit_exact(tmp_path):
    full = run(["trainer.steps=6", "trainer.checkpoint_every=3", "algorithm.name=dhpo",
                "algorithm.params.mixing=entropy"], workdir=tmp_path / "full")
    checkpoints = {step: ckpt for step, _, ckpt in full if ckpt is not None}
    assert sorted(checkpoints) == [3, 6]
    resumed = run(["trainer.steps=6", "trainer.checkpoint_every=3", "algorithm.name=dhpo",
                   "algorithm.params.mixing=entropy"], resume_from=checkpoints[3], workdir=tmp_path / "resumed")
    assert [step for step, _, _ in resumed] == [4, 5, 6]  # continues after the checkpoint, no step 0 again
    assert comparable(resumed) == comparable(full)[4:]  # the token counters included: they continue the sums
    tokens = (COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED)
    assert [[m[k] for k in tokens] for _, m, _ in resumed] == [[m[k] for k in tokens] for _, m, _ in full[4:]]
    # the wall-clock sum continues from the checkpoint's: step 3's sum plus the resumed steps' own times
    assert resumed[0][1][COMPUTE_WALL_S] == pytest.approx(full[3][1][COMPUTE_WALL_S] + resumed[0][1][STEP_TIME])


@pytest.mark.slow
def test_compute_counters_sum_what_each_step_sampled_and_trained():
    """perf/tokens_generated: the responses' tokens summed over the steps (response_length/mean x responses
    per step); perf/tokens_trained: that x ppo_epochs (every mini-batch of every pass is in the loss);
    perf/wall_s: the sum of perf/step_time_s; no perf/gpu_s on the CPU."""
    history = run(["trainer.ppo_epochs=2", "trainer.updates_per_rollout=2"])
    assert not set(COMPUTE_METRICS) & set(history[0][1])  # step 0 evaluates the base: nothing spent yet
    responses = 2 * 4  # prompts_per_step x group_size of SMALL
    generated = trained = wall = 0.0
    for step, m, _ in history[1:]:
        assert set(COMPUTE_METRICS) <= set(m) and COMPUTE_GPU_S not in m, step
        assert m[COMPUTE_TOKENS_GENERATED] > generated and m[COMPUTE_TOKENS_TRAINED] > trained and m[COMPUTE_WALL_S] > wall
        assert m[COMPUTE_TOKENS_GENERATED] - generated == round(m[RESPONSE_LENGTH_MEAN] * responses), step
        assert m[COMPUTE_TOKENS_GENERATED].is_integer() and m[COMPUTE_TOKENS_TRAINED] == 2 * m[COMPUTE_TOKENS_GENERATED]
        assert m[COMPUTE_WALL_S] == pytest.approx(wall + m[STEP_TIME])
        generated, trained, wall = m[COMPUTE_TOKENS_GENERATED], m[COMPUTE_TOKENS_TRAINED], m[COMPUTE_WALL_S]


@pytest.mark.parametrize("override,needle", [
    ("algorithm.name=grpoo", "did you mean 'grpo'"),
    ("trainer.group_size=1", "trainer.group_size: expected an integer >= 2"),
    ("data.benchmarks=[easy,olympiad]", "data.benchmarks"),
    ("trainer.stepz=3", "trainer.stepz: unknown key (did you mean 'trainer.steps'?)"),
    ("algorithm.params.eps_low=-0.1", "eps_low: expected a finite number > 0"),
    ("data.train_file=missing.jsonl", "data.train_file: expected an existing file (.jsonl, .json or .parquet"),
    ("trainer.eval_mode=beam", "trainer.eval_mode: expected 'avg@k' or 'greedy'"),
    ("local.device=tpu", "local.device"),
])
def test_bad_config_is_a_clear_error(override, needle):
    with pytest.raises(ConfigError) as err:
        load_trial_config(None, SMALL + [override])
    assert needle in str(err.value)


def test_cli_smoke_runs_and_rejects_bad_config(capsys):
    from trainers.local.__main__ import main

    assert main(["trainer.group_size=1"]) == 2
    assert "trainer.group_size" in capsys.readouterr().err
    assert main(["--smoke"] + SMALL) == 0
    assert "val/avg/acc" in capsys.readouterr().out


@pytest.mark.slow
def test_grpo_on_default_preset_raises_heldout_accuracy_over_base():
    """The default preset (its cached base, its lr, fixed seed): GRPO must beat the base model clearly.

    Measured (2 cores): base val/avg/acc 0.178; after 20/40/60/80 steps 0.26/0.28/0.27/0.29.
    """
    history = []
    cfg = load_trial_config(None, ["trainer.steps=80", "trainer.eval_every=20", "seed=0", "algorithm.name=grpo"])
    train(cfg, lambda step, metrics, ckpt: history.append((step, dict(metrics))), log=lambda s: None)
    evals = {step: m["val/avg/acc"] for step, m in history if "val/avg/acc" in m}
    assert sorted(evals) == [0, 20, 40, 60, 80]
    late = (evals[60] + evals[80]) / 2
    assert late >= evals[0] + 0.05, evals


def test_shipped_presets_equal_the_dataclass_defaults():
    """`python -m trainers.local` (dataclass defaults) and the sweeps' presets describe the same trial."""
    from sweeps.specs.load import compose_base
    from trainers.config import TrialConfig

    base = compose_base([{"trainer": "local_tiny"}, {"model": "tiny_qwen3"}, {"data": "arith"}], "test")
    assert TrialConfig.from_dict(base).to_dict() == TrialConfig().to_dict()


# The shared evaluation path (evaluators/scoring.py) on the default preset's base policy: seed 3, 24 problems
# per benchmark, eval_k 4, 64 new tokens, at steps 0 and 7 (the step seeds the evaluation stream), in the
# reproducible numeric mode (trainers/local/numerics.py), meant to build the same base on any x86-64 CPU
# with AVX2: sha1 cd0663db (first 8 hex digits), recorded from the path itself, a guard against
# later changes. A base of other bytes is skipped, naming its sha (the mode's own tests then say why).
GOLDEN_VALIDATION = {
    "cd0663db": {
        "avg@k": {0: {"val/easy/acc": 0.17708333333333334, "val/medium/acc": 0.25, "val/hard/acc": 0.010416666666666666,
                      "val/avg/acc": 0.14583333333333334},
                  7: {"val/easy/acc": 0.19791666666666666, "val/medium/acc": 0.3020833333333333, "val/hard/acc": 0.0,
                      "val/avg/acc": 0.16666666666666666}},
        "greedy": {0: {"val/easy/acc": 0.5416666666666666, "val/medium/acc": 0.625, "val/hard/acc": 0.0,
                       "val/avg/acc": 0.38888888888888884}},
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["avg@k", "greedy"])
def test_validation_through_the_shared_evaluation_path_is_unchanged(mode):
    import hashlib

    from trainers.config import TrialConfig
    from trainers.local.trainer import LocalTrainer, evaluate
    from trainers.local.warmstart import ensure_base_checkpoint

    cfg = TrialConfig.from_dict({"data": {"eval_size": 24}, "seed": 3,  # the default base (the test above built it)
                                 "trainer": {"eval_mode": mode, "eval_k": 4, "max_new_tokens": 64}})
    trainer = LocalTrainer(cfg, log=lambda line: None)
    base = ensure_base_checkpoint(cfg, trainer.train_problems, lambda line: None)  # the cached base it loaded
    sha = hashlib.sha1((base / "model.safetensors").read_bytes()).hexdigest()[:8]
    if sha not in GOLDEN_VALIDATION:
        pytest.skip(f"no golden values for the base this CPU builds (sha1 {sha}); known: {sorted(GOLDEN_VALIDATION)}")
    for step, want in GOLDEN_VALIDATION[sha][mode].items():
        assert evaluate(trainer.model, trainer.tokenizer, trainer.benchmarks, cfg, step) == want  # exact floats


def test_ppo_epochs_repeat_the_mini_batches_off_policy():
    """ppo_epochs=E makes updates_per_rollout x E optimizer updates per step (the warm-up counts them), and
    passes after the first train on responses the policy already moved on: one on-policy update never clips."""
    common = ["trainer.steps=2", "trainer.updates_per_rollout=1", "trainer.warmup_steps=100", "trainer.lr=3e-2"]
    once = run(common + ["trainer.ppo_epochs=1"])
    thrice = run(common + ["trainer.ppo_epochs=3"])
    assert once[1][1]["actor/lr"] == pytest.approx(3e-2 * 2 / 100)  # 1 update taken: the next is the 2nd
    assert thrice[1][1]["actor/lr"] == pytest.approx(3e-2 * 4 / 100)  # 3 updates taken
    assert all(m["actor/pg_clipfrac"] == 0 for _, m, _ in once[1:])  # ratio 1 on the rollout's own policy
    assert any(m["actor/pg_clipfrac"] > 0 for _, m, _ in thrice[1:])  # passes 2-3 reuse it


def test_ppo_epochs_is_validated():
    with pytest.raises(ConfigError, match=r"trainer.ppo_epochs: expected an integer >= 1, got 0"):
        load_trial_config(None, SMALL + ["trainer.ppo_epochs=0"])


@pytest.mark.slow
def test_char_tags_tokenizer_builds_its_own_base_and_trains():
    import json

    from trainers.local.warmstart import base_key

    history = run(["local.tokenizer=char_tags", "algorithm.name=grpo"])
    assert [step for step, _, _ in history] == [0, 1, 2, 3, 4]
    assert all(math.isfinite(v) for _, m, _ in history for v in m.values())
    cfg = load_trial_config(None, SMALL + ["local.tokenizer=char_tags"])
    vocab = json.loads((Path(cfg.local.warm_start.cache_dir) / base_key(cfg) / "tokenizer.json").read_text())["model"]["vocab"]
    assert {"<think>", "</think>", "<answer>", "</answer>"} <= set(vocab)
