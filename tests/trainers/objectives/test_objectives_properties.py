"""Identities from the papers: on-policy = vanilla PG, DHPO's GRPO/GSPO limits and gradient form
(DHPO eq. 8-12, 16), GMPO = GSPO without clipping (SSPO Sec. 3), CISPO's kept gradient,
temperatures by advantage sign (SSPO eq. 10), and unified vs branch clipping (DHPO Sec. 4.4)."""

from __future__ import annotations

import pytest
import torch

import trainers.objectives.dhpo as dhpo_module
from objectives_testlib import AGGS, GATES, configs, evaluate, random_batch, token_agg_weights, vanilla_pg_loss

LENGTHS, T = [6, 3, 5, 1], 6
NO_CLIP = {"eps_low": 10.0, "eps_high": 1e6}  # bounds that never bind (ratios stay in (0, e^20])


def close(a, b, tol=1e-10):
    return torch.allclose(a, b, atol=tol, rtol=tol)


# ---- on-policy: every objective's gradient is the vanilla policy gradient ----


@pytest.mark.parametrize("per_token_adv", [False, True], ids=["adv[B]", "adv[B,T]"])
@pytest.mark.parametrize("name,params", configs())
def test_on_policy_gradient_is_vanilla_pg(name, params, per_token_adv):
    lp, _, adv, mask, ent = random_batch(LENGTHS, T, seed=11, adv=[1.3, -0.7, 0.4, -2.0], per_token_adv=per_token_adv)
    _, grad, _ = evaluate(name, params, lp, lp.clone(), adv, mask, ent)
    adv_seq = torch.tensor([1.3, -0.7, 0.4, -2.0], dtype=torch.float64)
    leaf = lp.clone().requires_grad_(True)
    vanilla_pg_loss(leaf, adv_seq, mask, params["agg"]).backward()
    assert close(grad, leaf.grad, 1e-12), (grad, leaf.grad)
    assert grad.abs().sum() > 0


# ---- DHPO limits: w = 1 is GRPO, w = 0 is GSPO (eq. 8) ----


def force_weight(monkeypatch, value):
    monkeypatch.setattr(dhpo_module, "mixing_weight", lambda p, params: torch.full_like(p.mask, value) * p.mask)


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("clip_mode", ["branch", "unified"])
def test_dhpo_w1_is_grpo(monkeypatch, agg, clip_mode):
    force_weight(monkeypatch, 1.0)
    lp, old, adv, mask, ent = random_batch(LENGTHS, T, seed=12, scale=0.4)
    eps = {"branch": {"eps_low_token": 0.15, "eps_high_token": 0.25}, "unified": {"eps_low": 0.15, "eps_high": 0.25}}
    d_loss, d_grad, d_m = evaluate("dhpo", {"clip_mode": clip_mode, "agg": agg, **eps[clip_mode]}, lp, old, adv, mask, ent)
    g_loss, g_grad, g_m = evaluate("grpo", {"eps_low": 0.15, "eps_high": 0.25, "agg": agg}, lp, old, adv, mask, ent)
    assert g_m["actor/pg_clipfrac"] > 0.1  # clipping is active, so the identity is not trivial
    assert close(d_loss, g_loss) and close(d_grad, g_grad)
    assert d_m["actor/pg_clipfrac"] == pytest.approx(g_m["actor/pg_clipfrac"])
    assert d_m["actor/mix_weight"] == 1.0


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("clip_mode", ["branch", "unified"])
def test_dhpo_w0_is_gspo(monkeypatch, agg, clip_mode):
    force_weight(monkeypatch, 0.0)
    lp, old, adv, mask, ent = random_batch(LENGTHS, T, seed=13, scale=0.4)
    eps = {"branch": {"eps_low_seq": 0.03, "eps_high_seq": 0.05}, "unified": {"eps_low": 0.03, "eps_high": 0.05}}
    d_loss, d_grad, _ = evaluate("dhpo", {"clip_mode": clip_mode, "agg": agg, **eps[clip_mode]}, lp, old, adv, mask, ent)
    s_loss, s_grad, s_m = evaluate("gspo", {"eps_low": 0.03, "eps_high": 0.05, "agg": agg}, lp, old, adv, mask, ent)
    assert 0 < s_m["actor/pg_clipfrac"] < 1
    assert close(d_loss, s_loss) and close(d_grad, s_grad)


