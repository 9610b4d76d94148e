"""Trial-config overrides (`python -m trainers.local` / `python -m trainers.config`): Hydra's grammar
(trainers/overrides.py) on the TrialConfig dataclasses, whose fields all exist with their defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainers.config import ConfigError, TrialConfig, apply_overrides, load_trial_config, split_args

REPO = Path(__file__).resolve().parents[2]
DEFAULT = TrialConfig()


def test_values_are_typed_by_hydra():
    cfg = load_trial_config(None, ["algorithm.params.eps_low=3e-4", "algorithm.params.eps_high=4e-4",
                                   "trainer.lr=1e-3", "data.benchmarks=[easy,hard]", "model.name='42'",
                                   "trainer.steps=int(7.9)"])
    assert cfg.algorithm.params == {"eps_low": 3e-4, "eps_high": 4e-4}
    assert all(isinstance(v, float) for v in cfg.algorithm.params.values())
    assert (cfg.trainer.lr, cfg.data.benchmarks, cfg.model.name, cfg.trainer.steps) == (1e-3, ["easy", "hard"], "42", 7)


def test_set_add_force_add():
    assert load_trial_config(None, ["trainer.lr=1"]).trainer.lr == 1.0  # an int is a fine float
    assert load_trial_config(None, ["++trainer.lr=2e-4"]).trainer.lr == 2e-4
    # open mappings: every objective parameter has a paper default, so key=value may add one; + adds one
    assert load_trial_config(None, ["+algorithm.params.eps_low=0.3"]).algorithm.params == {"eps_low": 0.3}
    assert load_trial_config(None, ["++algorithm.params.eps_low=0.3"]).algorithm.params == {"eps_low": 0.3}
    # a mapping value merges into the section (Hydra's merge); the rest keeps its values
    cfg = load_trial_config(None, ["trainer.steps=9", "trainer={lr: 0.5, eval_k: 2}"])
    assert (cfg.trainer.steps, cfg.trainer.lr, cfg.trainer.eval_k) == (9, 0.5, 2)


def test_delete_resets_to_the_dataclass_default(tmp_path):
    path = tmp_path / "trial.yaml"
    path.write_text("trainer: {lr: 5e-3, steps: 9}\nalgorithm: {name: grpo, params: {eps_low: 0.3}}\n")
    cfg = load_trial_config(path)
    assert (cfg.trainer.lr, cfg.trainer.steps) == (5e-3, 9)  # the file's 5e-3 is a float (OmegaConf's YAML)
    assert load_trial_config(path, ["~trainer.lr"]).trainer.lr == DEFAULT.trainer.lr
    assert load_trial_config(path, ["~trainer.lr=5e-3"]).trainer.lr == DEFAULT.trainer.lr
    assert load_trial_config(path, ["~trainer"]).trainer == DEFAULT.trainer  # a whole section
    assert load_trial_config(path, ["~algorithm.params.eps_low"]).algorithm.params == {}  # the paper default again
    assert load_trial_config(None, ["~trainer.lr"]).trainer.lr == DEFAULT.trainer.lr  # at its default already
    assert load_trial_config(path, ["~trainer.lr", "trainer.lr=2e-3"]).trainer.lr == 2e-3
    with pytest.raises(ConfigError, match="trainer.lr already exists"):  # deleted = at its default: it has a value
        load_trial_config(path, ["~trainer.lr", "+trainer.lr=2e-3"])


@pytest.mark.parametrize("override, needle", [
    ("+trainer.lr=1", "trainer.lr already exists; use trainer.lr=... or ++trainer.lr=... (its value: 0.0001)"),
    ("trainer.lrr=1", "trainer.lrr: unknown key (did you mean 'trainer.lr'?)"),
    ("+trainer.lrr=1", "trainer.lrr: unknown key (did you mean 'trainer.lr'?)"),
    ("++trainer.lrr=1", "trainer.lrr: unknown key (did you mean 'trainer.lr'?)"),
    ("~trainer.nonexistent", "trainer.nonexistent: unknown key; expected one of ["),
    ("~trainr", "trainr: unknown key (did you mean 'trainer'?)"),
    ("~trainer.lr=1e-3", "trainer.lr: not deleted: its value is 0.0001, not 0.001"),
    ("~model.path", "model.path: cannot delete it: it has no value"),  # null: no value, as in Hydra
    ("~algorithm.params.eps_low", "algorithm.params.eps_low: cannot delete it: it has no value"),
    ("trainer.lr.x=1", "trainer.lr: expected a mapping to set trainer.lr.x in, got 0.0001"),
    ("trainer.steps=1,2", "trainer.steps: expected one value, got a Hydra sweep (1,2)"),
    ("trainer.steps=range(3)", "trainer.steps: expected one value, got a Hydra sweep"),
    ("trainer.steps", "not a valid override in Hydra's grammar"),
    ("trainer.lr=[1]", "trainer.lr: expected a number, got [1]"),
    ("trainer.steps='5'", "trainer.steps: expected an integer, got '5'"),  # quoted: a string, not coerced
])
def test_bad_overrides_name_the_key(override, needle):
    with pytest.raises(ConfigError) as err:
        load_trial_config(None, [override])
    assert needle in str(err.value), str(err.value)


def test_apply_overrides_leaves_defaults_out_of_the_dict():
    data = apply_overrides({"trainer": {"steps": 3}}, ["trainer.lr=3e-4", "~trainer.steps", "+algorithm.params.gate=gumbel"])
    assert data == {"trainer": {"lr": 3e-4}, "algorithm": {"params": {"gate": "gumbel"}}}


def test_a_quoted_number_in_a_file_is_a_string(tmp_path):
    path = tmp_path / "trial.yaml"
    path.write_text("trainer: {lr: '5e-3'}\n")  # no coercion of strings any more: YAML/Hydra type the values
    with pytest.raises(ConfigError, match=r"trainer.lr: expected a number, got '5e-3'"):
        load_trial_config(path)


# ---------------------------------------------------------------------------------------------
# argument handling of `python -m trainers.local` / `python -m trainers.config`


def test_split_args():
    assert split_args([]) == (None, [])
    assert split_args(["my.yaml", "a=1", "~b", "+c=2", "++d=3"]) == ("my.yaml", ["a=1", "~b", "+c=2", "++d=3"])
    assert split_args(["~trainer.lr", "a=1"]) == (None, ["~trainer.lr", "a=1"])  # not a config file
    with pytest.raises(ConfigError, match=r"argument 'trainer.steps': expected an override"):
        split_args(["a=1", "trainer.steps", "3"])


def test_local_main_applies_every_form(monkeypatch, capsys):
    import trainers.local.__main__ as cli
    import trainers.local.trainer as trainer  # main imports its train once the numeric mode's variables are set

    seen = []
    monkeypatch.setattr(trainer, "train", lambda cfg, *a, **k: seen.append(cfg) or {})
    assert cli.main(["algorithm.params.eps_low=3e-4", "~trainer.lr", "++trainer.eval_k=2", "+model.path=null"]) == 0
    (cfg,) = seen
    assert cfg.algorithm.params["eps_low"] == 3e-4 and isinstance(cfg.algorithm.params["eps_low"], float)
    assert (cfg.trainer.lr, cfg.trainer.eval_k) == (DEFAULT.trainer.lr, 2)
    assert cli.main(["--smoke", "trainer.steps=5"]) == 0 and seen[-1].trainer.steps == 5  # after the smoke ones
    capsys.readouterr()
    assert cli.main(["+trainer.lr=1"]) == 2
    assert "trainer.lr already exists; use trainer.lr=... or ++trainer.lr=..." in capsys.readouterr().err
    assert cli.main(["trainer.lrr=1"]) == 2
    assert "did you mean 'trainer.lr'" in capsys.readouterr().err
    assert len(seen) == 2


def test_config_main_prints_a_float():
    out = subprocess.run([sys.executable, "-m", "trainers.config", "algorithm.params.eps_low=3e-4", "~trainer.lr"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "eps_low: 0.0003" in out.stdout and "lr: 0.0001" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "trainers.config", "+trainer.lr=1"], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "trainer.lr already exists" in bad.stderr
