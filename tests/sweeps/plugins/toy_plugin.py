"""A toy trainer backend and a toy generator, each added by one registration: the registries' litmus.

Imported through ``SWEEP_PLUGINS=toy_plugin`` (with this folder on PYTHONPATH) by every process of a sweep:
nothing of the platform names them. tests/sweeps/test_sweep_plugins.py runs them through `sweep run` and `sweep eval`.
The backend reports a few steps with the contract's metric keys and writes a checkpoint at the last one;
the generator answers every prompt with the same marked answer.
"""

from __future__ import annotations

import json
from pathlib import Path

from contract.metrics import ENTROPY, RESPONSE_LENGTH_MEAN, REWARD_MEAN, VAL_AVG, val_key
from evaluators.generators import GeneratorBackend, register_generator
from evaluators.sampling import Sample
from trainers.backends import Backend, register_backend

TOY_ANSWER = "<answer>7</answer>"
STATE = "toy.json"


def train(config, report, resume_from=None, workdir=None, log=print, storage_dir=None, verdicts=None) -> dict:
    accuracy = {val_key(b): 0.1 * (i + 1) for i, b in enumerate(config.data.benchmarks)}
    accuracy[VAL_AVG] = sum(accuracy.values()) / len(accuracy)
    report(0, dict(accuracy), None)
    for step in range(1, config.trainer.steps + 1):
        metrics = {ENTROPY: 1.0 / step, RESPONSE_LENGTH_MEAN: 10.0 + step, REWARD_MEAN: 0.1 * step}
        checkpoint = None
        if step == config.trainer.steps:
            metrics.update(accuracy)
            checkpoint = Path(workdir) / f"toy_{step}"
            checkpoint.mkdir(parents=True)
            (checkpoint / STATE).write_text(json.dumps({"step": step, "seed": config.seed}))
        report(step, metrics, checkpoint)
    return accuracy


def is_checkpoint(path) -> bool:
    return (Path(path) / STATE).is_file()


def export_hf(checkpoint, out_dir, trial_config, log) -> None:
    (Path(out_dir) / "config.json").write_text(json.dumps({"model_type": "toy", "max_position_embeddings": 64}))


class ToyGenerator:
    def generate(self, prompts, params, **_) -> list[list[Sample]]:
        return [[Sample(TOY_ANSWER, 3, False) for _ in range(params.n)] for _ in prompts]

    def close(self) -> None:
        pass


def build(model_dir, cfg, chat: bool) -> ToyGenerator:
    return ToyGenerator()


register_backend(Backend("toy", train, "a test's toy backend", is_checkpoint=is_checkpoint, export_hf=export_hf,
                         checkpoints="a toy checkpoint (toy.json)"))
register_generator(GeneratorBackend("toy_gen", f"{__name__}:build", "a test's toy generator"))
