"""The compute axis of a trial: what it has spent so far, reported at every training step by every backend.

    tally = ComputeTally()                        # or ComputeTally.from_state(saved) on a resume
    metrics.update(tally.add(generated=512, trained=1024, wall_s=1.5, gpus=None))
    saved = tally.state()                         # plain ints and floats: checkpoint JSON or torch weights_only

``add`` folds one training step into the running sums and returns them under the contract's names
(contract/metrics.py ``COMPUTE_METRICS``, and ``COMPUTE_GPU_S`` when the trial holds GPUs): response tokens
sampled, response tokens the policy loss was computed on (each optimizer pass counting), wall seconds of the
steps, GPU-seconds of the trial's share (wall x GPUs held, a fraction for a packed share). Token sums are
integers, so a resumed trial that restores ``state()`` reports exactly what an uninterrupted one does.
No torch here: the synthetic backend uses it too.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass

from contract.metrics import COMPUTE_GPU_S, COMPUTE_TOKENS_GENERATED, COMPUTE_TOKENS_TRAINED, COMPUTE_WALL_S


@dataclass
class ComputeTally:
    """The running sums of one trial since its step 0."""

    tokens_generated: int = 0
    """Response tokens sampled (rollouts only: no prompts, no evaluation)."""
    tokens_trained: int = 0
    """Response tokens in the policy loss, counted once per optimizer pass over them."""
    wall_s: float = 0.0
    """Wall seconds of the training steps (what each backend times as a step)."""
    gpu_s: float = 0.0
    """Sum of wall seconds x GPUs held, over the steps that ran on GPUs."""

    def add(self, generated: int, trained: int, wall_s: float, gpus: float | None) -> dict[str, float]:
        """Fold one training step in; the cumulative metrics after it. ``gpus``: GPUs (or the share of one)
        the trial holds, None on the CPU (then ``COMPUTE_GPU_S`` is left out)."""
        self.tokens_generated += int(generated)
        self.tokens_trained += int(trained)
        self.wall_s += float(wall_s)
        if gpus is not None:
            self.gpu_s += float(wall_s) * float(gpus)
        return self.metrics(on_gpu=gpus is not None)

    def metrics(self, on_gpu: bool) -> dict[str, float]:
        """The sums under the contract's names (floats, as every reported metric)."""
        out = {COMPUTE_TOKENS_GENERATED: float(self.tokens_generated), COMPUTE_TOKENS_TRAINED: float(self.tokens_trained),
               COMPUTE_WALL_S: self.wall_s}
        if on_gpu:
            out[COMPUTE_GPU_S] = self.gpu_s
        return out

    def state(self) -> dict[str, int | float]:
        """What a checkpoint stores: {tokens_generated, tokens_trained, wall_s, gpu_s}."""
        return asdict(self)

    @classmethod
    def from_state(cls, state: object) -> ComputeTally:
        """A tally from ``state()``'s dict; ValueError naming the field when it is not one."""
        if not isinstance(state, dict):
            raise ValueError(f"compute: expected a dict, got {type(state).__name__}")
        values = {}
        for name, kind in (("tokens_generated", int), ("tokens_trained", int), ("wall_s", float), ("gpu_s", float)):
            value = state.get(name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if kind is int:
                ok = ok and float(value).is_integer()  # JSON and torch keep ints; a float like 12.0 is accepted
            if not ok or not math.isfinite(value) or value < 0:
                raise ValueError(f"compute: {name}: expected a number >= 0, got {value!r}")
            values[name] = kind(value)
        return cls(**values)


def ray_gpu_share(default: float = 1.0) -> float:
    """The GPUs Ray assigned to this worker (0.25 for a Tune slot of resources.gpus 0.25), when this process
    runs inside a Ray worker that holds some; else ``default`` (a trial started outside a sweep)."""
    ray = sys.modules.get("ray")  # never imports Ray: a process that has not yet is no Ray worker
    try:
        if ray is not None and ray.is_initialized():
            share = float(ray.get_runtime_context().get_assigned_resources().get("GPU", 0.0))
            if share > 0:
                return share
    except Exception:  # noqa: BLE001 - a driver process (no worker mode) or an older Ray: not ours to fail on
        pass
    return default
