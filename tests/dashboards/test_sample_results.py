"""`sweep table` on per-sample results: a long file (CSV, Parquet) and lm-evaluation-harness's sample logs.

The cell means are checked against means computed here by hand (a problem's share of correct samples,
averaged over problems, then over seeds), the paired test's p-values against a strong true difference
(marked after Holm) and an A/A pair (not marked); bad inputs exit 2 naming the file, the column and the
row. The slow test runs the `lm-eval` package itself (its CLI, offline, on tiny policies built here from
this project's tiny Qwen3 and its own warm start) and reads its `--log_samples` output.
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from sweeps.cli import app

pytestmark = pytest.mark.lane("local")  # its slow tests' lane (tests/conftest.py)

BENCHES = ("easy", "hard")


def sweep_table(*args: str):
    return CliRunner().invoke(app, ["table", *map(str, args)])


def samples_frame() -> pd.DataFrame:
    """3 methods x 3 seeds x 2 benchmarks x 60 problems; 3 or 4 samples a problem. `Same` draws from the
    baseline GRPO's own per-problem probabilities (an A/A pair), `Strong` from 30 points above them."""
    rng = np.random.default_rng(7)
    difficulty = {b: rng.uniform(0.1, 0.7, 60) for b in BENCHES}
    rows = []
    for method, lift in (("GRPO", 0.0), ("Same", 0.0), ("Strong", 0.3)):
        for seed in range(3):
            for b in BENCHES:
                for j, p in enumerate(difficulty[b]):
                    for s in range(3 if j % 3 == 0 else 4):
                        rows.append(dict(model="tiny", method=method, seed=seed, benchmark=b, problem=f"{b}-{j}",
                                         sample=s, correct=int(rng.random() < min(p + lift, 1.0))))
    return pd.DataFrame(rows)


def hand_means(df: pd.DataFrame) -> dict:
    """{(method, benchmark or AVG): mean} the slow way: per problem, then per run, then over seeds."""
    runs: dict = {}
    for (method, seed, bench, problem), part in df.groupby(["method", "seed", "benchmark", "problem"]):
        runs.setdefault((method, bench, seed), []).append(sum(part["correct"]) / len(part))
    out: dict = {}
    for (method, bench, seed), shares in runs.items():
        out.setdefault((method, bench), []).append(sum(shares) / len(shares))
    means = {k: sum(v) / len(v) for k, v in out.items()}
    for method in df["method"].unique():
        means[(method, "AVG")] = sum(means[(method, b)] for b in df["benchmark"].unique()) / df["benchmark"].nunique()
    return means


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    df = samples_frame()
    df.to_csv(d / "samples.csv", index=False)
    df.to_parquet(d / "samples.parquet")
    return df, d / "samples.csv", d / "samples.parquet"


def test_long_file_cells_are_hand_means_with_a_paired_test(samples):
    df, csv_path, parquet_path = samples
    r = sweep_table(csv_path, "--baselines", "GRPO", "-f", "csv", "--decimals", "3")
    assert r.exit_code == 0, r.output
    table = pd.read_csv(io.StringIO(r.stdout)).set_index("method")
    means = hand_means(df)
    naive = df.groupby(["method", "benchmark"])["correct"].mean()  # every sample alike: not the table's value
    assert any(abs(naive[(m, b)] - means[(m, b)]) > 1e-3 for m, b in naive.index)
    for (method, col), mean in means.items():
        assert table.loc[method, col] == pytest.approx(round(mean * 100, 3), abs=1e-9), (method, col)
    assert (table["n"] == 3).all()
    for col in (*BENCHES, "AVG"):
        assert math.isnan(table.loc["GRPO", f"{col} p"])  # the baseline is not tested against itself
        assert table.loc["Strong", f"{col} p_holm"] < 0.01 and table.loc["Same", f"{col} p_holm"] > 0.05
        assert table.loc["Same", f"{col} p_holm"] >= table.loc["Same", f"{col} p"]
        assert table.loc["Strong", f"{col} diff"] == pytest.approx(
            (means[("Strong", col)] - means[("GRPO", col)]) * 100, abs=2e-3)
        assert table.loc["Strong", f"{col} ci_low"] < table.loc["Strong", col] < table.loc["Strong", f"{col} ci_high"]
    same = sweep_table(parquet_path, "--baselines", "GRPO", "-f", "csv", "--decimals", "3")
    assert same.exit_code == 0 and same.stdout == r.stdout  # Parquet reads as the CSV does


