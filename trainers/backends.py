"""The trainer backends: name -> its train function and its hooks.

A backend is one package with a ``train`` function (the contract in trainers/api.py) and, optionally, one
section of the trial config named after it that only it reads (``local:``, ``verl:``), registered in
trainers/sections.py (its dataclass, check and path keys; trainers/config.py builds TrialConfig from those).
Each built-in backend's hooks are the named functions of its ``hooks.py`` (trainers/local/hooks.py, ...),
registered here by reference; a hook whose code is heavy (torch, verl, Hydra) imports it when called. Adding a
backend means its package and one entry here and in trainers/sections.py (``register_backend`` adds both: a
test's toy backend, a plug-in); sweeps/, evaluators/ and trainers/config.py never name a backend, they ask
these registries.

    from trainers.backends import get_backend, backend_names
    train = get_backend("verl").train       # trainers/verl_backend/hooks.py train: imports verl's launch code when called

Hooks besides ``train`` (all optional functions):
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

    get_backend("local").export_hf(ckpt, out_dir, lambda: cfg, print)

Hooks of a sweep (sweeps/ calls them through the functions below; ``resources`` is the spec's
per-trial {cpus, gpus}, ``.cpus``/``.gpus``):
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
              place = get_backend("verl").placement
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

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from contract.plugins import load_plugins
from trainers.sections import DEFAULT_BACKEND, SECTIONS, Section, section_of


Hook = Optional[Callable[..., Any]]


@dataclass(frozen=True)
class Backend:
    name: str
    train: Callable[..., dict]
    """The train function (trainers/api.py contract)."""
    summary: str
    """One line for docs and errors."""
    preflight: Hook = None
    describe: Hook = None
    base_model: Hook = None
    is_checkpoint: Hook = None
    export_hf: Hook = None
    checkpoints: str | None = None
    """What its checkpoints look like, for messages ("a local-trainer checkpoint (trainer_state.pt)")."""
    resolve_resources: Hook = None
    check_resources: Hook = None
    placement: Hook = None
    smoke_overrides: Hook = None
    worker_env: Hook = None
    trial_env: Hook = None
    base_fingerprint: Hook = None
    trial_setup: Hook = None
    packages: tuple[str, ...] = ()
    """Python distributions whose versions a sweep records (provenance.<package>)."""


def _built_in() -> dict[str, Backend]:
    from trainers.local import hooks as local
    from trainers.synthetic import hooks as synthetic
    from trainers.verl_backend import hooks as verl

    return {
        "local": Backend("local", local.train, "the built-in trainer (tiny Qwen3 or a local checkpoint; CPU or one GPU)",
                         base_model=local.base_model, is_checkpoint=local.is_checkpoint, export_hf=local.export_hf,
                         checkpoints="a local-trainer checkpoint (trainer_state.pt)", preflight=local.preflight, trial_env=local.trial_env, trial_setup=local.trial_setup,
                         base_fingerprint=local.base_fingerprint),
        "verl": Backend("verl", verl.train, "verl main_ppo, one Ray driver per trial (GPU cluster with vLLM, or CPU)",
                        preflight=verl.preflight, describe=verl.describe,
                        base_model=verl.base_model, is_checkpoint=verl.is_checkpoint, export_hf=verl.export_hf,
                        checkpoints="a verl checkpoint (global_step_N/ or verl_checkpoint.json)",
                        resolve_resources=verl.resolve_device, check_resources=verl.check_gpus,
                        placement=verl.place, smoke_overrides=verl.smoke_overrides, worker_env=verl.inherited_env,
                        packages=("verl",)),
        "synthetic": Backend("synthetic", synthetic.train,
                             "no model: the metrics of a real trial at a set pace, with injected faults (benchmarks, tests)"),
    }


BACKENDS: dict[str, Backend] = _built_in()


def backend_names() -> list[str]:
    load_plugins()  # SWEEP_PLUGINS: the backends plug-ins register join BACKENDS before it is read
    return list(BACKENDS)


def register_backend(backend: Backend, section: Section | None = None) -> None:
    """Add a backend (a plug-in, a test's toy backend) and its entry in trainers/sections.py (none: it has no
    section). Its section joins the trial config only where TrialConfig is built after this
    (trainers/config.py ``trial_config_class``)."""
    if backend.name in BACKENDS:
        raise ValueError(f"backend {backend.name!r} is registered already")
    if section is not None and section.backend != backend.name:
        raise ValueError(f"backend {backend.name!r}: its section is registered as {section.backend!r}")
    BACKENDS[backend.name] = backend
    SECTIONS[backend.name] = section or Section(backend.name)


def unregister_backend(name: str) -> None:
    BACKENDS.pop(name, None)
    SECTIONS.pop(name, None)


def get_backend(name: str) -> Backend:
    section_of(name)  # loads the plug-ins; a ValueError naming the registered backends
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


def _call(backend: Backend | None, hook: str, *args) -> Any:
    """``hook`` of ``backend`` called with ``args``; None when there is no backend or it lacks the hook."""
    function = getattr(backend, hook) if backend is not None else None
    return function(*args) if function is not None else None


def _name_of(data: dict) -> str | None:
    """The backend a trial-config dict names (the default when it names none); None: no backend's name."""
    name = data.get("backend", DEFAULT_BACKEND)
    return name if isinstance(name, str) else None


def _of_dict(data: dict) -> Backend | None:
    return BACKENDS.get(_name_of(data))


def absolute_paths(data: dict, base: Path) -> None:
    """In a trial-config dict: each section's ``paths`` keys (trainers/sections.py) made absolute against ``base``
    (the default where absent), in its own trials (``paths_in_every_trial``: in every trial). A value of the
    wrong type is left alone for TrialConfig to name."""
    own = _name_of(data)
    for section in SECTIONS.values():
        if section.paths is None or not (section.paths_in_every_trial or section.backend == own):
            continue
        for dotted, default in section.paths.items():
            *parents, leaf = dotted.split(".")
            node = data.setdefault(section.backend, {})
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

