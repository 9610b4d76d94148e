"""The ``verl:`` section of a trial config (VerlConfig) and its range checks (validate_verl_section).

Only what verl needs beyond the generic sections lives here: cluster shape, rollout engine, batch
splitting inside a GPU, prompt length, checkpoint retention, metric names of the data sources and
free-form verl overrides. Generic RL settings come from the other sections (trainers/verl_backend/
translate.py maps them): trainer.steps -> trainer.total_training_steps, trainer.prompts_per_step ->
data.train_batch_size, trainer.group_size -> rollout.n, trainer.updates_per_rollout -> the PPO
mini-batch, trainer.ppo_epochs -> actor.ppo_epochs, trainer.max_new_tokens -> data.max_response_length,
algorithm.params.agg -> actor.loss_agg_mode, and so on.

    verl:
      nnodes: 4
      n_gpus_per_node: 8
      micro_batch_size_per_gpu: 16
      extra_overrides: ["actor_rollout_ref.rollout.max_num_seqs=512"]

Fields are plain types (int, float, str, bool, list[str], dict[str, str], ``X | None``) because
trainers/config.py builds sections by their annotation strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from contract.errors import ConfigError

ROLLOUTS = ("auto", "vllm", "sglang", "zoo_hf")
"""verl.rollout values: 'auto' picks GPU_ROLLOUT for trials with GPUs and CPU_ROLLOUT on CPU."""
GPU_ROLLOUT = "vllm"
"""Rollout engine of 'auto' on GPUs (DHPO App. D: vLLM)."""
CPU_ROLLOUT = "zoo_hf"
"""Rollout engine of 'auto' on CPU: transformers generate (trainers/verl_backend/cpu)."""
RANDOM_MODELS = ("qwen3-0.6b", "qwen3-1.7b")
"""verl.random_model values: the shapes of trainers/verl_backend/shaped_model.py (SHAPES; kept equal by its test)."""
VERL_TOKEN_LEN = 16384
"""verl 0.9.1's default actor.ppo_max_token_len_per_gpu."""
DEVICES = ("auto", "cuda", "cpu")
STRATEGIES = ("fsdp", "fsdp2")
TRUNCATIONS = ("error", "left", "right", "middle")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BENCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


