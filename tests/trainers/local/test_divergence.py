"""Diverged training is a failure: TrainingDiverged (right step, right quantity), parameters never poisoned.

Real divergences on the tiny config (measured, seed 0, CPU): trainer.lr=1e6 with weight_decay=0
makes the second update's gradients NaN (grad_norm, step 1); with the default weight_decay=0.1
the decay factor 1 - lr*wd = -99999 blows parameters up until the loss is NaN (loss, step 2).
"""

from __future__ import annotations

import pickle

import pytest
import torch

from test_local_trainer import SMALL
from trainers.api import TrainingDiverged
from trainers import config as config_module
from trainers.config import load_trial_config
from trainers.local import trainer as trainer_module
from trainers.local.trainer import LocalTrainer


def _params(trainer: LocalTrainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.model.parameters()]


def diverge(overrides):
    """Run until TrainingDiverged; return it, the reported steps, the trainer and the last pre-update snapshot.

    The snapshot is taken after every optimizer update (and at the start), so at the raise it
    holds the parameters and optimizer step count from just before the diverged update.
    """
    cfg = load_trial_config(None, SMALL + ["trainer.steps=8"] + overrides)
    trainer = LocalTrainer(cfg, log=lambda s: None)
    snapshot = {"params": _params(trainer), "updates": trainer.opt.steps_taken}
    real_step = trainer.opt.step

    def step_and_snapshot():
        real_step()
        snapshot.update(params=_params(trainer), updates=trainer.opt.steps_taken)

    trainer.opt.step = step_and_snapshot
    reported = []
    with pytest.raises(TrainingDiverged) as err:
        trainer.run(lambda step, metrics, ckpt: reported.append(step), None)
    return err.value, reported, trainer, snapshot


def assert_untouched(trainer, snapshot):
    params = list(trainer.model.parameters())
    assert all(torch.equal(p, q) for p, q in zip(params, snapshot["params"]))  # bit-identical, no NaN/inf
    assert all(bool(torch.isfinite(p).all()) for p in params)
    assert trainer.opt.steps_taken == snapshot["updates"]


@pytest.mark.parametrize("overrides,step,what", [
    (["trainer.lr=1e6", "trainer.weight_decay=0"], 1, "grad_norm"),
    (["trainer.lr=1e6"], 2, "loss"),
], ids=["grad_norm", "loss"])
def test_huge_lr_diverges_before_the_update(overrides, step, what):
    err, reported, trainer, snapshot = diverge(overrides)
    assert (err.step, err.what) == (step, what)
    assert reported == list(range(step))  # step 0 (base eval) and every finished step, not the diverged one
    assert str(err) == f"diverged at step {step}: non-finite {what} (nan)"
    assert isinstance(err, RuntimeError)
    assert_untouched(trainer, snapshot)


def test_nan_loss_raises_before_backward_and_update(monkeypatch):
    real = config_module.get_objective  # what AlgorithmConfig.objective() builds the trainer's objective with

    def nan_objective(*args, **kwargs):
        objective = real(*args, **kwargs)

        class Nan:
            name = objective.name

            def __call__(self, batch):
                loss, metrics = objective(batch)
                return loss * float("nan"), metrics
        return Nan()

    monkeypatch.setattr(config_module, "get_objective", nan_objective)
    err, reported, trainer, snapshot = diverge([])
    assert (err.step, err.what, reported) == (1, "loss", [0])
    assert snapshot["updates"] == 0  # no update ever ran: the base model's parameters
    assert all(p.grad is None for p in trainer.model.parameters())  # caught before backward
    assert_untouched(trainer, snapshot)


def test_non_finite_logged_metric_is_named(monkeypatch):
    real = trainer_module.score

    def nan_entropy(*args, **kwargs):  # the loss (grpo) does not use entropy: only the metric goes NaN
        log_probs, entropy = real(*args, **kwargs)
        return log_probs, torch.full_like(entropy, float("inf"))

    monkeypatch.setattr(trainer_module, "score", nan_entropy)
    err, reported, trainer, snapshot = diverge(["algorithm.name=grpo"])
    assert (err.step, err.what) == (1, "actor/entropy")
    assert "non-finite actor/entropy" in str(err)
    assert_untouched(trainer, snapshot)


def test_training_diverged_survives_pickling():
    """Ray ships a trial's exception to the driver by pickling it."""
    err = pickle.loads(pickle.dumps(TrainingDiverged(12, "grad_norm", float("inf"))))
    assert (err.step, err.what, err.value) == (12, "grad_norm", float("inf"))
    assert str(err) == "diverged at step 12: non-finite grad_norm (inf)"
