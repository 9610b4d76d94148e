"""Tests for evaluators.metrics: Avg@k and unbiased pass@k."""

import math
from itertools import combinations

import pytest

from evaluators.metrics import avg_at_k, pass_at_k


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
