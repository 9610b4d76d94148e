"""The compute sums every backend reports (trainers/compute.py): folding steps in, the checkpoint state, the GPU share."""

from __future__ import annotations

import pytest

from contract.metrics import COMPUTE_AXES, COMPUTE_GPU_S, COMPUTE_METRICS, COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED, COMPUTE_WALL_S
from trainers.compute import ComputeTally, ray_gpu_share


def test_the_contract_names_the_axes():
    assert COMPUTE_METRICS == (COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED, COMPUTE_WALL_S)
    assert COMPUTE_AXES == {"step": None, "tokens": COMPUTE_TOKENS_GENERATED, "trained_tokens": COMPUTE_TOKENS_TRAINED,
                            "seconds": COMPUTE_WALL_S, "gpu_seconds": COMPUTE_GPU_S}
    assert all(name.startswith("perf/") for name in (*COMPUTE_METRICS, COMPUTE_GPU_S))  # logged by the driver


def test_steps_add_up_and_gpu_seconds_only_on_gpus():
    tally = ComputeTally()
    assert tally.add(100, 200, 1.5, None) == {COMPUTE_TOKENS_GENERATED: 100.0, COMPUTE_TOKENS_TRAINED: 200.0,
                                              COMPUTE_WALL_S: 1.5}
    out = tally.add(50, 100, 2.0, 0.25)
    assert out[COMPUTE_TOKENS_GENERATED] == 150.0 and out[COMPUTE_WALL_S] == 3.5 and out[COMPUTE_GPU_S] == 0.5


def test_the_state_round_trips_and_bad_state_is_refused_naming_the_field():
    tally = ComputeTally(10, 20, 3.0, 6.0)
    assert ComputeTally.from_state(tally.state()) == tally
    assert ComputeTally.from_state({**tally.state(), "tokens_generated": 10.0}).tokens_generated == 10  # JSON floats
    for field, value in (("tokens_generated", 1.5), ("tokens_trained", -1), ("wall_s", float("nan")), ("gpu_s", True),
                         ("wall_s", None)):
        with pytest.raises(ValueError, match=f"compute: {field}: expected a number >= 0"):
            ComputeTally.from_state({**tally.state(), field: value})
    with pytest.raises(ValueError, match="compute: expected a dict"):
        ComputeTally.from_state([1, 2])


def test_outside_a_ray_worker_the_share_is_the_default():
    assert ray_gpu_share() == 1.0 and ray_gpu_share(0.5) == 0.5
