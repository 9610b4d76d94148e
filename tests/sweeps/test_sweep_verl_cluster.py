"""verl trials of one sweep sharing a real two-node Ray cluster with logical GPUs.

A ``ray.cluster_utils.Cluster`` of two nodes (12 CPUs and 1 logical GPU each, token
authentication as sweeps/driver/ray_cluster.py sets it up) stands for a small GPU cluster. ``sweep run
SPEC --address <gcs>`` runs two one-step verl trials on verl's CPU platform at once, one logical GPU each,
each objective with non-default parameters (CISPO with token-mean, DHPO with entropy mixing and branch clipping). ``ZOO_VERL_RECORD_PARAMS`` is set in the ``sweep run`` process only: the Ray
cluster was started without it, so it reaches verl's workers only if the sweep forwards it.

While the sweep runs, this process (joined to the same cluster) samples every 0.5 s the
placement-group table and the named actors of all namespaces. Asserted:

* no oversubscription: the GPU bundles of all live placement groups (reserved or waiting) never
  ask for more than the cluster's 2 logical GPUs, and at most 2 verl trials (namespaces) live;
* concurrency: at some point two verl trials held a GPU placement group each, in two namespaces;
* isolation: never two live actors with the same (namespace, name), although verl's fixed actor
  names (``reward_loop_worker_0``...) were alive in two namespaces at once;
* afterwards: exit 0, every trial FINISHED in MLflow with its step, no placement group left
  CREATED/PENDING, every logical GPU and CPU free again;
* each zoo_* loss ran with exactly its variant's parameters (values, agg, entropy for DHPO-E);
  each trial's main_ppo joined this cluster (its address, a verl-* namespace, no resources declared)
  with ZOO_VERL_RECORD_PARAMS in its job's runtime_env.

The first test (fast, not slow) checks that forwarding without Ray: the sweep driver's job gets
ZOO_VERL_* / VERL_* of its environment, a trial's launch passes them on, credentials never.

The sweep's own time is printed by the fixture.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from sweep_testlib import (
                           REPO, children, client_for, kill_ray_processes, refresh_ray_auth, short_cwd, short_ray_dir, steps_of,
                           subprocess_env, sweep_exe,
                           )

pytestmark = pytest.mark.lane("verl")  # its slow tests' lane (tests/conftest.py)

slow = pytest.mark.slow  # the three cluster tests (one sweep, a module fixture); the first test is fast

SWEEP = "verl_cluster"
NODES, CPUS_PER_NODE, GPUS_PER_NODE = 2, 12, 1
TOTAL_GPUS = NODES * GPUS_PER_NODE
LIVE_PG_STATES = ("PENDING", "PREPARED", "CREATED", "RESCHEDULING")
AGG = "seq-mean-token-mean"  # the zoo's default loss aggregation (one variant sets token-mean)
# variant -> (its trial id, the loss verl must run, every parameter the loss must see, entropy passed)
# Two objectives whose parameters are the most particular (a token-mean aggregation; branch clipping with the
# entropy passed), at once: the cluster's two logical GPUs both held. That every objective's parameters reach its
# loss is checked without Ray by tests/trainers/verl_backend/test_translate.py (the overrides of every objective
# and preset) and tests/trainers/verl_plugin (each zoo_* loss, SSPO's gates included, reading them inside verl).
VARIANTS = [
    ({"algorithm": "cispo", "clip": {"low": 10.0, "high": 0.2}, "agg": "token-mean"},
     "cispo-clip10-0.2-token-mean.s0", "zoo_cispo", {"eps_low": 10.0, "eps_high": 0.2, "agg": "token-mean"}, False),
    ({"algorithm": "dhpo", "mixing": "entropy", "clip_mode": "branch", "eps_high_token": 0.3, "eps_high_seq": 0.32},
     "dhpo-entropy-branch-hit0.3-his0.32.s0", "zoo_dhpo",
     {"mixing": "entropy", "clip_mode": "branch", "entropy_norm": "batch", "eps_low_token": 0.2,
      "eps_high_token": 0.3, "eps_low_seq": 0.2, "eps_high_seq": 0.32, "eps_low": 0.2, "eps_high": 0.28,
      "agg": AGG}, True),
]


def write_cluster_spec(directory: Path) -> Path:
    """One step per trial, tiny sizes (as configs/sweeps/verl_cpu_smoke.yaml), no checkpoints; the
    only validations are verl's before-training one and the final one (eval_size 2, one benchmark)."""
    spec = {
        "name": SWEEP,
        "defaults": [{"data": "arith"}],
        "base": {
            "backend": "verl",
            "trainer": {"steps": 1, "prompts_per_step": 4, "group_size": 2, "updates_per_rollout": 1, "lr": 1.0e-5,
                        "warmup_steps": 0, "max_new_tokens": 16, "eval_every": 1, "eval_mode": "greedy",
                        "eval_k": 1, "checkpoint_every": 0},
            "data": {"train_size": 8, "eval_size": 2, "benchmarks": ["easy"]},
            # absolute: the trial workers' working directory is the cluster's, not the sweep's; a
            # random-init tiny Qwen3 (seconds to build, once): this test is about placement, not learning
            "verl": {"max_prompt_length": 64, "cache_dir": str(REPO / ".cache" / "test_verl"),
                     "tiny_warm_start_steps": 0},
        },
        "seeds": [0],
        "resources": {"cpus": 1, "gpus": 0},
        "max_concurrent": 2,
        "max_failures": 0,  # a crash is a failure here, not hidden by a retry
        "variants": [variant for variant, *_ in VARIANTS],
        "report": {"table": {"select_by": "val/avg/acc", "at": "final"}},
    }
    path = directory / f"{SWEEP}.yaml"
    path.write_text(f"# sweep run {path.name} --address <gcs>\n" + yaml.safe_dump(spec, sort_keys=False))
    return path


