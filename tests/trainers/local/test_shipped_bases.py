"""The shipped base policies (trainers/local/shipped_bases.py): the studies start from them without building,
and their recipe still makes their bytes.

* every shipped study on the built-in trainer has one shipped base key; a trial of each starts
  from the shipped directory (nothing built, nothing written to its cache_dir) and the provenance line names
  the shipped bytes;
* every shipped base's weights are its RECIPE.json's, its recipe still has its key, and the recipe's first
  ``probe_steps`` warm-start steps rebuilt give the recorded sha1 (slow: real training steps);
* a recipe whose probe or key no longer matches is reported, naming the command that rebuilds it;
* a base that is not shipped is still built once into its cache.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sweeps.specs.load import load_spec
from trainers.config import load_trial_config
from trainers.local import shipped_bases, warmstart
from trainers.local.shipped_bases import recipe, shipped_base, shipped_keys
from trainers.local.warmstart import base_fingerprint, base_key, check_shipped, ensure_base_checkpoint, weights_sha1

REPO = Path(__file__).resolve().parents[3]
SPECS = ("dhpo_vs_baselines.yaml", "positive_control.yaml",  # the default tiny Qwen3's base
         "objective_dynamics.yaml", "sspo_temperature_grid.yaml", "dhpo_clip_ablation.yaml")  # char_tags'



@pytest.mark.parametrize("spec_name", SPECS)
def test_a_shipped_study_starts_from_its_shipped_base_and_builds_nothing(spec_name, tmp_path):
    spec = load_spec(REPO / "configs" / "sweeps" / spec_name)
    keys = {base_key(t.config) for t in spec.trials}
    assert len(keys) == 1 and keys <= set(shipped_keys()), (keys, shipped_keys())
    cfg = spec.trials[0].config
    data = cfg.to_dict()
    data["local"]["warm_start"]["cache_dir"] = str(tmp_path / "cache")
    cfg = type(cfg).from_dict(data, source="test")
    said: list[str] = []
    base = ensure_base_checkpoint(cfg, [], log=said.append)  # no training problems: nothing may be built
    assert base == shipped_base(keys.pop()) and said == []
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    assert base_fingerprint(cfg) == (f"base policy {base.name}: weights sha1 {weights_sha1(base)[:8]} "
                                     f"(local.numerics: {cfg.local.numerics})")


@pytest.mark.parametrize("key", shipped_keys())
def test_each_shipped_base_is_its_recipes_bytes_under_its_recipes_key(key):
    made = recipe(key)
    base = shipped_base(key)
    assert weights_sha1(base) == made["weights_sha1"] == json.loads((base / "READY").read_text())["sha1"]
    assert base_key(load_trial_config(None, made["args"])) == key == made["key"]
    assert made["command"] == " ".join(["python -m trainers.local.warmstart --ship", *made["args"]])
    assert (base / "config.json").is_file() and (base / "tokenizer.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("key", shipped_keys())
def test_the_recipes_first_warm_start_steps_still_give_the_recorded_weights(key):
    assert check_shipped(key) == []


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    """The repository's shipped bases copied to tmp_path, which shipped_bases then reads."""
    copy = tmp_path / "bases"
    shutil.copytree(shipped_bases.SHIPPED_DIR, copy)
    monkeypatch.setattr(shipped_bases, "SHIPPED_DIR", copy)
    return copy


def test_a_recipe_whose_first_steps_give_other_weights_is_reported_with_its_rebuild_command(shipped_copy):
    key = base_key(load_trial_config(None, []))
    path = shipped_copy / key / "RECIPE.json"
    made = json.loads(path.read_text())
    # two steps keep it fast; the recorded sha1 is the 50-step one, which two steps do not give
    path.write_text(json.dumps({**made, "probe_steps": 2}))
    problems = check_shipped(key)
    assert len(problems) == 1 and "first 2 warm-start steps give weights sha1" in problems[0]
    assert made["command"] in problems[0]


def test_a_recipe_whose_config_now_has_another_key_is_reported(shipped_copy, monkeypatch):
    key = base_key(load_trial_config(None, []))
    monkeypatch.setattr(warmstart, "FORMAT_VERSION", warmstart.FORMAT_VERSION + 1)  # the warm start changed
    problems = check_shipped(key)
    assert len(problems) == 1 and f"now has base key {base_key(load_trial_config(None, []))}" in problems[0]
    assert "python -m trainers.local.warmstart --ship" in problems[0]


def test_changed_shipped_weights_are_reported(shipped_copy, monkeypatch):
    key = base_key(load_trial_config(None, []))
    weights = shipped_copy / key / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")
    monkeypatch.setattr(warmstart, "FORMAT_VERSION", warmstart.FORMAT_VERSION + 1)  # skip the probe's training
    problems = check_shipped(key)
    assert "the weights' sha1 is not RECIPE.json's" in problems[0]


def test_a_base_that_is_not_shipped_is_built_once_into_its_cache(tmp_path):
    cfg = load_trial_config(None, [f"local.warm_start.cache_dir={tmp_path}", "local.warm_start.steps=2"])
    assert shipped_base(base_key(cfg)) is None
    from trainers.local.data import load_data

    said: list[str] = []
    built = ensure_base_checkpoint(cfg, load_data(cfg)[0], log=said.append)
    assert built == tmp_path / base_key(cfg) and (built / "READY").is_file()
    assert any(line.startswith(f"building base policy {base_key(cfg)}") for line in said)
    again: list[str] = []
    assert ensure_base_checkpoint(cfg, load_data(cfg)[0], log=again.append) == built and again == []
