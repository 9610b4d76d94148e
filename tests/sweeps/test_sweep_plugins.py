"""The registries' litmus: a toy trainer backend and a toy generator, each added by one registration in a
plug-in module (tests/sweeps/plugins/toy_plugin.py, named in SWEEP_PLUGINS), run through the real `sweep run` (Ray,
MLflow sqlite) and `sweep eval` without any shared code naming them; without the plug-in the same spec is
refused before any trial starts, naming the unknown backend."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from sweep_testlib import children, client_for, short_cwd, steps_of, subprocess_env, sweep_exe

pytestmark = [pytest.mark.slow, pytest.mark.lane("local"), pytest.mark.timeout(600)]

PLUGIN_DIR = Path(__file__).resolve().parent / "plugins"


def sweep(cwd: Path, *args: str, plugins: str | None = "toy_plugin") -> subprocess.CompletedProcess:
    env = subprocess_env()
    env["PYTHONPATH"] = str(PLUGIN_DIR) + os.pathsep + env["PYTHONPATH"]
    if plugins is not None:
        env["SWEEP_PLUGINS"] = plugins
    return subprocess.run([sweep_exe(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=500,
                          stdin=subprocess.DEVNULL)


def test_a_toy_backend_and_a_toy_generator_run_through_sweep_run_and_sweep_eval():
    cwd = short_cwd()
    spec = {"name": "toys", "base": {"backend": "toy", "trainer": {"steps": 3}},
            "seeds": [0, 1], "variants": [{"algorithm": "grpo"}], "max_failures": 0,
            "resources": {"cpus": 1, "gpus": 0},
            "eval": {"benchmarks": ["easy"], "backend": "toy_gen", "samples": 2, "size": 4, "max_new_tokens": 8},
            "report": {"table": {"select_by": "val/avg/acc", "at": "final"}}}
    (cwd / "toys.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))

    refused = sweep(cwd, "run", "toys.yaml", plugins=None)
    assert refused.returncode == 2 and "unknown trainer backend 'toy'" in refused.stderr, refused.stderr[-2000:]
    assert not (cwd / "runs" / "toys").exists() or not children(client_for(cwd / "runs"), "toys")

    run = sweep(cwd, "run", "toys.yaml")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    client = client_for(cwd / "runs")
    runs = children(client, "toys")
    assert sorted(runs) == ["grpo.s0", "grpo.s1"]
    for tid, r in runs.items():
        assert r.info.status == "FINISHED" and r.data.tags["backend"] == "toy"
        assert steps_of(client, r.info.run_id, "actor/entropy") == [1, 2, 3]  # the toy trainer's own steps
        assert r.data.metrics["val/easy/acc"] == pytest.approx(0.1)
        # the spec's eval: section ran the toy generator on the final checkpoint (exported by the toy hook)
        assert steps_of(client, r.info.run_id, "eval/easy/avg_at_k") == [3]
        records = Path(client.download_artifacts(r.info.run_id, "eval/step_3/easy.jsonl", str(cwd / tid)))
        samples = [json.loads(line)["samples"] for line in records.read_text().splitlines()]
        assert len(samples) == 4 and all(s == ["<answer>7</answer>"] * 2 for s in samples)

    again = sweep(cwd, "eval", "toys", "--benchmarks", "easy", "--backend", "toy_gen", "--samples", "1")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    for r in children(client, "toys").values():
        assert r.data.metrics["eval/easy/k"] == 1  # the newer protocol's evaluation, logged by `sweep eval`

    bad = sweep(cwd, "run", "toys.yaml", "--dry-run", plugins="no_such_plugin_module")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr[-2000:]
    assert bad.stderr.startswith("error: SWEEP_PLUGINS: cannot import plug-in module 'no_such_plugin_module'")
