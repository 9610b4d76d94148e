"""CISPO: clipped importance-sampling weight, stop-gradient, times A times log-prob (MiniMax-M1).

    J = 1/G sum_i 1/|o_i| sum_t sg[clip(r_{i,t}, 1 - eps_low, 1 + eps_high)] A_i log pi_theta(o_{i,t})

Every token keeps a gradient (the weight is clipped, not the update); eps_low = 10 (DHPO
App. D) puts the lower bound below zero, i.e. no lower bound. The loss value is not a
surrogate objective value (it contains log pi), only its gradient matters.

    fn = get_objective("cispo", eps_low=10.0, eps_high=0.2)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainers.objectives.base import (
    PolicyBatch, aggregate_tokens, check_agg, check_positive, prepare, ratio_metrics, to_floats,
)


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
    p = prepare(batch)
    log_ratio = p.log_ratio
    ratio = log_ratio.exp()
    low, high = 1.0 - params.eps_low, 1.0 + params.eps_high
    weight = ratio.clamp(min=low, max=high).detach()  # sg[clip(r)]: no gradient through the weight
    token_loss = -weight * p.adv_token * p.log_probs
    loss = aggregate_tokens(token_loss, p, params.agg)
    with torch.no_grad():
        metrics = ratio_metrics(p, log_ratio)
        # CISPO clips the weight whatever the advantage sign (as verl counts it).
        clip_high = (ratio > high).to(ratio.dtype)
        clip_low = (ratio < low).to(ratio.dtype)
        metrics["actor/pg_clipfrac"] = p.masked_mean(clip_high + clip_low)
        metrics["actor/pg_clipfrac_low"] = p.masked_mean(clip_low)
        metrics["actor/pg_clipfrac_high"] = p.masked_mean(clip_high)
    return loss, to_floats(metrics)
