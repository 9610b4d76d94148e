"""Padding never changes a value or a gradient; long responses stay finite; bf16/float64 inputs.

DESIGN.md "Objective": geometric means in log space; padding never changes a value or gradient;
bf16 inputs upcast (loss float32).
"""

from __future__ import annotations

import math

import pytest
import torch

from objectives_testlib import (
    AGGS, DEFAULTS, GARBAGE, assert_finite_metrics, configs, evaluate, lengths_mask, random_batch,
)

LENGTHS, T, EXTRA = [5, 2, 4, 3], 5, 3


def with_garbage(x, valid, shift):
    """Copy of x with every invalid position replaced by a rotating garbage value."""
    out = x.clone()
    idx = (~valid).nonzero(as_tuple=True)
    vals = torch.tensor([GARBAGE[(k + shift) % len(GARBAGE)] for k in range(len(idx[0]))], dtype=x.dtype)
    out[idx] = vals
    return out


def padded_variant(lp, old, adv, mask, ent, empty_row_at=1):
    """T + EXTRA columns and one extra fully-padded row, all padding filled with garbage."""
    B = mask.shape[0]
    grow = lambda x: torch.cat([x, torch.zeros(B, EXTRA, dtype=x.dtype)], dim=1)  # noqa: E731
    lp, old, mask, ent = grow(lp), grow(old), grow(mask), grow(ent)
    if adv.dim() == 2:
        adv = grow(adv)
    insert = lambda x, fill: torch.cat([x[:empty_row_at], fill, x[empty_row_at:]])  # noqa: E731
    width = mask.shape[1]
    lp, old, ent, mask = (insert(x, torch.zeros(1, width, dtype=x.dtype)) for x in (lp, old, ent, mask))
    adv = insert(adv, torch.full((1, width), math.nan, dtype=adv.dtype) if adv.dim() == 2
                 else torch.tensor([math.nan], dtype=adv.dtype))
    valid = mask > 0
    lp, old, ent = with_garbage(lp, valid, 0), with_garbage(old, valid, 2), with_garbage(ent, valid, 4)
    if adv.dim() == 2:
        adv = with_garbage(adv, valid, 1)
    return lp, old, adv, mask, ent


@pytest.mark.parametrize("per_token_adv", [False, True], ids=["adv[B]", "adv[B,T]"])
@pytest.mark.parametrize("name,params", configs())
def test_padding_garbage_changes_nothing(name, params, per_token_adv):
    clean = random_batch(LENGTHS, T, seed=21, scale=0.4, per_token_adv=per_token_adv)
    loss, grad, metrics = evaluate(name, params, *clean)
    assert torch.isfinite(loss) and torch.isfinite(grad).all()
    g_loss, g_grad, g_metrics = evaluate(name, params, *padded_variant(*clean))
    assert torch.isfinite(g_loss) and torch.isfinite(g_grad).all()
    assert torch.allclose(g_loss, loss, rtol=1e-12, atol=1e-14)
    keep = [0, *range(2, len(LENGTHS) + 1)]  # rows of the clean batch (row 1 is the empty one)
    valid = clean[3] > 0
    assert torch.allclose(g_grad[keep][:, :T][valid], grad[valid], rtol=1e-12, atol=1e-14)
    padded_mask = torch.ones_like(g_grad, dtype=torch.bool)
    padded_mask[keep, :T] = ~valid
    padded_mask[1] = True
    assert (g_grad[padded_mask] == 0).all()
    assert set(g_metrics) == set(metrics)
    for key in metrics:
        assert g_metrics[key] == pytest.approx(metrics[key], rel=1e-12, abs=1e-14), key


@pytest.mark.parametrize("name,params", configs())
def test_all_rows_empty_gives_zero_loss(name, params):
    lp, old, adv, mask, ent = random_batch([0, 0], 3, seed=22)
    garbage = padded_variant(lp, old, adv, mask, ent)
    loss, grad, metrics = evaluate(name, params, *garbage)
    assert loss.item() == 0.0 and (grad == 0).all()
    assert_finite_metrics(metrics)


# ---- long responses ----


def long_batch(dtype=torch.float32, seed=23):
    """B=3 with lengths 16384, 9000, 1; realistic log-probs and a few far-off-policy outliers."""
    g = torch.Generator().manual_seed(seed)
    Tl = 16384
    mask = lengths_mask([Tl, 9000, 1], Tl, torch.float32)
    old = -torch.empty(3, Tl).exponential_(1.0 / 1.5, generator=g)  # mean log-prob -1.5
    old = torch.where(torch.rand(3, Tl, generator=g) < 0.01, torch.full_like(old, -18.0), old)  # rare tokens
    delta = 0.05 * torch.randn(3, Tl, generator=g)
    outlier = torch.rand(3, Tl, generator=g) < 0.005
    delta = torch.where(outlier, 4.0 * torch.randn(3, Tl, generator=g).sign(), delta)
    lp = (old + delta).clamp(max=0.0)
    ent = torch.rand(3, Tl, generator=g) * 4.0
    adv = torch.tensor([1.2, -0.8, 0.5])
    return tuple(x.to(dtype) for x in (lp, old, adv, mask, ent))


def gspo_cut_rows(params, lp, old, adv, mask):
    """Responses whose whole gradient GSPO's clip removes: its one sequence ratio s_i (DHPO eq. 4,
    computed here in float64) is outside the trust region on the side the advantage sign clips."""
    lo = 1 - params.get("eps_low", DEFAULTS["gspo"]["eps_low"])
    hi = 1 + params.get("eps_high", DEFAULTS["gspo"]["eps_high"])
    m = mask.double()
    s = (((lp.double() - old.double()) * m).sum(-1) / m.sum(-1)).exp()
    return ((adv > 0) & (s > hi)) | ((adv < 0) & (s < lo))


