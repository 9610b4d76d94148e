"""GRPO group-normalised advantages (DHPO eq. 1), the built-in trainer's advantage estimator.

    group_advantages(torch.tensor([[1., 0., 0., 1.]]))   # per group: (r - mean) / (std + eps)
"""

from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """GRPO advantages, DHPO eq. 1: A_i = (r_i - mean(r)) / (std(r) + eps) within each group.

    rewards: [num_groups, group_size] (one row per prompt, one column per sampled response).
    Returns a tensor of the same shape (float32 unless rewards is already a float tensor).

    std is the unbiased sample std (torch.std, correction=1), the same as verl's GRPO
    (`compute_grpo_outcome_advantage`), with eps added to the denominator as verl does.
    A group whose rewards are all exactly equal (zero std, including group_size == 1) gets
    all-zero advantages: no learning signal, and no NaN. (verl instead treats a size-1 group
    as mean 0, std 1, i.e. A = r; we choose 0 because one sample carries no baseline.)
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [num_groups, group_size], got shape {tuple(rewards.shape)}")
    r = rewards.detach()
    if not torch.is_floating_point(r):
        r = r.float()
    if r.shape[1] == 0:
        return r.clone()
    constant = (r == r[:, :1]).all(dim=1, keepdim=True)
    mean = r.mean(dim=1, keepdim=True)
    if r.shape[1] > 1:
        std = r.std(dim=1, keepdim=True)  # unbiased, as torch.std / verl
    else:
        std = torch.ones_like(mean)  # size-1 groups are constant: masked to zero below
    adv = (r - mean) / (std + eps)
    return torch.where(constant, torch.zeros_like(adv), adv)