def test_forced_weight_reaches_the_loss(monkeypatch):
    """Guards the monkeypatch above: w = 1 and w = 0 really give different losses off-policy."""
    lp, old, adv, mask, ent = random_batch(LENGTHS, T, seed=12, scale=0.4)
    force_weight(monkeypatch, 1.0)
    one = evaluate("dhpo", {}, lp, old, adv, mask, ent)[1]
    force_weight(monkeypatch, 0.0)
    zero = evaluate("dhpo", {}, lp, old, adv, mask, ent)[1]
    assert (one - zero).abs().max() > 1e-2


def test_dhpo_entropy_mixing_with_constant_entropy_is_averaged():
    lp, old, adv, mask, _ = random_batch(LENGTHS, T, seed=14)
    ent = torch.full_like(lp, 1.7)
    for norm in ("batch", "sequence"):
        e = evaluate("dhpo", {"mixing": "entropy", "entropy_norm": norm}, lp, old, adv, mask, ent)
        a = evaluate("dhpo", {"mixing": "averaged"}, lp, old, adv, mask, ent)
        assert close(e[0], a[0]) and close(e[1], a[1]) and e[2]["actor/mix_weight"] == pytest.approx(0.5)


# ---- DHPO gradient identity (eq. 12 / 16): d loss / d log pi = -c * m * A when no clip binds ----


def expected_weight(ent, mask, mixing, norm):
    if mixing == "averaged":
        return 0.5 * mask
    big = torch.tensor(float("inf"), dtype=ent.dtype)
    if norm == "batch":
        lo, hi = torch.where(mask > 0, ent, big).min(), torch.where(mask > 0, ent, -big).max()
    else:
        lo = torch.where(mask > 0, ent, big).min(-1, keepdim=True).values
        hi = torch.where(mask > 0, ent, -big).max(-1, keepdim=True).values
    w = (ent - lo) / (hi - lo)
    return torch.where(hi - lo > 0, w, torch.full_like(w, 0.5)) * mask


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("mixing,norm", [("averaged", "batch"), ("entropy", "batch"), ("entropy", "sequence")])
@pytest.mark.parametrize("clip_mode", ["branch", "unified"])
def test_dhpo_gradient_identity(agg, mixing, norm, clip_mode):
    lengths = [6, 3, 5, 2]  # every row has >= 2 tokens so per-sequence min-max is not degenerate
    lp, old, adv, mask, ent = random_batch(lengths, T, seed=15, scale=0.5)
    no_clip = {}
    for branch in ("", "_token", "_seq"):
        no_clip.update({f"eps_low{branch}": 10.0, f"eps_high{branch}": 1e6})
    params = {"mixing": mixing, "entropy_norm": norm, "clip_mode": clip_mode, "agg": agg, **no_clip}
    loss, grad, metrics = evaluate("dhpo", params, lp, old, adv, mask, ent)
    r = (lp - old).exp()
    s = (((lp - old) * mask).sum(-1) / mask.sum(-1)).exp()[:, None]
    w = expected_weight(ent, mask, mixing, norm)
    m = w * r + (1 - w) * s  # eq. 8
    c = token_agg_weights(mask, agg)
    assert close(grad, -c * m * adv[:, None] * mask)
    assert close(loss, -(c * m * adv[:, None]).sum())
    assert metrics["actor/pg_clipfrac"] == 0.0
    assert metrics["actor/mix_weight"] == pytest.approx((w.sum() / mask.sum()).item())


@pytest.mark.parametrize("agg", AGGS)
def test_dhpo_unified_vs_branch(agg):
    lp, old, adv, mask, ent = random_batch(LENGTHS, T, seed=16, scale=0.5)
    b = evaluate("dhpo", {"clip_mode": "branch", "agg": agg}, lp, old, adv, mask, ent)
    u = evaluate("dhpo", {"clip_mode": "unified", "agg": agg}, lp, old, adv, mask, ent)
    assert b[2]["actor/clipfrac_token"] > 0
    assert not close(b[0], u[0], 1e-6) and not close(b[1], u[1], 1e-6)
    # with ratios inside every trust region, both clip modes are the same unclipped surrogate
    lp2 = old + 0.02 * (lp - old)
    b = evaluate("dhpo", {"clip_mode": "branch", "agg": agg}, lp2, old, adv, mask, ent)
    u = evaluate("dhpo", {"clip_mode": "unified", "agg": agg}, lp2, old, adv, mask, ent)
    assert b[2]["actor/clipfrac_token"] == b[2]["actor/clipfrac_seq"] == b[2]["actor/pg_clipfrac"] == 0.0
    assert close(b[0], u[0]) and close(b[1], u[1])