def test_markdown_marks_the_strong_difference_after_holm(samples):
    _, csv_path, _ = samples
    r = sweep_table(csv_path, "--baselines", "GRPO", "--power", "5")
    assert r.exit_code == 0, r.output
    rows = _rows(r.stdout)
    assert rows["Strong"].count("†") == 3 and "†" not in rows["Same"] and "†" not in rows["GRPO"]
    assert " ± " in rows["Same"]  # per-sample input: 'mean ± ci' cells by default
    assert "Holm's correction" in r.stdout and "detectable with 80% power" in r.stdout
    assert "seeds per method to find a 5-point difference" in r.stdout
    plain = _rows(sweep_table(csv_path, "--baselines", "GRPO", "--cells", "mean").stdout)
    assert " ± " not in "".join(plain.values()) and plain["Strong"].count("†") == 3
    none = sweep_table(csv_path)
    assert none.exit_code == 0 and "†" not in none.stdout and "no --baselines" in none.stderr


def _rows(markdown: str) -> dict[str, str]:
    """A Markdown table's rows by their first cell."""
    return {line.split(" | ")[0].lstrip("| "): line for line in markdown.splitlines() if line.startswith("| ")}


def test_each_row_is_a_sample_without_a_sample_column(samples, tmp_path):
    df, csv_path, _ = samples
    df.drop(columns="sample").to_csv(tmp_path / "s.csv", index=False)
    assert sweep_table(tmp_path / "s.csv", "-f", "csv").stdout == sweep_table(csv_path, "-f", "csv").stdout


def _bad(tmp_path: Path, name: str, edit) -> Path:
    df = samples_frame().head(6).astype({"correct": object, "problem": object})
    edit(df)
    path = tmp_path / name
    df.to_parquet(path) if name.endswith(".parquet") else df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("name, edit, message", [
    ("s.csv", lambda d: d.pop("seed"), "missing column(s) ['seed']"),
    ("s.csv", lambda d: d.__setitem__("correct", [1, 0, "yes", 1, 0, 1]), "column 'correct', row 3 (line 4): 'yes' is not a number"),
    ("s.csv", lambda d: d.__setitem__("correct", [1, 1.5, 0, 1, 0, 1]), "column 'correct', row 2 (line 3): 1.5 is outside [0, 1]"),
    ("s.csv", lambda d: d.__setitem__("correct", [1, None, 0, 1, 0, 1]), "column 'correct', row 2 (line 3): empty"),
    ("s.csv", lambda d: d.__setitem__("problem", ["a", "b", None, "c", "d", "e"]), "column 'problem', row 3 (line 4): empty"),
    ("s.csv", lambda d: d.__setitem__("sample", [0, 0, 0, 1, 2, 3]), "row 1 (line 2) and row 2 (line 3) are the same sample"),
    ("s.parquet", lambda d: d.__setitem__("correct", [1, 0, 0, 1, -1, 1]), "column 'correct', row 5: -1 is outside [0, 1]"),
])
def test_bad_sample_files_exit_2_naming_the_file_column_and_row(tmp_path, name, edit, message):
    path = _bad(tmp_path, name, edit)
    r = sweep_table(path, "--baselines", "GRPO")
    assert r.exit_code == 2 and message in r.stderr and str(path) in r.stderr and r.stdout == "", r.output


def test_different_problem_sets_are_said(tmp_path):
    df = samples_frame()
    df = df[~((df["method"] == "Same") & (df["seed"] == 1) & (df["problem"] == "easy-5"))]  # one seed missed one
    df = df[~((df["method"] == "Strong") & (df["problem"] == "hard-7"))]  # a method missed one
    df.to_csv(tmp_path / "s.csv", index=False)
    r = sweep_table(tmp_path / "s.csv", "--baselines", "GRPO", "-f", "csv")
    assert r.exit_code == 0, r.output
    assert "tiny Same (Same) on easy: its seeds saw different problems (seed 0: 60, seed 1: 59, seed 2: 60)" in r.stderr
    assert "tiny hard: the runs evaluated different problems (59 shared of 60)" in r.stderr
    table = pd.read_csv(io.StringIO(r.stdout)).set_index("method")
    assert math.isnan(table.loc["Same", "easy p"]) and table.loc["Strong", "hard p"] < 0.01


