"""SSPO: geometric mean of a soft token gate, times the advantage (SSPO eq. 11, 15-22).

    J = 1/G sum_i (prod_t f(r_{i,t}; A_i))^(1/|o_i|) A_i                       (eq. 11 / 17)

Everything is computed in log space with u = log r: log f(u) is averaged over the response's
valid tokens and exponentiated once. Gates (tau = tau_pos if A_i > 0 else tau_neg):

    atanlog  f = exp(tau * atan(log r / tau))            (eq. 21, default; eq. 15)
    siglog   f = exp(4 tau sigmoid(log r / tau) - 2 tau) (eq. 22)
    expatan  f = exp(tau * atan((r - 1) / tau))          (eq. 19)
    expsig   f = exp(4 tau sigmoid((r - 1) / tau) - 2 tau) (eq. 18)
    gumbel   f = exp(1 - exp(-(r - 1)))                   (eq. 20, no temperature)

Each satisfies f(1) = 1, f'(1) = 1 and is monotone (SSPO Sec. 3). The local weight
w = f'(r) r / f(r) = d log f / d log r (eq. 14) is reported as actor/gate_weight; for atanlog
it is 1 / (1 + (log r / tau)^2) (eq. 16).

    fn = get_objective("sspo", gate="atanlog", tau_pos=0.5, tau_neg=0.6)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.metrics import GATE_WEIGHT, SEQ_RATIO_MEAN
from trainers.objectives.base import (
    PolicyBatch, aggregate_sequences, check_agg, check_choice, check_positive, prepare,
    ratio_metrics, to_floats,
)

if TYPE_CHECKING:  # the functions that compute import torch themselves (see base.py)
    import torch

GATES = ("atanlog", "siglog", "expatan", "expsig", "gumbel")


def log_gate(gate: str, u: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """log f(r) as a function of u = log r for each gate of SSPO eq. 18-22."""
    import torch
    if gate == "atanlog":
        return tau * torch.atan(u / tau)
    if gate == "siglog":
        return 4.0 * tau * torch.sigmoid(u / tau) - 2.0 * tau
    x = torch.expm1(u)  # r - 1, accurate near r = 1
    if gate == "expatan":
        return tau * torch.atan(x / tau)
    if gate == "expsig":
        return 4.0 * tau * torch.sigmoid(x / tau) - 2.0 * tau
    if gate == "gumbel":
        return 1.0 - torch.exp(-x)
    raise ValueError(f"gate: expected one of {list(GATES)}, got {gate!r}")


def local_weight(gate: str, u: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """w(r) = f'(r) r / f(r) = d log f / d u in closed form (SSPO eq. 14; eq. 16 for atanlog)."""
    import torch
    if gate == "atanlog":
        return 1.0 / (1.0 + (u / tau) ** 2)
    if gate == "siglog":
        g = torch.sigmoid(u / tau)
        return 4.0 * g * (1.0 - g)
    r = torch.exp(u)
    if gate == "expatan":
        return r / (1.0 + ((r - 1.0) / tau) ** 2)
    if gate == "expsig":
        g = torch.sigmoid((r - 1.0) / tau)
        return 4.0 * g * (1.0 - g) * r
    if gate == "gumbel":
        return torch.exp(-(r - 1.0)) * r
    raise ValueError(f"gate: expected one of {list(GATES)}, got {gate!r}")


@dataclass(frozen=True)
class SSPOParams:
    gate: str = "atanlog"
    """Token gate f: one of atanlog (default), siglog, expatan, expsig, gumbel (no temperature)."""
    tau_pos: float = 0.5
    """Gate temperature for responses with A > 0 (SSPO App. A grid: 0.5 or 0.2)."""
    tau_neg: float = 0.6
    """Gate temperature for responses with A <= 0 (SSPO App. A grid: 0.6 or 0.3)."""
    agg: str = "seq-mean-token-mean"
    """'seq-mean-token-mean': mean_i J_i (paper); 'token-mean': J_i weighted by response length."""

    def __post_init__(self):
        check_choice("gate", self.gate, GATES)
        check_positive("tau_pos", self.tau_pos)
        check_positive("tau_neg", self.tau_neg)
        check_agg(self.agg)


def sspo_loss(batch: PolicyBatch, params: SSPOParams) -> tuple[torch.Tensor, dict[str, float]]:
    import torch
    p = prepare(batch)
    u = p.log_ratio  # log r_{i,t}
    positive = (p.adv_seq > 0)[:, None]
    tau = torch.where(positive, u.new_tensor(params.tau_pos), u.new_tensor(params.tau_neg))
    geo_mean_gate = p.seq_mean(log_gate(params.gate, u, tau)).exp()  # (prod_t f)^(1/|o_i|)
    loss = aggregate_sequences(-geo_mean_gate * p.adv_seq, p, params.agg)
    with torch.no_grad():
        metrics = ratio_metrics(p, u)
        metrics[GATE_WEIGHT] = p.masked_mean(local_weight(params.gate, u, tau))
        nonempty = (p.lengths > 0).to(u.dtype)
        metrics[SEQ_RATIO_MEAN] = (geo_mean_gate * nonempty).sum() / nonempty.sum().clamp(min=1)
    return loss, to_floats(metrics)
