"""What produced a sweep's numbers: code version, packages, host, cluster. Recorded on the parent run.

    tags, diff = provenance()          # {"provenance.git_commit": ..., "provenance.torch": ...}, "" or a patch
    cluster_tag(ray.cluster_resources(), len(ray.nodes()))

Tags (all strings, MLflow-safe names): ``provenance.git_commit`` (the platform's checkout, or
"unknown" outside git), ``provenance.git_dirty`` ("true" when tracked files differ from the commit;
the diff is then logged as the artifact ``provenance/git_diff.patch``), ``provenance.<package>`` for
torch, ray, mlflow, transformers, the trainer backends' packages (verl), vllm ("not installed" when absent),
``provenance.python``, ``provenance.host``, ``provenance.slurm_job`` (the Slurm job the driver runs in, or
"none") and, once Ray is up, ``provenance.ray_cluster`` (nodes, CPUs, GPUs). The report footer shows them
(dashboards/report/writer.py).
"""

from __future__ import annotations

import json
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path

from contract.env import SLURM_JOB_ID
from trainers.backends import packages

PACKAGES = ("torch", "ray", "mlflow", "transformers", *packages(), "vllm")
REPO = Path(__file__).resolve().parents[2]
PREFIX = "provenance."
SLURM_JOB_TAG = f"{PREFIX}slurm_job"


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def provenance() -> tuple[dict[str, str], str]:
    """(tags, diff): the provenance tags and the uncommitted diff of tracked files ('' when clean)."""
    commit = (_git("rev-parse", "HEAD") or "").strip() or "unknown"
    diff = (_git("diff", "HEAD") or "") if commit != "unknown" else ""
    tags = {f"{PREFIX}git_commit": commit, f"{PREFIX}git_dirty": str(bool(diff.strip())).lower(),
            f"{PREFIX}python": platform.python_version(), f"{PREFIX}host": socket.gethostname()}
    tags.update({f"{PREFIX}{name}": package_version(name) for name in PACKAGES})
    tags[SLURM_JOB_TAG] = SLURM_JOB_ID.get() or "none"  # a `sweep slurm` job (each run: a later run elsewhere says so)
    return tags, diff


def cluster_tag(resources: dict, nodes: int) -> dict[str, str]:
    """The Ray cluster the trials ran on, e.g. {"nodes": 1, "CPU": 2.0, "GPU": 0.0, "memory_gb": 16.1}."""
    summary = {"nodes": nodes, "CPU": float(resources.get("CPU", 0)), "GPU": float(resources.get("GPU", 0)),
               "memory_gb": round(float(resources.get("memory", 0)) / 1e9, 1)}
    return {f"{PREFIX}ray_cluster": json.dumps(summary)}
