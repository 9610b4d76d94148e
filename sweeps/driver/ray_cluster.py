"""The Ray side of a sweep driver: process environment, starting/joining Ray, resource checks.

    prepare_environment(run_dir)              # every write inside the run dir; Ray/Tune quiet
    check_resources(spec, local_capacity(n))  # before any MLflow run: a trial that can never fit
    init_ray(address=None, run_dir=..., temp_dir=None, num_cpus=None)

Security of the local cluster: Ray's daemons (GCS, raylet, agents) listen on all interfaces and
Ray offers no public setting to bind them to loopback. So a local cluster keeps Ray's token
authentication on, with a fresh random token per driver passed through the environment
(``RAY_AUTH_TOKEN``; nothing is written to ~/.ray): a client without the token is refused. A user
who sets ``RAY_AUTH_MODE`` explicitly gets what they set.

Joining an existing cluster (``--address HOST:PORT`` or ``auto``, the GCS address): ``check_cluster``
runs before anything is created. A Ray Client address (``ray://``) is refused (the Tuner would run on
the cluster, out of reach of the driver's tracking: every result would be lost). A token given by
``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH`` turns token mode on for the driver; the GCS is asked
once with it, and a refusal or silence is ``ClusterUnavailable`` (exit 4) naming the address and what
to set, instead of Ray's 20 s of repeated log lines and a traceback.
"""

from __future__ import annotations

import logging
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from contract.env import (
                          CUDA_VISIBLE_DEVICES, HF_HOME, HF_HUB_OFFLINE, HF_HUB_PROGRESS_OFF, MPLCONFIGDIR, RAY_AIR_NEW_OUTPUT, RAY_AUTH_MODE,
                          RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, RAY_CHDIR_TO_TRIAL_DIR, RAY_DEDUP_LOGS, RAY_PRESTART_WORKERS, RAY_TMPDIR, RAY_USAGE_STATS, TMPDIR,
                          TORCHINDUCTOR_CACHE_DIR, TRANSFORMERS_VERBOSITY, TRITON_CACHE_DIR, TUNE_AUTO_LOGGERS_OFF, TUNE_CHECKPOINT_SYNC_WARNING,
                          TUNE_SIGINT_HANDLER_OFF, TUNE_STRICT_METRICS_OFF,
                          )
from contract.run_layout import RunLayout
from sweeps.specs.errors import SpecError


class ClusterUnavailable(RuntimeError):
    """The Ray cluster of ``--address`` cannot be joined (nothing answers, or it refuses this driver)."""


RAY_CLIENT_REFUSAL = (
    "--address {address}: a Ray Client address (ray://). Under Ray Client the sweep's Tune loop runs on the "
    "cluster, out of reach of this driver's MLflow writer, so every result would be lost; nothing was started. "
    "Run the sweep on a node of the cluster with the GCS address (--address HEAD_HOST:6379, or --address auto on "
    "the head node), or submit it as a Ray job that runs there: ray job submit --address http://HEAD_HOST:8265 "
    "--working-dir . -- sweep run SPEC --address auto")


def check_cluster(address: str) -> str:
    """Refuse a ``ray://`` address, turn token mode on when a token is given, and ask the cluster's GCS once;
    returns the GCS address. ``SpecError`` (exit 2) for ray://, ``ClusterUnavailable`` (exit 4) otherwise."""
    if address.startswith("ray://"):
        raise SpecError(RAY_CLIENT_REFUSAL.format(address=address))
    token_given = bool(RAY_AUTH_TOKEN.get() or RAY_AUTH_TOKEN_PATH.get())
    if token_given and not RAY_AUTH_MODE.get():
        RAY_AUTH_MODE.set("token")
    _refresh_auth_config()
    from ray._private.services import canonicalize_bootstrap_address

    try:
        gcs = canonicalize_bootstrap_address(address)
    except Exception as err:  # noqa: BLE001 - Ray's own message names what it could not find
        raise ClusterUnavailable(f"--address {address}: {str(err).splitlines()[0]}") from None
    if not gcs:
        raise ClusterUnavailable(f"--address {address}: no running Ray cluster found from this machine; pass the head's "
                                 "GCS address (--address HEAD_HOST:6379)")
    refusal = _ask_gcs(gcs, token_given)
    if refusal == "unauthenticated":
        what = ("its token differs from the one in RAY_AUTH_TOKEN / RAY_AUTH_TOKEN_PATH" if token_given else
                "it requires its token: set RAY_AUTH_TOKEN=<token> or RAY_AUTH_TOKEN_PATH=<file> (on the head node, "
                "`ray get-auth-token` prints it)")
        raise ClusterUnavailable(f"the Ray cluster at {gcs} (--address {address}) refused this driver: {what}")
    if refusal:
        raise ClusterUnavailable(f"nothing answers at {gcs} (--address {address}): {refusal}. Is the head node up "
                                 "(ray start --head --port 6379) and is this its GCS host:port?")
    return gcs


