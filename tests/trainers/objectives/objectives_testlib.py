"""Shared helpers for the objective-zoo tests: batch builders, the option grid, an evaluator.

Imported by the sibling test_objectives_*.py files (pytest puts this folder on sys.path).
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import math
import re

import torch

from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective

AGGS = ("seq-mean-token-mean", "token-mean")
GATES = ("atanlog", "siglog", "expatan", "expsig", "gumbel")
GARBAGE = (float("nan"), float("inf"), -float("inf"), 1e30, -1e30, 7.0)

# ---- the discrete options of every registered objective, read from the registry ----

DEFAULTS = {name: {f.name: f.default for f in dataclasses.fields(spec.params_cls)} for name, spec in OBJECTIVES.items()}


def discrete_options(name):
    """{field: every allowed value} for each bool / choice field of the objective's params (not agg).

    Choices are read from the registry's own validation message ("expected one of [...]"), so a
    new gate / mixing / mode, or a new objective, shows up here without editing the tests.
    Numeric fields (eps, tau) are continuous and not listed.
    """
    out = {}
    for f in dataclasses.fields(OBJECTIVES[name].params_cls):
        if f.name == "agg":
            continue
        if isinstance(f.default, bool):
            out[f.name] = [False, True]
        elif isinstance(f.default, str):
            try:
                get_objective(name, **{f.name: "\0not-an-option"})
            except ValueError as err:
                found = re.search(r"expected one of (\[.*?\])", str(err))
                assert found, f"{name}.{f.name}: cannot read the allowed values from {err}"
                out[f.name] = list(ast.literal_eval(found.group(1)))
            else:
                raise AssertionError(f"{name}.{f.name}: a free-form string option; teach discrete_options about it")
    return out


def variant_grid(name):
    """Every combination of the objective's discrete options, as a list of params dicts."""
    opts = discrete_options(name)
    return [dict(zip(opts, values)) for values in itertools.product(*opts.values())]


# Numeric settings tested besides each objective's discrete options (variant_grid).
EXTRA_OPTIONS: dict[str, list[dict]] = {
    "grpo": [{"eps_high": 0.28}],  # DAPO clip-higher
    "gspo": [{"eps_low": 0.2, "eps_high": 0.28}],  # a clip range that binds
}

# Every registered objective and every option (aggregation is crossed in ``configs``).
OPTIONS: list[tuple[str, dict]] = [(name, params) for name in OBJECTIVES
                                   for params in [*variant_grid(name), *EXTRA_OPTIONS.get(name, [])]]


def configs(aggs=AGGS):
    """pytest params: (name, params) for every option x aggregation, with readable ids."""
    import pytest

    out = []
    for name, params in OPTIONS:
        for agg in aggs:
            p = {**params, "agg": agg}
            ident = "-".join([name, *(f"{v}" for k, v in params.items()), agg])
            out.append(pytest.param(name, p, id=ident))
    return out


def lengths_mask(lengths, T, dtype=torch.float32):
    return (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).to(dtype)


def random_batch(lengths, T, seed=0, scale=0.3, dtype=torch.float64, adv=None, per_token_adv=False):
    """A right-padded batch with off-policy log-ratios of size ~``scale`` and random entropy.

    Returns (log_probs leaf, old_log_probs, advantages, mask, entropy); padding holds zeros.
    """
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    mask = lengths_mask(lengths, T, dtype)
    old = -torch.rand(B, T, generator=g, dtype=dtype) * 4.0 - 0.05
    lp = old + scale * torch.randn(B, T, generator=g, dtype=dtype)
    if adv is None:
        adv = torch.randn(B, generator=g, dtype=dtype)
    adv = torch.as_tensor(adv, dtype=dtype)
    entropy = torch.rand(B, T, generator=g, dtype=dtype) * 3.0
    lp, old, entropy = lp * mask, old * mask, entropy * mask
    if per_token_adv:
        adv = adv[:, None] * mask
    return lp, old, adv, mask, entropy


def evaluate(name, params, lp, old, adv, mask, entropy=None):
    """(loss, grad w.r.t. log_probs, metrics); log_probs is detached into a fresh leaf first."""
    leaf = lp.detach().clone().requires_grad_(True)
    loss, metrics = get_objective(name, **params)(PolicyBatch(leaf, old, adv, mask, entropy))
    loss.backward()
    return loss.detach(), leaf.grad, metrics


def golden_tensors(inp, dtype=torch.float64, garbage=True):
    """The reference's nested-list batch as tensors; padding (None) holds garbage or zeros."""
    def fill(rows):
        out, k = [], 0
        for row in rows:
            vals = []
            for v in row:
                if v is None:
                    vals.append(GARBAGE[k % len(GARBAGE)] if garbage else 0.0)
                    k += 1
                else:
                    vals.append(v)
            out.append(vals)
        return torch.tensor(out, dtype=torch.float64).to(dtype)

    return (fill(inp["log_probs"]), fill(inp["old_log_probs"]), torch.tensor(inp["advantages"], dtype=dtype),
            torch.tensor(inp["response_mask"], dtype=dtype), fill(inp["entropy"]))


def vanilla_pg_loss(lp, adv_seq, mask, agg):
    """-agg(A_i * log pi): the REINFORCE loss whose gradient every objective must give on-policy."""
    lengths = mask.sum(-1)
    tok = adv_seq[:, None] * lp * mask
    if agg == "token-mean":
        return -tok.sum() / mask.sum()
    nonempty = lengths > 0
    return -(tok.sum(-1)[nonempty] / lengths[nonempty]).mean()


