"""WarmupAdamW against torch.optim.AdamW + LambdaLR: bit-identical updates and lr, torch's state-dict
layouts, checkpoints interchangeable both ways, and no torch._dynamo import."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trainers.local.optimizer import WarmupAdamW

REPO = Path(__file__).resolve().parents[3]
LR, WD, WARMUP = 3e-3, 0.05, 3


def _params(seed: int = 0, dtype=torch.float32) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(shape, generator=g).to(dtype)) for shape in ((5, 4), (7,), (2, 3))]


def _grads(step: int, params) -> list[torch.Tensor | None]:
    g = torch.Generator().manual_seed(100 + step)
    grads = [torch.randn(p.shape, generator=g).to(p.dtype) for p in params]
    if step in (1, 3):  # the last parameter gets no gradient on these steps (not in the graph)
        grads[-1] = None
    return grads


def _torch_pair(params, fused: bool):
    kwargs = {"fused": True} if fused else {"foreach": True}
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=WD, **kwargs)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / WARMUP))


def _apply(params, grads):
    for p, g in zip(params, grads):
        p.grad = None if g is None else g.clone()


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_updates_and_lr_are_bit_identical_to_torch(fused, dtype):
    ours_p, ref_p = _params(dtype=dtype), _params(dtype=dtype)
    ours = WarmupAdamW(ours_p, lr=LR, weight_decay=WD, warmup_steps=WARMUP, fused=fused)
    ref, sched = _torch_pair(ref_p, fused)
    lrs = []
    for step in range(6):
        grads = _grads(step, ours_p)
        _apply(ours_p, grads), _apply(ref_p, grads)
        assert ours.lr == ref.param_groups[0]["lr"]
        lrs.append(ours.lr)
        ours.step(), ref.step(), sched.step()
        for a, b in zip(ours_p, ref_p):
            assert torch.equal(a, b)
        assert ours.lr == sched.get_last_lr()[0]
    assert lrs == [LR / 3, 2 * LR / 3, LR, LR, LR, LR]
    assert not torch.equal(ours_p[0], _params(dtype=dtype)[0])  # it did move the weights


def test_zero_grad_clears_gradients_and_frozen_parameters_keep_no_state():
    params = _params()
    opt = WarmupAdamW(params, lr=LR, weight_decay=WD, warmup_steps=1, fused=True)
    _apply(params, _grads(1, params))  # the last parameter has no gradient
    before = params[-1].detach().clone()
    opt.step()
    assert sorted(opt.state) == [0, 1] and torch.equal(params[-1], before)
    opt.zero_grad()
    assert all(p.grad is None for p in params)


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and torch.equal(a, b)
    return a == b


@pytest.mark.parametrize("fused", [True, False])
def test_state_dicts_have_torchs_layout_and_values(fused):
    ours_p, ref_p = _params(), _params()
    ours = WarmupAdamW(ours_p, lr=LR, weight_decay=WD, warmup_steps=WARMUP, fused=fused)
    ref, sched = _torch_pair(ref_p, fused)
    for step in range(4):
        grads = _grads(step, ours_p)
        _apply(ours_p, grads), _apply(ref_p, grads)
        ours.step(), ref.step(), sched.step()
    theirs = ref.state_dict()
    if not fused:
        theirs["param_groups"][0]["foreach"] = None  # we always write None there; torch keeps what it was given
        theirs["param_groups"][0]["fused"] = False
    assert _same(ours.state_dict(), theirs)
    assert _same(ours.schedule_state_dict(), sched.state_dict())


def _continue(opt_step, params, start: int, n: int) -> None:
    for step in range(start, start + n):
        _apply(params, _grads(step, params))
        opt_step()


def _saved(state: dict) -> dict:
    """Through torch.save/torch.load, as a trainer checkpoint (so no tensor is shared)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)  # as the trainer loads checkpoints


def test_checkpoints_load_both_ways_and_continue_identically():
    # torch -> ours
    ref_p = _params()
    ref, sched = _torch_pair(ref_p, fused=True)
    _continue(lambda: (ref.step(), sched.step()), ref_p, 0, 2)
    ours_p = [torch.nn.Parameter(p.detach().clone()) for p in ref_p]
    # lr and weight decay given here are wrong on purpose: they come from the loaded state
    ours = WarmupAdamW(ours_p, lr=1.0, weight_decay=0.0, warmup_steps=WARMUP, fused=True)
    ours.load_state_dict(_saved(ref.state_dict()), _saved(sched.state_dict()))
    _continue(lambda: (ref.step(), sched.step()), ref_p, 2, 3)
    _continue(ours.step, ours_p, 2, 3)
    assert all(torch.equal(a, b) for a, b in zip(ours_p, ref_p))
    # ours -> torch
    back_p = [torch.nn.Parameter(p.detach().clone()) for p in ours_p]
    back, back_sched = _torch_pair(back_p, fused=True)
    back.load_state_dict(_saved(ours.state_dict()))
    back_sched.load_state_dict(_saved(ours.schedule_state_dict()))
    _continue(lambda: (back.step(), back_sched.step()), back_p, 5, 2)
    _continue(ours.step, ours_p, 5, 2)
    assert all(torch.equal(a, b) for a, b in zip(ours_p, back_p))


def test_a_state_for_other_parameters_is_refused():
    opt = WarmupAdamW(_params(), lr=LR, weight_decay=WD, warmup_steps=1, fused=True)
    other = WarmupAdamW(_params()[:2], lr=LR, weight_decay=WD, warmup_steps=1, fused=True)
    with pytest.raises(ValueError, match="one parameter group of 3 parameters, got groups of \\[2\\]"):
        opt.load_state_dict(other.state_dict(), other.schedule_state_dict())
    p = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(ValueError, match="appears twice"):
        WarmupAdamW([p, p], lr=LR, weight_decay=WD, warmup_steps=1, fused=True)


@pytest.mark.slow
def test_stepping_never_imports_dynamo():
    code = ("import sys, torch; from trainers.local.optimizer import WarmupAdamW; "
            "p = [torch.nn.Parameter(torch.ones(3))]; "
            "o = WarmupAdamW(p, lr=0.1, weight_decay=0.0, warmup_steps=1, fused=True); "
            "p[0].grad = torch.ones(3); o.step(); o.state_dict(); "
            "print('torch._dynamo' in sys.modules, float(p[0][0]) < 1)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"], out.stdout + out.stderr
