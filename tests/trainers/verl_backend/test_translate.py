"""Trial config -> verl main_ppo overrides (trainers/verl_backend/translate.py) and the ``verl:`` section.

Golden override lists for every objective and for the DHPO App. D / SSPO presets, validation against
verl's own config (accepts them all, rejects bad combinations naming the key), Hydra round trips.

    python -m pytest tests/trainers/verl_backend/test_translate.py -q
"""

from __future__ import annotations

import shlex
import time

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from sweeps.specs.presets import compose_base
from trainers.config import ConfigError, TrialConfig
from trainers.verl_backend import translate as T
from trainers.verl_backend.config import VerlConfig, validate_verl_section

A, R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
PL = f"{A}.policy_loss"
ZOO = f"{PL}._target_=trainers.verl_plugin.ZooPolicyLossConfig"


def trial(name="grpo", params=None, **verl) -> TrialConfig:
    cfg = TrialConfig()
    cfg.backend = "verl"
    cfg.algorithm.name, cfg.algorithm.params = name, dict(params or {})
    cfg.verl = VerlConfig(**{"device": "cuda", **verl})
    cfg.model.path = "/ckpt/model"  # a GPU trial needs the user's model (validate_verl_section says so)
    return cfg


def overrides(cfg, **kw) -> list[str]:
    return T.trial_overrides(cfg, "/ckpt/model", ["/data/train.parquet"], ["/data/val.parquet"], **kw)


def objective_part(ovs: list[str]) -> list[str]:
    """The overrides between loss_agg_mode and the rollout section: the objective's."""
    start = next(i for i, o in enumerate(ovs) if o.startswith(f"{A}.loss_agg_mode="))
    end = next(i for i, o in enumerate(ovs) if o.startswith(f"{R}.name="))
    return ovs[start:end]


# ---------------------------------------------------------------- golden overrides


OBJECTIVE_CASES = {
    "grpo": ("grpo", {}, [f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_grpo",
                          f"{A}.clip_ratio_low=0.2", f"{A}.clip_ratio_high=0.2"]),
    "grpo-token-mean": ("grpo", {"agg": "token-mean", "eps_high": 0.28},
                        [f"{A}.loss_agg_mode=token-mean", f"{PL}.loss_mode=zoo_grpo",
                         f"{A}.clip_ratio_low=0.2", f"{A}.clip_ratio_high=0.28"]),
    "gspo": ("gspo", {}, [f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_gspo",
                          f"{A}.clip_ratio_low=0.0003", f"{A}.clip_ratio_high=0.0004"]),
    "gmpo": ("gmpo", {}, [f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_gmpo",
                          f"{A}.clip_ratio_low=0.4", f"{A}.clip_ratio_high=0.4",
                          ZOO, f"+{PL}.clip_in_log_space=False"]),
    "cispo": ("cispo", {}, [f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_cispo",
                            f"{A}.clip_ratio_low=10.0", f"{A}.clip_ratio_high=0.2"]),
    "sapo": ("sapo", {}, [f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_sapo",
                          f"{A}.tau_pos=1.0", f"{A}.tau_neg=1.05"]),
    "sspo-siglog": ("sspo", {"gate": "siglog", "tau_pos": 0.2, "tau_neg": 0.3},
                    [f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_sspo",
                     f"{A}.tau_pos=0.2", f"{A}.tau_neg=0.3", ZOO, f"+{PL}.gate=siglog"]),
    "dhpo-averaged": ("dhpo", {}, [
        f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_dhpo",
        f"{A}.clip_ratio_low=0.2", f"{A}.clip_ratio_high=0.28", ZOO,
        f"+{PL}.mixing=averaged", f"+{PL}.clip_mode=branch", f"+{PL}.entropy_norm=batch",
        f"+{PL}.eps_low_token=0.2", f"+{PL}.eps_high_token=0.28", f"+{PL}.eps_low_seq=0.2", f"+{PL}.eps_high_seq=0.28"]),
    "dhpo-entropy": ("dhpo", {"mixing": "entropy"}, [
        f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_dhpo",
        f"{A}.clip_ratio_low=0.2", f"{A}.clip_ratio_high=0.28", ZOO,
        f"+{PL}.mixing=entropy", f"+{PL}.clip_mode=branch", f"+{PL}.entropy_norm=batch",
        f"+{PL}.eps_low_token=0.2", f"+{PL}.eps_high_token=0.28", f"+{PL}.eps_low_seq=0.2", f"+{PL}.eps_high_seq=0.28",
        f"{A}.calculate_entropy=True"]),
    "dhpo-unified": ("dhpo", {"mixing": "entropy", "clip_mode": "unified", "eps_low": 0.1, "eps_high": 0.3}, [
        f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_dhpo",
        f"{A}.clip_ratio_low=0.1", f"{A}.clip_ratio_high=0.3", ZOO,
        f"+{PL}.mixing=entropy", f"+{PL}.clip_mode=unified", f"+{PL}.entropy_norm=batch",
        f"+{PL}.eps_low_token=0.2", f"+{PL}.eps_high_token=0.28", f"+{PL}.eps_low_seq=0.2", f"+{PL}.eps_high_seq=0.28",
        f"{A}.calculate_entropy=True"]),
}