def test_per_seed_files_rough_edges(tmp_path):
    """A non-numeric value, a file whose only value is empty, a header alone, a benchmark with no values."""
    (tmp_path / "text.csv").write_text("model,method,benchmark,value\nm,A,gsm8k,0.5\nm,B,gsm8k,abc\n")
    r = sweep_table(tmp_path / "text.csv")
    assert r.exit_code == 2 and f"{tmp_path / 'text.csv'}: column 'value', row 2 (line 3): 'abc' is not a number" in r.stderr
    (tmp_path / "one.csv").write_text("model,method,benchmark,value\nm,A,gsm8k,\n")
    r = sweep_table(tmp_path / "one.csv")
    assert r.exit_code == 2 and "no values: the column 'value' is empty in every row" in r.stderr, r.output
    assert "Warning" not in r.output and "outside [0, 1]" not in r.output and r.stdout == ""
    (tmp_path / "head.csv").write_text("model,method,benchmark,value\n")
    r = sweep_table(tmp_path / "head.csv")
    assert r.exit_code == 2 and "no rows below the header" in r.stderr
    (tmp_path / "ok.csv").write_text("model,method,benchmark,value\nm,A,gsm8k,0.5\n")
    r = sweep_table(tmp_path / "ok.csv", "--benchmarks", "math")
    assert r.exit_code == 2 and "note: TableConfig.benchmarks: no values for ['math']" in r.stderr
    assert "UserWarning" not in r.output and "no values for benchmark(s) math; the input's: gsm8k" in r.stderr
    r = sweep_table(tmp_path / "ok.csv", "--metric", "acc")
    assert r.exit_code == 2 and "--metric: for lm-eval input only" in r.stderr


@pytest.mark.parametrize("value", ["inf", "-inf", "Infinity", "1e999"])
def test_a_per_seed_value_that_is_no_finite_number_is_an_error_naming_its_row(tmp_path, value):
    """inf (or a number too large for a float) is no value to show: exit 2 naming the file, the column and the row,
    with two rows as with one (no note about the scale, no table of dashes)."""
    for rows in (f"m,A,gsm8k,0.5\nm,B,gsm8k,{value}\n", f"m,B,gsm8k,{value}\n"):
        (tmp_path / "inf.csv").write_text("model,method,benchmark,value\n" + rows)
        r = sweep_table(tmp_path / "inf.csv")
        row = "row 2 (line 3)" if rows.count("\n") == 2 else "row 1 (line 2)"
        assert r.exit_code == 2 and r.stdout == "", r.output
        assert r.stderr.strip().splitlines() == [f"error: {tmp_path / 'inf.csv'}: column 'value', {row}: "
                                                 f"{'-inf' if value.startswith('-') else 'inf'} is not a finite number"]
    pd.DataFrame({"model": ["m"], "method": ["B"], "benchmark": ["gsm8k"], "value": [float(value)]}).to_parquet(
        tmp_path / "inf.parquet")
    r = sweep_table(tmp_path / "inf.parquet")
    assert r.exit_code == 2 and "column 'value', row 1: " in r.stderr and "is not a finite number" in r.stderr


def test_a_per_seed_file_of_one_row_is_a_table_of_one_cell(tmp_path):
    (tmp_path / "one.csv").write_text("model,method,benchmark,value\nm,A,gsm8k,0.5\n")
    r = sweep_table(tmp_path / "one.csv")
    assert r.exit_code == 0, r.output
    assert "| A | **50.0** | **50.0** |" in r.stdout
    assert r.stderr.strip().splitlines() == ["note: every value is in [0, 1]: shown x100 (--scale sets it)"]


# --------------------------------------------------------------------------- lm-eval sample logs

def _lm_eval_line(doc_id: int, value: float, filter_: str = "none", metric: str = "exact_match") -> str:
    """One line as lm-eval 0.4.13 writes it with --log_samples (fields as in its own output)."""
    return json.dumps({"doc_id": doc_id, "doc": {"question": "Q: 1+1=?", "answer": "2"}, "target": "2",
                       "arguments": {"gen_args_0": {"arg_0": "Q: 1+1=? A: ", "arg_1": {"until": ["\n"]}}},
                       "resps": [["2", "3"]], "filtered_resps": ["2"], "filter": filter_, "metrics": [metric],
                       "doc_hash": "0", "prompt_hash": "0", "target_hash": "0", metric: value})


