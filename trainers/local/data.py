"""Problems for a trial: the synthetic train split and test benchmarks, or user JSONL files.

    train, benchmarks = load_data(cfg)   # list[Problem], {name: list[Problem]}
"""

from __future__ import annotations

from evaluators.tasks import BENCHMARKS, Problem, load_jsonl, make_split
from trainers.config import TrialConfig


def load_data(cfg: TrialConfig) -> tuple[list[Problem], dict[str, list[Problem]]]:
    d = cfg.data
    if d.train_file:
        train = load_jsonl(d.train_file)
        if cfg.local.warm_start.steps and any(not p.solution for p in train):
            raise ValueError(f"data.train_file {d.train_file}: local.warm_start.steps > 0 needs a 'solution' on every row")
    else:
        train = make_split("train", d.train_size, d.seed)
    benchmarks = {}
    for name in d.benchmarks:
        if name in d.eval_files:
            benchmarks[name] = load_jsonl(d.eval_files[name])
        elif name in BENCHMARKS:
            benchmarks[name] = make_split(name, d.eval_size, d.seed)
        else:
            raise ValueError(f"data.benchmarks: unknown benchmark {name!r}; expected {list(BENCHMARKS)} or a key of data.eval_files")
    return train, benchmarks
