"""Rollout "zoo_hf": transformers ``generate`` behind verl's rollout-server interface (no vllm).

The rollout of verl's CPU platform (trainers/verl_backend/cpu imports this module) and, on GPUs, a
check/debug rollout for hosts without vLLM (``verl.rollout: zoo_hf``; the trial's
VERL_USE_EXTERNAL_MODULES then names this module, whose import registers it). It generates one
batch at a time with no paged KV cache: correct, not fast.

verl 0.9.1 generates through rollout *replicas* (workers/rollout/replica.py) whose servers the
agent loop calls with token ids (``server.generate.remote(prompt_ids=..., sampling_params=...,
request_id=...) -> TokenOutput``), and syncs weights through a ``BaseRollout`` adapter that lives
in each actor worker (workers/rollout/base.py, built by engine_workers with ``get_rollout_class``).
Only vllm, sglang and trtllm are registered there; ``register_zoo_hf_rollout`` adds "zoo_hf" to
both registries (``_ROLLOUT_REGISTRY[("zoo_hf", "async")]`` and ``RolloutReplicaRegistry``).

    ZooHFReplica       one per rollout world (tp*dp*pp = 1 on CPU): starts one ZooHFServer actor on
                       the node of its actor worker (hybrid mode: the trainer's workers are the
                       replica's workers).
    ZooHFServer        Ray actor holding its own copy of the HF model in rollout.dtype, on the
                       platform's device: on CUDA the GPU of its actor worker (as verl's vLLM
                       server: Ray leaves CUDA_VISIBLE_DEVICES alone, the replica passes the
                       worker's GPU ids); batches the requests that arrive together, groups them by
                       sampling parameters, runs ``model.generate`` (left padding) in a thread and
                       returns the response ids (EOS included when generated) and, when asked
                       (``rollout.calculate_log_probs``), each token's log-prob
                       ``log_softmax(logits / T)`` (raw logits at T = 0): the distribution verl's
                       actor scores with, before top-k/top-p truncation, gathered step by step
                       (StepLogProbs: one step's logits in memory, not the whole response's).
    ZooHFServerAdapter the BaseRollout in the actor worker: ``update_weights`` materialises the
                       full tensors on every rank (the FSDP all-gather is collective) and rank 0
                       of the replica sends them to its server through Ray's object store.

The server's Ray name is ``zoo_hf_server_<ray job id>_<replica>``, unique per driver, so two verl
runs sharing a Ray cluster (or a namespace) do not collide (vllm uses ``vllm_server_<r>_<n>``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Optional

import ray
import torch
from transformers import StoppingCriteria, StoppingCriteriaList
from verl.plugin.platform.platform_manager import get_platform
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.device import get_visible_devices_keyword
from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

from contract.env import RANK

NAME = "zoo_hf"
_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float16": torch.float16, "fp16": torch.float16}


def _server_device(device: str, visible_devices: Optional[str]) -> torch.device:
    """The server's torch device: 'cpu', or the platform's accelerator restricted to ``visible_devices``
    (the actor worker's ids; set before CUDA initialises in this process)."""
    if device == "cpu":
        return torch.device("cpu")
    if visible_devices:
        os.environ[get_visible_devices_keyword()] = visible_devices
    module = getattr(torch, device, None)
    if module is None or not module.is_available():
        raise RuntimeError(f"zoo_hf rollout: the platform's device is {device!r} but torch sees none "
                           f"({get_visible_devices_keyword()}={os.environ.get(get_visible_devices_keyword())!r})")
    return torch.device(device)


def server_name(replica_rank: int) -> str:
    return f"zoo_hf_server_{ray.get_runtime_context().get_job_id()}_{replica_rank}"


class StepLogProbs(StoppingCriteria):
    """Each generated token's ``log_softmax(logits / T)`` from the raw logits (before top-k/top-p),
    computed while ``generate`` runs, with one step's logits held at a time: a forward hook on the
    model keeps the last position's logits (what ``output_logits`` would return), and this
    stopping criterion, called after each token is appended, gathers that token's log-prob (it
    never stops anything). ``output_logits=True`` would keep every step's ``[B, V]`` float32 logits
    to the end: 64 responses x 512 tokens x Qwen3's 151,936-token vocabulary is 20 GB, and as much
    again to stack them. ``result()``: ``[B, T]``; ``close()`` removes the hook."""

    def __init__(self, model, temperature: float):
        self.temperature = temperature
        self.last: Optional[torch.Tensor] = None
        self.steps: list[torch.Tensor] = []
        self.handle = model.register_forward_hook(self._keep_last_logits)

    def _keep_last_logits(self, module, args, output) -> None:
        # a copy: a view would keep the prefill's whole [B, P, V] logits alive
        self.last = output.logits[:, -1, :].to(dtype=torch.float32, copy=True)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs) -> torch.BoolTensor:
        logps = torch.log_softmax(self.last / self.temperature, dim=-1)
        self.steps.append(logps.gather(-1, input_ids[:, -1:]).squeeze(-1))
        self.last = None
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    def result(self) -> torch.Tensor:
        return torch.stack(self.steps, dim=1)

    def close(self) -> None:
        self.handle.remove()


