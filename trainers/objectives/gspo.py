"""GSPO: one length-normalised sequence ratio per response, clipped (DHPO eq. 4-6).

    s_i     = (pi_theta(o_i) / pi_old(o_i))^(1/|o_i|) = exp(mean_t log r_{i,t})        (eq. 4)
    s_{i,t} = sg[s_i] * pi_theta(o_{i,t}) / sg[pi_theta(o_{i,t})]                         (eq. 5)
    J       = 1/G sum_i min(s_i A_i, clip(s_i, 1 - eps_low, 1 + eps_high) A_i)            (eq. 6)

We use the token-wise form of eq. 5, so s_{i,t} has the value of s_i but each token gets
its own gradient s_i * grad log pi(o_{i,t}). With 'seq-mean-token-mean' the tokens of a
response are averaged, which gives exactly the gradient of eq. 6.

    fn = get_objective("gspo", eps_low=3e-4, eps_high=4e-4)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.metrics import CLIP_FRACTION, CLIP_FRACTION_SEQ, SEQ_RATIO_MEAN
from trainers.objectives.base import (
    LOG_RATIO_LIMIT, PolicyBatch, aggregate_tokens, check_agg, check_positive, prepare,
    ratio_metrics, sign_aware_clip_fractions, to_floats,
)

if TYPE_CHECKING:  # the functions that compute import torch themselves (see base.py)
    import torch


@dataclass(frozen=True)
class GSPOParams:
    eps_low: float = 3e-4
    """Lower clip range of the sequence ratio s_i. GSPO/DHPO App. D: 3e-4."""
    eps_high: float = 4e-4
    """Upper clip range of the sequence ratio s_i. GSPO/DHPO App. D: 4e-4."""
    agg: str = "seq-mean-token-mean"
    """Loss aggregation: 'seq-mean-token-mean' (GSPO paper) or 'token-mean'."""

    def __post_init__(self):
        check_positive("eps_low", self.eps_low)
        check_positive("eps_high", self.eps_high)
        check_agg(self.agg)


def token_sequence_ratio(p) -> torch.Tensor:
    """s_{i,t} of eq. 5 in log space: sg[log s_i] + log pi - sg[log pi]; shared with DHPO."""
    import torch
    with torch.no_grad():
        log_seq_ratio = p.seq_mean(p.raw_log_ratio)  # log s_i, eq. 4
    log_s_token = log_seq_ratio[:, None] + p.log_probs - p.log_probs.detach()
    return log_s_token.clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT).exp()


def gspo_loss(batch: PolicyBatch, params: GSPOParams) -> tuple[torch.Tensor, dict[str, float]]:
    import torch
    p = prepare(batch)
    s_token = token_sequence_ratio(p)
    low, high = 1.0 - params.eps_low, 1.0 + params.eps_high
    clipped = s_token.clamp(min=low, max=high)
    token_loss = torch.maximum(-s_token * p.adv_token, -clipped * p.adv_token)  # -min(...) of eq. 6
    loss = aggregate_tokens(token_loss, p, params.agg)
    with torch.no_grad():
        metrics = ratio_metrics(p, p.log_ratio)
        metrics[SEQ_RATIO_MEAN] = p.masked_mean(s_token)
        metrics.update(sign_aware_clip_fractions(p, s_token, low, high))
        metrics[CLIP_FRACTION_SEQ] = metrics[CLIP_FRACTION]
    return loss, to_floats(metrics)
