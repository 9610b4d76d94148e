"""GMPO: geometric mean of sign-aware clipped token ratios (SSPO eq. 7; Zhao et al. 2025).

    J = 1/G sum_i [prod_t |f_Clip(r_{i,t}; A_i)|]^(1/|o_i|) A_i
    f_Clip(r; A) = min(r, 1 + eps_high) if A > 0 else max(r, 1 - eps_low)      (SSPO eq. 1)

Computed in log space: exp(mean_t clipped log r_{i,t}), so long responses neither over- nor
underflow. ``clip_in_log_space=True`` clips log r to [-eps_low, eps_high] instead of
[log(1 - eps_low), log(1 + eps_high)] (what GMPO's code and verl's ``geo_mean`` do; with
eps = 0.4 that is the range (e^-0.4, e^0.4)). Without any active clip GMPO equals GSPO.

    fn = get_objective("gmpo", eps_low=0.4, eps_high=0.4, clip_in_log_space=False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.metrics import CLIP_FRACTION, CLIP_FRACTION_HIGH, CLIP_FRACTION_LOW, SEQ_RATIO_MEAN
from trainers.objectives.base import (
    PolicyBatch, aggregate_sequences, check_agg, check_positive, prepare, ratio_metrics, to_floats,
)

if TYPE_CHECKING:  # the functions that compute import torch themselves (see base.py)
    import torch


@dataclass(frozen=True)
class GMPOParams:
    eps_low: float = 0.4
    """Lower clip range of each token ratio (binding when A < 0). DHPO App. D: 0.4."""
    eps_high: float = 0.4
    """Upper clip range of each token ratio (binding when A > 0). DHPO App. D: 0.4."""
    clip_in_log_space: bool = False
    """False: clip r to [1-eps_low, 1+eps_high]; True: clip log r to [-eps_low, eps_high] (verl geo_mean)."""
    agg: str = "seq-mean-token-mean"
    """'seq-mean-token-mean': mean_i J_i (paper); 'token-mean': J_i weighted by response length."""

    def __post_init__(self):
        check_positive("eps_low", self.eps_low)
        check_positive("eps_high", self.eps_high)
        if not isinstance(self.clip_in_log_space, bool):
            raise ValueError(f"clip_in_log_space: expected true or false, got {self.clip_in_log_space!r}")
        check_agg(self.agg)

    def log_bounds(self) -> tuple[float, float]:
        """(lower, upper) bound on log r; the lower bound is -inf when 1 - eps_low <= 0."""
        if self.clip_in_log_space:
            return -self.eps_low, self.eps_high
        low = math.log(1.0 - self.eps_low) if self.eps_low < 1.0 else -math.inf
        return low, math.log1p(self.eps_high)


def gmpo_loss(batch: PolicyBatch, params: GMPOParams) -> tuple[torch.Tensor, dict[str, float]]:
    import torch
    p = prepare(batch)
    log_ratio = p.log_ratio
    lo, hi = params.log_bounds()
    positive = (p.adv_seq > 0)[:, None]
    # f_Clip of SSPO eq. 1 in log space: cap from above for A > 0, from below for A <= 0.
    clipped = torch.where(positive, log_ratio.clamp(max=hi), log_ratio.clamp(min=lo))
    geo_mean_ratio = p.seq_mean(clipped).exp()  # [prod_t f_Clip]^(1/|o_i|), eq. 7
    loss = aggregate_sequences(-geo_mean_ratio * p.adv_seq, p, params.agg)
    with torch.no_grad():
        metrics = ratio_metrics(p, log_ratio)
        clip_high = (positive & (log_ratio > hi)).to(log_ratio.dtype)
        clip_low = ((p.adv_seq < 0)[:, None] & (log_ratio < lo)).to(log_ratio.dtype)
        metrics[CLIP_FRACTION] = p.masked_mean(clip_high + clip_low)
        metrics[CLIP_FRACTION_LOW] = p.masked_mean(clip_low)
        metrics[CLIP_FRACTION_HIGH] = p.masked_mean(clip_high)
        metrics[SEQ_RATIO_MEAN] = (geo_mean_ratio * (p.lengths > 0)).sum() / (p.lengths > 0).sum().clamp(min=1)
    return loss, to_floats(metrics)
