"""Fast tests of the sweep driver's parts, no Ray cluster: what Tune pickles, signals, atomic step
logging on a real sqlite store, the one-writer lock, resource and temp-dir checks (the TMPDIR of the processes the
product starts: a local Ray node's, `sweep ui`'s server's), the live table.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from rich.console import Console

from sweeps.driver.tune_callback import DriverState, MlflowLogger
from contract.env import RAY_PRESTART_WORKERS
from contract.errors import RESUME_HINT
from sweeps.driver.interrupts import InterruptGuard, SweepInterrupted
from sweeps.driver.progress import LiveProgress
from sweeps.driver.ray_cluster import MAX_RAY_TEMP_CHARS, Capacity, check_resources, local_temp_dir
from sweeps.driver.runner import _param_space
from contract.run_layout import checkpoint_candidates
from sweeps.specs.load import SpecError, load_spec
from sweeps.tracking.lock import SweepAlreadyRunning, SweepLock
from sweeps.driver.trial import STEP_FILE, run_trial, trial_payload
from tracking_store.uri import default_uri as default_uri
from sweeps.tracking.sweep_runs import SweepTracker
from sweep_testlib import REPO, kill_ray_processes, short_ray_dir, write_spec


@pytest.fixture
def spec(tmp_path):
    return load_spec(write_spec(tmp_path, "driver_unit", seeds=(0, 1)))


@pytest.mark.slow
def test_everything_tune_serialises_pickles_with_live_progress_and_tracker(spec, tmp_path):
    # The README's main command once crashed here: the callback carried a rich Live (a lock) into
    # what Tune pickles. Pickle exactly what run_sweep hands Tune, with the driver state in use.
    from ray import cloudpickle

    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    state = DriverState(by_id={t.trial_id: t for t in spec.trials},
                        progress=LiveProgress(spec.name, spec.trials, {}, console=Console(file=io.StringIO())))
    state.tracker = SweepTracker(spec, default_uri(run_dir), run_dir)
    logger = MlflowLogger(state)
    payloads = [trial_payload(t, [], tmp_path, 1.0, 60.0) for t in spec.trials]
    with state.progress:  # the Live table is running, as during tuner.fit()
        for obj in (logger, run_trial, _param_space(spec, payloads), payloads):
            cloudpickle.loads(cloudpickle.dumps(obj))
    copy = cloudpickle.loads(cloudpickle.dumps(logger))
    assert copy.state is None and logger.state is state  # the copy is inert; the driver's logger is intact
    copy.on_trial_start(0, [], object())  # a restored copy never touches anything
    state.tracker.end_sweep("FINISHED")


def test_signal_inside_a_critical_section_waits_for_its_end():
    before = signal.getsignal(signal.SIGINT)  # a job started in the background with & has SIGINT ignored
    guard = InterruptGuard()
    done = []
    with guard.installed():
        with pytest.raises(SweepInterrupted) as caught:
            with guard.critical():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # the handler ran already: it must not have raised here
                done.append("write finished")
    assert done == ["write finished"]
    assert caught.value.signum == signal.SIGTERM and caught.value.exit_code == 143
    assert RESUME_HINT in str(caught.value)
    with guard.installed():
        with pytest.raises(SweepInterrupted) as caught:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    assert caught.value.exit_code == 130
    assert signal.getsignal(signal.SIGINT) is before  # restored, whatever it was


class _DiesOnSecondBatch(MlflowClient):
    """A driver killed between two log_batch calls of one flush (the second never happens)."""

    calls = 0

    def log_batch(self, run_id, metrics=(), **kw):
        if metrics:
            type(self).calls += 1
            if type(self).calls == 2:
                raise KeyboardInterrupt("driver killed")
        return super().log_batch(run_id, metrics=metrics, **kw)


@pytest.mark.slow
def test_a_flush_interrupted_between_batches_leaves_whole_steps_and_resume_logs_each_key_once(spec, tmp_path):
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    uri = default_uri(run_dir)
    trial = spec.trials[0]
    tracker = SweepTracker(spec, uri, run_dir)
    _DiesOnSecondBatch.calls = 0
    tracker.client.__class__ = _DiesOnSecondBatch
    tracker.start_trial(trial)
    tracker.last_flush[trial.trial_id] = float("inf")  # no timed flush: one flush of all 60 steps below
    keys = [f"actor/k{i}" for i in range(37)]  # 38 metrics per step: 1000 is not a multiple of 38
    values = {step: {k: step + i / 100 for i, k in enumerate(keys)} for step in range(1, 61)}
    with pytest.raises(KeyboardInterrupt):
        for step in range(1, 61):
            tracker.log_result(trial.trial_id, step, values[step], timestamp=1000.0 + step)
        tracker.flush()
    # A new driver: it continues after the last complete step and replays the rest (as a resumed trial does).
    again = SweepTracker(spec, uri, run_dir)
    last = again.last_step(trial.trial_id)
    assert 0 < last < 60 and last == 1000 // 38  # the first batch held 26 whole steps
    for step in range(1, 61):
        again.log_result(trial.trial_id, step, values[step], timestamp=2000.0 + step)
    again.flush()
    from tracking_store.client import open_client
    client = open_client(uri)
    run_id = again.children[trial.trial_id]["run_id"]
    for key in ("actor/k0", "actor/k36", "trial/step"):
        steps = [m.step for m in client.get_metric_history(run_id, key)]
        assert sorted(steps) == list(range(1, 61)), key  # each step exactly once
    k5 = {m.step: m.value for m in client.get_metric_history(run_id, "actor/k5")}
    assert k5 == {step: values[step]["actor/k5"] for step in range(1, 61)}


def test_second_driver_of_the_same_sweep_is_refused_with_the_owner(tmp_path):
    path = tmp_path / ".locks" / "s.lock"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, %r)\n"
        "from sweeps.tracking.lock import SweepLock\n"
        "with SweepLock(__import__('pathlib').Path(%r), 's'):\n"
        "    print('held', flush=True); time.sleep(60)\n") % (str(REPO), str(path))],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SweepAlreadyRunning, match=rf"already running .*pid {holder.pid} on "):
            with SweepLock(path, "s"):
                pass
        with SweepLock(tmp_path / ".locks" / "other.lock", "other"):  # another sweep is not blocked
            pass
    finally:
        holder.kill()
        holder.wait()
    # The holder was killed: its lock is stale, the kernel released it, and it is taken over.
    with SweepLock(path, "s") as lock:
        assert f'"pid": {os.getpid()}' in lock.owner_file.read_text()
    assert not lock.owner_file.exists()


@pytest.mark.slow
def test_a_reader_opens_a_store_only_once_its_creator_is_done(tmp_path):
    """`sweep status/ui/eval` open the sqlite store under the lock a driver holds while it creates the
    file: opened half-way, MLflow would run its schema migration a second time at once."""
    import threading

    from tracking_store.client import open_client, store_lock

    uri = default_uri(tmp_path)
    opened = []
    with store_lock(uri):  # a driver creating the store
        reader = threading.Thread(target=lambda: opened.append(open_client(uri)))
        reader.start()
        reader.join(timeout=1.5)
        assert reader.is_alive() and not opened and not (tmp_path / "mlflow.db").exists()
    reader.join(timeout=60)
    assert opened and opened[0].get_experiment_by_name("Default") is not None  # a complete store


def test_resources_no_node_has_are_refused_naming_the_key(spec):
    laptop = Capacity(cpus=2, gpus=0, node_cpus=2, node_gpus=0, where="this machine")
    check_resources(spec, laptop)  # 1 CPU, 0 GPU fits
    spec.resources.gpus = 1
    with pytest.raises(SpecError, match=r"resources\.gpus: each trial asks for 1 GPU, but this machine has 0"):
        check_resources(spec, laptop)
    spec.resources.gpus, spec.resources.cpus = 0, 3
    with pytest.raises(SpecError, match=r"resources\.cpus: each trial asks for 3 CPUs"):
        check_resources(spec, laptop)
    # On a cluster the largest node counts, not the total: 2 nodes of 1 GPU cannot host a 2-GPU trial.
    spec.resources.cpus, spec.resources.gpus = 1, 2
    with pytest.raises(SpecError, match="has 1 per node"):
        check_resources(spec, Capacity(cpus=8, gpus=2, node_cpus=4, node_gpus=1, where="the Ray cluster at x"))


CAPACITY_THEN_RAY = """
import json, sys
from pathlib import Path
import psutil, ray
from sweeps.driver.ray_cluster import init_ray, local_capacity
gpus = local_capacity(None).gpus
torch_imported = "torch" in sys.modules
init_ray(address=None, run_dir=Path(sys.argv[1]) / "runs", temp_dir=Path(sys.argv[1]), num_cpus=1)
try:
    raylet = next(p for p in psutil.process_iter(["name", "cmdline"])
                  if p.info["name"] == "raylet" and sys.argv[1] in " ".join(p.info["cmdline"] or []))
    prestart = raylet.environ().get(sys.argv[2])
    print(json.dumps([gpus, ray.cluster_resources().get("GPU", 0.0), torch_imported, prestart]))
