"""`sweep run SPEC key=value ...`: overrides in Hydra's grammar (trainers/overrides.py), through
load_spec and through the command line (--dry-run, with the runner stubbed out).

Forms: key=value (set), +key=value (add; an error if it has a value), ++key=value (set or add),
~key and ~key=value (delete), preset groups (model=..., +model=..., ~model); values typed by Hydra.
"""

from __future__ import annotations


import pytest
from typer.testing import CliRunner

from sweeps.cli import app
from sweeps.commands.spec_input import load_user_spec
from sweeps.specs.load import SpecError, load_spec

SPEC = "dhpo_vs_baselines"  # 18 trials; presets trainer=local_tiny (lr 1e-4), model=tiny_qwen3, data=arith
DEFAULTS = [{"trainer": "local_tiny"}, {"model": "tiny_qwen3"}, {"data": "arith"}]


def dry_run(*overrides: str):
    result = CliRunner().invoke(app, ["run", SPEC, *overrides, "--dry-run"])
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


def configs(spec) -> set:
    return {(t.config.trainer.lr, t.config.trainer.steps, t.config.seed) for t in spec.trials}


# ---------------------------------------------------------------------------------------------
# values are typed as Hydra types them


@pytest.mark.slow
@pytest.mark.parametrize("override, value", [
    ("base.trainer.lr=3e-4", 3e-4),  # a float without a dot (YAML 1.1 read a string)
    ("base.trainer.lr=1e-3", 1e-3),
    ("base.trainer.lr=int(1)", 1.0),  # Hydra's cast functions; an int is a fine float
    ("base.trainer.lr=0.5", 0.5),
])
def test_values_are_typed_by_hydra(override, value, empty_cwd):
    lrs = {t.config.trainer.lr for t in load_spec(SPEC, [override]).trials}
    assert lrs == {value} and all(isinstance(v, float) for v in lrs)


def test_lists_null_and_quoted_strings(tmp_path, empty_cwd):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nvariants: [{algorithm: grpo}]\n")
    spec = load_spec(path, ["seeds=[0,1]", "base.data.benchmarks=[easy,hard]", "base.model.path=null",
                            "base.model.name='1e-3'"])
    assert [t.trial_id for t in spec.trials] == ["grpo.s0", "grpo.s1"]
    c = spec.trials[0].config
    assert (c.data.benchmarks, c.model.path, c.model.name) == (["easy", "hard"], None, "1e-3")


# ---------------------------------------------------------------------------------------------
# the forms, through load_spec


@pytest.mark.slow
def test_set_add_force_add_and_delete(empty_cwd):
    assert configs(load_spec(SPEC, ["base.trainer.lr=3e-4"])) == {(3e-4, 200, s) for s in (0, 1, 2)}
    assert configs(load_spec(SPEC, ["++base.trainer.lr=3e-4"])) == {(3e-4, 200, s) for s in (0, 1, 2)}
    # ~key: the key leaves the composed base config: back at its dataclass default
    assert configs(load_spec(SPEC, ["base.trainer.steps=7", "~base.trainer.steps"])) == {(1e-4, 200, s) for s in (0, 1, 2)}
    assert configs(load_spec(SPEC, ["base.trainer.steps=7", "~base.trainer.steps=7"])) == {(1e-4, 200, s) for s in (0, 1, 2)}
    # spec keys: "exists" = written in the spec file
    assert len(load_spec(SPEC, ["++seeds=[5]"]).trials) == 6
    assert {t.config.seed for t in load_spec(SPEC, ["~seeds"]).trials} == {0}  # the default seeds [0]
    assert len(load_spec(SPEC, ["+max_trials=18"]).trials) == 18  # not in the spec: + adds it


def test_a_mapping_value_is_merged_as_in_hydra(tmp_path, empty_cwd):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nbase: {trainer: {eval_mode: greedy}}\nvariants: [{algorithm: grpo}]\n")
    (t,) = load_spec(path, ["base.trainer={lr: 0.5, steps: 9}"]).trials
    assert (t.config.trainer.lr, t.config.trainer.steps, t.config.trainer.eval_mode) == (0.5, 9, "greedy")


@pytest.mark.slow
@pytest.mark.parametrize("override, needles", [
    ("+base.trainer.lr=1", ["base.trainer.lr already exists; use base.trainer.lr=... or ++base.trainer.lr=..."]),
    ("+seeds=[0]", ["seeds already exists; use seeds=... or ++seeds=..."]),
    ("base.trainer.lrr=1", ["base.trainer.lrr: unknown key (did you mean 'base.trainer.lr'?)"]),
    ("++base.trainer.lrr=1", ["base.trainer.lrr: unknown key (did you mean 'base.trainer.lr'?)"]),
    ("~base.trainer.nonexistent", ["base.trainer.nonexistent: unknown key", "expected one of", "'lr'"]),
    ("~base.trainr.lr", ["base.trainr: unknown key (did you mean 'base.trainer'?)"]),
    ("~base.trainer.lr=5e-4", ["base.trainer.lr: not deleted: its value is 0.0001, not 0.0005"]),
    ("~base.algorithm.params.eps_low", ["base.algorithm.params.eps_low: variants[0] sets clip.low (= algorithm.params.eps_low) itself"]),
    ("~max_trials", ["max_trials: cannot delete it: it has no value"]),
    ("seedz=[0]", ["seedz: unknown key (did you mean 'seeds'?)"]),
    ("seeds=0,1", ["seeds: expected one value, got a Hydra sweep (0,1)", "[a,b]"]),
    ("base.trainer.lr=choice(1,2)", ["base.trainer.lr: expected one value, got a Hydra sweep"]),
    ("base.trainer.lr.x=1", ["base.trainer.lr: expected a mapping to set base.trainer.lr.x in, got 0.0001"]),
    ("variants.7.eps_high=0.3", ["variants.7: expected an index below 5"]),
    ("seeds", ["not a valid override in Hydra's grammar", "missing EQUAL"]),
    ("base.model.name=café", ["unexpected character 'é' at position 20", "quote"]),
    ("base.x@pkg=1", ["'@package' is not supported"]),
])
def test_bad_overrides_name_the_key(override, needles, empty_cwd):
    with pytest.raises(SpecError) as err:
        load_spec(SPEC, [override])
    msg = str(err.value)
    assert f"dhpo_vs_baselines.yaml (command-line override {override!r})" in msg, msg
    for needle in needles:
        assert needle in msg, msg


