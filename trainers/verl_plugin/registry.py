"""The zoo's objectives as verl 0.9.1 policy losses: ``zoo_<name>`` in ``POLICY_LOSS_REGISTRY``.

    import trainers.verl_plugin                      # registers zoo_grpo ... zoo_dhpo
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    loss, metrics = get_policy_loss_fn("zoo_sspo")(old_log_prob, log_prob, advantages, response_mask,
                                                   loss_agg_mode="seq-mean-token-mean", config=actor_config)

Each ``zoo_<name>`` has verl's signature ``(old_log_prob, log_prob, advantages, response_mask,
loss_agg_mode="token-mean", config=None, rollout_is_weights=None) -> (loss, metrics)`` plus the
optional keywords ``entropy`` and ``dp_group`` (verl passes neither) and calls
``get_objective(name, ...)`` of trainers.objectives: the math lives there only.

Contract, in short:
  - parameters: ``config.policy_loss.<our name>`` when set (``policy_loss._target_=
    trainers.verl_plugin.ZooPolicyLossConfig``), else verl's actor-level clip_ratio_low/high (or
    clip_ratio) and tau_pos/tau_neg, else the paper default; agg <- ``loss_agg_mode``
    ('token-mean', 'seq-mean-token-mean'; the other modes raise ValueError);
  - the local-mean loss is rescaled to verl's global-batch normalisation (``global_batch_info``);
  - ``rollout_is_weights`` scale the advantage (per token; per response as a geometric mean for
    ObjectiveSpec.sequence_term objectives);
  - zoo_dhpo with mixing='entropy' takes the entropy from ``entropy=`` or from verl's ppo_loss via
    ``enable_entropy_forwarding()`` (ZOO_VERL_FORWARD_ENTROPY=1), min/max all-reduced over
    ``dp_group``; without entropy it raises ValueError;
  - ``ZOO_VERL_RECORD_PARAMS=<path>`` appends each loss's resolved params once per process (audit).

Reference (the mapping in full, the DHPO-E normalisation scope, the audit record's fields and every
known difference to verl's own losses, pinned by tests/trainers/verl_plugin): docs/objectives.md,
"verl plug-in reference".
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import torch
import torch.distributed as dist
from verl.trainer.ppo import core_algos
from verl.workers.config import PolicyLossConfig

from contract.env import RECORD_PARAMS
from trainers.objectives import AGG_MODES, OBJECTIVES, ObjectiveSpec, PolicyBatch, get_objective
from trainers.objectives.dhpo import dhpo_loss
from trainers.verl_backend.loss_names import ACTOR_FIELDS, AGG_PARAM, LOSS_MODE_PREFIX, SHARED_CLIP_FIELD

PREFIX = LOSS_MODE_PREFIX


# Set by the wrapper of enable_entropy_forwarding() for the duration of one verl ppo_loss call:
# the micro-batch's per-token entropy ([B, T], detached) and the dp_group verl passed to ppo_loss.
_FORWARDED_ENTROPY: contextvars.ContextVar[Optional[torch.Tensor]] = contextvars.ContextVar(
    "zoo_verl_forwarded_entropy", default=None
)
_FORWARDED_DP_GROUP: contextvars.ContextVar[Any] = contextvars.ContextVar("zoo_verl_forwarded_dp_group", default=None)
# audit records already written: (pid, loss key, params, path)
_RECORDED: set[tuple[int, str, tuple[tuple[str, Any], ...], str]] = set()


@dataclass
class ZooPolicyLossConfig(PolicyLossConfig):
    """verl's PolicyLossConfig plus the zoo parameters verl has no field for (None = zoo default)."""

    gate: Optional[str] = None
    """sspo: atanlog, siglog, expatan, expsig or gumbel."""
    mixing: Optional[str] = None
    """dhpo: 'averaged' or 'entropy' (needs entropy forwarding)."""
    clip_mode: Optional[str] = None
    """dhpo: 'branch' or 'unified'."""
    entropy_norm: Optional[str] = None
    """dhpo: scope of the entropy min-max normalisation, 'batch' (micro-batch) or 'sequence'."""
    eps_low_token: Optional[float] = None
    """dhpo branch clipping: lower range of the token ratio."""
    eps_high_token: Optional[float] = None
    """dhpo branch clipping: upper range of the token ratio."""
    eps_low_seq: Optional[float] = None
    """dhpo branch clipping: lower range of the sequence ratio."""
    eps_high_seq: Optional[float] = None
    """dhpo branch clipping: upper range of the sequence ratio."""
    clip_in_log_space: Optional[bool] = None
    """gmpo: clip log r to [-eps_low, eps_high] (verl geo_mean) instead of r to [1-eps_low, 1+eps_high]."""


def _lookup(section: Any, key: str) -> Any:
    """section.key for a dataclass, BaseConfig, dict or DictConfig; None when absent."""
    if section is None:
        return None
    if isinstance(section, Mapping) or hasattr(section, "get"):
        try:
            return section.get(key, None)
        except Exception:  # e.g. a struct-mode DictConfig refusing an unknown key
            pass
    return getattr(section, key, None)


