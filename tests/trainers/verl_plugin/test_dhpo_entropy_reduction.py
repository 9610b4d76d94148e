"""DHPO-E inside verl across data-parallel ranks: the 'batch' min-max range of the entropy is
all-reduced over verl's dp_group, so every rank normalises exactly as one process normalising
the union of the ranks' micro-batches (trainers/verl_plugin/registry.py, "Entropy").

Real processes: torch.multiprocessing spawns 2 ranks with a gloo process group (file:// init),
each with its own micro-batch (different sizes and entropy ranges). Their losses and gradients
are compared, in this process, with the local objective on the union of both micro-batches.

    python -m pytest tests/trainers/verl_plugin/test_dhpo_entropy_reduction.py -q
"""

from __future__ import annotations

import os
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import verl  # noqa: F401  (no importorskip: CI installs verl, a missing verl must fail)
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.workers.config import FSDPActorConfig

import trainers.verl_plugin as plugin
from trainers.objectives import PolicyBatch, get_objective
from trainers.objectives.dhpo import dhpo_loss

pytestmark = pytest.mark.slow  # torch.distributed process groups of gloo ranks (process start-up)

T = 16
SIZES = (3, 5)  # responses per rank's micro-batch
WORLD = len(SIZES)
# (entropy_norm, clip_mode, agg)
CASES = [
    ("batch", "branch", "seq-mean-token-mean"),
    ("batch", "unified", "token-mean"),
    ("sequence", "branch", "seq-mean-token-mean"),
    ("sequence", "unified", "token-mean"),
]
SPAWN_TIMEOUT_S = 240


# ---------------------------------------------------------------- inputs (same in every process)


def rank_inputs(rank: int, empty: bool = False) -> dict[str, torch.Tensor]:
    """float64 [B_r, T] micro-batch of one rank; the ranks' entropy ranges overlap, neither contains the other."""
    g = torch.Generator().manual_seed(100 + rank)
    b = SIZES[rank]
    lengths = torch.randint(3, T + 1, (b,), generator=g)
    lengths[0] = T
    mask = torch.arange(T)[None, :] < lengths[:, None]
    if empty:
        mask = torch.zeros_like(mask)
    old = -torch.rand(b, T, generator=g, dtype=torch.float64) * 3.0 - 0.05
    lp = old + (0.4 * torch.randn(b, T, generator=g, dtype=torch.float64)).clamp(-1.0, 1.0)
    adv = torch.randn(b, 1, generator=g, dtype=torch.float64).expand(b, T) * mask
    low, width = ((0.2, 1.5), (1.0, 2.0))[rank]  # rank 0: [0.2, 1.7], rank 1: [1.0, 3.0]
    entropy = low + width * torch.rand(b, T, generator=g, dtype=torch.float64)
    return dict(lp=lp, old=old, adv=adv, mask=mask, entropy=entropy)


def union_inputs() -> dict[str, torch.Tensor]:
    parts = [rank_inputs(r) for r in range(WORLD)]
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}


def config(norm: str, mode: str, agg: str, dp_size: int = 1, union: dict | None = None) -> FSDPActorConfig:
    cfg = FSDPActorConfig(
        rollout_n=4, ppo_micro_batch_size_per_gpu=max(SIZES), loss_agg_mode=agg,
        policy_loss=plugin.ZooPolicyLossConfig(loss_mode="zoo_dhpo", mixing="entropy", entropy_norm=norm, clip_mode=mode),
    )
    if union is not None:  # verl's global_batch_info: counts over the union of all ranks
        cfg.global_batch_info.update(dp_size=dp_size, batch_num_tokens=int(union["mask"].sum()),
                                     global_batch_size=int((union["mask"].sum(-1) > 0).sum()))
    return cfg


def zoo_call(x, cfg, agg, **extra):
    """(loss, grad wrt log_prob) of the registered zoo_dhpo on a fresh leaf."""
    lp = x["lp"].clone().requires_grad_(True)
    loss, _ = get_policy_loss_fn("zoo_dhpo")(
        old_log_prob=x["old"], log_prob=lp, advantages=x["adv"], response_mask=x["mask"],
        loss_agg_mode=agg, config=cfg, entropy=x["entropy"], **extra,
    )
    (grad,) = torch.autograd.grad(loss, lp)
    return loss.detach(), grad


def local_call(x, norm, mode, agg, entropy_range_reduce=None):
    """(loss, grad) of the local objective (the local trainer's path), optionally with a fixed range hook."""
    params = {**plugin.objective_params("dhpo", config(norm, mode, agg)), "agg": agg}
    lp = x["lp"].clone().requires_grad_(True)
    batch = PolicyBatch(lp, x["old"], x["adv"], x["mask"], x["entropy"])
    if entropy_range_reduce is None:
        loss, _ = get_objective("dhpo", **params)(batch)
    else:
        loss, _ = dhpo_loss(batch, get_objective("dhpo", **params).params, entropy_range_reduce=entropy_range_reduce)
    (grad,) = torch.autograd.grad(loss, lp)
    return loss.detach(), grad