class ZooHFServer:
    """Ray actor: transformers generate for token-in/token-out requests (see module docstring)."""

    def __init__(self, config, model_config, replica_rank: int = 0, device: str = "cpu",
                 visible_devices: Optional[str] = None):
        from transformers import AutoModelForCausalLM, GenerationConfig
        from verl.workers.config import HFModelConfig

        self.config = omega_conf_to_dataclass(config)
        model_config = omega_conf_to_dataclass(model_config, dataclass_type=HFModelConfig)
        self.replica_rank = replica_rank
        self.global_steps: Optional[int] = None
        self.device = _server_device(device, visible_devices)
        dtype = _DTYPES.get(str(self.config.dtype).lower(), torch.float32)
        self.model = AutoModelForCausalLM.from_pretrained(
            model_config.local_path, config=model_config.hf_config, dtype=dtype,
            trust_remote_code=model_config.trust_remote_code,
        ).to(self.device).eval()
        tokenizer = model_config.tokenizer
        gen = getattr(model_config, "generation_config", None)
        eos = getattr(gen, "eos_token_id", None) if gen is not None else None
        eos = eos if eos is not None else tokenizer.eos_token_id
        self.eos_ids = sorted({int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])})
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_ids[0]
        # generate() fills every unset option from the checkpoint's generation_config (e.g. Qwen3's
        # top_k=20, top_p=0.95) and then from transformers' defaults (top_k=50): start from a blank one
        # so only verl's sampling parameters apply.
        self.model.generation_config = GenerationConfig(eos_token_id=self.eos_ids, pad_token_id=self.pad_id)
        self.max_model_len = self.config.max_model_len or (self.config.prompt_length + self.config.response_length)
        self._pending: list[tuple[dict, asyncio.Future]] = []
        self._drainer: Optional[asyncio.Task] = None
        self._lock = asyncio.Lock()
        torch.manual_seed(self.config.seed + replica_rank)

    # ---------------------------------------------------------------- generation
    async def generate(self, prompt_ids: list[int], sampling_params: dict[str, Any], request_id: str,
                       image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                       priority: int = 0, **kwargs) -> TokenOutput:
        if image_data or video_data or audio_data:
            raise NotImplementedError("zoo_hf rollout: text only (no image/video/audio inputs)")
        prompt_ids = [int(t) for t in prompt_ids]
        room = self.max_model_len - len(prompt_ids)
        if room < 1:
            raise ValueError(f"prompt of {len(prompt_ids)} tokens leaves no room within max_model_len {self.max_model_len}")
        params = dict(sampling_params)
        max_tokens = params.pop("max_tokens", params.pop("max_new_tokens", None))
        if max_tokens is None:
            max_tokens = min(self.config.response_length,
                             self.config.prompt_length + self.config.response_length - len(prompt_ids))
        request = {
            "prompt_ids": prompt_ids,
            "max_tokens": max(1, min(int(max_tokens), room)),
            "temperature": float(params.get("temperature", 1.0) or 0.0),
            "top_p": float(params.get("top_p", 1.0) if params.get("top_p") is not None else 1.0),
            "top_k": int(params.get("top_k", -1) if params.get("top_k") is not None else -1),
            "logprobs": bool(params.get("logprobs", False)),
        }
        future = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        token_ids, log_probs = await future
        return TokenOutput(token_ids=token_ids, log_probs=log_probs if request["logprobs"] else None,
                           stop_reason="completed", extra_fields={"global_steps": self.global_steps})

    async def _drain(self) -> None:
        await asyncio.sleep(0.01)  # let the requests of one agent-loop batch arrive together
        while self._pending:
            batch, self._pending = self._pending[: self.config.max_num_seqs], self._pending[self.config.max_num_seqs:]
            groups: dict[tuple, list] = {}
            for request, future in batch:
                groups.setdefault((request["temperature"], request["top_p"], request["top_k"]), []).append((request, future))
            for key, items in groups.items():
                try:
                    async with self._lock:
                        results = await asyncio.to_thread(self._generate_batch, key, [r for r, _ in items])
                except Exception as err:  # hand the error to every waiting request
                    for _, future in items:
                        if not future.done():
                            future.set_exception(err)
                    continue
                for (_, future), result in zip(items, results, strict=True):
                    if not future.done():
                        future.set_result(result)

    @torch.no_grad()
    def _generate_batch(self, key: tuple, requests: list[dict]) -> list[tuple[list[int], list[float]]]:
        from transformers import GenerationConfig

        temperature, top_p, top_k = key
        width = max(len(r["prompt_ids"]) for r in requests)
        ids = torch.full((len(requests), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(requests), width), dtype=torch.long)
        for i, r in enumerate(requests):  # left padding
            ids[i, width - len(r["prompt_ids"]):] = torch.tensor(r["prompt_ids"])
            mask[i, width - len(r["prompt_ids"]):] = 1
        sample = temperature > 0
        # every option explicit: an unset one would be filled from transformers' defaults (top_k=50)
        gen_config = GenerationConfig(
            max_new_tokens=max(r["max_tokens"] for r in requests), min_new_tokens=0, do_sample=sample,
            temperature=temperature if sample else 1.0, top_p=top_p if sample else 1.0,
            top_k=top_k if sample and top_k > 0 else 0, typical_p=1.0, repetition_penalty=1.0, num_beams=1,
            eos_token_id=self.eos_ids, pad_token_id=self.pad_id, bos_token_id=None,
        )
        step_logps = StepLogProbs(self.model, temperature if sample else 1.0)
        try:
            out = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                      generation_config=gen_config,
                                      stopping_criteria=StoppingCriteriaList([step_logps]))
        finally:
            step_logps.close()
        new = out[:, width:]
        logps = step_logps.result()  # [B, T]
        results = []
        for i, r in enumerate(requests):
            tokens = new[i].tolist()[: r["max_tokens"]]
            for j, t in enumerate(tokens):
                if t in self.eos_ids:
                    tokens = tokens[: j + 1]
                    break
            results.append((tokens, logps[i, : len(tokens)].tolist()))
        return results

    # ---------------------------------------------------------------- weights and control
    async def update_weights(self, state_dict: dict[str, torch.Tensor], global_steps: Optional[int] = None) -> None:
        async with self._lock:
            own = self.model.state_dict()
            unknown = sorted(set(state_dict) - set(own))
            if unknown:
                raise KeyError(f"zoo_hf rollout: weights not in the rollout model: {unknown[:5]}")
            dtype = next(self.model.parameters()).dtype
            self.model.load_state_dict({k: v.to(dtype) for k, v in state_dict.items()}, strict=False)
            if self.model.config.tie_word_embeddings:
                self.model.tie_weights()
        if global_steps is not None:
            self.global_steps = global_steps

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps

    async def abort_all_requests(self, reset_prefix_cache: bool = True, reject_request: bool = False) -> dict:
        return {"aborted_count": 0, "request_ids": []}

    async def abort_request(self, request_id: str, reset_prefix_cache: bool = True) -> dict:
        return {"aborted": False, "request_id": request_id}

    async def wake_up(self, tags: Optional[list[str]] = None) -> None:  # the model stays resident
        return None

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:  # generate keeps no cache between calls
        return None

    release_kv_cache = resume_kv_cache = resume_generation = wait_for_requests_to_drain = clear_kv_cache

    async def start_profile(self, **kwargs) -> None:
        return None

    async def stop_profile(self) -> None:
        return None


