"""Spec hardening beyond the MALFORMED table of test_sweep_spec.py: safe trial ids, command-line
overrides (interpolation, non-finite numbers, YAML safety, preset switches), the grid cap."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from sweeps.cli import app
from sweeps.specs.load import CONFIGS_DIR, SpecError, load_spec, search_trial

SAFE_ID = r"[A-Za-z0-9_.+-]+"


def spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------------
# trial ids


def test_trial_ids_are_sanitised_to_a_safe_charset(tmp_path):
    path = spec_file(tmp_path, 'name: t\nvariants:\n  - {algorithm: grpo, model.name: ["..", "a/b", "x[/]y", '
                               '"nul\\0x", "line\\nbreak", "café", ok]}\n')
    ids = [t.trial_id for t in load_spec(path).trials]
    assert ids == ["grpo-_.s0", "grpo-a_b.s0", "grpo-x___y.s0", "grpo-nul_x.s0", "grpo-line_break.s0",
                   "grpo-caf_.s0", "grpo-ok.s0"]
    runs = tmp_path / "runs"
    for trial_id in ids:
        assert (runs / trial_id).resolve().parent == runs.resolve()  # one directory level, never an escape
    table = Table()  # rich reads cells as markup: an id like 'x[/]y' raised MarkupError
    table.add_column("trial id")
    for trial_id in ids:
        table.add_row(trial_id)
    out = io.StringIO()
    Console(file=out, width=200).print(table)
    assert all(trial_id in out.getvalue() for trial_id in ids)


def test_long_trial_ids_are_capped_unique_and_stable(tmp_path):
    a, b = "x" * 300, "x" * 299 + "y"
    path = spec_file(tmp_path, f"name: t\nseeds: [4294967295]\nvariants: [{{algorithm: grpo, model.name: [{a}, {b}]}}]\n")
    ids = [t.trial_id for t in load_spec(path).trials]
    # head of the readable id + "-" + sha1("grpo-" + "x" * 300)[:8]: the same in every process
    assert ids[0] == "grpo-" + "x" * 94 + "-dd807d53.s4294967295"
    assert len(ids) == len(set(ids)) == 2 and all(len(i) == 120 for i in ids)
    assert ids[1].startswith("grpo-" + "x" * 94 + "-") and ids[1] != ids[0]
    short = [t.trial_id for t in load_spec(spec_file(tmp_path, "name: t\nvariants: [{algorithm: grpo, "
                                                                f"model.name: {'x' * 103}}}]\n")).trials]
    assert short == ["grpo-" + "x" * 103 + ".s0"]  # 108 characters before the seed: kept whole


def test_search_sample_ids_are_sanitised(tmp_path):
    spec = load_spec(spec_file(tmp_path, "name: t\nvariants: [{algorithm: grpo}]\nsearch: {metric: val/avg/acc, "
                                         "space: {model.name: {type: choice, values: ['x[/]y', '../z']}}}\n"))
    assert search_trial(spec.trials[0], {"model.name": "x[/]y"}).trial_id == "grpo-x___y.s0"
    assert search_trial(spec.trials[0], {"model.name": "../z"}).trial_id == "grpo-__z.s0"


def test_labels_may_have_spaces_and_unicode_up_to_60_characters(tmp_path):
    label = "DAPO clip-higher (ours, ε=0.28) " + "x" * 28
    assert len(label) == 60
    spec = load_spec(spec_file(tmp_path, f"name: t\nvariants: [{{algorithm: grpo, label: '{label}'}}, "
                                         "{algorithm: gspo, label: inference}]\n"))
    assert [t.method for t in spec.trials] == [label, "inference"]


# ---------------------------------------------------------------------------------------------
# command-line overrides (Hydra's grammar, trainers/overrides.py): the same value checks as the spec text


@pytest.mark.parametrize("override, needles", [
    ("base.model.name=${oc.env:HOME}", ["base.model.name", "expected a plain value", "'${oc.env:HOME}'"]),
    ("base.model.name='${oc.env:HOME}'", ["base.model.name", "expected a plain value", "'${oc.env:HOME}'"]),
    ("base.trainer.grad_clip=inf", ["base.trainer.grad_clip: expected a finite number, got inf"]),  # Hydra: a float
    ("base.trainer.grad_clip=.inf", ["base.trainer.grad_clip: expected a finite number, got '.inf'"]),  # a string
    ("base.trainer.lr=nan", ["base.trainer.lr: expected a finite number, got nan"]),
    ("base.trainer.lr='nan'", ["base.trainer.lr: expected a finite number, got 'nan'"]),
    ("base.trainer.lr=-inf", ["base.trainer.lr: expected a finite number, got -inf"]),
    ("base.trainer.lr=-.inf", ["base.trainer.lr: expected a finite number, got '-.inf'"]),
    ("base.trainer.lr=1e400", ["base.trainer.lr: expected a finite number, got inf"]),
    ("base.trainer={lr: 1e999}", ["base.trainer.lr: expected a finite number, got inf"]),
    ("seeds=[&a 1, *a]", ["not a valid override", "unexpected character '&' at position 8"]),  # no YAML anchors
], ids=["env", "env_quoted", "inf", "dot_inf", "nan", "nan_string", "neg_inf", "neg_dot_inf", "overflow",
        "nested", "alias"])
def test_overrides_are_checked_like_the_spec(override, needles, empty_cwd):
    with pytest.raises(SpecError) as err:
        load_spec("dhpo_vs_baselines", [override])
    msg = str(err.value)
    assert "dhpo_vs_baselines.yaml (command-line override" in msg and repr(override) in msg, msg
    for needle in needles:
        assert needle in msg, msg


def test_cli_refuses_an_environment_interpolation(empty_cwd):
    result = CliRunner().invoke(app, ["run", "dhpo_vs_baselines", "model.name=${oc.env:HOME}", "--dry-run"])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "override 'model.name=" in out and ": model.name" in out and "${oc.env:HOME}" in out and "not allowed" in out


@pytest.mark.slow
@pytest.mark.parametrize("override", ["base.model=qwen3_0.6b_local", "model=qwen3_0.6b_local"])
def test_a_group_override_switches_the_preset(override, empty_cwd):
    (empty_cwd / "checkpoints" / "Qwen3-0.6B").mkdir(parents=True)  # the preset's path, relative to the cwd
    spec = load_spec("dhpo_vs_baselines", [override])
    assert {(t.config.model.name, t.config.model.path, t.config.local.warm_start.steps) for t in spec.trials} == {
        ("Qwen3-0.6B", str((empty_cwd / "checkpoints" / "Qwen3-0.6B").resolve()), 0)}
    assert spec.raw["defaults"] == [{"trainer": "local_tiny"}, {"model": "qwen3_0.6b_local"}, {"data": "arith"}]
    assert len(spec.trials) == 18


def test_a_group_override_adds_a_preset_missing_from_defaults(tmp_path, empty_cwd):
    (empty_cwd / "checkpoints" / "Qwen3-0.6B").mkdir(parents=True)
    spec = load_spec(spec_file(tmp_path, "name: t\nvariants: [{algorithm: grpo}]\n"), ["model=qwen3_0.6b_local"])
    assert spec.raw["defaults"] == [{"model": "qwen3_0.6b_local"}]
    assert spec.trials[0].config.model.name == "Qwen3-0.6B"


def test_cli_model_override_switches_the_preset(empty_cwd):
    (empty_cwd / "checkpoints" / "Qwen3-0.6B").mkdir(parents=True)
    result = CliRunner().invoke(app, ["run", "dhpo_vs_baselines", "model=qwen3_0.6b_local", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "dhpo-entropy-branch.s2" in result.output


@pytest.mark.parametrize("override, needles", [
    ("base.model=qwen3_7b", ["no preset 'qwen3_7b'", "['qwen3_0.6b_local', 'qwen3_1.7b_base', 'qwen3_4b_base', 'tiny_qwen3']"]),
    ("model=../trainer/local_tiny", ["model: expected a preset name", "no '/', '..'", "'../trainer/local_tiny'"]),
    (f"base.data={CONFIGS_DIR / 'data' / 'arith'}", ["data: expected a preset name", "absolute path"]),
], ids=["unknown", "parent_dir", "absolute"])
def test_a_bad_group_override_names_the_options(override, needles, empty_cwd):
    with pytest.raises(SpecError) as err:
        load_spec("dhpo_vs_baselines", [override])
    msg = str(err.value)
    assert f"(command-line override {override!r})" in msg, msg
    for needle in needles:
        assert needle in msg, msg


# ---------------------------------------------------------------------------------------------
# size limits: checked before anything is expanded


GRID = "name: t\nseeds: [0, 1]\nvariants: [{algorithm: grpo, eps_high: [0.2, 0.28, 0.3], trainer.lr: [1, 2, 3, 4]}]\n"


def test_max_trials_is_inclusive_and_can_be_raised(tmp_path):
    assert len(load_spec(spec_file(tmp_path, GRID + "max_trials: 24\n")).trials) == 24
    with pytest.raises(SpecError, match=r"variants\[0\]: expands to 24 trials \(3 x 4 configuration\(s\) x 2 seed"):
        load_spec(spec_file(tmp_path, GRID + "max_trials: 23\n"))
    assert len(load_spec(spec_file(tmp_path, GRID + "max_trials: 23\n"), ["max_trials=24"]).trials) == 24


@pytest.mark.slow
def test_a_huge_grid_fails_before_expanding(tmp_path):
    axis = ", ".join(str(i) for i in range(1, 1001))
    path = spec_file(tmp_path, f"name: t\nvariants: [{{algorithm: grpo, trainer.eval_every: [{axis}], "
                               f"trainer.eval_k: [{axis}], trainer.steps: [{axis}]}}]\n")
    start = time.perf_counter()
    with pytest.raises(SpecError, match="expands to 1000000000 trials"):
        load_spec(path)
    assert time.perf_counter() - start < 5


def test_an_alias_bomb_fails_fast(tmp_path):
    lines = ["name: t", "variants:", "  - {algorithm: grpo, label: &l0 lol}"]
    lines += [f"  - {{algorithm: grpo, x{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]}}" for i in range(1, 12)]
    start = time.perf_counter()
    with pytest.raises(SpecError, match=r"variants\[0\]\.label: YAML anchors and aliases \('&l0', line 3"):
        load_spec(spec_file(tmp_path, "\n".join(lines) + "\n"))
    assert time.perf_counter() - start < 2


def test_an_unknown_variant_key_lists_each_allowed_key_once(tmp_path):
    path = spec_file(tmp_path, "name: t\nvariants:\n  - {algorithm: grpo, bogus: 1}\n")
    with pytest.raises(SpecError, match="unknown key 'bogus'") as err:
        load_spec(path)
    listed = str(err.value).split("expected one of ", 1)[1]
    names = [n.strip(" '[]") for n in listed.split(",")]
    assert "algorithm" in names and "eps_high" in names and len(names) == len(set(names)), names


def test_search_samples_that_differ_past_six_digits_get_their_own_ids(tmp_path):
    """500 uniform samples of eps_low in [0.1, 0.3] printed to 6 digits collide about every other sweep (a
    birthday bound over ~200,000 values): the second sample then shared the first's id and record."""
    spec = load_spec(spec_file(tmp_path, "name: t\nvariants: [{algorithm: grpo}]\nsearch: {metric: val/avg/acc, "
                                         "space: {algorithm.params.eps_low: {type: float, low: 0.1, high: 0.3}}}\n"))
    a, b = 0.2134561234, 0.2134564321  # equal to 6 significant digits
    ids = {search_trial(spec.trials[0], {"algorithm.params.eps_low": v}).trial_id for v in (a, b)}
    assert len(ids) == 2 and f"grpo-lo{a!r}.s0" in ids
    again = search_trial(spec.trials[0], {"algorithm.params.eps_low": a})
    assert again.trial_id in ids and again.config.algorithm.params["eps_low"] == a  # stable, and the exact value
