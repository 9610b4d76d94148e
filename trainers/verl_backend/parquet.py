"""The verl backend's RL parquet writer: Problems (any loaded schema, or the synthetic task) -> the
parquet files verl's RLHFDataset reads. The reading side (load_problems, is_verl_parquet: a data-file
format users bring) is evaluators.loaders.

    path = write_verl_parquet(problems, "out/val_math500.parquet")      # verl's RLHFDataset format
    path = as_rl_parquet("my_eval.json", out_dir, data_source="mine")   # any schema -> verl parquet
    train, vals = rl_parquet(out_dir, train_problems, {"easy": easy})   # train.parquet + val_<bench>.parquet

Tested (with the reading side) by `.venv/bin/python -m pytest tests/evaluators/test_eval_loaders.py -q`.

verl RL parquet rows (``write_verl_parquet``; the format verl trials use)
    data_source   benchmark name (verl groups validation metrics by it: val-core/<data_source>/acc/mean@N)
    prompt        Problem.messages as [{"role", "content"}, ...], else [{"role": "user", "content":
                  prompt (+ " " + instruction)}]
    ability       "arithmetic" for generated problems (Problem.difficulty set), else "math"
    reward_model  {"style": "rule", "ground_truth": answer}
    extra_info    {"index": i, "split": split} plus "id" when any problem has one (rows without an
                  id get "<data_source>-<i>"); the synthetic splits have none, so their rows are
                  exactly what they were before ids existed.
    Files are written to a temporary file next to the target and moved into place (os.replace).

pandas is imported lazily (this module imports without it until a parquet is written).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluators.loaders import SUFFIXES, is_verl_parquet, load_problems
from evaluators.tasks import Problem

ABILITY = "arithmetic"
"""verl ``ability`` of generated (synthetic-task) problems; loaded problems get "math"."""


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "data"


def _write_parquet_atomic(rows: list[dict], path: Path) -> Path:
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pd.DataFrame(rows).to_parquet(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def problem_rows(problems: Sequence[Problem], data_source: str | None = None, split: str = "test",
                 instruction: str | None = None) -> list[dict]:
    """verl RL rows (module docstring) for ``problems``; data_source default: each problem's benchmark."""
    if not problems:
        raise ValueError(f"no problems for data_source {data_source!r}")
    with_ids = any(p.id for p in problems)
    rows = []
    for i, p in enumerate(problems):
        source = data_source or p.benchmark or "data"
        if p.messages:
            prompt = [{"role": r, "content": c} for r, c in p.messages]
        else:
            prompt = [{"role": "user", "content": f"{p.prompt} {instruction}" if instruction else p.prompt}]
        extra: dict[str, Any] = {"index": i, "split": split}
        if with_ids:
            extra["id"] = p.id or f"{source}-{i}"
        rows.append({
            "data_source": source,
            "prompt": prompt,
            "ability": ABILITY if p.difficulty else "math",
            "reward_model": {"style": "rule", "ground_truth": str(p.answer)},
            "extra_info": extra,
        })
    return rows


def write_verl_parquet(problems: Sequence[Problem], path: str | Path, data_source: str | None = None,
                       split: str = "test", instruction: str | None = None) -> Path:
    """Write ``problems`` as a verl RL parquet file at ``path`` (atomically); returns ``path``.
    ``instruction`` is appended (after a space) to prompts without chat messages."""
    return _write_parquet_atomic(problem_rows(problems, data_source, split, instruction), Path(path))


def problems_to_parquet(problems: Sequence[Problem], path: Path, data_source: str, split: str) -> Path:
    """``write_verl_parquet`` with every row's data_source set (the verl backend's call)."""
    return write_verl_parquet(problems, path, data_source, split)


def rl_parquet(out_dir: Path, train_problems: Sequence[Problem],
               eval_sets: Mapping[str, Sequence[Problem]]) -> tuple[Path, dict[str, Path]]:
    """``train.parquet`` (data_source "train") and one ``val_<bench>.parquet`` per eval set
    (data_source = its benchmark name) under ``out_dir``; returns (train_file, {bench: val_file})."""
    out_dir = Path(out_dir).resolve()
    train_file = problems_to_parquet(train_problems, out_dir / "train.parquet", "train", "train")
    val_files, stems = {}, set()
    for bench, problems in eval_sets.items():
        stem = _file_stem(bench)
        if stem in stems:
            raise ValueError(f"eval set names {list(eval_sets)} map to the same file name {stem!r}")
        stems.add(stem)
        val_files[bench] = problems_to_parquet(problems, out_dir / f"val_{stem}.parquet", bench, "test")
    return train_file, val_files


def jsonl_to_parquet(jsonl_path: Path, out_path: Path, data_source: str | None = None, split: str = "test") -> Path:
    """Convert a user data file in any plain schema (evaluators.loaders) to verl RL parquet;
    data_source defaults to the file stem."""
    jsonl_path = Path(jsonl_path)
    return problems_to_parquet(load_problems(jsonl_path), out_path, data_source or jsonl_path.stem, split)


def as_rl_parquet(path: Path, out_dir: Path, data_source: str | None = None, split: str = "test") -> Path:
    """A verl-readable parquet for a user data file: a verl RL ``.parquet`` as it is; a
    ``.jsonl`` / ``.json`` / plain-column ``.parquet`` converted into ``out_dir`` (named
    ``<split>_<data_source or file stem>.parquet``, rows with data_source = that name)."""
    path = Path(path).resolve()
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"data file {path}: expected a .parquet (verl parquet used as is, plain columns "
                         f"converted) or a .jsonl / .json (converted), got {suffix!r}")
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    if suffix == ".parquet" and is_verl_parquet(path):
        return path
    name = data_source or path.stem
    out = Path(out_dir) / f"{split}_{_file_stem(name)}.parquet"
    if out.resolve() == path:
        raise ValueError(f"data file {path}: converting it would overwrite it; pass another out_dir")
    return jsonl_to_parquet(path, out, name, split)
