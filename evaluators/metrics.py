"""Evaluation metrics (Avg@k, unbiased pass@k) and GRPO group-normalised advantages.

    avg_at_k([[True, False], [True, True]])   # 0.75: Pass@1 averaged over k samples (DHPO Avg@k)
    pass_at_k(n=10, c=3, k=1)                 # 0.3: Chen et al. (2021) unbiased estimator
    group_advantages(torch.tensor([[1., 0., 0., 1.]]))   # DHPO eq. 1, per group

Self-check: python -m evaluators.metrics
"""

from __future__ import annotations

import torch


def avg_at_k(correct: list[list[bool]]) -> float:
    """Avg@k: for each problem the fraction of its k samples that are correct (Pass@1 estimated
    from k samples), averaged over problems. Problems may have different k; each problem counts
    equally. Raises ValueError on no problems or a problem with no samples."""
    if not correct:
        raise ValueError("avg_at_k needs at least one problem")
    total = 0.0
    for i, samples in enumerate(correct):
        if len(samples) == 0:
            raise ValueError(f"avg_at_k: problem {i} has no samples")
        total += sum(bool(x) for x in samples) / len(samples)
    return total / len(correct)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021, Codex paper):
    1 - C(n-c, k) / C(n, k), computed as a stable product 1 - prod_{i=n-c+1}^{n} (1 - k/i)."""
    if not (n >= 1 and 0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass_at_k needs n >= 1, 0 <= c <= n, 1 <= k <= n; got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


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


if __name__ == "__main__":
    print("avg@k", avg_at_k([[True, False], [True, True]]))
    print("pass@k n=10 c=3 k=1,5:", pass_at_k(10, 3, 1), pass_at_k(10, 3, 5))
    print(group_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0], [2.0, 2.0, 2.0, 2.0]])))
