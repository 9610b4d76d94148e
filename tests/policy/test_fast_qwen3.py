"""The lean Qwen3 forward and packed scoring compute what the Hugging Face module computes.

Values, cached decoding, sampling and gradients of policy/fast_qwen3.py + packing.py
against the unmodified ``Qwen3ForCausalLM`` forward (``lean=False``), on the tiny preset and on
a config shaped like a real Qwen3 checkpoint (explicit head_dim, untied head, large RoPE base).
"""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

from policy.fast_qwen3 import KVCache, LeanQwen3
from policy.packing import pack
from policy.rollout import Rollout, _pick, _positions, left_pad, sample, score

PAD, EOS, VOCAB = 0, 1, 23


def qwen3(kind: str, seed: int = 0) -> Qwen3ForCausalLM:
    shapes = {
        "tiny": dict(hidden_size=64, intermediate_size=192, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=16, tie_word_embeddings=True),
        "real-shaped": dict(hidden_size=32, intermediate_size=80, num_attention_heads=4, num_key_value_heads=2,
                            head_dim=24, tie_word_embeddings=False, rope_theta=1_000_000.0),
    }[kind]
    config = Qwen3Config(vocab_size=VOCAB, num_hidden_layers=2, max_position_embeddings=256, pad_token_id=PAD,
                         eos_token_id=EOS, bos_token_id=None, initializer_range=0.2, **shapes)
    torch.manual_seed(seed)
    return Qwen3ForCausalLM(config).eval()


def prompts(seed: int, groups: int = 4, group_size: int = 3) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    distinct = [torch.randint(2, VOCAB, (int(torch.randint(3, 12, (1,), generator=g)),), generator=g).tolist()
                for _ in range(groups)]
    return [p for p in distinct for _ in range(group_size)]


@pytest.fixture(params=["tiny", "real-shaped"])
def model(request):
    return qwen3(request.param)


def test_supports_only_what_it_implements():
    assert LeanQwen3.supports(qwen3("tiny"))
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=4, num_key_value_heads=2))
    assert not LeanQwen3.supports(llama)
    windowed = Qwen3ForCausalLM(Qwen3Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=2, use_sliding_window=True,
                                            sliding_window=8, max_window_layers=0))
    assert not LeanQwen3.supports(windowed)
    dropout = Qwen3ForCausalLM(Qwen3Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                           num_attention_heads=4, num_key_value_heads=2, attention_dropout=0.1))
    assert not LeanQwen3.supports(dropout)
    with pytest.raises(ValueError, match="does not support"):
        LeanQwen3(llama)


def test_prefill_logits_equal_the_module(model):
    ids, mask = left_pad(prompts(1), PAD, torch.device("cpu"))
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask, position_ids=_positions(mask)).logits
        fast = LeanQwen3(model)
        got = fast.head(fast.hidden(ids, mask, _positions(mask)))
    valid = mask.bool()
    torch.testing.assert_close(got[valid], expected[valid], atol=2e-5, rtol=1e-5)


def test_cached_decoding_equals_the_module(model):
    ids, mask = left_pad(prompts(2, group_size=1), PAD, torch.device("cpu"))
    fast = LeanQwen3(model)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, position_ids=_positions(mask), use_cache=True)
        hf_cache, attention, position = out.past_key_values, mask, _positions(mask)[:, -1]
        cache = KVCache(fast, ids.shape[0], ids.shape[1] + 10, mask, torch.float32, ids.device)
        weights = fast.weights()
        fast.hidden(ids, mask, _positions(mask), cache=cache, weights=weights)
        for _ in range(10):
            token = torch.randint(2, VOCAB, (ids.shape[0],), generator=g)
            attention = torch.cat([attention, torch.ones_like(attention[:, :1])], 1)
            position = position + 1
            out = model(input_ids=token[:, None], attention_mask=attention, position_ids=position[:, None],
                        past_key_values=hf_cache, use_cache=True)
            hf_cache = out.past_key_values
            torch.testing.assert_close(fast.decode(weights, token, position, cache), out.logits[:, -1],
                                       atol=5e-5, rtol=1e-5)


def _common_token(model, batch) -> int:
    """A token greedy decoding emits in many rows at different steps: a useful fake <eos>."""
    ro = sample(model, batch, max_new_tokens=16, eos_id=-1, pad_id=PAD, greedy=True, lean=False)
    counts = torch.bincount(ro.response_ids[:, 2:].flatten(), minlength=VOCAB)
    counts[PAD] = 0
    return int(counts.argmax())


def test_greedy_sampling_equals_the_module_with_groups_and_early_finishers(model):
    batch = prompts(3, groups=5, group_size=4) + prompts(4, groups=3, group_size=1)
    eos = _common_token(model, batch)
    kw = dict(max_new_tokens=16, eos_id=eos, pad_id=PAD, greedy=True)
    lean, hf = sample(model, batch, lean=True, **kw), sample(model, batch, lean=False, **kw)
    lengths = hf.response_mask.sum(1)
    assert lengths.min() < lengths.max() <= 16, "rows must finish at different steps (compaction exercised)"
    assert torch.equal(lean.response_ids, hf.response_ids)
    assert torch.equal(lean.response_mask, hf.response_mask)
    torch.testing.assert_close(lean.old_log_probs, hf.old_log_probs, atol=1e-5, rtol=0)
    assert torch.all(lean.response_ids[lean.response_mask == 0] == PAD)
    assert torch.all(lean.old_log_probs[lean.response_mask == 0] == 0)


