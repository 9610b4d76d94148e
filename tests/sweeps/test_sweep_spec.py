"""Tests for sweeps.specs.load: every shipped spec, trial ids, grid expansion, and malformed specs.

Shipped specs are found by glob, so a new configs/sweeps/*.yaml is covered without editing this file.
Malformed specs must fail with a SpecError that names the file, the key path and what was expected,
before anything (MLflow store, run directory) is created.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from functools import lru_cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweeps.cli import app
from sweeps.specs.load import CONFIGS_DIR, SpecError, SweepSpec, load_spec, resolve_spec_path
from sweep_testlib import REPO, shipped_base_overrides
from trainers.config import TrialConfig
from trainers.objectives import get_objective

SHIPPED = sorted((CONFIGS_DIR / "sweeps").glob("*.yaml"))
TRIAL_ID = re.compile(r"^[a-z][a-z0-9]*(-[A-Za-z0-9_.+]+)*\.s\d+$")


INPUTS = REPO / ".cache" / "shipped_inputs"  # placeholder user inputs of specs that need them (model, data)


@lru_cache(maxsize=None)
def _shipped(path: Path) -> SweepSpec:
    return load_spec(path, shipped_base_overrides(path, INPUTS))


def write_spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def resolved_params(cfg: TrialConfig):
    """The objective's full parameters: the trial's explicit ones over the paper defaults."""
    return get_objective(cfg.algorithm.name, **cfg.algorithm.params).params


def by_config(spec: SweepSpec) -> dict[str, list]:
    out: dict[str, list] = {}
    for t in spec.trials:
        out.setdefault(t.config_id, []).append(t)
    return out


# ---------------------------------------------------------------------------------------------
# every shipped spec


def test_there_are_shipped_specs():
    assert {p.stem for p in SHIPPED} >= {"dhpo_vs_baselines", "sspo_temperature_grid", "dhpo_clip_ablation"}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_spec_opens_with_the_command_that_runs_it(path):
    first = path.read_text().splitlines()[0]
    m = re.fullmatch(r"# sweep run (\S+)(?: .*)?", first)
    assert m, f"{path.name}: first line must be '# sweep run {path.name}', got {first!r}"
    assert resolve_spec_path(m.group(1)).resolve() == path.resolve()


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_spec_loads_validates_and_expands(path, empty_cwd):
    spec = _shipped(path)
    assert spec.name == path.stem  # the MLflow experiment is the sweep name
    assert spec.trials
    seeds = spec.raw.get("seeds", [0])
    ids = [t.trial_id for t in spec.trials]
    assert len(set(ids)) == len(ids), "trial ids must be unique"
    for t in spec.trials:
        assert TRIAL_ID.fullmatch(t.trial_id), t.trial_id
        assert t.trial_id == f"{t.config_id}.s{t.config.seed}"
        assert t.config_id.split("-")[0] == t.config.algorithm.name
        assert isinstance(t.config, TrialConfig)
        resolved_params(t.config)  # the objective accepts the parameters
        assert t.method and t.tags["method"] == t.method and t.tags["seed"] == str(t.config.seed)
    # every configuration runs once per seed (shifted by its variant's seed_offset), with the same config apart
    # from the seed
    for config_id, trials in by_config(spec).items():
        offset = spec.raw["variants"][trials[0].variant].get("seed_offset", 0)
        assert sorted(t.config.seed for t in trials) == sorted(s + offset for s in seeds), config_id
        dicts = [{**t.config.to_dict(), "seed": None} for t in trials]
        assert all(d == dicts[0] for d in dicts), f"{config_id}: seeds differ in more than the seed"
    # the report: section as written, with the benchmark and method order the report uses filled in
    written = spec.raw.get("report", {})
    assert {k: v for k, v in spec.report.items() if k != "table"} == {k: v for k, v in written.items() if k != "table"}
    table = spec.report["table"]
    assert {k: table[k] for k in written.get("table", {})} == written.get("table", {})
    assert table.get("methods", list(dict.fromkeys(t.method for t in spec.trials))) == \
        written.get("table", {}).get("methods", list(dict.fromkeys(t.method for t in spec.trials)))
    assert table["benchmarks"]
    assert list(empty_cwd.iterdir()) == [], "loading a spec must not create files"


# The documented naming (algorithm, then each variant value in spec order: clip<low>-<high>, the short
# names tn/tp/lo/hi of SHORT, strings as written), written out: ids must not change between versions.
SHIPPED_CONFIG_IDS = {
    "dhpo_vs_baselines": ["grpo-clip0.2-0.2", "gspo-clip0.0003-0.0004", "gmpo-clip0.4-0.4", "cispo-clip10-0.2",
                          "dhpo-averaged-branch", "dhpo-entropy-branch"],
    "dhpo_clip_ablation": ["dhpo-averaged-branch", "dhpo-entropy-branch", "dhpo-averaged-unified-clip0.2-0.28",
                           "dhpo-entropy-unified-clip0.2-0.28"],
    "sspo_temperature_grid": [f"{a}-clip{e}-{e}" for a in ("grpo", "gmpo") for e in (0.1, 0.2, 0.3)]
    + ["sapo-tn1-tp1.05", "sapo-tn3-tp4", "sapo-tn7-tp8"]
    + [f"sspo-{g}-{t}" for t in ("tn0.3-tp0.2", "tn0.6-tp0.5") for g in ("atanlog", "siglog", "expatan", "expsig")]
    + ["sspo-gumbel"],
    "positive_control": ["grpo-clip0.2-0.2", "grpo-clip0.2-0.2-lr1e-06", "grpo-clip0.2-0.2-seed+100"],
}


@pytest.mark.parametrize("name", sorted(SHIPPED_CONFIG_IDS))
def test_shipped_spec_ids_match_the_documented_naming(name):
    """Each configuration once per seed, in spec order, with the id the naming rule gives (written out
    here, not recomputed: a change of the id scheme would orphan recorded MLflow runs)."""
    spec = _shipped(CONFIGS_DIR / "sweeps" / f"{name}.yaml")
    seeds = spec.raw.get("seeds", [0])
    offset = {c: int(m.group(1)) if (m := re.search(r"-seed\+(\d+)$", c)) else 0 for c in SHIPPED_CONFIG_IDS[name]}
    assert [t.trial_id for t in spec.trials] == [f"{c}.s{s + offset[c]}" for c in SHIPPED_CONFIG_IDS[name] for s in seeds]


@pytest.mark.slow
def test_trial_ids_do_not_depend_on_the_process(tmp_path):
    """Same ids and order in a fresh interpreter with another hash seed (resume relies on it)."""
    code = ("import json, sys; from sweeps.specs.load import load_spec; specs = json.loads(sys.argv[1]); "
            "print(json.dumps({p: [t.trial_id for t in load_spec(p, o).trials] for p, o in specs.items()}))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    specs = json.dumps({str(p): shipped_base_overrides(p, INPUTS) for p in SHIPPED})
    out = subprocess.run([sys.executable, "-c", code, specs], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    other = json.loads(out.strip().splitlines()[-1])
    for p in SHIPPED:
        assert other[str(p)] == [t.trial_id for t in _shipped(p).trials]
    assert list(tmp_path.iterdir()) == []


def test_dhpo_vs_baselines_methods_and_app_d_clip_ranges():
    spec = _shipped(CONFIGS_DIR / "sweeps" / "dhpo_vs_baselines.yaml")
    assert len(spec.trials) == 6 * 3
    groups = by_config(spec)
    assert len(groups) == 6
    methods = {trials[0].method: trials for trials in groups.values()}
    assert set(methods) == {"GRPO", "GSPO", "GMPO", "CISPO", "DHPO-A", "DHPO-E"}
    expected = {"GRPO": ("grpo", 0.2, 0.2), "GSPO": ("gspo", 3e-4, 4e-4), "GMPO": ("gmpo", 0.4, 0.4),
                "CISPO": ("cispo", 10.0, 0.2)}
    for method, (algo, low, high) in expected.items():
        for t in methods[method]:
            p = resolved_params(t.config)
            assert t.config.algorithm.name == algo
            assert (p.eps_low, p.eps_high) == pytest.approx((low, high)), method
    for method, mixing in (("DHPO-A", "averaged"), ("DHPO-E", "entropy")):
        for t in methods[method]:
            p = resolved_params(t.config)
            assert t.config.algorithm.name == "dhpo"
            assert (p.mixing, p.clip_mode) == (mixing, "branch")
            assert (p.eps_low_token, p.eps_high_token, p.eps_low_seq, p.eps_high_seq) == pytest.approx((0.2, 0.28, 0.2, 0.28))
    assert {t.config.seed for t in spec.trials} == {0, 1, 2}
    assert {t.trial_id for t in methods["DHPO-E"]} == {"dhpo-entropy-branch.s0", "dhpo-entropy-branch.s1",
                                                        "dhpo-entropy-branch.s2"}


def test_sspo_temperature_grid_is_the_app_a_grid():
    spec = _shipped(CONFIGS_DIR / "sweeps" / "sspo_temperature_grid.yaml")
    assert len(spec.trials) == 54
    grid: dict[str, set] = {}
    for trials in by_config(spec).values():
        t = trials[0]
        p = resolved_params(t.config)
        name = t.config.algorithm.name
        if name in ("grpo", "gmpo"):
            point = (round(p.eps_low, 6), round(p.eps_high, 6))
        elif name == "sapo":
            point = (p.tau_neg, p.tau_pos)
        else:
            point = (p.gate, p.tau_neg, p.tau_pos) if p.gate != "gumbel" else ("gumbel",)
        grid.setdefault(name, set()).add(point)
        assert len(trials) == 3
    assert grid["grpo"] == grid["gmpo"] == {(0.1, 0.1), (0.2, 0.2), (0.3, 0.3)}
    assert grid["sapo"] == {(1.0, 1.05), (3.0, 4.0), (7.0, 8.0)}
    gates = ("atanlog", "siglog", "expatan", "expsig")
    assert grid["sspo"] == {(g, tn, tp) for g in gates for tn, tp in ((0.3, 0.2), (0.6, 0.5))} | {("gumbel",)}
    # where the temperatures act (docs/results.md): the stale setting, greedy evaluation (SSPO's protocol), a
    # selection split the configurations are picked on
    assert {(t.config.trainer.updates_per_rollout, t.config.trainer.ppo_epochs, t.config.trainer.group_size,
             t.config.trainer.eval_mode, t.config.data.select_size) for t in spec.trials} == {(8, 4, 16, "greedy", 64)}
    assert spec.report["table"]["select_on"] == "select"
    assert {t.method for t in spec.trials} == {"GRPO", "GMPO", "SAPO"} | {f"SSPO ({g})" for g in gates + ("gumbel",)}


def test_dhpo_clip_ablation_is_mixing_by_clip_mode():
    spec = _shipped(CONFIGS_DIR / "sweeps" / "dhpo_clip_ablation.yaml")
    assert len(spec.trials) == 2 * 2 * 3
    points = set()
    for trials in by_config(spec).values():
        p = resolved_params(trials[0].config)
        points.add((p.mixing, p.clip_mode))
        if p.clip_mode == "unified":
            assert (p.eps_low, p.eps_high) == pytest.approx((0.2, 0.28))
    assert points == {(m, c) for m in ("averaged", "entropy") for c in ("branch", "unified")}
    assert {t.method for t in spec.trials} == {"DHPO-A", "DHPO-E", "DHPO-A (unified)", "DHPO-E (unified)"}


def test_positive_control_is_grpo_a_worse_grpo_and_an_a_a_replicate_on_other_seeds():
    """positive_control.yaml: the default study's setting; GRPO, GRPO at lr/100 on the same seeds, and GRPO again on
    seeds 100-102 (seed_offset), the report testing each row against GRPO."""
    spec, default = load_spec("positive_control"), load_spec("dhpo_vs_baselines")  # paths resolved in the same cwd
    rows = {m: [t for t in spec.trials if t.method == m] for m in ("GRPO", "GRPO-lr/100", "GRPO-AA")}
    assert [t.trial_id for t in spec.trials] == [
        "grpo-clip0.2-0.2.s0", "grpo-clip0.2-0.2.s1", "grpo-clip0.2-0.2.s2",
        "grpo-clip0.2-0.2-lr1e-06.s0", "grpo-clip0.2-0.2-lr1e-06.s1", "grpo-clip0.2-0.2-lr1e-06.s2",
        "grpo-clip0.2-0.2-seed+100.s100", "grpo-clip0.2-0.2-seed+100.s101", "grpo-clip0.2-0.2-seed+100.s102"]
    reference = {t.config.seed: t.config.to_dict() for t in default.trials if t.method == "GRPO"}
    assert {t.config.seed: t.config.to_dict() for t in rows["GRPO"]} == reference  # GRPO as in the default study
    for t in rows["GRPO-lr/100"]:
        assert {**t.config.to_dict(), "trainer": {**t.config.to_dict()["trainer"], "lr": 1e-4}} == reference[t.config.seed]
        assert t.config.trainer.lr == pytest.approx(reference[t.config.seed]["trainer"]["lr"] / 100)
    for t, ref in zip(rows["GRPO-AA"], rows["GRPO"]):  # the same config, other seeds: a replicate, not a copy
        assert t.config.seed == ref.config.seed + 100
        assert {**t.config.to_dict(), "seed": ref.config.seed} == ref.config.to_dict()
        assert t.config_hash != ref.config_hash
    table = spec.report["table"]
    assert table["baselines"] == ["GRPO"] and table["cells"] == "mean ± ci" and table["base"] == "Base"


# ---------------------------------------------------------------------------------------------
# loading by name, overrides


@pytest.mark.parametrize("name", ["dhpo_vs_baselines", "dhpo_vs_baselines.yaml"])
def test_load_by_name_from_configs_sweeps(name, empty_cwd):
    spec = load_spec(name)
    assert spec.path.resolve() == (CONFIGS_DIR / "sweeps" / "dhpo_vs_baselines.yaml").resolve()
    assert [t.trial_id for t in spec.trials] == [t.trial_id for t in _shipped(CONFIGS_DIR / "sweeps" / "dhpo_vs_baselines.yaml").trials]
    assert list(empty_cwd.iterdir()) == []


def test_a_file_in_the_cwd_wins_over_a_shipped_name(empty_cwd):
    (empty_cwd / "dhpo_vs_baselines.yaml").write_text("name: mine\nvariants: [{algorithm: grpo}]\n")
    assert load_spec("dhpo_vs_baselines.yaml").name == "mine"


def test_unknown_spec_name_lists_the_shipped_specs(empty_cwd):
    with pytest.raises(SpecError, match="spec file not found") as err:
        load_spec("dhpo_vs_baselinez")
    assert "dhpo_vs_baselines.yaml" in str(err.value)


def test_overrides_reach_the_resolved_trial_config(empty_cwd):
    spec = load_spec("dhpo_vs_baselines", ["base.trainer.steps=50", "seeds=[0]", "max_concurrent=1"])
    assert len(spec.trials) == 6
    assert {(t.config.trainer.steps, t.config.seed) for t in spec.trials} == {(50, 0)}
    assert spec.max_concurrent == 1
    assert all(t.trial_id.endswith(".s0") for t in spec.trials)


def test_bad_override_is_a_spec_error(empty_cwd):
    with pytest.raises(SpecError, match="trainer.steps"):
        load_spec("dhpo_vs_baselines", ["base.trainer.steps=0"])
    with pytest.raises(SpecError, match="override"):
        load_spec("dhpo_vs_baselines", ["seeds"])


# ---------------------------------------------------------------------------------------------
# trial ids, grid expansion, labels (small specs without presets: the dataclass defaults)


def ids_of(tmp_path: Path, variants: str, seeds: str = "[0, 1]", extra: str = "") -> list[str]:
    path = write_spec(tmp_path, f"name: t\nseeds: {seeds}\nvariants:\n{variants}{extra}")
    return [t.trial_id for t in load_spec(path).trials]


def test_readable_ids_from_a_dhpo_variant(tmp_path):
    ids = ids_of(tmp_path, "  - {algorithm: dhpo, mixing: [averaged, entropy], clip_mode: branch}\n")
    assert ids == ["dhpo-averaged-branch.s0", "dhpo-averaged-branch.s1", "dhpo-entropy-branch.s0", "dhpo-entropy-branch.s1"]


def test_readable_ids_for_clip_and_temperatures(tmp_path):
    ids = ids_of(tmp_path, "  - {algorithm: grpo, clip: {low: 0.2, high: 0.28}}\n"
                           "  - {algorithm: gspo, clip: {low: 3e-4, high: 4e-4}}\n"
                           "  - {algorithm: sspo, gate: atanlog, tau_neg: 0.6, tau_pos: 0.5}\n", seeds="[2]")
    assert ids == ["grpo-clip0.2-0.28.s2", "gspo-clip0.0003-0.0004.s2", "sspo-atanlog-tn0.6-tp0.5.s2"]


def test_exponent_floats_are_numbers(tmp_path):
    """YAML 1.1 reads 3e-4 as a string; a spec reads it as a number (as Hydra presets do)."""
    path = write_spec(tmp_path, "name: t\nvariants:\n  - {algorithm: gspo, clip: {low: 3e-4, high: 4e-4}, trainer.lr: 5e-4}\n"
                                "search: {metric: val/avg/acc, space: {trainer.lr: {type: float, low: 1e-5, high: 1e-2, log: true}}}\n")
    spec = load_spec(path)
    (t,) = spec.trials
    assert t.config.algorithm.params == {"eps_low": 3e-4, "eps_high": 4e-4}
    assert t.config.trainer.lr == 5e-4
    assert spec.search["space"]["trainer.lr"]["low"] == 1e-5


def test_grid_axes_multiply(tmp_path):
    path = write_spec(tmp_path, "name: t\nseeds: [0, 1]\nvariants:\n"
                                "  - {algorithm: grpo, eps_high: [0.2, 0.28], trainer.lr: [1.0e-3, 3.0e-4, 1.0e-4]}\n")
    spec = load_spec(path)
    assert len(spec.trials) == 2 * 3 * 2
    points = {(t.config.algorithm.params["eps_high"], t.config.trainer.lr, t.config.seed) for t in spec.trials}
    assert points == {(e, lr, s) for e in (0.2, 0.28) for lr in (1e-3, 3e-4, 1e-4) for s in (0, 1)}
    assert len({t.trial_id for t in spec.trials}) == 12
    assert spec.trials[0].trial_id == "grpo-hi0.2-lr0.001.s0"


@pytest.mark.parametrize("variant", ["{algorithm: grpo, trainer.lr: [1e-3, 3e-4]}",
                                     "{algorithm: grpo, trainer: {lr: [1e-3, 3e-4]}}"], ids=["dotted", "nested"])
def test_trial_config_keys_in_a_variant_are_axes(tmp_path, variant):
    spec = load_spec(write_spec(tmp_path, f"name: t\nvariants:\n  - {variant}\n"))
    assert [t.trial_id for t in spec.trials] == ["grpo-lr0.001.s0", "grpo-lr0.0003.s0"]
    assert [t.config.trainer.lr for t in spec.trials] == [1e-3, 3e-4]
    assert all(t.config.trainer.steps == 200 for t in spec.trials)  # siblings of lr keep their defaults


def test_list_valued_field_is_a_value_unless_a_list_of_lists(tmp_path):
    one = load_spec(write_spec(tmp_path, "name: t\nvariants: [{algorithm: grpo, data.benchmarks: [easy, hard]}]\n", "a.yaml"))
    assert [t.config.data.benchmarks for t in one.trials] == [["easy", "hard"]]
    two = load_spec(write_spec(tmp_path, "name: t\nvariants: [{algorithm: grpo, data.benchmarks: [[easy], [hard]]}]\n", "b.yaml"))
    assert [t.config.data.benchmarks for t in two.trials] == [["easy"], ["hard"]]
    assert [t.trial_id for t in two.trials] == ["grpo-easy.s0", "grpo-hard.s0"]


def test_boolean_axis_has_distinct_ids(tmp_path):
    ids = ids_of(tmp_path, "  - {algorithm: gmpo, clip_in_log_space: [true, false]}\n", seeds="[0]")
    assert ids == ["gmpo-clip_in_log_space.s0", "gmpo-no-clip_in_log_space.s0"]


def test_base_algorithm_params_apply_only_to_their_objective(tmp_path):
    spec = load_spec(write_spec(tmp_path, "name: t\nbase: {algorithm: {name: grpo, params: {eps_high: 0.28}}}\n"
                                          "variants: [{algorithm: grpo}, {algorithm: gspo}]\n"))
    grpo, gspo = spec.trials
    assert grpo.config.algorithm.params == {"eps_high": 0.28}
    assert gspo.config.algorithm.params == {}


def test_method_labels(tmp_path):
    spec = load_spec(write_spec(tmp_path, "name: t\nvariants:\n"
                                          "  - {algorithm: grpo}\n"
                                          "  - {algorithm: sspo}\n"
                                          "  - {algorithm: dhpo, mixing: averaged}\n"
                                          "  - {algorithm: dhpo, mixing: entropy}\n"
                                          "  - {algorithm: dhpo, mixing: entropy, clip_mode: unified}\n"
                                          "  - {algorithm: grpo, eps_high: 0.28, label: DAPO clip-higher}\n"))
    assert [t.method for t in spec.trials] == ["GRPO", "SSPO (atanlog)", "DHPO-A", "DHPO-E", "DHPO-E (unified)",
                                               "DAPO clip-higher"]
    assert spec.trials[-1].tags["algorithm"] == "grpo"
    assert [t.variant for t in spec.trials] == list(range(6))


def test_seed_offset_runs_a_variant_on_shifted_seeds(tmp_path):
    """seed_offset: the same configuration on other seeds (an A/A replicate), its ids marked seed+N; the other
    variants and a zero offset keep their seeds and ids."""
    spec = load_spec(write_spec(tmp_path, "name: t\nseeds: [0, 1]\nvariants:\n  - {algorithm: grpo}\n"
                                          "  - {algorithm: grpo, seed_offset: 100, label: GRPO-AA}\n"
                                          "  - {algorithm: gspo, seed_offset: 0}\n"))
    assert [(t.trial_id, t.config_id, t.method, t.config.seed) for t in spec.trials] == [
        ("grpo.s0", "grpo", "GRPO", 0), ("grpo.s1", "grpo", "GRPO", 1),
        ("grpo-seed+100.s100", "grpo-seed+100", "GRPO-AA", 100), ("grpo-seed+100.s101", "grpo-seed+100", "GRPO-AA", 101),
        ("gspo.s0", "gspo", "GSPO", 0), ("gspo.s1", "gspo", "GSPO", 1)]
    a, replicate = spec.trials[0], spec.trials[2]
    assert {**replicate.config.to_dict(), "seed": 0} == a.config.to_dict()
    assert replicate.tags["seed"] == "100" and replicate.config_hash != a.config_hash


def test_seed_offset_on_a_grid_shifts_every_configuration(tmp_path):
    spec = load_spec(write_spec(tmp_path, "name: t\nseeds: [3]\n"
                                          "variants: [{algorithm: grpo, trainer.lr: [1.0e-4, 1.0e-5], seed_offset: 7}]\n"))
    assert [t.trial_id for t in spec.trials] == ["grpo-lr0.0001-seed+7.s10", "grpo-lr1e-05-seed+7.s10"]


def test_relative_data_paths_are_resolved_against_the_launch_dir(tmp_path):
    (tmp_path / "train.jsonl").write_text('{"prompt": "Q: 1+1=?", "answer": "2"}\n')
    spec = load_spec(write_spec(tmp_path, "name: t\nvariants: [{algorithm: grpo, data.train_file: train.jsonl}]\n"),
                     cwd=tmp_path)
    (t,) = spec.trials
    assert t.config.data.train_file == str((tmp_path / "train.jsonl").resolve())
    assert Path(t.config.local.warm_start.cache_dir).is_absolute()


# ---------------------------------------------------------------------------------------------
# malformed specs: (case, YAML text, substrings the message must contain besides the file path)

OK_VARIANTS = "variants: [{algorithm: grpo}]\n"
MALFORMED = [
    ("unknown_top_key", "name: t\nvarients: [{algorithm: grpo}]\n",
     ["unknown key 'varients'", "did you mean 'variants'"]),
    ("unknown_variant_key", "name: t\nvariants: [{algorithm: grpo, eps_hihg: 0.3}]\n",
     ["variants[0]", "unknown key 'eps_hihg'", "did you mean 'eps_high'"]),
    ("unknown_objective", "name: t\nvariants: [{algorithm: grpoo}]\n",
     ["variants[0].algorithm", "'grpoo'", "did you mean 'grpo'", "expected one of"]),
    ("missing_algorithm", "name: t\nvariants: [{clip: {low: 0.2, high: 0.2}}]\n",
     ["variants[0]", "missing key 'algorithm'"]),
    ("unknown_gate", "name: t\nvariants: [{algorithm: sspo, gate: atanlgo}]\n",
     ["variants[0]", "gate", "expected one of", "atanlog", "'atanlgo'"]),
    ("eps_not_positive", "name: t\nvariants: [{algorithm: grpo, clip: {low: 0.0, high: 0.2}}]\n",
     ["variants[0]", "eps_low", "> 0"]),
    ("tau_not_positive", "name: t\nvariants: [{algorithm: sapo, tau_pos: -1.0}]\n",
     ["variants[0]", "tau_pos", "> 0", "-1.0"]),
    ("empty_variants", "name: t\nvariants: []\n",
     ["variants", "non-empty list", "grid is empty"]),
    ("missing_variants", "name: t\nseeds: [0]\n",
     ["variants", "non-empty list"]),
    ("empty_axis", "name: t\nvariants: [{algorithm: dhpo, mixing: []}]\n",
     ["variants[0]", "mixing", "empty list"]),
    ("duplicate_trial_ids", "name: t\nvariants: [{algorithm: grpo, eps_high: 0.28}, {algorithm: grpo, eps_high: 0.28}]\n",
     ["variants[1]", "duplicate trial id 'grpo-hi0.28.s0'", "variants[0]"]),
    ("duplicate_seeds", "name: t\nseeds: [0, 1, 0]\n" + OK_VARIANTS,
     ["seeds", "duplicate"]),
    ("seed_in_variant", "name: t\nvariants: [{algorithm: grpo, seed: [1, 2]}]\n",
     ["variants[0].seed", "'seeds'", "seed_offset"]),
    ("seed_offset_negative", "name: t\nvariants: [{algorithm: grpo, seed_offset: -1}]\n",
     ["variants[0].seed_offset", "one integer >= 0", "got -1"]),
    ("seed_offset_axis", "name: t\nvariants: [{algorithm: grpo, seed_offset: [0, 100]}]\n",
     ["variants[0].seed_offset", "one integer >= 0", "got [0, 100]"]),
    ("seed_offset_past_max_seed", "name: t\nseeds: [0, 1]\nvariants: [{algorithm: grpo, seed_offset: 4294967295}]\n",
     ["variants[0].seed_offset", "1 + 4294967295 exceeds 4294967295", "offset <= 4294967294"]),
    ("seed_offset_overlaps_the_replicated_seeds", "name: t\nseeds: [0, 1, 2]\n"
     "variants: [{algorithm: grpo}, {algorithm: grpo, seed_offset: 1, label: GRPO-AA}]\n",
     ["variants[1] (grpo-seed+1.s1)", "same configuration and seed 1 as variants[0] (grpo.s1)",
      "seed_offset greater than the seeds' spread 2"]),
    ("missing_data_file", "name: t\nbase: {data: {train_file: no_such_train.jsonl}}\n" + OK_VARIANTS,
     ["data.train_file", "expected an existing file", "no_such_train.jsonl"]),
    ("group_size_below_2", "name: t\nbase: {trainer: {group_size: 1}}\n" + OK_VARIANTS,
     ["trainer.group_size", "integer >= 2", "got 1"]),
    ("unknown_trial_key", "name: t\nvariants: [{algorithm: grpo, trainer.lrr: [1.0e-3]}]\n",
     ["trainer.lrr", "unknown key", "did you mean 'trainer.lr'"]),
    ("unknown_preset", "name: t\ndefaults: [{trainer: local_tiyn}]\n" + OK_VARIANTS,
     ["defaults[0].trainer", "no preset 'local_tiyn'", "local_tiny"]),
    ("unknown_group", "name: t\ndefaults: [{trainr: local_tiny}]\n" + OK_VARIANTS,
     ["defaults[0]", "unknown key 'trainr'", "did you mean 'trainer'"]),
    ("negative_gpus", "name: t\nresources: {cpus: 1, gpus: -1}\n" + OK_VARIANTS,
     ["resources.gpus", "number >= 0", "-1"]),
    ("unknown_resource", "name: t\nresources: {cpu: 1}\n" + OK_VARIANTS,
     ["resources", "unknown key 'cpu'", "did you mean 'cpus'"]),
    ("max_concurrent_zero", "name: t\nmax_concurrent: 0\n" + OK_VARIANTS,
     ["max_concurrent", "integer >= 1", "got 0"]),
    ("report_interval_negative", "name: t\nreport_interval_s: -1\n" + OK_VARIANTS,
     ["report_interval_s", "seconds >= 0", "got -1"]),
    ("search_method", "name: t\n" + OK_VARIANTS + "search: {method: random, metric: val/avg/acc, "
     "space: {trainer.lr: {type: float, low: 1.0e-4, high: 1.0e-2}}}\n",
     ["search.method", "expected 'optuna'", "'random'"]),
    ("search_without_space", "name: t\n" + OK_VARIANTS + "search: {metric: val/avg/acc}\n",
     ["search.space", "expected a mapping"]),
    ("search_bad_bounds", "name: t\n" + OK_VARIANTS + "search: {metric: val/avg/acc, "
     "space: {trainer.lr: {type: float, low: 0.1, high: 0.01}}}\n",
     ["search.space.trainer.lr", "low < high"]),
    ("scheduler_type", "name: t\n" + OK_VARIANTS + "scheduler: {type: hyperband}\n",
     ["scheduler.type", "expected 'asha'", "'hyperband'"]),
    ("report_key", "name: t\n" + OK_VARIANTS + "report: {tabel: {select_by: val/avg/acc}}\n",
     ["report", "unknown key 'tabel'", "did you mean 'table'"]),
    ("report_value", "name: t\n" + OK_VARIANTS + "report: {ema_alpha: 2}\n",
     ["report", "ema_alpha", "(0, 1]"]),
    ("bad_name", "name: my sweep\n" + OK_VARIANTS,
     ["name", "without spaces"]),
    ("not_a_mapping", "- {algorithm: grpo}\n",
     ["mapping at the top level"]),
    ("invalid_yaml", "name: t\nvariants: [{algorithm: grpo\n",
     ["not valid YAML"]),
    # specs cannot leak the environment or reach outside configs/
    ("interpolation_env", "name: t\nbase: {model: {name: '${oc.env:HOME}'}}\n" + OK_VARIANTS,
     ["base.model.name", "expected a plain value", "'${oc.env:HOME}'", "not allowed"]),
    ("interpolation_reference", "name: t\nvariants: [{algorithm: grpo, label: '${name}'}]\n",
     ["variants[0].label", "'${name}'", "interpolations"]),
    ("preset_parent_dir", "name: t\ndefaults: [{model: ../trainer/local_tiny}]\n" + OK_VARIANTS,
     ["defaults[0].model", "expected a preset name", "'../trainer/local_tiny'", "tiny_qwen3"]),
    ("preset_absolute_path", f"name: t\ndefaults: [{{data: {CONFIGS_DIR / 'data' / 'arith'}}}]\n" + OK_VARIANTS,
     ["defaults[0].data", "no '/', '..' or absolute path", "configs/data/", "['arith']"]),
    ("preset_subdirectory", "name: t\ndefaults: [{trainer: sub/local_tiny}]\n" + OK_VARIANTS,
     ["defaults[0].trainer", "expected a preset name", "'sub/local_tiny'"]),
    ("preset_group_twice", "name: t\ndefaults: [{model: tiny_qwen3}, {model: tiny_qwen3}]\n" + OK_VARIANTS,
     ["defaults[1].model", "already set by defaults[0]", "one preset per group"]),
    ("preset_name_in_base", "name: t\nbase: {model: tiny_qwen3}\n" + OK_VARIANTS,
     ["base.model", "expected a mapping of model settings", "'tiny_qwen3'", "defaults: [{model: tiny_qwen3}]"]),
    ("preset_name_in_variant", "name: t\nvariants: [{algorithm: grpo, model: tiny_qwen3}]\n",
     ["variants[0]", "model: expected a mapping", "'tiny_qwen3'"]),
    ("value_then_dotted_key", "name: t\nvariants: [{algorithm: grpo, trainer: 5, trainer.lr: 0.1}]\n",
     ["variants[0]", "trainer: expected a mapping", "got 5"]),
    # names, labels and seeds that would become paths, markup or broken lines
    ("bad_name_dotdot", "name: ..\n" + OK_VARIANTS,
     ["name", "no '..'", "got '..'"]),
    ("bad_name_markup", "name: '[red]t'\n" + OK_VARIANTS,
     ["name", "letters, digits", "got '[red]t'"]),
    ("bad_name_newline", 'name: "t\\nx"\n' + OK_VARIANTS,
     ["name", "got 't\\nx'"]),
    ("bad_name_nul", 'name: "t\\0x"\n' + OK_VARIANTS,
     ["name", "got 't\\x00x'"]),
    ("bad_name_too_long", f"name: {'a' * 101}\n" + OK_VARIANTS,
     ["name", "1-100 characters"]),
    ("label_newline", 'name: t\nvariants: [{algorithm: grpo, label: "GRPO\\n\\\\input{x}"}]\n',
     ["variants[0].label", "no control characters or line breaks", "'GRPO\\n\\\\input{x}'"]),
    ("label_too_long", f"name: t\nvariants: [{{algorithm: grpo, label: {'L' * 61}}}]\n",
     ["variants[0].label", "1-60 characters"]),
    ("seed_out_of_range", "name: t\nseeds: [0, -1]\n" + OK_VARIANTS,
     ["seeds", "integers in [0, 4294967295]", "-1"]),
    # YAML safety
    ("duplicate_top_key", "name: t\nseeds: [0]\nseeds: [1]\n" + OK_VARIANTS,
     ["seeds: duplicate key 'seeds'", "line 3", "first at line 2", "each key once"]),
    ("duplicate_nested_key", "name: t\nvariants:\n  - {algorithm: grpo, eps_high: 0.2, eps_high: 0.28}\n",
     ["variants[0].eps_high: duplicate key 'eps_high'", "line 3"]),
    ("yaml_alias_bomb", "name: t\nbase:\n  data:\n    eval_files: {}\n    benchmarks: &a [lol, lol, lol, lol, lol]\n"
     + "".join(f"    x{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 9)}]\n" for i in range(9)) + OK_VARIANTS,
     ["base.data.benchmarks", "anchors and aliases ('&a', line 5", "not allowed"]),
    ("yaml_merge_key", "name: t\nbase: {<<: {trainer: {steps: 5}}}\n" + OK_VARIANTS,
     ["base: YAML merge keys ('<<', line 2", "not allowed"]),
    ("yaml_too_deep", "name: t\nbase: " + "{a: " * 40 + "1" + "}" * 40 + "\n" + OK_VARIANTS,
     ["base.a.a.a.a", "nested more than 32 levels"]),
    # grid size cap, checked before expanding
    ("grid_above_max_trials", "name: t\nvariants: [{algorithm: grpo, trainer.eval_every: [" + ", ".join(map(str, range(1, 151)))
     + "], trainer.eval_k: [" + ", ".join(map(str, range(1, 101))) + "]}]\n",
     ["variants[0]", "expands to 15000 trials", "150 x 100", "max_trials = 10000", "max_trials: 15000"]),
    ("grid_total_above_max_trials", "name: t\nmax_trials: 9\nseeds: [0, 1]\n"
     "variants: [{algorithm: grpo, eps_high: [0.2, 0.28, 0.3]}, {algorithm: gspo, eps_high: [0.2, 0.28]}]\n",
     ["variants[1]", "expands to 4 trials", "10 with the variants before it", "max_trials = 9", "max_trials: 10"]),
    ("max_trials_zero", "name: t\nmax_trials: 0\n" + OK_VARIANTS,
     ["max_trials", "integer >= 1", "got 0"]),
    # non-finite numbers
    ("nan_value", "name: t\nvariants: [{algorithm: grpo, trainer.lr: .nan}]\n",
     ["variants[0].trainer.lr: expected a finite number, got nan"]),
    ("inf_value", "name: t\nbase: {trainer: {grad_clip: .inf}}\n" + OK_VARIANTS,
     ["base.trainer.grad_clip: expected a finite number, got inf"]),
    ("inf_string_on_an_axis", "name: t\nvariants: [{algorithm: grpo, trainer.temperature: [1.0, inf]}]\n",
     ["variants[0].trainer.temperature[1]: expected a finite number, got 'inf'"]),
    ("neg_inf_search_bound", "name: t\n" + OK_VARIANTS + "search: {metric: val/avg/acc, "
     "space: {trainer.lr: {type: float, low: -.inf, high: 1.0e-2}}}\n",
     ["search.space.trainer.lr.low: expected a finite number, got -inf"]),
]
MALFORMED_IDS = [case for case, _, _ in MALFORMED]


def test_malformed_table_is_large_enough():
    assert len(MALFORMED) == 64 and len(set(MALFORMED_IDS)) == len(MALFORMED_IDS)  # as docs/testing.md says


@pytest.mark.parametrize("case,text,needles", MALFORMED, ids=MALFORMED_IDS)
def test_malformed_spec_fails_early_with_a_precise_message(case, text, needles, tmp_path, empty_cwd):
    spec_path = write_spec(tmp_path, text, "bad.yaml")
    with pytest.raises(SpecError) as err:
        load_spec(spec_path)
    msg = str(err.value)
    assert str(spec_path) in msg, msg
    for needle in needles:
        assert needle in msg, f"{case}: {needle!r} not in {msg!r}"
    assert "report: report:" not in msg
    # nothing was created: no MLflow store, no run directory, no Hydra output
    assert list(empty_cwd.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "cwd"]


@pytest.mark.slow
@pytest.mark.parametrize("case,text,needles", MALFORMED, ids=MALFORMED_IDS)
def test_malformed_spec_cli_exits_2_and_creates_nothing(case, text, needles, empty_cwd, monkeypatch):
    runner = types.ModuleType("sweeps.driver.runner")  # a spec that wrongly validated must not start Ray
    runner.RunOptions = runner.run_sweep = lambda *a, **k: pytest.fail(f"{case}: the bad spec was run")
    monkeypatch.setitem(sys.modules, "sweeps.driver.runner", runner)
    (empty_cwd / "bad.yaml").write_text(text)
    result = CliRunner().invoke(app, ["run", "bad.yaml"])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())  # rich wraps long lines
    assert "error:" in out and "bad.yaml" in out
    for needle in needles:
        assert " ".join(needle.split()) in out, f"{case}: {needle!r} not in {out!r}"
    assert sorted(p.name for p in empty_cwd.iterdir()) == ["bad.yaml"]  # no runs/, no mlflow.db



# ------------------------------------------------------------------------------------ eval: section

EVAL_SPEC = """name: ev
variants: [{algorithm: grpo}]
eval: {benchmarks: [easy, mine], files: {mine: qa.jsonl}, samples: 2}
"""


def test_eval_section_becomes_an_eval_config_with_absolute_paths(tmp_path):
    (tmp_path / "qa.jsonl").write_text('{"problem": "1+1?", "answer": "2"}\n')
    spec = load_spec(write_spec(tmp_path, EVAL_SPEC), cwd=tmp_path)
    assert spec.eval.benchmarks == ["easy", "mine"] and spec.eval.samples == 2
    assert spec.eval.files == {"mine": str((tmp_path / "qa.jsonl").resolve())}
    assert Path(spec.eval.data_dir).is_absolute()
    assert load_spec(write_spec(tmp_path, "name: ev\nvariants: [{algorithm: grpo}]\n")).eval is None
    assert load_spec(write_spec(tmp_path, EVAL_SPEC), ["eval.samples=8"], cwd=tmp_path).eval.samples == 8


def test_eval_files_default_to_the_trials_eval_files(tmp_path):
    (tmp_path / "qa.jsonl").write_text('{"problem": "1+1?", "answer": "2"}\n')
    text = ("name: ev\nvariants: [{algorithm: grpo}]\nbase: {data: {eval_files: {mine: qa.jsonl}, benchmarks: [mine]}}\n"
            "eval: {benchmarks: [mine]}\n")
    spec = load_spec(write_spec(tmp_path, text), cwd=tmp_path)
    assert spec.eval.files == {"mine": str((tmp_path / "qa.jsonl").resolve())}


@pytest.mark.parametrize("section, needle", [
    ("{benchmarks: [aime24]}", "aime24"),  # no file: named, with where it was looked for and the schemas
    ("{benchmarks: [easy], sample: 3}", "eval.sample: unknown key"),
    ("{benchmarks: [easy], backend: sglang}", "eval.backend: expected one of"),
    ("{benchmarks: [nonesuch]}", "nonesuch"),
    ("[easy]", "eval: expected a mapping"),
    ("{benchmarks: [mine], files: {mine: missing.jsonl}}", "missing.jsonl"),
])
def test_bad_eval_section_is_a_spec_error_before_anything_runs(tmp_path, section, needle):
    path = write_spec(tmp_path, f"name: ev\nvariants: [{{algorithm: grpo}}]\neval: {section}\n")
    with pytest.raises(SpecError) as err:
        load_spec(path, cwd=tmp_path)
    assert str(path) in str(err.value) and needle in str(err.value)
    if "aime24" == needle:
        assert "data/benchmarks/aime24" in str(err.value) and "ground_truth" in str(err.value)


def test_composed_presets_are_fresh_copies_and_an_edited_preset_is_read_again(tmp_path, monkeypatch):
    """compose_base keeps what it composed per process (by preset file and its mtime): a caller changing the dict
    it got changes nothing for the next, and a preset file edited since is composed anew."""
    import os
    import shutil

    from sweeps.specs import presets

    configs = tmp_path / "configs"
    shutil.copytree(presets.CONFIGS_DIR, configs, ignore=shutil.ignore_patterns("sweeps"))
    monkeypatch.setattr(presets, "CONFIGS_DIR", configs)
    first = presets.compose_base([{"trainer": "local_tiny"}], "t")
    steps = first["trainer"]["steps"]
    first["trainer"]["steps"] = -1
    assert presets.compose_base([{"trainer": "local_tiny"}], "t")["trainer"]["steps"] == steps
    preset = configs / "trainer" / "local_tiny.yaml"
    preset.write_text(preset.read_text() + "\n# edited\n")
    text = preset.read_text().replace(f"steps: {steps}\n", f"steps: {steps + 7}\n", 1)
    assert text != preset.read_text(), "the preset has no 'steps: N' line to edit"
    preset.write_text(text)
    os.utime(preset, ns=(preset.stat().st_atime_ns, preset.stat().st_mtime_ns + 10**9))
    assert presets.compose_base([{"trainer": "local_tiny"}], "t")["trainer"]["steps"] == steps + 7
