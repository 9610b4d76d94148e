"""Loading a Qwen3 directory without transformers gives what the transformers load gives.

Parameters (names, order, tying, padding row), dtype, logits, gradients and tokenization of
policy/lean_checkpoint.py against ``AutoModelForCausalLM``/``AutoTokenizer`` on the
same saved directory; what is refused (and falls back to transformers); a whole trainer run
identical either way; and a trial process that never imports transformers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

from evaluators.tasks import VOCAB_CHARS
from trainers.local import trainer as trainer_module
from policy.fast_qwen3 import LeanQwen3
from policy.lean_checkpoint import LeanTokenizer, Qwen3Settings, Qwen3Weights, lean_loadable
from policy.model import load_policy
from policy.rollout import Rollout, left_pad, score
from trainers.local.model import build_char_tokenizer

REPO = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")


def save_qwen3(directory: Path, *, tied: bool = True, shard: bool = False, **extra) -> Path:
    tok = build_char_tokenizer()
    shapes = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=16)
    if not tied:
        shapes.update(hidden_size=32, head_dim=24, rope_theta=1_000_000.0)
    config = Qwen3Config(vocab_size=len(tok), num_hidden_layers=2, max_position_embeddings=128,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None,
                         tie_word_embeddings=tied, initializer_range=0.2, **shapes, **extra)
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).save_pretrained(directory, max_shard_size="40KB" if shard else "5GB")
    tok.save_pretrained(directory)
    return directory


@pytest.fixture(params=["tied", "untied-sharded"])
def saved(request, tmp_path):
    return save_qwen3(tmp_path / request.param, tied=request.param == "tied", shard=request.param != "tied")


def test_parameters_match_the_transformers_load(saved):
    lean, _ = load_policy(saved, CPU, "float32")
    hf, _ = load_policy(saved, CPU, "float32", lean=False)
    assert isinstance(lean, Qwen3Weights) and isinstance(hf, Qwen3ForCausalLM)
    assert [n for n, _ in lean.named_parameters()] == [n for n, _ in hf.named_parameters()]  # optimizer order
    lean_state, hf_state = lean.state_dict(), hf.state_dict()
    assert list(lean_state) == list(hf_state)
    for key, value in hf_state.items():
        assert torch.equal(lean_state[key], value), key
    tied = hf.config.tie_word_embeddings
    assert (lean.lm_head.weight is lean.model.embed_tokens.weight) == tied
    assert lean.model.embed_tokens.padding_idx == hf.model.embed_tokens.padding_idx == 0
    if "sharded" in saved.name:
        assert (saved / "model.safetensors.index.json").exists()


def test_dtype_is_applied(saved):
    lean, _ = load_policy(saved, CPU, "bfloat16")
    hf, _ = load_policy(saved, CPU, "bfloat16", lean=False)
    assert {p.dtype for p in lean.parameters()} == {torch.bfloat16}
    assert all(torch.equal(a, b) for a, b in zip(lean.parameters(), hf.parameters()))


def _rollout(tok) -> Rollout:
    prompts = ["12+7=", "(3*4)-5=", "9="]
    responses = ["<think>19</think>", "7", "<answer>9</answer>"]
    p_ids, p_mask = left_pad([tok.encode(p) for p in prompts], tok.pad_token_id, CPU)
    r = [tok.encode(x) + [tok.eos_token_id] for x in responses]
    width = max(map(len, r))
    r_ids = torch.tensor([x + [tok.pad_token_id] * (width - len(x)) for x in r])
    r_mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in r])
    return Rollout(p_ids, p_mask, r_ids, r_mask, torch.zeros(r_ids.shape))


def test_logits_and_gradients_match(saved):
    lean, tok = load_policy(saved, CPU, "float32")
    hf, _ = load_policy(saved, CPU, "float32", lean=False)
    ro = _rollout(tok)
    lean_lp, lean_ent = score(lean, ro, temperature=1.0)
    hf_lp, hf_ent = score(hf, ro, temperature=1.0)  # the same lean forward over the HF module's parameters
    assert torch.equal(lean_lp, hf_lp) and torch.equal(lean_ent, hf_ent)
    (lean_lp * ro.response_mask).sum().backward()
    (hf_lp * ro.response_mask).sum().backward()
    for (name, a), b in zip(lean.named_parameters(), hf.parameters()):
        assert torch.equal(a.grad, b.grad), name
    if not lean.config.tie_word_embeddings:  # padding row of the embedding: no gradient, as in HF
        assert ro.prompt_mask.min() == 0 and lean.model.embed_tokens.weight.grad[0].abs().sum() == 0

    # and the Hugging Face module's own forward agrees with the lean forward on the lean weights
    ids = torch.cat([ro.prompt_ids, ro.response_ids], 1)
    mask = torch.cat([ro.prompt_mask, ro.response_mask], 1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        want = hf(input_ids=ids, attention_mask=mask, position_ids=positions).logits
        lean_fwd = LeanQwen3(lean)
        got = lean_fwd.head(lean_fwd.hidden(ids, mask, positions))
    real = mask.bool()
    torch.testing.assert_close(got[real], want[real], rtol=1e-4, atol=1e-4)


def test_tokenizer_matches_the_transformers_tokenizer(saved):
    _, lean = load_policy(saved, CPU, "float32")
    _, hf = load_policy(saved, CPU, "float32", lean=False)
    assert isinstance(lean, LeanTokenizer)
    assert (lean.eos_token_id, lean.pad_token_id, len(lean)) == (hf.eos_token_id, hf.pad_token_id, len(hf))
    g = torch.Generator().manual_seed(0)
    chars = sorted(set(VOCAB_CHARS))
    for _ in range(50):
        text = "".join(chars[i] for i in torch.randint(len(chars), (int(torch.randint(1, 40, (1,), generator=g)),),
                                                       generator=g))
        assert lean.encode(text) == hf(text, add_special_tokens=False).input_ids == hf.encode(text, add_special_tokens=False)
        ids = torch.randint(len(hf), (30,), generator=g).tolist()  # special tokens included: skipped by both
        assert lean.decode(ids) == hf.decode(ids, skip_special_tokens=True)


def _edit_json(path: Path, **changes):
    raw = json.loads(path.read_text())
    raw.update(changes)
    path.write_text(json.dumps(raw))


@pytest.mark.parametrize("case", ["llama", "sliding-window", "tokenizer-class", "cleanup-spaces", "no-tokenizer-json",
                                  "rope-scaling"])
def test_what_it_cannot_run_falls_back_to_transformers(case, tmp_path):
    d = tmp_path / case
    if case == "llama":
        tok = build_char_tokenizer()
        LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=4, num_key_value_heads=2)).save_pretrained(d)
        tok.save_pretrained(d)
    elif case == "sliding-window":
        save_qwen3(d, use_sliding_window=True, sliding_window=8, max_window_layers=0)
    else:
        save_qwen3(d)
    if case == "tokenizer-class":
        _edit_json(d / "tokenizer_config.json", tokenizer_class="Qwen2Tokenizer")
    elif case == "cleanup-spaces":
        _edit_json(d / "tokenizer_config.json", clean_up_tokenization_spaces=True)
    elif case == "no-tokenizer-json":
        tok = build_char_tokenizer()
        (d / "tokenizer.json").unlink()
        tok.backend_tokenizer.save(str(d / "elsewhere.json"))
    elif case == "rope-scaling":
        _edit_json(d / "config.json", rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4})
    assert not lean_loadable(d)
    if case != "no-tokenizer-json":  # (transformers cannot load that one either)
        model, _ = load_policy(d, CPU, "float32")
        assert not isinstance(model, Qwen3Weights)


def test_old_style_config_reads_rope_theta():
    raw = {"vocab_size": 10, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
           "num_attention_heads": 2, "max_position_embeddings": 32, "rope_theta": 1e6, "rope_scaling": None,
           "model_type": "qwen3"}
    s = Qwen3Settings.from_json(raw)
    assert s.rope_parameters == {"rope_type": "default", "rope_theta": 1e6}
    assert (s.num_key_value_heads, s.head_dim, s.tie_word_embeddings) == (2, 4, True)
    assert LeanQwen3.supports_config(s)
    scaled = Qwen3Settings.from_json({**raw, "rope_scaling": {"type": "yarn", "factor": 4.0}})
    assert not LeanQwen3.supports_config(scaled)


def test_mismatched_weights_are_a_clear_error(tmp_path):
    d = save_qwen3(tmp_path / "m")
    _edit_json(d / "config.json", num_hidden_layers=3)  # weights hold 2 layers
    with pytest.raises(ValueError, match=r"m: safetensors do not match .*missing \['model\.layers\.2"):
        load_policy(d, CPU, "float32")
    _edit_json(d / "config.json", num_hidden_layers=2)
    bad = d / "tokenizer_config.json"
    _edit_json(bad, eos_token="<nope>")
    with pytest.raises(ValueError, match="eos_token '<nope>' is not in tokenizer.json"):
        load_policy(d, CPU, "float32")


def test_weights_have_no_forward(saved):
    lean, _ = load_policy(saved, CPU, "float32")
    with pytest.raises(TypeError, match="LeanQwen3"):
        lean(torch.zeros(1, 3, dtype=torch.long))


SMALL = ["trainer.steps=3", "trainer.eval_every=3", "trainer.prompts_per_step=2", "trainer.group_size=4",
         "trainer.max_new_tokens=24", "trainer.eval_k=1", "data.eval_size=4", "data.train_size=200",
         "local.warm_start.steps=150", f"local.warm_start.cache_dir={REPO / '.cache' / 'test_base_models'}",
         "algorithm.name=dhpo", "algorithm.params.mixing=entropy"]


def _history(monkeypatch, lean: bool):
    from trainers.config import load_trial_config

    monkeypatch.setattr(trainer_module, "load_policy", lambda path, device, dtype: load_policy(path, device, dtype, lean))
    history = []
    trainer_module.train(load_trial_config(None, SMALL), lambda s, m, c: history.append((s, m)), log=lambda s: None)
    return [(s, {k: v for k, v in m.items() if not k.startswith("perf/")}) for s, m in history]


def test_trainer_runs_identically_on_either_load(monkeypatch):
    lean = _history(monkeypatch, lean=True)
    hf = _history(monkeypatch, lean=False)
    assert [s for s, _ in lean] == [0, 1, 2, 3]
    assert lean == hf


@pytest.mark.slow
def test_a_trial_on_a_cached_base_never_imports_transformers_or_dynamo():
    """transformers (~1.4 CPU-s) and torch._dynamo (~0.9 CPU-s: nn init on the meta device, any
    torch.optim optimizer) stay out of a trial process."""
    from trainers.config import load_trial_config
    from trainers.local.data import load_data
    from trainers.local.warmstart import ensure_base_checkpoint

    cfg = load_trial_config(None, SMALL)
    ensure_base_checkpoint(cfg, load_data(cfg)[0], log=lambda s: None)  # built (with transformers) here if missing
    code = ("import sys; from trainers.config import load_trial_config; from trainers.local.trainer import train; "
            f"train(load_trial_config(None, {SMALL!r}), lambda *a: None, log=lambda s: None); "
            "print('transformers' in sys.modules, 'transformers.models.qwen3' in sys.modules, "
            "'torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"], out.stdout + out.stderr
