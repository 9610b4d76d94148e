"""The trainer backends: name -> where its train function and its checks live (imported lazily).

A backend is one package with a ``train`` function (the contract in trainers/api.py) and, optionally, one
section of the trial config named after it that only it reads (``local:``, ``verl:``): its entry names the
section's dataclass (``section``) and trainers/config.py builds TrialConfig from these entries. Adding a
backend means its package and one entry here (``register_backend``: a test's toy backend, a plug-in);
sweeps/, evaluators/ and trainers/config.py never name a backend, they ask this module.

    from trainers.backends import get_trainer, backend_names
    train = get_trainer("verl")        # imports trainers.verl_backend.train only now

Hooks besides ``train`` (all optional, "module:function" strings):
    validate  (cfg, source) -> None           range checks of its section, ConfigError naming the key
    preflight (trials, source) -> None        checks of a whole sweep before any trial starts
                                              (e.g. verl composes its Hydra config for each trial)
    describe  (cfg) -> str                    what ``sweep run --dry-run`` prints for a trial
    base_model (cfg, log) -> Path             the Hugging Face directory of the trial's base policy
                                              (built if need be), for evaluating it (`eval.base`)
    is_checkpoint (path) -> bool              whether a directory is a checkpoint this backend reported
    export_hf (checkpoint, out_dir, trial_config, log) -> None
                                              write that checkpoint into the empty out_dir as a Hugging
                                              Face model directory; ``trial_config()`` returns the
                                              trial's TrialConfig (a backend calls it only if it needs
                                              it); CheckpointNotUsable when it cannot be exported
A backend with these two hooks also names its checkpoints (``checkpoints``) for the message of a
directory that is no checkpoint. trial_eval/checkpoints.py is their caller:

    get_backend("local").load("export_hf")(ckpt, out_dir, lambda: cfg, print)

Hooks of a sweep (sweeps/ calls them through the functions below; ``resources`` is the spec's
per-trial {cpus, gpus}, ``.cpus``/``.gpus``):
    paths     "module:NAME" of a dict {dotted key of its section: default}, the keys holding paths:
              a sweep makes them absolute against the directory it starts in (``absolute_paths``),
              in its own trials' configs (every trial's with ``paths_in_every_trial``, the local
              backend's: trial-config hashes, which a resume compares, stay as they were)
              e.g. local: {"warm_start.cache_dir": ".cache/base_models"}
    resolve_resources (data, resources) -> None
              in a trial-config dict, before validation: the defaults of its section that depend on
              the spec's resources (verl: ``verl.device: auto`` -> 'cpu' with 0 GPUs, else 'cuda')
    check_resources (cfg, resources, where) -> None
              ConfigError when the resources cannot run the trial (verl: ``resources.gpus`` must be 0
              or nnodes x n_gpus_per_node)
    placement (configs, resources, max_concurrent, capacity, local, source) -> Placement
              a backend whose trials place their own resources outside Tune (verl's placement
              groups): its Tune slot, trials at once, GPUs per trial and what a local ray.init
              declares; ``capacity``: .cpus/.gpus (totals), .node_cpus/.node_gpus (largest node),
              .where (for messages); ``local``: a ray.init the sweep starts; ConfigError when the
              trials can never fit. Without it a trial trains inside its slot ``resources``, which
              then holds its GPUs (``slot_holds_gpus``). sweeps/driver/placement.py is the caller:
              place = get_backend("verl").load("placement")
              place(configs, resources, 2, capacity, True, "spec.yaml").gpus_per_trial  # nnodes x n_gpus_per_node
    smoke_overrides (resources) -> list[str]
              spec overrides ``sweep run --smoke`` adds to a spec with trials of this backend
              (verl: ["base.verl.nnodes=1", "base.verl.n_gpus_per_node=1", ..., "resources.gpus=1"])
    base_fingerprint (cfg) -> str | None      one line naming the trial's base policy by its bytes (local:
                                              the weights' sha1 and the numeric mode), None if not built;
                                              `sweep run` prints it at the end
    trial_env (configs) -> dict[str, str]
              variables every Ray worker of the sweep starts with (a local ray.init's and a cluster's):
              settings a process reads once, at its start (local: the numeric mode's kernels,
              trainers/local/numerics.py)
    trial_setup (cfg) -> dict[str, str]
              called in the trial's process before it trains: applies and checks what the process
              needs (local: the numeric mode, NumericsError when it does not hold); returns settings the
              trial records as its ``provenance.<key>`` tags
    worker_env () -> dict[str, str]
              variables of this process's environment a Ray worker of a cluster the sweep did not
              start needs (it does not inherit them): verl's switches VERL_*, ZOO_VERL_*
Plain attributes: ``packages`` (Python distributions whose versions a sweep records, ("verl",)).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.plugins import load_plugins


class CheckpointNotUsable(ValueError):
    """A path that is no checkpoint we can evaluate; the message says what was expected."""


@dataclass
class Placement:
    """Where a sweep's trials run on Ray (a backend's ``placement`` hook, or the Tune slot alone)."""

    tune_resources: dict[str, float]
    """The Tune slot of each trial."""
    max_concurrent: int
    """Trials at once."""
    gpus_per_trial: int
    """GPUs (logical on a CPU platform) each trial's own placement groups take outside its slot; 0: none."""
    local_cpus: int | None = None
    """CPUs a local ray.init declares (None: the machine's)."""
    local_gpus: int | None = None
    """GPUs a local ray.init declares (None: the visible ones)."""
    local_gpu_ids: str | None = None
    """CUDA_VISIBLE_DEVICES of a local Ray's node (packing: the one GPU's id once per trial sharing it); None: as is."""


