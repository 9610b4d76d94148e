"""Checks of a composed verl ``main_ppo`` config that verl itself makes late or not at all, for
trainers/verl_backend/translate.py's validate_overrides: keys and leaf types against verl's config
dataclasses, batch splits over GPUs and micro-batches, our objective's parameters as the plug-in
reads them. Every failure is a ConfigError naming the verl key and what was expected.

    python -m pytest tests/trainers/verl_backend/test_translate.py -q
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from contract.env import FORWARD_ENTROPY
from contract.errors import ConfigError
from contract.suggest import did_you_mean
from trainers.objectives import get_objective
from trainers.verl_backend.loss_names import ACTOR_FIELDS, objective_of

ACTOR = "actor_rollout_ref.actor"
ROLLOUT = "actor_rollout_ref.rollout"


def config_error(source: str, message: str) -> Exception:
    return ConfigError(f"{source}: {message}")


def first_line(err: BaseException) -> str:
    while isinstance(err.__cause__, BaseException) and type(err).__name__ == "InstantiationException":
        err = err.__cause__  # hydra's wrapper of the dataclass's own error
    text = str(err).strip()
    return (text.splitlines()[0] if text else type(err).__name__).strip()


def require(ok: bool, source: str, key: str, expected: str, value: Any) -> None:
    if not ok:
        raise config_error(source, f"{key}: expected {expected}, got {value!r}")


def resolve_target(target: Any) -> type | None:
    if not isinstance(target, str) or "." not in target:
        return None
    module, _, name = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return cls if dataclasses.is_dataclass(cls) else None


def _type_ok(value: Any, hint: Any) -> str | None:
    """None if ``value`` fits the annotation (checked: int, float, bool, str, Optional, list, dict), else what was expected."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        return _type_ok(value, rest[0]) if len(rest) == 1 else None
    if hint is bool:
        return None if isinstance(value, bool) else "true or false"
    if hint is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else "an integer"
    if hint is float:
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"
    if hint is str:
        return None if isinstance(value, str) else "a string"
    if hint is list or origin is list:
        return None if isinstance(value, (list, tuple)) else "a list"
    return None


def check_node(node: Any, base: Any, cls: type, path: str, source: str) -> None:
    """Keys of ``node`` against dataclass ``cls`` (keys verl's own yaml has are trusted), leaf types
    against its annotations, recursively into children with a _target_ or a dataclass annotation."""
    from omegaconf import DictConfig, OmegaConf

    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    for key in node.keys():
        key = str(key)
        where = f"{path}.{key}"
        if key not in fields and key != "_target_":
            if not (isinstance(base, DictConfig) and key in list(base.keys())):
                raise config_error(source, f"{where}: unknown key of {cls.__name__}{did_you_mean(key, fields, path + '.')}")
            continue
        try:
            value = node[key]
        except Exception as err:  # MissingMandatoryValue, InterpolationResolutionError
            raise config_error(source, f"{where}: expected a value ({first_line(err)})") from None
        child_base = base.get(key) if isinstance(base, DictConfig) else None
        if isinstance(value, DictConfig):
            sub = resolve_target(value.get("_target_")) or (hints.get(key) if dataclasses.is_dataclass(hints.get(key)) else None)
            if sub is not None:
                check_node(value, child_base, sub, where, source)
        elif key in hints and not OmegaConf.is_list(value):
            expected = _type_ok(value, hints[key])
            if expected:
                via = f" (from {node._get_node(key)._value()})" if OmegaConf.is_interpolation(node, key) else ""
                raise config_error(source, f"{where}: expected {expected}, got {value!r}{via}")


def check_batches(cfg: Any, source: str) -> None:
    """The splits verl asserts only inside its workers: each mini-batch (ppo_mini_batch_size prompts
    x rollout.n) over the data-parallel GPUs and then into micro-batches, the same for log-prob batches."""
    actor, rollout, data = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout, cfg.data
    world = cfg.trainer.nnodes * cfg.trainer.n_gpus_per_node
    sp = max(int(actor.get("ulysses_sequence_parallel_size", 1) or 1), 1)
    dp = max(world // sp, 1)
    mini = actor.ppo_mini_batch_size
    require(data.train_batch_size % mini == 0, source, f"{ACTOR}.ppo_mini_batch_size",
            f"a divisor of data.train_batch_size = {data.train_batch_size}", mini)
    responses = mini * rollout.n
    require(responses % dp == 0, source, f"{ACTOR}.ppo_mini_batch_size",
            f"mini-batch responses (x rollout.n = {rollout.n}) divisible by the {dp} data-parallel GPUs", mini)
    if actor.use_dynamic_bsz:
        return
    micro = actor.ppo_micro_batch_size_per_gpu
    require(micro is not None and (responses // dp) % micro == 0, source, f"{ACTOR}.ppo_micro_batch_size_per_gpu",
            f"a divisor of the per-GPU mini-batch ({responses // dp} responses)", micro)
    log_micro = rollout.log_prob_micro_batch_size_per_gpu
    per_gpu = data.train_batch_size * rollout.n // dp
    require(log_micro is None or per_gpu % log_micro == 0, source, f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu",
            f"a divisor of the per-GPU rollout batch ({per_gpu} responses)", log_micro)


def check_objective(mode: str, actor_cfg: Any, env: Mapping[str, str] | None, source: str) -> None:
    """Our objective's parameters as the plug-in will read them from verl's actor config."""
    from trainers.verl_plugin import objective_params

    name = objective_of(mode)
    try:
        objective = get_objective(name, **objective_params(name, actor_cfg))
    except ValueError as err:
        param = re.match(r"\w+\.(\w+)", str(err))
        param = param.group(1) if param else "policy_loss"
        in_policy_loss = actor_cfg.policy_loss.get(param, None) is not None or param not in ACTOR_FIELDS
        key = f"{ACTOR}.policy_loss.{param}" if in_policy_loss else f"{ACTOR}.{ACTOR_FIELDS[param]}"
        raise config_error(source, f"{key} ({mode} parameter {param}): {err}") from None
    if getattr(objective.params, "mixing", None) == "entropy":
        require(bool(actor_cfg.calculate_entropy), source, f"{ACTOR}.calculate_entropy",
                f"True ({mode} with mixing='entropy' needs per-token entropy)", actor_cfg.calculate_entropy)
        if env is not None:
            require(env.get(FORWARD_ENTROPY.name, "").lower() in ("1", "true", "yes", "on"), source,
                    f"env {FORWARD_ENTROPY.name}", f"'1' ({mode} with mixing='entropy')",
                    env.get(FORWARD_ENTROPY.name))
