"""The exact verl ``main_ppo`` command of one trial: its inputs, argv and environment.

Used by the backend's train function (trainers/verl_backend/train.py), by ``sweep run --dry-run``
(which prints it) and by benchmarks/verl_overhead.py (which runs it directly).

    python -m trainers.verl_backend.launch TRIAL.yaml [override ...]   # print a trial's command
    python -m trainers.verl_backend.launch --smoke     # ... of the defaults on the CPU platform (no verl, no torch)

Each trial is its own Ray driver process (``python -m verl.trainer.main_ppo``): verl calls
``ray.init(address=<the sweep's cluster>, namespace=<the trial's own>)``, so its placement
groups and named actors belong to that job and are removed when the process exits. Everything
verl's Ray workers need in their environment (our plug-ins via VERL_USE_EXTERNAL_MODULES, the CPU
platform's variables, PYTHONPATH, caches) goes into that job's ``runtime_env``, because workers of
an existing cluster do not inherit the driver's environment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from contract.env import (
    CUDA_VISIBLE_DEVICES, GPU_MEMORY_FRACTION, HF_DATASETS_CACHE, HF_HOME, PYTHONPATH, TMPDIR, TORCHINDUCTOR_CACHE_DIR,
    VERL_FILE_LOGGER_PATH, XDG_CACHE_HOME,
)
from contract.errors import ConfigError
from contract.run_layout import RunLayout
from trainers.config import TrialConfig

REPO_ROOT = Path(__file__).resolve().parents[2]
# Variables that must reach verl's Ray workers (not only its driver) when they are set.
WORKER_ENV_PREFIXES = ("VERL_", "ZOO_VERL_", "HF_", "TRANSFORMERS_", "TOKENIZERS_", PYTHONPATH.name, TMPDIR.name,
                       XDG_CACHE_HOME.name, TORCHINDUCTOR_CACHE_DIR.name)
# ... of which these are forwarded from the launching process's own environment too (e.g.
# ZOO_VERL_RECORD_PARAMS set where `sweep run` was started, which the sweep passes on to its trial
# workers): our and verl's switches only, never credentials such as HF_TOKEN (the command is
# written to command.sh and printed by --dry-run).
INHERITED_ENV_PREFIXES = ("VERL_", "ZOO_VERL_")


@dataclass
class Inputs:
    """What a trial reads: a local model directory and verl RL parquet files."""

    model_path: str
    train_files: list[str]
    val_files: list[str]


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    """Variables set on top of the caller's environment."""

    def shell(self) -> str:
        """The command as one shell line: env assignments, then argv (every value quoted)."""
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        return f"{assigns} {shlex.join(self.argv)}".strip()


def uses_cpu(cfg: TrialConfig) -> bool:
    """A trial without GPUs runs on the CPU platform (trainers/verl_backend/cpu). A sweep resolves
    ``verl.device: auto`` from its ``resources.gpus``; elsewhere 'auto' means: CPU without CUDA."""
    if cfg.verl.device == "auto":
        import torch

        return not torch.cuda.is_available()
    return cfg.verl.device == "cpu"


def cache_root(cfg: TrialConfig) -> Path:
    return Path(cfg.verl.cache_dir).resolve()


def prepare_inputs(cfg: TrialConfig, build: bool = True) -> Inputs:
    """The model directory and parquet files of a trial: the user's, or (model.path / data files
    absent) the tiny Qwen3, warm-started for ``verl.tiny_warm_start_steps`` steps, and the synthetic
    task built under ``verl.cache_dir`` (reused by hash).
    ``build=False`` returns where they will be without building them (for --dry-run)."""
    root = cache_root(cfg)
    model = str(base_model_dir(cfg)) if build else cfg.model.path or str(planned_model_dir(cfg))
    train, vals = trial_data(cfg, root / "data", build=build)
    return Inputs(model, [str(train)], [str(v) for v in vals])


def base_model_dir(cfg: TrialConfig, log=print) -> Path:
    """model.path; or, built once under ``verl.cache_dir``, the ``verl.random_model`` shape with random
    weights, or else the tiny Qwen3 warm-started for ``verl.tiny_warm_start_steps`` steps."""
    from trainers.verl_backend import assets, shaped_model

    if cfg.model.path:
        return Path(cfg.model.path)
    if cfg.verl.random_model:
        return shaped_model.build(cache_root(cfg) / "models", cfg.verl.random_model, log=log)
    return assets.tiny_qwen3(cache_root(cfg) / "models", warm_start_steps=cfg.verl.tiny_warm_start_steps, log=log)


def planned_model_dir(cfg: TrialConfig) -> Path:
    """Where base_model_dir's built model is or will be, without building it (for --dry-run)."""
    from trainers.verl_backend import shaped_model

    if cfg.verl.random_model:
        return shaped_model.model_dir(cache_root(cfg) / "models", cfg.verl.random_model)
    return cache_root(cfg) / "models" / "<tiny-qwen3>"


