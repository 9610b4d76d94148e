"""Where verl trials run on a sweep's Ray cluster: the backend's resource hooks (trainers/backends.py).

Each verl trial is its own Ray driver (``main_ppo``) that creates verl's own placement groups, one
bundle {CPU: 3, GPU: 1} per GPU, outside Tune. Ray does not nest placement groups, so a GPU that
Tune reserved for the trial would be invisible to verl. Instead:

* the Tune slot holds only ``resources.cpus`` CPUs (the process that launches and watches verl);
* GPUs per trial = ``verl.nnodes x verl.n_gpus_per_node`` (``resources.gpus`` must be that, or 0),
  and at most ``min(max_concurrent, cluster GPUs // GPUs per trial)`` trials run at once, so the
  sweep's own trials never oversubscribe the cluster; a trial also waits for free GPUs before it
  starts verl (other users' jobs), failing clearly after ``verl.gpu_wait_s`` (train.py);
* a trial asking for a share of one GPU (``resources.gpus: 0.25``: packing, verl.nnodes x
  n_gpus_per_node = 1) takes one *logical* GPU, of which the node declares round(1 / share) per
  physical GPU: a local Ray is started with ``CUDA_VISIBLE_DEVICES`` repeating the machine's one
  GPU id that many times (``Placement.local_gpu_ids``), so Ray maps every logical GPU to it; the
  trial's verl job sees that one id (launch.py) and each of its processes caps its CUDA memory to
  the share (``ZOO_VERL_GPU_MEMORY_FRACTION``, trainers/verl_plugin). Packing needs one GPU per
  node: on a cluster, start each node with ``CUDA_VISIBLE_DEVICES=0,0,0,0 ray start --num-gpus 4``;
* a trial asking for 0 GPUs (``resources.gpus: 0``) runs verl on the CPU platform, whose
  placement groups ask for *logical* GPUs: a local Ray declares ``GPUs per trial x concurrency``
  logical GPUs and enough logical CPUs (``VERL_CPU_LOGICAL_CPUS`` per trial) for verl's
  TaskRunner, worker bundles, reward and TransferQueue actors. On an existing cluster
  (``--address``) the cluster must declare them (``ray start --num-gpus N``).

    resolve_device(data, resources)      # verl.device: auto -> 'cpu' (resources.gpus 0) or 'cuda'; verl.gpu_share
    packing(gpus) -> int | None          # trials per GPU for resources.gpus in (0, 1), else None
    held_gpus(cfg) -> float              # GPUs a trial holds: nnodes x n_gpus_per_node x gpu_share (perf/gpu_s)
    check_gpus(cfg, resources, where)    # ConfigError unless resources.gpus is 0 or nnodes x n_gpus_per_node
    place(configs, resources, max_concurrent, capacity, local, source) -> Placement
    smoke_overrides(resources)           # what `sweep run --smoke` adds: one node x one GPU (a packed share kept)

Limits: the concurrency limit counts the cluster's total GPUs; a trial whose nodes do not have
``n_gpus_per_node`` free GPUs each waits (and then fails) instead of being placed elsewhere.
"""

from __future__ import annotations


from contract.env import CUDA_VISIBLE_DEVICES
from contract.errors import ConfigError
from trainers.api import Placement

VERL_CPU_LOGICAL_CPUS = 12  # per CPU verl trial: TaskRunner 1 + worker bundle 3 + reward/agent/TQ actors
SMOKE_OVERRIDES = ["base.verl.nnodes=1", "base.verl.n_gpus_per_node=1", "base.verl.micro_batch_size_per_gpu=null",
                   "base.verl.log_prob_micro_batch_size_per_gpu=null", "base.trainer.max_new_tokens=64"]
"""--smoke of a verl spec: each trial on one node x one GPU (logical on the CPU platform), micro-batches
the whole per-GPU mini-batch, responses of 64 tokens."""


def trial_gpus(cfg) -> int:
    """GPUs (logical on the CPU platform) one trial's own placement groups take: nnodes x n_gpus_per_node."""
    return cfg.verl.nnodes * cfg.verl.n_gpus_per_node


def held_gpus(cfg) -> float:
    """GPUs a trial on GPUs holds, for its GPU-seconds (perf/gpu_s): nnodes x n_gpus_per_node x verl.gpu_share
    (a packed trial: its share of its one GPU, e.g. 0.25)."""
    return trial_gpus(cfg) * cfg.verl.gpu_share


def packing(gpus: float) -> int | None:
    """Trials sharing one GPU when each asks for ``gpus`` of one (0 < gpus < 1), else None."""
    return round(1 / gpus) if 0 < gpus < 1 else None


def resolve_device(data: dict, resources) -> None:
    """In a verl trial's config dict: ``verl.device: auto`` becomes 'cpu' when the spec gives trials
    0 GPUs, else 'cuda' (before validation, which then knows the trial's device); a share of one GPU
    (0 < resources.gpus < 1) becomes ``verl.gpu_share``."""
    section = data.get("verl")
    if not isinstance(section if section is not None else {}, dict):
        return  # left alone for TrialConfig to name
    section = data.setdefault("verl", {})
    if section.get("device", "auto") == "auto":
        section["device"] = "cpu" if resources.gpus == 0 else "cuda"
    if packing(resources.gpus):
        section["gpu_share"] = resources.gpus