@dataclass(frozen=True)
class Backend:
    name: str
    train: str
    """"module:function" of the train function (trainers/api.py contract)."""
    summary: str
    """One line for docs and errors."""
    validate: str | None = None
    preflight: str | None = None
    describe: str | None = None
    base_model: str | None = None
    is_checkpoint: str | None = None
    export_hf: str | None = None
    checkpoints: str | None = None
    """What its checkpoints look like, for messages ("a local-trainer checkpoint (trainer_state.pt)")."""
    paths: str | None = None
    """"module:NAME" of a dict {dotted key of its section: default}: the keys holding paths."""
    paths_in_every_trial: bool = False
    """Its ``paths`` made absolute in every trial's config, not only its own trials' (local)."""
    resolve_resources: str | None = None
    check_resources: str | None = None
    placement: str | None = None
    smoke_overrides: str | None = None
    worker_env: str | None = None
    trial_env: str | None = None
    base_fingerprint: str | None = None
    trial_setup: str | None = None
    packages: tuple[str, ...] = ()
    """Python distributions whose versions a sweep records (provenance.<package>)."""
    section: str | None = None
    """"module:Class" of its trial-config section ``<name>:`` (a dataclass of defaults); None: it has none."""
    section_omitted_at_defaults: bool = False
    """Its section is left out of TrialConfig.to_dict() while at its defaults (a section added after trials
    were recorded: their config hashes stay as they were)."""

    def load(self, hook: str = "train") -> Any:
        target = getattr(self, hook)
        if target is None:
            return None
        module, _, function = target.partition(":")
        return getattr(importlib.import_module(module), function)


BACKENDS: dict[str, Backend] = {
    "local": Backend("local", "trainers.local.trainer:train",
                     "the built-in trainer (tiny Qwen3 or a local checkpoint; CPU or one GPU)",
                     validate="trainers.local.config:validate_local_section",
                     base_model="trainers.local.warmstart:base_model_dir",
                     is_checkpoint="trainers.local.export:is_checkpoint",
                     export_hf="trainers.local.export:export_hf",
                     checkpoints="a local-trainer checkpoint (trainer_state.pt)",
                     paths="trainers.local.config:PATHS", paths_in_every_trial=True,
                     section="trainers.local.config:LocalConfig",
                     preflight="trainers.local.numerics:check_modes", trial_env="trainers.local.numerics:trial_env",
                     trial_setup="trainers.local.numerics:trial_setup",
                     base_fingerprint="trainers.local.warmstart:base_fingerprint"),
    "verl": Backend("verl", "trainers.verl_backend.train:train",
                    "verl main_ppo, one Ray driver per trial (GPU cluster with vLLM, or CPU)",
                    validate="trainers.verl_backend.config:validate_verl_section",
                    preflight="trainers.verl_backend.preflight:preflight",
                    describe="trainers.verl_backend.launch:describe",
                    base_model="trainers.verl_backend.launch:base_model_dir",
                    is_checkpoint="trainers.verl_backend.export:is_checkpoint",
                    export_hf="trainers.verl_backend.export:export_hf",
                    checkpoints="a verl checkpoint (global_step_N/ or verl_checkpoint.json)",
                    paths="trainers.verl_backend.config:PATHS",
                    resolve_resources="trainers.verl_backend.placement:resolve_device",
                    check_resources="trainers.verl_backend.placement:check_gpus",
                    placement="trainers.verl_backend.placement:place",
                    smoke_overrides="trainers.verl_backend.placement:smoke_overrides",
                    worker_env="trainers.verl_backend.launch:inherited_env", packages=("verl",),
                    section="trainers.verl_backend.config:VerlConfig"),
    "synthetic": Backend("synthetic", "trainers.synthetic.trainer:train",
                         "no model: the metrics of a real trial at a set pace, with injected faults (benchmarks, tests)",
                         validate="trainers.synthetic.config:validate_synthetic_section",
                         section="trainers.synthetic.config:SyntheticConfig", section_omitted_at_defaults=True),
}


DEFAULT_BACKEND = "local"
"""The backend of a trial config that names none (TrialConfig.backend's default)."""


def backend_names() -> list[str]:
    load_plugins()  # SWEEP_PLUGINS: the backends plug-ins register join BACKENDS before it is read
    return list(BACKENDS)


def register_backend(backend: Backend) -> None:
    """Add a backend (a plug-in, a test's toy backend). Its section joins the trial config only where
    TrialConfig is built after this (trainers/config.py ``trial_config_class``)."""
    if backend.name in BACKENDS:
        raise ValueError(f"backend {backend.name!r} is registered already")
    BACKENDS[backend.name] = backend


