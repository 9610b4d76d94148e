"""Packed trials (resources.gpus: 0.25): several verl trials on one GPU, checked where CPUs allow.

The GPU run itself is `python scripts/gpu_check.py --only verl-pack,verl-pack-serial` (docs/benchmarks.md).
Here: the shipped spec's validation and dry run, the placement (a local Ray of 4 logical GPUs on the one
GPU id), the refusals, the launch's environment, and a real local Ray started as the sweep starts it,
whose one-GPU actors all land on the same device id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contract.errors import ConfigError
from sweeps.cli import app
from sweeps.driver.ray_cluster import Capacity
from sweeps.specs.load import SpecError, load_spec
from sweeps.driver.placement import plan
from trainers.config import TrialConfig
from trainers.verl_backend.launch import Inputs, build_launch, packed_device
from trainers.verl_backend.placement import held_gpus

from sweep_testlib import kill_ray_processes, short_ray_dir

REPO = Path(__file__).resolve().parents[2]
PACK = REPO / "configs" / "sweeps" / "verl_gpu_pack.yaml"
ONE_GPU = Capacity(cpus=16, gpus=1, node_cpus=16, node_gpus=1, where="this machine")


def test_the_packed_spec_validates_with_each_trial_holding_a_quarter_of_the_gpu():
    spec = load_spec(PACK, [])
    assert len(spec.trials) == 4 and spec.resources.gpus == 0.25 and spec.max_concurrent == 4
    assert {t.config.verl.gpu_share for t in spec.trials} == {0.25}
    assert {t.config.verl.device for t in spec.trials} == {"cuda"}
    assert {held_gpus(t.config) for t in spec.trials} == {0.25}  # its GPU-seconds count a quarter of the GPU
    whole = {"device": "cuda", "rollout": "zoo_hf", "nnodes": 2, "n_gpus_per_node": 4}  # 8 GPUs, no model needed
    whole = TrialConfig.from_dict({"backend": "verl", "verl": whole})
    assert held_gpus(whole) == 8


@pytest.mark.slow
def test_a_local_one_gpu_machine_declares_four_logical_gpus_on_its_one_id(monkeypatch):
    spec = load_spec(PACK, [])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    placement = plan(spec, ONE_GPU, local=True)
    assert (placement.max_concurrent, placement.gpus_per_trial) == (4, 1)
    assert (placement.local_gpus, placement.local_gpu_ids) == (4, "0,0,0,0")
    assert placement.tune_resources == {"cpu": 1.0, "gpu": 0}  # verl's own placement groups hold the GPU
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert plan(spec, ONE_GPU, local=True).local_gpu_ids == "3,3,3,3"
    assert plan(load_spec(PACK, ["max_concurrent=1"]), ONE_GPU, local=True).max_concurrent == 1


@pytest.mark.slow
def test_packing_refuses_what_it_cannot_place_naming_the_key(tmp_path):
    spec = load_spec(PACK, [])
    two = Capacity(cpus=16, gpus=2, node_cpus=16, node_gpus=2, where="this machine")
    with pytest.raises(SpecError, match=r"resources.gpus: packing 4 trials per GPU needs one GPU per node.*CUDA_VISIBLE_DEVICES"):
        plan(spec, two, local=True)
    none = Capacity(cpus=16, gpus=0, node_cpus=16, node_gpus=0, where="the Ray cluster at x")
    with pytest.raises(SpecError, match=r"ray start --num-gpus 4"):
        plan(spec, none, local=False)
    cluster = Capacity(cpus=64, gpus=8, node_cpus=16, node_gpus=4, where="the Ray cluster at x")
    assert plan(spec, cluster, local=False).max_concurrent == 4  # 8 logical GPUs, max_concurrent 4
    (tmp_path / "config.json").write_text("{}")  # vLLM needs a user model: a checkpoint directory
    for overrides, message in ((["resources.gpus=0.3"], r"resources.gpus: a share of one GPU must divide it"),
                               (["base.verl.n_gpus_per_node=2"], r"verl.nnodes x verl.n_gpus_per_node must be 1, got 2"),
                               (["base.verl.rollout=vllm", f"base.model.path={tmp_path}"],
                                r"verl.rollout: packed trials .* 'vllm' reserves")):
        with pytest.raises(SpecError, match=message):
            load_spec(PACK, overrides)
    assert load_spec(PACK, ["resources.gpus=0.33"]).trials[0].config.verl.gpu_share == 0.33  # 3 per GPU


@pytest.mark.slow
def test_a_packed_launch_caps_memory_and_shows_the_job_its_one_gpu():
    trial = load_spec(PACK, []).trials[0].config
    inputs = Inputs("/m", ["/d/train.parquet"], ["/d/val.parquet"])
    kwargs = dict(checkpoint_dir=Path("/c"), resume_path=None, metrics_file=Path("/m.jsonl"), namespace="n",
                  ray_address="127.0.0.1:6379", experiment="e")
    launch = build_launch(trial, inputs, node_gpus="0,0,0,0", **kwargs)
    assert launch.env["ZOO_VERL_GPU_MEMORY_FRACTION"] == "0.25" and launch.env["CUDA_VISIBLE_DEVICES"] == "0"
    job = [a for a in launch.argv if a.startswith("+ray_kwargs.ray_init.runtime_env.env_vars.")]
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.CUDA_VISIBLE_DEVICES='0'" in job
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.ZOO_VERL_GPU_MEMORY_FRACTION='0.25'" in job
    with pytest.raises(ConfigError, match=r"CUDA_VISIBLE_DEVICES=0,0,0,0 ray start --num-gpus 4.*'0,1'"):
        build_launch(trial, inputs, node_gpus="0,1", **kwargs)
    assert packed_device("2,2,2,2") == "2"
    whole = load_spec(PACK, ["resources.gpus=1"]).trials[0].config
    plain = build_launch(whole, inputs, node_gpus="0", **kwargs)
    assert "ZOO_VERL_GPU_MEMORY_FRACTION" not in plain.env and "CUDA_VISIBLE_DEVICES" not in plain.env


def test_dry_run_shows_the_packing_and_the_cap_in_every_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", str(PACK), "--dry-run"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # the console may wrap at 80 columns (its width is set on import)
    assert "packing: 4 trials share each GPU (resources.gpus 0.25); 4 at once on a one-GPU machine" in said
    commands = [line for line in result.output.splitlines() if "verl.trainer.main_ppo" in line]
    assert len(commands) == 4 and all("ZOO_VERL_GPU_MEMORY_FRACTION=0.25" in c for c in commands)
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


PACKED_RAY = """
import json, os, sys
import ray
from sweeps.driver.ray_cluster import init_ray
before = os.environ.get("CUDA_VISIBLE_DEVICES")
init_ray(address=None, run_dir=__import__("pathlib").Path(sys.argv[1]), temp_dir=__import__("pathlib").Path(sys.argv[2]),
         num_cpus=2, num_gpus=4, gpu_ids="0,0,0,0")
