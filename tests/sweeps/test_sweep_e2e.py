"""End-to-end sweeps on real Ray and a real MLflow sqlite store (built-in trainer, smoke size).

Checked: a small sweep's parent and child runs, every step once with its own time stamp, the numeric mode's
provenance, the per-problem verdicts, the paired report, the grid extended with a seed (only the new trials
run, the finished ones skipped and unchanged) and a changed config refused; the Ray workers of two trials
killed mid-training (each retried from a checkpoint) and then the driver killed mid-sweep (re-run), every
history equal bit for bit to an uninterrupted run of the same spec; trials on the distinct fake-GPU nodes of
a token-protected cluster; an Optuna search with ASHA; ASHA stopping worse trials and a re-run that runs
nothing; a new store that cannot be written and a Ray that cannot start, each failing the sweep with nothing
left RUNNING.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from sweeps.driver.runner import RunOptions, run_sweep
from sweeps.specs.load import SpecError, load_spec
from sweep_testlib import (
                           children, client_for, history_difference, kill_advancing_trial_worker, kill_ray_processes, metric_history,
                           refresh_ray_auth, short_ray_dir, steps_of, store_ready, subprocess_env, sweep_command, wait_for, write_spec,
                           )

pytestmark = [pytest.mark.slow, pytest.mark.lane("local"), pytest.mark.timeout(900)]


@pytest.fixture(autouse=True)
def ray_auth_follows_environment():
    """conftest.py gives each test the environment back as it found it, but Ray caches the auth mode
    and the token per process: without this, a test's local cluster (a fresh token in the
    environment) refuses this process, which still sends the previous test's token."""
    refresh_ray_auth()
    yield


@pytest.fixture
def local_ray():
    import ray

    ray.shutdown()
    yield
    ray.shutdown()


def _run(spec_path: Path, run_dir: Path, ray_dir: Path, **kw):
    return run_sweep(load_spec(spec_path), RunOptions(run_dir=run_dir, show_progress=False, num_cpus=2,
                                                      ray_temp_dir=ray_dir, **kw))


def test_small_sweep_parent_children_histories_and_resume(tmp_path, local_ray):
    # Trials report to the driver only at the start, at checkpoints (every 2 steps) and at the end:
    # every step must still reach MLflow, once, stamped with the time the step itself ended.
    spec = write_spec(tmp_path, "e2e_small", report_interval_s=600)
    run_dir, ray_dir = tmp_path / "runs", short_ray_dir()
    result = _run(spec, run_dir, ray_dir)
    assert set(result.statuses.values()) == {"FINISHED"} and len(result.statuses) == 4

    client = client_for(run_dir)
    exp = client.get_experiment_by_name("e2e_small")
    parents = client.search_runs([exp.experiment_id], "tags.role = 'parent'")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    kids = children(client, "e2e_small")
    assert sorted(kids) == ["dhpo-entropy.s0", "dhpo-entropy.s1", "grpo.s0", "grpo.s1"]
    for tid, run in kids.items():
        assert run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert run.info.status == "FINISHED"
        assert run.data.tags["method"] == ("DHPO-E" if tid.startswith("dhpo") else "GRPO")
        assert run.data.params["trainer.steps"] == "6"
        numerics = {k: v for k, v in run.data.tags.items() if k.startswith("provenance.numerics")}
        assert numerics == {  # the default mode, applied in the trial's own process (its worker's environment)
            "provenance.numerics": "reproducible", "provenance.numerics.aten": "AVX2",
            "provenance.numerics.mkl": "COMPATIBLE", "provenance.numerics.onednn": "off",
            "provenance.numerics.threads": "1",
            "provenance.numerics.env": "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2"}, tid
        for key in ("actor/entropy", "response_length/mean"):
            assert steps_of(client, run.info.run_id, key) == [1, 2, 3, 4, 5, 6], (tid, key)
        stamps = [m.timestamp for m in sorted(client.get_metric_history(run.info.run_id, "actor/entropy"),
                                              key=lambda m: m.step)]
        assert all(a < b for a, b in zip(stamps, stamps[1:])), (tid, stamps)  # not one arrival time per batch
        assert steps_of(client, run.info.run_id, "val/avg/acc") == [0, 2, 4, 6]
    assert "actor/mix_weight" in kids["dhpo-entropy.s0"].data.metrics
    assert_verdicts_recorded(client, kids, steps=(0, 2, 4, 6), benchmarks=("easy", "medium", "hard"), problems=4)
    from dashboards.report.writer import ReportConfig, report_from_mlflow

    report = tmp_path / "report"
    report_from_mlflow("e2e_small", tracking_uri=client.tracking_uri, out_dir=report, log=False, config=ReportConfig(
        formats=["md", "csv"], table=ReportConfig.from_dict({"table": {"baselines": ["GRPO"]}}).table))
    table = (report / "table.md").read_text()
    assert "paired t-test in closed form over the 4 shared problems per benchmark" in table and "n = 2 vs 2 seeds" in table
    assert "detectable with 80% power" in table
    assert "AVG p_holm" in (report / "table.csv").read_text().splitlines()[0]

    # Extending the spec with a seed runs only the new trials: the finished ones are skipped, nothing of them changes.
    # (A re-run with nothing new: test_asha_stops_clearly_worse_trials_and_a_rerun_skips_them.)
    before = {tid: (r.info.run_id, len(client.get_metric_history(r.info.run_id, "actor/entropy"))) for tid, r in kids.items()}
    spec = write_spec(tmp_path, "e2e_small", seeds=(0, 1, 2), report_interval_s=600)
    extended = _run(spec, run_dir, ray_dir)
    assert extended.statuses == {**{tid: "SKIPPED" for tid in kids}, "grpo.s2": "FINISHED", "dhpo-entropy.s2": "FINISHED"}
    after = children(client, "e2e_small")
    assert len(after) == 6
    assert {tid: (after[tid].info.run_id, len(client.get_metric_history(after[tid].info.run_id, "actor/entropy")))
            for tid in kids} == before

    # Same trial ids with another resolved config: refused before anything recorded is touched.
    recorded = {tid: (r.info.run_id, r.info.status) for tid, r in children(client, "e2e_small").items()}
    changed = write_spec(tmp_path, "e2e_small", seeds=(0, 1, 2), steps=8, report_interval_s=600)
    with pytest.raises(SpecError, match="different resolved config"):
        _run(changed, run_dir, ray_dir)
    assert {tid: (r.info.run_id, r.info.status) for tid, r in children(client, "e2e_small").items()} == recorded


