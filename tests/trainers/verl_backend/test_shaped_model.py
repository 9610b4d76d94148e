"""Real model shapes with random weights (trainers/verl_backend/shaped_model.py) and ``verl.random_model``.

    .venv/bin/python -m pytest tests/trainers/verl_backend/test_shaped_model.py -q
"""

from __future__ import annotations

import hashlib

import pytest
import torch

from contract.errors import ConfigError
from trainers.config import TrialConfig
from trainers.verl_backend import assets, launch, shaped_model
from trainers.verl_backend.config import RANDOM_MODELS, needs_user_model, validate_verl_section

# A build in a second: the 0.6B shape's heads and layout, narrower and shallower.
SMALL = {"num_hidden_layers": 2, "vocab_size": 300, "hidden_size": 128, "intermediate_size": 256, "head_dim": 32}


def qwen3_parameters(s: dict) -> int:
    """Qwen3's parameter count from its config: tied embedding, per layer q/k/v/o, q/k norms, SwiGLU MLP and
    two RMSNorms, then the final norm."""
    q, kv = s["num_attention_heads"] * s["head_dim"], s["num_key_value_heads"] * s["head_dim"]
    layer = (s["hidden_size"] * (q + 2 * kv) + q * s["hidden_size"] + 2 * s["head_dim"]
             + 3 * s["hidden_size"] * s["intermediate_size"] + 2 * s["hidden_size"])
    return s["vocab_size"] * s["hidden_size"] + s["num_hidden_layers"] * layer + s["hidden_size"]


@pytest.mark.parametrize(("name", "total", "non_embedding_billions"),
                         [("qwen3-0.6b", 596_049_920, 0.44), ("qwen3-1.7b", 1_720_574_976, 1.4)])
def test_shapes_have_the_published_parameter_counts(name, total, non_embedding_billions):
    shape = shaped_model.SHAPES[name]
    assert shaped_model.parameter_count(shape) == qwen3_parameters(shape) == total
    # the model cards: Qwen3-0.6B "0.44B non-embedding", Qwen3-1.7B "1.4B non-embedding"
    non_embedding = total - shape["vocab_size"] * shape["hidden_size"]
    assert round(non_embedding / 1e9, 2 if non_embedding < 1e9 else 1) == non_embedding_billions


def test_build_is_the_shape_in_bfloat16_with_a_tokenizer_for_every_row(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = shaped_model.build(tmp_path, "qwen3-0.6b", log=lambda line: None, **SMALL)
    model = AutoModelForCausalLM.from_pretrained(where)
    tokenizer = AutoTokenizer.from_pretrained(where)
    assert model.dtype == torch.bfloat16 and type(model).__name__ == "Qwen3ForCausalLM"
    for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim"):
        assert getattr(model.config, key) == shaped_model.shape_of("qwen3-0.6b", **SMALL)[key]
    assert model.config.tie_word_embeddings and model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert sum(p.numel() for p in model.parameters()) == qwen3_parameters(shaped_model.shape_of("qwen3-0.6b", **SMALL))
    # random init: std ~0.02 (transformers' initializer_range), not zeros or a copy of another layer
    q0, q1 = (model.model.layers[i].self_attn.q_proj.weight.float() for i in (0, 1))
    assert 0.015 < q0.std().item() < 0.025 and not torch.equal(q0, q1)
    # the tokenizer: one id per embedding row, every id decodes, text is one token per character
    assert len(tokenizer) == 300 and all(tokenizer.decode([i]) for i in range(300))
    assert tokenizer.decode(tokenizer.encode("Q: 12+7=?", add_special_tokens=False)) == "Q: 12+7=?"
    assert tokenizer.eos_token == assets.IM_END and model.config.eos_token_id == tokenizer.eos_token_id
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "1+1"}], add_generation_prompt=True,
                                           tokenize=False)
    assert prompt.endswith("<|im_start|>assistant\n")
    inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    out = model.generate(**inputs, max_new_tokens=4, min_new_tokens=4, do_sample=True)
    new = out[0, inputs["input_ids"].shape[1]:]
    assert len(new) == 4 and len(tokenizer.decode(new)) >= 4  # whatever it samples, every token decodes