class ZooHFReplica(RolloutReplica):
    """verl rollout replica running one ZooHFServer actor next to its actor worker."""

    async def launch_servers(self):
        if self.world_size != 1:
            raise ValueError(f"zoo_hf rollout: tensor/data/pipeline parallel size must be 1 (world size {self.world_size})")
        if self.rollout_mode is None or not self.workers:
            raise NotImplementedError("zoo_hf rollout: only hybrid mode (rollout in the actor workers) is supported")
        platform = get_platform()
        resource = platform.ray_resource_name()
        node_id, gpu_ids = await self.workers[0].__ray_call__.remote(
            lambda _self: (ray.get_runtime_context().get_node_id(),
                           ray.get_runtime_context().get_accelerator_ids().get(resource, [])))
        name = server_name(self.replica_rank)
        # the server shares its worker's GPU (it asks Ray for none): Ray must not blank the visible devices
        env_vars = {var: "1" for var in platform.ray_noset_envvars()}
        server = ray.remote(ZooHFServer).options(
            name=name, num_cpus=0, max_concurrency=self.max_concurrency,
            scheduling_strategy=ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
            **({"runtime_env": {"env_vars": env_vars}} if env_vars else {}),
        ).remote(config=self.config, model_config=self.model_config, replica_rank=self.replica_rank,
                 device=platform.device_name, visible_devices=",".join(str(i) for i in gpu_ids) or None)
        await server.set_global_steps.remote(0)  # waits for the model to load
        self.servers = [server]
        self._server_handle = server
        self._server_address = name  # a unique key for verl's load balancer; there is no HTTP server


