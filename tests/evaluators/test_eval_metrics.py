"""Tests for evaluators.metrics: Avg@k, unbiased pass@k, GRPO group advantages."""

import math
from itertools import combinations

import pytest
import torch

from evaluators.metrics import avg_at_k, group_advantages, pass_at_k


def test_avg_at_k_hand_examples():
    assert avg_at_k([[True, False], [True, True]]) == pytest.approx(0.75)
    assert avg_at_k([[True, False, False, False]]) == pytest.approx(0.25)
    # Unequal k: each problem counts equally, not each sample.
    assert avg_at_k([[True], [False, False, False, True]]) == pytest.approx((1 + 0.25) / 2)
    assert avg_at_k([[False] * 32, [False] * 32]) == 0.0


def test_avg_at_k_rejects_empty():
    with pytest.raises(ValueError):
        avg_at_k([])
    with pytest.raises(ValueError, match="problem 1"):
        avg_at_k([[True], []])


def test_pass_at_k_hand_values():
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))  # 0.9167
    assert pass_at_k(4, 0, 2) == 0.0
    assert pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(5, 2, 4) == 1.0  # n - c < k: every k-subset contains a correct sample
    assert pass_at_k(2, 1, 2) == 1.0


def test_pass_at_k_matches_subset_enumeration():
    n, c = 7, 2
    samples = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(combinations(samples, k))
        assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_pass_at_1_equals_avg_at_k():
    correct = [[True, False, True, True], [False, False, False, True]]
    mean_pass1 = sum(pass_at_k(len(r), sum(r), 1) for r in correct) / len(correct)
    assert mean_pass1 == pytest.approx(avg_at_k(correct))


@pytest.mark.parametrize("n,c,k", [(0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_at_k_rejects_bad_arguments(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_group_advantages_values():
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0], [2.0, 0.5, 1.25, 0.25]])
    adv = group_advantages(r)
    # Unbiased std (correction=1), as verl: group 0 has mean .5, std sqrt(1/3).
    a = 0.5 / math.sqrt(1 / 3)  # 0.866; the population std would give 1.0
    assert adv[0].tolist() == pytest.approx([a, -a, -a, a], rel=1e-5)
    expected = (r[1] - r[1].mean()) / (r[1].std(unbiased=True) + 1e-6)
    assert torch.allclose(adv[1], expected)
    assert torch.allclose(adv.mean(dim=1), torch.zeros(2), atol=1e-6)
    assert torch.allclose(adv.std(dim=1), torch.ones(2), atol=1e-4)


def test_group_advantages_zero_std_groups_are_zero():
    # 0.1 * 3 / 3 != 0.1 in floating point: a naive (r - mean) / (std + eps) is not exactly 0.
    r = torch.tensor([[0.1, 0.1, 0.1], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0]],
                     dtype=torch.float64)
    naive = (r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-6)
    assert naive[0].abs().max() > 0  # the premise: rounding leaks through the naive formula
    adv = group_advantages(r)
    assert not torch.isnan(adv).any()
    assert (adv[:3] == 0).all()
    assert (adv[3] != 0).all()
    assert adv.dtype == torch.float64


def test_group_advantages_edge_shapes_and_dtypes():
    single = group_advantages(torch.tensor([[1.0], [0.0]]))  # group size 1: no baseline
    assert single.tolist() == [[0.0], [0.0]]
    ints = group_advantages(torch.tensor([[1, 0]]))
    assert ints.dtype == torch.float32 and ints[0, 0] > 0 > ints[0, 1]
    with pytest.raises(ValueError, match="num_groups"):
        group_advantages(torch.tensor([1.0, 0.0]))


def test_group_advantages_is_detached():
    r = torch.tensor([[1.0, 0.0]], requires_grad=True)
    assert not group_advantages(r).requires_grad
