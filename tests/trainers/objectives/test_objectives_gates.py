"""Soft gates: SSPO gate conditions (SSPO Sec. 3 "Gate Design", eq. 14-22) and SAPO's f_Soft (eq. 9-13)."""

from __future__ import annotations

import math

import pytest
import torch

from objectives_testlib import GATES, evaluate
from trainers.objectives.sspo import local_weight, log_gate

TAUS = (0.2, 0.5, 0.6, 1.3)
RHO = torch.logspace(-3, 3, 4001, dtype=torch.float64)  # r in (1e-3, 1e3), includes r = 1


def gate_value(gate, rho, tau):
    """f(rho) = exp(log_gate(log rho)), differentiable in rho."""
    return torch.exp(log_gate(gate, torch.log(rho), torch.as_tensor(tau, dtype=rho.dtype)))


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("gate", GATES)
def test_gate_is_one_with_unit_slope_at_on_policy(gate, tau):
    """Condition (ii): f(1) = 1 and f'(1) = 1, so the on-policy update is the standard one."""
    rho = torch.ones((), dtype=torch.float64, requires_grad=True)
    f = gate_value(gate, rho, tau)
    (df,) = torch.autograd.grad(f, rho)
    assert f.item() == pytest.approx(1.0, abs=1e-15)
    assert df.item() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("gate", GATES)
def test_gate_is_monotone_and_positive(gate, tau):
    """Condition (iv): f is non-decreasing on (1e-3, 1e3); f maps R++ to R+."""
    f = gate_value(gate, RHO, tau)
    assert torch.isfinite(f).all() and (f > 0).all()
    assert (f.diff() >= -1e-12 * f[1:]).all()
    assert f[-1] > f[0]  # not constant


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("gate", GATES)
def test_local_weight_is_dlogf_dlogr(gate, tau):
    """actor/gate_weight's closed form equals autograd d log f / d log r = f'(r) r / f(r) (eq. 14)."""
    u = torch.log(RHO).clone().requires_grad_(True)
    t = torch.tensor(tau, dtype=torch.float64)
    (auto,) = torch.autograd.grad(log_gate(gate, u, t).sum(), u)
    closed = local_weight(gate, u.detach(), t)
    assert torch.allclose(closed, auto, rtol=1e-10, atol=1e-14)
    # and via the ratio itself: f'(r) r / f(r)
    rho = RHO.clone().requires_grad_(True)
    f = gate_value(gate, rho, tau)
    (df,) = torch.autograd.grad(f.sum(), rho)
    assert torch.allclose(df * RHO / f.detach(), closed, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("tau", TAUS)
def test_atanlog_weight_is_cauchy(tau):
    """SSPO eq. 16: w(r) = 1 / (1 + (log r / tau)^2) for the default gate (eq. 15)."""
    u = torch.log(RHO)
    expected = 1.0 / (1.0 + (u / tau) ** 2)
    assert torch.allclose(local_weight("atanlog", u, torch.tensor(tau, dtype=torch.float64)), expected, rtol=1e-14)
    for r in (0.01, 0.5, 1.0, 2.0, 50.0):  # spot values written out
        w = local_weight("atanlog", torch.tensor(math.log(r), dtype=torch.float64), torch.tensor(tau, dtype=torch.float64))
        assert w.item() == pytest.approx(1 / (1 + (math.log(r) / tau) ** 2), rel=1e-14)


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("gate", GATES)
def test_weight_is_bell_shaped_around_one(gate, tau):
    """Condition (iii): (iii.2) gates (atanlog, siglog, gumbel) peak w = f'r/f at r = 1;
    (iii.1) gates (expatan, expsig) peak f'/f there. Both decrease away from r = 1."""
    u = torch.log(RHO)
    w = local_weight(gate, u, torch.tensor(tau, dtype=torch.float64))
    bell = w if gate in ("atanlog", "siglog", "gumbel") else w / RHO
    one = int(torch.argmin(u.abs()))
    assert RHO[one].item() == pytest.approx(1.0) and bell[one].item() == pytest.approx(1.0)
    assert int(torch.argmax(bell)) == one
    assert (bell[one:].diff() <= 1e-15).all() and (bell[: one + 1].diff() >= -1e-15).all()
    if gate in ("atanlog", "siglog", "gumbel"):
        assert w[-1] < 0.5 * w[one]  # extreme ratios are attenuated


def test_sspo_objective_applies_the_gate_per_response():
    """One response, all tokens at the same ratio r: J = f(r) A exactly (geometric mean of equal gates)."""
    for gate in GATES:
        for r, adv, tau in ((1.3, 0.8, 0.5), (0.7, -1.2, 0.6)):
            u = math.log(r)
            lp = torch.full((1, 5), -1.0 + u, dtype=torch.float64)
            old = torch.full((1, 5), -1.0, dtype=torch.float64)
            loss, grad, metrics = evaluate("sspo", {"gate": gate, "tau_pos": 0.5, "tau_neg": 0.6},
                                           lp, old, torch.tensor([adv], dtype=torch.float64), torch.ones(1, 5))
            f = gate_value(gate, torch.tensor(r, dtype=torch.float64), tau).item()
            w = local_weight(gate, torch.tensor(u, dtype=torch.float64), torch.tensor(tau, dtype=torch.float64)).item()
            assert loss.item() == pytest.approx(-f * adv, rel=1e-12)
            assert torch.allclose(grad, torch.full_like(grad, -f * adv * w / 5), rtol=1e-12)
            assert metrics["actor/gate_weight"] == pytest.approx(w, rel=1e-12)


# ---- SAPO: f_Soft(x; A) = sigma(tau (x - 1)) 4 / tau ----


@pytest.mark.parametrize("tau_pos,tau_neg", [(1.0, 1.05), (4.0, 3.0), (8.0, 7.0)])
def test_sapo_gate_at_on_policy(tau_pos, tau_neg):
    """f_Soft(1) = 2 / tau (not 1) and f_Soft'(1) = 1, for each advantage sign (eq. 9-10, 13)."""
    lp = torch.tensor([[-0.4], [-2.2]], dtype=torch.float64)
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    loss, grad, metrics = evaluate("sapo", {"tau_pos": tau_pos, "tau_neg": tau_neg}, lp, lp.clone(), adv, torch.ones(2, 1))
    # loss = -1/2 (f(1; +) * 1 + f(1; -) * (-1))
    assert loss.item() == pytest.approx(-0.5 * (2 / tau_pos - 2 / tau_neg), abs=1e-14)
    assert torch.allclose(grad, torch.tensor([[-0.5], [0.5]], dtype=torch.float64), atol=1e-14)
    assert metrics["actor/gate_weight"] == pytest.approx(1.0)


@pytest.mark.parametrize("r", [0.2, 0.8, 1.0, 1.25, 3.0])
def test_sapo_gradient_weight_off_policy(r):
    """d loss / d log pi = -c A f_Soft'(r) r with f_Soft' = 4 g (1 - g) (eq. 12-13)."""
    tau = 1.0
    lp = torch.tensor([[math.log(r) - 1.0]], dtype=torch.float64)
    old = torch.tensor([[-1.0]], dtype=torch.float64)
    loss, grad, _ = evaluate("sapo", {"tau_pos": tau}, lp, old, torch.tensor([2.0], dtype=torch.float64), torch.ones(1, 1))
    g = 1 / (1 + math.exp(-tau * (r - 1)))
    assert loss.item() == pytest.approx(-g * 4 / tau * 2.0, rel=1e-12)
    assert grad.item() == pytest.approx(-2.0 * 4 * g * (1 - g) * r, rel=1e-12)
