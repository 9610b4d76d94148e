"""The newcomer test: an objective defined outside the repository's objective modules and added
with ``register_objective`` alone works everywhere the platform looks objectives up:

    (a) sweep specs: ``{algorithm: toy}`` loads and its trials carry the toy's method label;
    (b) the local trainer logs its clip fraction at the level the spec declares;
    (c) the verl adapter folds rollout IS weights per response iff the spec declares sequence_term;
and it passes the same completeness check as the built-ins (test_objectives_registry).

The toy is written into a temporary module, registered in two flavours (per-token terms with a
token-level clip; one term per response with a sequence-level clip) and unregistered afterwards.
"""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
import torch

from objectives_testlib import check_objective_complete, random_batch
from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective, register_objective, unregister_objective

TOY_MODULE = textwrap.dedent('''
    """Toy objective: a clipped importance ratio times the advantage, per token or per response."""

    from dataclasses import dataclass

    import torch

    from trainers.objectives import LabelPart, ObjectiveSpec
    from trainers.objectives.base import (
                                          aggregate_sequences, aggregate_tokens, check_agg, check_choice, check_positive, prepare, ratio_metrics,
                                          to_floats,
                                          )


    @dataclass(frozen=True)
    class ToyParams:
        eps: float = 0.2
        """Clip range of the ratio: [1 - eps, 1 + eps]."""
        flavour: str = "plain"
        """Only changes the method label: 'plain' or 'fancy'."""
        agg: str = "seq-mean-token-mean"
        """'seq-mean-token-mean' or 'token-mean'."""

        def __post_init__(self):
            check_positive("eps", self.eps)
            check_choice("flavour", self.flavour, ("plain", "fancy"))
            check_agg(self.agg)


    def toy_token_loss(batch, params):
        p = prepare(batch)
        ratio = p.log_ratio.exp()
        clipped = ratio.clamp(1 - params.eps, 1 + params.eps)
        loss = aggregate_tokens(-torch.minimum(ratio * p.adv_token, clipped * p.adv_token), p, params.agg)
        metrics = ratio_metrics(p, p.log_ratio, ratio)
        metrics["actor/pg_clipfrac"] = p.count_mean(p.valid & (ratio != clipped))
        return loss, to_floats(metrics)


    def toy_sequence_loss(batch, params):
        p = prepare(batch)
        seq_ratio = p.seq_mean(p.log_ratio).exp()  # one ratio, one term J_i per response
        clipped = seq_ratio.clamp(1 - params.eps, 1 + params.eps)
        loss = aggregate_sequences(-torch.minimum(seq_ratio * p.adv_seq, clipped * p.adv_seq), p, params.agg)
        metrics = ratio_metrics(p, p.log_ratio)
        metrics["actor/pg_clipfrac"] = p.count_mean(p.valid & (seq_ratio != clipped)[:, None])
        return loss, to_floats(metrics)


    LABEL_PARTS = (LabelPart("flavour", {"plain": "", "fancy": " (fancy)"}),)
    TOKEN = ObjectiveSpec("toy", toy_token_loss, ToyParams, "toy: clipped token ratio", label="Toy",
                          clipfrac_level="token", sequence_term=False, label_parts=LABEL_PARTS)
    SEQUENCE = ObjectiveSpec("toy", toy_sequence_loss, ToyParams, "toy: clipped sequence ratio", label="Toy",
                             clipfrac_level="seq", sequence_term=True, label_parts=LABEL_PARTS)
''')


