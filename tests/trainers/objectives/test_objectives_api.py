"""The objective zoo's public API: registry, get_objective, paper defaults, return types, errors."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from objectives_testlib import configs, evaluate, random_batch
from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective

BUILT_IN = ("grpo", "gspo", "gmpo", "cispo", "sapo", "sspo", "dhpo")
ALL = tuple(OBJECTIVES)  # every registered objective (test_objectives_registry checks each is complete)


def test_registry_lists_every_family():
    assert set(BUILT_IN) <= set(OBJECTIVES)
    for name, spec in OBJECTIVES.items():
        assert spec.name == name
        assert dataclasses.is_dataclass(spec.params_cls)
        assert callable(spec.loss_fn)
        docs = spec.param_docs()
        assert "agg" in docs
        assert all(doc for _, doc in docs.values()), f"{name}: every field needs a one-line docstring"


def test_brief_example_call():
    fn = get_objective("sspo", gate="atanlog", tau_pos=0.5, tau_neg=0.6, agg="seq-mean-token-mean")
    assert fn.name == "sspo"
    assert (fn.params.gate, fn.params.tau_pos, fn.params.tau_neg) == ("atanlog", 0.5, 0.6)


# Paper defaults: DHPO App. D, SSPO App. A ((tau_neg, tau_pos) = (0.6, 0.5)), SAPO (1.0, 1.05).
DEFAULTS = {
    "grpo": {"eps_low": 0.2, "eps_high": 0.2, "agg": "seq-mean-token-mean"},
    "gspo": {"eps_low": 3e-4, "eps_high": 4e-4, "agg": "seq-mean-token-mean"},
    "gmpo": {"eps_low": 0.4, "eps_high": 0.4, "clip_in_log_space": False, "agg": "seq-mean-token-mean"},
    "cispo": {"eps_low": 10.0, "eps_high": 0.2, "agg": "seq-mean-token-mean"},
    "sapo": {"tau_pos": 1.0, "tau_neg": 1.05, "agg": "seq-mean-token-mean"},
    "sspo": {"gate": "atanlog", "tau_pos": 0.5, "tau_neg": 0.6, "agg": "seq-mean-token-mean"},
    "dhpo": {"mixing": "averaged", "clip_mode": "branch", "entropy_norm": "batch",
             "eps_low_token": 0.2, "eps_high_token": 0.28, "eps_low_seq": 0.2, "eps_high_seq": 0.28,
             "eps_low": 0.2, "eps_high": 0.28, "agg": "seq-mean-token-mean"},
}


def test_paper_defaults_cover_every_objective():
    assert set(DEFAULTS) == set(OBJECTIVES), "add the new objective's paper defaults to DEFAULTS"


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_paper_defaults(name):
    params = get_objective(name).params
    assert dataclasses.asdict(params) == DEFAULTS[name]
    assert dataclasses.asdict(OBJECTIVES[name].params_cls()) == DEFAULTS[name]


@pytest.mark.parametrize("name,params", configs())
def test_loss_is_scalar_and_metrics_are_floats(name, params):
    lp, old, adv, mask, ent = random_batch([5, 3, 4], 5, seed=1, dtype=torch.float32)
    leaf = lp.clone().requires_grad_(True)
    loss, metrics = get_objective(name, **params)(PolicyBatch(leaf, old, adv, mask, ent))
    assert isinstance(loss, torch.Tensor) and loss.dim() == 0 and loss.dtype == torch.float32
    assert loss.requires_grad
    assert isinstance(metrics, dict) and metrics
    assert all(isinstance(k, str) and type(v) is float and math.isfinite(v) for k, v in metrics.items())
    for key in ("actor/ppo_kl", "actor/ratio_mean", "actor/ratio_min", "actor/ratio_max"):
        assert key in metrics
    if OBJECTIVES[name].clipfrac_level is not None or name == "dhpo":
        assert "actor/pg_clipfrac" in metrics
    if name == "dhpo":
        assert "actor/mix_weight" in metrics
        if params["clip_mode"] == "branch":
            assert {"actor/clipfrac_token", "actor/clipfrac_seq"} <= set(metrics)


def test_loss_is_minus_objective_on_policy():
    """On-policy every surrogate equals mean A (SAPO: (2 / tau) A), so loss = -that."""
    lp, _, _, mask, ent = random_batch([3, 2], 3, seed=2)
    adv = torch.tensor([0.7, -0.3], dtype=torch.float64)
    for name in ("grpo", "gspo", "gmpo", "dhpo", "sspo"):
        loss, _, _ = evaluate(name, {}, lp, lp, adv, mask, ent)
        assert loss.item() == pytest.approx(-(0.7 - 0.3) / 2, abs=1e-12), name
    loss, _, _ = evaluate("sapo", {"tau_pos": 2.0, "tau_neg": 4.0}, lp, lp, adv, mask, ent)
    assert loss.item() == pytest.approx(-(0.7 * 2 / 2.0 - 0.3 * 2 / 4.0) / 2, abs=1e-12)


def test_ppo_kl_and_ratio_stats():
    lp, old, adv, mask, ent = random_batch([4, 2], 4, seed=3)
    _, _, m = evaluate("grpo", {}, lp, old, adv, mask, ent)
    u = (lp - old)[mask > 0]
    assert m["actor/ppo_kl"] == pytest.approx((-u).mean().item(), abs=1e-12)
    assert m["actor/ratio_mean"] == pytest.approx(u.exp().mean().item(), abs=1e-12)
    assert m["actor/ratio_min"] == pytest.approx(u.exp().min().item(), abs=1e-12)
    assert m["actor/ratio_max"] == pytest.approx(u.exp().max().item(), abs=1e-12)


# ---- errors: ValueError naming the parameter and the allowed range/values ----


def _raises(match_all, fn, *args, **kwargs):
    with pytest.raises(ValueError) as err:
        fn(*args, **kwargs)
    msg = str(err.value)
    for piece in match_all:
        assert piece in msg, f"{piece!r} not in {msg!r}"
    return msg


def test_unknown_objective():
    msg = _raises(["objective", "'grpp'", "grpo", "dhpo"], get_objective, "grpp")
    assert "did you mean 'grpo'" in msg


@pytest.mark.parametrize("name,key", [("grpo", "eps"), ("sspo", "temperature"), ("dhpo", "clip_ratio")])
def test_unknown_parameter(name, key):
    _raises([f"{name}.{key}", "unknown parameter", "agg"], get_objective, name, **{key: 1})


def test_unknown_parameter_suggests_close_match():
    assert "did you mean 'eps_high'" in _raises(["grpo.eps_hgh"], get_objective, "grpo", eps_hgh=0.3)


@pytest.mark.parametrize("name,key", [
    *[(n, k) for n in ("grpo", "gspo", "gmpo", "cispo") for k in ("eps_low", "eps_high")],
    *[("dhpo", k) for k in ("eps_low_token", "eps_high_token", "eps_low_seq", "eps_high_seq", "eps_low", "eps_high")],
    *[(n, k) for n in ("sapo", "sspo") for k in ("tau_pos", "tau_neg")],
])
@pytest.mark.parametrize("value", [0, 0.0, -0.1, float("nan"), float("inf"), True, "0.2"])
def test_nonpositive_or_invalid_ranges(name, key, value):
    _raises([f"{name}.{key}", "> 0", repr(value)], get_objective, name, **{key: value})


@pytest.mark.parametrize("name,key,allowed", [
    ("sspo", "gate", ["atanlog", "siglog", "expatan", "expsig", "gumbel"]),
    ("dhpo", "mixing", ["averaged", "entropy"]),
    ("dhpo", "clip_mode", ["branch", "unified"]),
    ("dhpo", "entropy_norm", ["batch", "sequence"]),
    *[(n, "agg", ["seq-mean-token-mean", "token-mean"]) for n in ALL],
])
def test_unknown_choice(name, key, allowed):
    _raises([f"{name}.{key}", "'bogus'", *allowed], get_objective, name, **{key: "bogus"})


def test_gmpo_clip_in_log_space_must_be_bool():
    _raises(["gmpo.clip_in_log_space", "true or false"], get_objective, "gmpo", clip_in_log_space="yes")


def test_dhpo_entropy_mixing_needs_entropy():
    lp, old, adv, mask, _ = random_batch([3, 2], 3)
    fn = get_objective("dhpo", mixing="entropy")
    _raises(["entropy", "None", "[B, T]"], fn, PolicyBatch(lp.requires_grad_(), old, adv, mask, None))
    get_objective("dhpo", mixing="averaged")(PolicyBatch(lp, old, adv, mask, None))  # not needed there


@pytest.mark.parametrize("name", ALL)
def test_shape_mismatches(name):
    lp, old, adv, mask, ent = random_batch([3, 2], 3)
    fn = get_objective(name, mixing="entropy") if name == "dhpo" else get_objective(name)
    _raises(["log_probs", "[B, T]", "(6,)"], fn, PolicyBatch(lp.reshape(-1), old, adv, mask, ent))
    _raises(["old_log_probs", "(2, 3)", "(2, 2)"], fn, PolicyBatch(lp, old[:, :2], adv, mask, ent))
    _raises(["response_mask", "(2, 3)", "(3, 2)"], fn, PolicyBatch(lp, old, adv, mask.T, ent))
    _raises(["advantages", "[B]", "[B, T]", "(3,)"], fn, PolicyBatch(lp, old, torch.zeros(3), mask, ent))
    _raises(["advantages", "(2, 2)"], fn, PolicyBatch(lp, old, torch.zeros(2, 2), mask, ent))
    _raises(["entropy", "(2, 3)", "(2, 4)"], fn, PolicyBatch(lp, old, adv, mask, torch.zeros(2, 4)))


def test_objective_is_reusable_and_pure():
    """Calling twice gives the same result and does not modify the inputs."""
    lp, old, adv, mask, ent = random_batch([4, 3], 4, seed=5)
    before = [t.clone() for t in (lp, old, adv, mask, ent)]
    a = evaluate("dhpo", {"mixing": "entropy"}, lp, old, adv, mask, ent)
    b = evaluate("dhpo", {"mixing": "entropy"}, lp, old, adv, mask, ent)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and a[2] == b[2]
    for x, y in zip(before, (lp, old, adv, mask, ent)):
        assert torch.equal(x, y)