def objective_params(name: str, config: Any) -> dict[str, Any]:
    """Our parameters for objective ``name`` read from a verl actor config (module docstring; docs/objectives.md)."""
    policy_loss = _lookup(config, "policy_loss")
    params: dict[str, Any] = {}
    for field in dataclasses.fields(OBJECTIVES[name].params_cls):
        if field.name == AGG_PARAM:  # comes from loss_agg_mode
            continue
        value = _lookup(policy_loss, field.name)
        if value is None and field.name in ACTOR_FIELDS:
            value = _lookup(config, ACTOR_FIELDS[field.name])
            if value is None and field.name.startswith("eps_"):
                value = _lookup(config, SHARED_CLIP_FIELD)
        if value is not None:
            params[field.name] = value
    return params


@functools.lru_cache(maxsize=256)
def _configured(spec: ObjectiveSpec, params: tuple[tuple[str, Any], ...]):
    # get_objective validates; cached because verl calls the loss once per micro-batch. Keyed by
    # the spec, not its name: a spec registered again under the same name is not served stale.
    return get_objective(spec.name, **dict(params))


def _weighted_advantages(name: str, advantages: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """Fold rollout IS weights into the advantages (exact: losses are 1-homogeneous in A >= 0 scaling):
    per response (geometric mean) for objectives whose ObjectiveSpec.sequence_term is set, else per token."""
    if weights is None:
        return advantages
    weights = weights.detach()
    if OBJECTIVES[name].sequence_term:
        # geometric mean of the token weights over each response, exactly as verl's geo_mean
        m = mask.to(weights.dtype)
        seq_w = torch.exp((torch.log(weights + 1e-10) * m).sum(-1) / (m.sum(-1) + 1e-8))
        return advantages * (seq_w[:, None] if advantages.dim() == 2 else seq_w)
    if advantages.dim() == 1:
        advantages = advantages[:, None]
    return advantages * weights


def _global_scale(loss: torch.Tensor, mask: torch.Tensor, agg: str, config: Any) -> torch.Tensor | float:
    """local_count / global_count * dp_size: turns our local mean into verl's agg_loss share."""
    info = _lookup(config, "global_batch_info") or {}
    dp_size = info.get("dp_size", None) or 1
    if agg == "token-mean":
        total, local = info.get("batch_num_tokens", None), mask.sum()
        what = "batch_num_tokens"
    else:
        total, local = info.get("global_batch_size", None), (mask.sum(-1) > 0).sum()
        what = "global_batch_size"
    if total is None:
        if dp_size > 1:
            raise ValueError(f"global_batch_info: (global) {what} is required when dp_size > 1")
        return 1.0
    return local.to(loss.dtype) / total * dp_size


def _group_size(dp_group: Any) -> int:
    """Ranks in dp_group; 1 without a group or without an initialised torch.distributed."""
    if dp_group is None or not (dist.is_available() and dist.is_initialized()):
        return 1
    return max(dist.get_world_size(dp_group), 1)


def _all_reduce_range(dp_group: Any):
    """(h_min, h_max) -> their MIN / MAX over dp_group, in one collective (max h = -min(-h))."""

    def reduce(h_min: torch.Tensor, h_max: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        both = torch.stack([h_min, -h_max])
        dist.all_reduce(both, op=dist.ReduceOp.MIN, group=dp_group)
        return both[0], -both[1]

    return reduce


def _entropy_range_group(objective: Any, dp_group: Any) -> Any:
    """dp_group when the objective is dhpo's 'batch' entropy normalisation and dp_group spans > 1 rank, else None."""
    params = objective.params
    if (objective.spec.loss_fn is dhpo_loss and params.mixing == "entropy" and params.entropy_norm == "batch"
            and _group_size(dp_group) > 1):
        return dp_group
    return None


def _record(key: str, params: tuple[tuple[str, Any], ...], objective: Any, entropy: Any, reduce_group: Any) -> None:
    """Audit hook: with ZOO_VERL_RECORD_PARAMS=<path>, append one JSON line per (process, loss, params)."""
    path = RECORD_PARAMS.raw()
    if not path:
        return
    marker = (os.getpid(), key, params, path)
    if marker in _RECORDED:
        return
    line = json.dumps({
        "loss": key,
        "params": dataclasses.asdict(objective.params),
        "entropy": entropy is not None,
        "dp_group_size": _group_size(reduce_group),
        "pid": os.getpid(),
    }, sort_keys=True, default=str) + "\n"
    data = line.encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)  # one write per line: O_APPEND lines of concurrent processes stay whole
        while written < len(data):  # a short write (not seen on local files) still completes the line
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)
    _RECORDED.add(marker)