@pytest.fixture(params=["TOKEN", "SEQUENCE"])
def toy(request, tmp_path, monkeypatch):
    """The toy's spec, registered for the duration of the test."""
    (tmp_path / "toy_objective.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("toy_objective", None)
    module = importlib.import_module("toy_objective")
    assert "toy" not in OBJECTIVES
    spec = register_objective(getattr(module, request.param))
    try:
        yield spec
    finally:
        unregister_objective("toy")
        sys.modules.pop("toy_objective", None)
    assert "toy" not in OBJECTIVES


def clipping_batch():
    """Off-policy enough that a 0.2 clip binds for some tokens / responses, not all."""
    return random_batch([6, 4, 5, 2], 6, seed=21, scale=0.5, dtype=torch.float32)


def test_toy_is_complete(toy):
    check_objective_complete(toy)


def test_a_sweep_spec_with_the_toy_loads(toy, tmp_path):
    from sweeps.specs.load import load_spec
    from trainers.config import ConfigError, load_trial_config

    path = tmp_path / "toy_sweep.yaml"
    path.write_text("name: toy-sweep\nvariants:\n"
                    "  - {algorithm: toy}\n"
                    "  - {algorithm: toy, flavour: fancy, eps: [0.1, 0.3]}\n"
                    "  - {algorithm: toy, eps: 0.25, label: My toy}\n")
    spec = load_spec(path, cwd=tmp_path)
    assert [t.method for t in spec.trials] == ["Toy", "Toy (fancy)", "Toy (fancy)", "My toy"]
    assert all(t.tags["algorithm"] == "toy" and t.trial_id.startswith("toy") for t in spec.trials)
    assert len({t.trial_id for t in spec.trials}) == 4
    assert spec.trials[1].config.algorithm.params == {"flavour": "fancy", "eps": 0.1}
    # the local trainer's config accepts it, and validates its parameters
    assert load_trial_config(None, ["algorithm.name=toy", "algorithm.params.eps=0.3"]).algorithm.name == "toy"
    with pytest.raises(ConfigError, match="toy.flavour"):
        load_trial_config(None, ["algorithm.name=toy", "algorithm.params.flavour=bland"])


def test_b_local_trainer_logs_the_clip_fraction_at_the_declared_level(toy):
    from trainers.local.trainer import _complete_metrics

    lp, old, adv, mask, ent = clipping_batch()
    _, metrics = get_objective("toy")(PolicyBatch(lp.requires_grad_(), old, adv, mask, ent))
    assert 0 < metrics["actor/pg_clipfrac"] < 1
    other = {"token": "seq", "seq": "token"}[toy.clipfrac_level]
    logged = _complete_metrics("toy", dict(metrics))
    assert logged[f"actor/clipfrac_{toy.clipfrac_level}"] == metrics["actor/pg_clipfrac"]
    assert logged[f"actor/clipfrac_{other}"] == 0.0
    assert logged["actor/pg_clipfrac"] == metrics["actor/pg_clipfrac"]


def test_c_verl_adapter_weights_per_response_iff_sequence_term(toy):
    pytest.importorskip("verl", reason="the verl side needs verl 0.9.1 (tests/trainers/verl_plugin require it)")
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, get_policy_loss_fn

    import trainers.verl_plugin as plugin
    from trainers.verl_plugin.registry import _weighted_advantages

    lp, old, adv, mask, _ = clipping_batch()
    adv_token = adv[:, None] * mask  # verl passes per-token advantages
    weights = torch.rand(lp.shape, generator=torch.Generator().manual_seed(22)) * 1.5 + 0.1
    m = mask.to(weights.dtype)
    geo_mean = torch.exp((torch.log(weights + 1e-10) * m).sum(-1) / (m.sum(-1) + 1e-8))
    per_response, per_token = adv_token * geo_mean[:, None], adv_token * weights
    assert not torch.allclose(per_response, per_token)
    folded = _weighted_advantages("toy", adv_token, mask, weights)
    torch.testing.assert_close(folded, per_response if toy.sequence_term else per_token)

    assert "zoo_toy" in plugin.register_zoo_losses()
    try:
        leaf = lp.clone().requires_grad_(True)
        loss, metrics = get_policy_loss_fn("zoo_toy")(old, leaf, adv_token, mask, loss_agg_mode="token-mean",
                                                       config=None, rollout_is_weights=weights)
        expected, expected_metrics = get_objective("toy", agg="token-mean")(
            PolicyBatch(lp, old, per_response if toy.sequence_term else per_token, mask))
        torch.testing.assert_close(loss, expected)
        assert metrics == expected_metrics
    finally:
        POLICY_LOSS_REGISTRY.pop("zoo_toy", None)
