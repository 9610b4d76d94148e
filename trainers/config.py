"""Typed, validated configuration of one trial (model, data, trainer, reward, objective, backend sections).

YAML is the user surface; these dataclasses are what the code sees. ``TrialConfig.from_dict``
rejects unknown keys (with a "did you mean" suggestion) and out-of-range values, naming the
key path, e.g. ``trainer.group_size: expected an integer >= 2, got 1``.

    cfg = load_trial_config("my_trial.yaml", ["trainer.steps=50", "algorithm.name=gspo", "~trainer.lr"])
    python -m trainers.config [CONFIG.yaml] [override ...]   # print the resolved config
    python -m trainers.config --smoke                         # ... of the defaults, checked to read back equal

Files are read as OmegaConf reads YAML (``3e-4`` is a float; no interpolation is resolved);
overrides are Hydra's (trainers/overrides.py: ``key=value``, ``+key=value``, ``++key=value``,
``~key``, ``~key=value``, values typed by Hydra's grammar). The dataclasses are the schema: each of
their fields exists with its default, so ``+trainer.lr=1`` is refused ("trainer.lr already exists")
and ``~trainer.lr`` (or ``~trainer``) puts the field (or section) back at its dataclass default;
``algorithm.params``, ``data.eval_files`` and ``verl.data_sources`` are open mappings
(``~algorithm.params.eps_low``: the objective's paper default again).

The backend sections (``local:``, ``verl:``, ``synthetic:``) come from the sections' registry (trainers/sections.py:
each entry holds its section's dataclass and check); TrialConfig is built from it at run time, and spelled out
for readers and type checkers under ``TYPE_CHECKING`` (a test holds the two equal). Each backend reads only its
own section and checks it with its entry's ``validate``.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from evaluators.benchmarks import DEFAULT_DATA_DIR, PAPER_BENCHMARKS
from evaluators.loaders import schema_help
from evaluators.rewards import RewardConfig
from evaluators.tasks import BENCHMARKS
from contract.errors import ConfigError, require
from contract.suggest import did_you_mean
from trainers.sections import DEFAULT_BACKEND, section_of, sections
from trainers.objectives import get_objective
from trainers.overrides import USAGE, OverrideError, apply as apply_override, parse as parse_override


@dataclass
class ModelConfig:
    name: str = "tiny-qwen3"
    """Label of the model in tables and MLflow tags."""
    path: str | None = None
    """Local directory with a Hugging Face checkpoint + tokenizer; None: the backend's built-in tiny Qwen3."""


@dataclass
class DataConfig:
    train_size: int = 2000
    """Number of synthetic training problems (ignored when train_file is set)."""
    benchmarks: list[str] = field(default_factory=lambda: list(BENCHMARKS))
    """Test benchmarks evaluated every eval_every steps: synthetic names, the papers' (a file in data/benchmarks/) or keys of eval_files."""
    eval_size: int = 64
    """Problems per built-in benchmark."""
    seed: int = 1234
    """Seed of the synthetic problems; the same for every trial so all trials see the same data."""
    train_file: str | None = None
    """Optional JSONL of training problems (fields prompt, answer[, solution])."""
    eval_files: dict[str, str] = field(default_factory=dict)
    """Optional benchmark name -> file (.jsonl / .json / .parquet in any schema of evaluators/loaders.py)."""
    select_size: int = 0
    """Problems per generated benchmark in the selection split (select/<benchmark>/acc): drawn by the same
    generator, disjoint from its eval_size problems; a grid picks configurations on it (report.table.select_on). 0: none."""
    select_files: dict[str, str] = field(default_factory=dict)
    """Benchmark name -> file of its selection problems (for benchmarks read from files; other problems than the reported ones)."""


@dataclass
class TrainerConfig:
    steps: int = 200
    """RL steps (one rollout + updates_per_rollout x ppo_epochs optimizer updates each)."""
    prompts_per_step: int = 8
    """Prompts sampled per step."""
    group_size: int = 8
    """Responses per prompt (G); advantages are normalised within a group (DHPO eq. 1)."""
    updates_per_rollout: int = 2
    """Mini-batch updates per rollout: policy staleness, SSPO's mu."""
    ppo_epochs: int = 1
    """Passes over each rollout's mini-batches (verl's ppo_epochs): later passes reuse responses already learned from."""
    lr: float = 1e-4
    """AdamW learning rate (1e-4 raises held-out accuracy on the tiny preset; 3e-4 and more destabilise it)."""
    warmup_steps: int = 10
    """Linear learning-rate warm-up, in optimizer updates."""
    weight_decay: float = 0.1
    """AdamW weight decay (DHPO App. D: 0.1)."""
    grad_clip: float = 1.0
    """Max global gradient norm."""
    max_new_tokens: int = 80
    """Response length cap during rollouts and evaluation."""
    temperature: float = 1.0
    """Rollout sampling temperature (papers: 1.0)."""
    top_p: float = 1.0
    """Rollout nucleus sampling (papers: 1.0 = off)."""
    eval_every: int = 20
    """Evaluate every N steps (and at step 0 = base model, and at the last step)."""
    eval_mode: str = "avg@k"
    """'avg@k': Pass@1 averaged over eval_k samples at temperature 1 (DHPO); 'greedy' (SSPO)."""
    eval_k: int = 4
    """Samples per problem for avg@k."""
    checkpoint_every: int = 50
    """Checkpoint every N steps (0 = only when a run directory asks for the final one)."""


