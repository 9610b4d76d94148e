"""Trainer checkpoints of the local backend: safe to load, atomic to write, validated before use.

    write_state(directory, state)            # directory/trainer_state.pt, via a temp file + os.replace
    state = read_state(directory, device)    # torch.load(weights_only=True) + key/type checks
    check_model_state(model, state["model"]) # same keys, shapes, dtypes, else CheckpointError
    check_optimizer_state(params, state["opt"])

Why weights_only: a checkpoint directory may come from an earlier run, a Tune copy or a
shared disk; a full unpickler runs whatever a planted file's ``__reduce__`` says. Everything
the trainer stores is plain data that torch's restricted unpickler accepts: tensors, ints,
floats, bools, None, strings and lists/tuples/dicts of them (``random.Random.getstate()`` is
``(3, tuple of 625 ints, None | float)``, a generator state is a uint8 tensor, the optimizer's
state dicts are torch's AdamW/LambdaLR layouts, the compute sums ``compute`` a dict of ints and
floats, trainers/compute.py). So the format is unchanged from the earlier ``weights_only=False`` code
and its checkpoints still load; one written before ``compute`` existed reads it as None.

Why atomic: ``torch.save`` straight to the final name leaves a truncated file there when the
process dies mid-write, and every retry would then fail on it. Writing a temp file in the same
directory (same file system), fsyncing it, then ``os.replace`` means the final name holds
either the previous complete file or the new complete one.

Why validate before applying: ``nn.Module.load_state_dict`` copies every matching tensor
before it raises on a shape mismatch, so a bad checkpoint would leave a half-loaded model.
The trainer checks everything here first and only then mutates its state (see
LocalTrainer.load).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

from trainers.compute import ComputeTally

STATE_FILE = "trainer_state.pt"
STATE_KEYS = ("step", "model", "opt", "sched", "gen", "rng", "torch_rng")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing keys, wrong types, or not this model's shapes."""


def write_state(directory: Path, state: dict) -> Path:
    """Save ``state`` as ``directory/trainer_state.pt`` atomically; returns the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{STATE_FILE}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, directory / STATE_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(directory)
    return directory


def _fsync_dir(directory: Path) -> None:
    """Persist the rename itself (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_state(directory: Path, device: torch.device | str = "cpu") -> dict:
    """Load and type-check ``directory/trainer_state.pt``; raises on any problem, mutates nothing."""
    state = torch.load(Path(directory) / STATE_FILE, map_location=device, weights_only=True)
    if not isinstance(state, dict):
        raise CheckpointError(f"expected a dict, got {type(state).__name__}")
    missing = [k for k in STATE_KEYS if k not in state]
    if missing:
        raise CheckpointError(f"missing keys {missing}")
    step = state["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise CheckpointError(f"step: expected an integer >= 0, got {step!r}")
    for key in ("model", "opt", "sched"):
        if not isinstance(state[key], dict):
            raise CheckpointError(f"{key}: expected a dict, got {type(state[key]).__name__}")
    for key in ("gen", "torch_rng"):
        if not isinstance(state[key], torch.Tensor) or state[key].dtype != torch.uint8:
            raise CheckpointError(f"{key}: expected a uint8 generator state tensor")
    state["rng"] = _python_rng_state(state["rng"])
    try:  # optional: checkpoints from before the compute sums lack it (None: they restart at 0)
        state["compute"] = ComputeTally.from_state(state["compute"]).state() if "compute" in state else None
    except ValueError as err:
        raise CheckpointError(str(err)) from None
    return state


def _python_rng_state(value) -> tuple:
    """``random.Random.getstate()`` as saved (a tuple; lists accepted), back as the exact tuple setstate wants."""
    if not isinstance(value, (tuple, list)) or len(value) != 3 or not isinstance(value[1], (tuple, list)):
        raise CheckpointError(f"rng: expected random.Random.getstate() (version, internal state, gauss), got {type(value).__name__}")
    return (value[0], tuple(value[1]), value[2])


def check_model_state(model: torch.nn.Module, saved: dict) -> None:
    """The saved state dict has exactly the model's keys, shapes and dtypes."""
    own = model.state_dict()
    if set(saved) != set(own):
        missing, extra = sorted(set(own) - set(saved)), sorted(set(saved) - set(own))
        raise CheckpointError(f"model: missing keys {missing[:5]}, unexpected keys {extra[:5]}")
    for name, tensor in own.items():
        value = saved[name]
        if not isinstance(value, torch.Tensor) or value.shape != tensor.shape or value.dtype != tensor.dtype:
            got = (tuple(value.shape), value.dtype) if isinstance(value, torch.Tensor) else type(value).__name__
            raise CheckpointError(f"model: {name}: expected {tuple(tensor.shape)} {tensor.dtype}, got {got}")


def check_optimizer_state(params: list[torch.Tensor], saved: dict) -> None:
    """AdamW state (torch's layout) whose moments match the parameters' shapes.

    WarmupAdamW.load_state_dict casts but does not check shapes; a mismatch would only
    surface inside the first update after resuming.
    """
    groups, state = saved.get("param_groups"), saved.get("state")
    if not isinstance(groups, list) or len(groups) != 1 or not isinstance(state, dict):
        raise CheckpointError("opt: expected torch AdamW layout with one parameter group")
    ids = groups[0].get("params") if isinstance(groups[0], dict) else None
    if not isinstance(ids, list) or len(ids) != len(params):
        raise CheckpointError(f"opt: expected {len(params)} parameters in the group")
    position = {saved_id: i for i, saved_id in enumerate(ids)}
    for saved_id, values in state.items():
        if saved_id not in position or not isinstance(values, dict):
            raise CheckpointError(f"opt: state for unknown parameter {saved_id!r}")
        shape = params[position[saved_id]].shape
        for key in ("step", "exp_avg", "exp_avg_sq"):
            value = values.get(key)
            if not isinstance(value, torch.Tensor):
                raise CheckpointError(f"opt: parameter {saved_id}: {key} missing")
            if key != "step" and value.shape != shape:
                raise CheckpointError(f"opt: parameter {saved_id}: {key} has shape {tuple(value.shape)}, "
                                      f"expected {tuple(shape)}")