def assert_verdicts_recorded(client, kids, steps, benchmarks, problems):
    """Every evaluation of every trial left its per-problem verdicts (verdicts/val/step_<N>.json), and they
    reproduce the logged accuracies exactly (the base's at step 0 included)."""
    from evaluators.verdicts import loads

    for tid, run in kids.items():
        rid = run.info.run_id
        listed = sorted(a.path for a in client.list_artifacts(rid, "verdicts/val"))
        assert listed == [f"verdicts/val/step_{s:06d}.json" for s in steps], (tid, listed)
        for step in steps:
            text = Path(client.download_artifacts(rid, f"verdicts/val/step_{step:06d}.json")).read_text()
            assert len(text.encode()) < 2000, (tid, step, len(text))  # compact: bits, not samples
            verdicts = loads(text)
            assert list(verdicts) == list(benchmarks)
            for b in benchmarks:
                v = verdicts[b]
                assert v.ids == [f"{b}-{i}" for i in range(problems)]
                value = [m.value for m in client.get_metric_history(rid, f"val/{b}/acc") if m.step == step][0]
                assert sum(v.fractions) / len(v.fractions) == value, (tid, step, b)


def assert_same_history_as_uninterrupted(client, kids, ref_client, ref_kids, tids):
    """Each trial's full metric history (every key but wall-clock perf/*, every step, exact floats)
    equals that of the same trial run without interruption."""
    for tid in tids:
        run, ref = kids[tid], ref_kids[tid]
        assert run.data.tags["config_hash"] == ref.data.tags["config_hash"], tid  # the same resolved config
        got, want = metric_history(client, run.info.run_id), metric_history(ref_client, ref.info.run_id)
        assert {"actor/entropy", "actor/grad_norm", "reward/mean", "response_length/mean", "val/avg/acc"} <= set(want)
        assert history_difference(got, want) is None, f"{tid}: {history_difference(got, want)}"


KILLED_WORKERS = ("grpo.s0", "gspo.s0")  # a token-level and a sequence-level ratio objective
KILL_STEPS = 40


