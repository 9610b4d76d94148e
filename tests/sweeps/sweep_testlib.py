"""Helpers for the end-to-end sweep tests: tiny specs, short Ray temp dirs, MLflow queries."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import tempfile
import time
from pathlib import Path

import yaml
from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[2]
TEST_CACHE = REPO / ".cache" / "test_base_models"  # shared by tests: a 30-step base is built once


def write_spec(directory: Path, name: str, *, seeds=(0, 1), steps=6, variants=None, max_concurrent=2,
               max_failures=2, resources=None, checkpoint_every=2, report_interval_s=None, report=None,
               warm_start=None) -> Path:
    spec = {
        "name": name,
        "defaults": [{"trainer": "local_tiny"}, {"model": "tiny_qwen3"}, {"data": "arith"}],
        "base": {
            "trainer": {"steps": steps, "eval_every": 2, "checkpoint_every": checkpoint_every, "prompts_per_step": 2,
                        "group_size": 4, "max_new_tokens": 24, "eval_k": 1},
            "data": {"eval_size": 4, "train_size": 200},
            "local": {"warm_start": warm_start or {"steps": 150, "cache_dir": str(TEST_CACHE)}},
        },
        "seeds": list(seeds),
        "max_concurrent": max_concurrent,
        "max_failures": max_failures,
        "resources": resources or {"cpus": 1, "gpus": 0},
        "variants": variants or [{"algorithm": "grpo"}, {"algorithm": "dhpo", "mixing": "entropy"}],
        # no static figures (png, pdf: seconds of drawing per report) unless a test asks: they are
        # tests/dashboards' (the report writer), test_main_command's and the documented CLI run's
        "report": report or {"table": {"select_by": "val/avg/acc", "at": "final"}, "formats": ["html", "md", "latex", "csv"]},
    }
    if report_interval_s is not None:
        spec["report_interval_s"] = report_interval_s
    path = directory / f"{name}.yaml"
    path.write_text(f"# sweep run {path.name}\n" + yaml.safe_dump(spec, sort_keys=False))
    return path


CREATED: list[Path] = []  # short dirs made by this process; conftest.py removes each test's own


def placement_spec_file(directory: Path, name: str = "p", *, backend="verl", gpus=0, max_concurrent=3, nnodes=1,
                        per_node=1, extra="") -> Path:
    """A one-variant GRPO spec for placement checks: ``backend``, ``resources.gpus`` and verl's nodes x GPUs."""
    path = directory / f"{name}.yaml"
    path.write_text(f"""name: {name}
base:
  backend: {backend}
  trainer: {{prompts_per_step: 64, group_size: 2, updates_per_rollout: 1}}
  verl: {{nnodes: {nnodes}, n_gpus_per_node: {per_node}}}
  model: {{path: {directory}}}
resources: {{cpus: 1, gpus: {gpus}}}
max_concurrent: {max_concurrent}
variants: [{{algorithm: grpo}}]
{extra}""")
    return path


def short_ray_dir() -> Path:
    """Ray's Unix sockets need short paths: a temp dir right under the repository (removed by the
    autouse fixture in conftest.py at the end of the test)."""
    root = REPO / ".rt"
    root.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=root))
    CREATED.append(path)
    return path


def seed_verl_base(cwd: Path) -> Path:
    """Put the verl backend's default tiny base (the warm-started tiny Qwen3 of ``verl.tiny_warm_start_steps``)
    into ``cwd``'s default cache, as a first ``sweep run`` there would build it: built once under the
    repository's own cache (where tests/trainers/verl_backend/test_assets.py checks that build) and
    copied, so end-to-end verl tests do not each spend a minute rebuilding the same bytes."""
    from trainers.verl_backend.assets import tiny_qwen3
    from trainers.verl_backend.config import VerlConfig

    steps = VerlConfig().tiny_warm_start_steps
    built = tiny_qwen3(REPO / VerlConfig.cache_dir / "models", warm_start_steps=steps, log=lambda _: None)
    target = cwd / VerlConfig.cache_dir / "models" / built.name
    shutil.copytree(built, target, dirs_exist_ok=True)
    return target


def short_cwd() -> Path:
    """A working directory short enough that the CLI's defaults (runs/, runs/.ray) suit Ray's sockets:
    the end-to-end CLI tests run the commands exactly as docs/cli.md writes them, with no path flags."""
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
    """A client of ``run_dir``'s sqlite store, opened (MLflow opens it in the constructor, creating a
    missing file) under the drivers' store lock: a test polling a driver that is creating the store
    would otherwise run MLflow's schema migration beside it (a CI run's sweep never got past it)."""
    from tracking_store.client import open_client
    from tracking_store.uri import default_uri

    return open_client(default_uri(run_dir))


def store_ready(run_dir: Path) -> bool:
    """Whether the driver has created ``run_dir``'s sqlite store (asked under the drivers' store lock).

    The file appears when a driver starts creating the tables; under the lock, an existing file is a
    complete store."""
    from tracking_store.client import store_lock
    from tracking_store.uri import default_uri

    with store_lock(default_uri(run_dir)):
        return (run_dir / "mlflow.db").exists()


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