@pytest.mark.parametrize("case", list(OBJECTIVE_CASES))
def test_objective_overrides_golden(case):
    name, params, expected = OBJECTIVE_CASES[case]
    cfg = trial(name, params)
    assert objective_part(overrides(cfg)) == expected
    env = T.trial_env(cfg)
    assert env["VERL_USE_EXTERNAL_MODULES"] == "trainers.verl_plugin"
    assert ("ZOO_VERL_FORWARD_ENTROPY" in env) == (params.get("mixing") == "entropy")


def test_full_golden_default_trial():
    """Every override of the default trial (8 prompts x 8, 2 updates per rollout) on one GPU."""
    cfg = trial("grpo")
    cfg.seed = 3
    assert overrides(cfg) == [
        "algorithm.adv_estimator=grpo", "algorithm.norm_adv_by_std_in_grpo=True", "algorithm.use_kl_in_reward=False",
        "reward.custom_reward_function.path=pkg://trainers.verl_backend.reward",
        "reward.custom_reward_function.name=compute_score",
        "+reward.custom_reward_function.reward_kwargs.answer=True",
        "+reward.custom_reward_function.reward_kwargs.format=True",
        "data.train_files=[/data/train.parquet]", "data.val_files=[/data/val.parquet]",
        "data.train_batch_size=8", "data.max_prompt_length=1024", "data.max_response_length=80",
        "data.truncation=error", "data.filter_overlong_prompts=False", "data.seed=3",
        "actor_rollout_ref.model.path=/ckpt/model", "actor_rollout_ref.model.enable_gradient_checkpointing=True",
        "actor_rollout_ref.model.use_remove_padding=True",
        f"{A}.strategy=fsdp2", f"{A}.ppo_epochs=1", f"{A}.ppo_mini_batch_size=4", f"{A}.ppo_micro_batch_size_per_gpu=32",
        f"{A}.use_dynamic_bsz=False", f"{A}.optim.lr=0.0001", f"{A}.optim.lr_warmup_steps=5",
        f"{A}.optim.weight_decay=0.1", f"{A}.optim.clip_grad=1.0", f"{A}.fsdp_config.param_offload=False",
        f"{A}.fsdp_config.optimizer_offload=False", f"{A}.use_kl_loss=False", f"{A}.entropy_coeff=0",
        f"{A}.loss_agg_mode=seq-mean-token-mean", f"{PL}.loss_mode=zoo_grpo",
        f"{A}.clip_ratio_low=0.2", f"{A}.clip_ratio_high=0.2",
        f"{R}.name=vllm", f"{R}.n=8", f"{R}.temperature=1.0", f"{R}.top_p=1.0", f"{R}.seed=3",
        f"{R}.tensor_model_parallel_size=1", f"{R}.gpu_memory_utilization=0.6", f"{R}.log_prob_micro_batch_size_per_gpu=32",
        f"{R}.val_kwargs.do_sample=True", f"{R}.val_kwargs.n=4", f"{R}.val_kwargs.temperature=1.0", f"{R}.val_kwargs.top_p=1.0",
        "trainer.nnodes=1", "trainer.n_gpus_per_node=1", "trainer.total_training_steps=200", "trainer.total_epochs=200",
        "trainer.test_freq=20", "trainer.save_freq=50", "trainer.max_actor_ckpt_to_keep=2",
        "trainer.use_v1=False", "transfer_queue.enable=False",
    ]


