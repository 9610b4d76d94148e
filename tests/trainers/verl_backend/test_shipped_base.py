"""The verl backend's shipped default base (trainers/verl_backend/shipped_base.py): tiny_qwen3 copies it into a
cache without building, and the check names what is wrong with a changed copy. The check of the real shipped
base (its bytes and its recipe's first 50 steps) is `python -m trainers.verl_backend.shipped_base --smoke`,
run by tests/test_entry_points.py."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from trainers.verl_backend import assets, shipped_base
from trainers.verl_backend.config import VerlConfig


def _sha1(path):
    return hashlib.sha1(path.read_bytes()).hexdigest()


def test_the_default_base_is_copied_from_the_repository_not_built(tmp_path, monkeypatch):
    def no_build(*args, **kwargs):
        raise AssertionError("tiny_qwen3 built the shipped base")

    monkeypatch.setattr(assets, "_build_model_dir", no_build)
    made = json.loads((shipped_base.default_dir() / assets.SHIPPED_RECIPE).read_text())
    copied = assets.tiny_qwen3(tmp_path, warm_start_steps=VerlConfig().tiny_warm_start_steps, log=None)
    assert copied.parent == tmp_path.resolve() and copied.name == shipped_base.default_dir().name
    assert _sha1(copied / "model.safetensors") == made["weights_sha1"]
    assert not (copied / assets.SHIPPED_RECIPE).exists()  # the cache holds the checkpoint, as a build writes it
    assert json.loads((copied / assets.ASSET_MARKER).read_text())["warm_start"]["steps"] == made["warm_start_steps"]
    with pytest.raises(AssertionError, match="built the shipped base"):  # another warm start is built, not copied
        assets.tiny_qwen3(tmp_path, warm_start_steps=10, log=None)


@pytest.mark.slow
def test_a_changed_shipped_copy_is_named_with_the_command_that_rebuilds_it(tmp_path, monkeypatch):
    copy = tmp_path / "bases" / shipped_base.default_dir().name
    shutil.copytree(shipped_base.default_dir(), copy)
    monkeypatch.setattr(shipped_base, "SHIPPED_DIR", copy.parent)
    weights = copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-4] + b"\0\0\0\0")
    recipe = json.loads((copy / assets.SHIPPED_RECIPE).read_text())
    recipe["probe_sha1"] = "0" * 40
    (copy / assets.SHIPPED_RECIPE).write_text(json.dumps(recipe))
    problems = shipped_base.check()
    assert any("the weights' sha1 is not RECIPE.json's" in p for p in problems), problems
    assert any("first 50 warm-start steps give weights sha1" in p and shipped_base.COMMAND in p for p in problems)
    shutil.rmtree(copy)
    assert "not shipped under" in shipped_base.check()[0]
