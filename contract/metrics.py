"""The metric contract: every metric name the platform knows, defined once (names only, no code).

Backends report these names (trainers/api.py), the sweep driver logs every key under one of
``LOGGED_PREFIXES`` (and warns once about any other it drops), the live table shows
``PROGRESS``, the tracker marks each fully logged step with ``TRIAL_STEP``, and the dashboards
and their synthetic data draw ``CLIP_FRACTIONS`` and the rest. MLflow-safe (no '@'); verl's names
where verl has one, so curves from both backends line up. Adding a metric = one line here.

Pure data on purpose: dashboards import it without importing any trainer code.
"""

from __future__ import annotations

ACTOR, RESPONSE_LENGTH, REWARD, VAL, SELECT, PERF, EVAL, TRIAL, LAST = (
    "actor/", "response_length/", "reward/", "val/", "select/", "perf/", "eval/", "trial/", "last/")
"""The namespaces (key prefixes); LAST marks a trial's latest validation values (``last/val/...``)."""

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
PG_LOSS = "actor/pg_loss"
LR = "actor/lr"
CLIP_FRACTION_LOW = "actor/pg_clipfrac_low"
CLIP_FRACTION_HIGH = "actor/pg_clipfrac_high"
RATIO_MEAN, RATIO_MIN, RATIO_MAX = "actor/ratio_mean", "actor/ratio_min", "actor/ratio_max"
SEQ_RATIO_MEAN = "actor/seq_ratio_mean"
"""GSPO/GMPO/SSPO: mean sequence-level ratio."""
MIXED_RATIO_MEAN = "actor/mixed_ratio_mean"
"""DHPO: mean mixed ratio m."""
GATE_WEIGHT = "actor/gate_weight"
"""SAPO/SSPO: mean gate weight."""
REWARD_ANSWER_MEAN = "reward/answer_mean"
REWARD_FORMAT_MEAN = "reward/format_mean"
VAL_TEMPLATE = "val/{benchmark}/acc"
"""The table's default metric: `{benchmark}` is each benchmark's name (val_key)."""
VAL_AVG = "val/avg/acc"
SELECT_AVG = "select/avg/acc"
"""The selection split's average (data.select_size / select_files): select/<benchmark>/acc beside val/."""
TRIAL_STEP = TRIAL + "step"
"""Written by the tracker after each step's metrics: the last step that is recorded whole."""

STEP_METRICS = (ENTROPY, RESPONSE_LENGTH_MEAN, RESPONSE_LENGTH_MAX, REWARD_MEAN, CLIP_FRACTION, CLIP_FRACTION_TOKEN,
                CLIP_FRACTION_SEQ, PPO_KL, GRAD_NORM, STEP_TIME, TOKENS_PER_S)
"""Reported at every training step by every backend and objective."""
DHPO_METRICS = (MIX_WEIGHT,)
"""Reported only by DHPO (mean mixing weight w)."""
CLIP_FRACTIONS = (CLIP_FRACTION, CLIP_FRACTION_TOKEN, CLIP_FRACTION_SEQ)
"""Drawn together in the report's clip-fraction panels."""
LOGGED_PREFIXES = (ACTOR, RESPONSE_LENGTH, REWARD, VAL, SELECT, PERF, EVAL)
"""Namespaces the sweep driver logs to MLflow; a reported key outside them is dropped (with a warning)."""
PROGRESS = (REWARD_MEAN, ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG)
"""Columns of the live progress table."""

COMPUTE_TOKENS_GENERATED = "perf/tokens_generated"
"""Compute axis: response tokens sampled in the trial's rollouts since its step 0, cumulative (prompt tokens
and evaluation excluded). Reported at every training step by every backend; a resumed trial continues the sum."""
COMPUTE_TOKENS_TRAINED = "perf/tokens_trained"
"""Compute axis: response tokens the policy loss was computed on, cumulative; each optimizer pass over the
same rollout counts again (ppo_epochs passes of every mini-batch: generated x ppo_epochs)."""
COMPUTE_WALL_S = "perf/wall_s"
"""Compute axis: wall seconds of the training steps, cumulative: the sum of the backend's per-step time STEP_TIME
(local: sampling, scoring and updates; verl: its timing_s/step, which also holds its checkpoint saves and weight
syncs). Evaluation is never included."""
COMPUTE_GPU_S = "perf/gpu_s"
"""Compute axis: GPU-seconds of the trial's share, cumulative: each step's wall seconds x the GPUs it holds (a
fraction for a packed share). Only on GPUs (local with device cuda, verl on cuda); absent on the CPU."""
COMPUTE_METRICS = (COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED, COMPUTE_WALL_S)
"""The compute axes every backend reports at every training step (COMPUTE_GPU_S besides, on GPUs)."""
COMPUTE_AXES = {"step": None, "tokens": COMPUTE_TOKENS_GENERATED, "trained_tokens": COMPUTE_TOKENS_TRAINED,
                "seconds": COMPUTE_WALL_S, "gpu_seconds": COMPUTE_GPU_S}
"""The x axes a compute-performance curve may use, by name -> the metric holding it ("step": the step itself)."""


def val_key(benchmark: str) -> str:
    """Accuracy on one benchmark: reported at step 0 (the base), every eval_every steps and at the end."""
    return VAL_TEMPLATE.format(benchmark=benchmark)


def last_key(key: str) -> str:
    """A trial's latest value of a validation key, carried in every result (for Tune's scheduler)."""
    return LAST + key


def sign_aware_keys(prefix: str = CLIP_FRACTION) -> tuple[str, str]:
    """(low, high) clip-fraction keys of a clip-fraction family, e.g. actor/pg_clipfrac_low/_high."""
    return f"{prefix}_low", f"{prefix}_high"


def selection_key(key: str) -> str:
    """The selection split's twin of a validation key: val/easy/acc -> select/easy/acc."""
    return SELECT + key[len(VAL):] if key.startswith(VAL) else key


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
    return f"{EVAL}{benchmark}/{metric}"


EVAL_PROTOCOL_TAG = "eval/protocol"
"""Tag of a run's checkpoint evaluation: the protocol's hash (a re-evaluation with another protocol is refused)."""


def eval_artifacts(step: int) -> str:
    """Artifact folder of a checkpoint evaluation's files (per-problem samples and verdicts)."""
    return f"{EVAL}step_{step}"


VERDICTS = "verdicts/"
"""Artifact folder of the per-problem verdicts of every evaluation (evaluators/verdicts.py)."""


def verdicts_artifact(family: str, step: int) -> str:
    """Artifact path of one evaluation's verdicts: family "val" (a trial's validation, the base's at
    step 0) or "eval" (a checkpoint evaluation), e.g. verdicts/val/step_000200.json."""
    return f"{VERDICTS}{family.strip('/')}/step_{int(step):06d}.json"


def is_logged(key: str) -> bool:
    return key.startswith(LOGGED_PREFIXES)