class ZooHFServerAdapter(BaseRollout):
    """BaseRollout in the actor worker: forwards weight updates to the replica's ZooHFServer."""

    def __init__(self, config, model_config, device_mesh, replica_rank: int = -1, *args, **kwargs):
        super().__init__(config, model_config, device_mesh)
        rank = RANK.get()
        world = self.config.tensor_model_parallel_size * self.config.data_parallel_size * self.config.pipeline_model_parallel_size
        self.replica_rank = rank // world if replica_rank == -1 else replica_rank
        self.rollout_rank = rank % world
        self.is_leader_rank = self.rollout_rank == 0
        self._server = None

    def _server_handle(self):
        if self._server is None:
            self._server = ray.get_actor(server_name(self.replica_rank))
        return self._server

    async def resume(self, tags: list[str]):
        return None

    async def release(self):
        return None

    @torch.no_grad()
    async def update_weights(self, weights, wire_format: str = "named_tensors", global_steps: Optional[int] = None,
                             peft_config=None, **kwargs):
        if wire_format != "named_tensors":
            raise NotImplementedError(f"zoo_hf rollout: wire_format {wire_format!r} (only 'named_tensors')")
        if peft_config is not None:
            raise NotImplementedError("zoo_hf rollout: LoRA adapters are not supported; set model.lora.merge=True")
        # every rank consumes the generator: producing full tensors is a collective
        state = {name: tensor.detach().to("cpu", copy=True) for name, tensor in weights}
        if self.is_leader_rank:
            await self._server_handle().update_weights.remote(state, global_steps)


def register_zoo_hf_rollout() -> None:
    """Register "zoo_hf" in verl's rollout-class and rollout-replica registries (idempotent)."""
    rollout_base._ROLLOUT_REGISTRY[(NAME, "async")] = f"{__name__}.ZooHFServerAdapter"
    RolloutReplicaRegistry.register(NAME, lambda: ZooHFReplica)


register_zoo_hf_rollout()  # importing this module (VERL_USE_EXTERNAL_MODULES on GPUs) registers it