finally:
    ray.shutdown()
"""


@pytest.mark.slow  # starts a local Ray
@pytest.mark.parametrize("visible", [None, ""], ids=["all-devices", "no-visible-device"])
def test_local_capacity_counts_the_gpus_ray_init_finds_without_importing_torch(visible):
    """The driver sizes the local cluster before ``ray.init`` (sweeps/driver/runner.py): the GPU count must be
    Ray's own, honouring CUDA_VISIBLE_DEVICES, and must not cost a torch import in the driver. The local node's
    raylet starts no idle workers for the driver (each trial starts its own: RAY_PRESTART_WORKERS)."""
    ray_dir = short_ray_dir()
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", RAY_PRESTART_WORKERS.name)}
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    try:
        done = subprocess.run([sys.executable, "-c", CAPACITY_THEN_RAY, str(ray_dir), RAY_PRESTART_WORKERS.name], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        kill_ray_processes(ray_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    ours, rays, torch_imported, prestart = json.loads(done.stdout.splitlines()[-1])
    assert ours == rays
    assert not torch_imported
    assert prestart == "0"


def test_ray_temp_dir_too_long_for_unix_sockets_is_a_clear_error(tmp_path):
    short = Path("/r") / "x"
    assert local_temp_dir(tmp_path, short) == short
    long_dir = Path("/" + "d" * MAX_RAY_TEMP_CHARS)
    with pytest.raises(SpecError, match="--ray-temp-dir"):
        local_temp_dir(tmp_path, long_dir)


@pytest.mark.parametrize("tmpdir_set", [False, True])
def test_a_local_rays_processes_keep_their_temporary_files_in_its_temp_dir(tmp_path, monkeypatch, tmpdir_set):
    """The local node's processes (ray.init's subprocesses, the trial workers) start with TMPDIR under the Ray
    temp dir, not /tmp, unless TMPDIR is set (kept); this process's own TMPDIR is as it was afterwards."""
    import ray

    from sweeps.driver import ray_cluster

    seen = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: seen.append(os.environ.get("TMPDIR")))
    monkeypatch.setattr(ray_cluster, "enable_local_token_auth", lambda: None)
    monkeypatch.setattr(ray_cluster, "warn_if_metrics_exporters", lambda: None)
    if tmpdir_set:
        monkeypatch.setenv("TMPDIR", str(tmp_path))
    else:
        monkeypatch.delenv("TMPDIR", raising=False)
    temp = short_ray_dir()
    ray_cluster.init_ray(address=None, run_dir=tmp_path, temp_dir=temp, num_cpus=1)
    assert seen == [str(tmp_path) if tmpdir_set else str(temp.resolve() / "tmp")]
    assert os.environ.get("TMPDIR") == (str(tmp_path) if tmpdir_set else None)
    assert tmpdir_set or (temp / "tmp").is_dir()


