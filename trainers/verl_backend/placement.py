"""Where verl trials run on a sweep's Ray cluster: the backend's resource hooks (trainers/backends.py).

Each verl trial is its own Ray driver (``main_ppo``) that creates verl's own placement groups, one
bundle {CPU: 3, GPU: 1} per GPU, outside Tune. Ray does not nest placement groups, so a GPU that
Tune reserved for the trial would be invisible to verl. Instead:

* the Tune slot holds only ``resources.cpus`` CPUs (the process that launches and watches verl);
* GPUs per trial = ``verl.nnodes x verl.n_gpus_per_node`` (``resources.gpus`` must be that, or 0),
  and at most ``min(max_concurrent, cluster GPUs // GPUs per trial)`` trials run at once, so the
  sweep's own trials never oversubscribe the cluster; a trial also waits for free GPUs before it
  starts verl (other users' jobs), failing clearly after ``verl.gpu_wait_s`` (train.py);
* a trial asking for 0 GPUs (``resources.gpus: 0``) runs verl on the CPU platform, whose
  placement groups ask for *logical* GPUs: a local Ray declares ``GPUs per trial x concurrency``
  logical GPUs and enough logical CPUs (``VERL_CPU_LOGICAL_CPUS`` per trial) for verl's
  TaskRunner, worker bundles, reward and TransferQueue actors. On an existing cluster
  (``--address``) the cluster must declare them (``ray start --num-gpus N``).

    resolve_device(data, resources)      # verl.device: auto -> 'cpu' (resources.gpus 0) or 'cuda'
    check_gpus(cfg, resources, where)    # ConfigError unless resources.gpus is 0 or nnodes x n_gpus_per_node
    place(configs, resources, max_concurrent, capacity, local, source) -> Placement
    smoke_overrides(resources)           # what `sweep run --smoke` adds: one node x one GPU

Limits: the concurrency limit counts the cluster's total GPUs; a trial whose nodes do not have
``n_gpus_per_node`` free GPUs each waits (and then fails) instead of being placed elsewhere.
"""

from __future__ import annotations

from contract.errors import ConfigError
from trainers.backends import Placement

VERL_CPU_LOGICAL_CPUS = 12  # per CPU verl trial: TaskRunner 1 + worker bundle 3 + reward/agent/TQ actors
SMOKE_OVERRIDES = ["base.verl.nnodes=1", "base.verl.n_gpus_per_node=1", "base.verl.micro_batch_size_per_gpu=null",
                   "base.verl.log_prob_micro_batch_size_per_gpu=null", "base.trainer.max_new_tokens=64"]
"""--smoke of a verl spec: each trial on one node x one GPU (logical on the CPU platform), micro-batches
the whole per-GPU mini-batch, responses of 64 tokens."""


def trial_gpus(cfg) -> int:
    """GPUs (logical on the CPU platform) one trial's own placement groups take: nnodes x n_gpus_per_node."""
    return cfg.verl.nnodes * cfg.verl.n_gpus_per_node


def resolve_device(data: dict, resources) -> None:
    """In a verl trial's config dict: ``verl.device: auto`` becomes 'cpu' when the spec gives trials
    0 GPUs, else 'cuda' (before validation, which then knows the trial's device)."""
    section = data.get("verl")
    if not isinstance(section if section is not None else {}, dict):
        return  # left alone for TrialConfig to name
    section = data.setdefault("verl", {})
    if section.get("device", "auto") == "auto":
        section["device"] = "cpu" if resources.gpus == 0 else "cuda"


def check_gpus(cfg, resources, where: str) -> None:
    """With GPUs, ``resources.gpus`` of a verl trial must be its nnodes x n_gpus_per_node."""
    need = trial_gpus(cfg)
    if cfg.verl.device == "cuda" and resources.gpus not in (0, need):
        raise ConfigError(f"{where}: resources.gpus: a verl trial takes verl.nnodes x verl.n_gpus_per_node = {need} "
                          f"GPUs (placed by verl itself, not by Tune), got resources.gpus: {resources.gpus:g}; set it "
                          f"to {need}, or to 0 for verl's CPU platform")


def place(configs: list, resources, max_concurrent: int, capacity, local: bool, source: str) -> Placement:
    """The placement of a sweep of verl trials on a cluster with ``capacity`` (``local``: a ray.init
    the sweep starts); ConfigError naming the key when its trials can never fit."""
    need = max(trial_gpus(cfg) for cfg in configs)
    per_node = max(cfg.verl.n_gpus_per_node for cfg in configs)
    slot = {"cpu": resources.cpus, "gpu": 0}  # verl places its own (logical) GPUs
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


def smoke_overrides(resources) -> list[str]:
    """The spec overrides ``sweep run --smoke`` adds to a verl spec (one GPU per trial when it has GPUs)."""
    return SMOKE_OVERRIDES + (["resources.gpus=1"] if resources.gpus else [])
