"""A real MLflow sqlite store with known values, for the dashboards tests (fixtures: conftest.py).

Imported by the tests as `dashboards_store` (a unique module name: `from conftest import ...`
would clash with other test folders' conftest modules). The store follows the sweep runner's
layout (parent run + nested trial runs, tags, dotted params, metrics per step via log_batch).
Values are closed-form so the tests can recompute every cell.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pandas as pd

BENCH = ["easy", "medium", "hard"]
MODELS = {"m-small": 0.0, "m-large": 0.1}  # model -> accuracy offset
SEEDS = [0, 1]
STEPS = 10
EVAL_STEPS = [0, 5, 10]
# (method, algorithm, config, gain, eps_high, peaked): peaked curves are best at step 5
CONFIGS = [
    ("GRPO", "grpo", "grpo-lo", 0.10, "0.2", False),
    ("GRPO", "grpo", "grpo-hi", 0.15, "0.28", False),
    ("GSPO", "gspo", "gspo", 0.12, "0.0004", False),
    ("DHPO-E", "dhpo", "dhpo-entropy-branch", 0.20, "0.28", True),
]


def val_acc(model: str, bench_i: int, seed: int, step: int, gain: float, peaked: bool) -> float:
    """Closed form of val/<bench>/acc: base + gain * curve(step) + seed offset."""
    base = 0.3 + MODELS[model] + 0.1 * bench_i
    if step == 0:
        return base + 0.002 * seed  # same base checkpoint, small evaluation noise
    curve = {5: 1.25 if peaked else 0.5, 10: 1.0}[step]
    return base + gain * curve + 0.012 * seed * (bench_i + 1)


@dataclass
class KnownStore:
    uri: str
    root: str
    sweep: str
    parent_run_id: str
    truth: pd.DataFrame  # run_id, trial_id, method, config, seed, model, key, step, value


def fill_known_store(root) -> KnownStore:
    from mlflow.entities import Metric, Param

    uri = f"sqlite:///{root}/mlflow.db"
    from tracking_store.client import open_client
    client = open_client(uri)
    exp = client.create_experiment("known", artifact_location=str(root / "artifacts"))
    parent = client.create_run(exp, run_name="known", tags={"role": "parent", "sweep": "known"})
    pid = parent.info.run_id
    rows = []
    for model, (method, algo, config, gain, eps_high, peaked), seed in itertools.product(MODELS, CONFIGS, SEEDS):
        cfg_id = f"{model}-{config}"
        tid = f"{cfg_id}.s{seed}"
        run = client.create_run(exp, run_name=tid, tags={
            "mlflow.parentRunId": pid, "role": "trial", "sweep": "known", "trial_id": tid, "config": cfg_id,
            "method": method, "algorithm": algo, "seed": str(seed), "model": model, "backend": "local"})
        rid = run.info.run_id
        values = []
        for step in EVAL_STEPS:
            accs = [val_acc(model, i, seed, step, gain, peaked) for i in range(len(BENCH))]
            values += [(f"val/{b}/acc", step, a) for b, a in zip(BENCH, accs)]
            values.append(("val/avg/acc", step, sum(accs) / len(accs)))
        for step in range(1, STEPS + 1):
            values += [("actor/entropy", step, 1.0 - 0.05 * step + 0.01 * seed - gain),
                       ("response_length/mean", step, 100.0 + 10 * step + seed),
                       ("actor/pg_clipfrac", step, 0.01 * step * gain),
                       ("actor/clipfrac_token", step, 0.02 + 0.001 * seed)]
        client.log_batch(rid, metrics=[Metric(k, v, 1000 + s, s) for k, s, v in values],
                         params=[Param("algorithm.name", algo), Param("algorithm.params.eps_high", eps_high),
                                 Param("trainer.lr", "1e-06"), Param("seed", str(seed))])
        client.set_terminated(rid)
        rows += [dict(run_id=rid, trial_id=tid, method=method, config=cfg_id, seed=seed, model=model,
                      key=k, step=s, value=v) for k, s, v in values]
    client.set_terminated(pid)
    return KnownStore(uri, str(root), "known", pid, pd.DataFrame(rows))
