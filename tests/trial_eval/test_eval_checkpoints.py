"""Tests for trial_eval.checkpoints: a local-trainer checkpoint becomes a Hugging Face directory whose
weights are the trained ones (logits equal), cached; unusable paths are clear errors.

The verl merge path runs end to end in tests/sweeps/test_sweep_verl_e2e.py (it needs a real verl
checkpoint)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from policy.model import load_policy
from trainers.config import load_trial_config
from trainers.local.checkpoint import read_state
from trainers.local.trainer import train
from trial_eval.checkpoints import TRIAL_FILE, CheckpointNotUsable, checkpoint_kind, materialize, read_trial_config

REPO = Path(__file__).resolve().parents[2]
SMALL = ["trainer.steps=2", "trainer.eval_every=2", "trainer.prompts_per_step=2", "trainer.group_size=4",
         "trainer.max_new_tokens=16", "trainer.eval_k=1", "data.eval_size=2", "data.train_size=200",
         "trainer.lr=1e-2", "local.warm_start.steps=150",
         f"local.warm_start.cache_dir={REPO / '.cache' / 'test_base_models'}"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(config, final checkpoint directory) of a 2-step local trial."""
    work = tmp_path_factory.mktemp("local_ckpt")
    cfg = load_trial_config(None, SMALL)
    saved = []
    train(cfg, lambda step, metrics, ckpt: saved.append(ckpt) if ckpt else None, workdir=work, log=lambda s: None)
    return cfg, saved[-1]


def logits(model, ids):
    from policy.fast_qwen3 import LeanQwen3

    mask = torch.ones_like(ids)
    fast = LeanQwen3(model, max_positions=ids.shape[1])
    return fast.head(fast.hidden(ids, mask, (mask.cumsum(-1) - 1), weights=fast.weights()))


def test_local_checkpoint_materializes_to_the_trained_weights(trained, tmp_path):
    cfg, ckpt = trained
    assert checkpoint_kind(ckpt) == "local"
    model_dir = materialize(ckpt, tmp_path, trial_config=cfg, log=lambda s: None)
    assert checkpoint_kind(model_dir) == "hf" and model_dir == tmp_path / "model"
    loaded, tokenizer = load_policy(model_dir, torch.device("cpu"), "float32")
    state = read_state(ckpt, "cpu")["model"]
    for name, tensor in loaded.state_dict().items():
        assert torch.equal(tensor, state[name]), name  # every trained parameter, bit for bit
    hf, _ = load_policy(model_dir, torch.device("cpu"), "float32", lean=False)  # the transformers load agrees
    ids = torch.tensor([tokenizer.encode("Q: 12+7=?")])
    assert torch.allclose(hf(input_ids=ids).logits, logits(loaded, ids), atol=1e-5)
    base_dir = cfg.local.warm_start.cache_dir
    base, _ = load_policy(sorted(Path(base_dir).glob("*/READY"))[0].parent, torch.device("cpu"), "float32")
    assert any(not torch.equal(a, b) for a, b in zip(base.state_dict().values(), loaded.state_dict().values()))


def test_materialize_is_cached_and_an_hf_dir_is_used_as_is(trained, tmp_path):
    cfg, ckpt = trained
    first = materialize(ckpt, tmp_path, trial_config=cfg, log=lambda s: None)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert materialize(ckpt, tmp_path, trial_config=cfg) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp  # not rebuilt
    assert materialize(first, tmp_path / "elsewhere") == first
    assert not list(tmp_path.glob(".model-*"))  # no temporary directory left behind


def test_trial_json_beside_a_checkpoint_is_its_config(trained, tmp_path):
    cfg, ckpt = trained
    assert read_trial_config(ckpt) is None
    (ckpt / TRIAL_FILE).write_text(json.dumps(cfg.to_dict()))
    try:
        assert read_trial_config(ckpt).to_dict() == cfg.to_dict()
        assert (materialize(ckpt, tmp_path, log=lambda s: None) / "config.json").is_file()  # no config argument needed
    finally:
        (ckpt / TRIAL_FILE).unlink()


def test_unusable_paths_say_what_was_expected(trained, tmp_path):
    with pytest.raises(CheckpointNotUsable, match="not a directory"):
        checkpoint_kind(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointNotUsable, match="config.json.*trainer_state.pt.*global_step_N"):
        checkpoint_kind(tmp_path / "empty")
    _, ckpt = trained
    with pytest.raises(CheckpointNotUsable, match="trial id"):  # a local checkpoint alone lacks its base's config
        materialize(ckpt, tmp_path / "out")
    (tmp_path / "verl" / "actor").mkdir(parents=True)
    with pytest.raises(CheckpointNotUsable, match="actor/huggingface/config.json"):
        materialize(tmp_path / "verl", tmp_path / "out2")
