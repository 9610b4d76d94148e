"""Tests for evaluators.generation: the HF backend (bit-exact with the local trainer's evaluation
loop over policy.rollout.sample), prompts and chat templates, progress, backend selection,
and the vLLM backend's error paths (vllm is a GPU-only extra and is not installed on CPU hosts)."""

import subprocess
import sys

import pytest
import torch

from evaluators.generation import GPU_INSTALL, HFGenerator, Sample, SamplingParams, make_generator
from evaluators.tasks import make_split
from trainers.local.config import LocalConfig
from trainers.local.model import build_char_tokenizer, build_tiny_model
from policy.rollout import sample

PROMPTS = ["Q: 12+7=?", "Q: 3*4=?", "Q: 38-7=?", "Q: 8-1=?", "Q: 25-16=?"]


@pytest.fixture(scope="module")
def tiny():
    tok = build_char_tokenizer()
    return build_tiny_model(LocalConfig(), tok, seed=0), tok


@pytest.fixture(scope="module")
def chatml_dir(tmp_path_factory):
    from trainers.verl_backend.assets import tiny_qwen3

    return tiny_qwen3(tmp_path_factory.mktemp("chatml"), warm_start_steps=0)


def reference_evaluate_texts(model, tok, prompts, k, greedy, max_new_tokens, gen, chunk_size=256):
    """trainers/local/trainer.py evaluate's generation loop as it was before the generators existed:
    problem-major flat list, chunks of 256 sequences, one sample(...) call each, masked decode."""
    flat = [p for p in prompts for _ in range(k)]
    texts, masks = [], []
    for start in range(0, len(flat), chunk_size):
        chunk = flat[start:start + chunk_size]
        ro = sample(model, [tok.encode(p, add_special_tokens=False) for p in chunk], max_new_tokens=max_new_tokens,
                    eos_id=tok.eos_token_id, pad_id=tok.pad_token_id, temperature=1.0, greedy=greedy, generator=gen)
        texts += [tok.decode(row[m.bool()].tolist(), skip_special_tokens=True)
                  for row, m in zip(ro.response_ids, ro.response_mask)]
        masks += [(int(m.sum()), bool((row[m.bool()] == tok.eos_token_id).any()))
                  for row, m in zip(ro.response_ids, ro.response_mask)]
    return texts, masks


@pytest.mark.slow
@pytest.mark.parametrize("greedy,k", [(False, 3), (True, 1)])
@pytest.mark.parametrize("batch_size", [4, 256])
def test_hf_bit_exact_with_trainer_evaluate_loop(tiny, greedy, k, batch_size):
    model, tok = tiny
    # 90 problems x 3 samples = 270 sequences: two chunks at the default 256, many at 4
    prompts = PROMPTS + [p.prompt for p in make_split("easy", 85, 1)]
    max_new = 12
    seed = 7 * 1_000_003 + 5  # as evaluate seeds its stream: cfg.seed * 1_000_003 + step
    ref_texts, ref_meta = reference_evaluate_texts(model, tok, prompts, k, greedy, max_new,
                                                   torch.Generator().manual_seed(seed), chunk_size=batch_size)
    params = SamplingParams(n=k, temperature=1.0, top_p=1.0, max_new_tokens=max_new, greedy=greedy)
    out = HFGenerator(model, tok, batch_size=batch_size).generate(
        prompts, params, torch_generator=torch.Generator().manual_seed(seed))
    assert len(out) == len(prompts) and all(len(s) == k for s in out)
    flat = [s for group in out for s in group]
    assert [s.text for s in flat] == ref_texts
    assert [(s.num_tokens, not s.truncated) for s in flat] == ref_meta
    if batch_size == 256 and not greedy:
        # the chunking itself is what evaluate does at 256: the default must give the same stream too
        assert [s.text for g in HFGenerator(model, tok).generate(
            prompts, params, torch_generator=torch.Generator().manual_seed(seed)) for s in g] == ref_texts


def test_hf_seed_without_torch_generator(tiny):
    model, tok = tiny
    params = SamplingParams(n=2, max_new_tokens=10, seed=3)
    gen = HFGenerator(model, tok, batch_size=3)
    first = gen.generate(PROMPTS, params)
    assert first == gen.generate(PROMPTS, params)  # params.seed seeds a fresh stream each call
    ref, _ = reference_evaluate_texts(model, tok, PROMPTS, 2, False, 10, torch.Generator().manual_seed(3), 3)
    assert [s.text for g in first for s in g] == ref
    other = gen.generate(PROMPTS, SamplingParams(n=2, max_new_tokens=10, seed=4))
    assert other != first


def test_hf_samples_lengths_and_truncation(tiny):
    model, tok = tiny
    out = HFGenerator(model, tok, batch_size=8).generate(PROMPTS, SamplingParams(n=4, max_new_tokens=6))
    for s in (s for g in out for s in g):
        assert isinstance(s, Sample) and 1 <= s.num_tokens <= 6
        assert "<eos>" not in s.text and "<pad>" not in s.text
        # one character per token; <eos> (counted) and a sampled <pad> (random model) are not decoded
        if s.truncated:
            assert s.num_tokens == 6 and len(s.text) <= 6
        else:
            assert len(s.text) <= s.num_tokens - 1
    flat = [s for g in out for s in g]
    assert any(s.truncated for s in flat) and any(not s.truncated for s in flat)


