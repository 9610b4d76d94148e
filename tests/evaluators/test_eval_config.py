"""Tests for evaluators.eval_config: the evaluation protocol's defaults, validation and hash."""

import pytest

from evaluators.eval_config import MATH_INSTRUCTION, PAPER_BENCHMARKS, EvalConfig, EvalConfigError


def test_defaults_are_dhpos_protocol():
    cfg = EvalConfig()
    assert cfg.benchmarks == ["aime24", "aime25", "amc23", "olympiadbench", "math500", "minerva", "gsm8k"]
    assert (cfg.temperature, cfg.top_p, cfg.max_new_tokens, cfg.greedy) == (1.0, 1.0, 16384, False)
    assert cfg.samples_for(32) == 32 and cfg.samples_for(4) == 4  # each benchmark's own k


def test_samples_override_and_greedy():
    assert EvalConfig(samples=8).samples_for(32) == 8
    assert EvalConfig(samples=8, greedy=True).samples_for(32) == 1  # greedy: one sample (SSPO)


def test_instruction_only_for_paper_benchmarks_unless_set():
    cfg = EvalConfig()
    assert cfg.instruction_for("aime24") == MATH_INSTRUCTION
    assert cfg.instruction_for("easy") == ""  # the synthetic task has its own prompt format
    assert EvalConfig(instruction="").instruction_for("aime24") == ""
    assert EvalConfig(instruction="Box it.").instruction_for("my_set") == "Box it."


@pytest.mark.parametrize("data, key, expected", [
    ({"samples": 0}, "samples", "integer >= 1"),
    ({"samples": True}, "samples", "integer >= 1"),
    ({"temperature": 0}, "temperature", "> 0"),
    ({"top_p": 1.5}, "top_p", "(0, 1]"),
    ({"backend": "sglang"}, "backend", "'hf', 'vllm'"),
    ({"prompt_format": "plain"}, "prompt_format", "'auto', 'chat', 'raw'"),
    ({"benchmarks": []}, "benchmarks", "non-empty"),
    ({"benchmarks": ["gsm8k", "gsm8k"]}, "benchmarks", "each benchmark once"),
    ({"files": {"aime24": 3}}, "files", "benchmark name -> file path"),
    ({"max_new_tokens": 0}, "max_new_tokens", "integer >= 1"),
    ({"limit": -1}, "limit", "integer >= 1 or null"),
    ({"device": "tpu"}, "device", "'auto', 'cpu' or 'cuda'"),
])
def test_bad_values_name_the_key_and_what_was_expected(data, key, expected):
    with pytest.raises(EvalConfigError) as err:
        EvalConfig.from_dict(data, where="spec.yaml: eval")
    assert f"spec.yaml: eval.{key}: expected" in str(err.value) and expected in str(err.value)


def test_unknown_key_suggests_the_near_one():
    with pytest.raises(EvalConfigError, match=r"eval\.sample: unknown key.*samples"):
        EvalConfig.from_dict({"sample": 4})


def test_comma_separated_benchmarks_are_a_list():
    assert EvalConfig.from_dict({"benchmarks": "aime24, math500"}).benchmarks == ["aime24", "math500"]


def test_protocol_hash_changes_with_what_changes_results_only():
    base = EvalConfig()
    assert base.protocol_hash() == EvalConfig().protocol_hash()
    for changed in (EvalConfig(samples=4), EvalConfig(greedy=True), EvalConfig(temperature=0.6),
                    EvalConfig(max_new_tokens=4096), EvalConfig(seed=1), EvalConfig(limit=10),
                    EvalConfig(prompt_format="raw"), EvalConfig(backend="vllm")):
        assert changed.protocol_hash() != base.protocol_hash()
    # which benchmarks run, where files are found and the batch size do not change a benchmark's results
    for same in (EvalConfig(benchmarks=["gsm8k"]), EvalConfig(data_dir="elsewhere"), EvalConfig(batch_size=8),
                 EvalConfig(files={"gsm8k": "x.jsonl"})):
        assert same.protocol_hash() == base.protocol_hash()


def test_paper_benchmarks_match_the_registry():
    from evaluators.benchmarks import BENCHMARKS

    assert all(name in BENCHMARKS for name in PAPER_BENCHMARKS)
