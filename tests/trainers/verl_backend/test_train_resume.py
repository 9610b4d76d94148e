"""How the verl backend picks the checkpoint a trial resumes from (trainers/verl_backend/train.py)."""

from __future__ import annotations

import json

from trainers.compute import ComputeTally
from trainers.verl_backend.train import POINTER, _pointer, pick_resume


def _verl_checkpoint(root, step):
    path = root / "checkpoints" / f"global_step_{step}"
    (path / "actor").mkdir(parents=True)
    return path


def test_newest_usable_pointer_wins_and_gone_or_unreadable_ones_fall_back(tmp_path):
    lines = []
    ckpt4 = _verl_checkpoint(tmp_path, 4)
    ckpt8 = tmp_path / "checkpoints" / "global_step_8"  # deleted by verl (max_actor_ckpt_to_keep)
    p8, p4 = _pointer(tmp_path / "w", ckpt8, 8), _pointer(tmp_path / "w", ckpt4, 4)
    broken = tmp_path / "w" / "broken"
    broken.mkdir()
    (broken / POINTER).write_text("{not json")
    assert pick_resume([broken, p8, p4], lines.append) == (str(ckpt4), 4, None)
    assert "no readable" in lines[0] and "step 8" in lines[1] and "global_step_4" in lines[2]
    assert "compute sums (perf/tokens_generated, ...) restart at 0" in lines[3]  # a pointer from before them


def test_nothing_usable_means_a_fresh_start(tmp_path):
    lines = []
    gone = _pointer(tmp_path, tmp_path / "checkpoints" / "global_step_2", 2)
    assert pick_resume([gone], lines.append) == (None, 0, None)
    assert "starting from step 0" in lines[-1]
    assert pick_resume(None, lines.append) == (None, 0, None)


def test_a_single_directory_is_accepted_and_the_pointer_is_plain_json(tmp_path):
    ckpt = _verl_checkpoint(tmp_path, 6)
    pointer = _pointer(tmp_path / "w", ckpt, 6)
    assert json.loads((pointer / POINTER).read_text()) == {"path": str(ckpt), "step": 6}
    assert pick_resume(pointer, lambda line: None) == (str(ckpt), 6, None)



def test_the_pointer_carries_the_compute_sums_a_resume_continues(tmp_path):
    ckpt = _verl_checkpoint(tmp_path, 6)
    sums = ComputeTally(tokens_generated=4096, tokens_trained=8192, wall_s=12.5, gpu_s=25.0)
    pointer = _pointer(tmp_path / "w", ckpt, 6, sums.state())
    assert json.loads((pointer / POINTER).read_text())["compute"] == sums.state()
    assert pick_resume(pointer, lambda line: None) == (str(ckpt), 6, sums)
    lines = []
    bad = _pointer(tmp_path / "bad", ckpt, 6, {**sums.state(), "tokens_generated": "many"})
    assert pick_resume(bad, lines.append) == (str(ckpt), 6, None)  # the checkpoint is still used
    assert "restart at 0" in lines[-1] and "tokens_generated" in lines[-1]
