"""Local verl assets (tiny Qwen3 + tokenizer; RL parquet, now built by trainers.verl_backend.parquet) and the verl reward function.

    .venv/bin/python -m pytest tests/trainers/verl_backend/test_assets.py -q
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from evaluators.rewards import RewardConfig, compute_reward
from evaluators.tasks import VOCAB_CHARS, make_split
from trainers.verl_backend.parquet import as_rl_parquet, jsonl_to_parquet, rl_parquet
from trainers.verl_backend import assets
from trainers.verl_backend.assets import IM_END, IM_START, PAD, chat_prompt, tiny_qwen3
from trainers.verl_backend.config import VerlConfig
from trainers.verl_backend.reward import compute_score

REPO = Path(__file__).resolve().parents[3]
BASE_STEPS = VerlConfig().tiny_warm_start_steps
"""The default warm start, built once (~75 s on one core) into the repo's .cache/verl, where
launch.prepare_inputs also finds it for sweeps run from the repo root."""


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("verl_assets")


@pytest.fixture(scope="module")
def model_dir(cache):
    return tiny_qwen3(cache)


@pytest.fixture(scope="module")
def base_dir():
    return tiny_qwen3(REPO / VerlConfig().cache_dir / "models", warm_start_steps=BASE_STEPS, log=lambda _: None)


def greedy_scores(model_dir: Path, split: str, n: int = 50) -> list[dict]:
    """Rewards (evaluators.rewards) of greedy answers of the saved checkpoint to chat-templated prompts."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
    problems = make_split(split, n, seed=0)
    enc = tok([chat_prompt(tok, p.prompt) for p in problems], return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=64, do_sample=False)
    responses = tok.batch_decode(out[:, enc.input_ids.shape[1]:], skip_special_tokens=True)
    return [compute_reward(r, p.answer, RewardConfig()) for r, p in zip(responses, problems)]


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)


# ---------------------------------------------------------------- tokenizer


def test_tokenizer_round_trips_task_text_one_token_per_char(tokenizer):
    for split in ("train", "easy", "medium", "hard"):
        for p in make_split(split, 5, seed=3):
            text = p.prompt + "\n" + p.solution
            ids = tokenizer.encode(text, add_special_tokens=False)
            assert len(ids) == len(text)
            assert tokenizer.decode(ids) == text
    ids = tokenizer.encode(VOCAB_CHARS, add_special_tokens=False)
    assert tokenizer.unk_token_id not in ids


def test_tokenizer_special_tokens(tokenizer):
    assert tokenizer.pad_token == PAD and tokenizer.pad_token_id == 0
    assert tokenizer.eos_token == IM_END
    assert len(tokenizer.encode("\n", add_special_tokens=False)) == 1  # verl's Qwen CT builder needs it
    ids = tokenizer.encode(f"{IM_START}a{IM_END}", add_special_tokens=False)
    assert ids == [tokenizer.convert_tokens_to_ids(IM_START), tokenizer.convert_tokens_to_ids("a"), tokenizer.eos_token_id]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "a"


def test_chat_template_renders_chatml(tokenizer):
    p = make_split("medium", 1, seed=0)[0]
    text = tokenizer.apply_chat_template([{"role": "user", "content": p.prompt}], add_generation_prompt=True, tokenize=False)
    assert text == f"{IM_START}user\n{p.prompt}{IM_END}\n{IM_START}assistant\n"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert ids[0] == tokenizer.convert_tokens_to_ids(IM_START)
    assert tokenizer.decode(ids) == text


def test_verl_accepts_tokenizer_and_dataset(model_dir, tokenizer, tmp_path, monkeypatch):
    """verl's Continuous-Token builder for qwen3 and its RLHFDataset take the tokenizer and our parquet."""
    import datasets
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

    builder = create_continuous_token_builder(tokenizer, hf_model_type="qwen3")
    prompt = make_split("easy", 1, seed=0)[0].prompt
    ids = builder.build_initial_tokens([{"role": "user", "content": prompt}])
    assert tokenizer.decode(ids) == f"{IM_START}user\n{prompt}{IM_END}\n{IM_START}assistant\n"

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf_datasets")  # not ~/.cache
    train, _ = rl_parquet(tmp_path, make_split("train", 6, seed=0), {})
    config = OmegaConf.create({"cache_dir": str(tmp_path / "verl_cache"), "max_prompt_length": 64, "prompt_key": "prompt", "filter_overlong_prompts": True,
                               "return_raw_chat": True, "truncation": "error"})
    dataset = RLHFDataset(data_files=[str(train)], tokenizer=tokenizer, config=config, processor=None)
    assert len(dataset) == 6


# ---------------------------------------------------------------- model