# ---------------------------------------------------------------------------------------------
# preset groups


@pytest.mark.slow
def test_group_forms(empty_cwd):
    (empty_cwd / "checkpoints" / "Qwen3-0.6B").mkdir(parents=True)  # the qwen preset's path
    qwen = [{"trainer": "local_tiny"}, {"model": "qwen3_0.6b_local"}, {"data": "arith"}]
    assert load_spec(SPEC, ["model=qwen3_0.6b_local"]).raw["defaults"] == qwen
    assert load_spec(SPEC, ["++base.model=qwen3_0.6b_local"]).raw["defaults"] == qwen
    spec = load_spec(SPEC, ["~base.model"])  # the preset leaves defaults: the dataclass defaults remain
    assert spec.raw["defaults"] == [{"trainer": "local_tiny"}, {"data": "arith"}]
    assert {t.config.model.name for t in spec.trials} == {"tiny-qwen3"}
    assert load_spec(SPEC, ["~model=tiny_qwen3", "+model=tiny_qwen3"]).raw["defaults"][-1] == {"model": "tiny_qwen3"}


@pytest.mark.parametrize("override, needle", [
    ("+model=qwen3_0.6b_local", "model already exists (defaults has the model preset 'tiny_qwen3'); use model=... or ++model=..."),
    ("~model=qwen3_0.6b_local", "~model: not deleted: the model preset is 'tiny_qwen3', not 'qwen3_0.6b_local'"),
    ("model=qwen3_7b", "no preset 'qwen3_7b'"),
])
def test_bad_group_overrides(override, needle, empty_cwd):
    with pytest.raises(SpecError, match="command-line override") as err:
        load_spec(SPEC, [override])
    assert needle in str(err.value)


def test_deleting_a_group_that_is_not_in_defaults(tmp_path, empty_cwd):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nvariants: [{algorithm: grpo}]\n")
    with pytest.raises(SpecError, match=r"~model: defaults has no model preset to delete"):
        load_spec(path, ["~model"])


# ---------------------------------------------------------------------------------------------
# the command line: trial keys are shorthand for base.<key>, in every form


CLI_FORMS = ["trainer.steps=50", "++seeds=[0]", "trainer.lr=3e-4", "~trainer.lr=3e-4", "++trainer.eval_k=2",
             "~local.warm_start.answer_noise", "++model=tiny_qwen3"]


def test_cli_forms_reach_the_trials(empty_cwd):
    code, out = dry_run(*CLI_FORMS)
    assert code == 0, out
    assert "dhpo_vs_baselines: 6 trials" in out and "grpo-clip0.2-0.2.s0" in out and ".s1" not in out
    spec = load_user_spec(SPEC, CLI_FORMS, smoke=False)
    assert {(t.config.trainer.steps, t.config.trainer.lr, t.config.trainer.eval_k, t.config.local.warm_start.answer_noise)
            for t in spec.trials} == {(50, 1e-4, 2, 0.4)}


@pytest.mark.slow
@pytest.mark.parametrize("args, needles", [
    (["+trainer.lr=1"], ["+trainer.lr=1", "trainer.lr already exists; use trainer.lr=... or ++trainer.lr=..."]),
    (["trainer.lrr=1"], ["trainer.lrr: unknown key (did you mean 'trainer.lr'?)"]),
    (["++trainer.lrr=1"], ["trainer.lrr: unknown key (did you mean 'trainer.lr'?)"]),
    (["~trainer.nonexistent"], ["~trainer.nonexistent", "trainer.nonexistent: unknown key"]),
    (["trainer.lr=3e-4", "~trainer.lr=1e-3"], ["trainer.lr: not deleted: its value is 0.0003, not 0.001"]),
    (["+seeds=[0]"], ["seeds already exists; use seeds=... or ++seeds=..."]),
    (["trainer.steps=1,2"], ["trainer.steps: expected one value, got a Hydra sweep"]),
    (["model.name=${oc.env:HOME}"], ["model.name", "not allowed"]),
    (["trainer.grad_clip=inf"], ["trainer.grad_clip: expected a finite number, got inf"]),
])
def test_cli_bad_overrides_exit_2_naming_the_key(args, needles, empty_cwd):
    code, out = dry_run(*args)
    assert code == 2, out
    assert "error:" in out
    for needle in needles:
        assert needle in out, out
    assert list(empty_cwd.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("depth, needle", [(40, "nested more than 32 levels deep"), (3000, "nested too deeply")])
def test_deeply_nested_values_fail_fast(depth, needle, empty_cwd):
    with pytest.raises(SpecError, match=needle):
        load_spec(SPEC, ["base.data.benchmarks=" + "[" * depth + "]" * depth])
