"""Evaluation metrics: Avg@k and unbiased pass@k.

    avg_at_k([[True, False], [True, True]])   # 0.75: Pass@1 averaged over k samples (DHPO Avg@k)
    pass_at_k(n=10, c=3, k=1)                 # 0.3: Chen et al. (2021) unbiased estimator

Self-check: python -m evaluators.metrics
"""

from __future__ import annotations


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


if __name__ == "__main__":
    print("avg@k", avg_at_k([[True, False], [True, True]]))
    print("pass@k n=10 c=3 k=1,5:", pass_at_k(10, 3, 1), pass_at_k(10, 3, 5))
