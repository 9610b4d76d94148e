"""evaluators.loaders (every accepted schema, ids / messages / benchmark names, errors) and
trainers.verl_backend.parquet (the verl backend's parquet writer, round-tripped through the loaders).

    .venv/bin/python -m pytest tests/evaluators/test_eval_loaders.py -q
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from evaluators.loaders import SCHEMAS, is_verl_parquet, last_boxed, load_problems
from evaluators.tasks import Problem, make_split
from trainers.verl_backend.parquet import as_rl_parquet, write_verl_parquet

FIXTURES = Path(__file__).parent / "fixtures"


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---------------------------------------------------------------- plain schemas

def test_plain_problem_answer_jsonl(tmp_path):
    path = _jsonl(tmp_path / "mine.jsonl", [{"problem": "What is 2+2?", "answer": 4},
                                            {"problem": "Name x.", "ground_truth": " x ", "id": "q-7"},
                                            {"question": "Half of 1?", "final_answer": "1/2", "unique_id": 3}])
    ps = load_problems(path)
    assert [(p.prompt, p.answer) for p in ps] == [("What is 2+2?", "4"), ("Name x.", "x"), ("Half of 1?", "1/2")]
    assert [p.id for p in ps] == ["mine-0", "q-7", "3"]
    assert {p.benchmark for p in ps} == {"mine"} and all(p.messages == () for p in ps)
    assert {p.benchmark for p in load_problems(path, benchmark="bench")} == {"bench"}
    assert [p.id for p in load_problems(path, benchmark="bench")][0] == "bench-0"


def test_math_solution_last_nested_boxed():
    ps = load_problems(FIXTURES / "math_solution.jsonl")
    assert [p.answer for p in ps] == ["\\frac{3}{4}", "2", "\\{1\\} \\cup \\{2\\}"]
    assert ps[0].solution.endswith("\\boxed{\\frac{3}{4}}$.")  # the worked solution is kept
    assert [p.id for p in ps] == ["math_solution-0", "math_solution-1", "7"]  # idx field


def test_math500_answer_field_wins_and_unique_id():
    ps = load_problems(FIXTURES / "math500.jsonl", benchmark="math500")
    assert [p.answer for p in ps] == ["10", "2\\sqrt{2}"]
    assert [p.id for p in ps] == ["test/counting_and_probability/1.json", "test/algebra/2.json"]


def test_gsm8k_hashes_and_commas():
    ps = load_problems(FIXTURES / "gsm8k.jsonl")
    assert [p.answer for p in ps] == ["7", "1234"]
    assert ps[1].solution == "1200 + 34 = <<1200+34=1234>>1234"
    assert "####" not in ps[0].solution and ps[0].prompt.startswith("Tom has 3 apples")


def test_json_list_with_list_answers():
    ps = load_problems(FIXTURES / "olympiad.json")
    assert [(p.id, p.answer) for p in ps] == [("1606", "8"), ("1607", "3, -3")]
    assert ps[0].solution.startswith("Since $7^2 = 49$")


def test_json_file_holding_json_lines(tmp_path):
    path = tmp_path / "lines.json"
    path.write_text('{"question": "1+1?", "answer": "2"}\n{"question": "2+2?", "answer": "4"}\n')
    assert [p.answer for p in load_problems(path)] == ["2", "4"]


def test_plain_column_parquet(tmp_path):
    path = tmp_path / "hf.parquet"
    pd.DataFrame({"problem": ["1+1?", "Half of 3?"], "solution": ["$\\boxed{2}$", "$\\boxed{\\frac{3}{2}}$"],
                  "answer": [None, "3/2"], "unique_id": ["a", "b"]}).to_parquet(path, index=False)
    assert not is_verl_parquet(path)
    ps = load_problems(path)
    assert [(p.prompt, p.answer, p.id, p.benchmark) for p in ps] == [
        ("1+1?", "2", "a", "hf"), ("Half of 3?", "3/2", "b", "hf")]
    ints = tmp_path / "ints.parquet"
    pd.DataFrame({"question": ["a?", "b?"], "answer": [3, 12]}).to_parquet(ints, index=False)
    assert [p.answer for p in load_problems(ints)] == ["3", "12"]  # not '3.0'


def test_synthetic_task_jsonl(tmp_path):
    path = tmp_path / "mini.jsonl"
    path.write_text(json.dumps({"prompt": "Q: 1+1=?", "answer": "2"}) + "\n\n"
                    + json.dumps({"prompt": "Q: 2*3=?", "answer": 6, "solution": "<think></think><answer>6</answer>",
                                  "benchmark": "gsm"}) + "\n")
    ps = load_problems(path)
    assert [dataclasses.replace(p, id="") for p in ps] == [
        Problem("Q: 1+1=?", "2", "", "mini"), Problem("Q: 2*3=?", "6", "<think></think><answer>6</answer>", "gsm")]
    assert [p.id for p in ps] == ["mini-0", "gsm-1"]


def test_empty_file_is_an_error(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        load_problems(path)


def test_last_boxed():
    assert last_boxed("a \\boxed{1} b \\boxed{\\frac{a}{b^{2}}} c") == "\\frac{a}{b^{2}}"
    assert last_boxed("\\fbox{x}") == "x"
    assert last_boxed("so \\boxed 5.") == "5."
    assert last_boxed("\\boxed{\\left\\{ 1 \\right\\}}") == "\\left\\{ 1 \\right\\}"
    assert last_boxed("\\boxed{3} then \\boxed{unclosed") == "3"
    assert last_boxed("no box") is None


# ---------------------------------------------------------------- verl parquet

def test_verl_round_trip_of_loaded_problems(tmp_path):
    ps = load_problems(FIXTURES / "math500.jsonl", benchmark="math500") + load_problems(FIXTURES / "gsm8k.jsonl")
    out = write_verl_parquet(ps, tmp_path / "sub" / "all.parquet")
    assert out == tmp_path / "sub" / "all.parquet" and is_verl_parquet(out)
    assert not [f for f in out.parent.iterdir() if f.name.startswith(".")]  # no temp file left
    back = load_problems(out)
    assert [(p.prompt, p.answer, p.id, p.benchmark) for p in back] == [(p.prompt, p.answer, p.id, p.benchmark) for p in ps]
    assert back[0].messages == (("user", ps[0].prompt),)
    df = pd.read_parquet(out)
    assert list(df.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert set(df["ability"]) == {"math"}
    assert df.iloc[3]["extra_info"] == {"index": 3, "split": "test", "id": "gsm8k-1"}
    assert df.iloc[3]["reward_model"] == {"style": "rule", "ground_truth": "1234"}
    # a second write of what was read back gives the same rows (messages are used as they are)
    again = load_problems(write_verl_parquet(back, tmp_path / "again.parquet"))
    assert again == back


def test_write_verl_parquet_data_source_and_instruction(tmp_path):
    ps = load_problems(FIXTURES / "gsm8k.jsonl")
    out = write_verl_parquet(ps, tmp_path / "g.parquet", data_source="gsm8k_test", split="val",
                             instruction="Put the final answer in \\boxed{}.")
    df = pd.read_parquet(out)
    assert set(df["data_source"]) == {"gsm8k_test"}
    assert list(df.iloc[0]["prompt"]) == [{"role": "user", "content": ps[0].prompt + " Put the final answer in \\boxed{}."}]
    assert {e["split"] for e in df["extra_info"]} == {"val"}
    back = load_problems(out)
    assert {p.benchmark for p in back} == {"gsm8k_test"} and back[1].id == "gsm8k-1"


def test_synthetic_rows_keep_their_format(tmp_path):
    """The rows verl trials get for the generated splits: no id in extra_info, ability 'arithmetic'."""
    ps = make_split("easy", 5, seed=0)
    df = pd.read_parquet(write_verl_parquet(ps, tmp_path / "easy.parquet", "easy", "test"))
    assert set(df["ability"]) == {"arithmetic"}
    assert df.iloc[1]["extra_info"] == {"index": 1, "split": "test"}
    back = load_problems(tmp_path / "easy.parquet")
    assert [(p.prompt, p.answer) for p in back] == [(p.prompt, p.answer) for p in ps]
    assert [p.id for p in back] == [f"easy-{i}" for i in range(5)]  # from extra_info.index


def test_hand_written_verl_parquet(tmp_path):
    """verl's own layout (as its examples/data_preprocess scripts write it), with a system message."""
    path = tmp_path / "dapo.parquet"
    pd.DataFrame([
        {"data_source": "math_dapo", "prompt": [{"role": "system", "content": "Think."},
                                                {"role": "user", "content": "What is 6*7?"}],
         "ability": "MATH", "reward_model": {"style": "rule", "ground_truth": "42"},
         "extra_info": {"index": 10, "split": "train"}},
        {"data_source": "math_dapo", "prompt": [{"role": "user", "content": "What is 1+1?"}],
         "ability": "MATH", "reward_model": {"style": "rule", "ground_truth": "2"},
         "extra_info": {"index": 11, "split": "train"}},
    ]).to_parquet(path, index=False)
    assert is_verl_parquet(path)
    ps = load_problems(path)
    assert [(p.prompt, p.answer, p.benchmark, p.id) for p in ps] == [
        ("What is 6*7?", "42", "math_dapo", "math_dapo-10"), ("What is 1+1?", "2", "math_dapo", "math_dapo-11")]
    assert ps[0].messages == (("system", "Think."), ("user", "What is 6*7?"))
    assert load_problems(path, benchmark="dapo")[0].benchmark == "dapo"
    rewritten = pd.read_parquet(write_verl_parquet(ps, tmp_path / "re.parquet"))
    assert list(rewritten.iloc[0]["prompt"]) == [{"role": "system", "content": "Think."},
                                                 {"role": "user", "content": "What is 6*7?"}]
    assert as_rl_parquet(path, tmp_path / "conv") == path.resolve()  # verl parquet: used as is


