"""Trial config -> the Hydra overrides, environment and command line of verl's ``main_ppo``, checked
against verl's own config schema before anything runs.

    ovs = trial_overrides(cfg, "/ckpt/Qwen3-1.7B-Base", ["train.parquet"], ["aime24.parquet"])
    ovs += runtime_overrides("runs/x/ckpt", None, None, "trial-x", "dhpo", "grpo.s0", val_before_train=True)
    env = trial_env(cfg)
    validate_overrides(ovs, "dhpo_vs_baselines_verl.yaml")    # ConfigError naming the verl key
    print(command_line(ovs, env))   # VERL_USE_EXTERNAL_MODULES=trainers.verl_plugin python -m verl.trainer.main_ppo ...

The mapping (generic sections -> verl) is in trial_overrides; verl-only settings are in the
``verl:`` section (trainers/verl_backend/config.py). ``compose`` builds verl's config exactly as
``python -m verl.trainer.main_ppo`` does (its ppo_trainer.yaml with Hydra's compose API); the base
config is composed once per set of group overrides and the value overrides are applied with
Hydra's own override code, so a validation takes about 0.15 s after the first (which imports verl,
a few seconds). validate_overrides' checks beyond verl's own are in verl_checks.py. Tests:
``python -m pytest tests/trainers/verl_backend/test_translate.py -q``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import importlib.util
import io
import math
import re
import shlex
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contract.env import FORWARD_ENTROPY, VERL_EXTERNAL_MODULES
from trainers.config import AlgorithmConfig
from trainers.objectives import AGG_MODES
from trainers.verl_backend.loss_names import ACTOR_FIELDS, AGG_FIELD, AGG_PARAM, objective_of, verl_loss_mode
from contract.suggest import did_you_mean
from trainers.verl_backend.config import CPU_ROLLOUT, batch_shape, resolved_rollout
from trainers.verl_backend.verl_checks import (
    ACTOR, ROLLOUT, check_batches, check_node, check_objective, config_error, first_line, require,
    resolve_target,
)

PLUGIN_MODULE = "trainers.verl_plugin"
"""Imported by every verl process (VERL_USE_EXTERNAL_MODULES): registers the zoo_<name> losses."""
HF_ROLLOUT_MODULE = "trainers.verl_backend.hf_rollout"
"""Registers the zoo_hf rollout when imported (the CPU platform's package imports it too)."""
CONFIG_NAME = "ppo_trainer"
"""The config main_ppo composes (@hydra.main(config_path="config", config_name="ppo_trainer", version_base=None))."""
ENTRY = "verl.trainer.main_ppo"
REWARD_FUNCTION = ("pkg://trainers.verl_backend.reward", "compute_score")
"""verl's custom reward function (path, name): evaluators.rewards with the trial's reward section."""
_SAFE = re.compile(r"[A-Za-z_/][A-Za-z0-9_./:+-]*")


# ------------------------------------------------------------------ overrides of a trial


def hydra_value(value: Any) -> str:
    """A Python value as Hydra override text that parses back to the same value and type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value!r}")
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, str):
        if "${" in value:
            raise ValueError(f"expected a value without '${{' (it would be interpolated), got {value!r}")
        if _SAFE.fullmatch(value) and value.lower() not in ("true", "false", "null", "nan", "inf"):
            return value
        escaped = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, value).replace("'", "\\'")
        return f"'{escaped}'"
    raise ValueError(f"expected None, bool, int, float, str or a list of them, got {value!r}")


def objective_overrides(algorithm: AlgorithmConfig) -> tuple[list[str], bool]:
    """The actor overrides selecting zoo_<name> with every parameter set explicitly (verl's actor
    defaults would otherwise win over the paper defaults), and whether it needs per-token entropy."""
    name, full = algorithm.name, algorithm.typed_params()
    out = [f"{ACTOR}.policy_loss.loss_mode={verl_loss_mode(name)}"]
    extra = []
    for key, value in full.items():
        if key == AGG_PARAM:
            continue  # -> actor.loss_agg_mode (trial_overrides)
        if key in ACTOR_FIELDS:
            out.append(f"{ACTOR}.{ACTOR_FIELDS[key]}={hydra_value(value)}")
        else:
            extra.append(f"+{ACTOR}.policy_loss.{key}={hydra_value(value)}")
    if extra:
        out += [f"{ACTOR}.policy_loss._target_={PLUGIN_MODULE}.ZooPolicyLossConfig", *extra]
    needs_entropy = full.get("mixing") == "entropy"
    if needs_entropy:
        out.append(f"{ACTOR}.calculate_entropy=True")
    return out, needs_entropy


def trial_overrides(cfg: Any, model_path: str, train_files: Sequence[str], val_files: Sequence[str],
                    platform_overrides: Sequence[str] = (), *, gpus: bool | None = None) -> list[str]:
    """verl main_ppo overrides of a trial, in a fixed order: algorithm, reward, data, model, actor,
    objective, rollout, validation, trainer, then ``platform_overrides`` (the CPU platform's,
    trainers.verl_backend.cpu) and last ``cfg.verl.extra_overrides`` (last wins). ``gpus`` resolves
    verl.rollout='auto' (None: from verl.device). Runtime items (checkpoint dir, resume, Ray,
    names, logger) are runtime_overrides'."""
    t, v, b = cfg.trainer, cfg.verl, batch_shape(cfg)
    agg = cfg.algorithm.typed_params().get(AGG_PARAM, "token-mean")
    if t.eval_mode == "greedy":
        val = {"do_sample": False, "n": 1, "temperature": 0.0, "top_p": 1.0}
    else:  # avg@k: Pass@1 averaged over eval_k samples at temperature 1 (DHPO)
        val = {"do_sample": True, "n": t.eval_k, "temperature": 1.0, "top_p": 1.0}
    out = [
        "algorithm.adv_estimator=grpo",
        "algorithm.norm_adv_by_std_in_grpo=True",
        "algorithm.use_kl_in_reward=False",
        f"reward.custom_reward_function.path={hydra_value(REWARD_FUNCTION[0])}",
        f"reward.custom_reward_function.name={REWARD_FUNCTION[1]}",
        f"+reward.custom_reward_function.reward_kwargs.answer={hydra_value(cfg.reward.answer)}",
        f"+reward.custom_reward_function.reward_kwargs.format={hydra_value(cfg.reward.format)}",
        f"data.train_files={hydra_value(list(train_files))}",
        f"data.val_files={hydra_value(list(val_files))}",
        f"data.train_batch_size={b['train_batch_size']}",
        f"data.max_prompt_length={v.max_prompt_length}",
        f"data.max_response_length={t.max_new_tokens}",
        f"data.truncation={v.truncation}",
        f"data.filter_overlong_prompts={hydra_value(v.filter_overlong_prompts)}",
        f"data.seed={cfg.seed}",
        f"actor_rollout_ref.model.path={hydra_value(str(model_path))}",
        f"actor_rollout_ref.model.enable_gradient_checkpointing={hydra_value(v.gradient_checkpointing)}",
        f"actor_rollout_ref.model.use_remove_padding={hydra_value(v.remove_padding)}",
        f"{ACTOR}.strategy={v.strategy}",
        f"{ACTOR}.ppo_epochs={t.ppo_epochs}",
        f"{ACTOR}.ppo_mini_batch_size={b['ppo_mini_batch_size']}",
        f"{ACTOR}.ppo_micro_batch_size_per_gpu={hydra_value(b['micro_batch_size_per_gpu'])}",
        f"{ACTOR}.use_dynamic_bsz={hydra_value(v.use_dynamic_bsz)}",
        *([f"{ACTOR}.ppo_max_token_len_per_gpu={v.max_token_len_per_gpu}"] if v.max_token_len_per_gpu else []),
        f"{ACTOR}.optim.lr={hydra_value(float(t.lr))}",
        # verl steps its LR scheduler once per RL step (after the last mini-batch), ours per update
        f"{ACTOR}.optim.lr_warmup_steps={-(-t.warmup_steps // (t.updates_per_rollout * t.ppo_epochs))}",
        f"{ACTOR}.optim.weight_decay={hydra_value(float(t.weight_decay))}",
        f"{ACTOR}.optim.clip_grad={hydra_value(float(t.grad_clip))}",
        f"{ACTOR}.fsdp_config.param_offload={hydra_value(v.param_offload)}",
        f"{ACTOR}.fsdp_config.optimizer_offload={hydra_value(v.optimizer_offload)}",
        f"{ACTOR}.use_kl_loss=False",
        f"{ACTOR}.entropy_coeff=0",
        f"{ACTOR}.{AGG_FIELD}={agg}",
        *objective_overrides(cfg.algorithm)[0],
        f"{ROLLOUT}.name={resolved_rollout(v, gpus)}",
        f"{ROLLOUT}.n={t.group_size}",
        f"{ROLLOUT}.temperature={hydra_value(float(t.temperature))}",
        f"{ROLLOUT}.top_p={hydra_value(float(t.top_p))}",
        f"{ROLLOUT}.seed={cfg.seed}",
        f"{ROLLOUT}.tensor_model_parallel_size={v.tensor_parallel_size}",
        f"{ROLLOUT}.gpu_memory_utilization={hydra_value(float(v.gpu_memory_utilization))}",
        f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu={hydra_value(b['log_prob_micro_batch_size_per_gpu'])}",
        *[f"{ROLLOUT}.val_kwargs.{k}={hydra_value(x)}" for k, x in val.items()],
        f"trainer.nnodes={v.nnodes}",
        f"trainer.n_gpus_per_node={v.n_gpus_per_node}",
        f"trainer.total_training_steps={t.steps}",
        f"trainer.total_epochs={t.steps}",  # verl also stops after total_epochs; every epoch has >= 1 step
        f"trainer.test_freq={t.eval_every}",
        f"trainer.save_freq={t.checkpoint_every if t.checkpoint_every > 0 else -1}",
        f"trainer.max_actor_ckpt_to_keep={hydra_value(v.max_actor_ckpt_to_keep)}",
        # verl's v1 trainer always starts TransferQueue, whose controller has a fixed name in the fixed
        # namespace 'transfer_queue': concurrent trials on one cluster would silently share one
        # controller and its storage. The legacy RayPPOTrainer uses none (CPU and GPU alike).
        "trainer.use_v1=False",
        "transfer_queue.enable=False",
    ]
    return out + list(platform_overrides) + list(v.extra_overrides)


def runtime_overrides(checkpoint_dir: str, resume_path: str | None, ray_address: str | None, namespace: str,
                      project: str, experiment: str, val_before_train: bool, *,
                      logger: Sequence[str] = ("console", "file")) -> list[str]:
    """Overrides of one launch of a trial: checkpoint dir, resume (a .../global_step_N directory, or
    None: a fresh start, resume_mode=disable, whatever checkpoint_dir holds), the Ray cluster and
    namespace verl's ray.init joins (verl starts a local one when ray_address is None), tracking
    names and loggers. Env vars for Ray workers of an existing cluster (which do not inherit the
    driver's environment) are the launcher's: +ray_kwargs.ray_init.runtime_env.env_vars.K=V."""
    if resume_path is not None and "global_step_" not in Path(resume_path).name:
        raise ValueError(f"resume_path: expected a .../global_step_N checkpoint directory, got {resume_path!r}")
    out = [
        f"trainer.default_local_dir={hydra_value(str(checkpoint_dir))}",
        "trainer.resume_mode=" + ("disable" if resume_path is None else "resume_path"),
        *([f"trainer.resume_from_path={hydra_value(str(resume_path))}"] if resume_path is not None else []),
        *([f"+ray_kwargs.ray_init.address={hydra_value(ray_address)}"] if ray_address else []),
        f"+ray_kwargs.ray_init.namespace={hydra_value(namespace)}",
        f"trainer.project_name={hydra_value(project)}",
        f"trainer.experiment_name={hydra_value(experiment)}",
        f"trainer.logger={hydra_value(list(logger))}",
        f"trainer.val_before_train={hydra_value(bool(val_before_train))}",
    ]
    return out


def trial_env(cfg: Any) -> dict[str, str]:
    """Environment of the verl process: the plug-in module every verl process imports (and the zoo_hf
    rollout's when verl.rollout names it: on GPUs nothing else registers it), entropy
    forwarding for dhpo mixing='entropy', then cfg.verl.extra_env. The CPU platform's env
    (cpu_runtime) adds its own module: merge with merge_env, which joins the module lists."""
    modules = [PLUGIN_MODULE] + ([HF_ROLLOUT_MODULE] if cfg.verl.rollout == CPU_ROLLOUT else [])
    env = {VERL_EXTERNAL_MODULES.name: ",".join(modules)}
    if objective_overrides(cfg.algorithm)[1]:
        env[FORWARD_ENTROPY.name] = "1"
    return merge_env(env, cfg.verl.extra_env)


def merge_env(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """``extra`` over ``base``, except VERL_USE_EXTERNAL_MODULES: the union of both module lists."""
    out = {**base, **extra}
    key = VERL_EXTERNAL_MODULES.name
    if key in base and key in extra:
        mods = [m for m in (base[key] + "," + extra[key]).split(",") if m]
        out[key] = ",".join(dict.fromkeys(mods))
    return out


def command_line(overrides: Sequence[str], env: Mapping[str, str], python: str = "python") -> str:
    """The shell command running the trial: ``K=V ... python -m verl.trainer.main_ppo 'override' ...``."""
    parts = [f"{k}={shlex.quote(str(v))}" for k, v in sorted(env.items())]
    return " ".join(parts + [shlex.quote(python), "-m", ENTRY] + [shlex.quote(o) for o in overrides])


# ------------------------------------------------------------------ verl's config


def verl_config_dir() -> Path:
    """verl's trainer/config directory (found without importing verl, which takes seconds)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the verl backend needs verl 0.9.1 installed (pip install .[verl])")
    return Path(list(spec.submodule_search_locations)[0]) / "trainer" / "config"


@functools.lru_cache(maxsize=8)
def _base(group_overrides: tuple[str, ...]):
    """verl's composed config for these group overrides, exactly as main_ppo's Hydra composes it."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.initialize import get_gh_backup, restore_gh_from_backup

    backup = get_gh_backup()  # leave any caller's Hydra (e.g. sweeps/spec_presets) as it was
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(verl_config_dir()), version_base=None):
            return compose(config_name=CONFIG_NAME, overrides=list(group_overrides))
    finally:
        restore_gh_from_backup(backup)


def compose(overrides: Sequence[str], source: str = "verl overrides"):
    """verl's DictConfig for these main_ppo overrides (unresolved, struct mode, as main_ppo gets it).
    Raises ConfigError naming the override that does not apply."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import DictConfig, OmegaConf

    parser, root = OverridesParser.create(), verl_config_dir()
    groups, values = [], []
    for item in overrides:
        try:
            (ov,) = parser.parse_overrides([item])
        except Exception as err:
            raise config_error(source, f"verl override {item!r}: expected key=value, +key=value or ~key "
                                        f"({first_line(err)})") from None
        if not ov.key_or_group or ov.is_sweep_override():
            raise config_error(source, f"verl override {item!r}: expected a single key=value, not a sweep")
        group = ov.key_or_group.startswith("hydra") or ov.package is not None or (
            (root / ov.key_or_group).is_dir() and not isinstance(ov.value(), dict))
        (groups if group else values).append(ov)
    try:
        cfg = copy.deepcopy(_base(tuple(ov.input_line for ov in groups)))
    except Exception as err:
        raise config_error(source, f"verl group overrides {[ov.input_line for ov in groups]}: {first_line(err)}") from None
    for ov in values:
        key = ov.key_or_group
        if ov.type.name == "CHANGE" and "." in key:  # unknown key: name it, with a suggestion
            parent_key, leaf = key.rsplit(".", 1)
            parent = OmegaConf.select(cfg, parent_key, throw_on_missing=False)
            if isinstance(parent, DictConfig) and leaf not in list(parent.keys()):  # (`in` is False for ???)
                raise config_error(source, f"verl override {ov.input_line!r}: unknown key {key}"
                                            f"{did_you_mean(leaf, list(parent.keys()), parent_key + '.')}"
                                            f" (prefix + to add a key)")
        try:
            ConfigLoaderImpl._apply_overrides_to_config([ov], cfg)
        except Exception as err:
            cause = f" ({first_line(err.__cause__)})" if err.__cause__ else ""
            raise config_error(source, f"verl override {ov.input_line!r}: {first_line(err)}{cause}") from None
    return cfg


# ------------------------------------------------------------------ validation


def validate_overrides(overrides: Sequence[str], source: str = "verl overrides", env: Mapping[str, str] | None = None) -> None:
    """Compose verl's config with these overrides and convert the sections main_ppo converts with
    verl's config dataclasses (actor with our ZooPolicyLossConfig, rollout, algorithm), run verl's
    own validate_config, and check what verl only finds at run time: registered loss and rollout
    names, the reward function, our losses' aggregation modes and parameters, batch splits over GPUs
    and micro-batches, entropy for dhpo mixing='entropy' (and ZOO_VERL_FORWARD_ENTROPY when ``env``
    is given). Unknown keys and wrong leaf types of the converted sections are named with the key.
    Raises ConfigError naming the verl key and what was expected."""
    from omegaconf import OmegaConf

    try:
        importlib.import_module(PLUGIN_MODULE)  # registers zoo_* losses; ZooPolicyLossConfig for _target_
        from verl.trainer.ppo import core_algos
        from verl.utils.config import omega_conf_to_dataclass, validate_config
    except ImportError as err:
        raise config_error(source, f"backend: verl: expected verl 0.9.1 importable ({first_line(err)})") from None
    cfg, base = compose(overrides, source), _base(())

    for key in (ACTOR, ROLLOUT, "algorithm"):
        node, node_base = OmegaConf.select(cfg, key), OmegaConf.select(base, key)
        cls = resolve_target(node.get("_target_"))
        if cls is None:
            raise config_error(source, f"{key}._target_: expected an importable config dataclass, got {node.get('_target_')!r}")
        check_node(node, node_base, cls, key, source)
    try:  # as verl's TaskRunner does before it converts anything; also makes the conversions 3x faster
        OmegaConf.resolve(cfg)
    except Exception as err:
        raise config_error(source, f"verl config: {first_line(err)}") from None

    actor, rollout = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    mode = actor.policy_loss.loss_mode
    require(mode in core_algos.POLICY_LOSS_REGISTRY, source, f"{ACTOR}.policy_loss.loss_mode",
            f"a registered policy loss{did_you_mean(mode, core_algos.POLICY_LOSS_REGISTRY)}", mode)
    if objective_of(mode):
        require(actor.loss_agg_mode in AGG_MODES, source, f"{ACTOR}.loss_agg_mode",
                f"one of {list(AGG_MODES)} ({mode} supports these)", actor.loss_agg_mode)
    from verl.workers.rollout.replica import RolloutReplicaRegistry

    names = sorted({"vllm", "sglang", "trtllm", CPU_ROLLOUT, *getattr(RolloutReplicaRegistry, "_registry", {})})
    require(rollout.name in names, source, f"{ROLLOUT}.name", f"one of {names}", rollout.name)
    world = cfg.trainer.nnodes * cfg.trainer.n_gpus_per_node
    require(world % rollout.tensor_model_parallel_size == 0, source, f"{ROLLOUT}.tensor_model_parallel_size",
            f"a divisor of trainer.nnodes * trainer.n_gpus_per_node = {world}", rollout.tensor_model_parallel_size)
    check_batches(cfg, source)
    reward_fn = cfg.reward.get("custom_reward_function") or {}
    if reward_fn.get("path"):
        from verl.utils.import_utils import load_extern_object

        try:
            load_extern_object(module_path=reward_fn.path, object_name=reward_fn.name)
        except Exception as err:
            raise config_error(source, f"reward.custom_reward_function: expected an importable path/name, got "
                                       f"{reward_fn.path!r} / {reward_fn.name!r} ({first_line(err)})") from None

    converted = {}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # need_critic warns that grpo has no critic
        for key in (ACTOR, ROLLOUT, "algorithm"):  # what verl's workers and trainer do with them
            try:
                converted[key] = omega_conf_to_dataclass(OmegaConf.select(cfg, key))
            except Exception as err:
                raise config_error(source, f"{key}: {first_line(err)}") from None
        from verl.trainer.ppo.utils import need_critic, need_reference_policy

        try:
            validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        except Exception as err:
            raise config_error(source, f"verl validate_config: {first_line(err)}") from None
    if objective_of(mode):
        check_objective(mode, converted[ACTOR], env, source)


