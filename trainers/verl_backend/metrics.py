"""verl's per-step metrics -> the platform's metric contract (contract/metrics.py).

verl's ``file`` logger writes one JSON line per step, ``{"step": n, "data": {name: value}}``. This
module turns a line's ``data`` into contract names so curves from both backends line up:

    actor/*                         -> actor/*            (entropy, pg_clipfrac, grad_norm, ppo_kl, pg_loss,
                                                           and our losses' family metrics)
    response_length/*               -> response_length/*
    critic/score/{mean,max,min}     -> reward/{mean,max,min}
    val-core/<source>/acc/mean@N    -> val/<bench>/acc    (bench = data_sources.get(source, source);
                                                           a source may contain "/", e.g. openai/gsm8k)
    timing_s/<phase>                -> perf/timing_s/<phase>, and timing_s/step -> perf/step_time_s
    perf/*                          -> perf/*             (perf/throughput -> also perf/tokens_per_s)
    val/avg/acc                     = the mean of val/<bench>/acc over the trial's benchmarks

Anything else (critic/advantages, training/global_step, val-aux/...) is left out: the driver
logs only the contract's namespaces.

The compute axes (contract/metrics.py ``COMPUTE_METRICS``, ``COMPUTE_GPU_S``) are running sums, so they
need state across lines: ``ComputeAxes.update(data)`` (one per trial, train.py) adds a training line
(one with ``timing_s/step``; step 0's validation-only line adds nothing) and returns the sums:

    perf/tokens_generated  += response_length/mean x responses of the step, rounded; the responses are
                              perf/total_num_tokens / (prompt_length/mean + response_length/mean) (verl's
                              totals are attention-mask sums, so that is the batch size), else the trial's
                              prompts_per_step x group_size; exact to within verl's float32 mean
    perf/tokens_trained    += that x trainer.ppo_epochs (verl's actor.ppo_epochs: every pass over the
                              batch puts every response token in the loss)
    perf/wall_s            += timing_s/step (rollout, rewards, log-probs, update, checkpoint save and
                              weight sync; verl times validation apart, as timing_s/testing: not included)
    perf/gpu_s             += timing_s/step x the trial's GPUs (placement.py ``held_gpus``), on GPUs only

A resumed trial (verl resuming from its checkpoint of step k) continues from the sums of step k, which the
checkpoint's pointer carries (train.py); without them (an older pointer) they restart at 0, logged.

    for step, data in MetricsTail("metrics.jsonl").read():   # one translated line per step
        print(step, translate(data, data_sources={}, benchmarks=[]))
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from contract.metrics import (ACTOR, ENTROPY, GRAD_NORM, PERF, PG_LOSS, RESPONSE_LENGTH, RESPONSE_LENGTH_MEAN, REWARD,
                              STEP_TIME, TOKENS_PER_S, VAL_AVG, val_key)
from trainers.compute import ComputeTally

_VAL_CORE = re.compile(r"^val-core/(?P<source>.+)/(?P<metric>acc|reward|score)/mean@(?P<n>\d+)$")
_PASS = (ACTOR, RESPONSE_LENGTH, PERF)
# values that mean the run diverged (checked before a step is reported)
DIVERGENCE_KEYS = (GRAD_NORM, PG_LOSS, ENTROPY)


def val_accuracies(data: dict[str, Any], data_sources: dict[str, str]) -> dict[str, float]:
    """val/<bench>/acc from verl's val-core keys. ``acc`` wins over the reward/score fallback that
    verl writes for a source without an ``acc`` (the reward of our verifier is 0/1 anyway)."""
    found: dict[str, tuple[int, float]] = {}
    rank = {"acc": 0, "score": 1, "reward": 2}
    for key, value in data.items():
        match = _VAL_CORE.match(key)
        if not match or not isinstance(value, (int, float)):
            continue
        bench = data_sources.get(match["source"], match["source"])
        candidate = (rank[match["metric"]], float(value))
        if bench not in found or candidate < found[bench]:
            found[bench] = candidate
    return {val_key(bench): value for bench, (_, value) in found.items()}


def translate(data: dict[str, Any], data_sources: dict[str, str], benchmarks: list[str]) -> dict[str, float]:
    """One verl step's ``data`` under contract names (numbers only)."""
    out: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if key.startswith(_PASS):
            out[key] = float(value)
        elif key.startswith("critic/score/"):
            out[REWARD + key[len("critic/score/"):]] = float(value)
        elif key.startswith("timing_s/"):
            out[PERF + key] = float(value)
    if "timing_s/step" in data:
        out[STEP_TIME] = float(data["timing_s/step"])
    if PERF + "throughput" in data:  # verl's name of our tokens/s
        out[TOKENS_PER_S] = float(data[PERF + "throughput"])
    vals = val_accuracies(data, data_sources)
    out.update(vals)
    wanted = [val_key(b) for b in benchmarks]
    if vals and all(k in vals for k in wanted):
        out[VAL_AVG] = sum(vals[k] for k in wanted) / len(wanted)
    return out


def step_tokens(data: dict[str, Any], responses_per_step: int) -> int | None:
    """Response tokens a training line's rollout sampled (see the module docstring); None without
    ``response_length/mean``."""
    length = _number(data.get(RESPONSE_LENGTH_MEAN))
    if length is None:
        return None
    total, prompt = _number(data.get(PERF + "total_num_tokens")), _number(data.get("prompt_length/mean"))
    responses = responses_per_step
    if total is not None and prompt is not None and prompt + length > 0:
        responses = round(total / (prompt + length))
    return round(length * responses)


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


class ComputeAxes:
    """The compute sums of one verl trial across its lines (module docstring). ``gpus``: GPUs the trial
    holds (None on the CPU platform: no perf/gpu_s); ``tally``: the sums to continue (a resume)."""

    def __init__(self, responses_per_step: int, ppo_epochs: int, gpus: float | None, tally: ComputeTally | None = None):
        self.responses_per_step, self.ppo_epochs, self.gpus = responses_per_step, ppo_epochs, gpus
        self.tally = tally or ComputeTally()

    def update(self, data: dict[str, Any]) -> dict[str, float]:
        """Add one line's step; the sums after it under contract names ({} for a line without training)."""
        wall = _number(data.get("timing_s/step"))
        tokens = step_tokens(data, self.responses_per_step)
        if wall is None or tokens is None:
            return {}
        return self.tally.add(tokens, tokens * self.ppo_epochs, wall, self.gpus)


def non_finite(metrics: dict[str, float]) -> tuple[str, float] | None:
    """The first divergence key whose value is nan/inf, else None."""
    for key in DIVERGENCE_KEYS:
        value = metrics.get(key)
        if value is not None and not math.isfinite(value):
            return key, value
    return None


def parse_line(line: str) -> tuple[int, dict[str, Any]] | None:
    """(step, data) of one complete file-logger line; None for a partial or foreign line."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("step"), int) or not isinstance(record.get("data"), dict):
        return None
    return record["step"], record["data"]


class MetricsTail:
    """Reads the complete lines that verl's file logger appended since the last call."""

    def __init__(self, path):
        self.path, self.offset, self.partial = path, 0, b""

    def read(self) -> list[tuple[int, dict[str, Any]]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()  # "" after a final newline, else a line still being written
        return [parsed for raw in lines if (parsed := parse_line(raw.decode("utf-8", "replace")))]
