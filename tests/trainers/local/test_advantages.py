"""Tests for trainers.local.advantages: GRPO group-normalised advantages (DHPO eq. 1)."""

import math

import pytest
import torch

from trainers.local.advantages import group_advantages


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


def test_lives_on_the_trainer_side_only():
    """Advantage estimation is training logic: evaluators hold verifiers and benchmark metrics only."""
    import evaluators.metrics

    assert not hasattr(evaluators.metrics, "group_advantages")
