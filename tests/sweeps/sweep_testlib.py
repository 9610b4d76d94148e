"""Helpers for the end-to-end sweep tests: tiny specs, short Ray temp dirs, MLflow queries."""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
import time
from pathlib import Path

import yaml
from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[2]
TEST_CACHE = REPO / ".cache" / "test_base_models"  # shared by tests: a 30-step base is built once


def write_spec(directory: Path, name: str, *, seeds=(0, 1), steps=6, variants=None, max_concurrent=2,
               max_failures=2, resources=None, checkpoint_every=2, report_interval_s=None) -> Path:
    spec = {
        "name": name,
        "defaults": [{"trainer": "local_tiny"}, {"model": "tiny_qwen3"}, {"data": "arith"}],
        "base": {
            "trainer": {"steps": steps, "eval_every": 2, "checkpoint_every": checkpoint_every, "prompts_per_step": 2,
                        "group_size": 4, "max_new_tokens": 24, "eval_k": 1},
            "data": {"eval_size": 4, "train_size": 200},
            "warm_start": {"steps": 150, "cache_dir": str(TEST_CACHE)},
        },
        "seeds": list(seeds),
        "max_concurrent": max_concurrent,
        "max_failures": max_failures,
        "resources": resources or {"cpus": 1, "gpus": 0},
        "variants": variants or [{"algorithm": "grpo"}, {"algorithm": "dhpo", "mixing": "entropy"}],
        "report": {"table": {"select_by": "val/avg/acc", "at": "final"}},
    }
    if report_interval_s is not None:
        spec["report_interval_s"] = report_interval_s
    path = directory / f"{name}.yaml"
    path.write_text(f"# sweep run {path.name}\n" + yaml.safe_dump(spec, sort_keys=False))
    return path


CREATED: list[Path] = []  # short dirs made by this process; conftest.py removes each test's own


def short_ray_dir() -> Path:
    """Ray's Unix sockets need short paths: a temp dir right under the repository (removed by the
    autouse fixture in conftest.py at the end of the test)."""
    root = REPO / ".rt"
    root.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=root))
    CREATED.append(path)
    return path


def short_cwd() -> Path:
    """A working directory short enough that the CLI's defaults (runs/, runs/.ray) suit Ray's sockets:
    the end-to-end CLI tests run the commands exactly as the README writes them, with no path flags."""
    root = REPO / ".rt"
    root.mkdir(exist_ok=True)
    for n in _SHORT_NAMES:  # never the same path twice in a process: MLflow caches a store per URI
        try:
            (root / f"c{n}").mkdir()
        except FileExistsError:
            continue
        CREATED.append(root / f"c{n}")
        return root / f"c{n}"
    raise RuntimeError(f"no free short directory under {root}")


_SHORT_NAMES = itertools.count()


def sweep_exe() -> str:
    """The `sweep` console script of the project venv, as a user runs it."""
    exe = REPO / ".venv" / "bin" / "sweep"
    return str(exe) if exe.exists() else "sweep"


def client_for(run_dir: Path) -> MlflowClient:
    return MlflowClient(f"sqlite:///{(run_dir / 'mlflow.db').resolve()}")


def children(client: MlflowClient, sweep: str) -> dict[str, object]:
    exp = client.get_experiment_by_name(sweep)
    if exp is None:
        return {}
    runs = client.search_runs([exp.experiment_id], "tags.role = 'trial'", max_results=1000)
    return {r.data.tags["trial_id"]: r for r in runs}


def steps_of(client: MlflowClient, run_id: str, key: str) -> list[int]:
    return sorted(m.step for m in client.get_metric_history(run_id, key))


def wait_for(predicate, timeout: float, interval: float = 0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"condition not met within {timeout}s")


def kill_ray_processes(marker: Path) -> None:
    """Kill leftover Ray processes of a killed driver (their command lines hold the temp dir)."""
    subprocess.run(["pkill", "-9", "-f", str(marker)], check=False)


def sweep_command(spec: Path, run_dir: Path, ray_dir: Path) -> list[str]:
    env_python = REPO / ".venv" / "bin" / "python"
    python = str(env_python) if env_python.exists() else "python"
    return [python, "-m", "sweeps.cli", "run", str(spec), "--run-dir", str(run_dir), "--no-progress", "--no-report",
            "--ray-temp-dir", str(ray_dir)]


def subprocess_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "PYTEST_"))}  # no leaks from this process
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# One method of each Ray gRPC service that listens on a node (GCS, raylet, object manager, core
# worker): with token authentication on, a call without the token is refused as UNAUTHENTICATED.
RAY_PROBE_METHODS = ("/ray.rpc.NodeInfoGcsService/GetAllNodeInfo", "/ray.rpc.NodeManagerService/GetNodeStats",
                     "/ray.rpc.ObjectManagerService/Pull", "/ray.rpc.CoreWorkerService/NumPendingTasks")


def refusal_without_token(port: int, host: str = "127.0.0.1") -> str | None:
    """How a listener refuses a client without Ray's token ('grpc <method>' or 'http 401'); None if it does not."""
    import urllib.error
    import urllib.request

    import grpc

    with grpc.insecure_channel(f"{host}:{port}") as channel:
        for method in RAY_PROBE_METHODS:
            try:
                channel.unary_unary(method)(b"", timeout=5)
            except grpc.RpcError as err:
                if err.code() == grpc.StatusCode.UNAUTHENTICATED:
                    return f"grpc {method}"
    try:
        urllib.request.urlopen(f"http://{host}:{port}/", timeout=5)
    except urllib.error.HTTPError as err:
        if err.code == 401:
            return "http 401"
    except Exception:  # noqa: BLE001 - not an HTTP server
        pass
    return None