@pytest.mark.parametrize("tmpdir_set", [False, True])
def test_the_ui_server_keeps_its_temporary_files_in_the_run_dir(tmp_path, monkeypatch, tmpdir_set):
    """The mlflow server sweep ui starts gets TMPDIR=<run dir>/.cache/tmp (MLflow's store-init lock, uploads),
    not /tmp, unless TMPDIR is set (kept)."""
    from sweeps.ui import server as ui_server

    seen = {}

    class Started(Exception):
        pass

    def popen(cmd, env, **kwargs):
        seen.update(env)
        raise Started

    monkeypatch.setattr(ui_server.subprocess, "Popen", popen)
    if tmpdir_set:
        monkeypatch.setenv("TMPDIR", str(tmp_path))
    else:
        monkeypatch.delenv("TMPDIR", raising=False)
    with pytest.raises(Started):
        ui_server.serve(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}", tmp_path / "runs", 5999, {}, False)
    own = (tmp_path / "runs" / ".cache" / "tmp").resolve()
    assert seen["TMPDIR"] == (str(tmp_path) if tmpdir_set else str(own))
    assert own.is_dir() is not tmpdir_set


def test_checkpoint_candidates_newest_first_and_not_past_the_recorded_step(tmp_path):
    tmp_path = tmp_path / "ray_results"  # a sweep's ray_results (contract/run_layout.py)
    for attempt, steps in (("attempt-1", (4, 8)), ("attempt-2", (12, 16))):
        for step in steps:
            d = tmp_path / attempt / "t.s0" / f"checkpoint_{step:06d}"
            d.mkdir(parents=True)
            (d / STEP_FILE).write_text(str(step))
    bad = tmp_path / "attempt-2" / "t.s0" / "checkpoint_999999"
    bad.mkdir()
    (bad / STEP_FILE).write_text("not a step")
    found = checkpoint_candidates(tmp_path, "t.s0", max_step=13)
    assert [int((p / STEP_FILE).read_text()) for p in found] == [12, 8, 4]
    assert checkpoint_candidates(tmp_path, "t.s0", max_step=3) == []
    assert checkpoint_candidates(tmp_path, "other.s0", max_step=100) == []