def test_order_platform_then_extra_and_cpu_rollout():
    cfg = trial(device="cpu", extra_overrides=["trainer.save_freq=7"])
    ovs = overrides(cfg, platform_overrides=["trainer.device=cpu", "trainer.save_freq=5"])
    assert ovs[-3:] == ["trainer.device=cpu", "trainer.save_freq=5", "trainer.save_freq=7"]  # extra last: it wins
    assert f"{R}.name=zoo_hf" in ovs
    assert f"{R}.name=sglang" in overrides(trial(rollout="sglang"))
    assert T.compose(ovs).trainer.save_freq == 7


def test_greedy_eval_no_checkpoints_and_warmup_rounding():
    cfg = trial()
    cfg.trainer.eval_mode, cfg.trainer.checkpoint_every, cfg.trainer.warmup_steps = "greedy", 0, 3
    ovs = overrides(cfg)
    assert [o for o in ovs if ".val_kwargs." in o] == [
        f"{R}.val_kwargs.do_sample=False", f"{R}.val_kwargs.n=1", f"{R}.val_kwargs.temperature=0.0", f"{R}.val_kwargs.top_p=1.0"]
    assert "trainer.save_freq=-1" in ovs
    assert f"{A}.optim.lr_warmup_steps=2" in ovs  # ceil(3 updates / 2 updates per RL step)
    cfg.trainer.ppo_epochs = 2
    ovs = overrides(cfg)
    assert f"{A}.ppo_epochs=2" in ovs and f"{A}.optim.lr_warmup_steps=1" in ovs  # ceil(3 / (2 x 2))


def preset(recipe: str, model: str, tmp_path) -> TrialConfig:
    data = compose_base([{"trainer": recipe}, {"model": model}], "test")
    data["model"]["path"] = str(tmp_path)
    return TrialConfig.from_dict(data, source="test")


@pytest.mark.parametrize("model,name", [("qwen3_1.7b_base", "Qwen3-1.7B-Base"), ("qwen3_4b_base", "Qwen3-4B-Base")])
def test_dhpo_app_d_preset(model, name, tmp_path):
    cfg = preset("dhpo_app_d", model, tmp_path)
    assert cfg.backend == "verl" and cfg.model.name == name
    cfg.algorithm.name = "dhpo"
    ovs = overrides(cfg)
    for item in ["data.train_batch_size=512", "data.max_prompt_length=1024", "data.max_response_length=4096",
                 "data.truncation=left", f"{A}.ppo_mini_batch_size=256", f"{A}.ppo_micro_batch_size_per_gpu=16",
                 f"{A}.use_dynamic_bsz=True", f"{A}.ppo_max_token_len_per_gpu=16384", f"{A}.optim.lr=1e-06",
                 f"{A}.optim.lr_warmup_steps=10", f"{A}.optim.weight_decay=0.1", f"{A}.use_kl_loss=False",
                 "algorithm.use_kl_in_reward=False", f"{R}.name=vllm", f"{R}.n=16", f"{R}.temperature=1.0",
                 f"{R}.top_p=1.0", f"{R}.val_kwargs.do_sample=True", f"{R}.val_kwargs.n=4",
                 f"{R}.val_kwargs.temperature=1.0", "trainer.nnodes=4", "trainer.n_gpus_per_node=8",
                 "trainer.total_training_steps=160", "actor_rollout_ref.model.enable_gradient_checkpointing=True",
                 "actor_rollout_ref.model.use_remove_padding=True", f"{A}.fsdp_config.param_offload=False",
                 f"{A}.fsdp_config.optimizer_offload=False", f"{A}.clip_ratio_low=0.2", f"{A}.clip_ratio_high=0.28"]:
        assert item in ovs, item
    T.validate_overrides(ovs, "dhpo_app_d", env=T.trial_env(cfg))