def via_verl_ppo_loss(x, cfg, dp_group, dp_size, union):
    """verl's own actor loss (losses.ppo_loss, wrapped by enable_entropy_forwarding) on un-padded model output."""
    from tensordict import TensorDict
    from verl.workers.utils import losses

    plugin.enable_entropy_forwarding()
    b, P = x["lp"].shape[0], 2
    lengths = x["mask"].sum(-1)
    lp_leaf = x["lp"].clone().requires_grad_(True)

    def unpad(t):  # [B, T] response values -> verl's flat model output, shifted by one
        return torch.cat([torch.cat([t.new_zeros(P - 1), t[i, : int(lengths[i])], t.new_zeros(1)]) for i in range(b)])

    data = TensorDict({
        "prompts": torch.ones(b, P, dtype=torch.long), "responses": torch.ones(b, T, dtype=torch.long),
        "attention_mask": torch.cat([torch.ones(b, P, dtype=torch.long), x["mask"].long()], dim=1),
        "response_mask": x["mask"].long(), "old_log_probs": x["old"], "advantages": x["adv"],
    }, batch_size=[b])
    counts = {"dp_size": dp_size, "batch_num_tokens": int(union["mask"].sum()),
              "global_batch_size": int((union["mask"].sum(-1) > 0).sum())}
    for key, value in counts.items():
        data.set_non_tensor(key, value)
    model_output = {"log_probs": unpad(lp_leaf), "entropy": unpad(x["entropy"])}
    loss, _ = losses.ppo_loss(cfg, model_output, data, dp_group=dp_group)
    (grad,) = torch.autograd.grad(loss, lp_leaf)
    return loss.detach(), grad


# ---------------------------------------------------------------- the spawned ranks


def _count_all_reduce() -> list[int]:
    """Count torch.distributed.all_reduce calls (the plug-in calls dist.all_reduce through the module)."""
    calls = [0]
    original = dist.all_reduce

    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    dist.all_reduce = counting
    return calls


def _worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        group = dist.group.WORLD
        calls = _count_all_reduce()
        union = union_inputs() if world == WORLD else rank_inputs(0)
        x = rank_inputs(rank)
        results = {}
        for norm, mode, agg in CASES:
            cfg = config(norm, mode, agg, dp_size=world, union=union)
            for how, run in {
                "group": lambda: zoo_call(x, cfg, agg, dp_group=group),
                "no_group": lambda: zoo_call(x, cfg, agg),
                "ppo_loss": lambda: via_verl_ppo_loss(x, config(norm, mode, agg), group, world, union),
            }.items():
                before = calls[0]
                loss, grad = run()
                results[(norm, mode, agg, how)] = (loss, grad, calls[0] - before)
        if world == WORLD:
            # an empty micro-batch on rank 1 (+inf / -inf local range) leaves rank 0's range intact
            x_empty = rank_inputs(rank, empty=(rank == 1))
            cfg = config("batch", "branch", "token-mean")
            results["empty_rank1"] = (*zoo_call(x_empty, cfg, "token-mean", dp_group=group), 0)
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _spawn(world: int, tmp_dir) -> list[dict]:
    init_file, out_dir = tmp_dir / "pg_init", tmp_dir / "out"
    out_dir.mkdir()
    context = mp.spawn(_worker, args=(world, str(init_file), str(out_dir)), nprocs=world, join=False)
    deadline = time.monotonic() + SPAWN_TIMEOUT_S
    while not context.join(timeout=5):  # raises ProcessRaisedException when a rank fails
        if time.monotonic() > deadline:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
            pytest.fail(f"{world} spawned ranks did not finish within {SPAWN_TIMEOUT_S} s")
    return [torch.load(out_dir / f"rank{r}.pt", weights_only=False) for r in range(world)]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    return _spawn(WORLD, tmp_path_factory.mktemp("dhpo_dp2"))


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    return _spawn(1, tmp_path_factory.mktemp("dhpo_dp1"))[0]


def _rows(rank: int) -> slice:
    start = sum(SIZES[:rank])
    return slice(start, start + SIZES[rank])


def assert_close(a, b):
    torch.testing.assert_close(a[0], b[0])  # loss
    torch.testing.assert_close(a[1], b[1])  # gradient wrt log_prob


# ---------------------------------------------------------------- (a) two ranks = one process on the union


@pytest.mark.parametrize("mode,agg", [(m, a) for n, m, a in CASES if n == "batch"])
def test_batch_scope_ranks_equal_one_process_on_the_union(two_ranks, mode, agg):
    """verl's per-rank losses are shares of the global mean and FSDP averages the gradients, so
    mean over ranks of loss_r = the union's loss and grad_r / dp_size = the union's gradient rows."""
    union = union_inputs()
    expected_loss, expected_grad = local_call(union, "batch", mode, agg)
    ranks = [two_ranks[r][("batch", mode, agg, "group")] for r in range(WORLD)]
    torch.testing.assert_close(sum(loss for loss, _, _ in ranks) / WORLD, expected_loss)
    for r, (_, grad, n_collectives) in enumerate(ranks):
        torch.testing.assert_close(grad / WORLD, expected_grad[_rows(r)])
        assert n_collectives == 1  # one all-reduce (MIN of (h_min, -h_max)) per loss call