@dataclass
class AlgorithmConfig:
    name: str = "grpo"
    """Objective registry name: grpo, gspo, gmpo, cispo, sapo, sspo, dhpo."""
    params: dict[str, Any] = field(default_factory=dict)
    """Objective parameters (eps_low, eps_high, tau_pos, gate, mixing, ...); paper defaults if absent."""

    def objective(self):
        """The objective with these parameters, typed and range-checked (``objective.params``: its params
        dataclass, every default filled in): what every user of ``algorithm`` reads (ValueError naming a bad one)."""
        return get_objective(self.name, **self.params)

    def typed_params(self) -> dict[str, Any]:
        """Every parameter of the objective, typed, defaults included (the params dataclass as a dict)."""
        return dataclasses.asdict(self.objective().params)


@dataclass
class TrialSettings:
    """The sections every backend reads; TrialConfig adds each backend's own (``trial_config_class``)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    seed: int = 0
    """Trial seed: rollout sampling, prompt order, optimizer noise."""
    backend: str = DEFAULT_BACKEND
    """Trainer backend (trainers/backends.py): 'local' (built-in, CPU or one GPU), 'verl' (main_ppo on Ray) or 'synthetic' (no model: scale benchmarks, tests)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, source: str = "config"):
        cfg = _build(cls, data or {}, prefix="", source=source)
        validate(cfg, source)
        return cfg

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data, without the sections their backends leave out at their defaults
        (``omitted_at_defaults``: the synthetic backend's), so a trial config's fingerprint
        (sweeps/specs/load.py ``config_hash``) is what it was before such a section existed."""
        data = dataclasses.asdict(self)
        for section in sections():
            if section.omitted_at_defaults and getattr(self, section.backend) == section.config():
                del data[section.backend]
        return data


def trial_config_class() -> type:
    """TrialConfig: TrialSettings plus one field per backend section of the registry, named after the backend
    (``local``, ``verl``, ``synthetic``), each at its dataclass's defaults."""
    extra = [(s.backend, s.config, field(default_factory=s.config)) for s in sections()]
    cls = dataclasses.make_dataclass("TrialConfig", extra, bases=(TrialSettings,))
    cls.__module__ = __name__  # pickled by reference (Ray hands trial configs to its workers)
    return cls


if TYPE_CHECKING:  # what trial_config_class() builds from the built-in backends (a test holds the two equal)
    from trainers.local.config import LocalConfig
    from trainers.synthetic.config import SyntheticConfig
    from trainers.verl_backend.config import VerlConfig

    @dataclass
    class TrialConfig(TrialSettings):
        local: LocalConfig = field(default_factory=LocalConfig)
        verl: VerlConfig = field(default_factory=VerlConfig)
        synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)
else:
    TrialConfig = trial_config_class()