@dataclass
class VerlConfig:
    device: str = "auto"
    """'cuda' (GPU cluster, vLLM), 'cpu' (verl's CPU platform) or 'auto' (sweeps: cpu when resources.gpus is 0)."""
    nnodes: int = 1
    """Nodes per trial (verl trainer.nnodes)."""
    n_gpus_per_node: int = 1
    """GPUs per node per trial (verl trainer.n_gpus_per_node; logical GPUs on a CPU trial)."""
    rollout: str = "auto"
    """Rollout engine: 'auto' (vllm when the trial has GPUs, zoo_hf on CPU), 'vllm', 'sglang' or 'zoo_hf' (on GPUs: a check/debug rollout, not for throughput)."""
    tensor_parallel_size: int = 1
    """Tensor parallelism of each rollout replica (verl rollout.tensor_model_parallel_size)."""
    gpu_memory_utilization: float = 0.6
    """Share of GPU memory the rollout engine (vLLM/SGLang KV cache) may take, in (0, 1]."""
    max_prompt_length: int = 1024
    """Prompt length cap in tokens (verl data.max_prompt_length; DHPO App. D: 1024)."""
    truncation: str = "error"
    """Prompt longer than max_prompt_length: 'error', or cut on the 'left', 'right' or 'middle' (verl data.truncation)."""
    filter_overlong_prompts: bool = False
    """Drop prompts longer than max_prompt_length from the dataset before training (verl data.filter_overlong_prompts)."""
    strategy: str = "fsdp2"
    """Actor training engine: 'fsdp2' (PyTorch FSDP2, also what runs on CPU) or 'fsdp' (FSDP1)."""
    micro_batch_size_per_gpu: int | None = None
    """Responses per forward/backward on one GPU (gradient accumulation); None: the whole per-GPU mini-batch."""
    log_prob_micro_batch_size_per_gpu: int | None = None
    """Responses per log-prob forward on one GPU; None: micro_batch_size_per_gpu."""
    use_dynamic_bsz: bool = False
    """Pack micro-batches by token count (max_token_len_per_gpu) instead of micro_batch_size_per_gpu (DHPO App. D: on)."""
    max_token_len_per_gpu: int | None = None
    """Token budget of one packed micro-batch with use_dynamic_bsz; None: verl's default (VERL_TOKEN_LEN)."""
    gradient_checkpointing: bool = True
    """Activation checkpointing in the actor (DHPO App. D: on)."""
    remove_padding: bool = True
    """Pack sequences without padding in the actor forward (DHPO App. D: on)."""
    param_offload: bool = False
    """FSDP parameter offload to CPU (DHPO App. D: off)."""
    optimizer_offload: bool = False
    """FSDP optimizer-state offload to CPU (DHPO App. D: off)."""
    gpu_share: float = 1.0
    """Share of one GPU a trial takes; below 1 (a sweep sets it from ``resources.gpus``, e.g. 0.25), round(1 / share)
    trials share each GPU and every verl process of the trial has its CUDA memory capped to that share."""
    gpu_wait_s: float = 600.0
    """Seconds a GPU trial waits for nnodes x n_gpus_per_node free GPUs on the Ray cluster before failing."""
    cache_dir: str = ".cache/verl"
    """Where the tiny Qwen3 and the synthetic task's parquet files are built when model.path / data files are absent."""
    random_model: str | None = None
    """With model.path null: a real model shape with random weights, built under cache_dir (trainers/verl_backend/
    shaped_model.py: 'qwen3-0.6b', 'qwen3-1.7b'); real compute, memory and checkpoint bytes, reward ~0. None: the tiny Qwen3."""
    tiny_warm_start_steps: int = 1000
    """Supervised warm-start steps that make the built-in tiny Qwen3 (model.path null) a base policy; 0 = random init."""
    max_actor_ckpt_to_keep: int | None = 2
    """Newest actor checkpoints kept on disk (None: all); a resume needs only the newest."""
    data_sources: dict[str, str] = field(default_factory=dict)
    """verl data_source (may contain '/') -> benchmark name of val/<bench>/acc; unlisted sources keep their name."""
    extra_env: dict[str, str] = field(default_factory=dict)
    """Extra environment variables of the verl process (e.g. VLLM_ATTENTION_BACKEND); they win over the defaults."""
    extra_overrides: list[str] = field(default_factory=list)
    """verl (Hydra) overrides appended after everything else, last wins, e.g. 'actor_rollout_ref.rollout.max_num_seqs=512'."""


PATHS = {"cache_dir": VerlConfig.cache_dir}
"""Keys of the section holding paths, and their defaults (trainers/backends.py ``paths``: a sweep
makes them absolute against the directory it starts in)."""


def has_gpus(verl: VerlConfig) -> bool:
    """Whether the trial runs on GPUs: verl.device, with 'auto' (left unresolved outside a sweep) = CUDA available."""
    if verl.device == "auto":
        import torch

        return torch.cuda.is_available()
    return verl.device == "cuda"


def resolved_rollout(verl: VerlConfig, gpus: bool | None = None) -> str:
    """The rollout engine name given to verl: ``verl.rollout`` with 'auto' resolved (``gpus``: None = has_gpus(verl))."""
    if verl.rollout != "auto":
        return verl.rollout
    return GPU_ROLLOUT if (has_gpus(verl) if gpus is None else gpus) else CPU_ROLLOUT


def needs_user_model(verl: VerlConfig) -> bool:
    """Whether a trial needs ``model.path``: on GPUs with vLLM/SGLang, yes, unless ``verl.random_model`` builds
    one; the built-in tiny Qwen3 serves verl's CPU platform and the zoo_hf check rollout on a GPU
    (configs/sweeps/verl_gpu_smoke.yaml)."""
    return verl.device == "cuda" and verl.rollout != CPU_ROLLOUT and verl.random_model is None


def batch_shape(cfg: Any) -> dict[str, int | None]:
    """Per-trial batch sizes in verl's units, from the trainer and verl sections of a TrialConfig:
    train_batch_size (prompts), ppo_mini_batch_size (prompts), world (GPUs), the per-GPU response
    counts of one rollout and one mini-batch, and the resolved micro-batch sizes (None when the
    division is not exact: validate_verl_section reports it)."""
    t, v = cfg.trainer, cfg.verl
    world = v.nnodes * v.n_gpus_per_node
    mini = t.prompts_per_step // t.updates_per_rollout
    rollout_per_gpu = t.prompts_per_step * t.group_size // world if t.prompts_per_step * t.group_size % world == 0 else None
    mini_per_gpu = mini * t.group_size // world if mini * t.group_size % world == 0 else None
    micro = v.micro_batch_size_per_gpu if v.micro_batch_size_per_gpu is not None else mini_per_gpu
    log_prob_micro = v.log_prob_micro_batch_size_per_gpu if v.log_prob_micro_batch_size_per_gpu is not None else micro
    return {"train_batch_size": t.prompts_per_step, "ppo_mini_batch_size": mini, "world": world,
            "rollout_per_gpu": rollout_per_gpu, "mini_per_gpu": mini_per_gpu,
            "micro_batch_size_per_gpu": micro, "log_prob_micro_batch_size_per_gpu": log_prob_micro}