@pytest.mark.parametrize("model", ["qwen3_1.7b_base", "qwen3_4b_base"])
def test_sspo_setup_preset(model, tmp_path):
    cfg = preset("sspo_setup", model, tmp_path)
    cfg.algorithm.name, cfg.algorithm.params = "sspo", {"gate": "atanlog", "tau_pos": 0.5, "tau_neg": 0.6}
    ovs = overrides(cfg)
    for item in ["data.train_batch_size=512", "data.max_response_length=512", f"{A}.ppo_mini_batch_size=256",
                 f"{A}.ppo_micro_batch_size_per_gpu=16", f"{A}.use_dynamic_bsz=False", f"{A}.optim.lr=1e-06",
                 f"{R}.n=8", f"{R}.val_kwargs.do_sample=False", f"{R}.val_kwargs.n=1", "trainer.nnodes=1",
                 "trainer.n_gpus_per_node=8", f"{A}.tau_pos=0.5", f"{A}.tau_neg=0.6", f"+{PL}.gate=atanlog"]:
        assert item in ovs, item
    T.validate_overrides(ovs, "sspo_setup", env=T.trial_env(cfg))


def test_from_dict_verl_section():
    cfg = TrialConfig.from_dict({"backend": "verl", "verl": {"nnodes": 2, "n_gpus_per_node": 4,
                                                             "data_sources": {"openai/gsm8k": "gsm8k"}}})
    assert (cfg.verl.nnodes, cfg.verl.data_sources) == (2, {"openai/gsm8k": "gsm8k"})
    assert "trainer.nnodes=2" in overrides(cfg)


# ---------------------------------------------------------------- validation against verl


@pytest.mark.slow
@pytest.mark.parametrize("case", list(OBJECTIVE_CASES))
@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_validate_accepts_every_objective(case, device):
    name, params, _ = OBJECTIVE_CASES[case]
    cfg = trial(name, params, device=device)
    T.validate_overrides(overrides(cfg), "test", env=T.trial_env(cfg))


def test_validation_is_fast_after_the_first():
    ovs = overrides(trial("dhpo", {"mixing": "entropy"}))
    T.validate_overrides(ovs)
    start = time.perf_counter()
    for _ in range(3):
        T.validate_overrides(ovs)
    per = (time.perf_counter() - start) / 3
    print(f"validate_overrides: {per * 1000:.0f} ms per validation")
    assert per < 3.0  # generous: shared CI machines; about 0.1-0.3 s on 2 cores


