"""Clip-fraction and mixing-weight metrics on hand-crafted ratios: exactly k of N tokens clipped.

Padded positions hold ratios that would count as clipped (and nan/inf) if they leaked in.
"""

from __future__ import annotations

import math

import pytest
import torch

from objectives_testlib import AGGS, evaluate

PAD = float("nan")


def batch(log_ratios, adv, entropy=None):
    """Rows of log-ratios (None = padding) -> (lp, old, adv, mask, entropy) in float64."""
    T = max(len(r) for r in log_ratios)
    mask = torch.tensor([[1.0 if t < len(r) and r[t] is not None else 0.0 for t in range(T)] for r in log_ratios],
                        dtype=torch.float64)
    u = torch.tensor([[r[t] if t < len(r) and r[t] is not None else 30.0 for t in range(T)] for r in log_ratios],
                     dtype=torch.float64)
    old = torch.full_like(u, -1.5)
    old[mask == 0] = -math.inf  # garbage: r = exp(+inf) if it leaked
    lp = torch.where(mask > 0, old + u, torch.full_like(u, PAD))
    ent = None
    if entropy is not None:
        ent = torch.tensor([[e if e is not None else 1e9 for e in row] + [1e9] * (T - len(row)) for row in entropy],
                           dtype=torch.float64)
    return lp, old, torch.tensor(adv, dtype=torch.float64), mask, ent


# GRPO (eps 0.2): A > 0 clips r > 1.2, A < 0 clips r < 0.8; the other side is never clipped.
GRPO_ROWS = [
    [0.5, 0.22, 0.0, -0.5, 0.1, None],  # A > 0: two high (1.65, 1.25); r = 0.61 not clipped for A > 0
    [-0.5, 0.5, -0.1, -0.3, None, None],  # A < 0: two low (0.61, 0.74); r = 1.65 not clipped for A < 0
    [0.4, -0.4, 0.05],  # A = 0: never clipped
]


@pytest.mark.parametrize("agg", AGGS)
def test_grpo_clip_fractions(agg):
    _, _, m = evaluate("grpo", {"agg": agg}, *batch(GRPO_ROWS, [1.0, -1.0, 0.0]))
    assert m["actor/pg_clipfrac_high"] == pytest.approx(2 / 12)
    assert m["actor/pg_clipfrac_low"] == pytest.approx(2 / 12)
    assert m["actor/pg_clipfrac"] == pytest.approx(4 / 12)
    _, _, m = evaluate("grpo", {"eps_high": 0.28, "agg": agg}, *batch(GRPO_ROWS, [1.0, -1.0, 0.0]))
    assert m["actor/pg_clipfrac_high"] == pytest.approx(1 / 12)  # DAPO clip-higher: 1.25 < 1.28


def test_gspo_clip_fractions_count_tokens_of_clipped_sequences():
    rows = [
        [0.1, 0.0, 0.2],  # A > 0, s = e^0.1 > 1 + 4e-4: 3 tokens high
        [-0.1, -0.2, 0.0, 0.1, None],  # A < 0, s = e^-0.05 < 1 - 3e-4: 4 tokens low
        [-0.1, -0.1],  # A > 0, s < 1: not clipped
        [0.1],  # A < 0, s > 1: not clipped
    ]
    _, _, m = evaluate("gspo", {}, *batch(rows, [1.0, -1.0, 2.0, -2.0]))
    assert m["actor/pg_clipfrac_high"] == pytest.approx(3 / 10)
    assert m["actor/pg_clipfrac_low"] == pytest.approx(4 / 10)
    assert m["actor/pg_clipfrac"] == m["actor/clipfrac_seq"] == pytest.approx(7 / 10)


# GMPO (eps 0.4): ratio-space log bounds (log 0.6, log 1.4) = (-0.511, 0.336); log space (-0.4, 0.4).
GMPO_ROWS = [
    [0.5, 0.35, 0.3, -0.9],  # A > 0: 0.5 high in both, 0.35 high in ratio space only; -0.9 never (A > 0)
    [-0.6, -0.45, -0.2, 0.9, None],  # A < 0: -0.6 low in both, -0.45 low in log space only; 0.9 never
]


@pytest.mark.parametrize("log_space,k_high,k_low", [(False, 2, 1), (True, 1, 2)])
def test_gmpo_clip_fractions(log_space, k_high, k_low):
    _, _, m = evaluate("gmpo", {"clip_in_log_space": log_space}, *batch(GMPO_ROWS, [1.0, -1.0]))
    assert m["actor/pg_clipfrac_high"] == pytest.approx(k_high / 8)
    assert m["actor/pg_clipfrac_low"] == pytest.approx(k_low / 8)
    assert m["actor/pg_clipfrac"] == pytest.approx((k_high + k_low) / 8)