def test_killed_workers_and_a_killed_driver_lose_nothing_and_resume_bit_exact(tmp_path, local_ray):
    """One sweep of three trials, one at a time (grpo, gspo, cispo; a checkpoint every 4 steps), run by a
    `sweep run` process: the Ray worker training grpo, then the one training gspo, SIGKILLed mid-training
    (each noticed as a crash and retried from a checkpoint); then, with both finished and cispo midway, the
    driver SIGKILLed and the same sweep run again. Each step reaches MLflow once, the finished trials are
    kept as they were, cispo continues in its own child run, and every trial's history equals the same
    spec run without interruption, bit for bit (model, optimizer, scheduler and RNG states are
    checkpointed; one trainer thread on the CPU)."""
    name = "e2e_kill"
    spec = write_spec(tmp_path, name, seeds=(0,), steps=KILL_STEPS, checkpoint_every=4, max_concurrent=1,
                      variants=[{"algorithm": "grpo"}, {"algorithm": "gspo"}, {"algorithm": "cispo"}])
    run_dir, ray_dir = tmp_path / "runs", short_ray_dir()
    killed = {tid: {} for tid in KILLED_WORKERS}
    for tid in KILLED_WORKERS:
        threading.Thread(target=kill_advancing_trial_worker, args=(run_dir, name, tid, 9, killed[tid], 600),
                         daemon=True).start()
    client = client_for(run_dir)
    log = open(tmp_path / "driver.log", "w")
    proc = subprocess.Popen(sweep_command(spec, run_dir, ray_dir), env=subprocess_env(), start_new_session=True,
                            stdout=log, stderr=subprocess.STDOUT)

    def workers_killed_two_finished_one_midway():
        if proc.poll() is not None:
            raise AssertionError(f"the driver ended ({proc.returncode}) before it could be killed mid-sweep")
        if not all("pid" in k for k in killed.values()) or not store_ready(run_dir):
            return None
        kids = children(client, name)
        done = [r for r in kids.values() if r.info.status == "FINISHED"]
        midway = [r for r in kids.values() if r.info.status == "RUNNING" and r.data.metrics.get("trial/step", 0) >= 9]
        return (done, midway) if len(done) == 2 and midway else None

    try:
        done, midway = wait_for(workers_killed_two_finished_one_midway, timeout=800)
    except (TimeoutError, AssertionError) as err:
        raise AssertionError(f"{err}; killed: {killed}; the driver's log:\n"
                             f"{(tmp_path / 'driver.log').read_text()[-5000:]}") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        kill_ray_processes(ray_dir)
    assert sorted(r.data.tags["trial_id"] for r in done) == sorted(KILLED_WORKERS)
    finished_before = {r.data.tags["trial_id"]: (r.info.run_id, steps_of(client, r.info.run_id, "actor/entropy")) for r in done}
    interrupted = midway[0].data.tags["trial_id"]
    assert interrupted == "cispo.s0"

    # Each killed worker: its trial retried once in the same child run, from a checkpoint, by another worker.
    for tid, kill in killed.items():
        run = children(client, name)[tid]
        assert run.info.run_id == kill["run_id"]
        assert run.data.tags["retries"] == "1", tid  # the kill was noticed as a crash and retried once
        resumed_from = int(run.data.tags["ray.resumed_from"])
        assert resumed_from >= 8 and resumed_from % 4 == 0, (tid, resumed_from)  # from a checkpoint, not from scratch
        assert int(run.data.tags["ray.pid"]) != kill["pid"], tid

    # The same sweep again (in this process): the finished trials skipped, cispo resumed.
    again = _run(spec, run_dir, ray_dir)
    assert again.statuses == {"grpo.s0": "SKIPPED", "gspo.s0": "SKIPPED", "cispo.s0": "FINISHED"}
    kids = children(client, name)
    assert len(kids) == 3 and all(r.info.status == "FINISHED" for r in kids.values())
    for tid, (run_id, steps) in finished_before.items():
        assert kids[tid].info.run_id == run_id
        assert steps_of(client, run_id, "actor/entropy") == steps
    resumed = kids[interrupted]
    assert resumed.info.run_id == midway[0].info.run_id  # same child run continued
    assert int(resumed.data.tags["ray.resumed_from"]) >= 4
    for tid, run in kids.items():  # each step exactly once
        assert steps_of(client, run.info.run_id, "actor/entropy") == list(range(1, KILL_STEPS + 1)), tid
        assert steps_of(client, run.info.run_id, "val/avg/acc") == list(range(0, KILL_STEPS + 1, 2)), tid
    parents = client.search_runs([client.get_experiment_by_name(name).experiment_id], "tags.role = 'parent'")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"

    # The same spec, uninterrupted (another run dir): every trial's history, the retried and the resumed ones
    # included, is the uninterrupted one bit for bit.
    reference_dir = tmp_path / "reference"
    assert set(_run(spec, reference_dir, short_ray_dir()).statuses.values()) == {"FINISHED"}
    ref_client = client_for(reference_dir)
    ref = children(ref_client, name)
    for tid, run in ref.items():
        assert "retries" not in run.data.tags and int(run.data.tags["ray.resumed_from"]) == 0, tid
    assert_same_history_as_uninterrupted(client, kids, ref_client, ref, sorted(kids))


