"""Problems for a trial: the synthetic train split and test benchmarks, or user data files.

    train, benchmarks = load_data(cfg)   # list[Problem], {name: list[Problem]}
    selection = load_selection(cfg)      # {name: list[Problem]}: the selection split, {} when none

User files (data.train_file, data.eval_files) are read by evaluators.loaders.load_problems (any
schema it accepts: synthetic-task JSONL, MATH / GSM8K style JSONL or JSON, plain or verl parquet);
a benchmark name without a file goes through the registry (evaluators.benchmarks.load_benchmark):
the synthetic splits are make_split(name, data.eval_size, data.seed), a paper benchmark is read
from data/benchmarks/.
"""

from __future__ import annotations

from evaluators.benchmarks import BENCHMARKS, load_benchmark
from evaluators.loaders import load_problems
from evaluators.tasks import Problem, make_split
from trainers.config import TrialConfig


def load_data(cfg: TrialConfig) -> tuple[list[Problem], dict[str, list[Problem]]]:
    d = cfg.data
    if d.train_file:
        train = load_problems(d.train_file)
        if cfg.local.warm_start.steps and any(not p.solution for p in train):
            raise ValueError(f"data.train_file {d.train_file}: local.warm_start.steps > 0 needs a 'solution' on every row")
    else:
        train = make_split("train", d.train_size, d.seed)
    benchmarks = {}
    for name in d.benchmarks:
        if name in d.eval_files:
            benchmarks[name] = load_problems(d.eval_files[name], benchmark=name)
        elif name in BENCHMARKS:
            benchmarks[name] = load_benchmark(name, size=d.eval_size, seed=d.seed)
        else:
            raise ValueError(f"data.benchmarks: unknown benchmark {name!r}; expected {list(BENCHMARKS)} or a key of data.eval_files")
    return train, benchmarks


def load_selection(cfg: TrialConfig) -> dict[str, list[Problem]]:
    """The selection split per benchmark (validated by trainers/config.py: files or generated ones)."""
    d = cfg.data
    selection = {}
    for name in d.benchmarks:
        if name in d.select_files:
            selection[name] = load_problems(d.select_files[name], benchmark=name)
        elif d.select_size:
            selection[name] = make_split(name, d.eval_size + d.select_size, d.seed)[d.eval_size:]
    return selection