def pids_under(marker: str | Path) -> list[int]:
    """Processes (not this one) whose command line names ``marker`` whole, such as a temp dir of this test:
    ``.rt/c1`` does not name ``.rt/c16/...``, another pytest worker's directory (a substring match did, and
    one test's clean-up killed the other's Ray)."""
    pattern = re.compile(re.escape(str(marker)) + r"(?!\w)")
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if pattern.search((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def kill_pids(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_ray_processes(marker: Path) -> None:
    """Kill leftover Ray processes of a killed driver (their command lines hold the temp dir)."""
    kill_pids(pids_under(marker))


def sweep_command(spec: Path, run_dir: Path, ray_dir: Path) -> list[str]:
    env_python = REPO / ".venv" / "bin" / "python"
    python = str(env_python) if env_python.exists() else "python"
    return [python, "-m", "sweeps.cli", "run", str(spec), "--run-dir", str(run_dir), "--no-progress", "--no-report",
            "--ray-temp-dir", str(ray_dir)]


def subprocess_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()  # no leaks from this process or the caller's MLflow, and the
           if not k.startswith(("RAY_", "PYTEST_")) and k not in (  # kernel settings a user's shell does not have
               "MLFLOW_TRACKING_URI", "ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")}
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


# ---- added for the resume / scheduler end-to-end tests ---------------------------------------

def refresh_ray_auth() -> None:
    """Make this process's Ray authentication state follow ``os.environ`` again.

    Ray reads ``RAY_AUTH_MODE`` into a cached config and the token into a cached loader, once per
    process; a test that changed the environment (or the conftest that restores it) leaves both
    stale, and the next cluster started or joined from this process then fails authentication.
    """
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def metric_history(client: MlflowClient, run_id: str, skip_prefixes=("perf/",)) -> dict[str, list[tuple[int, float]]]:
    """Every metric a run logged, as key -> [(step, value)] in step order (a duplicated step shows
    twice); ``skip_prefixes`` leaves out wall-clock metrics, which no two runs share."""
    keys = client.get_run(run_id).data.metrics
    return {key: sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))
            for key in sorted(keys) if not key.startswith(skip_prefixes)}


def history_difference(got: dict[str, list[tuple[int, float]]], want: dict[str, list[tuple[int, float]]]) -> str | None:
    """None when two metric histories are equal step by step, value by value (exact float
    equality); else where they first differ."""
    if set(got) != set(want):
        return f"metric keys differ: only in the first {sorted(set(got) - set(want))}, only in the second " \
               f"{sorted(set(want) - set(got))}"
    for key in sorted(want):
        a, b = got[key], want[key]
        if [s for s, _ in a] != [s for s, _ in b]:
            return f"{key}: logged steps differ: {[s for s, _ in a]} vs {[s for s, _ in b]}"
        for (step, x), (_, y) in zip(a, b):
            if x != y:
                return f"{key} first differs at step {step}: {x!r} vs {y!r}"
    return None


def running_trial_snapshot(client: MlflowClient, sweep: str, trial_id: str, min_step: int):
    """(run id, worker pid, last logged step) of ``trial_id`` while its child run is RUNNING with at
    least ``min_step`` logged and its worker's pid recorded; None otherwise (also while the store
    is still being created or is busy)."""
    try:
        run = children(client, sweep).get(trial_id)
    except Exception:  # noqa: BLE001 - the driver may be creating the tables or holding the write lock
        return None
    if run is None or run.info.status != "RUNNING":
        return None
    pid, step = run.data.tags.get("ray.pid"), run.data.metrics.get("trial/step")
    if pid is None or step is None or step < min_step:
        return None
    return run.info.run_id, int(pid), int(step)


def kill_advancing_trial_worker(run_dir: Path, sweep: str, trial_id: str, min_step: int, killed: dict,
                                timeout: float = 300) -> None:
    """SIGKILL the Ray worker that is training ``trial_id`` right now, once that is certain.

    The pid comes from the child run's ``ray.pid`` tag, which the driver sets from the first result
    of each (re)start of the trial, before logging that attempt's steps. A pid is killed only when
    two reads of the same RUNNING run show the same pid and a later step: that worker is the one
    producing the trial's steps (not an idle, reused or earlier worker). Missing tags, a store not
    created yet or a busy database mean: keep waiting. Fills ``killed`` (pid, step, run_id).
    """
    import signal

    client = None
    first = None
    deadline = time.time() + timeout
    while time.time() < deadline and "pid" not in killed:
        time.sleep(0.2)
        if client is None:
            if not store_ready(run_dir):
                continue
            client = client_for(run_dir)
        now = running_trial_snapshot(client, sweep, trial_id, min_step)
        if now is None:
            first = None
            continue
        run_id, pid, step = now
        if first is None or first[:2] != (run_id, pid):
            first = now
            continue
        if step > first[2]:  # same run, same worker, training went on between the two reads
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended in between (the attempt restarted): look again
                first = None
                continue
            killed.update(pid=pid, step=step, run_id=run_id)


def shipped_user_inputs(spec_path: Path, root: Path) -> list[str]:
    """The overrides on a shipped spec's first line (``# sweep run X.yaml key=value ...``), with every
    absolute path in them moved under ``root`` and created there (a data file when the name ends
    in .jsonl/.parquet/.json, else a directory). Specs that need user inputs (a model directory, data files) document them
    on that line; loading them with these overrides checks that the documented command is valid."""
    import re
    import shlex

    first = spec_path.read_text().splitlines()[0]
    overrides = shlex.split(first)[4:]  # after: # sweep run NAME

    def relocate(match: re.Match) -> str:
        target = root / match.group(0).lstrip("/")
        if target.suffix in (".jsonl", ".parquet", ".json"):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text('{"prompt": "1+1=", "answer": "2"}\n')
        else:
            target.mkdir(parents=True, exist_ok=True)
        return str(target)

    return [re.sub(r"(?<![\w.])/[\w./-]+", relocate, o) for o in overrides]


def shipped_base_overrides(spec_path: Path, root: Path) -> list[str]:
    """shipped_user_inputs as load_spec overrides (trial keys live under base.)."""
    return [f"base.{o}" for o in shipped_user_inputs(spec_path, root)]