def _write_run(out: Path, values: dict[str, list[float]], stamp: str = "2026-11-28T13-31-35.288594", **kw) -> None:
    folder = out / "__models__tiny"
    folder.mkdir(parents=True, exist_ok=True)
    for task, vals in values.items():
        lines = [_lm_eval_line(i, v, **kw) for i, v in enumerate(vals)]
        (folder / f"samples_{task}_{stamp}.jsonl").write_text("\n".join(lines) + "\n")


def test_lm_eval_logs_by_items_mapping_and_folder(tmp_path):
    runs = {("A", 0): [1, 0, 0, 1], ("A", 1): [1, 1, 0, 0], ("B", 0): [1, 1, 1, 1], ("B", 1): [1, 1, 1, 0]}
    for (m, s), vals in runs.items():
        _write_run(tmp_path / "out" / f"{m}@{s}", {"gsm8k_cot": vals})
    _write_run(tmp_path / "out" / "A@0", {"gsm8k_cot": [0, 0, 0, 0]}, stamp="2026-11-27T09-00-00.000001")  # older
    items = [f"{m}@{s}={tmp_path / 'out' / f'{m}@{s}'}" for m, s in runs]
    r = sweep_table(*items, "-f", "csv", "--baselines", "A")
    assert r.exit_code == 0, r.output
    assert "2 sample files of task 'gsm8k_cot': using the newest, samples_gsm8k_cot_2026-11-28T13-31-35.288594.jsonl" in r.stderr
    table = pd.read_csv(io.StringIO(r.stdout)).set_index("method")
    assert table.loc["A", "gsm8k_cot"] == 50.0 and table.loc["B", "gsm8k_cot"] == 87.5 and "gsm8k_cot p" in table
    (tmp_path / "runs.yaml").write_text("runs:\n" + "".join(
        f"  - {{method: {m}, seed: {s}, path: out/{m}@{s}}}\n" for m, s in runs))
    assert sweep_table(tmp_path / "runs.yaml", "-f", "csv", "--baselines", "A").stdout == r.stdout
    assert sweep_table(tmp_path / "out", "-f", "csv", "--baselines", "A").stdout == r.stdout


def test_lm_eval_errors_name_the_choice(tmp_path):
    _write_run(tmp_path / "two", {"gsm8k": [1, 0]}, filter_="strict-match")
    two = tmp_path / "two" / "__models__tiny" / "samples_gsm8k_2026-11-28T13-31-35.288594.jsonl"
    with two.open("a") as f:
        f.write(_lm_eval_line(0, 1.0, filter_="flexible-extract") + "\n" + _lm_eval_line(1, 1.0, filter_="flexible-extract") + "\n")
    r = sweep_table(f"A={tmp_path / 'two'}")
    assert r.exit_code == 2 and "several lm-eval filters (strict-match, flexible-extract): choose one with --filter" in r.stderr
    r = sweep_table(f"A={tmp_path / 'two'}", "--filter", "flexible-extract", "-f", "csv")
    assert r.exit_code == 0 and pd.read_csv(io.StringIO(r.stdout))["gsm8k"].tolist() == [100.0], r.output
    _write_run(tmp_path / "mc", {"arc": [1, 0]}, metric="acc")
    r = sweep_table(f"A={tmp_path / 'mc'}")
    assert r.exit_code == 2 and "no metric 'exact_match'; this task logs acc (choose one with --metric" in r.stderr
    assert sweep_table(f"A={tmp_path / 'mc'}", "--metric", "acc").exit_code == 0
    _write_run(tmp_path / "bleu", {"wmt": [31.5]}, metric="bleu")
    r = sweep_table(f"A={tmp_path / 'bleu'}", "--metric", "bleu")
    assert r.exit_code == 2 and "bleu = 31.5 is not a per-document score in [0, 1]" in r.stderr
    r = sweep_table(f"A@0={tmp_path / 'mc'}", f"A@0={tmp_path / 'two'}", "--metric", "acc")
    assert r.exit_code == 2 and "the same run given twice" in r.stderr
    r = sweep_table(f"A@0={tmp_path / 'mc'}", f"A@1={tmp_path / 'mc'}", "--metric", "acc")
    assert r.exit_code == 2 and "the same run given twice" in r.stderr
    r = sweep_table(tmp_path / "mc")
    assert r.exit_code == 2 and f"give it as METHOD[@SEED]={tmp_path / 'mc'}" in r.stderr
    r = sweep_table(f"A={tmp_path / 'missing'}")
    assert r.exit_code == 2 and "lm-eval output directory not found" in r.stderr
    (tmp_path / "bad.yaml").write_text("runs:\n  - {method: A, path: mc, sed: 1}\n")
    r = sweep_table(tmp_path / "bad.yaml")
    assert r.exit_code == 2 and "runs[1]: unknown key 'sed' (did you mean 'seed'?)" in r.stderr