def test_live_table_shows_states_and_markup_like_ids_verbatim(spec):
    out = io.StringIO()
    t = spec.trials[0]
    t.trial_id = "grpo-[/]bad[red].s0"  # rich markup in a name must be shown, not parsed
    progress = LiveProgress(spec.name, [t, spec.trials[1]], {spec.trials[1].trial_id: "SKIPPED"},
                            console=Console(file=out, width=200))
    with progress:
        progress.update(t.trial_id, state="RUNNING", step=3, metrics={"reward/mean": 0.25})
        progress.update(t.trial_id, state="KILLED")
    text = out.getvalue()
    assert "grpo-[/]bad[red].s0" in text and "KILLED" in text and "SKIPPED" in text
    assert "0.250" in text and "3/" in text


def test_startup_notes_show_under_the_live_table_or_as_lines_until_steps_arrive(spec):
    t = spec.trials[0]
    piped = io.StringIO()
    progress = LiveProgress(spec.name, spec.trials, {}, console=Console(file=piped, width=120))
    progress.note(t.trial_id, "warm start 30/150: nll=1.2")
    progress.note(t.trial_id, "warm start 30/150: nll=1.2")  # unchanged: not repeated
    assert piped.getvalue().count(f"[{t.trial_id}] warm start 30/150") == 1

    terminal = io.StringIO()
    progress = LiveProgress(spec.name, spec.trials, {}, console=Console(file=terminal, width=120, force_terminal=True))
    progress.update(t.trial_id, state="RUNNING")
    progress.note(t.trial_id, "building base policy abc (150 warm-start steps) ...")
    rendered = io.StringIO()
    Console(file=rendered, width=120).print(progress.view())
    assert f"{t.trial_id}: building base policy abc (150 warm-start steps) ..." in rendered.getvalue()
    progress.update(t.trial_id, state="RUNNING", step=0, metrics={"val/avg/acc": 0.1})  # its first step
    rendered = io.StringIO()
    Console(file=rendered, width=120).print(progress.view())
    assert "building base policy" not in rendered.getvalue()


def test_a_trial_leaves_its_lines_before_the_first_step_for_the_driver(tmp_path):
    from contract.run_layout import SweepLayout
    from sweeps.driver.trial import _log

    (tmp_path / "scratch").mkdir()  # a sweep's scratch (contract/run_layout.py)
    note, startup = SweepLayout.of_scratch(tmp_path / "scratch").note("grpo.s0"), []
    for i in range(25):
        _log(f"warm start {i}/25", startup, started=False, note=note)
    assert note.read_text() == "warm start 24/25" and len(startup) == 20  # the tag keeps the first 20
    _log("step line", startup, started=True, note=note)  # after the first step: the hot path writes nothing
    assert note.read_text() == "warm start 24/25" and len(startup) == 20


def test_a_reported_key_outside_the_contract_is_dropped_with_one_warning(caplog):
    from sweeps.driver.tune_callback import logged_metrics

    dropped: set[str] = set()
    step = {"actor/entropy": 0.5, "val/easy/acc": 1, "custom/thing": 2.0, "reward/mean": "n/a"}
    with caplog.at_level("WARNING", logger="sweeps.driver.tune_callback"):
        assert logged_metrics(step, dropped) == {"actor/entropy": 0.5, "val/easy/acc": 1}
        assert logged_metrics(step, dropped) == {"actor/entropy": 0.5, "val/easy/acc": 1}
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2 and dropped == {"custom/thing", "reward/mean"}  # each key once, not per step
    assert any("'custom/thing'" in w and "actor/" in w for w in warned)


@pytest.mark.parametrize("tmpdir_set", [False, True])
def test_the_driver_keeps_its_own_temporary_files_in_the_run_dir(tmp_path, monkeypatch, tmpdir_set):
    """`sweep run`'s own process (a library making temporary files at import: wandb) writes under
    <run dir>/.cache/tmp, not /tmp, unless TMPDIR is set (kept)."""
    import tempfile

    from sweeps.driver.ray_cluster import prepare_environment

    if tmpdir_set:
        monkeypatch.setenv("TMPDIR", str(tmp_path))
    else:
        monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)
    prepare_environment(tmp_path / "runs")
    where = Path(tempfile.mkdtemp())
    expected = tmp_path if tmpdir_set else (tmp_path / "runs" / ".cache" / "tmp").resolve()
    assert where.parent == expected