try:
    @ray.remote(num_cpus=0, num_gpus=1)
    class Holder:
        def where(self):
            return os.environ.get("CUDA_VISIBLE_DEVICES")
    plain = [Holder.remote() for _ in range(4)]  # 4 at once: one logical GPU each
    seen_plain = ray.get([h.where.remote() for h in plain], timeout=60)
    for h in plain:
        ray.kill(h)  # frees the 4 logical GPUs
    job = [Holder.options(runtime_env={"env_vars": {"CUDA_VISIBLE_DEVICES": "0"}}).remote() for _ in range(4)]
    seen_job = ray.get([h.where.remote() for h in job], timeout=60)
    print(json.dumps({"gpus": ray.cluster_resources().get("GPU"), "plain": seen_plain, "job": seen_job,
                      "driver_env_kept": os.environ.get("CUDA_VISIBLE_DEVICES") == before}))
finally:
    ray.shutdown()
"""


@pytest.mark.slow  # starts a local Ray
def test_a_local_ray_of_packed_trials_puts_every_logical_gpu_on_the_one_device(tmp_path):
    """The sweep's own ray.init (sweeps/driver/ray_cluster.py) with the placement's ids: 4 logical GPUs, and
    one-GPU actors (verl's workers) all see device '0', with and without the job's narrowed variable."""
    ray_dir = short_ray_dir()
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    try:
        done = subprocess.run([sys.executable, "-c", PACKED_RAY, str(tmp_path), str(ray_dir)], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=180)
    finally:
        kill_ray_processes(ray_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {"gpus": 4.0, "plain": ["0"] * 4, "job": ["0"] * 4, "driver_env_kept": True}
