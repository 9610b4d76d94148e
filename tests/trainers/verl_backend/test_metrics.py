"""verl's file-logger lines -> the metric contract (trainers/verl_backend/metrics.py)."""

from __future__ import annotations

import json
import math

import pytest

from contract.metrics import COMPUTE_GPU_S, COMPUTE_METRICS, COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED, COMPUTE_WALL_S
from trainers.compute import ComputeTally
from trainers.verl_backend.metrics import ComputeAxes, MetricsTail, non_finite, parse_line, step_tokens, translate, val_accuracies

STEP = {"actor/entropy": 1.5, "actor/pg_clipfrac": 0.1, "actor/grad_norm": 0.7, "actor/mix_weight": 0.4,
        "response_length/mean": 12.0, "critic/score/mean": 0.25, "critic/score/max": 1.0,
        "critic/advantages/mean": 0.0, "training/global_step": 3, "timing_s/step": 0.5, "timing_s/gen": 0.2,
        "perf/throughput": 900.0, "prompt_length/mean": 30.0}


def test_training_keys_map_to_contract_names_and_others_are_left_out():
    out = translate(STEP, {}, ["easy"])
    assert out["actor/entropy"] == 1.5 and out["actor/mix_weight"] == 0.4 and out["actor/grad_norm"] == 0.7
    assert out["response_length/mean"] == 12.0
    assert out["reward/mean"] == 0.25 and out["reward/max"] == 1.0  # from critic/score/*
    assert out["perf/step_time_s"] == 0.5 and out["perf/timing_s/gen"] == 0.2 and out["perf/tokens_per_s"] == 900.0
    assert not any(k.startswith(("critic/", "training/", "prompt_length/", "val/")) for k in out)


def test_val_core_keys_with_slashes_in_the_data_source_map_to_benchmarks_and_their_average():
    data = {"val-core/openai/gsm8k/acc/mean@4": 0.5, "val-core/easy/acc/mean@4": 0.25,
            "val-aux/easy/reward/mean@4": 0.9, "val-core/hard/reward/mean@1": 0.75}
    got = translate(data, {"openai/gsm8k": "gsm8k"}, ["gsm8k", "easy", "hard"])
    assert got["val/gsm8k/acc"] == 0.5 and got["val/easy/acc"] == 0.25
    assert got["val/hard/acc"] == 0.75  # verl's reward fallback when a source has no acc
    assert math.isclose(got["val/avg/acc"], (0.5 + 0.25 + 0.75) / 3)
    # the average needs every benchmark of the trial: none when one is missing
    assert "val/avg/acc" not in translate({"val-core/easy/acc/mean@1": 1.0}, {}, ["easy", "hard"])


def test_acc_wins_over_reward_for_the_same_source_whatever_the_order():
    for data in ({"val-core/easy/reward/mean@1": 0.9, "val-core/easy/acc/mean@1": 0.1},
                 {"val-core/easy/acc/mean@1": 0.1, "val-core/easy/reward/mean@1": 0.9}):
        assert val_accuracies(data, {}) == {"val/easy/acc": 0.1}


def test_divergence_is_detected_on_the_watched_keys_only():
    key, value = non_finite({"actor/grad_norm": float("nan"), "actor/entropy": 1.0})
    assert key == "actor/grad_norm" and math.isnan(value)
    key, value = non_finite({"actor/entropy": 1.0, "actor/pg_loss": float("inf")})
    assert key == "actor/pg_loss" and value == float("inf")
    assert non_finite({"actor/entropy": 1.0, "perf/step_time_s": float("nan")}) is None


def test_tail_reads_only_complete_lines_across_calls(tmp_path):
    path = tmp_path / "metrics.jsonl"
    tail = MetricsTail(path)
    assert tail.read() == []  # not there yet
    line1 = json.dumps({"step": 1, "data": {"actor/entropy": 1.0}})
    line2 = json.dumps({"step": 2, "data": {"actor/entropy": 2.0}})
    with open(path, "w") as f:
        f.write(line1 + "\n" + line2[:10])
    assert tail.read() == [(1, {"actor/entropy": 1.0})]
    with open(path, "a") as f:
        f.write(line2[10:] + "\n" + "not json\n")
    assert tail.read() == [(2, {"actor/entropy": 2.0})]
    assert tail.read() == []
    assert parse_line('{"step": "3", "data": {}}') is None


# Two training lines as verl's file logger writes them (12 responses: 3 prompts x 4): perf/total_num_tokens is
# the attention-mask sum, prompt_length/mean + response_length/mean per response.
STEP1 = {"timing_s/step": 2.0, "response_length/mean": 10.5, "prompt_length/mean": 30.0, "perf/total_num_tokens": 486}
STEP2 = {"timing_s/step": 3.0, "response_length/mean": 20.25, "prompt_length/mean": 30.0, "perf/total_num_tokens": 603}


def test_compute_axes_sum_the_lines_tokens_and_seconds():
    axes = ComputeAxes(responses_per_step=999, ppo_epochs=2, gpus=None)  # verl's totals win over the config's count
    assert axes.update({"val-core/easy/acc/mean@1": 0.5}) == {}  # step 0: validation only, nothing spent
    first, second = axes.update(STEP1), axes.update(STEP2)
    assert first == {COMPUTE_TOKENS_GENERATED: 126.0, COMPUTE_TOKENS_TRAINED: 252.0, COMPUTE_WALL_S: 2.0}
    assert second == {COMPUTE_TOKENS_GENERATED: 126.0 + 243.0, COMPUTE_TOKENS_TRAINED: 2 * 369.0, COMPUTE_WALL_S: 5.0}
    assert set(COMPUTE_METRICS) == set(second)  # no perf/gpu_s on the CPU platform


def test_compute_axes_on_gpus_and_without_verls_totals_and_after_a_resume():
    assert step_tokens({"response_length/mean": 10.5}, responses_per_step=8) == 84  # the config's batch size
    assert step_tokens({"timing_s/step": 1.0}, responses_per_step=8) is None
    resumed = ComputeAxes(12, 1, gpus=0.25, tally=ComputeTally(1000, 1000, 100.0, 25.0))  # a packed trial's share
    out = resumed.update(STEP2)
    assert out[COMPUTE_TOKENS_GENERATED] == 1243.0 and out[COMPUTE_TOKENS_TRAINED] == 1243.0
    assert out[COMPUTE_WALL_S] == 103.0 and out[COMPUTE_GPU_S] == pytest.approx(25.0 + 3.0 * 0.25)
