"""The environment variables and Hydra overrides that put verl 0.9.1's ``main_ppo`` on the CPU path.

Outside the ``cpu/`` package on purpose: importing that package imports verl and registers the CPU
platform (what every verl process needs, ~5 s); a trial worker that only builds the command does not.

    env, overrides = cpu_runtime()
    subprocess.run([python, "-m", "verl.trainer.main_ppo", *overrides, *trial_overrides],
                   env={**os.environ, **env})

Only what selects and enables the CPU path is here; trial hyperparameters (batch sizes, lengths,
learning rate, loss, reward, data files, logging, checkpoint directory, Ray temp dir) come from the
caller. Hydra applies overrides left to right and the last value of a key wins, so put the
trial's after these to change one. The keys added here with "+" (not in verl's schema:
ray_init.num_gpus / include_dashboard, the fsdp mixed_precision dicts, the override_config
.attn_implementation of actor and critic) must then be given without "+" (or with "++"):
Hydra refuses to add a key twice.

Critic-free estimators only (grpo, rloo, ...): a critic (``algorithm.adv_estimator=gae``) fails on
CPU because verl 0.9.1 loads value models with ``attn_implementation="flash_attention_2"``
hard-coded (verl/utils/model.py: load_valuehead_model). The critic settings below are still the
right ones for the day that is fixed.
"""

from __future__ import annotations

import os
from pathlib import Path

from contract.env import (
    HF_HUB_OFFLINE, PYTHONPATH, RAY_USAGE_STATS, TOKENIZERS_PARALLELISM, TRANSFORMERS_OFFLINE, VERL_EXTERNAL_MODULES,
    VERL_PLATFORM,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MIN_LOGICAL_CPUS = 8
"""Ray CPUs verl's actors ask for on this path: TaskRunner 1, the worker's placement-group bundle 3
(max_colocate_count), agent-loop worker 1, reward-loop worker 1, load balancer 1, plus slack."""


def cpu_runtime(num_trial_cpus_hint: int = 16) -> tuple[dict[str, str], list[str]]:
    """(env vars, Hydra overrides) selecting the CPU path of verl's main_ppo.

    ``num_trial_cpus_hint`` is the number of *logical* CPUs declared to Ray when verl starts Ray
    itself (``ray_kwargs.ray_init.num_cpus``; ignored when the caller already runs Ray). It must be
    at least MIN_LOGICAL_CPUS: the actors' CPU requests are bookkeeping, not cores, and a 2-core
    machine with num_cpus=2 waits forever for a CPU.
    """
    if num_trial_cpus_hint < MIN_LOGICAL_CPUS:
        raise ValueError(f"num_trial_cpus_hint: at least {MIN_LOGICAL_CPUS} logical CPUs, got {num_trial_cpus_hint}")
    pythonpath = os.pathsep.join(p for p in (str(REPO_ROOT), PYTHONPATH.raw() or "") if p)
    env = {
        # every verl process (driver, TaskRunner, workers) imports the CPU platform, gloo process
        # groups, the CPU FSDP engine registration, the zoo_hf rollout and our zoo_* losses
        VERL_EXTERNAL_MODULES.name: "trainers.verl_backend.cpu",
        VERL_PLATFORM.name: "cpu",
        PYTHONPATH.name: pythonpath,  # Ray workers must import trainers.*
        TOKENIZERS_PARALLELISM.name: "false",
        RAY_USAGE_STATS.name: "0",
        HF_HUB_OFFLINE.name: "1",
        TRANSFORMERS_OFFLINE.name: "1",
    }
    overrides = [
        # legacy RayPPOTrainer: the v1 TaskRunner imports TransferQueue and forces
        # transfer_queue.enable=True (verl/trainer/main_ppo.py); v0 never touches it
        "trainer.use_v1=False",
        "transfer_queue.enable=False",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
        "trainer.device=cpu",
        "trainer.nnodes=1",
        "trainer.n_gpus_per_node=1",
        # verl's own ray.init (only when Ray is not running yet): logical resources
        f"ray_kwargs.ray_init.num_cpus={int(num_trial_cpus_hint)}",
        "+ray_kwargs.ray_init.num_gpus=1",
        "+ray_kwargs.ray_init.include_dashboard=False",
        # FSDP2 in fp32 without torch.compile (FSDP1 needs a device id; bf16 is slow on most CPUs)
        "actor_rollout_ref.actor.strategy=fsdp2",
        "actor_rollout_ref.actor.use_torch_compile=False",
        "actor_rollout_ref.actor.fsdp_config.strategy=fsdp2",
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile=False",
        "+actor_rollout_ref.actor.fsdp_config.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}",
        "actor_rollout_ref.ref.fsdp_config.strategy=fsdp2",
        "actor_rollout_ref.ref.fsdp_config.use_torch_compile=False",
        "+actor_rollout_ref.ref.fsdp_config.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}",
        "critic.strategy=fsdp2",
        "critic.fsdp.strategy=fsdp2",
        "critic.fsdp.use_torch_compile=False",
        "+critic.fsdp.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}",
        # verl's model config defaults to flash_attention_2 (CUDA only)
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        "+critic.model.override_config.attn_implementation=sdpa",
        # rollout: transformers generate (trainers/verl_backend/hf_rollout.py), one replica
        "actor_rollout_ref.rollout.name=zoo_hf",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        "actor_rollout_ref.rollout.dtype=float32",
        "actor_rollout_ref.rollout.calculate_log_probs=True",
        "actor_rollout_ref.rollout.checkpoint_engine.backend=naive",
        "actor_rollout_ref.rollout.agent.num_workers=1",
        # one process each for data loading and reward (2 cores)
        "data.dataloader_num_workers=0",
        "reward.num_workers=1",
    ]
    return env, overrides