@pytest.mark.parametrize("mode,agg", [(m, a) for n, m, a in CASES if n == "batch"])
def test_batch_scope_each_rank_uses_the_union_range(two_ranks, mode, agg):
    union = union_inputs()
    valid = union["entropy"][union["mask"]]
    union_range = (valid.min(), valid.max())
    for r in range(WORLD):
        x = rank_inputs(r)
        loss, grad = local_call(x, "batch", mode, agg, entropy_range_reduce=lambda lo, hi: union_range)
        scale = (x["mask"].sum() / union["mask"].sum() if agg == "token-mean" else SIZES[r] / sum(SIZES)) * WORLD
        got = two_ranks[r][("batch", mode, agg, "group")]
        assert_close(got[:2], (loss * scale, grad * scale))
        # not vacuous: each rank's own range differs from the union's, and so does the result
        unreduced = two_ranks[r][("batch", mode, agg, "no_group")]
        assert not torch.allclose(got[0], unreduced[0]) and not torch.allclose(got[1], unreduced[1])


@pytest.mark.parametrize("norm,mode,agg", CASES)
def test_verl_ppo_loss_forwards_dp_group(two_ranks, norm, mode, agg):
    """The real path: verl's ppo_loss(..., dp_group) -> entropy-forwarding wrapper -> zoo_dhpo."""
    for r in range(WORLD):
        got, direct = two_ranks[r][(norm, mode, agg, "ppo_loss")], two_ranks[r][(norm, mode, agg, "group")]
        assert_close(got[:2], direct[:2])
        assert got[2] == direct[2] == (1 if norm == "batch" else 0)


def test_empty_micro_batch_on_one_rank_keeps_the_others_range(two_ranks):
    x0 = rank_inputs(0)
    expected = local_call(x0, "batch", "branch", "token-mean")  # rank 0 alone: its own range is the union's
    loss, grad, _ = two_ranks[0]["empty_rank1"]
    assert_close((loss, grad), expected)
    loss1, grad1, _ = two_ranks[1]["empty_rank1"]
    assert loss1 == 0 and not grad1.any()


# ---------------------------------------------------------------- (b) no group / world size 1 = local behaviour


@pytest.mark.parametrize("norm,mode,agg", CASES)
def test_without_group_equals_local(two_ranks, norm, mode, agg):
    """dp_group=None in a 2-rank process: no collective, each rank's own range (the local trainer's)."""
    union = union_inputs()
    for r in range(WORLD):
        x = rank_inputs(r)
        loss, grad = local_call(x, norm, mode, agg)
        scale = (x["mask"].sum() / union["mask"].sum() if agg == "token-mean" else SIZES[r] / sum(SIZES)) * WORLD
        got = two_ranks[r][(norm, mode, agg, "no_group")]
        assert_close(got[:2], (loss * scale, grad * scale))
        assert got[2] == 0


@pytest.mark.parametrize("norm,mode,agg", CASES)
def test_world_size_one_equals_local(one_rank, norm, mode, agg):
    """An initialised group of one rank: no collective, exactly the local objective's loss and gradient."""
    expected = local_call(rank_inputs(0), norm, mode, agg)
    for how in ("group", "no_group", "ppo_loss"):
        loss, grad, n_collectives = one_rank[(norm, mode, agg, how)]
        assert_close((loss, grad), expected)
        assert n_collectives == 0


@pytest.mark.parametrize("norm,mode,agg", CASES)
def test_group_without_torch_distributed_equals_local(norm, mode, agg):
    """This pytest process has no process group: a dp_group argument is ignored."""
    assert not (dist.is_available() and dist.is_initialized())
    x = rank_inputs(1)
    expected = local_call(x, norm, mode, agg)
    for extra in ({}, {"dp_group": None}, {"dp_group": object()}):
        got = zoo_call(x, config(norm, mode, agg), agg, **extra)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])


# ---------------------------------------------------------------- (c) 'sequence' scope is not reduced


@pytest.mark.parametrize("mode,agg", [(m, a) for n, m, a in CASES if n == "sequence"])
def test_sequence_scope_is_unaffected_by_the_group(two_ranks, mode, agg):
    union = union_inputs()
    expected_loss, expected_grad = local_call(union, "sequence", mode, agg)
    for r in range(WORLD):
        with_group = two_ranks[r][("sequence", mode, agg, "group")]
        without = two_ranks[r][("sequence", mode, agg, "no_group")]
        assert torch.equal(with_group[0], without[0]) and torch.equal(with_group[1], without[1])
        assert with_group[2] == 0  # no collective at all
        torch.testing.assert_close(with_group[1] / WORLD, expected_grad[_rows(r)])
    torch.testing.assert_close(sum(two_ranks[r][("sequence", mode, agg, "group")][0] for r in range(WORLD)) / WORLD,
                               expected_loss)