def token_agg_weights(mask, agg):
    """c[i, t] such that a token loss aggregates as sum c * loss (0 on padding)."""
    lengths = mask.sum(-1, keepdim=True)
    if agg == "token-mean":
        return mask / mask.sum()
    n_seq = (lengths > 0).sum()
    return mask / lengths.clamp(min=1) / n_seq


def assert_finite_metrics(metrics):
    assert isinstance(metrics, dict) and metrics
    for key, value in metrics.items():
        assert isinstance(key, str) and type(value) is float, (key, value)
        assert math.isfinite(value), (key, value)


# ---- completeness of a registered objective (test_objectives_registry, test_objectives_newcomer) ----

CLIPFRAC_KEYS = ("actor/clipfrac_token", "actor/clipfrac_seq")


def variant_metrics(name):
    """[(params, metrics)] of every discrete variant x aggregation on one off-policy batch (clips bind)."""
    lp, old, adv, mask, ent = random_batch([6, 3, 5, 1], 6, seed=11, scale=0.6)
    out = []
    for variant in variant_grid(name):
        for agg in AGGS:
            params = {**variant, "agg": agg}
            loss, grad, metrics = evaluate(name, params, lp, old, adv, mask, ent)
            assert loss.dim() == 0 and torch.isfinite(loss) and torch.isfinite(grad).all(), (name, params)
            assert_finite_metrics(metrics)
            out.append((params, metrics))
    return out


def depends_only_on_response_advantages(name, params):
    """True when the gradient is unchanged by replacing per-token advantages A_{i,t} with their
    response mean A_i: the mark of one term J_i(A_i) per response (aggregate_sequences).

    On-policy (r = 1) nothing clips, so per-token objectives weight token t by its own A_{i,t}.
    """
    lp, _, _, mask, ent = random_batch([5, 3, 4], 5, seed=12)
    g = torch.Generator().manual_seed(13)
    adv_tok = (torch.rand(3, 5, generator=g, dtype=torch.float64) + 0.5) * torch.tensor([[1.0], [-1.0], [2.0]]) * mask
    adv_mean = (adv_tok.sum(-1) / mask.sum(-1))[:, None] * mask
    _, grad_tok, _ = evaluate(name, params, lp, lp, adv_tok, mask, ent)
    _, grad_mean, _ = evaluate(name, params, lp, lp, adv_mean, mask, ent)
    return torch.allclose(grad_tok, grad_mean, rtol=1e-9, atol=1e-12)


def check_objective_complete(spec):
    """Assert that a registered ObjectiveSpec carries everything the platform reads from it."""
    from sweeps.specs.load import MAX_LABEL  # the limit a spec's own `label:` is held to

    name = spec.name
    assert OBJECTIVES.get(name) is spec, f"{name}: not the registered spec"
    # params: a frozen dataclass, documented fields, constructible defaults, 'agg' (verl maps loss_agg_mode to it)
    assert dataclasses.is_dataclass(spec.params_cls) and spec.params_cls.__dataclass_params__.frozen, name
    docs = spec.param_docs()
    assert all(doc for _, doc in docs.values()), f"{name}: every params field needs a one-line docstring: {docs}"
    assert "agg" in docs, f"{name}: params need an 'agg' field (one of {AGGS})"
    assert get_objective(name).params == spec.params_cls()
    assert spec.summary.strip(), name
    # label: non-empty, unique among objectives, for every discrete variant
    assert spec.label.strip() and spec.label == spec.label.strip(), name
    others = {s.label: s.name for s in OBJECTIVES.values() if s.name != name}
    assert spec.label not in others, f"{name}: label {spec.label!r} is also {others.get(spec.label)!r}'s"
    other_labels = {s.label_for(v) for s in OBJECTIVES.values() if s.name != name for v in variant_grid(s.name)}
    for variant in variant_grid(name):
        label = spec.label_for(variant)
        assert label.startswith(spec.label) and 0 < len(label) <= MAX_LABEL and label.isprintable(), (name, label)
        assert label not in other_labels, f"{name}: method label {label!r} is also another objective's"
    assert spec.label_for({}) == spec.label_for(dataclasses.asdict(spec.params_cls())), name
    options = discrete_options(name)
    for part in spec.label_parts:
        if part.texts:  # listed texts must cover every allowed value (no ' (<value>)' fallback by accident)
            listed = [value for value, _ in part.texts]
            assert sorted(map(repr, options.get(part.param, listed))) == sorted(map(repr, listed)), (name, part)
    # clipfrac_level: consistent with the metrics the loss reports
    assert spec.clipfrac_level in (None, "token", "seq"), name
    results = variant_metrics(name)
    if spec.clipfrac_level is not None:
        for params, metrics in results:
            assert "actor/pg_clipfrac" in metrics, f"{name} {params}: clipfrac_level set but no actor/pg_clipfrac"
            own = [k for k in CLIPFRAC_KEYS if k in metrics]
            assert own in ([], [f"actor/clipfrac_{spec.clipfrac_level}"]), (name, params, own)
    else:
        always_pg = all("actor/pg_clipfrac" in m for _, m in results)
        ever_own = any(k in m for _, m in results for k in CLIPFRAC_KEYS)
        assert not always_pg or ever_own, (f"{name}: reports actor/pg_clipfrac but declares no clipfrac_level, "
                                           "so actor/clipfrac_token and actor/clipfrac_seq would be logged as 0")
    # sequence_term: one J_i(A_i) per response iff declared
    for variant in variant_grid(name):
        for agg in AGGS:
            params = {**variant, "agg": agg}
            assert depends_only_on_response_advantages(name, params) == spec.sequence_term, (
                f"{name} {params}: sequence_term={spec.sequence_term} but the gradient "
                f"{'depends on' if spec.sequence_term else 'ignores'} per-token advantages")