@dataclass
class Sample:
    t: float
    gpu_demand: float  # GPUs asked for by the bundles of live placement groups (reserved or waiting)
    gpu_reserved: float  # GPUs of CREATED placement groups
    gpu_groups: int  # CREATED placement groups holding a GPU bundle
    namespaces: frozenset  # verl trial namespaces with a live named actor
    duplicates: list  # (namespace, name) held by more than one live actor
    shared_names: frozenset  # actor names alive in two or more verl namespaces at once


@dataclass
class Watch:
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seen: set = field(default_factory=set)  # every (namespace, name) of a named actor seen


def sample_cluster(watch: Watch) -> None:
    import ray

    pgs = ray.util.placement_group_table()
    named = ray.util.list_named_actors(all_namespaces=True)
    demand = reserved = 0.0
    groups = 0
    for pg in pgs.values():
        gpus = sum(float(b.get("GPU", 0)) for b in pg["bundles"].values())
        if pg["state"] in LIVE_PG_STATES:
            demand += gpus
        if pg["state"] == "CREATED":
            reserved += gpus
            groups += gpus > 0
    keys = [(a["namespace"], a["name"]) for a in named]
    watch.seen.update(keys)
    verl = [(ns, name) for ns, name in keys if ns.startswith("verl-")]
    by_name = collections.defaultdict(set)
    for ns, name in verl:
        by_name[name].add(ns)
    watch.samples.append(Sample(
        time.time(), demand, reserved, groups, frozenset(ns for ns, _ in verl),
        [k for k, n in collections.Counter(keys).items() if n > 1],
        frozenset(name for name, spaces in by_name.items() if len(spaces) > 1)))


def watch_cluster(watch: Watch, stop: threading.Event) -> None:
    while not stop.wait(0.5):
        try:
            sample_cluster(watch)
        except Exception as err:  # noqa: BLE001 - a GCS hiccup: keep sampling, report at the end
            watch.errors.append(repr(err))


@dataclass
class SweepOutcome:
    returncode: int
    log: str
    seconds: float
    run_dir: Path
    address: str
    watch: Watch
    record: Path
    records: list[dict]
    after: dict  # cluster state once the sweep ended


def _cluster_released(total_cpus: float):
    import ray

    live = [pg for pg in ray.util.placement_group_table().values() if pg["state"] in LIVE_PG_STATES]
    free = ray.available_resources()
    named = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"].startswith("verl-")]
    state = {"live_pgs": live, "free": free, "verl_actors": named}
    done = not live and not named and free.get("GPU", 0) == TOTAL_GPUS and free.get("CPU", 0) == total_cpus
    return state if done else None


