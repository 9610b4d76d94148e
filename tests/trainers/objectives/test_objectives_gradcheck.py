"""Finite-difference check of the torch objectives' gradients (float64, central differences).

Every registered objective (trainers.objectives.OBJECTIVES) x both aggregations x every discrete
option (gates, mixing x clip_mode x entropy_norm, clip_in_log_space, ... read from the registry by
``variant_grid``) is checked against the right reference:

* objectives without a stop-gradient (grpo, gmpo, sapo, sspo): the central finite difference of
  the library's own loss value;
* objectives with a stop-gradient (cispo, gspo, dhpo; objectives_reference.STOP_GRADIENT): the
  gradient is defined as the slope of the loss with the stop-gradient parts held fixed, NOT the
  slope of the loss value, so the finite difference is taken of that frozen surrogate, computed
  by the independent pure-Python reference (``reference(..., frozen=point)``), whose value at the
  point itself equals the library's loss (asserted). See TABLE for each objective's reason.

The batch has ratios far enough from every clip bound that no kink lies within DELTA of the point
along any coordinate (asserted: the forward and backward slopes over DELTA agree), while every
clip does bind somewhere in the batch (asserted), so both sides of each clip are exercised.
"""

from __future__ import annotations

import pytest
import torch

from objectives_reference import REFERENCES, STOP_GRADIENT, reference
from objectives_testlib import random_batch, token_agg_weights, variant_grid
from trainers.objectives import AGG_MODES, OBJECTIVES, PolicyBatch, get_objective

LENGTHS, T = [6, 3, 5, 2], 6
ADV = [1.1, -0.8, 0.6, -1.3]  # both signs, |A| well away from 0 (a clip kink then has a visible slope jump)
H = 1e-6  # central-difference step (float64: truncation ~H^2, round-off ~1e-16 / H)
DELTA = 1e-4  # no kink within DELTA of the point along any coordinate
# |forward - backward slope| over DELTA: DELTA * curvature (< 3e-5 on this batch) where smooth; at a
# clip kink within DELTA it is (most of) the slope jump c |A| r (> 1e-2 on this batch).
KINK_TOL = 1e-3

# name -> (continuous params: bounds at which each clip binds for some tokens of the batch,
#          reference for the gradient: "value" or "frozen", why)
# Every registered objective needs an entry (test_every_objective_has_a_table_entry).
TABLE: dict[str, tuple[dict, str, str]] = {
    "grpo": ({}, "value", "min(r A, clip(r) A) is a plain function of log pi"),
    "gspo": ({"eps_low": 0.1, "eps_high": 0.1}, "frozen",
             "s_{i,t} = sg[s_i] pi/sg[pi] (DHPO eq. 5): moving log pi_{i,t} moves token t's s_{i,t} only"),
    "gmpo": ({"eps_low": 0.25, "eps_high": 0.25}, "value", "exp(mean clipped log r): no stop-gradient"),
    "cispo": ({"eps_low": 0.2, "eps_high": 0.2}, "frozen",
              "sg[clip(r)] A log pi: the clipped IS weight is a constant; the value's slope would add "
              "d clip(r) / d log pi * A * log pi, which the stop-gradient removes"),
    "sapo": ({}, "value", "sigmoid gate of r: no stop-gradient"),
    "sspo": ({}, "value", "geometric mean of a gate of r: no stop-gradient"),
    "dhpo": ({"eps_low_seq": 0.1, "eps_high_seq": 0.1, "eps_low": 0.15, "eps_high": 0.2}, "frozen",
             "m = w r + (1 - w) s_{i,t} with GSPO's s_{i,t} = sg[s_i] pi/sg[pi] (DHPO eq. 5, 12)"),
}


def grid():
    out = []
    for name in OBJECTIVES:
        extra = TABLE.get(name, ({},))[0]
        for variant in variant_grid(name):
            for agg in AGG_MODES:
                params = {**extra, **variant, "agg": agg}
                ident = "-".join([name, *(f"{v}" for v in variant.values()), agg])
                out.append(pytest.param(name, params, id=ident))
    return out


