"""Tests for evaluators.metrics: Avg@k, unbiased pass@k, maj@k, summarize."""

import math
import random
from itertools import combinations, permutations

import pytest

from evaluators.metrics import avg_at_k, maj_at_k, pass_at_k, summarize


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


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_matches_subset_enumeration_for_every_c(n):
    for c in range(n + 1):
        samples = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(combinations(samples, k))
            assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets)), (n, c, k)


# ---------------------------------------------------------------------------------------- maj@k

def test_maj_at_k_plain_majority():
    assert maj_at_k(["3", "3", "4"], [True, True, False]) == 1.0
    assert maj_at_k(["3", "4", "4"], [True, False, False]) == 0.0
    assert maj_at_k(["7"], [True]) == 1.0


def test_maj_at_k_groups_equal_numbers_by_answer_key():
    # '1/2', '0.5' and '\frac{1}{2}' are one group of 3 against '3' x 2
    assert maj_at_k(["1/2", "0.5", "\\frac{1}{2}", "3", "3"], [True, True, True, False, False]) == 1.0
    assert maj_at_k(["1,000", "1000", "7", "8", "9"], [True, True, False, False, False]) == 1.0


def test_maj_at_k_none_does_not_vote():
    # three samples without an answer would outvote '5' if they voted
    assert maj_at_k([None, None, None, "5"], [False, False, False, True]) == 1.0
    assert maj_at_k([None, None], [False, False]) == 0.0
    assert maj_at_k([], []) == 0.0


def test_maj_at_k_ties_are_the_expected_accuracy_of_a_random_tie_break():
    assert maj_at_k(["3", "4"], [True, False]) == 0.5
    assert maj_at_k(["3", "4", "5"], [False, True, False]) == pytest.approx(1 / 3)
    assert maj_at_k(["3", "3", "4", "4", "5"], [True, True, False, False, True]) == 0.5  # '5' is not tied
    assert maj_at_k(["3", "4", None, None], [False, False, False, False]) == 0.0


def test_maj_at_k_is_order_independent():
    answers = ["3", "4", "4", "3", None, "5"]
    correct = [True, False, False, True, False, False]
    values = {maj_at_k([answers[i] for i in p], [correct[i] for i in p]) for p in permutations(range(6))}
    assert values == {0.5}


def test_maj_at_k_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        maj_at_k(["3"], [True, False])


# ------------------------------------------------------------------------------------ summarize

def test_summarize_hand_example():
    problems = [(["1/2", "0.5", "3"], [True, True, False]),   # maj 1, any correct
                (["4", None, "5"], [False, False, True]),       # tie 4/5 -> 0.5
                (["9", "9", "9"], [False, False, False])]       # nothing correct
    out = summarize(problems)
    assert out["k"] == 3
    assert out["avg_at_k"] == pytest.approx((2 / 3 + 1 / 3 + 0) / 3)
    assert out["pass_at_k"] == pytest.approx((1 + 1 + 0) / 3)
    assert out["maj_at_k"] == pytest.approx((1 + 0.5 + 0) / 3)


def test_summarize_unequal_n_uses_each_problems_own_n_for_pass_at_k():
    rng = random.Random(0)
    problems = []
    for n in (3, 5, 6, 4):
        correct = [rng.random() < 0.4 for _ in range(n)]
        problems.append(([str(rng.randint(0, 2)) for _ in range(n)], correct))
    out = summarize(problems)
    k = 3
    assert out["k"] == k
    brute = []
    for _, correct in problems:
        subsets = list(combinations(correct, k))
        brute.append(sum(any(s) for s in subsets) / len(subsets))
    assert out["pass_at_k"] == pytest.approx(sum(brute) / len(brute))
    assert out["avg_at_k"] == pytest.approx(avg_at_k([c for _, c in problems]))
    assert out["maj_at_k"] == pytest.approx(sum(maj_at_k(a, c) for a, c in problems) / len(problems))


def test_summarize_rejects_bad_input():
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError, match="problem 1"):
        summarize([(["1"], [True]), ([], [])])
    with pytest.raises(ValueError, match="problem 0"):
        summarize([(["1", "2"], [True])])