BAD_EXTRA = [
    ("actor_rollout_ref.actor.ppo_mini_batch=4", "unknown key actor_rollout_ref.actor.ppo_mini_batch (did you mean "
                                                 "'actor_rollout_ref.actor.ppo_mini_batch_size'?)"),
    ("+actor_rollout_ref.actor.foo=1", "actor_rollout_ref.actor.foo: unknown key of FSDPActorConfig"),
    ("+actor_rollout_ref.rollout.val_kwargs.temprature=1", "actor_rollout_ref.rollout.val_kwargs.temprature: unknown key "
                                                           "of SamplingConfig (did you mean"),
    ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: "
                                                               "expected a divisor of the per-GPU mini-batch (32 responses), got 3"),
    ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=5", "log_prob_micro_batch_size_per_gpu: expected a divisor"),
    ("actor_rollout_ref.actor.ppo_mini_batch_size=3", "ppo_mini_batch_size: expected a divisor of data.train_batch_size = 8"),
    ("trainer.n_gpus_per_node=3", "divisible by the 3 data-parallel GPUs"),
    ("actor_rollout_ref.actor.loss_agg_mode=token-sum", "actor_rollout_ref.actor.loss_agg_mode: expected one of "
                                                        "['seq-mean-token-mean', 'token-mean'] (zoo_sspo supports these)"),
    ("actor_rollout_ref.actor.ppo_mini_batch_size=abc", "actor_rollout_ref.actor.ppo_mini_batch_size: expected an integer, got 'abc'"),
    ("actor_rollout_ref.actor.use_dynamic_bsz=maybe", "use_dynamic_bsz: expected true or false"),
    ("data.max_prompt_length=x", "prompt_length: expected an integer, got 'x' (from ${oc.select:data.max_prompt_length"),
    ("actor_rollout_ref.actor.policy_loss.gate=fast", "actor_rollout_ref.actor.policy_loss.gate (zoo_sspo parameter gate): "
                                                      "sspo.gate: expected one of"),
    ("actor_rollout_ref.actor.tau_neg=-1", "actor_rollout_ref.actor.tau_neg (zoo_sspo parameter tau_neg)"),
    ("actor_rollout_ref.actor.policy_loss.loss_mode=zoo_sspoo", "loss_mode: expected a registered policy loss (did you mean 'zoo_sspo'?)"),
    ("actor_rollout_ref.rollout.name=vlm", "actor_rollout_ref.rollout.name: expected one of"),
    ("actor_rollout_ref.rollout.tensor_model_parallel_size=2", "tensor_model_parallel_size: expected a divisor of"),
    ("actor_rollout_ref.rollout.mode=sync", "actor_rollout_ref.rollout: Rollout mode 'sync' has been removed"),
    ("~actor_rollout_ref.actor.policy_loss._target_", "actor_rollout_ref.actor.policy_loss.gate: unknown key of PolicyLossConfig"),
    ("model_engine=nosuch", "verl group overrides ['model_engine=nosuch']"),
    ("trainer.save_freq=1,2", "expected a single key=value, not a sweep"),
    ("nonsense", "verl override 'nonsense': expected key=value"),
    ("reward.custom_reward_function.name=compute_scores", "reward.custom_reward_function: expected an importable path/name"),
]


@pytest.mark.slow
@pytest.mark.parametrize("extra,message", BAD_EXTRA, ids=[b[0] for b in BAD_EXTRA])
def test_validate_rejects_naming_the_key(extra, message):
    ovs = overrides(trial("sspo", {"gate": "siglog"})) + [extra]
    with pytest.raises(ConfigError) as err:
        T.validate_overrides(ovs, "spec.yaml")
    assert str(err.value).startswith("spec.yaml: ") and message in str(err.value)


def test_validate_dhpo_entropy_needs_entropy():
    cfg = trial("dhpo", {"mixing": "entropy"})
    with pytest.raises(ConfigError, match=r"actor_rollout_ref.actor.calculate_entropy: expected True"):
        T.validate_overrides(overrides(cfg) + [f"{A}.calculate_entropy=False"], "x")
    with pytest.raises(ConfigError, match=r"env ZOO_VERL_FORWARD_ENTROPY: expected '1'"):
        T.validate_overrides(overrides(cfg), "x", env={"VERL_USE_EXTERNAL_MODULES": "trainers.verl_plugin"})