def check_gpus(cfg, resources, where: str) -> None:
    """With GPUs, ``resources.gpus`` of a verl trial must be its nnodes x n_gpus_per_node."""
    need = trial_gpus(cfg)
    share = packing(resources.gpus)
    if cfg.verl.device == "cuda" and share:
        _check_packing(cfg, resources.gpus, share, need, where)
    elif cfg.verl.device == "cuda" and resources.gpus not in (0, need):
        raise ConfigError(f"{where}: resources.gpus: a verl trial takes verl.nnodes x verl.n_gpus_per_node = {need} "
                          f"GPUs (placed by verl itself, not by Tune), got resources.gpus: {resources.gpus:g}; set it "
                          f"to {need}, or to 0 for verl's CPU platform")


def _check_packing(cfg, gpus: float, share: int, need: int, where: str) -> None:
    """A share of one GPU: whole trials per GPU, one GPU per trial, a rollout that stays in its share."""
    from trainers.verl_backend.config import resolved_rollout

    if abs(share * gpus - 1) > 0.02:  # 0.33 packs 3, 0.3 is refused
        raise ConfigError(f"{where}: resources.gpus: a share of one GPU must divide it into whole trials "
                          f"(1/2, 1/3, 1/4, ... e.g. 0.25 for 4 trials per GPU), got {gpus:g}")
    if need != 1:
        raise ConfigError(f"{where}: resources.gpus: {gpus:g} packs {share} trials on one GPU, so each trial takes "
                          f"one GPU: verl.nnodes x verl.n_gpus_per_node must be 1, got {need}")
    rollout = resolved_rollout(cfg.verl, gpus=True)
    if rollout != "zoo_hf":
        raise ConfigError(f"{where}: verl.rollout: packed trials (resources.gpus: {gpus:g}) run the transformers "
                          f"rollout 'zoo_hf'; {rollout!r} reserves verl.gpu_memory_utilization of the whole GPU")


def place(configs: list, resources, max_concurrent: int, capacity, local: bool, source: str) -> Placement:
    """The placement of a sweep of verl trials on a cluster with ``capacity`` (``local``: a ray.init
    the sweep starts); ConfigError naming the key when its trials can never fit."""
    need = max(trial_gpus(cfg) for cfg in configs)
    per_node = max(cfg.verl.n_gpus_per_node for cfg in configs)
    slot = {"cpu": resources.cpus, "gpu": 0}  # verl places its own (logical) GPUs
    share = packing(resources.gpus)
    if share:
        return _place_packed(slot, share, max_concurrent, capacity, local, source)
    if resources.gpus == 0:
        if local:
            return Placement(slot, max_concurrent, need,
                             local_cpus=int(capacity.cpus) + max_concurrent * VERL_CPU_LOGICAL_CPUS,
                             local_gpus=max(int(capacity.gpus), need * max_concurrent))
        what = "logical GPUs (ray start --num-gpus N on each node: the CPU platform's placement groups ask for them)"
    else:
        what = "GPUs"
        if per_node > capacity.node_gpus:
            raise ConfigError(f"{source}: verl.n_gpus_per_node: each trial asks for {per_node} GPUs per node, but "
                              f"{capacity.where} has {capacity.node_gpus:g} on its largest node")
    fit = int(capacity.gpus // need)
    if fit < 1:
        raise ConfigError(f"{source}: verl.nnodes x verl.n_gpus_per_node: each trial needs {need} {what}, but "
                          f"{capacity.where} has {capacity.gpus:g}")
    return Placement(slot, min(max_concurrent, fit), need)


def _place_packed(slot: dict, share: int, max_concurrent: int, capacity, local: bool, source: str) -> Placement:
    """``share`` trials per GPU: a local Ray declares ``share`` logical GPUs on the machine's one GPU."""
    if local:
        if capacity.gpus != 1:
            raise ConfigError(f"{source}: resources.gpus: packing {share} trials per GPU needs one GPU per node, but "
                              f"{capacity.where} shows {capacity.gpus:g}; choose one, e.g. CUDA_VISIBLE_DEVICES=0")
        ids = local_gpu_ids()
        return Placement(slot, min(max_concurrent, share), 1, local_gpus=share, local_gpu_ids=",".join(ids * share))
    if capacity.gpus < 1:
        raise ConfigError(f"{source}: resources.gpus: packed trials each take one logical GPU, but {capacity.where} "
                          f"has none; start each one-GPU node with CUDA_VISIBLE_DEVICES=0,0,0,0 ray start --num-gpus 4")
    return Placement(slot, min(max_concurrent, int(capacity.gpus)), 1)


def gpu_ids(visible: str | None) -> list[str]:
    """The entries of a CUDA_VISIBLE_DEVICES value, in order ('0, 0' -> ['0', '0']; unset or '' -> [])."""
    return [v.strip() for v in (visible or "").split(",") if v.strip()]


def local_gpu_ids() -> list[str]:
    """The GPU id(s) this machine shows: CUDA_VISIBLE_DEVICES's entries, else '0'."""
    return gpu_ids(CUDA_VISIBLE_DEVICES.raw()) or ["0"]


def smoke_overrides(resources) -> list[str]:
    """The spec overrides ``sweep run --smoke`` adds to a verl spec (one GPU per trial when it has GPUs)."""
    return SMOKE_OVERRIDES + (["resources.gpus=1"] if resources.gpus and not packing(resources.gpus) else [])
