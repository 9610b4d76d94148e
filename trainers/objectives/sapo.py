"""SAPO: token-level sigmoid soft gate instead of a hard clip (SSPO eq. 8-10; Gao et al. 2025).

    J = 1/G sum_i 1/|o_i| sum_t f_Soft(r_{i,t}; A_i) A_i
    f_Soft(x; A) = sigmoid(tau(A) (x - 1)) * 4 / tau(A),   tau = tau_pos if A > 0 else tau_neg

As published, f_Soft(1) = 2 / tau (not 1); what matters is f_Soft'(1) = 1, so the on-policy
gradient is the vanilla policy gradient. The gradient weight f_Soft'(r) r = 4 g (1 - g) r
(eq. 12-13) is reported as actor/gate_weight.

    fn = get_objective("sapo", tau_pos=1.0, tau_neg=1.05)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.metrics import GATE_WEIGHT
from trainers.objectives.base import (
    PolicyBatch, aggregate_tokens, check_agg, check_positive, prepare, ratio_metrics, to_floats,
)

if TYPE_CHECKING:  # the functions that compute import torch themselves (see base.py)
    import torch


@dataclass(frozen=True)
class SAPOParams:
    tau_pos: float = 1.0
    """Gate temperature for tokens with A > 0 (larger = faster decay off-policy). SAPO: 1.0."""
    tau_neg: float = 1.05
    """Gate temperature for tokens with A <= 0. SAPO: 1.05."""
    agg: str = "seq-mean-token-mean"
    """Loss aggregation: 'seq-mean-token-mean' (SAPO, verl) or 'token-mean'."""

    def __post_init__(self):
        check_positive("tau_pos", self.tau_pos)
        check_positive("tau_neg", self.tau_neg)
        check_agg(self.agg)


def sapo_loss(batch: PolicyBatch, params: SAPOParams) -> tuple[torch.Tensor, dict[str, float]]:
    import torch
    p = prepare(batch)
    log_ratio = p.log_ratio
    ratio = log_ratio.exp()
    tau = torch.where(p.adv_token > 0, ratio.new_tensor(params.tau_pos), ratio.new_tensor(params.tau_neg))  # eq. 10
    gate = torch.sigmoid(tau * (ratio - 1.0))
    token_loss = gate * (-4.0 * p.adv_token / tau)  # eq. 9; the factor has no grad
    loss = aggregate_tokens(token_loss, p, params.agg)
    with torch.no_grad():
        metrics = ratio_metrics(p, log_ratio, ratio)
        metrics[GATE_WEIGHT] = 4.0 * p.masked_mean(gate * (1.0 - gate) * ratio)
    return loss, to_floats(metrics)
