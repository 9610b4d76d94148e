"""Shared pieces of the objective zoo: the batch type, input preparation, aggregation, checks.

Every objective module (grpo.py, gspo.py, ...) is a pure function
``loss_fn(batch: PolicyBatch, params) -> (loss, metrics)`` built from these helpers:

* ``prepare(batch)`` validates shapes, upcasts bf16/fp16 to float32 and replaces padded
  positions by zeros, so garbage (even inf/nan) under the mask never reaches a value or
  a gradient;
* ``aggregate_tokens`` / ``aggregate_sequences`` implement the two aggregation modes;
* ``check_*`` raise ``ValueError`` naming the parameter and the allowed range.

Notation follows the papers: r_{i,t} token ratio (DHPO eq. 2), s_i length-normalised
sequence ratio (DHPO eq. 4), A_i group-normalised advantage (DHPO eq. 1).

torch is imported inside the functions that compute (here and in every family module), never at
module level: validating a sweep spec or ``sweep ls-objectives`` reads the params dataclasses and
the registry without paying for torch's import (tests/sweeps/test_spec_light_imports.py).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.metrics import CLIP_FRACTION, PPO_KL, RATIO_MAX, RATIO_MEAN, RATIO_MIN

if TYPE_CHECKING:  # annotations only: see the module docstring
    import torch

AGG_MODES = ("seq-mean-token-mean", "token-mean")
# Log-ratios are clamped to +-20 before exp (as verl does): exp(20) ~ 5e8 is finite in
# float32, and a token that far off-policy is clipped or gated to ~zero gradient anyway.
LOG_RATIO_LIMIT = 20.0


@dataclass
class PolicyBatch:
    """One micro-batch of responses, right-padded to T tokens.

    log_probs:      [B, T] log pi_theta(o_t | ...) of the sampled tokens (requires grad).
    old_log_probs:  [B, T] behaviour-policy log-probs recorded at sampling time.
    advantages:     [B] per-response or [B, T] per-token advantages.
    response_mask:  [B, T] 1 for response tokens, 0 for padding.
    entropy:        [B, T] detached per-token entropy of pi_theta, or None (dhpo-entropy needs it).
    """

    log_probs: torch.Tensor
    old_log_probs: torch.Tensor
    advantages: torch.Tensor
    response_mask: torch.Tensor
    entropy: torch.Tensor | None = None


@dataclass
class Prepared:
    """A validated, sanitised batch: float tensors with zeros at padded positions."""

    raw_log_probs: torch.Tensor  # [B, T] upcast input, padding NOT sanitised: use .log_probs
    raw_log_ratio: torch.Tensor  # [B, T] log pi_theta - log pi_old, 0 on padding, not clamped
    adv_token: torch.Tensor  # [B, T] advantage of each token (0 on padding)
    adv_seq: torch.Tensor  # [B] advantage of each response (mean over its tokens if given per token)
    mask: torch.Tensor  # [B, T] float 0/1
    lengths: torch.Tensor  # [B] number of valid tokens (may be 0)
    entropy: torch.Tensor | None  # [B, T] or None
    valid: torch.Tensor  # [B, T] bool, the mask
    n_valid: torch.Tensor  # scalar: number of valid tokens, at least 1 (a denominator)

    @functools.cached_property
    def log_probs(self) -> torch.Tensor:
        """log pi_theta with zeros on padding; built on first use (grpo/gmpo/sapo/sspo never need it)."""
        import torch
        return torch.where(self.valid, self.raw_log_probs, 0.0)

    @property
    def log_ratio(self) -> torch.Tensor:
        """log r_{i,t} = log pi_theta - log pi_old (DHPO eq. 2), clamped to +-LOG_RATIO_LIMIT."""
        return self.raw_log_ratio.clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)

    def seq_mean(self, x: torch.Tensor) -> torch.Tensor:
        """Per-sequence mean of a [B, T] tensor over valid tokens -> [B] (0 for empty rows)."""
        return (x * self.mask).sum(-1) / self.lengths.clamp(min=1)

    def masked_mean(self, x: torch.Tensor) -> torch.Tensor:
        """Mean of a [B, T] tensor over all valid tokens of the batch."""
        return (x * self.mask).sum() / self.n_valid

    def count_mean(self, flags: torch.Tensor) -> torch.Tensor:
        """Fraction of valid tokens where a bool [B, T] tensor is set (flags must be False on padding)."""
        return flags.sum().to(self.mask.dtype) / self.n_valid


def _float(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x if x.dtype == dtype else x.to(dtype)


def prepare(batch: PolicyBatch) -> Prepared:
    """Validate shapes and dtypes, upcast, and zero padded positions."""
    import torch
    lp = batch.log_probs
    if lp.dim() != 2:
        raise ValueError(f"log_probs: expected shape [B, T], got {tuple(lp.shape)}")
    shape = tuple(lp.shape)
    for name in ("old_log_probs", "response_mask"):
        got = tuple(getattr(batch, name).shape)
        if got != shape:
            raise ValueError(f"{name}: expected shape {shape} (same as log_probs), got {got}")
    adv = batch.advantages
    if tuple(adv.shape) not in (shape, shape[:1]):
        raise ValueError(f"advantages: expected shape [B]={shape[:1]} or [B, T]={shape}, got {tuple(adv.shape)}")
    if batch.entropy is not None and tuple(batch.entropy.shape) != shape:
        raise ValueError(f"entropy: expected shape {shape} or None, got {tuple(batch.entropy.shape)}")

    # bf16/fp16 are upcast: exp/log-sum over thousands of tokens needs float32 precision.
    dtype = torch.float64 if lp.dtype == torch.float64 else torch.float32
    valid = batch.response_mask.to(torch.bool)
    mask = valid.to(dtype)
    zero = torch.zeros((), dtype=dtype, device=lp.device)
    # torch.where (not multiplication) so inf/nan padding cannot leak: nan * 0 = nan.
    raw_log_probs = _float(lp, dtype)
    # one where for the difference: the behaviour log-probs are never needed on their own
    raw_log_ratio = torch.where(valid, raw_log_probs - _float(batch.old_log_probs.detach(), dtype), zero)
    lengths = mask.sum(-1)
    adv = _float(adv.detach(), dtype)
    if adv.dim() == 1:
        # An empty row's advantage is padding too: inf/nan there would give nan * 0 = nan in the
        # sequence-level losses (GMPO, SSPO), so it is zeroed like the padded tokens.
        adv_seq = torch.where(lengths > 0, adv, zero)
        adv_token = torch.where(valid, adv[:, None].expand(shape), zero)
    else:
        adv_token = torch.where(valid, adv, zero)
        adv_seq = adv_token.sum(-1) / lengths.clamp(min=1)
    entropy = None
    if batch.entropy is not None:
        entropy = torch.where(valid, _float(batch.entropy.detach(), dtype), zero)
    return Prepared(raw_log_probs, raw_log_ratio, adv_token, adv_seq, mask, lengths, entropy, valid, lengths.sum().clamp(min=1))


def aggregate_tokens(token_loss: torch.Tensor, p: Prepared, agg: str) -> torch.Tensor:
    """Reduce a per-token loss [B, T] to a scalar.

    seq-mean-token-mean: 1/G sum_i 1/|o_i| sum_t (the papers' form, DHPO eq. 3);
    token-mean: sum over all valid tokens / number of valid tokens (DAPO / verl default).
    Rows with no valid token are excluded from the sequence mean.
    """
    # Every zoo token loss carries the factor adv_token, which prepare() zeroes on padding, so
    # token_loss is already 0 there: no mask multiply (saves a pass forward and one backward).
    masked = token_loss
    if agg == "token-mean":
        return masked.sum() / p.n_valid
    nonempty = (p.lengths > 0).to(token_loss.dtype)
    per_seq = masked.sum(-1) / p.lengths.clamp(min=1)
    return (per_seq * nonempty).sum() / nonempty.sum().clamp(min=1)


def aggregate_sequences(seq_loss: torch.Tensor, p: Prepared, agg: str) -> torch.Tensor:
    """Reduce a per-sequence loss [B] (GMPO, SSPO) to a scalar.

    The sequence term J_i is broadcast to the response's tokens and then aggregated like a
    token loss: seq-mean-token-mean gives mean_i J_i, token-mean gives sum_i |o_i| J_i / sum_i |o_i|.
    """
    nonempty = (p.lengths > 0).to(seq_loss.dtype)
    if agg == "token-mean":
        return (seq_loss * p.lengths).sum() / p.lengths.sum().clamp(min=1)
    return (seq_loss * nonempty).sum() / nonempty.sum().clamp(min=1)


def ratio_metrics(p: Prepared, log_ratio: torch.Tensor, ratio: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Token-ratio statistics over valid tokens plus the approximate KL (verl's ppo_kl).

    Pass ``ratio`` (= log_ratio.exp()) when the loss already has it. No host sync: an empty
    batch reports ratio 1.
    """
    import torch
    any_valid = p.lengths.sum() > 0
    one = log_ratio.new_ones(())
    # log r is exactly 0 on padding (prepare zeroes it), so plain sums are masked sums
    ppo_kl = -log_ratio.sum() / p.n_valid
    if not log_ratio.numel():
        return {RATIO_MEAN: one, RATIO_MIN: one, RATIO_MAX: one, PPO_KL: ppo_kl}
    # one scratch copy of the ratio, masked in place: 0 on padding for sum and max (ratio > 0,
    # so padding never wins the max), then +inf on padding for the min
    scratch = log_ratio.exp() if ratio is None else ratio.detach().clone()
    invalid = ~p.valid
    scratch.masked_fill_(invalid, 0.0)
    ratio_mean, ratio_max = scratch.sum() / p.n_valid, scratch.amax()
    ratio_min = scratch.masked_fill_(invalid, math.inf).amin()
    return {
        RATIO_MEAN: ratio_mean,
        RATIO_MIN: torch.where(any_valid, ratio_min, one),
        RATIO_MAX: torch.where(any_valid, ratio_max, one),
        PPO_KL: ppo_kl,
    }


def to_floats(metrics: dict[str, torch.Tensor]) -> dict[str, float]:
    """Turn scalar tensors into floats with one device sync."""
    import torch
    names = list(metrics)
    values = torch.stack([metrics[n].detach().to(torch.float64).reshape(()) for n in names]).tolist()
    return dict(zip(names, values))


# ---- parameter checks (raise ValueError naming the parameter and the allowed range) ----


def check_agg(agg: str) -> None:
    if agg not in AGG_MODES:
        raise ValueError(f"agg: expected one of {list(AGG_MODES)}, got {agg!r}")


def check_positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {list(allowed)}, got {value!r}")


def sign_aware_clip_fractions(p: Prepared, ratio: torch.Tensor, low: float, high: float, prefix: str = CLIP_FRACTION) -> dict[str, torch.Tensor]:
    """Fractions of valid tokens whose clip is binding (SSPO eq. 1: f_Clip by advantage sign).

    ``_high``: A > 0 and ratio > high; ``_low``: A < 0 and ratio < low; the plain name is their sum.
    """
    # adv_token is 0 on padding, so both flags are False there: counting needs no mask
    high_frac = p.count_mean((p.adv_token > 0) & (ratio > high))
    low_frac = p.count_mean((p.adv_token < 0) & (ratio < low))
    return {prefix: high_frac + low_frac, f"{prefix}_low": low_frac, f"{prefix}_high": high_frac}