def test_cispo_clip_fractions_ignore_the_sign():
    rows = [[0.5, -0.5, 0.0, None], [0.3, -0.3, 0.1, -0.1]]  # r: 1.65, 0.61, 1 | 1.35, 0.74, 1.1, 0.9
    _, _, m = evaluate("cispo", {"eps_low": 0.2}, *batch(rows, [1.0, -1.0]))
    assert m["actor/pg_clipfrac_high"] == pytest.approx(2 / 7)
    assert m["actor/pg_clipfrac_low"] == pytest.approx(2 / 7)
    _, _, m = evaluate("cispo", {}, *batch(rows, [1.0, -1.0]))  # eps_low = 10: no lower bound
    assert m["actor/pg_clipfrac_low"] == 0.0 and m["actor/pg_clipfrac"] == pytest.approx(2 / 7)


DHPO_ROWS = [
    [0.5, 0.0, 0.1, -0.4],  # A > 0: r = 1.65 token-high (r = 0.67 not, A > 0); s = e^0.05 inside
    [-0.5, -0.3, -0.4, None],  # A < 0: r = 0.61, 0.74, 0.67 token-low x3; s = e^-0.4 = 0.67 seq-low x3
    [0.3, 0.3],  # A > 0: r = 1.35 token-high x2; s = 1.35 seq-high x2
]


def test_dhpo_branch_fractions():
    _, _, m = evaluate("dhpo", {}, *batch(DHPO_ROWS, [1.0, -1.0, 0.5]))
    assert m["actor/clipfrac_token_high"] == pytest.approx(3 / 9)
    assert m["actor/clipfrac_token_low"] == pytest.approx(3 / 9)
    assert m["actor/clipfrac_token"] == pytest.approx(6 / 9)
    assert m["actor/clipfrac_seq_high"] == pytest.approx(2 / 9)
    assert m["actor/clipfrac_seq_low"] == pytest.approx(3 / 9)
    assert m["actor/clipfrac_seq"] == pytest.approx(5 / 9)
    assert m["actor/mix_weight"] == pytest.approx(0.5)


def test_dhpo_unified_fractions():
    # m = (r + s) / 2 against (0.8, 1.28): row 0 only t0 (1.35) high; row 1 all low; row 2 both high
    _, _, m = evaluate("dhpo", {"clip_mode": "unified"}, *batch(DHPO_ROWS, [1.0, -1.0, 0.5]))
    assert m["actor/pg_clipfrac_high"] == pytest.approx(3 / 9)
    assert m["actor/pg_clipfrac_low"] == pytest.approx(3 / 9)
    assert m["actor/pg_clipfrac"] == pytest.approx(6 / 9)
    assert "actor/clipfrac_token" not in m and "actor/clipfrac_seq" not in m


ENT_ROWS = [[0.0, 1.0, 2.0, 4.0], [4.0, 0.0, 3.0, None], [2.5, 2.5]]


@pytest.mark.parametrize("norm,expected", [
    ("batch", (7 + 7 + 5) / 4 / 9),  # one min-max over the batch: w = H / 4
    ("sequence", (7 / 4 + 7 / 4 + 0.5 + 0.5) / 9),  # per response; row 2 is constant -> 0.5
])
def test_dhpo_mix_weight_from_entropy(norm, expected):
    rows = [[0.1, 0.1, 0.1, 0.1], [0.0, 0.0, 0.0, None], [0.2, 0.2]]
    _, _, m = evaluate("dhpo", {"mixing": "entropy", "entropy_norm": norm}, *batch(rows, [1.0, -1.0, 1.0], ENT_ROWS))
    assert m["actor/mix_weight"] == pytest.approx(expected)


def test_metrics_ignore_padding():
    lp, old, adv, mask, _ = batch(GRPO_ROWS, [1.0, -1.0, 0.0])
    _, _, m = evaluate("grpo", {}, lp, old, adv, mask)
    u = (lp - old)[mask > 0]
    assert m["actor/ratio_max"] == pytest.approx(math.exp(0.5))
    assert m["actor/ratio_min"] == pytest.approx(math.exp(-0.5))
    assert m["actor/ppo_kl"] == pytest.approx(-u.mean().item())
