"""The synthetic backend's injected faults through the real driver (`sweep run`, a local Ray, the sqlite
store): a crash retried from the last checkpoint ends FINISHED with every step once; a divergence ends
FAILED at once with its reason; a crash on every attempt ends FAILED after the retries."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from sweep_testlib import children, client_for, kill_ray_processes, short_cwd, short_ray_dir, steps_of, subprocess_env, sweep_command

pytestmark = pytest.mark.lane("local")  # its slow tests' lane (tests/conftest.py)


GRPO, GSPO, CISPO = "grpo-fail_at_step3.s0", "gspo-diverge_at_step2.s0", "cispo-fail_at_step2-fail_attempts0.s0"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_injected_faults_end_as_a_user_would_expect():
    cwd, ray_dir = short_cwd(), short_ray_dir()
    spec = {"name": "faults",
            "base": {"backend": "synthetic", "synthetic": {"step_seconds": 0.05},
                     "trainer": {"steps": 6, "eval_every": 3, "checkpoint_every": 2}},
            "seeds": [0], "max_concurrent": 3, "max_failures": 1, "resources": {"cpus": 0.5},
            "variants": [{"algorithm": "grpo", "synthetic.fail_at_step": 3},
                         {"algorithm": "gspo", "synthetic.diverge_at_step": 2},
                         {"algorithm": "cispo", "synthetic.fail_at_step": 2, "synthetic.fail_attempts": 0}],
            "report": {"table": {"select_by": "val/avg/acc", "at": "final"}}}
    path = cwd / "faults.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    run_dir = cwd / "runs"
    try:
        done = subprocess.run(sweep_command(path, run_dir, ray_dir), cwd=cwd, env=subprocess_env(), capture_output=True,
                              text=True, timeout=540, stdin=subprocess.DEVNULL)
    finally:
        kill_ray_processes(ray_dir)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-3000:]  # a sweep with failed trials says so in its exit status
    assert "{'FINISHED': 1, 'FAILED': 2}" in out or ("'FINISHED': 1" in out and "'FAILED': 2" in out), out[-3000:]
    client = client_for(run_dir)
    runs = children(client, "faults")
    assert {tid: r.info.status for tid, r in runs.items()} == {GRPO: "FINISHED", GSPO: "FAILED",
                                                               CISPO: "FAILED"}
    trials = run_dir / "faults" / "trials"
    # crashed once at step 3, resumed from the step-2 checkpoint: every step logged once
    assert steps_of(client, runs[GRPO].info.run_id, "trial/step") == [0, 1, 2, 3, 4, 5, 6]
    assert runs[GRPO].data.tags.get("retries") == "1"
    assert (trials / GRPO / "synthetic_failures").read_text() == "1"
    # diverged: no retry, the reason on the run
    assert "diverged at step 2" in runs[GSPO].data.tags["failure_reason"]
    assert not (trials / GSPO / "synthetic_failures").exists()
    assert steps_of(client, runs[GSPO].info.run_id, "trial/step") == [0, 1]
    # crashed on both attempts (max_failures 1): FAILED with the error
    assert (trials / CISPO / "synthetic_failures").read_text() == "2"
    assert "synthetic failure at step 2" in runs[CISPO].data.tags["failure_reason"]
    # Tune keeps each checkpoint's result for the whole sweep: the steps it carried (journaled and in the store
    # above) are not kept there too (sweeps/driver/tune_callback.py on_trial_save); each trial checkpointed every 2 steps
    from ray.tune import ExperimentAnalysis

    attempts = sorted((run_dir / "faults" / "ray_results").glob("attempt-*"))
    kept = [r.metrics.get("steps") for t in ExperimentAnalysis(str(attempts[-1].resolve())).trials
            for r in t.run_metadata.checkpoint_manager.best_checkpoint_results]
    assert len(kept) >= 3 and set(kept) == {"[]"}, kept
