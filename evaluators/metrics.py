"""Evaluation metrics: Avg@k, unbiased pass@k, maj@k (majority vote).

    avg_at_k([[True, False], [True, True]])   # 0.75: Pass@1 averaged over k samples (DHPO Avg@k)
    pass_at_k(n=10, c=3, k=1)                 # 0.3: Chen et al. (2021) unbiased estimator
    maj_at_k(["1/2", "0.5", "3", None], [True, True, False, False])   # 1.0: '1/2' and '0.5' vote together
    summarize([(answers, correct), ...])      # {'avg_at_k', 'pass_at_k', 'maj_at_k', 'k'} over problems

The names carry no '@' because they are MLflow metric names (eval/<benchmark>/avg_at_k: MLflow
refuses '@').
"""

from __future__ import annotations

from typing import Sequence


def avg_at_k(correct: list[list[bool]]) -> float:
    """Avg@k: for each problem the fraction of its k samples that are correct (Pass@1 estimated
    from k samples), averaged over problems. Problems may have different k; each problem counts
    equally. Raises ValueError on no problems or a problem with no samples."""
    if not correct:
        raise ValueError("avg_at_k needs at least one problem")
    for i, samples in enumerate(correct):
        if len(samples) == 0:
            raise ValueError(f"avg_at_k: problem {i} has no samples")
    if len({len(samples) for samples in correct}) == 1:  # equal k: the same mean, as one exact division
        return sum(bool(x) for samples in correct for x in samples) / (len(correct) * len(correct[0]))
    return sum(sum(bool(x) for x in samples) / len(samples) for samples in correct) / len(correct)


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


def maj_at_k(answers: Sequence[str | None], correct: Sequence[bool]) -> float:
    """Majority-vote accuracy of one problem's k samples: `answers[i]` is sample i's extracted
    final answer (None: it had none), `correct[i]` whether it was graded correct.

    Votes are grouped by evaluators.verifier.answer_key (so '0.5', '1/2' and '\\frac{1}{2}' vote
    together; symbolically equal but differently written forms may not). None does not vote;
    no votes at all -> 0.0. The most-voted group's correctness is the mean of its members'
    (normally all equal). Ties among the most-voted groups: the mean correctness of the tied
    groups, i.e. the expected accuracy of a uniformly random tie-break, so the result does not
    depend on sample order (two groups tied, one correct -> 0.5)."""
    from evaluators.verifier import answer_key

    if len(answers) != len(correct):
        raise ValueError(f"maj_at_k: {len(answers)} answers but {len(correct)} correctness flags")
    votes: dict[str, list[int]] = {}  # key -> [votes, correct votes]
    for ans, ok in zip(answers, correct):
        if ans is None:
            continue
        group = votes.setdefault(answer_key(ans), [0, 0])
        group[0] += 1
        group[1] += int(bool(ok))
    if not votes:
        return 0.0
    top = max(n for n, _ in votes.values())
    tied = [c / n for n, c in votes.values() if n == top]
    return sum(tied) / len(tied)


def summarize(problems: Sequence[tuple[Sequence[str | None], Sequence[bool]]]) -> dict[str, float]:
    """Metrics over problems, each given as (answers, correct) for its n samples (see maj_at_k).

    {'avg_at_k': avg_at_k over all samples, 'pass_at_k': mean of pass_at_k(n_i, c_i, k),
     'maj_at_k': mean of maj_at_k over all samples, 'k': k}, with k = the smallest n_i. Problems may
    have different n: avg@k and maj@k use every sample of each problem; pass@k is the unbiased
    estimate for k samples from each problem's own n_i >= k (equal to plain "any correct" when
    every n_i = k). Each problem counts equally. Raises ValueError on no problems, a problem with
    no samples, or answers and correct of different lengths."""
    if not problems:
        raise ValueError("summarize needs at least one problem")
    for i, (answers, correct) in enumerate(problems):
        if len(answers) != len(correct):
            raise ValueError(f"summarize: problem {i} has {len(answers)} answers but {len(correct)} flags")
        if not correct:
            raise ValueError(f"summarize: problem {i} has no samples")
    k = min(len(correct) for _, correct in problems)
    m = len(problems)
    return {
        "avg_at_k": avg_at_k([list(correct) for _, correct in problems]),
        "pass_at_k": sum(pass_at_k(len(c), sum(bool(x) for x in c), k) for _, c in problems) / m,
        "maj_at_k": sum(maj_at_k(a, c) for a, c in problems) / m,
        "k": k,
    }