def _ask_gcs(gcs: str, with_token: bool) -> str | None:
    """One call to the GCS: None when it answers, 'unauthenticated', or what went wrong."""
    import grpc
    from ray._raylet import AuthenticationTokenLoader

    metadata = ()
    if with_token:
        loader = AuthenticationTokenLoader.instance()
        metadata = tuple(loader.get_token_for_http_header().items()) if loader.has_token() else ()
    with grpc.insecure_channel(gcs) as channel:
        try:
            channel.unary_unary("/ray.rpc.NodeInfoGcsService/GetAllNodeInfo")(b"", timeout=10, metadata=metadata)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNAUTHENTICATED:
                return "unauthenticated"
            if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                return f"{err.code().name.lower()} ({(err.details() or '').splitlines()[0][:200]})"
    return None


def _refresh_auth_config() -> None:
    """Ray reads RAY_AUTH_MODE and the token once per process: make it read the environment again."""
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def prepare_environment(run_dir: Path) -> None:
    """Keep every write inside the run directory and silence Ray's extras."""
    for var, value in ((RAY_USAGE_STATS, "0"), (TUNE_STRICT_METRICS_OFF, "1"), (RAY_CHDIR_TO_TRIAL_DIR, "0"),
                       (TUNE_CHECKPOINT_SYNC_WARNING, "0"), (RAY_AIR_NEW_OUTPUT, "0"), (RAY_DEDUP_LOGS, "0")):
        var.set_default(value)
    # Ctrl-C / SIGTERM are the driver's (sweeps/driver/interrupts.py): Tune's own handler would end the run
    # "gracefully" as if it had finished and print a Tuner.restore hint that is not how users resume.
    TUNE_SIGINT_HANDLER_OFF.set("1")
    # MLflow is the record: no Tune CSV/JSON/TensorBoard files per trial (driver CPU on every result,
    # and Tune reads them all back at the end); Tune's "could not fetch metrics" warning is silenced below.
    TUNE_AUTO_LOGGERS_OFF.set_default("1")
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
    cache = RunLayout(run_dir).cache
    HF_HOME.set_default(cache("huggingface").resolve())
    HF_HUB_OFFLINE.set_default("1")
    HF_HUB_PROGRESS_OFF.set_default("1")
    TRANSFORMERS_VERBOSITY.set_default("error")
    MPLCONFIGDIR.set_default(cache("matplotlib").resolve())
    # torch's compile caches default to $TMPDIR/torchinductor_$USER (made when torch looks there)
    TORCHINDUCTOR_CACHE_DIR.set_default(cache("torchinductor").resolve())
    TRITON_CACHE_DIR.set_default(cache("triton").resolve())
    if not TMPDIR.is_set():  # the driver's own temporary files (a library's tempfile use at import: wandb)
        cache("tmp").mkdir(parents=True, exist_ok=True)
        TMPDIR.set(cache("tmp").resolve())
        tempfile.tempdir = None  # tempfile reads TMPDIR again at its next use


@dataclass(frozen=True)
class Capacity:
    """What the cluster can give a trial: its total CPUs and GPUs (the largest node's, per node)."""

    cpus: float
    gpus: float
    node_cpus: float
    node_gpus: float
    where: str  # 'this machine' or the cluster address, for messages


