"""Every objective option on a CUDA GPU in bf16 equals the CPU in float32 on the same values.

Skipped without a GPU (CI has none); on a GPU host: `pytest tests/trainers/objectives/test_objectives_cuda.py`.
bf16 inputs are upcast inside the objectives (DESIGN.md "Objective"), so given the same bf16-rounded
log-probs, the GPU's loss matches the CPU's to float32 precision and its gradient to bf16 rounding.
"""

from __future__ import annotations

import pytest
import torch

from objectives_testlib import configs, evaluate, random_batch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

LENGTHS, T = [7, 3, 6, 1, 5, 7], 7


@pytest.mark.parametrize("name,params", configs())
def test_cuda_bf16_equals_cpu_float32_on_the_same_values(name, params):
    lp, old, adv, mask, ent = (x.to(torch.bfloat16) for x in random_batch(LENGTHS, T, seed=11))
    cpu = evaluate(name, params, *(x.float() for x in (lp, old, adv, mask, ent)))
    gpu = evaluate(name, params, *(x.cuda() for x in (lp, old, adv, mask, ent)))
    loss, grad, metrics = gpu
    assert loss.dtype == torch.float32 and loss.device.type == "cuda"
    assert grad.dtype == torch.bfloat16  # the gradient of a bf16 leaf
    torch.testing.assert_close(loss.cpu(), cpu[0], rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(grad.float().cpu(), cpu[1], rtol=1.6e-2, atol=1e-4)  # bf16 has 8 mantissa bits
    for key, value in cpu[2].items():
        assert metrics[key] == pytest.approx(value, rel=1e-3, abs=1e-5), key