def test_compose_fast_path_equals_hydra_compose():
    """Value overrides applied to the cached base = Hydra's own compose of all overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    ovs = overrides(trial("dhpo", {"mixing": "entropy"}, extra_overrides=["~trainer.esi_redundant_time"])) + ["model_engine=dp"]
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(T.verl_config_dir()), version_base=None):
        full = compose(config_name="ppo_trainer", overrides=ovs)
    GlobalHydra.instance().clear()
    assert OmegaConf.to_container(T.compose(ovs)) == OmegaConf.to_container(full)
    assert OmegaConf.is_struct(T.compose(ovs))


# ---------------------------------------------------------------- the verl: section


def test_missing_user_inputs_are_named_together():
    cfg = trial()
    cfg.model.path = None
    cfg.data.benchmarks = ["easy", "aime24", "gsm8k"]
    with pytest.raises(ConfigError) as err:
        validate_verl_section(cfg, "spec.yaml")
    msg = str(err.value)
    assert msg.startswith("spec.yaml: missing required settings: model.path")
    assert "data.eval_files: a file for each of ['aime24', 'gsm8k']" in msg
    cfg.verl.device = "cpu"  # the CPU platform builds its tiny Qwen3: only the eval files are missing
    with pytest.raises(ConfigError, match=r"missing required settings: data.eval_files") as err:
        validate_verl_section(cfg, "spec.yaml")
    assert "model.path" not in str(err.value)
    cfg.verl.device, cfg.verl.rollout = "cuda", "zoo_hf"  # so does the check rollout on a GPU (verl_gpu_smoke)
    with pytest.raises(ConfigError, match=r"missing required settings: data.eval_files") as err:
        validate_verl_section(cfg, "spec.yaml")
    assert "model.path" not in str(err.value)
    cfg.verl.rollout = "vllm"
    with pytest.raises(ConfigError, match=r"missing required settings: model.path"):
        validate_verl_section(cfg, "spec.yaml")


@pytest.mark.parametrize("rollout,modules", [
    ("auto", "trainers.verl_plugin"),
    ("vllm", "trainers.verl_plugin"),
    ("zoo_hf", "trainers.verl_plugin,trainers.verl_backend.hf_rollout"),  # on a GPU nothing else registers it
])
def test_the_zoo_hf_rollout_module_is_imported_where_the_trial_names_it(rollout, modules):
    cfg = trial(rollout=rollout)
    assert T.trial_env(cfg)["VERL_USE_EXTERNAL_MODULES"] == modules
    assert f"{R}.name={'vllm' if rollout == 'auto' else rollout}" in overrides(cfg)


@pytest.mark.parametrize("verl,message", [
    ({"nnodes": 0}, "test: verl.nnodes: expected an integer >= 1, got 0"),
    ({"gpu_memory_utilization": 1.5}, "verl.gpu_memory_utilization: expected a number in (0, 1], got 1.5"),
    ({"rollout": "hf"}, "verl.rollout: expected one of ['auto', 'vllm', 'sglang', 'zoo_hf'], got 'hf'"),
    ({"device": "gpu"}, "verl.device: expected one of ['auto', 'cuda', 'cpu']"),
    ({"micro_batch_size_per_gpu": 0}, "verl.micro_batch_size_per_gpu: expected an integer >= 1 or null, got 0"),
    ({"micro_batch_size_per_gpu": 3}, "verl.micro_batch_size_per_gpu: expected a divisor of the per-GPU mini-batch (32 responses), got 3"),
    ({"log_prob_micro_batch_size_per_gpu": 5}, "verl.log_prob_micro_batch_size_per_gpu: expected a divisor of the per-GPU rollout batch (64 responses), got 5"),
    ({"n_gpus_per_node": 3}, "verl.n_gpus_per_node: expected nnodes * n_gpus_per_node (3 GPUs) dividing the responses"),
    ({"tensor_parallel_size": 2}, "verl.tensor_parallel_size: expected a divisor of nnodes * n_gpus_per_node = 1, got 2"),
    ({"use_dynamic_bsz": True, "max_token_len_per_gpu": 100}, "verl.max_token_len_per_gpu: expected at least max_prompt_length"),
    ({"use_dynamic_bsz": True, "max_prompt_length": 20000}, "verl.max_token_len_per_gpu: expected at least max_prompt_length "
                                                              "+ trainer.max_new_tokens = 20080 (one full sequence), got \"null (verl's 16384)\""),
    ({"data_sources": {"openai/gsm8k": "a/b"}}, "verl.data_sources.openai/gsm8k: expected a benchmark name"),
    ({"extra_env": {"1BAD": "x"}}, "verl.extra_env: expected environment variable names"),
    ({"extra_overrides": ["a=1,2"]}, "verl.extra_overrides[0]: expected a single value, got the sweep 'a=1,2'"),
    ({"extra_overrides": ["=x"]}, "verl.extra_overrides[0]: expected a Hydra override like key=value, got '=x' (no key)"),
    ({"extra_overrides": ["nonsense"]}, "verl.extra_overrides[0]: expected a Hydra override like key=value"),
])
def test_verl_section_rejects(verl, message):
    with pytest.raises(ConfigError) as err:
        validate_verl_section(trial(**verl), "test")
    assert message in str(err.value)


def test_verl_section_mini_batch_of_whole_prompts():
    cfg = trial()
    cfg.trainer.prompts_per_step, cfg.trainer.updates_per_rollout = 6, 4  # 48 responses split in 4: fine locally
    with pytest.raises(ConfigError, match=r"trainer.updates_per_rollout: expected a divisor of trainer.prompts_per_step = 6"):
        validate_verl_section(cfg, "test")
    validate_verl_section(trial(nnodes=2, n_gpus_per_node=2, micro_batch_size_per_gpu=4), "test")


# ---------------------------------------------------------------- values, runtime, command line


@pytest.mark.parametrize("value", ["/p/a-b_c.parquet", "pkg://a.b", "10.0.0.1:6379", "a:1", "with space", "it's", "c:\\dir\\", "a\\'b", "true", "null", "1",
                                   "x=y", "[a]", "", 0, 7, 0.0003, 1e-6, 10.0, True, False, None,
                                   ["/a/b.parquet", "c d.parquet"]])
def test_hydra_value_round_trips(value):
    parsed = OverridesParser.create().parse_override(f"k={T.hydra_value(value)}").value()
    assert parsed == value and type(parsed) is type(value)


def test_runtime_overrides_and_command_line():
    run = T.runtime_overrides("/runs/x/ckpt", None, "10.0.0.1:6379", "trial-a", "sweep", "grpo.s0", True)
    assert run == ["trainer.default_local_dir=/runs/x/ckpt", "trainer.resume_mode=disable",
                   "+ray_kwargs.ray_init.address='10.0.0.1:6379'", "+ray_kwargs.ray_init.namespace=trial-a",
                   "trainer.project_name=sweep", "trainer.experiment_name=grpo.s0", "trainer.logger=[console,file]",
                   "trainer.val_before_train=True"]
    resumed = T.runtime_overrides("/c", "/c/global_step_20", None, "n", "p", "e", False)
    assert resumed[1:3] == ["trainer.resume_mode=resume_path", "trainer.resume_from_path=/c/global_step_20"]
    with pytest.raises(ValueError, match="global_step_N"):
        T.runtime_overrides("/c", "/c/latest", None, "n", "p", "e", False)
    cfg = trial("dhpo", {"mixing": "entropy"})
    ovs = overrides(cfg) + run
    T.validate_overrides(ovs, "x")
    line = T.command_line(ovs, T.trial_env(cfg))
    assert line.startswith("VERL_USE_EXTERNAL_MODULES=trainers.verl_plugin ZOO_VERL_FORWARD_ENTROPY=1 python -m verl.trainer.main_ppo ")
    assert shlex.split(line)[5:] == ovs


def test_merge_env_joins_module_lists():
    cfg = trial(extra_env={"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"})
    env = T.merge_env(T.trial_env(cfg), {"VERL_USE_EXTERNAL_MODULES": "trainers.verl_backend.cpu", "VERL_PLATFORM": "cpu"})
    assert env == {"VERL_USE_EXTERNAL_MODULES": "trainers.verl_plugin,trainers.verl_backend.cpu",
                   "VLLM_ATTENTION_BACKEND": "FLASH_ATTN", "VERL_PLATFORM": "cpu"}
