"""Where a sweep's trials run on Ray: each trial's Tune slot, how many run at once, and what a
local Ray instance must declare. Computed before any trial starts.

Local-backend trials: the Tune slot is ``resources`` ({cpus, gpus} per trial) and the trial
trains inside it; at most ``max_concurrent`` run at once.

verl trials: each trial is its own Ray driver (verl's ``main_ppo``) that creates verl's own
placement groups, one bundle {CPU: 3, GPU: 1} per GPU, outside Tune. Ray does not nest placement
groups, so a GPU that Tune reserved for the trial would be invisible to verl. Instead:

* the Tune slot holds only ``resources.cpus`` CPUs (the process that launches and watches verl);
* GPUs per trial = ``verl.nnodes x verl.n_gpus_per_node``, and at most
  ``min(max_concurrent, cluster GPUs // GPUs per trial)`` trials run at once, so the sweep's own
  trials never oversubscribe the cluster; a trial also waits for free GPUs before it starts verl
  (other users' jobs), failing clearly after ``verl.gpu_wait_s``;
* a trial asking for 0 GPUs (``resources.gpus: 0``) runs verl on the CPU platform, whose
  placement groups ask for *logical* GPUs: a local Ray declares ``GPUs per trial x concurrency``
  logical GPUs and enough logical CPUs (``VERL_CPU_LOGICAL_CPUS`` per trial) for verl's
  TaskRunner, worker bundles, reward and TransferQueue actors. On an existing cluster
  (``--address``) the cluster must declare them (``ray start --num-gpus N``).

Limits: the concurrency limit counts the cluster's total GPUs; a trial whose nodes do not have
``n_gpus_per_node`` free GPUs each waits (and then fails) instead of being placed elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from sweeps.ray_cluster import Capacity
from sweeps.spec_errors import SpecError

VERL_CPU_LOGICAL_CPUS = 12  # per CPU verl trial: TaskRunner 1 + worker bundle 3 + reward/agent/TQ actors


@dataclass
class Placement:
    tune_resources: dict[str, float]
    """The Tune slot of each trial."""
    max_concurrent: int
    """Trials at once."""
    gpus_per_trial: int
    """GPUs (logical on the CPU platform) each verl trial's own placement groups take; 0 for local."""
    local_cpus: int | None = None
    """CPUs a local ray.init declares (None: the machine's)."""
    local_gpus: int | None = None
    """GPUs a local ray.init declares (None: the visible ones)."""


def resolve_verl_device(data: dict, resources) -> None:
    """In a trial's config dict: ``verl.device: auto`` of a verl trial becomes 'cpu' when the spec
    gives trials 0 GPUs, else 'cuda' (before validation, which then knows the trial's device)."""
    section = data.get("verl")
    if data.get("backend") != "verl" or not isinstance(section if section is not None else {}, dict):
        return
    section = data.setdefault("verl", {})
    if section.get("device", "auto") == "auto":
        section["device"] = "cpu" if resources.gpus == 0 else "cuda"


def check_verl_gpus(cfg, resources, where: str) -> None:
    """With GPUs, ``resources.gpus`` of a verl trial must be its nnodes x n_gpus_per_node."""
    if cfg.backend != "verl":
        return
    v = cfg.verl
    need = v.nnodes * v.n_gpus_per_node
    if v.device == "cuda" and resources.gpus not in (0, need):
        raise SpecError(f"{where}: resources.gpus: a verl trial takes verl.nnodes x verl.n_gpus_per_node = {need} GPUs "
                        f"(placed by verl itself, not by Tune), got resources.gpus: {resources.gpus:g}; set it to "
                        f"{need}, or to 0 for verl's CPU platform")


def _verl_trials(spec) -> list:
    return [t for t in spec.trials if t.config.backend == "verl"]


def plan(spec, capacity: Capacity, local: bool) -> Placement:
    """The placement of ``spec`` on a cluster with ``capacity`` (``local``: a ray.init we start)."""
    r = spec.resources
    verl = _verl_trials(spec)
    if not verl:
        return Placement({"cpu": r.cpus, "gpu": r.gpus}, spec.max_concurrent, 0)
    if len(verl) != len(spec.trials):
        raise SpecError(f"{spec.path}: backend: a sweep runs one backend; this one mixes 'verl' with "
                        f"{sorted({t.config.backend for t in spec.trials} - {'verl'})}")
    need = max(t.config.verl.nnodes * t.config.verl.n_gpus_per_node for t in verl)
    per_node = max(t.config.verl.n_gpus_per_node for t in verl)
    cpu = r.gpus == 0
    if cpu:
        if local:
            concurrent = spec.max_concurrent
            return Placement({"cpu": r.cpus, "gpu": 0}, concurrent, need,
                             local_cpus=int(capacity.cpus) + concurrent * VERL_CPU_LOGICAL_CPUS,
                             local_gpus=max(int(capacity.gpus), need * concurrent))
        gpus = capacity.gpus
        what = "logical GPUs (ray start --num-gpus N on each node: the CPU platform's placement groups ask for them)"
    else:
        gpus = capacity.gpus
        what = "GPUs"
        if per_node > capacity.node_gpus:
            raise SpecError(f"{spec.path}: verl.n_gpus_per_node: each trial asks for {per_node} GPUs per node, but "
                            f"{capacity.where} has {capacity.node_gpus:g} on its largest node")
    fit = int(gpus // need)
    if fit < 1:
        raise SpecError(f"{spec.path}: verl.nnodes x verl.n_gpus_per_node: each trial needs {need} {what}, but "
                        f"{capacity.where} has {gpus:g}")
    return Placement({"cpu": r.cpus, "gpu": 0}, min(spec.max_concurrent, fit), need)
