"""Tests for the `sweep` command line that need no Ray and no MLflow: dry runs, overrides, --smoke.

`sweep run <spec> --dry-run` must list every trial id and the resources line and create no files;
a spec that fails validation exits with code 2 (see also test_sweep_spec.py, malformed specs).
The runner module is replaced by a stub, so a test that wrongly gets past the dry run fails
instead of starting Ray.
"""

from __future__ import annotations

import enum

import pytest
import typer
from typer.testing import CliRunner

from sweeps.cli import app
from sweeps.commands.spec_input import SMOKE_OVERRIDES
from sweeps.commands.spec_input import load_user_spec
from sweeps.specs.load import CONFIGS_DIR, load_spec
from sweep_testlib import REPO, shipped_user_inputs

SHIPPED = sorted((CONFIGS_DIR / "sweeps").glob("*.yaml"))
INPUTS = REPO / ".cache" / "shipped_inputs"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def flat(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines at the terminal width


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_dry_run_lists_every_trial_and_the_resources(path, empty_cwd):
    inputs = shipped_user_inputs(path, INPUTS)  # the model/data paths a spec's first line documents
    spec = load_user_spec(str(path), inputs, smoke=False)
    result = invoke("run", path.name, *inputs, "--dry-run")
    assert result.exit_code == 0, result.output
    for t in spec.trials:
        assert t.trial_id in result.output, f"{t.trial_id} missing (or cut) in the dry-run table"
    out = flat(result.output)
    r = spec.resources
    assert f"{spec.name}: {len(spec.trials)} trials" in out
    assert f"resources per trial: {r.cpus:g} CPU, {r.gpus:g} GPU; max concurrent: {spec.max_concurrent}" in out
    assert f"retries per trial: {spec.max_failures}" in out
    verl = [t for t in spec.trials if t.config.backend == "verl"]
    # a verl trial's exact main_ppo command, one per trial, with its own objective
    assert result.output.count("-m verl.trainer.main_ppo") == len(verl)
    for t in verl:
        assert f"# {t.trial_id}\n" in result.output
        assert f"policy_loss.loss_mode=zoo_{t.config.algorithm.name}" in result.output
    assert list(empty_cwd.iterdir()) == [], "a dry run must not create files (runs/, mlflow.db, .ray)"


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_dry_run_table_is_whole_at_80_columns(path, empty_cwd):
    inputs = shipped_user_inputs(path, INPUTS)
    result = CliRunner().invoke(app, ["run", path.name, *inputs, "--dry-run"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    table = [ln for ln in result.output.splitlines() if ln[:1] in "┏┃┡│└"]
    assert table and max(len(ln) for ln in table) <= 80, max(table, key=len)
    assert "…" not in result.output  # nothing cut: ids, methods and params are shown whole (folded)
    for t in load_user_spec(str(path), inputs, smoke=False).trials:
        for k, v in t.config.algorithm.params.items():
            assert f"{k}={v}" in result.output


@pytest.mark.parametrize("command", ["", "run", "resume", "status", "ui", "ls-objectives", "report", "table", "plan", "eval"])
def test_help_is_whole_at_80_columns(command):
    result = CliRunner().invoke(app, [*filter(None, [command]), "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, [ln for ln in result.output.splitlines() if "…" in ln]
    assert max(len(ln) for ln in result.output.splitlines()) <= 80
    # A list of choices is shown whole on one line: a narrow column wraps it without any "…"
    command_obj = typer.main.get_command(app)
    command_obj = command_obj.commands[command] if command else command_obj
    for param in command_obj.params:
        choices = getattr(getattr(param, "type_descriptor", None), "annotation", None)
        if isinstance(choices, type) and issubclass(choices, enum.Enum):
            shown = param.metavar or "|".join(str(m.value) for m in choices)
            assert shown in result.output, (param.name, shown)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dhpo_clip_ablation", "dhpo_clip_ablation.yaml"])
def test_dry_run_by_name_with_and_without_suffix(name, empty_cwd):
    result = invoke("run", name, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "dhpo_clip_ablation: 12 trials" in flat(result.output)
    assert "dhpo-entropy-unified-clip0.2-0.28.s2" in result.output
    assert list(empty_cwd.iterdir()) == []


def test_dry_run_with_overrides(empty_cwd):
    result = invoke("run", "dhpo_vs_baselines.yaml", "trainer.steps=50", "seeds=[0]", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "dhpo_vs_baselines: 6 trials" in flat(result.output)
    assert "grpo-clip0.2-0.2.s0" in result.output and ".s1" not in result.output
    assert list(empty_cwd.iterdir()) == []


def test_overrides_resolve_into_the_trial_configs(empty_cwd):
    spec = load_user_spec("dhpo_vs_baselines", ["trainer.steps=50", "seeds=[0]"], smoke=False)
    assert len(spec.trials) == 6
    assert {(t.config.trainer.steps, t.config.seed) for t in spec.trials} == {(50, 0)}
    # untouched values keep the preset's
    assert {t.config.trainer.group_size for t in spec.trials} == {8}


def test_spec_level_overrides_are_not_sent_to_the_trial_config(tmp_path, empty_cwd):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nvariants: [{algorithm: grpo}]\n"
                    "search: {metric: val/avg/acc, num_samples: 8, space: {trainer.lr: {type: float, low: 1.0e-4, high: 1.0e-2}}}\n")
    spec = load_user_spec(str(path), ["search.num_samples=3", "resources.gpus=0.5", "max_failures=0", "base.trainer.lr=5e-4",
                             "local.warm_start.steps=0"], smoke=False)
    assert spec.search["num_samples"] == 3
    assert (spec.resources.cpus, spec.resources.gpus) == (1.0, 0.5)
    assert spec.max_failures == 0
    (t,) = spec.trials
    assert t.config.trainer.lr == 5e-4 and t.config.local.warm_start.steps == 0


@pytest.mark.slow
def test_smoke_is_one_seed_and_a_few_steps(empty_cwd):
    full = load_spec("dhpo_vs_baselines")
    spec = load_user_spec("dhpo_vs_baselines", [], smoke=True)
    assert len(spec.trials) == len({t.config_id for t in full.trials}) == 6
    assert {t.config.seed for t in spec.trials} == {0}
    assert {t.config.trainer.steps for t in spec.trials} == {4}
    assert spec.name == "dhpo_vs_baselines_smoke"  # smoke trials never mix with the real ones
    assert all(t.config.trainer.eval_every <= t.config.trainer.steps for t in spec.trials)
    assert "seeds=[0]" in SMOKE_OVERRIDES
    result = invoke("run", "dhpo_vs_baselines", "--smoke", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "dhpo_vs_baselines_smoke: 6 trials" in flat(result.output)  # its own experiment
    assert list(empty_cwd.iterdir()) == []


@pytest.mark.slow
def test_smoke_run_says_its_sweep_name_and_how_to_look_at_it(empty_cwd):
    """--smoke renames the sweep NAME_smoke: said when it starts (a dry run too) and again when it ends, with
    the commands that show it; the read commands take --smoke for that name."""
    import sys
    from types import SimpleNamespace

    dry = flat(invoke("run", "dhpo_vs_baselines", "--smoke", "--dry-run").output)
    assert "note: --smoke: this sweep is named dhpo_vs_baselines_smoke" in dry
    assert "sweep status dhpo_vs_baselines_smoke (or sweep status dhpo_vs_baselines --smoke" in dry
    assert "note: --smoke" not in invoke("run", "dhpo_vs_baselines", "--dry-run").output
    runner = sys.modules["sweeps.driver.runner"]  # empty_cwd's stub: a finished sweep, nothing run
    runner.RunOptions = lambda **options: SimpleNamespace(**options)
    runner.run_sweep = lambda spec, options: SimpleNamespace(
        statuses={t.trial_id: "FINISHED" for t in spec.trials}, seconds=3.0, tracking_uri="sqlite:///m.db",
        parent_run_id="p1")
    done = invoke("run", "dhpo_vs_baselines", "--smoke", "--no-report", "--no-progress")
    assert done.exit_code == 0, done.output
    last = done.output.strip().splitlines()[-1]
    assert last == ("smoke sweep dhpo_vs_baselines_smoke: sweep status dhpo_vs_baselines_smoke | sweep report "
                    "dhpo_vs_baselines_smoke | sweep ui dhpo_vs_baselines_smoke --open"), done.output
    from tracking_store.client import open_client

    open_client(f"sqlite:///{empty_cwd / 'runs' / 'mlflow.db'}").create_experiment("other")
    for command in ("status", "report", "ui"):  # NAME --smoke (no spec of that name) is the sweep NAME_smoke
        looked = flat(invoke(command, "my_sweep", "--smoke").output)
        assert "sweep 'my_sweep_smoke'" in looked and "spec file not found" not in looked, (command, looked)


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_smoke_is_valid_for_every_shipped_spec(path, empty_cwd):
    spec = load_user_spec(str(path), shipped_user_inputs(path, INPUTS), smoke=True)
    offsets = [v.get("seed_offset", 0) for v in spec.raw["variants"]]  # a variant's seeds shifted by its offset
    assert {t.config.seed - offsets[t.variant] for t in spec.trials} == {0}
    assert max(t.config.trainer.steps for t in spec.trials) <= 10


@pytest.mark.slow
def test_explicit_overrides_win_over_smoke(empty_cwd):
    spec = load_user_spec("dhpo_clip_ablation", ["trainer.steps=6", "seeds=[1]"], smoke=True)
    assert {(t.config.trainer.steps, t.config.seed) for t in spec.trials} == {(6, 1)}


def test_bad_override_exits_2(empty_cwd):
    result = invoke("run", "dhpo_vs_baselines", "trainer.group_size=1", "--dry-run")
    assert result.exit_code == 2
    assert "trainer.group_size" in flat(result.output)
    assert list(empty_cwd.iterdir()) == []


def test_unknown_spec_exits_2_and_lists_the_shipped_ones(empty_cwd):
    result = invoke("run", "dhpo_vs_baselinez", "--dry-run")
    assert result.exit_code == 2
    out = flat(result.output)
    assert "spec file not found" in out and "dhpo_vs_baselines.yaml" in out
    assert list(empty_cwd.iterdir()) == []


def test_error_message_is_printed_verbatim(empty_cwd):
    """Rich must not break a long path inside the message (it is copied from the terminal)."""
    (empty_cwd / "bad.yaml").write_text("name: t\nbase: {data: {train_file: " + "d" * 90 + ".jsonl}}\n"
                                        "variants: [{algorithm: grpo}]\n")
    result = invoke("run", "bad.yaml", "--dry-run")
    assert result.exit_code == 2
    assert str(empty_cwd / ("d" * 90 + ".jsonl")) in result.output
    assert "variants[0]" in result.output


@pytest.mark.parametrize("target", ["models/qwen3-base", "qwen3-base", "model.safetensors"])
def test_eval_of_a_missing_path_without_a_store_names_the_path_not_the_store(target, empty_cwd):
    """No MLflow store yet: a TARGET that is no directory is said as such (the path, what sweep eval takes), not
    as 'no MLflow store'; a sweep spec still needs the store. Nothing is created."""
    if target.endswith(".safetensors"):
        (empty_cwd / target).write_bytes(b"")
    result = invoke("eval", target)
    out = flat(result.output)
    assert result.exit_code == 2, out
    assert out.startswith(f"error: {target}: ") and not out.startswith("error: no MLflow store"), out
    assert "sweep eval TARGET takes a checkpoint directory" in out and "a sweep spec" in out
    if target.endswith(".safetensors"):
        assert "a file, not a checkpoint directory" in out
    else:
        assert f"no such checkpoint directory ({empty_cwd / target} does not exist)" in out
    spec = flat(invoke("eval", "dhpo_vs_baselines").output)
    assert spec.startswith("error: no MLflow store at") and str(empty_cwd / "runs" / "mlflow.db") in spec
    assert sorted(p.name for p in empty_cwd.iterdir()) == ([target] if target.endswith(".safetensors") else [])


def test_ls_objectives_lists_the_registry():
    result = invoke("ls-objectives")
    assert result.exit_code == 0
    for name in ("grpo", "gspo", "gmpo", "cispo", "sapo", "sspo", "dhpo"):
        assert f"{name}:" in result.output