def batch():
    return random_batch(LENGTHS, T, seed=31, scale=0.4, adv=ADV)


def library_loss(name, params, lp, old, adv, mask, ent):
    with torch.no_grad():
        return get_objective(name, **params)(PolicyBatch(lp, old, adv, mask, ent))[0].item()


def library_grad(name, params, lp, old, adv, mask, ent):
    leaf = lp.detach().clone().requires_grad_(True)
    loss, metrics = get_objective(name, **params)(PolicyBatch(leaf, old, adv, mask, ent))
    loss.backward()
    return loss.item(), leaf.grad, metrics


def nested(lp, old, adv, mask, ent):
    """The reference's nested-list batch (padding values are never read: the mask is)."""
    return {"log_probs": lp.tolist(), "old_log_probs": old.tolist(), "advantages": adv.tolist(),
            "response_mask": mask.int().tolist(), "entropy": ent.tolist()}


def gradient_reference(name, params, lp, old, adv, mask, ent):
    """The function whose slope in log_probs the objective's gradient must be (see TABLE)."""
    if TABLE[name][1] == "value":
        return lambda x: library_loss(name, params, x, old, adv, mask, ent)
    point = nested(lp, old, adv, mask, ent)
    return lambda x: reference(name, params, nested(x, old, adv, mask, ent), frozen=point)[0]


def bump(x, i, t, h):
    y = x.clone()
    y[i, t] += h
    return y


def test_every_objective_has_a_table_entry():
    missing = sorted(set(OBJECTIVES) - set(TABLE))
    assert not missing, f"add {missing} to TABLE in {__file__} (clip bounds, gradient reference, why)"
    assert set(TABLE) <= set(OBJECTIVES), sorted(set(TABLE) - set(OBJECTIVES))
    for name, (_, kind, why) in TABLE.items():
        # the table's classification is the reference's: stop-gradient <=> frozen surrogate
        assert kind == ("frozen" if name in STOP_GRADIENT else "value"), name
        assert why
    assert set(REFERENCES) >= set(OBJECTIVES)


def test_the_grid_covers_every_option():
    ids = {p.id for p in grid()}
    assert len(ids) == sum(len(variant_grid(n)) for n in OBJECTIVES) * len(AGG_MODES)
    for gate in ("atanlog", "siglog", "expatan", "expsig", "gumbel"):
        for agg in AGG_MODES:
            assert f"sspo-{gate}-{agg}" in ids
    for mixing in ("averaged", "entropy"):
        for clip_mode in ("branch", "unified"):
            assert f"dhpo-{mixing}-{clip_mode}-batch-token-mean" in ids
    assert {"gmpo-False-token-mean", "gmpo-True-seq-mean-token-mean", "cispo-token-mean", "gspo-token-mean"} <= ids


@pytest.mark.parametrize("name,params", grid())
def test_gradient_is_the_finite_difference_slope(name, params):
    lp, old, adv, mask, ent = batch()
    loss, grad, metrics = library_grad(name, params, lp, old, adv, mask, ent)
    # every clip binds somewhere and not everywhere: both branches are exercised
    for key in ("actor/pg_clipfrac", "actor/clipfrac_token", "actor/clipfrac_seq"):
        if key in metrics:
            assert 0 < metrics[key] < 1, (key, metrics[key])
    f = gradient_reference(name, params, lp, old, adv, mask, ent)
    f0 = f(lp)
    assert f0 == pytest.approx(loss, rel=1e-12, abs=1e-14)  # same function at the point
    for i, t in (mask > 0).nonzero().tolist():
        fwd = (f(bump(lp, i, t, DELTA)) - f0) / DELTA
        bwd = (f0 - f(bump(lp, i, t, -DELTA))) / DELTA
        assert abs(fwd - bwd) < KINK_TOL, f"token {(i, t)} lies within {DELTA} of a clip bound: pick another seed"
        slope = (f(bump(lp, i, t, H)) - f(bump(lp, i, t, -H))) / (2 * H)
        assert slope == pytest.approx(grad[i, t].item(), abs=1e-9), (i, t)
    assert (grad[mask == 0] == 0).all()
    assert grad.abs().max() > 1e-3