# ---- GMPO = GSPO when no clip binds (SSPO Sec. 3: geometric mean of r = s) ----


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("log_space", [False, True])
def test_gmpo_equals_gspo_without_clipping(agg, log_space):
    lp, old, adv, mask, ent = random_batch(LENGTHS, T, seed=17, scale=0.6)
    gm = evaluate("gmpo", {**NO_CLIP, "clip_in_log_space": log_space, "agg": agg}, lp, old, adv, mask, ent)
    gs = evaluate("gspo", {**NO_CLIP, "agg": agg}, lp, old, adv, mask, ent)
    assert close(gm[0], gs[0]) and close(gm[1], gs[1])
    # ... and they differ once GMPO's token clip binds
    gm = evaluate("gmpo", {"eps_low": 0.1, "eps_high": 0.1, "agg": agg}, lp, old, adv, mask, ent)
    assert gm[2]["actor/pg_clipfrac"] > 0 and not close(gm[0], gs[0], 1e-6)


# ---- CISPO: gradient = -c sg[clip(r)] A on every token, clipped ones included ----


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("eps_low", [10.0, 0.2])
def test_cispo_gradient(agg, eps_low):
    lp, old, adv, mask, ent = random_batch(LENGTHS, T, seed=18, scale=1.0)
    loss, grad, metrics = evaluate("cispo", {"eps_low": eps_low, "eps_high": 0.2, "agg": agg}, lp, old, adv, mask, ent)
    r = (lp - old).exp()
    weight = r.clamp(min=1 - eps_low, max=1.2)
    c = token_agg_weights(mask, agg)
    assert close(grad, -c * weight * adv[:, None])
    assert close(loss, -(c * weight * adv[:, None] * lp).sum())
    clipped = (r > 1.2) & (mask > 0)
    assert clipped.any() and (grad[clipped] != 0).all()  # clipped tokens keep their gradient
    if eps_low == 10.0:  # no lower bound: tiny ratios are used as they are
        small = (r < 0.5) & (mask > 0)
        assert small.any() and metrics["actor/pg_clipfrac_low"] == 0.0
        assert close(grad[small], (-c * r * adv[:, None])[small])


# ---- temperatures by advantage sign (SSPO eq. 10; SAPO) ----


def _split_batch(seed):
    lp, old, _, mask, ent = random_batch([5, 4, 5, 3], 5, seed=seed, scale=0.6)
    return lp, old, torch.tensor([0.9, -1.1, 0.4, -0.3], dtype=torch.float64), mask, ent


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("name,params", [("sapo", {}), *[("sspo", {"gate": g}) for g in GATES]])
def test_tau_neg_only_touches_negative_advantages(name, params, agg):
    lp, old, adv, mask, ent = _split_batch(19)
    pos, neg = adv > 0, adv < 0
    base = {**params, "agg": agg, "tau_pos": 0.5, "tau_neg": 0.6}
    a = evaluate(name, base, lp, old, adv, mask, ent)
    b = evaluate(name, {**base, "tau_neg": 1.7}, lp, old, adv, mask, ent)
    c = evaluate(name, {**base, "tau_pos": 1.7}, lp, old, adv, mask, ent)
    assert torch.equal(a[1][pos], b[1][pos]) and torch.equal(a[1][neg], c[1][neg])
    # positive-only / negative-only batches: the other temperature does not matter at all
    only_pos = [evaluate(name, {**base, "tau_neg": t}, lp[pos], old[pos], adv[pos], mask[pos], ent[pos])[0] for t in (0.6, 1.7)]
    only_neg = [evaluate(name, {**base, "tau_pos": t}, lp[neg], old[neg], adv[neg], mask[neg], ent[neg])[0] for t in (0.5, 1.7)]
    assert torch.equal(*only_pos) and torch.equal(*only_neg)
    if params.get("gate") == "gumbel":  # SSPO eq. 20 has no temperature at all
        assert torch.equal(a[0], b[0]) and torch.equal(a[0], c[0])
    else:
        assert not close(a[1][neg], b[1][neg], 1e-8) and not close(a[1][pos], c[1][pos], 1e-8)
        assert not close(a[0], b[0], 1e-8) and not close(a[0], c[0], 1e-8)


def test_zero_advantage_uses_tau_neg_but_contributes_nothing():
    lp, old, _, mask, ent = _split_batch(20)
    adv = torch.tensor([0.9, 0.0, 0.4, 0.0], dtype=torch.float64)
    for name in ("sapo", "sspo"):
        a = evaluate(name, {"tau_neg": 0.6}, lp, old, adv, mask, ent)
        b = evaluate(name, {"tau_neg": 1.9}, lp, old, adv, mask, ent)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        assert (a[1][adv == 0] == 0).all()
