"""Simulated compute curves of known A, B, C_mid, with noise shaped like the default study's.

    from dashboards.stats.curve_simulation import DEFAULT_STUDY, simulate
    frame = simulate({"GRPO": (0.35, 0.8, 11.0), "DHPO": (0.38, 0.8, 11.0)}, rng=np.random.default_rng(0))
    # model, method, seed, x, value: one curve per method and seed, on DEFAULT_STUDY's evaluation steps

Each seed's curve is ScaleRL's sigmoid (dashboards/stats/compute_fit.py) with the method's B and C_mid and its
own ceiling A + N(0, seed_sd) (a seed's persistent deviation), R0 + N(0, start_sd) at compute 0 (the base
scored with the seed's evaluation stream), and N(0, point_sd) on each later evaluation (the evaluation's
sampling noise and the policy's drift between evaluations), clipped to [0, 1]. ``DEFAULT_STUDY`` is
measured on the default study (dhpo_vs_baselines.yaml, reproducible mode, 3 seeds, an evaluation every
20 of 200 steps; docs/compute-curves.md): R0 0.153 with a start spread of 0.009 over seeds, GRPO's pooled
fit A 0.35, B 0.81, C_mid 10.9 steps, residual spread 0.012-0.017 around the fits (0.014 taken), and the
seeds' spread of their mean over the last five evaluations, about 0.01.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dashboards.stats.compute_fit import sigmoid


@dataclass(frozen=True)
class NoiseShape:
    x: tuple = tuple(range(0, 201, 20))
    """The evaluation points (compute, here steps); 0 = the base."""
    seeds: int = 3
    r0: float = 0.153
    start_sd: float = 0.009
    seed_sd: float = 0.01
    point_sd: float = 0.014

    def with_(self, **changes) -> "NoiseShape":
        return replace(self, **changes)


DEFAULT_STUDY = NoiseShape()
DEFAULT_CURVE = (0.35, 0.81, 10.9)
"""(A, B, C_mid) of GRPO's pooled fit on the default study."""


def simulate(methods: dict, shape: NoiseShape = DEFAULT_STUDY, *, rng: np.random.Generator, model: str = "sim",
             seed_sd: dict | None = None) -> pd.DataFrame:
    """Curves of ``methods`` ({name: (A, B, C_mid)}); ``seed_sd``: a method's own seed spread (default the shape's)."""
    x = np.asarray(shape.x, float)
    rows = []
    for method, (A, B, C_mid) in methods.items():
        sd = (seed_sd or {}).get(method, shape.seed_sd)
        for seed in range(shape.seeds):
            y = sigmoid(x, A + rng.normal(0, sd), B, C_mid, shape.r0) + rng.normal(0, shape.point_sd, x.size)
            y = np.where(x == 0, shape.r0 + rng.normal(0, shape.start_sd), y)
            rows.append(pd.DataFrame({"model": model, "method": method, "seed": seed, "x": x, "value": np.clip(y, 0, 1)}))
    return pd.concat(rows, ignore_index=True)