def test_multi_node_fake_gpus_trials_on_distinct_nodes(tmp_path, monkeypatch):
    import ray
    from ray.cluster_utils import Cluster

    ray.shutdown()
    ray_dir = short_ray_dir()
    monkeypatch.setenv("RAY_TMPDIR", str(ray_dir))  # the cluster's address file, instead of /tmp/ray
    # A token-protected cluster, joined as a user joins one (--address, the token in RAY_AUTH_TOKEN).
    # Ray caches the auth mode and token per process: refreshed here, and back by the autouse fixture.
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    refresh_ray_auth()
    (ray_dir / "ray").mkdir()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0, "temp_dir": str(ray_dir)})
    try:
        gpu_nodes = {cluster.add_node(num_cpus=1, num_gpus=1).node_id for _ in range(2)}
        cluster.wait_for_nodes()
        spec = write_spec(tmp_path, "e2e_cluster", seeds=(0, 1), steps=6, variants=[{"algorithm": "grpo"}],
                          resources={"cpus": 1, "gpus": 1})
        run_dir = tmp_path / "runs"
        result = run_sweep(load_spec(spec), RunOptions(run_dir=run_dir, show_progress=False, address=cluster.address))
        assert set(result.statuses.values()) == {"FINISHED"}
        client = client_for(run_dir)
        kids = children(client, "e2e_cluster")
        assert len(kids) == 2
        # Each trial asks for a whole GPU; the head has none and each worker node one: the two trials
        # ran on the two GPU nodes, one each, each seeing exactly one GPU. Tune launches both pending
        # trials at once (max_concurrent 2, both fit), so this holds however fast the trials run.
        nodes = sorted(r.data.tags["ray.node_id"] for r in kids.values())
        assert set(nodes) == gpu_nodes and len(nodes) == 2
        assert all(len(r.data.tags["ray.gpu_ids"].split(",")) == 1 and r.data.tags["ray.gpu_ids"] != ""
                   for r in kids.values())
        for run in kids.values():
            assert steps_of(client, run.info.run_id, "actor/entropy") == [1, 2, 3, 4, 5, 6]
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_optuna_search_with_asha_runs_samples_as_child_runs(tmp_path, local_ray):
    spec = write_spec(tmp_path, "e2e_search", seeds=(0,), steps=4, variants=[{"algorithm": "grpo"}])
    text = spec.read_text() + (
        "search: {method: optuna, metric: val/avg/acc, mode: max, num_samples: 3,\n"
        "         space: {trainer.lr: {type: float, low: 1.0e-5, high: 1.0e-3, log: true},\n"
        "                 algorithm.params.eps_high: {type: choice, values: [0.2, 0.28]}}}\n"
        "scheduler: {type: asha, metric: val/avg/acc, mode: max, grace_period: 2}\n")
    spec.write_text(text)
    run_dir, ray_dir = tmp_path / "runs", short_ray_dir()
    result = _run(spec, run_dir, ray_dir)
    assert len(result.statuses) == 3 and set(result.statuses.values()) == {"FINISHED"}
    client = client_for(run_dir)
    kids = children(client, "e2e_search")
    assert set(kids) == set(result.statuses)
    lrs = {float(r.data.params["trainer.lr"]) for r in kids.values()}
    assert len(lrs) == 3 and all(1e-5 <= lr <= 1e-3 for lr in lrs)  # sampled values reached the trainer config
    for tid, run in kids.items():
        assert tid.startswith("grpo-") and tid.endswith(".s0") and "lr" in tid
        assert run.data.params["algorithm.params.eps_high"] in ("0.2", "0.28")
        assert steps_of(client, run.info.run_id, "val/avg/acc")[0] == 0
    # Running it again: the 3 samples are done, nothing new runs.
    again = _run(spec, run_dir, ray_dir)
    assert again.statuses == {} and len(children(client, "e2e_search")) == 3


