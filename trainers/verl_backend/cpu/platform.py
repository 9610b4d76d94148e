"""verl platform "cpu" (PlatformRegistry) and plain gloo process groups for it.

verl 0.9.1 resolves its platform once per process (verl/plugin/platform/platform_manager.py):
``VERL_PLATFORM`` names it, else the first registered platform whose ``is_platform_available``
is true, else "nvidia" (device cuda, backend nccl). ``PlatformCPU`` is registered as "cpu" and
is never auto-detected (``is_platform_available`` is False), so only ``VERL_PLATFORM=cpu``
selects it: importing this module changes nothing for other runs.

It reports ``ray_resource_name() == "GPU"``: verl's resource pools hard-code ``use_gpu=True``
(single_controller/ray/base.py) and ask Ray for one GPU per worker, so a CPU run declares
logical GPUs to Ray (``ray_init.num_gpus``) that stand for "one training process each".

``device_module`` is a small stand-in for ``torch.cuda`` (``get_torch_device()``): memory and
cache calls are no-ops or report host memory, RNG state is the CPU generator's, everything
else falls through to ``torch.cpu``.

``install_gloo_process_groups()`` wraps ``torch.distributed.init_process_group`` so that, while
the CPU platform is active, any backend string (verl passes ``cpu:gloo,<device>:<nccl>``) becomes
plain ``gloo``; other platforms' calls pass through untouched.
"""

from __future__ import annotations

import contextlib
import functools
import os
import types
from typing import Any, Optional

import torch
import torch.distributed
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

from contract.env import CUDA_VISIBLE_DEVICES, VERL_PLATFORM

PLATFORM_NAME = "cpu"


def cpu_platform_active() -> bool:
    """True when this process selected the CPU platform (``VERL_PLATFORM=cpu``)."""
    return (VERL_PLATFORM.get() or "").strip().lower() == PLATFORM_NAME


def _host_memory() -> tuple[int, int]:
    page = os.sysconf("SC_PAGE_SIZE")
    return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page


class _CpuDeviceModule(types.ModuleType):
    """What verl calls on ``get_torch_device()``, for the host CPU."""

    def __init__(self):
        super().__init__("zoo_cpu_device")

    def __getattr__(self, name: str) -> Any:  # anything not defined here: torch.cpu's
        return getattr(torch.cpu, name)

    # device selection: one "device"
    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> str:
        return "cpu"  # like torch.cpu.current_device(); verl uses it as a torch device

    def set_device(self, device: Any) -> None:
        return None

    def get_device_name(self, device: Any = None) -> str:
        return "cpu"

    def synchronize(self, device: Any = None) -> None:
        return None

    # memory: nothing to free or cap; statistics report 0, mem_get_info the host's RAM
    def empty_cache(self) -> None:
        return None

    def ipc_collect(self) -> None:
        return None

    def set_per_process_memory_fraction(self, fraction: float, device: Any = None) -> None:
        return None

    def memory_allocated(self, device: Any = None) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        return None

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        return _host_memory()

    # RNG: the CPU generator
    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    def get_rng_state(self, device: Any = None) -> torch.Tensor:
        return torch.get_rng_state()

    def set_rng_state(self, state: torch.Tensor, device: Any = None) -> None:
        torch.set_rng_state(state)


CPU_DEVICE_MODULE = _CpuDeviceModule()


@PlatformRegistry.register(platform=PLATFORM_NAME)
class PlatformCPU(PlatformBase):
    """Host CPU as verl's device: torch device "cpu", gloo collectives, Ray resource "GPU"."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> types.ModuleType:
        return CPU_DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return False  # explicit opt-in only: VERL_PLATFORM=cpu

    def current_device(self) -> str:
        # verl passes get_device_id() to .to(...) and torch.device(...): "cpu", not index 0
        # (which torch reads as cuda:0)
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: Optional[int] = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[Optional[int], Optional[int]]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        # Ray writes the logical GPU ids it assigns to an actor here; nothing reads it on CPU.
        return CUDA_VISIBLE_DEVICES.name

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_resource_options(self, num_gpus: float) -> dict[str, Any]:
        return {"num_gpus": num_gpus}

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def install_gloo_process_groups() -> None:
    """Wrap torch.distributed.init_process_group: plain gloo while the CPU platform is active.

    Idempotent. The platform check happens per call, so a process that imports this but runs
    another platform is unaffected.
    """
    original = torch.distributed.init_process_group
    if getattr(original, "_zoo_cpu_gloo", False):
        return

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any):
        if cpu_platform_active():
            if args:  # backend is the first positional parameter
                args = ("gloo",) + tuple(args[1:])
            else:
                kwargs["backend"] = "gloo"
            kwargs.pop("device_id", None)  # a CPU process group has no device to bind
        return original(*args, **kwargs)

    init_process_group._zoo_cpu_gloo = True
    torch.distributed.init_process_group = init_process_group