def test_as_rl_parquet_converts_every_plain_schema(tmp_path):
    plain = tmp_path / "plain.parquet"
    pd.DataFrame({"question": ["a?"], "answer": ["1"]}).to_parquet(plain, index=False)
    for src in (FIXTURES / "gsm8k.jsonl", FIXTURES / "olympiad.json", plain):
        out = as_rl_parquet(src, tmp_path / "conv", data_source="bench", split="test")
        assert out == tmp_path / "conv" / "test_bench.parquet" and is_verl_parquet(out)
        df = pd.read_parquet(out)
        assert set(df["data_source"]) == {"bench"}
        assert [r["ground_truth"] for r in df["reward_model"]] == [p.answer for p in load_problems(src)]


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("line,msg", [
    ('{"prompt": "Q: 1+1=?"', "invalid JSON"),
    ('["Q", "2"]', "JSON object"),
    ('{"prompt": "Q: 1+1=?"}', "missing required field 'answer'"),
    ('{"answer": "2"}', "missing required field 'prompt'"),
    ('{"prompt": 3, "answer": "2"}', "'prompt' must be"),
    ('{"prompt": "Q", "answer": null}', "'answer' must be"),
    ('{"prompt": "Q", "answer": "2", "solution": 5}', "'solution' must be"),
    ('{"problem": "Q", "solution": "no box here"}', "no \\\\boxed"),
    ('{"question": "Q", "answer": {"x": 1}}', "'answer' must be"),
])
def test_errors_name_file_line_and_field(tmp_path, line, msg):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "ok", "answer": "1"}\n' + line + "\n")
    with pytest.raises(ValueError, match=msg) as exc:
        load_problems(path)
    assert f"{path}:2:" in str(exc.value)


