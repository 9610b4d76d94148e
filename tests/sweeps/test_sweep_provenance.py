"""Provenance of a sweep: the parent run records the code version, packages, host and the resolved
spec (real sqlite MLflow store, the tracker the driver uses). The report's footer:
tests/dashboards/test_dashboards_report.py."""

from __future__ import annotations

import pytest
import json

import subprocess
from importlib import metadata
from pathlib import Path

import yaml
from mlflow.tracking import MlflowClient

from sweeps.tracking.provenance import PACKAGES, REPO, cluster_tag, provenance
from sweeps.specs.load import load_spec
from sweeps.tracking.sweep_runs import SweepTracker


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout


def test_provenance_names_the_checkout_and_the_packages():
    tags, diff = provenance()
    assert tags["provenance.git_commit"] == git("rev-parse", "HEAD").strip()
    assert diff == git("diff", "HEAD") and tags["provenance.git_dirty"] == str(bool(diff.strip())).lower()
    assert tags["provenance.torch"] == metadata.version("torch") and tags["provenance.mlflow"] == metadata.version("mlflow")
    assert set(f"provenance.{p}" for p in PACKAGES) <= set(tags)
    assert tags["provenance.vllm"] in ("not installed", *([metadata.version("vllm")] if _has("vllm") else []))


def test_provenance_names_the_slurm_job_the_driver_runs_in(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert provenance()[0]["provenance.slurm_job"] == "4242"
    monkeypatch.delenv("SLURM_JOB_ID")
    assert provenance()[0]["provenance.slurm_job"] == "none"  # a later run outside Slurm says so


def _has(name: str) -> bool:
    try:
        metadata.version(name)
        return True
    except metadata.PackageNotFoundError:
        return False


def test_cluster_tag_summarises_the_resources():
    tag = cluster_tag({"CPU": 16.0, "GPU": 2.0, "memory": 64e9}, 2)
    assert yaml.safe_load(tag["provenance.ray_cluster"]) == {"nodes": 2, "CPU": 16.0, "GPU": 2.0, "memory_gb": 64.0}


def tracked(tmp_path: Path, name: str, body: str, steps: int):
    """(spec, tracker, client): a spec `name` with `body`, opened by the driver's tracker on a new sqlite store."""
    spec_file = tmp_path / f"{name}.yaml"
    spec_file.write_text(f"name: {name}\n{body}")
    spec = load_spec(spec_file, [f"base.trainer.steps={steps}"])
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return spec, SweepTracker(spec, uri, tmp_path), MlflowClient(uri)


@pytest.mark.slow
def test_parent_run_carries_provenance_and_the_resolved_spec(tmp_path):
    spec, tracker, client = tracked(tmp_path, "prov", "seeds: [0, 1]\nvariants: [{algorithm: grpo}, {algorithm: gspo}]\n", 7)
    tags = client.get_run(tracker.parent_id).data.tags
    assert tags["provenance.git_commit"] == git("rev-parse", "HEAD").strip()
    assert tags["provenance.transformers"] == metadata.version("transformers")
    resolved = yaml.safe_load(Path(client.download_artifacts(tracker.parent_id, "spec/resolved.yaml",
                                                             str(tmp_path))).read_text())
    assert sorted(resolved["trials"]) == sorted(t.trial_id for t in spec.trials)
    assert all(c["trainer"]["steps"] == 7 for c in resolved["trials"].values())  # after the overrides
    artifacts = {a.path for a in client.list_artifacts(tracker.parent_id, "provenance")}
    assert ("provenance/git_diff.patch" in artifacts) == (tags["provenance.git_dirty"] == "true")
    # the report: section as the end-of-run report uses it: the spec's, with the benchmark and method order
    assert resolved["report"] == spec.report
    assert resolved["report"]["table"]["methods"] == ["GRPO", "GSPO"]
    assert resolved["report"]["table"]["benchmarks"] == list(spec.trials[0].config.data.benchmarks)
    # the same mapping as JSON, which the read commands load (a big grid's YAML takes seconds to parse)
    as_json = json.loads(Path(client.download_artifacts(tracker.parent_id, "spec/resolved.json", str(tmp_path))).read_text())
    assert as_json == resolved
    from dashboards.collect.recorded_spec import recorded_spec

    assert recorded_spec(client, tracker.parent_id) == resolved


@pytest.mark.slow
def test_trial_params_are_its_backend_and_the_objectives_effective_values(tmp_path):
    spec, tracker, client = tracked(tmp_path, "params",
                                    "seeds: [0]\nvariants: [{algorithm: dhpo, mixing: entropy, eps_high_seq: 0.3}]\n", 3)
    params = client.get_run(tracker.start_trial(spec.trials[0])).data.params
    assert params["backend"] == "local" and not [k for k in params if k.startswith("verl.")]
    assert params["local.device"] == str(spec.trials[0].config.local.device)
    # DHPO App. D defaults the spec left unset, next to the value it set
    assert params["algorithm.params.eps_low_token"] == "0.2" and params["algorithm.params.eps_high_token"] == "0.28"
    assert params["algorithm.params.eps_high_seq"] == "0.3" and params["algorithm.params.clip_mode"] == "branch"
