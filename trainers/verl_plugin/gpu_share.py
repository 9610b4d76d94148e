"""A packed trial's CUDA memory cap: each verl process takes at most its share of the GPU.

    ZOO_VERL_GPU_MEMORY_FRACTION=0.25   # set by the verl backend for resources.gpus: 0.25
    cap_cuda_memory(0.25)               # what importing trainers.verl_plugin does with it

verl has no per-process memory setting, and its Ray workers import this package (through
VERL_USE_EXTERNAL_MODULES) before anything touches CUDA. The cap is queued with torch's lazy CUDA
initialisation: a process that never uses CUDA (verl's TaskRunner, the reward workers) creates no
CUDA context for it; one that does gets ``torch.cuda.set_per_process_memory_fraction(share)`` on
its device as CUDA starts. An allocation past the share then fails with torch's out-of-memory
error in that trial alone, instead of starving the trials sharing the GPU.
"""

from __future__ import annotations


def cap_cuda_memory(share: float) -> None:
    """Cap this process's CUDA caching allocator to ``share`` of its device, now or when CUDA starts."""
    if not 0 < share <= 1:
        raise ValueError(f"ZOO_VERL_GPU_MEMORY_FRACTION: expected a number in (0, 1], got {share!r}")
    import torch

    def cap() -> None:
        torch.cuda.set_per_process_memory_fraction(float(share))

    torch.cuda._lazy_call(cap)  # runs at once when CUDA is initialised, else in torch.cuda._lazy_init