def test_asha_stops_clearly_worse_trials_and_a_rerun_skips_them(tmp_path, local_ray):
    # lr 5e-2 / 3e-2 wreck the tiny policy within a couple of steps (reward/mean drops to 0) while
    # lr 1e-4 keeps it near its base (~0.2). (val/avg/acc cannot rank them: the smoke-size base scores
    # 0 on the eval set whatever the lr.) One trial at a time, in grid order, each step reported
    # (report_interval_s 0): ASHA sees every trial at exactly the rung steps 2, 4, 8, and its
    # decisions do not depend on timing. The good trial comes first, so it sets each rung's cutoff.
    steps = 16
    spec = write_spec(tmp_path, "e2e_asha", seeds=(0,), steps=steps, max_concurrent=1, report_interval_s=0,
                      variants=[{"algorithm": "grpo", "trainer.lr": [1.0e-4, 5.0e-2, 3.0e-2]}])
    spec.write_text(spec.read_text() + "scheduler: {type: asha, metric: reward/mean, mode: max, grace_period: 2, "
                                       "reduction_factor: 2}\n")
    good, bad = "grpo-lr0.0001.s0", {"grpo-lr0.05.s0", "grpo-lr0.03.s0"}
    assert [t.trial_id for t in load_spec(spec).trials] == [good, "grpo-lr0.05.s0", "grpo-lr0.03.s0"]  # grid order
    run_dir, ray_dir = tmp_path / "runs", short_ray_dir()
    result = _run(spec, run_dir, ray_dir)
    assert result.statuses == {tid: "FINISHED" for tid in [good, *bad]}  # stopped early is a normal end

    client = client_for(run_dir)
    kids = children(client, "e2e_asha")
    last = {tid: int(r.data.metrics["trial/step"]) for tid, r in kids.items()}
    stopped = {tid for tid, step in last.items() if step < steps}
    assert stopped == bad, last
    for tid, run in kids.items():
        assert run.info.status == "FINISHED", tid
        assert steps_of(client, run.info.run_id, "actor/entropy") == list(range(1, last[tid] + 1)), tid  # no gaps
        if tid in stopped:
            assert run.data.tags.get("stopped_by") == "scheduler", (tid, last[tid], run.data.tags)
            assert last[tid] >= 2  # not before the grace period
        else:
            assert "stopped_by" not in run.data.tags, (tid, run.data.tags)
    good_reward = dict(metric_history(client, kids[good].info.run_id)["reward/mean"])
    for tid in bad:  # where ASHA stopped it, it was below the good trial at the same step
        assert kids[tid].data.metrics["reward/mean"] < good_reward[last[tid]], (tid, last[tid])

    # The same command again: a trial the scheduler stopped is done, like a finished one; nothing runs.
    before = {tid: (r.info.run_id, metric_history(client, r.info.run_id)) for tid, r in kids.items()}
    again = _run(spec, run_dir, ray_dir)
    assert again.statuses == {tid: "SKIPPED" for tid in kids}
    after = children(client, "e2e_asha")
    assert {tid: (r.info.run_id, metric_history(client, r.info.run_id)) for tid, r in after.items()} == before
    assert all(r.info.status == "FINISHED" for r in after.values())


def test_new_store_that_cannot_be_written_fails_the_sweep(tmp_path, local_ray):
    # On a new store, MLflow opens while Tune already starts the trials: its error must still end the run.
    spec = write_spec(tmp_path, "e2e_bad_store", seeds=(0,), variants=[{"algorithm": "grpo"}], steps=40)
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    (run_dir / "mlartifacts").write_text("a file where the artifact store should go")
    with pytest.raises(NotADirectoryError, match="mlartifacts"):
        _run(spec, run_dir, short_ray_dir())


def test_ray_failing_to_start_on_a_new_store_leaves_no_running_runs(tmp_path, local_ray):
    # On a new store, MLflow opens in a thread while Ray starts: a Ray failure must close the parent run.
    spec = write_spec(tmp_path, "e2e_no_ray", seeds=(0,), variants=[{"algorithm": "grpo"}], steps=40)
    run_dir = tmp_path / "runs"
    not_a_dir = short_ray_dir() / "f"  # short: a long Ray temp dir is refused (SpecError) before Ray starts
    not_a_dir.write_text("a file where Ray's temp dir should go")
    with pytest.raises(FileExistsError):
        _run(spec, run_dir, not_a_dir)
    client = client_for(run_dir)
    exp = client.get_experiment_by_name("e2e_no_ray")
    runs = client.search_runs([exp.experiment_id])
    assert [r.data.tags["role"] for r in runs] == ["parent"]
    assert runs[0].info.status == "FAILED"
    assert "FileExistsError" in runs[0].data.tags["error"]