@pytest.mark.parametrize("name,params", configs())
def test_long_sequences_stay_finite(name, params):
    lp, old, adv, mask, ent = batch = long_batch()
    loss, grad, metrics = evaluate(name, params, *batch)
    assert torch.isfinite(loss) and torch.isfinite(grad).all()
    # Every response keeps some gradient. The one exception is by design: GSPO clips a single
    # sequence ratio per response, so when s_i leaves [1 - eps_low, 1 + eps_high] on the clipping
    # side every token of that response loses its gradient at once; with the default 3e-4 / 4e-4
    # trust region and s_i = 0.993, 0.991, 1.004 here, responses 1 and 2 are cut, response 0
    # (A > 0, s_0 < 1 - eps_low: not clipped) is not. Where it is not cut, every token has a gradient.
    cut = gspo_cut_rows(params, lp, old, adv, mask) if name == "gspo" else torch.zeros(len(adv), dtype=torch.bool)
    assert ((grad.abs().sum(-1) == 0) == cut).all(), (grad.abs().sum(-1), cut)
    assert not cut.all()
    if name == "gspo":
        assert cut.any() == ("eps_low" not in params)  # the default trust region does cut here, 0.2 / 0.28 does not
        valid = mask > 0
        assert (grad[~cut][valid[~cut]] != 0).all()
    assert_finite_metrics(metrics)


@pytest.mark.parametrize("agg", AGGS)
def test_geometric_means_do_not_overflow(agg):
    """16384 tokens at log r = 0.05: prod r = e^819 overflows float32, the geometric mean e^0.05 does not."""
    Tl, u, adv = 16384, 0.05, torch.tensor([0.9])
    old = torch.full((1, Tl), -2.0)
    lp, mask = old + u, torch.ones(1, Tl)
    expected = {
        "gspo": math.exp(u),  # with eps wide enough not to clip
        "gmpo": math.exp(u),
        "sspo": math.exp(0.5 * math.atan(u / 0.5)),  # atanlog, tau_pos = 0.5
    }
    params = {"gspo": {"eps_high": 0.2}, "gmpo": {}, "sspo": {}}
    for name, value in expected.items():
        loss, grad, _ = evaluate(name, {**params[name], "agg": agg}, lp, old, adv, mask)
        assert loss.item() == pytest.approx(-value * 0.9, rel=1e-5), name
        assert torch.isfinite(grad).all() and (grad < 0).all()


# ---- dtypes ----


def f32_batch(seed=24, round_to_bf16=True):
    lp, old, adv, mask, ent = random_batch([6, 4, 5], 6, seed=seed, scale=0.3, dtype=torch.float32)
    if round_to_bf16:  # values exactly representable in bf16, so upcasting is lossless
        lp, old, adv, ent = (x.to(torch.bfloat16).to(torch.float32) for x in (lp, old, adv, ent))
    return lp, old, adv, mask, ent


@pytest.mark.parametrize("name,params", configs())
def test_bf16_inputs_upcast(name, params):
    ref_loss, ref_grad, ref_metrics = evaluate(name, params, *f32_batch())
    lp, old, adv, mask, ent = (x.to(torch.bfloat16) for x in f32_batch())
    loss, grad, metrics = evaluate(name, params, lp, old, adv, mask.bool(), ent)
    assert loss.dtype == torch.float32 and grad.dtype == torch.bfloat16
    assert torch.allclose(loss, ref_loss, rtol=1e-6, atol=1e-7)
    assert torch.allclose(grad.float(), ref_grad, rtol=1e-2, atol=1e-4)
    for key in ref_metrics:
        assert metrics[key] == pytest.approx(ref_metrics[key], rel=1e-5, abs=1e-6), key
    # ... and close to the float32 result on the unrounded values
    un_loss, _, _ = evaluate(name, params, *f32_batch(round_to_bf16=False))
    assert torch.allclose(loss, un_loss, rtol=0.0, atol=3e-2)


@pytest.mark.parametrize("name,params", configs())
def test_float64_stays_float64(name, params):
    batch64 = random_batch([6, 4, 5], 6, seed=25, scale=0.3, dtype=torch.float64)
    loss, grad, metrics = evaluate(name, params, *batch64)
    assert loss.dtype == torch.float64 and grad.dtype == torch.float64
    loss32, grad32, _ = evaluate(name, params, *(x.float() for x in batch64))
    assert loss32.dtype == torch.float32
    assert torch.allclose(loss, loss32.double(), rtol=1e-5, atol=1e-6)
    assert torch.allclose(grad, grad32.double(), rtol=1e-4, atol=1e-6)
    assert_finite_metrics(metrics)


def test_half_and_int_masks_are_accepted():
    lp, old, adv, mask, ent = f32_batch()
    base = evaluate("dhpo", {"mixing": "entropy"}, lp, old, adv, mask, ent)
    for m in (mask.bool(), mask.long(), mask.half()):
        other = evaluate("dhpo", {"mixing": "entropy"}, lp, old, adv, m, ent)
        assert torch.equal(base[0], other[0]) and torch.equal(base[1], other[1])
    half = evaluate("dhpo", {"mixing": "entropy"}, lp.half(), old.half(), adv.half(), mask, ent.half())
    assert half[0].dtype == torch.float32 and torch.allclose(half[0], base[0], atol=1e-2)
