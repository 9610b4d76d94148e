"""Where a sweep's trials run: Tune slots, concurrency and local logical resources (sweeps/driver/placement.py and
the verl backend's placement hook, trainers/verl_backend/placement.py)."""

from __future__ import annotations

import pytest

from sweeps.driver.placement import plan
from sweeps.driver.ray_cluster import Capacity
from sweeps.specs.load import SpecError, load_spec
from trainers.verl_backend.placement import VERL_CPU_LOGICAL_CPUS
from sweep_testlib import placement_spec_file

LAPTOP = Capacity(cpus=2, gpus=0, node_cpus=2, node_gpus=0, where="this machine")
CLUSTER = Capacity(cpus=64, gpus=16, node_cpus=32, node_gpus=8, where="the Ray cluster at x")


def _spec(tmp_path, backend="verl", gpus=0, max_concurrent=3, nnodes=1, per_node=1, extra=""):
    return load_spec(placement_spec_file(tmp_path, backend=backend, gpus=gpus, max_concurrent=max_concurrent,
                                         nnodes=nnodes, per_node=per_node, extra=extra))


def test_local_backend_trials_keep_their_slot_and_concurrency(tmp_path):
    p = plan(_spec(tmp_path, backend="local", gpus=0), LAPTOP, local=True)
    assert p.tune_resources == {"cpu": 1, "gpu": 0} and p.max_concurrent == 3 and p.local_gpus is None


def test_verl_on_cpu_locally_declares_logical_gpus_and_cpus_for_each_concurrent_trial(tmp_path):
    spec = _spec(tmp_path, gpus=0, max_concurrent=2)
    assert all(t.config.verl.device == "cpu" for t in spec.trials)  # 0 GPUs: the CPU platform
    p = plan(spec, LAPTOP, local=True)
    assert p.tune_resources == {"cpu": 1, "gpu": 0}  # verl places its own (logical) GPUs
    assert p.max_concurrent == 2 and p.gpus_per_trial == 1
    assert p.local_gpus == 2 and p.local_cpus == 2 + 2 * VERL_CPU_LOGICAL_CPUS


def test_verl_on_gpus_runs_as_many_trials_as_the_cluster_has_gpus_for(tmp_path):
    spec = _spec(tmp_path, gpus=8, max_concurrent=4, nnodes=1, per_node=8)
    assert spec.trials[0].config.verl.device == "cuda"
    p = plan(spec, CLUSTER, local=False)
    assert p.tune_resources == {"cpu": 1, "gpu": 0} and p.gpus_per_trial == 8
    assert p.max_concurrent == 2  # 16 GPUs // 8 per trial, below max_concurrent 4


@pytest.mark.slow
def test_verl_trials_that_cannot_fit_fail_before_anything_starts(tmp_path):
    with pytest.raises(SpecError, match=r"each trial needs 32 GPUs, but the Ray cluster at x has 16"):
        plan(_spec(tmp_path, gpus=32, nnodes=4, per_node=8), CLUSTER, local=False)
    with pytest.raises(SpecError, match=r"verl.n_gpus_per_node: each trial asks for 16 GPUs per node"):
        plan(_spec(tmp_path, gpus=16, nnodes=1, per_node=16), CLUSTER, local=False)
    no_logical = Capacity(cpus=64, gpus=0, node_cpus=32, node_gpus=0, where="the Ray cluster at y")
    with pytest.raises(SpecError, match=r"logical GPUs \(ray start --num-gpus"):
        plan(_spec(tmp_path, gpus=0), no_logical, local=False)


def test_resources_gpus_of_a_verl_trial_must_match_its_nodes_times_gpus(tmp_path):
    with pytest.raises(SpecError, match=r"resources.gpus: a verl trial takes verl.nnodes x verl.n_gpus_per_node = 8"):
        _spec(tmp_path, gpus=4, nnodes=2, per_node=4)
