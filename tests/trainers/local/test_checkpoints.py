"""Checkpoints: weights_only loading (no code runs), fallback over candidates, atomic writes, bit-exact resume.

Bit-exact means as in test_local_trainer.test_resume_from_checkpoint_is_bit_exact: every
non-wall-clock metric of the resumed steps equals the uninterrupted run's.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import pytest
import torch

from contract.metrics import COMPUTE_TOKENS_GENERATED
from test_local_trainer import SMALL, comparable
from trainers.config import load_trial_config
from trainers.local.checkpoint import STATE_FILE, CheckpointError, read_state, write_state
from trainers.local.trainer import LocalTrainer, train

STEPS = ["trainer.steps=6", "trainer.checkpoint_every=2"]


def run(overrides, resume_from=None, workdir=None):
    """(history, log lines) of one trial of the tiny config."""
    history, logs = [], []
    cfg = load_trial_config(None, SMALL + STEPS + overrides)
    train(cfg, lambda step, metrics, ckpt: history.append((step, dict(metrics), ckpt)), resume_from=resume_from,
          workdir=workdir, log=logs.append)
    return history, logs


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """An uninterrupted grpo run with checkpoints at steps 2, 4 and 6: {step: dir} and its history."""
    history, _ = run(["algorithm.name=grpo"], workdir=tmp_path_factory.mktemp("full"))
    checkpoints = {step: ckpt for step, _, ckpt in history if ckpt is not None}
    assert sorted(checkpoints) == [2, 4, 6]
    return checkpoints, history


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _truncate(directory: Path, keep: float = 0.5) -> Path:
    data = (directory / STATE_FILE).read_bytes()
    (directory / STATE_FILE).write_bytes(data[:int(len(data) * keep)])
    return directory


class Evil:
    """A pickle payload: unpickling it runs a shell command that creates ``marker``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["grpo", "gspo"])  # token-level and sequence-level importance ratios
def test_resume_is_bit_exact_with_weights_only_loading(tmp_path, name):
    history, _ = run([f"algorithm.name={name}"], workdir=tmp_path / "full")
    checkpoints = {step: ckpt for step, _, ckpt in history if ckpt is not None}
    resumed, logs = run([f"algorithm.name={name}"], resume_from=checkpoints[2], workdir=tmp_path / "resumed")
    assert [step for step, _, _ in resumed] == [3, 4, 5, 6]
    assert comparable(resumed) == comparable(history)[3:]
    assert logs[0] == f"resumed from {checkpoints[2]} at step 2"
    state = read_state(checkpoints[2])  # weights_only=True accepts every piece of the state
    assert state["step"] == 2 and isinstance(state["rng"], tuple)


@pytest.mark.slow
def test_malicious_pickle_is_not_executed_and_is_skipped(tmp_path, full):
    checkpoints, history = full
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil"
    evil.mkdir()
    state = torch.load(checkpoints[4] / STATE_FILE, weights_only=True)
    state["model"] = Evil(marker)
    torch.save(state, evil / STATE_FILE)
    resumed, logs = run(["algorithm.name=grpo"], resume_from=[evil, checkpoints[2]], workdir=tmp_path / "w")
    assert not marker.exists()  # nothing in the file ran
    assert [step for step, _, _ in resumed] == [3, 4, 5, 6]
    assert comparable(resumed) == comparable(history)[3:]
    module = os.system.__module__  # posix (nt on Windows)
    assert logs[0] == (f"checkpoint {evil} unreadable (UnpicklingError: Trying to load unsupported GLOBAL "
                       f"{module}.system whose module {module} is blocked.); falling back to the next older one")
    assert logs[1] == f"resumed from {checkpoints[2]} at step 2"
    # The payload is real: the old weights_only=False load would have run it.
    torch.load(evil / STATE_FILE, weights_only=False)
    assert marker.exists()


def test_truncated_newest_falls_back_to_older_bit_exact(tmp_path, full):
    checkpoints, history = full
    newest = _truncate(_copy(checkpoints[4], tmp_path / "checkpoint_000004"))
    resumed, logs = run(["algorithm.name=grpo"], resume_from=[newest, checkpoints[2]], workdir=tmp_path / "w")
    assert [step for step, _, _ in resumed] == [3, 4, 5, 6]
    assert comparable(resumed) == comparable(history)[3:]  # as if resumed from step 2 of an uninterrupted run
    assert logs[0].startswith(f"checkpoint {newest} unreadable (")
    assert logs[0].endswith("; falling back to the next older one")
    assert logs[1] == f"resumed from {checkpoints[2]} at step 2"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # the garbage candidate's header