def test_sweep_environment_reaches_trial_workers_and_verl_jobs_without_credentials(monkeypatch):
    """Fast: the forwarding the cluster tests rely on. Workers of a cluster that `sweep run` joins do
    not inherit its environment: the driver hands ZOO_VERL_* / VERL_* to its trial workers in the
    job's runtime_env, and each trial's launch puts them (under its own variables) into the verl job's."""
    import ray

    from sweeps.driver import ray_cluster
    from trainers.config import TrialConfig
    from trainers.verl_backend.config import VerlConfig
    from trainers.verl_backend.launch import Inputs, build_launch

    for key in [k for k in os.environ if k.startswith(("ZOO_VERL_", "VERL_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ZOO_VERL_RECORD_PARAMS", "/x/params.jsonl")
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", "/elsewhere.jsonl")  # the launch's own value wins
    monkeypatch.setenv("HF_TOKEN", "hf_secret")  # a credential: never forwarded, never in command.sh
    seen = {}
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: seen.update(kw))
    ray_cluster.init_ray(address="10.0.0.1:6379", run_dir=Path("runs"), temp_dir=None, num_cpus=None)
    assert seen["runtime_env"] == {"env_vars": {"ZOO_VERL_RECORD_PARAMS": "/x/params.jsonl",
                                                "VERL_FILE_LOGGER_PATH": "/elsewhere.jsonl"}}

    cfg = TrialConfig()
    cfg.backend, cfg.verl, cfg.model.path = "verl", VerlConfig(device="cuda"), "/ckpt/model"
    launch = build_launch(cfg, Inputs("/ckpt/model", ["/d/train.parquet"], ["/d/val.parquet"]),
                          checkpoint_dir=Path("/c"), resume_path=None, metrics_file=Path("/m/metrics.jsonl"),
                          namespace="verl-x", ray_address="10.0.0.1:6379", experiment="grpo.s0")
    env_vars = {a.split("=", 1)[0].rsplit(".", 1)[1]: a.split("=", 1)[1] for a in launch.argv
                if a.startswith("+ray_kwargs.ray_init.runtime_env.env_vars.")}
    assert env_vars["ZOO_VERL_RECORD_PARAMS"] == "/x/params.jsonl"
    assert env_vars["VERL_FILE_LOGGER_PATH"] == "/m/metrics.jsonl"
    assert "HF_TOKEN" not in env_vars and "hf_secret" not in launch.shell()


@pytest.fixture(scope="module")
def verl_cluster_sweep(tmp_path_factory):
    import ray
    from ray.cluster_utils import Cluster

    from sweeps.driver.ray_cluster import enable_local_token_auth

    saved_env = dict(os.environ)
    tmp = tmp_path_factory.mktemp("verl_cluster")
    ray_dir, cwd = short_ray_dir(), short_cwd()  # removed below (module scope: not by conftest's fixture)
    record = tmp / "params.jsonl"
    cluster = None
    ray.shutdown()
    try:
        os.environ.pop("ZOO_VERL_RECORD_PARAMS", None)  # the cluster's processes must not have it
        os.environ["RAY_TMPDIR"] = str(ray_dir)  # Ray's address file (<RAY_TMPDIR>/ray/), instead of /tmp/ray
        (ray_dir / "ray").mkdir()
        enable_local_token_auth()  # RAY_AUTH_MODE=token + a fresh RAY_AUTH_TOKEN, inherited by the daemons
        node = {"num_cpus": CPUS_PER_NODE, "num_gpus": GPUS_PER_NODE, "object_store_memory": 200 * 1024**2,
                "temp_dir": str(ray_dir), "include_dashboard": False}
        cluster = Cluster(initialize_head=True, head_node_args=node)
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="cluster-watch", log_to_driver=False)
        assert ray.cluster_resources().get("GPU") == TOTAL_GPUS
        total_cpus = ray.cluster_resources()["CPU"]

        spec = write_cluster_spec(tmp)
        env = {**subprocess_env(), "ZOO_VERL_RECORD_PARAMS": str(record), "RAY_TMPDIR": str(ray_dir),
               "RAY_AUTH_MODE": os.environ["RAY_AUTH_MODE"], "RAY_AUTH_TOKEN": os.environ["RAY_AUTH_TOKEN"],
               "RAY_USAGE_STATS_ENABLED": "0"}
        watch, stop = Watch(), threading.Event()
        watcher = threading.Thread(target=watch_cluster, args=(watch, stop), daemon=True)
        watcher.start()
        started = time.monotonic()
        try:
            proc = subprocess.run([sweep_exe(), "run", str(spec), "--address", cluster.address, "--no-report",
                                   "--no-progress"], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200,
                                  stdin=subprocess.DEVNULL)
        finally:
            seconds = time.monotonic() - started
            stop.set()
            watcher.join(timeout=30)
        print(f"\nsweep run --address ({len(VARIANTS)} verl trials at once): {seconds:.0f}s")
        after = None
        deadline = time.monotonic() + 60
        while after is None:  # verl's groups go when its driver's job ends: allow the GCS a moment
            after = _cluster_released(total_cpus)
            if after is None and time.monotonic() > deadline:
                after = {"not released": {"live_pgs": [pg for pg in ray.util.placement_group_table().values()
                                                       if pg["state"] in LIVE_PG_STATES],
                                          "free": ray.available_resources()}}
            elif after is None:
                time.sleep(1)
        records = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
        yield SweepOutcome(proc.returncode, proc.stdout[-6000:] + proc.stderr[-6000:], seconds, cwd / "runs",
                           cluster.address, watch, record, records, after)
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        os.environ.clear()
        os.environ.update(saved_env)
        refresh_ray_auth()
        for path in (ray_dir, cwd):
            kill_ray_processes(path)
            shutil.rmtree(path, ignore_errors=True)


