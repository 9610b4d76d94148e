"""Checkpoint evaluation end to end: a spec's `eval:` section, then `sweep eval` on every TARGET form.

Real Ray, a real MLflow sqlite store, real training and real generation with the HF backend on the
tiny local model; the commands are typed as docs/evaluation.md writes them (no --no-progress, no path
flags, in a short working directory). A user benchmark file in the plain {problem, answer} schema
sits beside a synthetic benchmark. Checked: metrics at the final step in each trial's run, equal to
what the per-problem artifact files say; the base policy evaluated once and logged at step 0 of both; the report's table built from them; a re-run of the same
protocol logs nothing twice; a trial id, a bare checkpoint directory and a missing benchmark file.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from evaluators.tasks import make_split
from evaluators.verdicts import loads
from evaluators.verifier import verify_answer
from sweep_testlib import children, client_for, short_cwd, steps_of, subprocess_env, sweep_exe, write_spec

pytestmark = [pytest.mark.slow, pytest.mark.lane("verl"), pytest.mark.timeout(900)]
STEPS = 4


def sweep(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sweep_exe(), *args], cwd=cwd, env=subprocess_env(), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def records_of(client, run_id: str, artifact: str, out: Path) -> list[dict]:
    path = client.download_artifacts(run_id, artifact, str(out))
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


def test_eval_section_then_sweep_eval_of_a_sweep_a_trial_and_a_checkpoint(tmp_path):
    cwd = short_cwd()
    bench = cwd / "bench" / "arith_qa.jsonl"
    bench.parent.mkdir()
    bench.write_text("".join(json.dumps({"id": f"q{i}", "problem": p.prompt, "answer": p.answer}) + "\n"
                             for i, p in enumerate(make_split("easy", 6, seed=7))))
    spec_path = write_spec(cwd, "evalsweep", seeds=(0,), steps=STEPS, variants=[{"algorithm": "grpo"},
                                                                              {"algorithm": "gspo"}])
    spec = yaml.safe_load(spec_path.read_text())
    spec["eval"] = {"benchmarks": ["easy", "arith_qa"], "files": {"arith_qa": "bench/arith_qa.jsonl"},
                    "samples": 2, "max_new_tokens": 24, "size": 4, "base": True}
    spec["report"] = {"table": {"metric": "eval/{benchmark}/avg_at_k", "select_by": "AVG", "at": "final"}}
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))

    run = sweep(cwd, "run", spec_path.name)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    client = client_for(cwd / "runs")
    runs = children(client, "evalsweep")
    parent = client.search_runs([client.get_experiment_by_name("evalsweep").experiment_id], "tags.role = 'parent'")[0]
    assert json.loads(parent.data.tags["provenance.ray_cluster"])["nodes"] == 1  # provenance of the sweep
    assert sorted(runs) == ["grpo.s0", "gspo.s0"]
    for r in runs.values():  # the default numeric mode held in each trial's process, started by `sweep run` alone
        tags = r.data.tags
        assert (tags["provenance.numerics"], tags["provenance.numerics.mkl"], tags["provenance.numerics.onednn"],
                tags["provenance.numerics.env"]) == (
            "reproducible", "COMPATIBLE", "off", "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2")
    for tid, r in runs.items():
        m, rid = r.data.metrics, r.info.run_id
        assert steps_of(client, rid, "eval/easy/avg_at_k") == [0, STEPS]  # the base (step 0) and the final checkpoint
        recs = records_of(client, rid, "eval/step_4/arith_qa.jsonl", tmp_path / tid)
        assert [x["id"] for x in recs] == [f"q{i}" for i in range(6)]
        assert all(len(x["samples"]) == 2 for x in recs) and m["eval/arith_qa/k"] == 2
        # the logged numbers are those of the per-problem records, and the verdicts are the verifier's: a
        # benchmark file graded as the field grades (unmarked: auto -> field), a synthetic task as its reward
        assert m["eval/arith_qa/avg_at_k"] == pytest.approx(mean(mean(x["correct"]) for x in recs))
        assert all(verify_answer(s, x["answer"], unmarked="field") == c
                   for x in recs for s, c in zip(x["samples"], x["correct"]))
        easy = records_of(client, rid, "eval/step_4/easy.jsonl", tmp_path / tid)
        assert len(easy) == 4 and m["eval/easy/avg_at_k"] == pytest.approx(mean(mean(x["correct"]) for x in easy))
        assert all(verify_answer(s, x["answer"]) == c for x in easy for s, c in zip(x["samples"], x["correct"]))
        assert m["eval/avg/avg_at_k"] == pytest.approx((m["eval/easy/avg_at_k"] + m["eval/arith_qa/avg_at_k"]) / 2)
        assert r.info.status == "FINISHED"
        # the compact per-problem verdicts of both evaluations, where the paired statistics read them
        assert [a.path for a in client.list_artifacts(rid, "verdicts/eval")] == \
            ["verdicts/eval/step_000000.json", f"verdicts/eval/step_{STEPS:06d}.json"]
        verdicts = loads(Path(client.download_artifacts(rid, f"verdicts/eval/step_{STEPS:06d}.json",
                                                        str(tmp_path / tid))).read_text())
        assert verdicts["arith_qa"].ids == [x["id"] for x in recs]
        assert verdicts["arith_qa"].correct == [[int(c) for c in x["correct"]] for x in recs]
        assert mean(verdicts["easy"].fractions) == pytest.approx(m["eval/easy/avg_at_k"])

    # The base policy was evaluated once for both trials (one shared result directory), logged at step 0 of each.
    assert len(list((cwd / "runs" / "evalsweep" / "base_eval").iterdir())) == 1
    base_values = {tid: [m.value for m in client.get_metric_history(r.info.run_id, "eval/arith_qa/avg_at_k") if m.step == 0]
                   for tid, r in runs.items()}
    assert base_values["grpo.s0"] == base_values["gspo.s0"] and len(base_values["grpo.s0"]) == 1

    # The end-of-run table is built from the eval metrics, benchmarks in the eval section's order.
    with open(cwd / "runs" / "evalsweep" / "report" / "table.csv") as f:
        rows = list(csv.DictReader(f))
    by_method = {row["method"]: row for row in rows}
    grpo = runs["grpo.s0"].data.metrics
    assert list(rows[0])[-3:-1] == ["easy", "arith_qa"] or {"easy", "arith_qa"} <= set(rows[0])
    assert float(by_method["GRPO"]["easy"]) == pytest.approx(100 * grpo["eval/easy/avg_at_k"], abs=0.05)
    assert float(by_method["GRPO"]["arith_qa"]) == pytest.approx(100 * grpo["eval/arith_qa/avg_at_k"], abs=0.05)

    # `sweep report` on the eval metrics, with the base row from the step-0 (base policy) evaluations.
    report = sweep(cwd, "report", "evalsweep", "--metric", "eval/{benchmark}/avg_at_k", "--select-by", "AVG",
                   "--base", "Base", "--no-log")
    assert report.returncode == 0, report.stderr
    with open(cwd / "runs" / "evalsweep" / "report" / "table.csv") as f:
        rows = {row["method"]: row for row in csv.DictReader(f)}
    assert float(rows["Base"]["arith_qa"]) == pytest.approx(100 * base_values["grpo.s0"][0], abs=0.05)
    assert float(rows["GSPO"]["easy"]) == pytest.approx(100 * runs["gspo.s0"].data.metrics["eval/easy/avg_at_k"],
                                                         abs=0.05)

    # `sweep eval SPEC`: the spec's protocol again -> results reused, nothing logged twice.
    again = sweep(cwd, "eval", spec_path.name)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already logged") == 4  # base + final checkpoint, for each trial
    for r in runs.values():
        assert steps_of(client, r.info.run_id, "eval/easy/avg_at_k") == [0, STEPS]

    # A trial id with another protocol (greedy, another benchmark): logged into that trial's run.
    one = sweep(cwd, "eval", "gspo.s0", "--benchmarks", "medium", "--greedy", "--max-new-tokens", "24")
    assert one.returncode == 0, one.stderr
    assert "numerics: reproducible (aten AVX2, mkl COMPATIBLE, onednn off" in one.stdout  # the trial's mode
    m = children(client, "evalsweep")["gspo.s0"].data.metrics
    assert m["eval/medium/k"] == 1 and 0.0 <= m["eval/medium/avg_at_k"] <= 1.0
    assert steps_of(client, runs["gspo.s0"].info.run_id, "eval/medium/avg_at_k") == [STEPS]

    # A bare checkpoint directory (Tune's copy of the final one): its own run in experiment 'eval', and
    # the same protocol gives the same numbers as the in-sweep evaluation of that checkpoint.
    ckpt = sorted((cwd / "runs" / "evalsweep" / "ray_results").glob("*/grpo.s0/checkpoint_*"))[-1]
    bare = sweep(cwd, "eval", str(ckpt), "--benchmarks", "easy,arith_qa", "--file", "arith_qa=bench/arith_qa.jsonl",
                 "--samples", "2", "--max-new-tokens", "24", "--verifier-report")
    assert bare.returncode == 0, bare.stderr
    # the audit: every response where verify_answer and plain math-verify disagree, beside the results
    (report_path,) = (cwd / "runs" / "eval").glob("*/step_*/*/verifier_report.md")
    audit = report_path.read_text()
    assert "## easy: " in audit and "## arith_qa: " in audit and "verifier report" in bare.stdout
    (eval_run,) = client.search_runs([client.get_experiment_by_name("eval").experiment_id], "tags.role = 'eval'")
    assert eval_run.data.tags["eval_target"] == str(ckpt.resolve())
    assert eval_run.data.metrics["eval/arith_qa/avg_at_k"] == grpo["eval/arith_qa/avg_at_k"]

    # A benchmark without a file: exit 2 naming it, where it was looked for and the schemas, before any work.
    missing = sweep(cwd, "eval", spec_path.name, "--benchmarks", "aime24")
    assert missing.returncode == 2
    assert "aime24" in missing.stderr and "data/benchmarks" in missing.stderr
    assert "problem" in missing.stderr and "ground_truth" in missing.stderr  # the schemas accepted
    assert "eval/aime24/avg_at_k" not in children(client, "evalsweep")["grpo.s0"].data.metrics