def _data_key(cfg: TrialConfig) -> str:
    """Hash of what defines a trial's parquet files (user files by path, size and mtime)."""
    d = cfg.data
    files = [f for f in [d.train_file, *d.eval_files.values()] if f]
    stamp = {f: [os.path.getsize(f), os.path.getmtime(f)] if os.path.isfile(f) else None for f in files}
    blob = json.dumps({"data": dataclasses.asdict(d), "files": stamp}, sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def trial_data(cfg: TrialConfig, root: Path, build: bool = True) -> tuple[Path, list[Path]]:
    """(train parquet, one val parquet per benchmark of data.benchmarks): user verl .parquet files as
    they are, other user files (any evaluators.loaders schema) converted, the synthetic task
    generated (trainers/verl_backend/parquet.py: write_verl_parquet), a paper benchmark of evaluators.benchmarks
    without a file read from its data/benchmarks/<stem> file like a user file; under ``root/data-<hash>``.
    The data source of a converted or generated benchmark is its name (verl.data_sources maps a
    user parquet's own data sources to benchmark names)."""
    from evaluators import benchmarks as registry
    from evaluators.tasks import make_split
    from trainers.verl_backend import parquet as verl_parquet

    d = cfg.data
    out = Path(root) / f"data-{_data_key(cfg)}"
    if not build:
        return (Path(d.train_file) if d.train_file else out / "train.parquet",
                [Path(d.eval_files[b]) if b in d.eval_files else out / f"val_{b}.parquet" for b in d.benchmarks])
    if d.train_file:
        train = verl_parquet.as_rl_parquet(Path(d.train_file), out, data_source="train", split="train")
    else:
        train = out / "train.parquet"
        if not train.is_file():
            verl_parquet.write_verl_parquet(make_split("train", d.train_size, d.seed), train, "train", "train")
    vals = []
    for bench in d.benchmarks:
        if bench in d.eval_files:
            vals.append(verl_parquet.as_rl_parquet(Path(d.eval_files[bench]), out, data_source=bench, split="test"))
            continue
        if bench in registry.BENCHMARKS and not registry.BENCHMARKS[bench].synthetic:  # data/benchmarks/<stem>.*
            found = registry.find_benchmark_file(bench)
            if found is None:
                registry.load_benchmark(bench)  # raises BenchmarkNotFoundError naming the paths looked at
            vals.append(verl_parquet.as_rl_parquet(found, out, data_source=bench, split="test"))
            continue
        path = out / f"val_{bench}.parquet"
        if not path.is_file():
            verl_parquet.write_verl_parquet(make_split(bench, d.eval_size, d.seed), path, bench, "test")
        vals.append(path)
    return train, vals


def worker_env(env: dict[str, str]) -> dict[str, str]:
    """The subset of ``env`` that verl's Ray workers need."""
    return {k: v for k, v in env.items() if k.startswith(WORKER_ENV_PREFIXES)}


def inherited_env() -> dict[str, str]:
    """The variables of this process's own environment named by INHERITED_ENV_PREFIXES."""
    return {k: v for k, v in os.environ.items() if k.startswith(INHERITED_ENV_PREFIXES)}


def forwarded_env(launch_env: dict[str, str]) -> dict[str, str]:
    """What goes into the verl job's ``runtime_env``: the launch's worker variables over the
    inherited ones (workers of a cluster that this process did not start see neither otherwise)."""
    return worker_env({**inherited_env(), **launch_env})


def build_launch(cfg: TrialConfig, inputs: Inputs, *, checkpoint_dir: Path, resume_path: str | None,
                 metrics_file: Path, namespace: str, ray_address: str | None, experiment: str,
                 node_gpus: str | None = None) -> Launch:
    """argv + env of ``python -m verl.trainer.main_ppo`` for this trial (``node_gpus``: the
    CUDA_VISIBLE_DEVICES the trial's Ray node gave it, which a packed trial needs; None: a placeholder)."""
    from trainers.verl_backend import translate

    env = dict(translate.trial_env(cfg))
    platform: list[str] = []
    if uses_cpu(cfg):
        from trainers.verl_backend.cpu_runtime import cpu_runtime  # without importing verl

        cpu_env, platform = cpu_runtime()
        env.update(cpu_env)
        if ray_address:  # joining a cluster: its resources are fixed, verl may not declare any
            platform = [o for o in platform if not o.lstrip("+").startswith(("ray_kwargs.ray_init.num_"))]
    cache = cache_root(cfg)
    env.setdefault(HF_HOME.name, str(cache / "hf"))
    env.setdefault(HF_DATASETS_CACHE.name, str(cache / "hf" / "datasets"))
    # verl's lock files, torch's and Python's temp files stay under the cache, not /tmp (a short
    # path: Python puts Unix sockets in TMPDIR too)
    env[TMPDIR.name] = str(cache / "tmp")
    env.setdefault(XDG_CACHE_HOME.name, str(cache / "xdg"))
    env.setdefault(TORCHINDUCTOR_CACHE_DIR.name, str(cache / "inductor"))
    env[PYTHONPATH.name] = os.pathsep.join(p for p in (str(REPO_ROOT), PYTHONPATH.raw() or "") if p)
    env[VERL_FILE_LOGGER_PATH.name] = str(metrics_file)
    overrides = translate.trial_overrides(cfg, inputs.model_path, inputs.train_files, inputs.val_files,
                                          platform_overrides=platform)
    overrides += translate.runtime_overrides(
        checkpoint_dir=str(checkpoint_dir), resume_path=resume_path, ray_address=ray_address, namespace=namespace,
        project="sweep", experiment=experiment, val_before_train=resume_path is None)
    packed = cfg.verl.gpu_share < 1 and not uses_cpu(cfg)  # this trial's share of its node's one GPU
    if packed:
        env[GPU_MEMORY_FRACTION.name] = f"{cfg.verl.gpu_share:g}"  # a ZOO_VERL_ switch: forwarded to the workers
        env[CUDA_VISIBLE_DEVICES.name] = packed_device(node_gpus) if node_gpus is not None else "<node-gpu>"
    job_env = forwarded_env(env)
    if packed:
        job_env[CUDA_VISIBLE_DEVICES.name] = env[CUDA_VISIBLE_DEVICES.name]
    overrides += [f"+ray_kwargs.ray_init.runtime_env.env_vars.{k}={translate.hydra_value(v)}"
                  for k, v in sorted(job_env.items())]
    return Launch([sys.executable, "-m", "verl.trainer.main_ppo", *overrides], env)


def packed_device(visible: str) -> str:
    """The one GPU id of a packed trial's verl job, from the CUDA_VISIBLE_DEVICES its Ray node gave the
    trial ('0,0,0,0' -> '0'). Every process of the job sees that id: the ones holding no GPU (verl's
    TaskRunner) must still find CUDA, which a repeated id hides, and Ray maps each logical GPU to it."""
    from trainers.verl_backend.placement import gpu_ids

    ids = list(dict.fromkeys(gpu_ids(visible)))
    if len(ids) == 1:
        return ids[0]
    raise ConfigError(f"verl.gpu_share: a packed trial needs its Ray node to show one GPU, repeated once per trial "
                      f"sharing it (e.g. CUDA_VISIBLE_DEVICES=0,0,0,0 ray start --num-gpus 4), got "
                      f"CUDA_VISIBLE_DEVICES={visible!r}")


def describe(cfg: TrialConfig) -> str:
    """What ``sweep run --dry-run`` prints for a trial: its main_ppo command line."""
    inputs = prepare_inputs(cfg, build=False)
    storage = RunLayout(Path("<run-dir>")).sweep("<sweep>").trial_dir("<trial>")  # the trial's storage_dir
    launch = build_launch(cfg, inputs, checkpoint_dir=storage / "checkpoints",
                          resume_path=None, metrics_file=storage / "metrics.jsonl",
                          namespace="<trial namespace>", ray_address="<cluster>", experiment="<trial>")
    return launch.shell()


SMOKE_OVERRIDES = ["backend=verl", "verl.device=cpu"]
"""What --smoke applies before the command line's overrides: a verl trial on the CPU platform."""


def main(argv: list[str] | None = None) -> int:
    """``python -m trainers.verl_backend.launch``: a trial's main_ppo command as ``sweep run --dry-run`` prints it."""
    import argparse

    from trainers.config import load_trial_config, split_args

    parser = argparse.ArgumentParser(
        prog="python -m trainers.verl_backend.launch",
        description="Print the exact verl main_ppo command (environment, then argv) of one trial, as sweep run "
                    "--dry-run shows it: nothing is built or run, and placeholders stand for the run directory, "
                    "the cluster and the tiny model's folder.")
    parser.add_argument("args", nargs="*", help="[TRIAL.yaml] then overrides: key=value, +key=value, "
                                                "++key=value, ~key")
    parser.add_argument("--smoke", action="store_true",
                        help=f"apply {' '.join(SMOKE_OVERRIDES)} first (the defaults' command needs neither verl nor "
                             "torch) and count its overrides (seconds)")
    ns = parser.parse_intermixed_args(argv)
    try:
        path, overrides = split_args(ns.args)
        trial = load_trial_config(path, (SMOKE_OVERRIDES if ns.smoke else []) + overrides)
        command = describe(trial)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(command)
    if ns.smoke:
        words = shlex.split(command)
        at = words.index("verl.trainer.main_ppo")
        print(f"smoke ok: the dry run of {path or 'the defaults'} with {' '.join(SMOKE_OVERRIDES + overrides)}: "
              f"python -m verl.trainer.main_ppo with {len(words) - at - 1} overrides, nothing built or run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