# --------------------------------------------------------------------------- lm-eval itself, end to end

TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}} A: "
doc_to_target: "{{{{answer}}}}"
generation_kwargs: {{until: ["\\n"], max_gen_toks: 5, do_sample: true, temperature: 0.5}}
metric_list:
  - {{metric: exact_match, aggregation: mean, higher_is_better: true}}
"""


def _policies(root: Path, steps: dict[str, int], problems) -> dict[str, Path]:
    """This project's tiny Qwen3 (random init, char tokenizer), warm-started for `steps` on the problems
    themselves (the project's supervised warm start), saved with save_pretrained: one per method."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainers.config import TrialConfig
    from trainers.local.config import WarmStartConfig
    from trainers.local.warmstart import warm_start
    from trainers.verl_backend.assets import tiny_qwen3

    base = tiny_qwen3(root / "base", warm_start_steps=0, log=lambda *_: None)
    out, threads = {}, torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small trains several times faster on one thread
    try:
        for method, n in steps.items():
            model, tok = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32), AutoTokenizer.from_pretrained(base)
            cfg = TrialConfig()
            cfg.local.warm_start = WarmStartConfig(steps=n, lr=1e-2, batch_size=len(problems), answer_noise=0.0)
            warm_start(model, tok, problems, cfg, log=lambda *_: None)
            out[method] = root / method
            model.save_pretrained(out[method])
            tok.save_pretrained(out[method])
    finally:
        torch.set_num_threads(threads)
    return out


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_lm_eval_samples_give_the_paired_table(tmp_path):
    """lm-eval 0.4.13's CLI, offline, 2 methods x 2 seeds x 2 tasks, then `sweep table runs.yaml -f csv`."""
    from evaluators.tasks import Problem, make_split

    lm_eval = Path(sys.executable).with_name("lm_eval")
    assert lm_eval.exists(), "lm-eval is not installed: it is in the dev extra (bash scripts/setup.sh)"
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    problems = []
    for bench in ("easy", "medium"):
        drawn = make_split(bench, 10, 0)
        data = tmp_path / f"{bench}.jsonl"
        data.write_text("".join(json.dumps({"question": p.prompt, "answer": p.answer}) + "\n" for p in drawn))
        (tasks / f"arith_{bench}.yaml").write_text(TASK.format(name=f"arith_{bench}", data=json.dumps(str(data))))
        problems += [Problem(prompt=f"{p.prompt} A: ", answer=p.answer, solution=p.answer) for p in drawn[:8]]
    models = _policies(tmp_path / "models", {"GRPO": 20, "DHPO": 30}, problems)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "HF_DATASETS_CACHE": str(tmp_path / "hf" / "datasets"), "HOME": str(tmp_path / "home"),
           "XDG_CACHE_HOME": str(tmp_path / "xdg"), "TMPDIR": str(tmp_path), "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "MPLCONFIGDIR": str(tmp_path / "mpl"),
           "HF_HUB_DISABLE_TELEMETRY": "1", "LMEVAL_LOG_LEVEL": "WARNING"}
    procs = {}
    try:
        for method, model in models.items():
            for seed in (0, 1):
                log = (tmp_path / f"{method}@{seed}.log").open("w")
                procs[(method, seed)] = (subprocess.Popen(
                    [str(lm_eval), "run", "--model", "hf", "--model_args", f"pretrained={model},dtype=float32",
                     "--device", "cpu", "--tasks", "arith_easy,arith_medium", "--include_path", str(tasks),
                     "--limit", "8", "--seed", str(seed), "--batch_size", "8", "--log_samples",
                     "--output_path", str(tmp_path / "out" / f"{method}@{seed}")],
                    cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT), log)
        for (method, seed), (proc, log) in procs.items():
            rc = proc.wait(timeout=300)
            log.close()
            assert rc == 0, (tmp_path / f"{method}@{seed}.log").read_text()[-3000:]
    finally:
        for proc, log in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
    (tmp_path / "runs.yaml").write_text("model: tiny-qwen3\nmetric: exact_match\nruns:\n" + "".join(
        f"  - {{method: {m}, seed: {s}, path: out/{m}@{s}}}\n" for m, s in procs))
    r = sweep_table(tmp_path / "runs.yaml", "-f", "csv", "--baselines", "GRPO", "--decimals", "3")
    assert r.exit_code == 0, r.output
    table = pd.read_csv(io.StringIO(r.stdout)).set_index("method")
    for method in models:
        per_task = {}
        for task in ("arith_easy", "arith_medium"):
            per_seed = []
            for seed in (0, 1):
                (path,) = (tmp_path / "out" / f"{method}@{seed}").rglob(f"samples_{task}_*.jsonl")
                lines = [json.loads(line) for line in path.read_text().splitlines()]
                assert sorted(d["doc_id"] for d in lines) == list(range(8))
                per_seed.append(sum(d["exact_match"] for d in lines) / len(lines))
            per_task[task] = sum(per_seed) / 2
            assert table.loc[method, task] == pytest.approx(round(per_task[task] * 100, 3), abs=1e-9)
        assert table.loc[method, "AVG"] == pytest.approx(round(sum(per_task.values()) / 2 * 100, 3), abs=1e-9)
        assert table.loc[method, "n"] == 2 and table.loc[method, "model"] == "tiny-qwen3"
    for col in ("arith_easy", "arith_medium", "AVG"):
        p, p_holm = table.loc["DHPO", f"{col} p"], table.loc["DHPO", f"{col} p_holm"]
        assert 0 <= p <= p_holm <= 1, (col, p, p_holm)
    folder = sweep_table(tmp_path / "out", "-f", "csv", "--baselines", "GRPO", "--decimals", "3", "--methods", "GRPO,DHPO")
    assert folder.exit_code == 0 and folder.stdout.replace("\n,", "\ntiny-qwen3,") == r.stdout


