"""CISPO: clipped importance-sampling weight, stop-gradient, times A times log-prob (MiniMax-M1).

    J = 1/G sum_i 1/|o_i| sum_t sg[clip(r_{i,t}, 1 - eps_low, 1 + eps_high)] A_i log pi_theta(o_{i,t})

Every token keeps a gradient (the weight is clipped, not the update); eps_low = 10 (DHPO
App. D) puts the lower bound below zero, i.e. no lower bound. The loss value is not a
surrogate objective value (it contains log pi), only its gradient matters.

    fn = get_objective("cispo", eps_low=10.0, eps_high=0.2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.metrics import CLIP_FRACTION, CLIP_FRACTION_HIGH, CLIP_FRACTION_LOW
from trainers.objectives.base import (
    PolicyBatch, aggregate_tokens, check_agg, check_positive, prepare, ratio_metrics, to_floats,
)

if TYPE_CHECKING:  # the functions that compute import torch themselves (see base.py)
    import torch


@dataclass(frozen=True)
class CISPOParams:
    eps_low: float = 10.0
    """Lower clip range of the IS weight; >= 1 means no lower bound. DHPO App. D: 10."""
    eps_high: float = 0.2
    """Upper clip range of the IS weight. DHPO App. D: 0.2."""
    agg: str = "seq-mean-token-mean"
    """Loss aggregation: 'seq-mean-token-mean' (papers) or 'token-mean' (MiniMax-M1, verl)."""

    def __post_init__(self):
        check_positive("eps_low", self.eps_low)
        check_positive("eps_high", self.eps_high)
        check_agg(self.agg)


def cispo_loss(batch: PolicyBatch, params: CISPOParams) -> tuple[torch.Tensor, dict[str, float]]:
    import torch
    p = prepare(batch)
    low, high = 1.0 - params.eps_low, 1.0 + params.eps_high
    with torch.no_grad():  # sg[clip(r)]: the gradient flows only through log pi below
        log_ratio = p.log_ratio
        ratio = log_ratio.exp()
        coef = ratio.clamp(min=low, max=high).mul_(p.adv_token).neg_()  # -sg[clip(r)] A, in place
    token_loss = coef * p.log_probs
    loss = aggregate_tokens(token_loss, p, params.agg)
    with torch.no_grad():
        metrics = ratio_metrics(p, log_ratio, ratio)
        # CISPO clips the weight whatever the advantage sign (as verl counts it).
        high_frac = p.count_mean(p.valid & (ratio > high))
        low_frac = p.count_mean(p.valid & (ratio < low))
        metrics[CLIP_FRACTION] = high_frac + low_frac
        metrics[CLIP_FRACTION_LOW] = low_frac
        metrics[CLIP_FRACTION_HIGH] = high_frac
    return loss, to_floats(metrics)
