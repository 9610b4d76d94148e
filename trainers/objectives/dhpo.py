"""DHPO: a clipped surrogate on a mix of token and sequence ratios (DHPO eq. 7-12).

    m_{i,t}  = w_{i,t} r_{i,t} + (1 - w_{i,t}) s_{i,t}                                   (eq. 8)
    J        = 1/G sum_i 1/|o_i| sum_t min(m_{i,t} A_i, m~_{i,t} A_i)                    (eq. 7)
    branch:  m~ = w clip(r, 1-eps_low_token, 1+eps_high_token)
                  + (1 - w) clip(s, 1-eps_low_seq, 1+eps_high_seq)                        (eq. 11)
    unified: m~ = clip(m, 1-eps_low, 1+eps_high)                                  (Sec. 4.4 ablation)

r_{i,t} is GRPO's token ratio (eq. 2), s_{i,t} GSPO's token-wise sequence ratio (eq. 5).
Mixing weight w (Sec. 3.2):
    averaged: w = 0.5
    entropy:  w = g(sg[H_{i,t}]), g = min-max normalisation (eq. 9-10): high entropy -> more
              weight on the token ratio. The paper does not say over which tokens min and max
              are taken: ``entropy_norm='batch'`` (default) uses all valid tokens of the batch
              passed to the loss, ``'sequence'`` each response's own tokens. Where max = min
              (constant entropy) w falls back to 0.5, i.e. averaged mixing. A data-parallel
              caller (trainers/verl_plugin) passes ``entropy_range_reduce`` to take the 'batch'
              min and max over all ranks' micro-batches; see mixing_weight.
Since d r = r d log pi and d s_{i,t} = s_{i,t} d log pi, grad m = m grad log pi (eq. 12, 16).

    fn = get_objective("dhpo", mixing="entropy", clip_mode="branch")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.metrics import CLIP_FRACTION, CLIP_FRACTION_HIGH, CLIP_FRACTION_LOW, CLIP_FRACTION_SEQ, CLIP_FRACTION_TOKEN, MIXED_RATIO_MEAN, MIX_WEIGHT
from trainers.objectives.base import (
    PolicyBatch, Prepared, aggregate_tokens, check_agg, check_choice, check_positive, prepare,
    ratio_metrics, sign_aware_clip_fractions, to_floats,
)
from trainers.objectives.gspo import token_sequence_ratio

if TYPE_CHECKING:  # the functions that compute import torch themselves (see base.py)
    import torch

MIXINGS = ("averaged", "entropy")
CLIP_MODES = ("branch", "unified")
ENTROPY_NORMS = ("batch", "sequence")

# (h_min, h_max) -> (h_min, h_max) over a larger set of tokens, e.g. all data-parallel ranks
RangeReduce = Callable[["torch.Tensor", "torch.Tensor"], tuple["torch.Tensor", "torch.Tensor"]]


@dataclass(frozen=True)
class DHPOParams:
    mixing: str = "averaged"
    """Mixing weight w: 'averaged' (w = 0.5, DHPO-A) or 'entropy' (min-max normalised entropy, DHPO-E)."""
    clip_mode: str = "branch"
    """'branch': clip r and s separately before mixing (eq. 11); 'unified': clip the mixed ratio."""
    entropy_norm: str = "batch"
    """Scope of the entropy min-max normalisation: 'batch' (valid tokens of the batch) or 'sequence'."""
    eps_low_token: float = 0.2
    """Branch clipping: lower range of the token ratio r. DHPO App. D: 0.2."""
    eps_high_token: float = 0.28
    """Branch clipping: upper range of the token ratio r. DHPO App. D: 0.28."""
    eps_low_seq: float = 0.2
    """Branch clipping: lower range of the sequence ratio s. DHPO App. D: 0.2."""
    eps_high_seq: float = 0.28
    """Branch clipping: upper range of the sequence ratio s. DHPO App. D: 0.28."""
    eps_low: float = 0.2
    """Unified clipping: lower range of the mixed ratio m."""
    eps_high: float = 0.28
    """Unified clipping: upper range of the mixed ratio m."""
    agg: str = "seq-mean-token-mean"
    """Loss aggregation: 'seq-mean-token-mean' (paper, eq. 7) or 'token-mean'."""

    def __post_init__(self):
        check_choice("mixing", self.mixing, MIXINGS)
        check_choice("clip_mode", self.clip_mode, CLIP_MODES)
        check_choice("entropy_norm", self.entropy_norm, ENTROPY_NORMS)
        for name in ("eps_low_token", "eps_high_token", "eps_low_seq", "eps_high_seq", "eps_low", "eps_high"):
            check_positive(name, getattr(self, name))
        check_agg(self.agg)


def mixing_weight(p: Prepared, params: DHPOParams, entropy_range_reduce: RangeReduce | None = None) -> torch.Tensor:
    """w_{i,t} in [0, 1] (eq. 10), detached; 0.5 everywhere for averaged mixing.

    g of eq. 10 is min-max normalisation over the valid tokens of the scope ('batch': the whole
    batch passed here; 'sequence': each response). ``entropy_range_reduce`` (None in the local
    trainer: one process sees the whole batch) maps the local 'batch' (h_min, h_max) to the
    range over every rank's micro-batch: trainers/verl_plugin all-reduces them (MIN / MAX) over
    verl's data-parallel group, so each rank normalises exactly as one process normalising the
    union of the ranks' micro-batches. Across gradient-accumulation micro-batches nothing is
    reduced (verl computes the entropy in the same forward pass as the loss), so in verl DHPO-E's
    'batch' scope is micro-batch x dp size, not the mini-batch: it changes with
    ppo_micro_batch_size_per_gpu (or the dynamic-bsz token budget) and the number of ranks. The
    paper names no scope; min-max over one update's batch needs micro-batch = mini-batch / dp
    (no gradient accumulation). 'sequence' is invariant to any split and is never reduced.
    """
    import torch
    if params.mixing == "averaged":
        return torch.full_like(p.mask, 0.5)
    if p.entropy is None:
        raise ValueError("entropy: dhpo with mixing='entropy' needs PolicyBatch.entropy ([B, T]), got None")
    valid = p.mask > 0
    inf = torch.tensor(float("inf"), dtype=p.mask.dtype, device=p.mask.device)
    dims = dict(dim=-1, keepdim=True) if params.entropy_norm == "sequence" else {}
    h_min = torch.where(valid, p.entropy, inf).amin(**dims)  # no valid token: +inf, the identity of MIN
    h_max = torch.where(valid, p.entropy, -inf).amax(**dims)
    if entropy_range_reduce is not None and params.entropy_norm == "batch":
        h_min, h_max = entropy_range_reduce(h_min, h_max)  # same range on every data-parallel rank
    span = h_max - h_min
    degenerate = ~(span > 1e-12)  # constant entropy, or no valid token
    w = (p.entropy - h_min) / torch.where(degenerate, torch.ones_like(span), span)  # g of eq. 10
    return torch.where(degenerate, torch.full_like(w, 0.5), w.clamp(0.0, 1.0)) * p.mask


def dhpo_loss(
    batch: PolicyBatch, params: DHPOParams, *, entropy_range_reduce: RangeReduce | None = None
) -> tuple[torch.Tensor, dict[str, float]]:
    """The DHPO loss (-J of eq. 7); ``entropy_range_reduce``: see mixing_weight (None = local)."""
    import torch
    p = prepare(batch)
    log_ratio = p.log_ratio
    r = log_ratio.exp()  # token ratio, eq. 2
    s = token_sequence_ratio(p)  # sequence ratio s_{i,t}, eq. 5
    if entropy_range_reduce is None:  # local: min-max over this batch (the two-argument form)
        w = mixing_weight(p, params)  # eq. 10 (0.5 for averaged)
    else:  # data-parallel caller: the 'batch' range of all ranks' micro-batches
        w = mixing_weight(p, params, entropy_range_reduce)
    m = w * r + (1.0 - w) * s  # eq. 8
    if params.clip_mode == "branch":
        lo_t, hi_t = 1.0 - params.eps_low_token, 1.0 + params.eps_high_token
        lo_s, hi_s = 1.0 - params.eps_low_seq, 1.0 + params.eps_high_seq
        m_clipped = w * r.clamp(lo_t, hi_t) + (1.0 - w) * s.clamp(lo_s, hi_s)  # eq. 11
    else:
        m_clipped = m.clamp(1.0 - params.eps_low, 1.0 + params.eps_high)
    token_loss = torch.maximum(-m * p.adv_token, -m_clipped * p.adv_token)  # -min(...) of eq. 7
    loss = aggregate_tokens(token_loss, p, params.agg)
    with torch.no_grad():
        metrics = ratio_metrics(p, log_ratio)
        # pg_clipfrac: tokens where the clipped term wins the min of eq. 7 (gradient cut or reduced)
        metrics[CLIP_FRACTION] = p.masked_mean((-m_clipped * p.adv_token > -m * p.adv_token).to(m.dtype))
        if params.clip_mode == "branch":
            metrics.update(sign_aware_clip_fractions(p, r, lo_t, hi_t, prefix=CLIP_FRACTION_TOKEN))
            metrics.update(sign_aware_clip_fractions(p, s, lo_s, hi_s, prefix=CLIP_FRACTION_SEQ))
        else:
            unified = sign_aware_clip_fractions(p, m, 1.0 - params.eps_low, 1.0 + params.eps_high)
            metrics[CLIP_FRACTION_LOW] = unified[CLIP_FRACTION_LOW]
            metrics[CLIP_FRACTION_HIGH] = unified[CLIP_FRACTION_HIGH]
        metrics[MIX_WEIGHT] = p.masked_mean(w)
        metrics[MIXED_RATIO_MEAN] = p.masked_mean(m)
    return loss, to_floats(metrics)
