"""GRPO: token-level importance ratio with PPO clipping (DHPO eq. 2-3; SSPO eq. 2-4).

    J = 1/G sum_i 1/|o_i| sum_t min(r_{i,t} A_i, clip(r_{i,t}, 1 - eps_low, 1 + eps_high) A_i)

DAPO's clip-higher is just ``eps_high=0.28``. Unlike verl's ``vanilla`` loss there is no
dual-clip bound (clip_ratio_c) for negative advantages: the papers' GRPO has none.

    fn = get_objective("grpo", eps_low=0.2, eps_high=0.2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainers.objectives.base import (
    PolicyBatch, aggregate_tokens, check_agg, check_positive, prepare, ratio_metrics,
    sign_aware_clip_fractions, to_floats,
)

if TYPE_CHECKING:  # the functions that compute import torch themselves (see base.py)
    import torch


@dataclass(frozen=True)
class GRPOParams:
    eps_low: float = 0.2
    """Lower clip range: ratios below 1 - eps_low stop pushing down (A < 0). DHPO App. D: 0.2."""
    eps_high: float = 0.2
    """Upper clip range: ratios above 1 + eps_high stop pushing up (A > 0). 0.28 = DAPO clip-higher."""
    agg: str = "seq-mean-token-mean"
    """Loss aggregation: 'seq-mean-token-mean' (papers) or 'token-mean' (verl default)."""

    def __post_init__(self):
        check_positive("eps_low", self.eps_low)
        check_positive("eps_high", self.eps_high)
        check_agg(self.agg)


def grpo_loss(batch: PolicyBatch, params: GRPOParams) -> tuple[torch.Tensor, dict[str, float]]:
    import torch
    p = prepare(batch)
    log_ratio = p.log_ratio
    ratio = log_ratio.exp()  # r_{i,t}, eq. 2
    low, high = 1.0 - params.eps_low, 1.0 + params.eps_high
    clipped = ratio.clamp(min=low, max=high)
    # min(r A, clip(r) A) of eq. 3, written as a loss: max(-r A, -clip(r) A)
    token_loss = torch.maximum(-ratio * p.adv_token, -clipped * p.adv_token)
    loss = aggregate_tokens(token_loss, p, params.agg)
    with torch.no_grad():
        metrics = ratio_metrics(p, log_ratio, ratio)
        metrics.update(sign_aware_clip_fractions(p, ratio, low, high))
    return loss, to_floats(metrics)