def local_capacity(num_cpus: int | None) -> Capacity:
    """What a local ``ray.init`` will offer: the given CPU count (default all) and the visible GPUs."""
    cpus = float(num_cpus or os.cpu_count() or 1)
    gpus = float(_visible_gpus())
    return Capacity(cpus, gpus, cpus, gpus, "this machine")


def cluster_capacity(address: str) -> Capacity:
    """Totals and the largest node of a running cluster (after ``init_ray``)."""
    import ray

    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    total = ray.cluster_resources()
    return Capacity(float(total.get("CPU", 0)), float(total.get("GPU", 0)),
                    max((float(n.get("CPU", 0)) for n in nodes), default=0.0),
                    max((float(n.get("GPU", 0)) for n in nodes), default=0.0), f"the Ray cluster at {address}")


def _visible_gpus() -> int:
    """The GPUs a local ``ray.init`` finds: Ray's own count (NVML for NVIDIA), capped by the visible ids
    (``CUDA_VISIBLE_DEVICES``), as ray/_private/resource_and_label_spec.py resolves it; no torch import."""
    try:
        from ray._private import accelerators

        manager = accelerators.get_accelerator_manager_for_resource("GPU")
        count = manager.get_current_node_num_accelerators()
        visible = manager.get_current_process_visible_accelerator_ids()
        return min(count, len(visible)) if visible is not None else count
    except Exception:  # noqa: BLE001 - no accelerator manager or no driver: no GPUs
        return 0


def check_resources(spec, capacity: Capacity, slot: dict[str, float] | None = None) -> None:
    """Refuse a spec whose trials' Tune slots (default: ``resources``) can never be scheduled (Tune
    would wait for them forever). GPUs a backend places itself (verl) are checked by sweeps/driver/placement.py."""
    r = spec.resources
    cpus, gpus = (slot["cpu"], slot["gpu"]) if slot else (r.cpus, r.gpus)
    for key, ask, node_has in (("cpus", cpus, capacity.node_cpus), ("gpus", gpus, capacity.node_gpus)):
        if ask > node_has:
            raise SpecError(f"{spec.path}: resources.{key}: each trial asks for {ask:g} {key[:-1].upper()}"
                            f"{'s' if ask != 1 else ''}, but {capacity.where} has {node_has:g} per node; "
                            f"lower resources.{key} or run on a cluster that has them (--address)")


# Ray puts Unix sockets at <temp>/session_<date>_<time>_<usec>_<pid>/sockets/plasma_store; AF_UNIX
# paths hold at most 107 bytes, so the temp dir itself may have at most this many characters.
MAX_RAY_TEMP_CHARS = 107 - len("/session_2026-01-01_00-00-00_000000_9999999/sockets/plasma_store")


def local_temp_dir(run_dir: Path, temp_dir: Path | None) -> Path:
    """The local Ray temp dir (default ``<run dir>/.ray``), refused up front when too long for Ray."""
    temp = (temp_dir or RunLayout(run_dir).ray_temp).resolve()
    if len(str(temp)) > MAX_RAY_TEMP_CHARS:
        flag = "--ray-temp-dir" if temp_dir else "--ray-temp-dir (the default is <run dir>/.ray)"
        raise SpecError(f"Ray temp dir {temp} is {len(str(temp))} characters; Ray's Unix sockets under it allow at "
                        f"most {MAX_RAY_TEMP_CHARS}: pass a shorter {flag}, e.g. --ray-temp-dir /tmp/ray-$USER")
    return temp