def test_all_candidates_unreadable_starts_from_scratch(tmp_path, full):
    checkpoints, history = full
    truncated = _truncate(_copy(checkpoints[6], tmp_path / "truncated"))
    missing = tmp_path / "missing"
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / STATE_FILE).write_bytes(b"\x80\x04not a checkpoint")
    wrong_keys = tmp_path / "wrong_keys"
    state = torch.load(checkpoints[4] / STATE_FILE, weights_only=True)
    write_state(wrong_keys, {k: v for k, v in state.items() if k != "rng"})
    # model valid (step 4's) but optimizer moments of the wrong shape: applying the model first
    # would leave a half-loaded trainer, which the comparison with a fresh run below would catch
    bad_opt = tmp_path / "bad_opt"
    moments = state["opt"]["state"][0]
    moments["exp_avg"] = moments["exp_avg"][:1]
    write_state(bad_opt, state)
    bad_shape = tmp_path / "bad_shape"
    state = torch.load(checkpoints[4] / STATE_FILE, weights_only=True)
    first = next(iter(state["model"]))
    state["model"][first] = torch.zeros(3)
    write_state(bad_shape, state)
    candidates = [truncated, missing, garbage, wrong_keys, bad_opt, bad_shape]
    resumed, logs = run(["algorithm.name=grpo"], resume_from=candidates, workdir=tmp_path / "w")
    assert [step for step, _, _ in resumed] == [0, 1, 2, 3, 4, 5, 6]
    assert comparable(resumed) == comparable(history)  # failed loads changed nothing: a fresh run
    assert len(logs) >= len(candidates) + 1
    for line, directory in zip(logs, candidates):
        assert line.startswith(f"checkpoint {directory} unreadable (")
    assert "FileNotFoundError" in logs[1]
    assert "(UnpicklingError: Unsupported operand" in logs[2]
    assert "missing keys ['rng']" in logs[3]
    assert "exp_avg has shape" in logs[4]
    assert first in logs[5]
    assert logs[len(candidates) - 1].endswith(")")  # the last one has no older one to fall back to
    assert logs[len(candidates)] == f"no readable checkpoint among {len(candidates)} candidates; starting from step 0"


def test_failed_load_leaves_the_trainer_untouched(tmp_path, full):
    checkpoints, _ = full
    cfg = load_trial_config(None, SMALL + STEPS)
    trainer = LocalTrainer(cfg, log=lambda s: None)
    trainer.load(checkpoints[2])  # some non-initial state, with optimizer moments
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    opt, gen, rng, torch_rng = trainer.opt, trainer.gen.get_state(), trainer.rng.getstate(), torch.get_rng_state()
    compute = trainer.compute
    assert compute.tokens_generated > 0  # step 2's sums
    state = torch.load(checkpoints[4] / STATE_FILE, weights_only=True)
    state["torch_rng"] = state["torch_rng"][:10]  # the very last piece applied is the bad one
    write_state(tmp_path / "bad", state)
    with pytest.raises(RuntimeError):
        trainer.load(tmp_path / "bad")
    assert all(torch.equal(v, before[k]) for k, v in trainer.model.state_dict().items())
    assert trainer.opt is opt and trainer.step == 2 and trainer.compute is compute
    assert torch.equal(trainer.gen.get_state(), gen) and trainer.rng.getstate() == rng
    assert torch.equal(torch.get_rng_state(), torch_rng)


def test_checkpoint_written_by_the_previous_code_loads(tmp_path, full):
    """The old writer: a plain torch.save of the same dict to the final name. Same format, same keys."""
    checkpoints, history = full
    old = tmp_path / "old"
    old.mkdir()
    torch.save(torch.load(checkpoints[2] / STATE_FILE, weights_only=True), old / STATE_FILE)
    resumed, _ = run(["algorithm.name=grpo"], resume_from=old, workdir=tmp_path / "w")
    assert comparable(resumed) == comparable(history)[3:]


def test_compute_sums_resume_from_the_checkpoint_or_restart_when_it_has_none(tmp_path, full):
    """The sums travel in the checkpoint (``compute``); one from before they existed loads and restarts them
    at 0; a malformed one is an unreadable checkpoint like any other."""
    checkpoints, history = full
    state = torch.load(checkpoints[2] / STATE_FILE, weights_only=True)
    assert state["compute"]["tokens_generated"] == history[2][1][COMPUTE_TOKENS_GENERATED]
    write_state(tmp_path / "before", {k: v for k, v in state.items() if k != "compute"})
    resumed, _ = run(["algorithm.name=grpo"], resume_from=tmp_path / "before", workdir=tmp_path / "w")
    spent = history[3][1][COMPUTE_TOKENS_GENERATED] - history[2][1][COMPUTE_TOKENS_GENERATED]
    assert resumed[0][0] == 3 and resumed[0][1][COMPUTE_TOKENS_GENERATED] == spent  # step 3's own tokens only
    write_state(tmp_path / "bad", {**state, "compute": {**state["compute"], "tokens_trained": -1}})
    with pytest.raises(CheckpointError, match="compute: tokens_trained: expected a number >= 0"):
        read_state(tmp_path / "bad")


def test_crash_during_save_never_leaves_a_truncated_final_file(tmp_path, monkeypatch):
    cfg = load_trial_config(None, SMALL + STEPS)
    trainer = LocalTrainer(cfg, log=lambda s: None)
    first = tmp_path / "first"
    target = tmp_path / "checkpoint"
    trainer.save(target)
    good = (target / STATE_FILE).read_bytes()
    real_save = torch.save

    def crash(obj, f, *args, **kwargs):  # writes the first bytes of a real save, then dies
        data = Path(tmp_path / "scratch.pt")
        real_save(obj, data)
        partial = data.read_bytes()[:1000]
        if hasattr(f, "write"):
            f.write(partial)
            f.flush()
        else:
            Path(f).write_bytes(partial)
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crash)
    trainer.step = 5
    with pytest.raises(OSError, match="disk full"):
        trainer.save(target)  # overwriting an existing checkpoint
    with pytest.raises(OSError, match="disk full"):
        trainer.save(first)  # a first checkpoint in a new directory
    monkeypatch.setattr(torch, "save", real_save)
    assert (target / STATE_FILE).read_bytes() == good  # the previous complete file, untouched
    assert sorted(p.name for p in target.iterdir()) == [STATE_FILE]  # no temp file left behind
    assert list(first.iterdir()) == []  # nothing under the final name
    assert read_state(target)["step"] == 0
    write_state(tmp_path / "empty", {})
    with pytest.raises(CheckpointError, match="missing keys"):  # read_state checks the layout too
        read_state(tmp_path / "empty")
