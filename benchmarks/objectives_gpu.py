"""CUDA side of benchmarks/objectives.py: event timing, allocator peaks, the bandwidth bound.

    python benchmarks/objectives.py --device cuda            # uses these (see that file's docstring)

* ``call_s(step)``: one call of a forward+backward between two CUDA events, in seconds;
  ``time_ms(step, reps)`` repeats it after ``WARMUP`` calls, in ms.
* ``peak_mib(step)``: the caching allocator's peak above what was allocated before one call
  (``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``): saved activations,
  temporaries and the gradient, not the inputs.
* ``copy_bandwidth()``: bytes read + written per second by a 1 GiB device-to-device copy, the
  ceiling the losses are held against (measured, not the datasheet's).
* ``min_bytes(...)``: what one forward+backward must move at least: read log-probs, old log-probs,
  advantages (per token), the mask (bool) and, for entropy mixing, the entropy, and write the
  gradient of the log-probs. ``bound fraction = min_bytes / time / copy_bandwidth``.
"""

from __future__ import annotations

import torch

WARMUP = 3


def call_s(step) -> float:
    """Seconds of one call of ``step`` on the GPU, between two CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    step()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3


def time_ms(step, reps: int) -> list[float]:
    """ms per call of ``step`` on the GPU, one CUDA event pair per call, after WARMUP calls."""
    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    return [call_s(step) * 1e3 for _ in range(reps)]


def peak_mib(step) -> float:
    """Peak allocator memory (MiB) one call adds above what is allocated before it."""
    step()  # warm-up: lazy state, workspaces
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2**20


def copy_bandwidth(gib: float = 1.0, reps: int = 20) -> float:
    """Bytes/s (read + written) of a device-to-device copy of ``gib`` GiB: median of ``reps``."""
    buffers = [torch.empty(int(gib * 2**30), dtype=torch.uint8, device="cuda") for _ in range(2)]
    times = time_ms(lambda: buffers[1].copy_(buffers[0]), reps)
    buffers.clear()
    torch.cuda.empty_cache()
    return 2 * gib * 2**30 / (sorted(times)[len(times) // 2] / 1e3)


def min_bytes(batch: int, tokens: int, dtype: torch.dtype, entropy: bool) -> int:
    """Least bytes one forward+backward moves: 3 (+1 with entropy) float inputs and a bool mask read,
    the log-probs' gradient written."""
    size = torch.empty((), dtype=dtype).element_size()
    return batch * tokens * (size * (3 + int(entropy)) + 1 + size)


def device_line() -> str:
    """GPU model, driver-side CUDA version and torch, for the table's heading."""
    props = torch.cuda.get_device_properties(0)
    return f"{props.name}, {props.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}, torch {torch.__version__}"