def _rollout(model, seed: int) -> Rollout:
    """Sampled responses, with <pad> forced inside one response (a real token there, as in the module)."""
    batch = prompts(seed, groups=4, group_size=3) + prompts(seed + 1, groups=2, group_size=1)
    ro = sample(model, batch, max_new_tokens=12, eos_id=EOS, pad_id=PAD, generator=torch.Generator().manual_seed(seed))
    ro.response_mask[:, :4] = 1
    ro.response_ids[0, 1] = PAD
    ro.response_mask[2, 6:] = 0  # and a short one
    ro.response_ids[2, 6:] = PAD
    return ro


def test_packed_scoring_equals_the_module_in_values_and_gradients(model):
    ro = _rollout(model, 5)
    mask = ro.response_mask.bool()
    weights = torch.randn(ro.response_ids.shape, generator=torch.Generator().manual_seed(1))
    grads, values = {}, {}
    for lean in (False, True):
        model.zero_grad()
        log_probs, entropy = score(model, ro, lean=lean)
        (log_probs * weights * mask).sum().backward()
        values[lean] = (log_probs.detach()[mask], entropy[mask])
        grads[lean] = {n: p.grad.clone() for n, p in model.named_parameters()}
    torch.testing.assert_close(values[True][0], values[False][0], atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(values[True][1], values[False][1], atol=2e-5, rtol=1e-5)
    for name, expected in grads[False].items():
        torch.testing.assert_close(grads[True][name], expected, atol=1e-4, rtol=1e-4, msg=name)
    assert grads[False]["model.embed_tokens.weight"].abs().sum() > 0


def test_pack_lists_each_distinct_prompt_once_and_every_real_token():
    ids, mask = left_pad([[5, 6, 7], [5, 6, 7], [8, 9], [5, 6, 7]], PAD, torch.device("cpu"))
    response = torch.tensor([[10, 11, EOS], [12, EOS, PAD], [13, 14, 15], [EOS, PAD, PAD]])
    rmask = (torch.arange(3)[None] <= torch.tensor([[2], [1], [2], [0]])).long()
    p = pack(ids, mask, response, rmask)
    assert p.ids.tolist() == [5, 6, 7, 8, 9, 10, 11, EOS, 12, EOS, 13, 14, 15, EOS]
    assert p.positions.tolist() == [0, 1, 2, 0, 1, 3, 4, 5, 3, 4, 2, 3, 4, 3]
    assert p.width == 6
    padded = torch.cat([p.ids, torch.tensor([-1])])[p.grid]  # each row's sequence, right-aligned
    assert padded.tolist() == [[5, 6, 7, 10, 11, EOS], [5, 6, 7, 12, EOS, -1], [8, 9, 13, 14, 15, -1],
                               [5, 6, 7, EOS, -1, -1]]
    # each packed token reads its attention output from a slot of a row that contains it
    assert torch.equal(torch.cat([p.ids, torch.tensor([-1])])[p.grid.flatten()[p.owner]], p.ids)
    # response token j of a row is predicted by the token just before it
    # (past a row's end: its last real token, whose logits are masked out)
    assert padded.gather(1, torch.tensor([[2, 3, 4], [2, 3, 4], [1, 2, 3], [2, 3, 3]])).tolist() == \
        torch.cat([p.ids, torch.tensor([-1])])[p.predictor].tolist()


def test_sampler_draws_from_the_distribution_and_respects_top_p():
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0])
    logits = probs.clamp(min=1e-30).log().expand(40_000, -1)
    g = torch.Generator().manual_seed(0)
    token, logp = _pick(logits, temperature=1.0, top_p=1.0, greedy=False, generator=g)
    freq = torch.bincount(token, minlength=5).float() / len(token)
    torch.testing.assert_close(freq, probs, atol=0.01, rtol=0)
    assert freq[4] == 0
    torch.testing.assert_close(logp, probs[token].log(), atol=1e-5, rtol=1e-5)
    token, _ = _pick(logits, temperature=1.0, top_p=0.7, greedy=False, generator=g)  # nucleus {0, 1}
    freq = torch.bincount(token, minlength=5).float() / len(token)
    torch.testing.assert_close(freq[:2], torch.tensor([0.625, 0.375]), atol=0.01, rtol=0)
    assert freq[2:].sum() == 0


def test_other_architectures_use_their_own_forward():
    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=4, num_key_value_heads=2, pad_token_id=PAD)).eval()
    ro = sample(llama, prompts(7), max_new_tokens=6, eos_id=EOS, pad_id=PAD, generator=torch.Generator().manual_seed(0))
    log_probs, _ = score(llama, ro)
    torch.testing.assert_close(log_probs.detach() * ro.response_mask, ro.old_log_probs, atol=1e-5, rtol=1e-5)