def init_ray(*, address: str | None, run_dir: Path, temp_dir: Path | None, num_cpus: int | None,
             num_gpus: int | None = None, gpu_ids: str | None = None, env_vars: dict[str, str] | None = None) -> None:
    """Join ``address`` or start a local, token-protected Ray whose files stay under ``run_dir``
    (``gpu_ids``: the CUDA_VISIBLE_DEVICES its node starts with, e.g. '0,0,0,0' for 4 logical GPUs
    on GPU 0 when trials are packed; this process's own variable is left as it was). Its processes' TMPDIR is
    ``<temp dir>/tmp`` unless TMPDIR is set (this process's own is left as it was). ``env_vars``: what
    every worker of the job starts with (the trials' ``trial_env``, trainers/backends.py: the numeric mode)."""
    import ray

    if ray.is_initialized():
        return
    if address:
        # Workers of a cluster this driver did not start do not inherit its environment: the backends'
        # switches set where `sweep run` runs (verl: ZOO_VERL_RECORD_PARAMS, VERL_*) reach the trial
        # workers through the job's runtime_env (their `worker_env` hooks, trainers/backends.py).
        from trainers.backends import worker_env

        env_vars = {**worker_env(), **(env_vars or {})}
        ray.init(address=address, log_to_driver=False, **({"runtime_env": {"env_vars": env_vars}} if env_vars else {}))
        return
    temp = local_temp_dir(run_dir, temp_dir)
    temp.mkdir(parents=True, exist_ok=True)
    RAY_TMPDIR.set(temp)  # Ray's address file, instead of /tmp/ray
    RAY_PRESTART_WORKERS.set_default("0")  # read by the raylet it starts
    enable_local_token_auth()
    warn_if_metrics_exporters()
    capacity = local_capacity(num_cpus)  # num_gpus: logical GPUs of a backend's CPU platform (sweeps/driver/placement.py)
    before = CUDA_VISIBLE_DEVICES.raw()
    if gpu_ids is not None:  # the node's processes inherit it from ray.init's subprocesses
        CUDA_VISIBLE_DEVICES.set(gpu_ids)
    node_tmp = None if TMPDIR.is_set() else temp / "tmp"  # its processes' temporary files: under its temp dir
    if node_tmp is not None:  # (short: Python puts Unix sockets there too), not in /tmp; a TMPDIR set is kept
        node_tmp.mkdir(exist_ok=True)
        TMPDIR.set(node_tmp)
    try:
        ray.init(num_cpus=int(capacity.cpus), num_gpus=int(capacity.gpus if num_gpus is None else num_gpus),
                 _temp_dir=str(temp), include_dashboard=False, log_to_driver=False, configure_logging=False,
                 **({"runtime_env": {"env_vars": env_vars}} if env_vars else {}))
    finally:
        if node_tmp is not None:
            TMPDIR.unset()
        if gpu_ids is not None and before is None:
            CUDA_VISIBLE_DEVICES.unset()
        elif gpu_ids is not None:
            CUDA_VISIBLE_DEVICES.set(before)


def warn_if_metrics_exporters() -> None:
    """Ray's dashboard packages (``ray[default]``, which verl requires) make every local cluster also
    serve Prometheus metrics (autoscaler, dashboard, dashboard agent) on all interfaces, and those
    read-only HTTP endpoints do not check the token. scripts/setup.sh removes the packages; say so
    where they are present."""
    import importlib.util

    def importable(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except ImportError:  # a missing parent package
            return False

    # prometheus_client alone already makes the autoscaler monitor serve metrics (port 44217)
    if any(importable(m) for m in ("prometheus_client", "opencensus.stats", "opentelemetry.exporter.prometheus")):
        logging.getLogger(__name__).warning(
            "Ray's dashboard packages are installed (ray[default]): the local Ray cluster will also serve "
            "read-only Prometheus metrics on all interfaces without the token; remove them as scripts/setup.sh "
            "does (pip uninstall prometheus-client opencensus ...) or firewall the machine")


def enable_local_token_auth() -> None:
    """Token authentication for the local cluster, with a random per-driver token in the environment.

    The daemons and workers inherit the environment; nothing is written to ~/.ray. Ray reads the
    mode once per process, so its cached config is refreshed here (what Ray itself does when it
    turns token auth on for a new local cluster).
    """
    if (RAY_AUTH_MODE.get() or "").lower() == "disabled":
        logging.getLogger(__name__).warning(
            "RAY_AUTH_MODE=disabled: the local Ray cluster accepts unauthenticated connections on all interfaces")
        return
    RAY_AUTH_MODE.set("token")
    if not (RAY_AUTH_TOKEN.get() or RAY_AUTH_TOKEN_PATH.get()):
        RAY_AUTH_TOKEN.set(secrets.token_hex(32))
    _refresh_auth_config()  # it caches the token too (a later sweep in this process)
