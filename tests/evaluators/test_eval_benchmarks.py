"""evaluators.benchmarks: the registry, file lookup, synthetic splits, errors.

    .venv/bin/python -m pytest tests/evaluators/test_eval_benchmarks.py -q
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from evaluators import tasks
from evaluators.benchmarks import (
    BENCHMARKS, DEFAULT_DATA_DIR, PAPER_BENCHMARKS, BenchmarkNotFoundError, BenchmarkSizeWarning, BenchmarkSpec,
    candidate_paths, load_benchmark,
)
from evaluators.loaders import SCHEMAS
from trainers.verl_backend.parquet import write_verl_parquet

FIXTURES = Path(__file__).parent / "fixtures"


def test_paper_benchmarks_in_table_order_with_dhpo_samples():
    assert PAPER_BENCHMARKS == ("aime24", "aime25", "amc23", "olympiadbench", "math500", "minerva", "gsm8k")
    assert [BENCHMARKS[n].samples for n in PAPER_BENCHMARKS] == [32, 32, 4, 1, 1, 1, 1]
    assert [BENCHMARKS[n].size for n in PAPER_BENCHMARKS] == [30, 30, 40, 675, 500, 272, 1319]
    assert set(BENCHMARKS) == set(PAPER_BENCHMARKS) | {"easy", "medium", "hard"}
    for name, spec in BENCHMARKS.items():
        assert isinstance(spec, BenchmarkSpec) and spec.name == name and spec.title and spec.source
        assert spec.answer_type in ("integer", "number", "expression")
        assert spec.synthetic == (name in tasks.BENCHMARKS)
        assert bool(spec.stems) == (not spec.synthetic) and (not spec.stems or spec.stems[0] == name)
    assert BENCHMARKS["aime24"].title == "AIME 2024" and BENCHMARKS["aime25"].answer_type == "integer"
    assert DEFAULT_DATA_DIR == Path("data/benchmarks")


@pytest.mark.parametrize("name", ["easy", "medium", "hard"])
def test_synthetic_equal_make_split(name):
    spec = BENCHMARKS[name]
    assert spec.samples == 4 and spec.answer_type == "integer"
    assert load_benchmark(name, size=20, seed=3) == tasks.make_split(name, 20, 3)
    assert load_benchmark(name) == tasks.make_split(name, 64, 1234)


def test_files_mapping_wins_for_any_name(tmp_path):
    ps = load_benchmark("easy", files={"easy": str(FIXTURES / "gsm8k.jsonl")})
    assert [p.answer for p in ps] == ["7", "1234"] and {p.benchmark for p in ps} == {"easy"}
    mine = load_benchmark("my_set", files={"my_set": str(FIXTURES / "olympiad.json")}, data_dir=tmp_path)
    assert {p.benchmark for p in mine} == {"my_set"} and mine[0].id == "1606"


def test_lookup_by_stem_and_layout_with_size_warning(tmp_path):
    shutil.copy(FIXTURES / "math500.jsonl", tmp_path / "MATH-500.jsonl")  # a later stem of the spec
    with pytest.warns(BenchmarkSizeWarning, match="500"):
        ps = load_benchmark("math500", data_dir=tmp_path)
    assert [p.answer for p in ps] == ["10", "2\\sqrt{2}"] and {p.benchmark for p in ps} == {"math500"}
    (tmp_path / "gsm8k").mkdir()
    shutil.copy(FIXTURES / "gsm8k.jsonl", tmp_path / "gsm8k" / "test.jsonl")  # Qwen2.5-Math eval layout
    with pytest.warns(BenchmarkSizeWarning):
        assert [p.answer for p in load_benchmark("gsm8k", data_dir=tmp_path)] == ["7", "1234"]
    # a parquet under the first stem is found before the jsonl of a later stem
    write_verl_parquet(ps[:1], tmp_path / "math500.parquet")
    with pytest.warns(BenchmarkSizeWarning):
        assert len(load_benchmark("math500", data_dir=tmp_path)) == 1


def test_expected_size_no_warning(tmp_path):
    rows = [{"problem": f"p{i}", "answer": str(i)} for i in range(30)]
    (tmp_path / "aime_2024.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ps = load_benchmark("aime24", data_dir=tmp_path)
    assert len(ps) == 30 and ps[29].id == "aime24-29"


def test_plain_parquet_in_data_dir(tmp_path):
    pd.DataFrame({"problem": ["a?"], "solution": ["\\boxed{4}"]}).to_parquet(tmp_path / "minerva_math.parquet")
    with pytest.warns(BenchmarkSizeWarning):
        assert [p.answer for p in load_benchmark("minerva", data_dir=tmp_path)] == ["4"]


def test_missing_registry_file_names_benchmark_paths_and_schema(tmp_path):
    with pytest.raises(BenchmarkNotFoundError) as exc:
        load_benchmark("aime25", data_dir=tmp_path)
    assert isinstance(exc.value, FileNotFoundError)
    text = str(exc.value)
    assert "'aime25'" in text and "AIME 2025" in text
    for path in candidate_paths("aime25", tmp_path):
        assert str(path) in text
    assert str(tmp_path / "aime_2025.jsonl") in text and str(tmp_path / "aime25" / "test.parquet") in text
    assert all(s in text for s in SCHEMAS)


def test_unknown_benchmark():
    with pytest.raises(ValueError, match="unknown benchmark 'aime26'") as exc:
        load_benchmark("aime26")
    assert all(name in str(exc.value) for name in BENCHMARKS)
    with pytest.raises(ValueError, match="unknown benchmark"):
        load_benchmark("aime26", files={"other": "x.jsonl"})
