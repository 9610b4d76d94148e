"""The metric contract: every metric name the platform knows, defined once (names only, no code).

Backends report these names (trainers/api.py), the sweep driver logs every key under one of
``LOGGED_PREFIXES`` (and warns once about any other it drops), the live table shows
``PROGRESS``, the tracker marks each fully logged step with ``TRIAL_STEP``, and the dashboards
and their synthetic data draw ``CLIP_FRACTIONS`` and the rest. MLflow-safe (no '@'); verl's names
where verl has one, so curves from both backends line up. Adding a metric = one line here.

Pure data on purpose: dashboards import it without importing any trainer code.
"""

from __future__ import annotations

ENTROPY = "actor/entropy"
RESPONSE_LENGTH_MEAN = "response_length/mean"
RESPONSE_LENGTH_MAX = "response_length/max"
REWARD_MEAN = "reward/mean"
CLIP_FRACTION = "actor/pg_clipfrac"
CLIP_FRACTION_TOKEN = "actor/clipfrac_token"
CLIP_FRACTION_SEQ = "actor/clipfrac_seq"
PPO_KL = "actor/ppo_kl"
GRAD_NORM = "actor/grad_norm"
MIX_WEIGHT = "actor/mix_weight"
STEP_TIME = "perf/step_time_s"
TOKENS_PER_S = "perf/tokens_per_s"
VAL_AVG = "val/avg/acc"
TRIAL_STEP = "trial/step"
"""Written by the tracker after each step's metrics: the last step that is recorded whole."""

STEP_METRICS = (ENTROPY, RESPONSE_LENGTH_MEAN, RESPONSE_LENGTH_MAX, REWARD_MEAN, CLIP_FRACTION, CLIP_FRACTION_TOKEN,
                CLIP_FRACTION_SEQ, PPO_KL, GRAD_NORM, STEP_TIME, TOKENS_PER_S)
"""Reported at every training step by every backend and objective."""
DHPO_METRICS = (MIX_WEIGHT,)
"""Reported only by DHPO (mean mixing weight w)."""
CLIP_FRACTIONS = (CLIP_FRACTION, CLIP_FRACTION_TOKEN, CLIP_FRACTION_SEQ)
"""Drawn together in the report's clip-fraction panels."""
LOGGED_PREFIXES = ("actor/", "response_length/", "reward/", "val/", "perf/", "eval/")
"""Namespaces the sweep driver logs to MLflow; a reported key outside them is dropped (with a warning)."""
PROGRESS = (REWARD_MEAN, ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG)
"""Columns of the live progress table."""


def val_key(benchmark: str) -> str:
    """Accuracy on one benchmark: reported at step 0 (the base), every eval_every steps and at the end."""
    return f"val/{benchmark}/acc"


def val_metrics(benchmarks: list[str]) -> list[str]:
    """Every evaluation key for these benchmarks, their average last."""
    return [val_key(b) for b in benchmarks] + [VAL_AVG]


EVAL_METRICS = ("avg_at_k", "pass_at_k", "maj_at_k", "k", "mean_tokens", "truncated_frac")
"""Per-benchmark results of a checkpoint evaluation (evaluators/scoring.py): Avg@k (DHPO's Pass@1 over k
samples), unbiased pass@k, majority vote, samples per problem, mean response tokens, share truncated."""
EVAL_AVG = "eval/avg/avg_at_k"
"""Mean Avg@k over the evaluated benchmarks (DHPO Table 1's AVG)."""


def eval_key(benchmark: str, metric: str) -> str:
    """A checkpoint evaluation's metric (`sweep eval`, a spec's eval: section), logged at the checkpoint's step."""
    return f"eval/{benchmark}/{metric}"


def is_logged(key: str) -> bool:
    return key.startswith(LOGGED_PREFIXES)