def _require_user_inputs(cfg: Any, source: str) -> None:
    """One error listing every input a verl trial needs from the user: a model directory on GPUs
    (the built-in tiny Qwen3 is for the CPU platform) and a file per benchmark that is not built in."""
    from evaluators.tasks import BENCHMARKS

    missing = []
    if needs_user_model(cfg.verl) and cfg.model.path is None:
        missing.append("model.path (a local Hugging Face model directory; the built-in tiny Qwen3 is only for "
                       "verl's CPU platform, resources.gpus: 0, and the zoo_hf check rollout, verl.rollout: zoo_hf)")
    files = [b for b in cfg.data.benchmarks if b not in BENCHMARKS and b not in cfg.data.eval_files]
    if files:
        missing.append(f"data.eval_files: a file for each of {files} (benchmarks of data.benchmarks that are not "
                       f"built in; built in: {list(BENCHMARKS)})")
    if missing:
        raise ConfigError(f"{source}: missing required settings: " + "; ".join(missing) +
                          " (nothing is downloaded: give local paths, e.g. as overrides on the command line)")


def validate_verl_section(cfg: Any, source: str = "config") -> None:
    """Range checks of ``cfg.verl`` (cfg: a TrialConfig, or a VerlConfig alone); raises ConfigError
    naming the key path, e.g. ``config: verl.nnodes: expected an integer >= 1, got 0``. For a
    TrialConfig with backend 'verl' also the batch arithmetic verl needs (mini-batches of whole
    prompts, batches that split evenly over GPUs and micro-batches, a token budget that fits one
    sequence), named by the trial keys to change."""

    verl = cfg if isinstance(cfg, VerlConfig) else cfg.verl

    def require(ok: bool, path: str, expected: str, value: Any) -> None:
        if not ok:
            raise ConfigError(f"{source}: {path}: expected {expected}, got {value!r}")

    for name in ("nnodes", "n_gpus_per_node", "tensor_parallel_size", "max_prompt_length"):
        require(getattr(verl, name) >= 1, f"verl.{name}", "an integer >= 1", getattr(verl, name))
    for name in ("micro_batch_size_per_gpu", "log_prob_micro_batch_size_per_gpu", "max_token_len_per_gpu",
                 "max_actor_ckpt_to_keep"):
        value = getattr(verl, name)
        require(value is None or value >= 1, f"verl.{name}", "an integer >= 1 or null", value)
    require(verl.device in DEVICES, "verl.device", f"one of {list(DEVICES)}", verl.device)
    require(0 < verl.gpu_share <= 1, "verl.gpu_share", "a number in (0, 1]", verl.gpu_share)
    require(verl.gpu_wait_s >= 0, "verl.gpu_wait_s", "a number >= 0", verl.gpu_wait_s)
    require(verl.cache_dir != "", "verl.cache_dir", "a directory path", verl.cache_dir)
    require(verl.random_model is None or verl.random_model in RANDOM_MODELS, "verl.random_model",
            f"null or one of {list(RANDOM_MODELS)}", verl.random_model)
    require(verl.tiny_warm_start_steps >= 0, "verl.tiny_warm_start_steps", "an integer >= 0", verl.tiny_warm_start_steps)
    require(0 < verl.gpu_memory_utilization <= 1, "verl.gpu_memory_utilization", "a number in (0, 1]",
            verl.gpu_memory_utilization)
    require(verl.rollout in ROLLOUTS, "verl.rollout", f"one of {list(ROLLOUTS)}", verl.rollout)
    require(verl.strategy in STRATEGIES, "verl.strategy", f"one of {list(STRATEGIES)}", verl.strategy)
    require(verl.truncation in TRUNCATIONS, "verl.truncation", f"one of {list(TRUNCATIONS)}", verl.truncation)
    for key, bench in verl.data_sources.items():
        require(isinstance(key, str) and key != "", "verl.data_sources", "non-empty data_source names as keys", key)
        require(isinstance(bench, str) and bool(_BENCH_NAME.fullmatch(bench)), f"verl.data_sources.{key}",
                "a benchmark name (letters, digits, '_', '.', '-'; no '/')", bench)
    for key, value in verl.extra_env.items():
        require(isinstance(key, str) and bool(_ENV_NAME.fullmatch(key)), "verl.extra_env",
                "environment variable names ([A-Za-z_][A-Za-z0-9_]*) as keys", key)
        require(isinstance(value, str), f"verl.extra_env.{key}", "a string", value)
    _check_overrides(verl.extra_overrides, source)

    if isinstance(cfg, VerlConfig) or getattr(cfg, "backend", None) != "verl":
        return
    if cfg.data.select_size or cfg.data.select_files:
        raise ConfigError(f"{source}: data.select_size / data.select_files: the verl backend does not evaluate a "
                          f"selection split (the built-in trainer does); remove them, or pick on the reported "
                          f"benchmarks (report.table.select_on: reported)")
    if verl.random_model is not None and cfg.model.path is not None:
        raise ConfigError(f"{source}: verl.random_model: {verl.random_model!r} builds the model, and model.path "
                          f"= {cfg.model.path!r} names one too; set one of them (the other null)")
    _require_user_inputs(cfg, source)
    t, b = cfg.trainer, batch_shape(cfg)
    world = b["world"]
    require(t.prompts_per_step % t.updates_per_rollout == 0, "trainer.updates_per_rollout",
            f"a divisor of trainer.prompts_per_step = {t.prompts_per_step} (verl's PPO mini-batch counts whole prompts)",
            t.updates_per_rollout)
    require(b["mini_per_gpu"] is not None, "verl.n_gpus_per_node",
            f"nnodes * n_gpus_per_node ({world} GPUs) dividing the responses of one mini-batch "
            f"({b['ppo_mini_batch_size']} prompts x {t.group_size} = {b['ppo_mini_batch_size'] * t.group_size})",
            verl.n_gpus_per_node)
    require(world % verl.tensor_parallel_size == 0, "verl.tensor_parallel_size",
            f"a divisor of nnodes * n_gpus_per_node = {world}", verl.tensor_parallel_size)
    if not verl.use_dynamic_bsz:
        micro, log_micro = b["micro_batch_size_per_gpu"], b["log_prob_micro_batch_size_per_gpu"]
        require(b["mini_per_gpu"] % micro == 0, "verl.micro_batch_size_per_gpu",
                f"a divisor of the per-GPU mini-batch ({b['mini_per_gpu']} responses)", verl.micro_batch_size_per_gpu)
        require(b["rollout_per_gpu"] % log_micro == 0, "verl.log_prob_micro_batch_size_per_gpu",
                f"a divisor of the per-GPU rollout batch ({b['rollout_per_gpu']} responses)", log_micro)
    else:
        longest, budget = verl.max_prompt_length + t.max_new_tokens, verl.max_token_len_per_gpu or VERL_TOKEN_LEN
        require(budget >= longest, "verl.max_token_len_per_gpu",
                f"at least max_prompt_length + trainer.max_new_tokens = {longest} (one full sequence)",
                verl.max_token_len_per_gpu if verl.max_token_len_per_gpu else f"null (verl's {VERL_TOKEN_LEN})")


def _check_overrides(items: Any, source: str) -> None:
    """Each extra override parses as a single (non-sweep) Hydra override."""

    if not isinstance(items, list):
        raise ConfigError(f"{source}: verl.extra_overrides: expected a list of Hydra overrides, got {items!r}")
    if not items:
        return
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for i, item in enumerate(items):
        where = f"{source}: verl.extra_overrides[{i}]"
        if not isinstance(item, str):
            raise ConfigError(f"{where}: expected a Hydra override string like key=value, got {item!r}")
        try:
            (override,) = parser.parse_overrides([item])
        except Exception as err:  # hydra.errors.OverrideParseException
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ConfigError(f"{where}: expected a Hydra override like key=value, +key=value or ~key, "
                              f"got {item!r} ({first})") from None
        if not override.key_or_group:
            raise ConfigError(f"{where}: expected a Hydra override like key=value, got {item!r} (no key)")
        if override.is_sweep_override():
            raise ConfigError(f"{where}: expected a single value, got the sweep {item!r} "
                              "(put grids in the sweep spec's variants)")
