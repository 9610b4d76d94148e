"""Synthetic sweep stores: fill an MLflow store the way the sweep runner does.

Used by the smoke mode (`python -m dashboards --smoke`), the tests and
`benchmarks/report_scale.py`. Nothing here is used to build real reports.

The layout is the sweep runner's contract (see /work/shared/DESIGN.md, "MLflow layout"):
experiment = sweep name; a parent run (tags role=parent, sweep); one nested child run per
trial (tag mlflow.parentRunId, run name = trial id, tags role=trial, sweep, trial_id,
config, method, algorithm, seed, model, backend); params = flattened config with dotted
keys; metrics logged per step with `MlflowClient.log_batch`, step 0 = the base model.

    from dashboards.collect.synthetic_store import fill_store
    truth = fill_store("sqlite:////abs/dir/mlflow.db", "demo", artifact_root="/abs/dir/artifacts")
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tracking_store.client import open_client
from contract.metrics import CLIP_FRACTION, CLIP_FRACTION_SEQ, CLIP_FRACTION_TOKEN, ENTROPY, GRAD_NORM, MIX_WEIGHT, PPO_KL, RESPONSE_LENGTH_MAX, RESPONSE_LENGTH_MEAN, REWARD_MEAN, STEP_METRICS, STEP_TIME, TOKENS_PER_S, VAL_AVG, val_key
from tracking_store.roles import parent_tags, trial_tags

# (display label, registry name, a "strength" that shapes the synthetic accuracy curve)
METHODS: tuple[tuple[str, str, float], ...] = (
    ("GRPO", "grpo", 0.00),
    ("GSPO", "gspo", 0.02),
    ("GMPO", "gmpo", 0.01),
    ("CISPO", "cispo", 0.015),
    ("SAPO", "sapo", 0.025),
    ("SSPO (atanlog)", "sspo", 0.04),
    ("DHPO-A", "dhpo", 0.045),
    ("DHPO-E", "dhpo", 0.05),
)
TRAIN_KEYS = STEP_METRICS  # what a real backend reports every step (the contract)
BENCHMARKS = ("easy", "medium", "hard")
EPS_HIGH_GRID = (0.2, 0.28, 0.35, 0.4, 0.5, 0.6)


@dataclass(frozen=True)
class Trial:
    """One synthetic trial: the tags the runner writes plus a curve-shape knob."""

    trial_id: str
    config: str
    method: str
    algorithm: str
    seed: int
    model: str
    strength: float
    eps_high: float


def plan_trials(models: Sequence[str], methods: Sequence[tuple[str, str, float]],
                configs_per_method: int, seeds: Sequence[int]) -> list[Trial]:
    """The grid: models x methods x configs (eps_high values) x seeds."""
    trials = []
    for model in models:
        for label, algo, strength in methods:
            slug = label.lower().replace(" ", "").replace("(", "-").replace(")", "")
            for c in range(configs_per_method):
                eps_high = EPS_HIGH_GRID[c % len(EPS_HIGH_GRID)] + 0.01 * (c // len(EPS_HIGH_GRID))
                config = f"{slug}-h{eps_high:g}"
                if len(models) > 1:
                    config = f"{model}-{config}"
                for seed in seeds:
                    trials.append(Trial(f"{config}.s{seed}", config, label, algo, int(seed),
                                        model, strength + 0.01 * c, eps_high))
    return trials


def trial_curves(t: Trial, steps: int, eval_every: int, benchmarks: Sequence[str],
                 train_keys: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """key -> (steps, values). Step 0 is the base model (validation identical per model
    up to a small per-seed evaluation noise); val metrics only every `eval_every` steps."""
    rng = np.random.default_rng(zlib.crc32(t.trial_id.encode()))
    base_rng = np.random.default_rng(zlib.crc32(t.model.encode()))
    s = np.arange(steps + 1, dtype=float)
    frac = s / max(steps, 1)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    noise = lambda scale: rng.normal(0.0, scale, s.size)  # noqa: E731
    shapes = {
        ENTROPY: 0.3 + 0.5 * np.exp(-frac * (6 - 40 * t.strength)) + noise(0.02),
        RESPONSE_LENGTH_MEAN: 300 + 400 * frac * (0.5 + 10 * t.strength) + noise(15),
        RESPONSE_LENGTH_MAX: 1024 + 1000 * frac + noise(40),
        REWARD_MEAN: 0.2 + 0.5 * frac * (1 + 5 * t.strength) + noise(0.03),
        CLIP_FRACTION: 0.02 + 0.01 * rng.random(s.size),
        CLIP_FRACTION_TOKEN: 0.015 + 0.01 * rng.random(s.size),
        CLIP_FRACTION_SEQ: 0.005 + 0.01 * rng.random(s.size),
        PPO_KL: 1e-3 * (1 + rng.random(s.size)),
        GRAD_NORM: 0.5 + 0.2 * rng.random(s.size),
        MIX_WEIGHT: 0.5 + 0.1 * np.sin(frac * 6),
        STEP_TIME: 2.0 + 0.1 * rng.random(s.size),
        TOKENS_PER_S: 4000 + 100 * rng.random(s.size),
    }
    for key in train_keys:
        out[key] = (s[1:], shapes[key][1:])  # training metrics start at step 1
    ev = s[(s % eval_every == 0) | (s == steps)]
    accs = []
    for i, b in enumerate(benchmarks):
        base = 0.6 - 0.2 * i + base_rng.normal(0, 0.02)
        gain = (0.15 + 2 * t.strength) * (1 - np.exp(-3 * ev / max(steps, 1)))
        acc = np.clip(base + gain + rng.normal(0, 0.01, ev.size), 0, 1)
        acc[0] = np.clip(base + rng.normal(0, 0.005), 0, 1)  # base checkpoint, eval noise
        out[val_key(b)] = (ev, acc)
        accs.append(acc)
    if benchmarks:
        out[VAL_AVG] = (ev, np.mean(accs, axis=0))
    return out


def fill_store(tracking_uri: str, sweep: str = "demo", *, artifact_root: str | None = None,
               models: Sequence[str] = ("tiny-lm",), methods: Sequence[tuple[str, str, float]] = METHODS,
               configs_per_method: int = 1, seeds: Sequence[int] = (0, 1), steps: int = 20,
               eval_every: int = 5, benchmarks: Sequence[str] = BENCHMARKS,
               train_keys: Sequence[str] = TRAIN_KEYS, mix_weight_for_dhpo: bool = True,
               progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Create experiment + parent + nested trial runs and log every metric via log_batch.

    Returns the ground truth: a long frame (run_id, trial_id, method, config, seed, model,
    key, step, value) of every value logged, for tests and benchmarks to check against.
    """
    from mlflow.entities import Metric, Param

    client = open_client(tracking_uri)
    exp_id = client.create_experiment(sweep, artifact_location=artifact_root)
    parent = client.create_run(exp_id, run_name=sweep, tags=parent_tags(sweep))
    pid = parent.info.run_id
    trials = plan_trials(models, methods, configs_per_method, seeds)
    frames = []
    for n, t in enumerate(trials):
        tags = trial_tags(sweep, pid, t.trial_id, config=t.config, method=t.method, algorithm=t.algorithm,
                          seed=str(t.seed), model=t.model, backend="local")
        run = client.create_run(exp_id, run_name=t.trial_id, tags=tags)
        rid = run.info.run_id
        params = {"algorithm.name": t.algorithm, "algorithm.params.eps_low": "0.2",
                  "algorithm.params.eps_high": f"{t.eps_high:g}", "trainer.lr": "1e-06",
                  "trainer.steps": str(steps), "trainer.eval_every": str(eval_every),
                  "model.name": t.model, "seed": str(t.seed)}
        client.log_batch(rid, params=[Param(k, v) for k, v in params.items()])
        keys = list(train_keys) + ([MIX_WEIGHT] if mix_weight_for_dhpo and t.algorithm == "dhpo" else [])
        curves = trial_curves(t, steps, eval_every, benchmarks, keys)
        ts = int(time.time() * 1000)
        metrics = [Metric(k, float(v), ts + int(st), int(st))
                   for k, (ss, vv) in curves.items() for st, v in zip(ss, vv)]
        for i in range(0, len(metrics), 1000):  # MLflow's log_batch limit
            client.log_batch(rid, metrics=metrics[i:i + 1000])
        client.set_terminated(rid)
        frames.append(pd.DataFrame({
            "run_id": rid, "trial_id": t.trial_id, "method": t.method, "config": t.config,
            "seed": t.seed, "model": t.model,
            "key": [k for k, (ss, _) in curves.items() for _ in ss],
            "step": np.concatenate([ss for ss, _ in curves.values()]).astype(int),
            "value": np.concatenate([vv for _, vv in curves.values()])}))
        if progress:
            progress(n + 1, len(trials))
    client.set_terminated(pid)
    return pd.concat(frames, ignore_index=True)