def test_missing_field_error_lists_schemas(tmp_path):
    path = _jsonl(tmp_path / "q.jsonl", [{"question": "Q"}])
    with pytest.raises(ValueError) as exc:
        load_problems(path)
    text = str(exc.value)
    assert f"{path}:1:" in text and "missing required field 'answer'" in text
    assert all(s in text for s in SCHEMAS)


def test_parquet_and_json_errors_name_the_row(tmp_path):
    pq = tmp_path / "bad.parquet"
    pd.DataFrame({"question": ["a?", "b?"], "answer": ["1", None]}).to_parquet(pq, index=False)
    with pytest.raises(ValueError, match=r"bad\.parquet: row 2: missing required field 'answer'"):
        load_problems(pq)
    verl = tmp_path / "verl.parquet"
    pd.DataFrame([{"data_source": "d", "prompt": [{"role": "user", "content": "x"}],
                   "reward_model": {"style": "rule", "ground_truth": "1"}},
                  {"data_source": "d", "prompt": [{"role": "user", "content": "y"}],
                   "reward_model": {"style": "rule", "ground_truth": None}}]).to_parquet(verl, index=False)
    with pytest.raises(ValueError, match=r"verl\.parquet: row 2: missing required field 'reward_model.ground_truth'"):
        load_problems(verl)
    js = tmp_path / "list.json"
    js.write_text(json.dumps([{"question": "a", "answer": "1"}, {"answer": "2"}]))
    with pytest.raises(ValueError, match=r"list\.json: row 2: missing required field 'prompt'"):
        load_problems(js)
    obj = tmp_path / "obj.json"
    obj.write_text(json.dumps({"question": "a", "answer": "1"}))
    with pytest.raises(ValueError, match="expected a JSON list"):
        load_problems(obj)


@pytest.mark.parametrize("name,content", [("empty.jsonl", "\n\n"), ("empty.json", "[]"), ("blank.json", "")])
def test_empty_files(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ValueError, match="no problems \\(file is empty\\)"):
        load_problems(path)


def test_empty_parquet_missing_file_and_bad_suffix(tmp_path):
    path = tmp_path / "empty.parquet"
    pd.DataFrame({"question": pd.Series([], dtype=str), "answer": pd.Series([], dtype=str)}).to_parquet(path)
    with pytest.raises(ValueError, match="empty"):
        load_problems(path)
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        load_problems(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="unsupported file type '.csv'"):
        load_problems(tmp_path / "data.csv")
    with pytest.raises(ValueError, match="no problems"):
        write_verl_parquet([], tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="expected a .parquet"):
        as_rl_parquet(tmp_path / "data.csv", tmp_path)


def test_problem_defaults_keep_positional_construction():
    p = Problem("Q", "1", "", "b")
    assert p.id == "" and p.messages == () and p.difficulty == ""