def ray_init_overrides(command_sh: Path) -> dict[str, str]:
    """The ``+ray_kwargs.ray_init.*`` overrides of a trial's main_ppo command (Hydra quotes removed)."""
    import shlex

    out = {}
    for word in shlex.split(command_sh.read_text()):
        key, _, value = word.partition("=")
        if key.lstrip("+").startswith("ray_kwargs.ray_init."):
            out[key.lstrip("+")[len("ray_kwargs.ray_init."):]] = value.strip("'")
    return out


@slow
@pytest.mark.timeout(1500)
def test_trials_share_the_cluster_two_at_a_time_without_oversubscription_or_name_collisions(verl_cluster_sweep):
    out = verl_cluster_sweep
    assert out.returncode == 0, out.log
    samples = out.watch.samples
    assert len(samples) > 100 and len(out.watch.errors) < len(samples) // 10, (len(samples), out.watch.errors[:5])

    # never more GPUs asked for (reserved or waiting) than the cluster's 2 logical ones, never > 2 trials
    assert max(s.gpu_demand for s in samples) <= TOTAL_GPUS, max(samples, key=lambda s: s.gpu_demand)
    assert max(s.gpu_reserved for s in samples) <= TOTAL_GPUS
    assert max(len(s.namespaces) for s in samples) <= 2, max(samples, key=lambda s: len(s.namespaces))
    # two verl trials really ran side by side: two GPU groups and two trial namespaces at once
    both = [s for s in samples if s.gpu_groups == 2 and len(s.namespaces) == 2]
    assert both, f"never two verl trials at once (max GPU groups {max(s.gpu_groups for s in samples)}, " \
                 f"max namespaces {max(len(s.namespaces) for s in samples)})"
    # isolation: no (namespace, name) twice, although the same fixed names lived in two namespaces at once
    assert not [s.duplicates for s in samples if s.duplicates]
    shared = frozenset().union(*(s.shared_names for s in samples))
    assert any(name.startswith("reward_loop_worker_") for name in shared), (shared, sorted(out.watch.seen))
    print(f"\n{len(samples)} samples; two verl trials at once in {len(both)}; max GPUs asked for "
          f"{max(s.gpu_demand for s in samples):g}; names alive in two namespaces at once: {sorted(shared)}")


@slow
@pytest.mark.timeout(1500)
def test_every_trial_finished_and_the_cluster_is_released(verl_cluster_sweep):
    out = verl_cluster_sweep
    assert out.returncode == 0, out.log
    kids = children(client_for(out.run_dir), SWEEP)
    assert sorted(kids) == sorted(trial_id for _, trial_id, *_ in VARIANTS)
    for trial_id, run in kids.items():
        assert run.info.status == "FINISHED", (trial_id, run.info.status, run.data.tags.get("failure_reason"))
        assert run.data.tags["backend"] == "verl"
        assert steps_of(client_for(out.run_dir), run.info.run_id, "actor/entropy") == [1], trial_id
        # each trial's verl driver joined this cluster under its own namespace, declaring no resources
        ray_init = ray_init_overrides(out.run_dir / SWEEP / "trials" / trial_id / "attempt-1" / "command.sh")
        assert ray_init["address"] == out.address, (trial_id, ray_init)
        assert ray_init["namespace"].startswith("verl-") and not {"num_cpus", "num_gpus"} & set(ray_init), ray_init
        # ZOO_VERL_RECORD_PARAMS was set in the `sweep run` process only: forwarded to verl's workers
        assert ray_init.get("runtime_env.env_vars.ZOO_VERL_RECORD_PARAMS") == str(out.record), ray_init
    assert "not released" not in out.after, out.after
    assert not out.after["live_pgs"] and not out.after["verl_actors"]
    assert out.after["free"]["GPU"] == TOTAL_GPUS


@slow
@pytest.mark.timeout(1500)
def test_each_loss_ran_with_exactly_its_variants_parameters(verl_cluster_sweep):
    out = verl_cluster_sweep
    assert out.returncode == 0, out.log
    assert out.records, "ZOO_VERL_RECORD_PARAMS of `sweep run` did not reach verl's workers (no record written)"
    got = sorted((r["loss"], json.dumps(r["params"], sort_keys=True), r["entropy"]) for r in out.records)
    want = sorted((loss, json.dumps(params, sort_keys=True), entropy) for _, _, loss, params, entropy in VARIANTS)
    assert got == want, "\n".join(map(str, got))
    assert len({r["pid"] for r in out.records}) == len(VARIANTS)  # one actor process per trial
    assert {r["dp_group_size"] for r in out.records} == {1}  # one logical GPU per trial
