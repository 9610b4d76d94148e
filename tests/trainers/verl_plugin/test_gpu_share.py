"""A packed trial's memory cap (trainers/verl_plugin/gpu_share.py): queued with CUDA's lazy start, so a
process that never uses CUDA makes no context, and enforced by the caching allocator where it does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[3]

QUEUED = """
import torch
from trainers.verl_plugin.gpu_share import cap_cuda_memory
queued = len(torch.cuda._queued_calls)
cap_cuda_memory(0.25)
print(len(torch.cuda._queued_calls) - queued, torch.cuda.is_initialized())
"""

ENFORCED = """
import torch
from trainers.verl_plugin.gpu_share import cap_cuda_memory
cap_cuda_memory(0.25)
total = torch.cuda.get_device_properties(0).total_memory
small = torch.empty(int(total * 0.1), dtype=torch.uint8, device="cuda")  # within the share
try:
    torch.empty(int(total * 0.3), dtype=torch.uint8, device="cuda")  # past it
    print("allocated")
except torch.OutOfMemoryError:
    print("refused")
"""


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA here starts at once; the queue is for processes without it yet")
def test_the_cap_waits_for_cuda_and_makes_no_context_before():
    added, initialised = _run(QUEUED)
    assert (added, initialised) == ("1", "False")


def test_a_share_outside_zero_to_one_is_refused_naming_the_variable():
    from trainers.verl_plugin.gpu_share import cap_cuda_memory

    with pytest.raises(ValueError, match=r"ZOO_VERL_GPU_MEMORY_FRACTION: expected a number in \(0, 1\], got 1.5"):
        cap_cuda_memory(1.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (scripts/gpu_check.py)")
def test_an_allocation_past_the_share_fails_in_that_process_alone():
    assert _run(ENFORCED) == ["refused"]