def _build(cls: type, data: Any, prefix: str, source: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: {prefix.rstrip('.') or 'config'}: expected a mapping, got {data!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(f"{source}: {prefix}{key}: unknown key{did_you_mean(key, fields, prefix)}; "
                              f"expected one of {sorted(fields)}")
        sub = _section(fields[key])
        if sub is not None:
            kwargs[key] = _build(sub, value, f"{prefix}{key}.", source)
        else:
            kwargs[key] = _coerce(fields[key], value, f"{prefix}{key}", source)
    return cls(**kwargs)


def _section(f: dataclasses.Field) -> type | None:
    """The dataclass of a nested section (model, trainer, ...), else None."""
    sub = f.default_factory
    return sub if sub is not dataclasses.MISSING and dataclasses.is_dataclass(sub) else None


def trial_schema(cls: type | None = None) -> dict[str, Any]:
    """The override schema of TrialConfig (or a section): closed mappings (dataclasses) as dicts of
    their fields, leaves and open mappings (algorithm.params, data.eval_files) as None."""
    cls = cls or TrialConfig
    return {f.name: trial_schema(_section(f)) if _section(f) else None for f in dataclasses.fields(cls)}


def _coerce(f: dataclasses.Field, value: Any, path: str, source: str) -> Any:
    """Check a leaf value against the field's annotated type (ints stay ints, floats accept ints)."""
    kind = str(f.type)
    def fail(expected: str):
        raise ConfigError(f"{source}: {path}: expected {expected}, got {value!r}")
    if value is None:
        if "None" in kind:
            return None
        fail(kind.replace(" | None", ""))
    if kind.startswith("int"):
        if isinstance(value, bool) or not isinstance(value, int):
            fail("an integer")
    elif kind.startswith("float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail("a number")
        value = float(value)
    elif kind.startswith("str"):
        if not isinstance(value, str):
            fail("a string")
    elif kind.startswith("bool"):
        if not isinstance(value, bool):
            fail("true or false")
    elif kind.startswith("list"):
        if not isinstance(value, (list, tuple)):
            fail("a list")
        value = list(value)
    elif kind.startswith("dict"):
        if not isinstance(value, dict):
            fail("a mapping")
        value = dict(value)
    return value


def _check_selection(d: DataConfig, source: str) -> None:
    """The selection split names reported benchmarks only, and a benchmark read from a file needs its own file."""
    from evaluators.tasks import BENCHMARKS as GENERATED

    for bench in d.select_files:
        if bench not in d.benchmarks:
            raise ConfigError(f"{source}: data.select_files.{bench}: expected a benchmark of data.benchmarks "
                              f"{d.benchmarks}, got {bench!r}")
    if d.select_size:
        unsplit = [b for b in d.benchmarks if b not in GENERATED and b not in d.select_files]
        if unsplit:
            raise ConfigError(f"{source}: data.select_size: {unsplit} are read from files, not generated: give their "
                              f"selection problems as data.select_files.<name> (other problems than the reported ones)")


def validate(cfg: TrialConfig, source: str = "config") -> None:
    """Range checks across the whole config; raises ConfigError naming the key path."""
    t, m, d = cfg.trainer, cfg.model, cfg.data
    for name in ("steps", "prompts_per_step", "updates_per_rollout", "ppo_epochs", "max_new_tokens", "eval_every", "eval_k"):
        require(getattr(t, name) >= 1, source, f"trainer.{name}", "an integer >= 1", getattr(t, name))
    require(t.group_size >= 2, source, "trainer.group_size", "an integer >= 2 (advantages need a group)", t.group_size)
    n_rollouts = t.prompts_per_step * t.group_size
    require(n_rollouts % t.updates_per_rollout == 0, source, "trainer.updates_per_rollout",
            f"a divisor of prompts_per_step * group_size = {n_rollouts}", t.updates_per_rollout)
    require(t.lr > 0, source, "trainer.lr", "a number > 0", t.lr)
    require(t.warmup_steps >= 0, source, "trainer.warmup_steps", "an integer >= 0", t.warmup_steps)
    require(t.weight_decay >= 0, source, "trainer.weight_decay", "a number >= 0", t.weight_decay)
    require(t.grad_clip > 0, source, "trainer.grad_clip", "a number > 0", t.grad_clip)
    require(t.temperature > 0, source, "trainer.temperature", "a number > 0", t.temperature)
    require(0 < t.top_p <= 1, source, "trainer.top_p", "a number in (0, 1]", t.top_p)
    require(t.eval_mode in ("avg@k", "greedy"), source, "trainer.eval_mode", "'avg@k' or 'greedy'", t.eval_mode)
    require(t.checkpoint_every >= 0, source, "trainer.checkpoint_every", "an integer >= 0", t.checkpoint_every)
    if m.path is not None:
        require(Path(m.path).is_dir(), source, "model.path", "an existing local directory with a checkpoint", m.path)
    require(d.train_size >= 1 and d.eval_size >= 1, source, "data.train_size/eval_size", "integers >= 1", (d.train_size, d.eval_size))
    require(d.select_size >= 0, source, "data.select_size", "an integer >= 0", d.select_size)
    files = ([("data.train_file", d.train_file)] if d.train_file else []) + [(f"data.eval_files.{k}", v) for k, v in d.eval_files.items()]
    files += [(f"data.select_files.{k}", v) for k, v in d.select_files.items()]
    for path, value in files:
        require(Path(value).is_file(), source, path, "an existing file (.jsonl, .json or .parquet: evaluators/loaders.py)", value)
    try:
        section = section_of(cfg.backend)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None
    if section.validate is not None:
        section.validate(cfg, source)
    require(len(d.benchmarks) >= 1, source, "data.benchmarks", "a non-empty list", d.benchmarks)
    for bench in d.benchmarks:
        if bench in PAPER_BENCHMARKS and bench not in d.eval_files:
            raise ConfigError(f"{source}: data.benchmarks: {bench!r} is read from a file: put it at "
                              f"{DEFAULT_DATA_DIR}/{bench}.parquet (or .jsonl / .json) under the directory the sweep "
                              f"starts in, or set data.eval_files.{bench}; schemas accepted:\n{schema_help()}")
        require(bench in BENCHMARKS or bench in d.eval_files, source, "data.benchmarks",
                f"built-in benchmarks {list(BENCHMARKS)}, the papers' {list(PAPER_BENCHMARKS)} (files) or keys of "
                "data.eval_files", bench)
    _check_selection(d, source)
    require(cfg.reward.answer or cfg.reward.format, source, "reward", "at least one of answer/format enabled", dataclasses.asdict(cfg.reward))
    try:
        cfg.algorithm.objective()
    except ValueError as err:
        raise ConfigError(f"{source}: algorithm: {err}") from None


def apply_overrides(data: dict[str, Any], items: list[str], source: str = "command line") -> dict[str, Any]:
    """Apply Hydra overrides (see the module docstring) to a trial-config dict in place; keys it
    leaves out are at their dataclass defaults. ConfigError naming the override and the key path."""
    schema, defaults = trial_schema(), TrialConfig().to_dict()
    for item in items:
        try:
            apply_override(data, parse_override(item), schema, defaults)
        except OverrideError as err:
            raise ConfigError(f"{source}: override {item!r}: {err}") from None
    return data


def split_args(args: list[str]) -> tuple[str | None, list[str]]:
    """``[CONFIG.yaml] [override ...]`` -> (the config path or None, the overrides). An override has
    '=' or starts with '+' or '~'; only the first argument may be a config file."""
    def is_override(arg: str) -> bool:
        return "=" in arg or arg.startswith(("+", "~"))
    path = args[0] if args and not is_override(args[0]) else None
    rest = args[1:] if path is not None else args
    for arg in rest:
        if not is_override(arg):
            raise ConfigError(f"argument {arg!r}: expected an override ({USAGE}); only the first "
                              "argument may be a config file")
    return path, list(rest)


def load_trial_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrialConfig:
    """Read a trial YAML (or the defaults when path is None), apply overrides, validate."""
    from omegaconf import OmegaConf

    data: Any = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        if not Path(path).is_file():
            raise ConfigError(f"{path}: file not found")
        try:
            data = OmegaConf.to_container(OmegaConf.load(path), resolve=False) or {}
        except Exception as err:  # yaml.YAMLError, omegaconf errors: a file that is no config
            raise ConfigError(f"{path}: expected a YAML mapping of trial settings ({type(err).__name__}: {err})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping at the top level")
    apply_overrides(data, overrides or [])
    return TrialConfig.from_dict(data, source=source)


SMOKE_OVERRIDES = ("trainer.steps=4", "++trainer.eval_k=2", "~trainer.lr")
"""What ``python -m trainers.config --smoke`` applies before the command line's overrides: one of each form."""


def main(argv: list[str] | None = None) -> int:
    """``python -m trainers.config``: the resolved config as YAML on stdout; 2 on a bad config or override."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m trainers.config",
        description="Print a trial config resolved as a trial sees it: the YAML file (else the defaults), then "
                    "the overrides, validated, every field shown.",
        epilog=f"overrides: {USAGE} (Hydra's grammar, trainers/overrides.py)")
    parser.add_argument("args", nargs="*", help="[CONFIG.yaml] then overrides: key=value, +key=value, "
                                                "++key=value, ~key")
    parser.add_argument("--smoke", action="store_true",
                        help=f"apply {' '.join(SMOKE_OVERRIDES)} first and check that the printed YAML reads back "
                             "as the same config (seconds)")
    ns = parser.parse_intermixed_args(argv)
    try:
        path, overrides = split_args(ns.args)
        cfg = load_trial_config(path, (list(SMOKE_OVERRIDES) if ns.smoke else []) + overrides)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False)
    print(text)
    if ns.smoke:
        if TrialConfig.from_dict(yaml.safe_load(text), source="the printed YAML") != cfg:
            print("smoke failed: the printed YAML reads back as another config", file=sys.stderr)
            return 1
        print(f"smoke ok: {path or 'the defaults'} with {len(SMOKE_OVERRIDES) + len(overrides)} overrides resolved, "
              "validated and read back equal from the YAML above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