def make_policy_loss(name: str):
    """verl policy loss (verl's signature, plus ``entropy=`` and ``dp_group=``) computing objective ``name``."""
    if name not in OBJECTIVES:
        raise ValueError(f"objective: unknown name {name!r}; expected one of {sorted(OBJECTIVES)}")

    def policy_loss(
        old_log_prob: torch.Tensor,
        log_prob: torch.Tensor,
        advantages: torch.Tensor,
        response_mask: torch.Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: torch.Tensor | None = None,
        entropy: torch.Tensor | None = None,
        dp_group: Any = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        if loss_agg_mode not in AGG_MODES:
            raise ValueError(
                f"loss_agg_mode: {PREFIX}{name} supports {list(AGG_MODES)}, got {loss_agg_mode!r} "
                "(set actor_rollout_ref.actor.loss_agg_mode)"
            )
        params = objective_params(name, config)
        params["agg"] = loss_agg_mode
        key = tuple(sorted(params.items()))
        objective = _configured(OBJECTIVES[name], key)
        if entropy is None:
            entropy = _FORWARDED_ENTROPY.get()
        if dp_group is None:
            dp_group = _FORWARDED_DP_GROUP.get()
        reduce_group = _entropy_range_group(objective, dp_group)
        _record(PREFIX + name, key, objective, entropy, reduce_group)
        if getattr(objective.params, "mixing", None) == "entropy" and entropy is None:
            raise ValueError(
                f"entropy: {PREFIX}{name} with mixing='entropy' needs per-token entropy, but verl does not "
                "pass it to policy losses. Set ZOO_VERL_FORWARD_ENTROPY=1 (or call "
                "trainers.verl_plugin.enable_entropy_forwarding()) and actor_rollout_ref.actor.calculate_entropy=True, "
                "or pass entropy=... when calling the loss directly."
            )
        batch = PolicyBatch(
            log_probs=log_prob,
            old_log_probs=old_log_prob,
            advantages=_weighted_advantages(name, advantages, response_mask, rollout_is_weights),
            response_mask=response_mask,
            entropy=entropy,
        )
        if reduce_group is None:
            loss, metrics = objective(batch)
        else:  # DHPO-E, 'batch' scope, > 1 data-parallel rank: one min/max over all ranks' micro-batches
            loss, metrics = dhpo_loss(batch, objective.params, entropy_range_reduce=_all_reduce_range(reduce_group))
        return loss * _global_scale(loss, response_mask, loss_agg_mode, config), metrics

    policy_loss.__name__ = f"compute_policy_loss_{PREFIX}{name}"
    policy_loss.__qualname__ = policy_loss.__name__
    policy_loss.__doc__ = f"verl policy loss '{PREFIX}{name}': {OBJECTIVES[name].summary} (trainers.objectives.{name})."
    return policy_loss


def register_zoo_losses() -> list[str]:
    """Register ``zoo_<name>`` for every objective of OBJECTIVES; returns the registered keys."""
    keys = []
    for name in OBJECTIVES:
        core_algos.register_policy_loss(PREFIX + name)(make_policy_loss(name))
        keys.append(PREFIX + name)
    return keys


def enable_entropy_forwarding() -> None:
    """Wrap verl's ``ppo_loss`` so zoo losses see the micro-batch's per-token entropy and dp_group.

    verl's actor loss (verl.workers.utils.losses.ppo_loss) has the entropy in ``model_output``
    (when actor.calculate_entropy=True) and the data-parallel group in ``dp_group`` but calls the
    policy loss with neither. The wrapper converts the entropy to the padded [B, T] layout as
    ppo_loss does, and exposes it (detached) and dp_group to zoo losses for the duration of that
    call through ContextVars (dp_group: DHPO-E's cross-rank min/max, see docs/objectives.md).
    Idempotent. Must run before verl builds its loss function (engine_workers binds ``ppo_loss``
    at worker init), which is the case when it runs on import via ZOO_VERL_FORWARD_ENTROPY=1.
    """
    from verl.workers.utils import losses  # needs the `datasets` package

    if getattr(losses.ppo_loss, "_zoo_forwards_entropy", False):
        return
    original = losses.ppo_loss

    @functools.wraps(original)
    def ppo_loss(config, model_output, data, dp_group=None):
        entropy = model_output.get("entropy", None)
        if entropy is not None:
            entropy = losses.no_padding_2_padding(entropy, data).detach()
        token, group_token = _FORWARDED_ENTROPY.set(entropy), _FORWARDED_DP_GROUP.set(dp_group)
        try:
            return original(config, model_output, data, dp_group)
        finally:
            _FORWARDED_DP_GROUP.reset(group_token)
            _FORWARDED_ENTROPY.reset(token)

    ppo_loss._zoo_forwards_entropy = True
    losses.ppo_loss = ppo_loss
    # modules that already did `from verl.workers.utils.losses import ppo_loss`
    for module_name in ("verl.workers.engine_workers", "verl.trainer.distillation.losses"):
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, "ppo_loss", None) is original:
            module.ppo_loss = ppo_loss
