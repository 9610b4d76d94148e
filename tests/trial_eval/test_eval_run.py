"""Tests for trial_eval.eval_run: one checkpoint on a protocol's benchmarks, resumable per benchmark,
with the real HF backend on a tiny Hugging Face model directory (random weights: the numbers only
have to be consistent with the per-problem files, not good)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.benchmarks import BenchmarkNotFoundError
from evaluators.eval_config import EvalConfig
from trial_eval.eval_run import EvalTarget, evaluate_checkpoint

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model_dir():
    from trainers.verl_backend.assets import tiny_qwen3

    return tiny_qwen3(REPO / ".cache" / "test_eval_models", warm_start_steps=0, log=lambda s: None)


def protocol(tmp_path: Path, **kw) -> EvalConfig:
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps({"question": f"Q: {i}+1=?", "answer": str(i + 1)}) + "\n"
                                               for i in range(3)))
    return EvalConfig.from_dict({"benchmarks": ["easy", "qa"], "files": {"qa": str(tmp_path / "qa.jsonl")},
                                 "samples": 2, "max_new_tokens": 8, "size": 3, **kw})


def test_results_files_metrics_and_resume_per_benchmark(model_dir, tmp_path):
    cfg = protocol(tmp_path)
    target = EvalTarget("tiny", model_dir, 7, tmp_path / "eval")
    lines: list[str] = []
    metrics, files = evaluate_checkpoint(target, cfg, log=lines.append)
    out = tmp_path / "eval" / cfg.protocol_hash()
    assert [f.name for f in files] == ["easy.jsonl", "qa.jsonl", "protocol.json", "verdicts.json"] \
        and all(f.parent == out for f in files)
    records = [json.loads(x) for x in (out / "qa.jsonl").read_text().splitlines()]
    assert [r["answer"] for r in records] == ["1", "2", "3"] and all(len(r["samples"]) == 2 for r in records)
    assert all(n <= 8 for r in records for n in r["num_tokens"])
    assert metrics["eval/qa/avg_at_k"] == sum(sum(r["correct"]) for r in records) / 6
    assert metrics["eval/qa/k"] == 2 and metrics["eval/avg/avg_at_k"] == pytest.approx(
        (metrics["eval/easy/avg_at_k"] + metrics["eval/qa/avg_at_k"]) / 2)
    assert sum("problems x 2 samples" in x for x in lines) == 2

    # An interrupted benchmark (no metrics file) is evaluated again; a finished one is not touched.
    (out / "qa.json").unlink()
    stamp = (out / "easy.jsonl").stat().st_mtime_ns
    lines.clear()
    again, _ = evaluate_checkpoint(target, cfg, log=lines.append)
    assert [x for x in lines if "problems x" in x] == ["tiny: qa: 3 problems x 2 samples"]
    assert (out / "easy.jsonl").stat().st_mtime_ns == stamp
    assert again == metrics  # same seed, same samples: the same numbers

    # Nothing left to do: the model is not even loaded (a bogus checkpoint path is fine).
    lines.clear()
    done, _ = evaluate_checkpoint(EvalTarget("tiny", tmp_path / "nowhere", 7, tmp_path / "eval"), cfg, log=lines.append)
    assert done == metrics and not lines

    # Another protocol (greedy) is another result directory.
    greedy = protocol(tmp_path, greedy=True)
    g, g_files = evaluate_checkpoint(target, greedy, log=lambda s: None)
    assert g_files[0].parent.name == greedy.protocol_hash() != cfg.protocol_hash() and g["eval/qa/k"] == 1


def test_missing_benchmark_fails_before_the_model_is_loaded(tmp_path):
    cfg = EvalConfig.from_dict({"benchmarks": ["easy", "aime25"], "data_dir": str(tmp_path)})
    with pytest.raises(BenchmarkNotFoundError) as err:
        evaluate_checkpoint(EvalTarget("x", tmp_path / "no_model", 0, tmp_path / "eval"), cfg)
    assert "aime25" in str(err.value) and str(tmp_path / "aime25.parquet") in str(err.value)
    assert not (tmp_path / "eval").exists()
