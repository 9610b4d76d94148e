"""The built-in trainer on a CUDA GPU (local.device: cuda), in float32 and bf16.

Skipped without a GPU (CI has none); on a GPU host: `pytest tests/trainers/local/test_local_cuda.py`.
The CPU tests pin the numbers; these check what only a GPU run can show: the base is built and
trained there, sampling streams stay on the CPU generator, bf16 weights train with finite metrics,
a checkpoint resumes on the GPU bit-exactly, and GRPO lifts validation accuracy as on the CPU.
"""

from __future__ import annotations

import math

import pytest
import torch

from contract.metrics import COMPUTE_GPU_S, COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED, COMPUTE_WALL_S
from trainers.config import load_trial_config
from trainers.local.trainer import LocalTrainer, train

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

SMALL = ["trainer.steps=4", "trainer.eval_every=2", "trainer.prompts_per_step=2", "trainer.group_size=4",
         "trainer.max_new_tokens=24", "trainer.eval_k=1", "data.eval_size=4", "data.train_size=200",
         "local.warm_start.steps=150", "local.device=cuda"]


def run(overrides, tmp_path, **kw):
    history = []
    cfg = load_trial_config(None, SMALL + [f"local.warm_start.cache_dir={tmp_path / 'bases'}", *overrides])
    train(cfg, lambda step, metrics, ckpt: history.append((step, dict(metrics), ckpt)), log=lambda s: None, **kw)
    return history


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_trains_on_the_gpu_with_finite_metrics(dtype, tmp_path):
    cfg = load_trial_config(None, SMALL + [f"local.warm_start.cache_dir={tmp_path / 'bases'}", f"local.dtype={dtype}",
                                           "algorithm.name=dhpo", "algorithm.params.mixing=entropy"])
    trainer = LocalTrainer(cfg, log=lambda s: None)
    param = next(trainer.model.parameters())
    assert param.device.type == "cuda" and param.dtype == getattr(torch, dtype)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    history = run([f"local.dtype={dtype}", "algorithm.name=dhpo", "algorithm.params.mixing=entropy"], tmp_path)
    assert [s for s, _, _ in history] == [0, 1, 2, 3, 4]
    for step, metrics, _ in history:
        assert all(math.isfinite(v) for v in metrics.values()), (step, metrics)
    trained = [m for s, m, _ in history if s]
    assert all(0.0 <= m["actor/mix_weight"] <= 1.0 for m in trained)
    assert any(m["actor/grad_norm"] > 0 for m in trained)
    trainer.run(lambda *a: None, None)  # the same trial in this process: the weights move on the GPU
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))


def test_resume_on_the_gpu_continues_the_run(tmp_path):
    full = run(["trainer.checkpoint_every=2"], tmp_path, workdir=tmp_path / "full")
    ckpt = next(c for s, _, c in full if s == 2 and c)
    resumed = run(["trainer.checkpoint_every=2"], tmp_path, workdir=tmp_path / "resumed", resume_from=ckpt)
    assert [s for s, _, _ in resumed] == [3, 4]
    same = lambda m: {k: v for k, v in m.items() if not k.startswith("perf/")}  # noqa: E731
    assert [same(m) for _, m, _ in resumed] == [same(m) for _, m, _ in full[3:]]  # as on the CPU: bit-exact
    tokens = lambda m: (m[COMPUTE_TOKENS_GENERATED], m[COMPUTE_TOKENS_TRAINED])  # noqa: E731
    assert [tokens(m) for _, m, _ in resumed] == [tokens(m) for _, m, _ in full[3:]]  # the sums continue
    for _, m, _ in full[1:] + resumed:
        assert m[COMPUTE_GPU_S] == m[COMPUTE_WALL_S] > 0  # on cuda, outside a Ray slot: one whole GPU

def test_grpo_lifts_validation_accuracy_on_the_gpu(tmp_path):
    """The CPU's learning check (tests/trainers/local/test_local_trainer.py), on the default base built on the GPU."""
    history = []
    cfg = load_trial_config(None, ["trainer.steps=80", "trainer.eval_every=20", "seed=0", "algorithm.name=grpo",
                                   "local.device=cuda", f"local.warm_start.cache_dir={tmp_path / 'bases'}"])
    train(cfg, lambda step, metrics, ckpt: history.append((step, dict(metrics))), log=lambda s: None)
    evals = {step: m["val/avg/acc"] for step, m in history if "val/avg/acc" in m}
    assert sorted(evals) == [0, 20, 40, 60, 80]
    assert (evals[60] + evals[80]) / 2 >= evals[0] + 0.05, evals
