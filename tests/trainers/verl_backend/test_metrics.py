"""verl's file-logger lines -> the metric contract (trainers/verl_backend/metrics.py)."""

from __future__ import annotations

import json
import math

from trainers.verl_backend.metrics import MetricsTail, non_finite, parse_line, translate, val_accuracies

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