def test_kink_detector_sees_a_clip_bound():
    """Control for the DELTA check above: a token put exactly on GRPO's upper bound is reported."""
    lp, old, adv, mask, ent = batch()
    assert adv[0] > 0
    lp = bump(lp, 0, 0, (old[0, 0] + torch.log1p(torch.tensor(0.2, dtype=lp.dtype)) - lp[0, 0]).item())
    f = gradient_reference("grpo", {"agg": "token-mean"}, lp, old, adv, mask, ent)
    f0 = f(lp)
    fwd = (f(bump(lp, 0, 0, DELTA)) - f0) / DELTA
    bwd = (f0 - f(bump(lp, 0, 0, -DELTA))) / DELTA
    assert abs(fwd - bwd) > KINK_TOL


# ---- the stop-gradients: which ones change the gradient, and CISPO checked on the library alone ----


@pytest.mark.parametrize("agg", AGG_MODES)
def test_cispo_gradient_is_the_slope_with_the_weight_frozen(agg):
    """Shifting log pi and log pi_old together keeps r, hence sg[clip(r)], fixed and moves only log pi:
    the library's own loss along that direction is CISPO's frozen-weight surrogate."""
    lp, old, adv, mask, ent = batch()
    params = {**TABLE["cispo"][0], "agg": agg}
    _, grad, metrics = library_grad("cispo", params, lp, old, adv, mask, ent)
    assert metrics["actor/pg_clipfrac_low"] > 0 and metrics["actor/pg_clipfrac_high"] > 0
    r = (lp - old).exp()
    lo, hi = 1 - params["eps_low"], 1 + params["eps_high"]
    analytic = -token_agg_weights(mask, agg) * r.clamp(lo, hi) * adv[:, None]  # -c sg[clip(r)] A
    assert torch.allclose(grad, analytic * mask, rtol=1e-12, atol=1e-15)
    for i, t in (mask > 0).nonzero().tolist():
        plus = library_loss("cispo", params, bump(lp, i, t, H), bump(old, i, t, H), adv, mask, ent)
        minus = library_loss("cispo", params, bump(lp, i, t, -H), bump(old, i, t, -H), adv, mask, ent)
        assert (plus - minus) / (2 * H) == pytest.approx(grad[i, t].item(), abs=1e-9), (i, t)


def value_slope_gap(name, params):
    """max |finite-difference slope of the library's loss value - its autograd gradient|."""
    lp, old, adv, mask, ent = batch()
    _, grad, _ = library_grad(name, params, lp, old, adv, mask, ent)
    gap = 0.0
    for i, t in (mask > 0).nonzero().tolist():
        plus = library_loss(name, params, bump(lp, i, t, H), old, adv, mask, ent)
        minus = library_loss(name, params, bump(lp, i, t, -H), old, adv, mask, ent)
        gap = max(gap, abs((plus - minus) / (2 * H) - grad[i, t].item()))
    return gap


@pytest.mark.parametrize("agg", AGG_MODES)
def test_where_the_stop_gradient_changes_the_gradient(agg):
    """Guards the frozen references above: they are needed where the stop-gradient matters.

    CISPO: the value's slope has the extra d clip(r)/d log pi * A * log pi term.
    DHPO with entropy mixing: the value's slope spreads each token's (1 - w_t) s_i over the whole
    response, eq. 5's s_{i,t} keeps it on token t; they differ because w varies along a response.
    GSPO: no difference, with either aggregation: every token of a response has the same weight
    c_i and the same s_i, so sum_t c_i s_i / |o_i| (value) = c_i s_i (eq. 5), clipped or not.
    """
    assert value_slope_gap("cispo", {**TABLE["cispo"][0], "agg": agg}) > 1e-3
    for clip_mode in ("branch", "unified"):
        params = {**TABLE["dhpo"][0], "mixing": "entropy", "clip_mode": clip_mode, "agg": agg}
        assert value_slope_gap("dhpo", params) > 1e-3
    assert value_slope_gap("gspo", {**TABLE["gspo"][0], "agg": agg}) < 1e-9