def unregister_backend(name: str) -> None:
    BACKENDS.pop(name, None)


def sections() -> list[tuple[Backend, type]]:
    """(backend, its section's dataclass) of every backend with a section, in registry order."""
    load_plugins()
    return [(b, b.load("section")) for b in BACKENDS.values() if b.section is not None]


def get_backend(name: str) -> Backend:
    load_plugins()
    if name not in BACKENDS:
        raise ValueError(f"backend: unknown trainer backend {name!r}; expected one of {backend_names()}")
    return BACKENDS[name]


def preflight(configs: list, source: str) -> None:
    """Run each backend's preflight hook on its trials' configs (ConfigError naming the key)."""
    by_backend: dict[str, list] = {}
    for cfg in configs:
        by_backend.setdefault(cfg.backend, []).append(cfg)
    for name, group in by_backend.items():
        _call(get_backend(name), "preflight", group, source)


def describe(cfg) -> str | None:
    """What ``sweep run --dry-run`` prints for a trial of a backend with a describe hook, else None."""
    return _call(get_backend(cfg.backend), "describe", cfg)


def get_trainer(name: str):
    """The train function of backend ``name`` (imported now, not when this module is)."""
    return get_backend(name).load("train")


def _call(backend: Backend | None, hook: str, *args) -> Any:
    """``hook`` of ``backend`` called with ``args``; None when there is no backend or it lacks the hook."""
    function = backend.load(hook) if backend is not None else None
    return function(*args) if function is not None else None


def _of_dict(data: dict) -> Backend | None:
    """The backend a trial-config dict names (the default when it names none); None: no backend's name."""
    name = data.get("backend", DEFAULT_BACKEND)
    return BACKENDS.get(name) if isinstance(name, str) else None


def absolute_paths(data: dict, base: Path) -> None:
    """In a trial-config dict: each backend's ``paths`` keys made absolute against ``base`` (the
    default where absent), in its own trials (``paths_in_every_trial``: in every trial). A value of
    the wrong type is left alone for TrialConfig to name."""
    own = _of_dict(data)
    for backend in BACKENDS.values():
        if backend.paths is None or not (backend.paths_in_every_trial or backend is own):
            continue
        for dotted, default in backend.load("paths").items():
            *parents, leaf = dotted.split(".")
            node = data.setdefault(backend.name, {})
            for part in parents:
                node = node.setdefault(part, {}) if isinstance(node, dict) else None
            if isinstance(node, dict) and isinstance(node.get(leaf, ""), str):
                node[leaf] = str((base / node.get(leaf, default)).resolve())


def resolve_resources(data: dict, resources) -> None:
    """Its backend's ``resolve_resources`` hook on a trial-config dict (before validation)."""
    _call(_of_dict(data), "resolve_resources", data, resources)


def check_resources(cfg, resources, where: str) -> None:
    """Its backend's ``check_resources`` hook on a validated trial config (ConfigError)."""
    _call(get_backend(cfg.backend), "check_resources", cfg, resources, where)


def slot_holds_gpus(name: str) -> bool:
    """Whether a trial of backend ``name`` trains inside its Tune slot, GPUs included (no ``placement``
    hook); False: its own placement groups take its GPUs and the slot holds CPUs only."""
    return get_backend(name).placement is None


def smoke_overrides(configs: list, resources) -> list[str]:
    """The spec overrides ``sweep run --smoke`` adds for the backends of ``configs`` (registry order)."""
    present = {cfg.backend for cfg in configs}
    extra: list[str] = []
    for backend in BACKENDS.values():
        if backend.name in present:
            extra += _call(backend, "smoke_overrides", resources) or []
    return extra


def worker_env() -> dict[str, str]:
    """Every backend's ``worker_env``: what a Ray worker of a cluster the sweep did not start needs."""
    env: dict[str, str] = {}
    for backend in BACKENDS.values():
        env.update(_call(backend, "worker_env") or {})
    return env


def trial_env(configs: list) -> dict[str, str]:
    """Every backend's ``trial_env`` for its trials among ``configs``: what every Ray worker of the sweep starts with."""
    env: dict[str, str] = {}
    for name in sorted({cfg.backend for cfg in configs}):
        env.update(_call(get_backend(name), "trial_env", [c for c in configs if c.backend == name]) or {})
    return env


def base_fingerprints(configs: list) -> list[str]:
    """Each distinct base policy of these trials, named by its bytes (the backends' ``base_fingerprint``)."""
    lines = [_call(get_backend(cfg.backend), "base_fingerprint", cfg) for cfg in configs]
    return list(dict.fromkeys(line for line in lines if line))


def trial_setup(cfg) -> dict[str, str]:
    """The trial backend's ``trial_setup`` in this (the trial's) process: the settings to record ({} without one)."""
    return _call(get_backend(cfg.backend), "trial_setup", cfg) or {}


def packages() -> tuple[str, ...]:
    """The Python distributions of every backend (``packages``), for a sweep's provenance."""
    return tuple(p for backend in BACKENDS.values() for p in backend.packages)

