"""verl 0.9.1 on CPU: platform, gloo, FSDP engine, transformers rollout and our losses, in one import.

    env, overrides = cpu_runtime()          # VERL_USE_EXTERNAL_MODULES=trainers.verl_backend.cpu, ...
    python -m verl.trainer.main_ppo <overrides> <trial overrides>

verl imports the modules named in ``VERL_USE_EXTERNAL_MODULES`` at the end of ``import verl``, in
the driver and in every Ray worker, so importing this package there:

    1. checks verl's version (``check_verl_version``: exactly 0.9.1, whose internals this relies on);
    2. registers our objectives as policy losses zoo_<name> (``trainers.verl_plugin``);
    3. registers the "cpu" platform (platform.py), selected by ``VERL_PLATFORM=cpu`` only;
    4. wraps ``torch.distributed.init_process_group`` to plain gloo while that platform is active;
    5. registers verl's FSDP engines for device "cpu" when verl imports them (engine.py);
    6. registers the "zoo_hf" rollout (transformers generate, ../hf_rollout.py) in both rollout registries.

Findings about verl 0.9.1 this path depends on (paths under verl/)
    TransferQueue  ``transfer_queue.enable`` (default False) does NOT turn it off: the default v1
        TaskRunner (trainer/main_ppo.py, ``trainer.use_v1=True``) imports ``transfer_queue``, sets
        ``config.transfer_queue.enable = True`` and calls ``tq.init``, which creates the controller
        actor ``TransferQueueController`` (1 CPU) in the fixed Ray namespace ``transfer_queue`` plus
        ``SimpleStorage.num_data_storage_units`` (default 8) storage actors, each asking Ray for a
        CPU. What really turns it off is ``trainer.use_v1=False``: the legacy RayPPOTrainer
        (trainer/main_ppo_v0.py, deprecated but shipped) never imports it (verl.protocol and
        single_controller fall back to a stub when the package is absent). The v0 path is the only
        one here: this project installs ``verl==0.9.1`` without the ``verl-core`` extra, so the
        ``transfer_queue`` package (PyPI TransferQueue) is not installed at all. Under v1, two runs in
        one Ray cluster collide on that name: TransferQueue's ``init`` catches the "name taken"
        error and connects to the existing controller (its ``_init_from_existing``), so the second
        run silently shares the first run's controller and storage. verl passes no namespace to
        it and TransferQueue's ``init`` hard-codes it, so the only separation is one Ray cluster
        per run (or v0).
    Fixed actor names (collide between runs in one Ray namespace; a driver that calls ``ray.init``
        itself, or connects with its own ``namespace=``, gets its own anonymous namespace):
        ``reward_loop_worker_{i}`` (experimental/reward_loop/reward_loop.py, always created),
        ``vllm_server_{replica}_{node}`` / ``sglang_server_*`` / ``trtllm_server_{replica}``
        (looked up by name with ``ray.get_actor``), ``rollout_colocate_*`` / ``rollout_standalone_*``
        name prefixes, ``global_tracker`` (detached, utils/debug/trajectory_tracker.py, only when
        trajectory tracking is on) and the TransferQueue controller (v1 only). Unique names:
        ``agent_loop_worker_{i}_<uuid8>``, training workers ``<random 6 chars>...`` and our
        ``zoo_hf_server_<job id>_<replica>``. Placement groups are named ``global_poolverl_group_...``
        and are not removed when ``run_ppo`` returns (they go when the driver exits).
    Other CUDA assumptions worked around here: the platform falls back to "nvidia" without an
        accelerator (platform_manager.py); resource pools hard-code ``use_gpu=True``, so Ray needs
        logical GPUs (``ray_init.num_gpus``); the process-group backend string is
        ``cpu:gloo,<device>:<nccl>``; the FSDP engines register only for cuda/npu; FSDP1 passes
        ``device_id`` (use fsdp2); ``get_device_id()`` is used as a torch device, so the CPU
        platform returns "cpu"; the model config defaults to flash_attention_2 (override: sdpa).
"""

from __future__ import annotations

import verl

SUPPORTED_VERL_VERSION = "0.9.1"


def check_verl_version() -> None:
    """Raise RuntimeError unless the installed verl is exactly SUPPORTED_VERL_VERSION."""
    found = getattr(verl, "__version__", None)
    if found != SUPPORTED_VERL_VERSION:
        raise RuntimeError(
            f"trainers.verl_backend.cpu supports verl {SUPPORTED_VERL_VERSION} only (it relies on that "
            f"version's platform, engine and rollout registries), found verl {found}. "
            "Install the supported version with: bash scripts/setup.sh"
        )


check_verl_version()

import trainers.verl_plugin  # noqa: E402,F401  (registers the zoo_* policy losses)
from trainers.verl_backend.cpu.engine import install_fsdp_cpu_registration  # noqa: E402
from trainers.verl_backend.cpu.platform import (  # noqa: E402
    PLATFORM_NAME, PlatformCPU, cpu_platform_active, install_gloo_process_groups,
)
# registers zoo_hf when its import ends; a module, not names: a Ray actor process that unpickles the
# rollout server imports hf_rollout first, whose `import verl` imports this package midway through it
import trainers.verl_backend.hf_rollout  # noqa: E402,F401
from trainers.verl_backend.config import CPU_ROLLOUT as ROLLOUT_NAME  # noqa: E402
from trainers.verl_backend.cpu_runtime import cpu_runtime  # noqa: E402

install_gloo_process_groups()
install_fsdp_cpu_registration()

__all__ = [
    "PLATFORM_NAME", "ROLLOUT_NAME", "SUPPORTED_VERL_VERSION", "PlatformCPU", "check_verl_version",
    "cpu_platform_active", "cpu_runtime",
]
