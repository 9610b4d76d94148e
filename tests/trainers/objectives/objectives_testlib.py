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

# Every objective and every option (aggregation is crossed in ``configs``).
OPTIONS: list[tuple[str, dict]] = [
    ("grpo", {}),
    ("grpo", {"eps_high": 0.28}),
    ("gspo", {}),
    ("gspo", {"eps_low": 0.2, "eps_high": 0.28}),
    ("gmpo", {}),
    ("gmpo", {"clip_in_log_space": True}),
    ("cispo", {}),
    ("sapo", {}),
    *[("sspo", {"gate": g}) for g in GATES],
    *[("dhpo", {"mixing": m, "clip_mode": c, "entropy_norm": n})
      for m in ("averaged", "entropy") for c in ("branch", "unified") for n in ("batch", "sequence")],
]


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