def test_model_loads_with_auto_classes(model_dir, tokenizer):
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_dir)
    assert config.model_type == "qwen3" and config.architectures == ["Qwen3ForCausalLM"]
    assert config.vocab_size == len(tokenizer) and config.eos_token_id == tokenizer.eos_token_id
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    n_params = sum(p.numel() for p in model.parameters())
    assert 50_000 < n_params < 200_000
    ids = torch.tensor([tokenizer.encode("Q: 1+2=?", add_special_tokens=False)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], len(tokenizer))
    assert torch.isfinite(logits).all()
    spec = json.loads((model_dir / "zoo_asset.json").read_text())
    assert spec["version"] == assets.ASSET_VERSION and spec["hidden_size"] == 64


def test_reuse_same_path_without_rebuild(cache, model_dir, monkeypatch):
    weights = model_dir / "model.safetensors"
    mtime = weights.stat().st_mtime_ns

    def no_rebuild(*args, **kwargs):
        raise AssertionError("tiny_qwen3 rebuilt an existing checkpoint")

    monkeypatch.setattr(assets, "_build_model_dir", no_rebuild)
    assert tiny_qwen3(cache) == model_dir
    assert weights.stat().st_mtime_ns == mtime
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no temp dirs left behind


def test_other_spec_other_directory(cache, model_dir):
    other = tiny_qwen3(cache, seed=1)
    assert other != model_dir and other.parent == model_dir.parent
    with pytest.raises(ValueError, match="unknown size keys"):
        tiny_qwen3(cache, hidden=3)
    with pytest.raises(ValueError, match="warm_start_steps"):
        tiny_qwen3(cache, warm_start_steps=-1)


# ---------------------------------------------------------------- warm-started base


def test_random_model_solves_nothing(model_dir):
    scores = greedy_scores(model_dir, "easy")
    assert sum(s["answer"] for s in scores) == 0 and sum(s["format"] for s in scores) == 0


@pytest.mark.slow
def test_base_solves_some_but_not_all_easy_problems(base_dir):
    """Through the saved checkpoint and the chat template (what verl feeds): right format, a share of right answers."""
    easy = greedy_scores(base_dir, "easy")
    acc = sum(s["answer"] for s in easy) / len(easy)
    assert 0.04 <= acc <= 0.9, acc
    assert sum(s["format"] for s in easy) / len(easy) >= 0.9
    hard = greedy_scores(base_dir, "hard")
    assert sum(s["answer"] for s in hard) / len(hard) < acc + 0.1  # harder problems: no better


@pytest.mark.slow
def test_base_spec_and_reuse(base_dir, model_dir, monkeypatch):
    spec = json.loads((base_dir / "zoo_asset.json").read_text())
    assert spec["warm_start"]["steps"] == BASE_STEPS and spec["warm_start"]["answer_noise"] == assets.WARM_START["answer_noise"]
    assert json.loads((model_dir / "zoo_asset.json").read_text())["warm_start"] is None
    assert base_dir.name != model_dir.name  # the warm start is part of the hash
    weights = base_dir / "model.safetensors"
    mtime = weights.stat().st_mtime_ns

    def no_rebuild(*args, **kwargs):
        raise AssertionError("tiny_qwen3 rebuilt an existing base")

    monkeypatch.setattr(assets, "_build_model_dir", no_rebuild)
    assert tiny_qwen3(base_dir.parent, warm_start_steps=BASE_STEPS) == base_dir
    assert weights.stat().st_mtime_ns == mtime


def test_verl_config_warm_start_steps_range():
    from trainers.config import ConfigError
    from trainers.verl_backend.config import validate_verl_section

    assert BASE_STEPS > 0
    validate_verl_section(VerlConfig(tiny_warm_start_steps=0))
    with pytest.raises(ConfigError, match="verl.tiny_warm_start_steps"):
        validate_verl_section(VerlConfig(tiny_warm_start_steps=-1))


# ---------------------------------------------------------------- parquet


