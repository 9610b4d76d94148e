"""The verl CPU package without Ray: platform, gloo, registrations, cpu_runtime and the zoo_hf server.

    .venv/bin/python -m pytest tests/trainers/verl_backend/test_cpu_rollout.py -q
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import verl

import trainers.verl_backend.cpu as cpu
from evaluators.tasks import make_split
from trainers.verl_backend.assets import tiny_qwen3
from trainers.verl_backend.cpu.platform import PlatformCPU
from trainers.verl_backend.hf_rollout import StepLogProbs, ZooHFServer

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_qwen3(tmp_path_factory.mktemp("verl_assets"))


@pytest.fixture(scope="module")
def server(model_dir):
    from verl.workers.config import HFModelConfig, RolloutConfig

    model_config = HFModelConfig(path=str(model_dir), override_config={"attn_implementation": "sdpa"})
    config = RolloutConfig(name="zoo_hf", tensor_model_parallel_size=1, prompt_length=48, response_length=12,
                           dtype="float32")
    return ZooHFServer(config, model_config, replica_rank=0)


def prompts(server, n):
    tok = server_tokenizer(server)
    return [tok.apply_chat_template([{"role": "user", "content": p.prompt}], add_generation_prompt=True, tokenize=False)
            for p in make_split("train", n, seed=11)]


def server_tokenizer(server):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(server.model.name_or_path)


def teacher_forced_logps(model, prompt_ids, tokens, temperature=1.0):
    ids = torch.tensor([prompt_ids + tokens])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt_ids) - 1: -1].float()
    logits = logits / temperature if temperature > 0 else logits
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(tokens)[:, None]).squeeze(-1)


# ---------------------------------------------------------------- package


def test_version_guard(monkeypatch):
    cpu.check_verl_version()
    monkeypatch.setattr(verl, "__version__", "0.9.2")
    with pytest.raises(RuntimeError, match=r"0\.9\.1.*found verl 0\.9\.2.*bash scripts/setup\.sh"):
        cpu.check_verl_version()


def test_cpu_runtime_selects_cpu_path():
    env, overrides = cpu.cpu_runtime()
    assert env["VERL_PLATFORM"] == "cpu" and env["VERL_USE_EXTERNAL_MODULES"] == "trainers.verl_backend.cpu"
    assert str(REPO) in env["PYTHONPATH"].split(os.pathsep)
    keys = [o.lstrip("+").split("=", 1)[0] for o in overrides]
    assert len(keys) == len(set(keys))
    for expected in ("actor_rollout_ref.rollout.name=zoo_hf", "trainer.device=cpu", "trainer.use_v1=False",
                     "actor_rollout_ref.actor.strategy=fsdp2", "ray_kwargs.ray_init.num_cpus=16",
                     "+ray_kwargs.ray_init.num_gpus=1", "reward.num_workers=1", "data.dataloader_num_workers=0",
                     "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"):
        assert expected in overrides
    for trial_key in ("data.train_batch_size", "actor_rollout_ref.actor.optim.lr", "actor_rollout_ref.rollout.n",
                      "actor_rollout_ref.actor.policy_loss.loss_mode"):
        assert trial_key not in keys
    assert "ray_kwargs.ray_init.num_cpus=32" in cpu.cpu_runtime(32)[1]
    with pytest.raises(ValueError, match="at least"):
        cpu.cpu_runtime(2)


def test_platform_reports_cpu_and_logical_gpus():
    platform = PlatformCPU()
    assert platform.device_name == "cpu" and platform.communication_backend_name() == "gloo"
    assert platform.ray_resource_name() == "GPU" and platform.ray_resource_options(1) == {"num_gpus": 1}
    assert not platform.is_platform_available(use_smi_check=True)  # only VERL_PLATFORM=cpu selects it
    assert torch.zeros(1).to(platform.current_device()).device.type == "cpu"
    device = platform.device_module
    device.empty_cache()
    device.synchronize()
    free, total = device.mem_get_info()
    assert 0 < free <= total and device.memory_allocated() == 0
    state = device.get_rng_state()
    device.set_rng_state(state)


def test_gloo_process_group_on_cpu_platform(monkeypatch, tmp_path):
    import torch.distributed as dist

    monkeypatch.setenv("VERL_PLATFORM", "cpu")
    dist.init_process_group(backend="cpu:gloo,cpu:nccl", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        assert dist.get_backend() == "gloo"
        t = torch.ones(2)
        dist.all_reduce(t)
        assert t.tolist() == [1.0, 1.0]
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_external_module_registers_everything_in_a_fresh_verl_process():
    code = (
        "from verl.plugin.platform import get_platform\n"
        "from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY\n"
        "from verl.workers.engine.base import EngineRegistry\n"
        "from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead\n"
        "from verl.workers.rollout.base import get_rollout_class\n"
        "from verl.workers.rollout.replica import get_rollout_replica_class\n"
        "assert get_platform().device_name == 'cpu'\n"
        "assert EngineRegistry.get_engine_cls('language_model', 'fsdp2') is FSDPEngineWithLMHead\n"
        "assert get_rollout_class('zoo_hf').__name__ == 'ZooHFServerAdapter'\n"
        "assert get_rollout_replica_class('zoo_hf').__name__ == 'ZooHFReplica'\n"
        "assert 'zoo_grpo' in POLICY_LOSS_REGISTRY\n"
        "print('ok')\n"
    )
    env = {**os.environ, "VERL_PLATFORM": "cpu", "VERL_USE_EXTERNAL_MODULES": "trainers.verl_backend.cpu",
           "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")


# ---------------------------------------------------------------- zoo_hf server


def test_greedy_batch_matches_single_requests_and_teacher_forcing(server):
    tok = server_tokenizer(server)
    ids = [tok.encode(p, add_special_tokens=False) for p in prompts(server, 4)]
    assert len({len(p) for p in ids}) > 1  # prompts of different lengths: left padding in the batch
    requests = [{"prompt_ids": p, "max_tokens": 12} for p in ids]
    batched = server._generate_batch((0.0, 1.0, -1), requests)
    for request, (tokens, logps) in zip(requests, batched, strict=True):
        single_tokens, single_logps = server._generate_batch((0.0, 1.0, -1), [request])[0]
        assert tokens == single_tokens
        assert torch.allclose(torch.tensor(logps), torch.tensor(single_logps), atol=1e-4)
        assert 1 <= len(tokens) <= 12
        assert server.eos_ids[0] not in tokens[:-1]
        expected = teacher_forced_logps(server.model, request["prompt_ids"], tokens)
        assert torch.allclose(torch.tensor(logps), expected, atol=1e-4)


def test_sampled_logprobs_are_temperature_scaled_and_lengths_capped(server):
    tok = server_tokenizer(server)
    ids = [tok.encode(p, add_special_tokens=False) for p in prompts(server, 3)]
    requests = [{"prompt_ids": p, "max_tokens": m} for p, m in zip(ids, (3, 12, 7), strict=True)]
    results = server._generate_batch((0.7, 1.0, -1), requests)
    for request, (tokens, logps) in zip(requests, results, strict=True):
        assert 1 <= len(tokens) <= request["max_tokens"] and len(logps) == len(tokens)
        expected = teacher_forced_logps(server.model, request["prompt_ids"], tokens, temperature=0.7)
        assert torch.allclose(torch.tensor(logps), expected, atol=1e-4)


def test_step_logprobs_equal_generates_own_logits_and_hold_one_step(server):
    """What output_logits=True returned (every step's raw logits), gathered step by step instead."""
    from transformers import GenerationConfig, StoppingCriteriaList

    tok = server_tokenizer(server)
    ids = torch.tensor([tok.encode(prompts(server, 1)[0], add_special_tokens=False)] * 3)
    config = GenerationConfig(max_new_tokens=9, min_new_tokens=9, do_sample=True, temperature=0.8, top_k=5,
                              top_p=1.0, pad_token_id=server.pad_id, return_dict_in_generate=True,
                              output_logits=True)
    step = StepLogProbs(server.model, 0.8)
    held = []

    def keep_and_record(module, args, output):  # the same hook, also noting what it holds
        step._keep_last_logits(module, args, output)
        held.append(tuple(step.last.shape))

    step.handle.remove()
    step.handle = server.model.register_forward_hook(keep_and_record)
    torch.manual_seed(3)
    out = server.model.generate(input_ids=ids, generation_config=config, stopping_criteria=StoppingCriteriaList([step]))
    step.close()
    new = out.sequences[:, ids.shape[1]:]
    reference = torch.log_softmax(torch.stack(out.logits, 1) / 0.8, -1).gather(-1, new[..., None]).squeeze(-1)
    assert step.result().shape == (3, 9)
    assert torch.equal(step.result(), reference)
    assert held == [(3, server.model.config.vocab_size)] * 9  # one [B, V] per step, never [B, P, V]
    assert step.last is None and not server.model._forward_hooks  # gathered, and the hook is gone


def test_async_generate_and_weight_update(server):
    tok = server_tokenizer(server)
    ids = [tok.encode(p, add_special_tokens=False) for p in prompts(server, 3)]

    async def run():
        outs = await asyncio.gather(
            server.generate(ids[0], {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}, "a"),
            server.generate(ids[1], {"temperature": 0, "logprobs": False}, "b"),
            server.generate(ids[2], {"temperature": 1.0, "top_k": 5, "max_tokens": 2, "logprobs": True}, "c"),
        )
        state = {k: torch.zeros_like(v) for k, v in server.model.state_dict().items() if k.endswith("norm.weight")}
        await server.update_weights(state, global_steps=7)
        with pytest.raises(KeyError, match="not in the rollout model"):
            await server.update_weights({"nope.weight": torch.zeros(1)})
        after = await server.generate(ids[0], {"temperature": 0}, "d")
        return outs, after

    original = {k: v.clone() for k, v in server.model.state_dict().items()}
    try:
        (a, b, c), after = asyncio.run(run())
    finally:
        server.model.load_state_dict(original)
    assert len(a.log_probs) == len(a.token_ids) and b.log_probs is None
    assert 1 <= len(c.token_ids) <= 2 and a.stop_reason == "completed"
    assert after.extra_fields["global_steps"] == 7
    assert all(torch.equal(server.model.state_dict()[k], v) for k, v in original.items())


def test_sampling_uses_only_verls_parameters(server):
    """No hidden top-k: transformers fills unset options with top_k=50, the server must not let it."""
    tok = server_tokenizer(server)
    ids = [tok.encode(p, add_special_tokens=False) for p in prompts(server, 4)]

    def ranks(top_k):
        ranks = []
        for request, (tokens, _) in zip(ids, server._generate_batch((1.0, 1.0, top_k), [
                {"prompt_ids": p, "max_tokens": 12} for p in ids]), strict=True):
            seq = torch.tensor([request + tokens])
            with torch.no_grad():
                logits = server.model(input_ids=seq).logits[0, len(request) - 1: -1]
            order = logits.argsort(-1, descending=True)
            ranks += [int((order[i] == t).nonzero()) for i, t in enumerate(tokens)]
        return ranks

    torch.manual_seed(0)
    assert max(ranks(-1)) >= 60  # near-uniform policy over ~100 tokens; a hidden top_k=50 caps it at ~50
    assert max(ranks(5)) < 5


def test_server_device_cpu_stays_cpu_and_an_absent_accelerator_is_named(monkeypatch):
    """The server's device: 'cpu' untouched; on an accelerator platform the worker's ids become the
    visible devices before CUDA starts, and a platform device torch cannot see is a clear error."""
    from trainers.verl_backend.hf_rollout import _server_device

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    assert _server_device("cpu", "3") == torch.device("cpu")
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "7"  # the CPU path leaves it alone
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the missing-device error cannot be provoked")
    with pytest.raises(RuntimeError, match=r"platform's device is 'cuda' but torch sees none \(CUDA_VISIBLE_DEVICES='3'\)"):
        _server_device("cuda", "3")
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