@pytest.mark.parametrize("name, content, message", [
    ("empty.csv", b"", "empty file; expected a header with the columns model, method, benchmark, value"),
    ("quote.csv", b'model,method\n"a,b\n', "not a readable CSV file (Error tokenizing data"),
    ("empty.parquet", b"", "not a readable Parquet file"),
    ("short.parquet", b"PAR1", "not a readable Parquet file"),
])
def test_an_empty_or_unreadable_file_exits_2_naming_it(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    r = sweep_table(tmp_path / name)
    assert r.exit_code == 2 and f"{tmp_path / name}: {message}" in r.stderr and r.stdout == "", r.output
    assert "Traceback" not in r.output and "EmptyDataError" not in r.output


def test_one_seed_per_method_keeps_the_test_columns_empty_and_says_why_in_the_csv(tmp_path):
    df = samples_frame()
    df[df["seed"] == 0].to_csv(tmp_path / "one.csv", index=False)
    r = sweep_table(tmp_path / "one.csv", "--baselines", "GRPO", "-f", "csv")
    assert r.exit_code == 0, r.output
    table = pd.read_csv(io.StringIO(r.stdout)).set_index("method")
    assert {"easy p", "easy p_holm", "AVG diff", "AVG diff_low"} <= set(table.columns)
    assert table[["easy p", "AVG p_holm", "AVG diff"]].isna().all().all()
    assert set(table["paired_test"]) == {"fewer than 2 seeds per method (a seed's spread cannot be estimated from one)"}
    df.to_csv(tmp_path / "three.csv", index=False)  # with three seeds: tested, and no such column
    tested = pd.read_csv(io.StringIO(sweep_table(tmp_path / "three.csv", "--baselines", "GRPO", "-f", "csv").stdout))
    assert "paired_test" not in tested.columns and tested["AVG p"].notna().any()