def test_build_is_reused_deterministic_and_keyed_by_seed_and_shape(tmp_path):
    quiet = {"log": lambda line: None}
    first = shaped_model.build(tmp_path / "a", "qwen3-0.6b", **quiet, **SMALL)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert shaped_model.build(tmp_path / "a", "qwen3-0.6b", **quiet, **SMALL) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp  # found, not rebuilt
    again = shaped_model.build(tmp_path / "b", "qwen3-0.6b", **quiet, **SMALL)
    digest = [hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest() for d in (first, again)]
    assert again.name == first.name and digest[0] == digest[1]
    assert shaped_model.model_dir(tmp_path, "qwen3-0.6b", seed=1, **SMALL).name != first.name
    assert shaped_model.model_dir(tmp_path, "qwen3-1.7b", **SMALL).name.startswith("qwen3-1.7b-random-")
    assert shaped_model.model_dir(tmp_path / "a", "qwen3-0.6b", **SMALL) == first
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.startswith(".")]  # no half-built copy left


def test_bad_names_are_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown model shape 'qwen3-0.5b'.*qwen3-0.6b.*qwen3-1.7b"):
        shaped_model.shape_of("qwen3-0.5b")
    with pytest.raises(ValueError, match=r"unknown fields \['layers'\]"):
        shaped_model.shape_of("qwen3-0.6b", layers=2)
    with pytest.raises(ValueError, match="vocab_size must be at least"):
        assets.build_tokenizer(vocab_size=10)


def _verl_trial(**verl) -> TrialConfig:
    cfg = TrialConfig()
    cfg.backend = "verl"
    cfg.trainer.prompts_per_step, cfg.trainer.group_size, cfg.trainer.updates_per_rollout = 8, 8, 1
    for key, value in {"device": "cuda", "rollout": "vllm", **verl}.items():
        setattr(cfg.verl, key, value)
    return cfg


def test_random_model_stands_for_model_path_and_is_checked():
    assert RANDOM_MODELS == tuple(shaped_model.SHAPES)  # the config's names are the builder's shapes
    cfg = _verl_trial(random_model="qwen3-0.6b")
    assert not needs_user_model(cfg.verl) and needs_user_model(_verl_trial().verl)
    validate_verl_section(cfg, "spec.yaml")  # a GPU trial with vLLM and no model.path: fine, it is built
    with pytest.raises(ConfigError, match=r"spec.yaml: missing required settings: model.path"):
        validate_verl_section(_verl_trial(), "spec.yaml")
    with pytest.raises(ConfigError, match=r"spec.yaml: verl.random_model: expected null or one of "
                                          r"\['qwen3-0.6b', 'qwen3-1.7b'\], got 'qwen3'"):
        validate_verl_section(_verl_trial(random_model="qwen3"), "spec.yaml")
    both = _verl_trial(random_model="qwen3-0.6b")
    both.model.path = "/ckpts/Qwen3-0.6B"
    with pytest.raises(ConfigError, match=r"verl.random_model: 'qwen3-0.6b' builds the model, and model.path = "
                                          r"'/ckpts/Qwen3-0.6B' names one too"):
        validate_verl_section(both, "spec.yaml")


def test_the_trial_builds_it_where_the_dry_run_says(tmp_path, monkeypatch):
    # the shape's registry entry narrowed to SMALL, so the trial's build takes a second
    monkeypatch.setitem(shaped_model.SHAPES, "qwen3-0.6b", shaped_model.shape_of("qwen3-0.6b", **SMALL))
    cfg = _verl_trial(random_model="qwen3-0.6b", cache_dir=str(tmp_path))
    planned = launch.planned_model_dir(cfg)
    assert planned == shaped_model.model_dir(tmp_path / "models", "qwen3-0.6b") and not planned.exists()
    assert launch.prepare_inputs(cfg, build=False).model_path == str(planned)
    assert not (tmp_path / "models").exists()  # the dry run builds nothing
    lines = []
    assert launch.base_model_dir(cfg, log=lines.append) == planned
    assert (planned / "config.json").is_file() and (planned / assets.ASSET_MARKER).is_file()
    assert lines and lines[0].startswith(f"building {planned.name}: ")