def test_hf_top_p_and_temperature_are_passed(tiny):
    model, tok = tiny
    gen = HFGenerator(model, tok, batch_size=16)
    base = gen.generate(PROMPTS, SamplingParams(n=2, max_new_tokens=8))
    assert gen.generate(PROMPTS, SamplingParams(n=2, max_new_tokens=8, top_p=0.3)) != base
    cold = gen.generate(PROMPTS, SamplingParams(n=2, max_new_tokens=8, temperature=1e-4))
    greedy = gen.generate(PROMPTS, SamplingParams(n=1, max_new_tokens=8, greedy=True))
    assert [g[0].text for g in cold] == [g[0].text for g in greedy]


def test_progress_counts_prompts_as_they_finish(tiny):
    model, tok = tiny
    calls = []
    # 5 prompts x 3 = 15 sequences in chunks of 4: chunks end at 4, 8, 12, 15 -> 1, 2, 4, 5 prompts done
    HFGenerator(model, tok, batch_size=4).generate(PROMPTS, SamplingParams(n=3, max_new_tokens=4), progress=calls.append)
    assert calls == [1, 1, 2, 1]
    calls.clear()
    HFGenerator(model, tok).generate(PROMPTS, SamplingParams(n=3, max_new_tokens=4), progress=calls.append)
    assert calls == [5]


def test_empty_and_malformed_prompts(tiny):
    model, tok = tiny
    gen = HFGenerator(model, tok)
    assert gen.generate([], SamplingParams()) == []
    with pytest.raises(TypeError, match="prompt"):
        gen.generate([123], SamplingParams(max_new_tokens=2))
    with pytest.raises(TypeError, match="prompt"):
        gen.generate([[{"role": "user"}]], SamplingParams(max_new_tokens=2))
    with pytest.raises(ValueError, match="no tokens"):
        gen.generate([""], SamplingParams(max_new_tokens=2))


def test_char_tokenizer_has_no_chat_template(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="no chat template.*raw string prompts"):
        HFGenerator(model, tok).generate([[{"role": "user", "content": "Q: 1+1=?"}]], SamplingParams(max_new_tokens=2))
    with pytest.raises(ValueError, match="no chat template"):
        HFGenerator(model, tok, chat_template=True).generate(["Q: 1+1=?"], SamplingParams(max_new_tokens=2))


@pytest.mark.parametrize("kw", [dict(n=0), dict(n=2, greedy=True), dict(temperature=0.0), dict(top_p=0.0),
                                dict(top_p=1.5), dict(max_new_tokens=0)])
def test_sampling_params_validation(kw):
    with pytest.raises(ValueError):
        SamplingParams(**kw)


def test_sampling_params_greedy_ignores_temperature():
    assert SamplingParams(greedy=True, temperature=0.0).greedy


def test_from_pretrained_chatml_dir_lean_and_transformers(chatml_dir):
    from transformers import AutoTokenizer

    from policy.lean_checkpoint import LeanTokenizer, Qwen3Weights

    lean = HFGenerator.from_pretrained(chatml_dir, device="auto", batch_size=8)
    assert isinstance(lean.model, Qwen3Weights) and isinstance(lean.tokenizer, LeanTokenizer)
    assert next(lean.model.parameters()).device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    hf = make_generator("hf", chatml_dir, device="cpu", lean=False, batch_size=8)
    assert not isinstance(hf.model, Qwen3Weights)

    messages = [{"role": "user", "content": "Q: 12+7=?"}]
    auto = AutoTokenizer.from_pretrained(chatml_dir, local_files_only=True)
    expected = auto.encode(auto.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
                           add_special_tokens=False)
    assert expected[:1] == [auto.convert_tokens_to_ids("<|im_start|>")]
    assert lean.encode(messages) == expected == hf.encode(messages)  # LeanTokenizer: template from the directory
    wrapped = HFGenerator.from_pretrained(chatml_dir, device="cpu", chat_template=True)
    assert wrapped.encode("Q: 12+7=?") == expected
    assert lean.encode("Q: 12+7=?") == auto.encode("Q: 12+7=?", add_special_tokens=False)  # raw: as it is

    params = SamplingParams(n=3, max_new_tokens=10, seed=1)
    prompts = [messages, "Q: 3*4=?"]
    out = lean.generate(prompts, params)
    assert len(out) == 2 and all(len(g) == 3 for g in out)
    assert out == lean.generate(prompts, params)
    assert all("<|im_end|>" not in s.text and "<|endoftext|>" not in s.text for g in out for s in g)
    # the chat prompt rendered by the generator is the same prompt as the rendered text passed raw
    rendered = auto.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert lean.generate([rendered], params) == lean.generate([messages], params)
    assert len(hf.generate(prompts, params)) == 2
    for g in (lean, hf, wrapped):
        g.close()


def test_make_generator_unknown_backend(chatml_dir):
    with pytest.raises(ValueError, match="'sglang'"):
        make_generator("sglang", chatml_dir)


def test_import_does_not_import_vllm():
    code = ("import sys, evaluators.generation, evaluators.generation_vllm; "
            "print(sorted(m for m in sys.modules if m == 'vllm' or m.startswith('vllm.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_vllm_without_cuda_is_a_clear_error(monkeypatch, chatml_dir):
    from evaluators.generation_vllm import VLLMGenerator

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setitem(sys.modules, "vllm", None)  # would fail the import if it were reached
    with pytest.raises(RuntimeError, match="CUDA GPU") as info:
        make_generator("vllm", chatml_dir)
    assert GPU_INSTALL in str(info.value)
    with pytest.raises(RuntimeError, match="CUDA GPU"):
        VLLMGenerator(chatml_dir, chat_template=True)


def test_vllm_not_installed_names_the_install_line(monkeypatch, chatml_dir):
    from evaluators.generation_vllm import VLLMGenerator

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises ImportError, installed or not
    with pytest.raises(ImportError, match="vllm") as info:
        VLLMGenerator(chatml_dir)
    assert GPU_INSTALL in str(info.value)
