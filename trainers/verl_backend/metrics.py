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

    python -m trainers.verl_backend.metrics metrics.jsonl   # print one translated line per step
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from contract.metrics import ACTOR, ENTROPY, GRAD_NORM, PERF, PG_LOSS, RESPONSE_LENGTH, REWARD, STEP_TIME, TOKENS_PER_S, VAL_AVG, val_key

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


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m trainers.verl_backend.metrics METRICS.jsonl", file=sys.stderr)
        return 2
    for step, data in MetricsTail(argv[0]).read():
        print(step, json.dumps(translate(data, {}, []), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