def test_rl_parquet_columns_and_values(tmp_path):
    train_problems = make_split("train", 8, seed=5)
    evals = {"easy": make_split("easy", 3, seed=5), "hard": make_split("hard", 4, seed=5)}
    train_file, val_files = rl_parquet(tmp_path, train_problems, evals)
    assert set(val_files) == {"easy", "hard"} and all(p.is_file() for p in val_files.values())

    df = pd.read_parquet(train_file)
    assert list(df.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert len(df) == 8 and set(df["data_source"]) == {"train"}
    row = df.iloc[2]
    assert list(row["prompt"]) == [{"role": "user", "content": train_problems[2].prompt}]
    assert row["ability"] == "arithmetic"
    assert row["reward_model"] == {"style": "rule", "ground_truth": train_problems[2].answer}
    assert row["extra_info"] == {"index": 2, "split": "train"}

    hard = pd.read_parquet(val_files["hard"])
    assert len(hard) == 4 and set(hard["data_source"]) == {"hard"}
    assert [r["ground_truth"] for r in hard["reward_model"]] == [p.answer for p in evals["hard"]]
    assert {r["split"] for r in hard["extra_info"]} == {"test"}


def test_jsonl_conversion_and_parquet_as_is(tmp_path):
    jsonl = tmp_path / "my_bench.jsonl"
    jsonl.write_text('{"prompt": "Q: 2+2=?", "answer": 4}\n\n{"prompt": "Q: 3*3=?", "answer": "9", "solution": "x"}\n')
    out = as_rl_parquet(jsonl, tmp_path / "conv", split="test")
    df = pd.read_parquet(out)
    assert list(df["data_source"]) == ["my_bench", "my_bench"]
    assert [r["ground_truth"] for r in df["reward_model"]] == ["4", "9"]
    assert as_rl_parquet(out, tmp_path / "elsewhere") == out.resolve()  # parquet: used as is
    named = jsonl_to_parquet(jsonl, tmp_path / "named.parquet", data_source="custom/bench")
    assert set(pd.read_parquet(named)["data_source"]) == {"custom/bench"}
    with pytest.raises(ValueError, match="expected a .parquet"):
        as_rl_parquet(tmp_path / "data.csv", tmp_path)
    with pytest.raises(FileNotFoundError):
        as_rl_parquet(tmp_path / "missing.parquet", tmp_path)
    assert assets.as_rl_parquet is as_rl_parquet and assets.rl_parquet is rl_parquet  # old imports still work


def test_launch_trial_data_rows_unchanged(tmp_path):
    """trial_data's synthetic train/val parquet rows: the format verl trials have always used."""
    from trainers.config import TrialConfig
    from trainers.verl_backend.launch import trial_data

    cfg = TrialConfig()
    cfg.data.train_size, cfg.data.eval_size, cfg.data.benchmarks = 6, 3, ["easy", "hard"]
    train, vals = trial_data(cfg, tmp_path)
    df = pd.read_parquet(train)
    assert list(df.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert set(df["data_source"]) == {"train"} and set(df["ability"]) == {"arithmetic"}
    assert df.iloc[1]["extra_info"] == {"index": 1, "split": "train"}
    assert [list(p) for p in df["prompt"]] == [[{"role": "user", "content": p.prompt}] for p in make_split("train", 6, 1234)]
    hard = pd.read_parquet(vals[1])
    assert set(hard["data_source"]) == {"hard"}
    assert [r["ground_truth"] for r in hard["reward_model"]] == [p.answer for p in make_split("hard", 3, 1234)]
    # a user eval file of another schema (GSM8K JSONL) is converted, its data source the benchmark name
    cfg.data.eval_files = {"gsm": str(REPO / "tests" / "evaluators" / "fixtures" / "gsm8k.jsonl")}
    cfg.data.benchmarks = ["gsm"]
    _, (gsm,) = trial_data(cfg, tmp_path)
    gdf = pd.read_parquet(gsm)
    assert set(gdf["data_source"]) == {"gsm"} and [r["ground_truth"] for r in gdf["reward_model"]] == ["7", "1234"]


# ---------------------------------------------------------------- reward


def test_reward_correct_and_wrong_answer():
    p = make_split("medium", 1, seed=0)[0]
    right = compute_score(p.benchmark, p.solution, p.answer, {"index": 0})
    assert right["acc"] == 1.0 and right["score"] == 2.0 and right["format"] == 1.0
    assert right["score"] == compute_reward(p.solution, p.answer, RewardConfig())["reward"]
    wrong = compute_score(p.benchmark, p.solution.replace(f"<answer>{p.answer}<", f"<answer>{int(p.answer) + 1}<"),
                          p.answer, None)
    assert wrong["acc"] == 0.0 and wrong["score"] == 1.0  # format still right
    assert compute_score("x", "garbage", p.answer)["score"] == 0.0
    assert compute_score("x", "<think></think><answer>33.0</answer>", 33)["acc"] == 1.0  # number ground truth


def test_reward_kwargs_select_parts():
    resp = "<think>1+1=2</think><answer>2</answer>"
    assert compute_score("x", resp, "2", format=False)["score"] == 1.0
    assert compute_score("x", resp, "2", answer="false")["score"] == 1.0
    assert compute_score("x", resp, "2", answer=0, format=0)["score"] == 0.0
    extra = compute_score("x", resp, "2", reward_router_address=None)  # verl's extra kwargs are ignored
    assert math.isclose(extra["score"], 2.0)
    with pytest.raises(ValueError, match="reward_kwargs.format"):
        compute_score("x", resp, "2", format="maybe")
