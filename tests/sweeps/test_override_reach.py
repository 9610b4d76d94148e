"""No override is ever ignored: every key a spec accepts, overridden on the command line, either changes the
resolved sweep (its trials, or the spec's own settings) or is refused before anything starts, naming the key
as typed; a value of the wrong type is refused for every key (sweeps/specs/overrides.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sweeps.specs.load import SPEC_KEYS, SpecError, load_spec
from trainers.config import TrialConfig, trial_schema
from trainers.objectives import OBJECTIVES

# every objective, so that each objective parameter has trials that read it; nothing set per variant
ALL_OBJECTIVES = "".join(f"  - {{algorithm: {name}}}\n" for name in sorted(OBJECTIVES))
SPEC = ("name: walk\ndefaults: [{trainer: local_tiny}, {model: tiny_qwen3}, {data: arith}]\nseeds: [0, 1]\n"
        "stop: [{metric: actor/entropy, below: 0.01, for_steps: 20}]\n"
        "scheduler: {type: asha, metric: val/avg/acc, mode: max, grace_period: 20}\n"
        "report: {table: {select_by: val/avg/acc, at: final}, curves: [actor/entropy]}\n"
        f"variants:\n{ALL_OBJECTIVES}")


def _leaves(schema: dict, defaults: dict, prefix: str = ""):
    for key, sub in schema.items():
        value = defaults.get(key) if isinstance(defaults, dict) else None
        if isinstance(sub, dict):
            yield from _leaves(sub, value or {}, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _trial_keys() -> list[tuple[str, object]]:
    keys = [(k, v) for k, v in _leaves(trial_schema(), TrialConfig().to_dict()) if k != "algorithm.params"]
    for name, spec in sorted(OBJECTIVES.items()):
        params = dataclasses.asdict(spec.params_class()) if hasattr(spec, "params_class") else {}
        for param in spec.param_docs():
            keys.append((f"algorithm.params.{param}", params.get(param)))
    return sorted(set((k, json.dumps(v, default=str)) for k, v in keys))


def _changed(value):
    """A value of the same type that differs from ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return round(value * 0.5 + 0.01, 6)
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value[:1] if len(value) > 1 else ["easy"]
    if isinstance(value, dict):
        return {"extra": "x.jsonl"}
    return "x"  # None: an optional value


def _wrong_type(value):
    """A value no key of this type accepts."""
    if isinstance(value, str):
        return {"a": 1}
    if isinstance(value, (list, dict)):
        return 3
    return "abc" if not isinstance(value, bool) and value is not None else [1, 2]


def _hydra(value) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_hydra(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_hydra(v) for v in value) + "]"
    return "null" if value is None else repr(value)


def _resolved(spec) -> str:
    """Everything a sweep runs with: its trials' configs and the spec's own settings."""
    return json.dumps({"trials": [(t.trial_id, t.method, t.config.to_dict()) for t in spec.trials],
                       "settings": [spec.name, spec.resources, spec.max_concurrent, spec.max_failures, spec.search,
                                    spec.scheduler, spec.report, spec.report_interval_s, spec.stall_timeout_s,
                                    spec.eval, spec.stop]}, sort_keys=True, default=str)


@pytest.fixture(scope="module")
def walk_spec(tmp_path_factory):
    path = tmp_path_factory.mktemp("walk") / "walk.yaml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def reference(walk_spec):
    return _resolved(load_spec(walk_spec))


def _outcome(walk_spec, reference, override: str) -> str:
    try:
        spec = load_spec(walk_spec, [override])
    except SpecError as err:
        key = override.split("=", 1)[0]
        assert override in str(err) or f"{key}:" in str(err), str(err)  # it names the override as typed
        return "refused"
    return "changed" if _resolved(spec) != reference else "IGNORED"


TRIAL_KEYS = _trial_keys()


@pytest.mark.slow
@pytest.mark.parametrize("key, default", TRIAL_KEYS, ids=[k for k, _ in TRIAL_KEYS])
def test_every_trial_key_override_changes_the_trials_or_is_refused(key, default, walk_spec, reference):
    value = json.loads(default)
    assert _outcome(walk_spec, reference, f"{key}={_hydra(_changed(value))}") != "IGNORED"
    assert _outcome(walk_spec, reference, f"base.{key}={_hydra(_changed(value))}") != "IGNORED"
    assert _outcome(walk_spec, reference, f"{key}={_hydra(_wrong_type(value))}") == "refused"


SPEC_VALUES = {  # a spec key: (a valid different value, a value of the wrong type)
    "name": ("walk2", [1]), "seeds": ([3], "abc"), "resources.cpus": (0.5, "abc"), "resources.gpus": (1, "abc"),
    "max_concurrent": (3, "abc"), "max_failures": (0, "abc"), "report_interval_s": (2.0, "abc"),
    "stall_timeout_s": (60.0, "abc"), "max_trials": (2, "abc"),  # 2: fewer than the grid's trials
    "scheduler.grace_period": (10, "abc"), "scheduler.mode": ("min", [1]), "scheduler.metric": ("actor/entropy", [1]),
    "report.table.select_by": ("actor/entropy", [1]), "report.table.at": ("best", [1]),
    "report.curves": (["val/avg/acc"], 3), "report.compute_curves.seed_fits": (3, "abc"), "stop": ([], "abc"),
    "defaults": ([{"trainer": "local_tiny"}, {"model": "qwen3_0.6b_local"}, {"data": "arith"}], "abc"),
    "variants": ([{"algorithm": "grpo"}], "abc"), "base": ({"trainer": {"lr": 0.5}}, "abc"),
    "search": ({"method": "optuna"}, "abc"), "eval": ({"benchmarks": ["x"]}, "abc"),
}


def test_the_walk_covers_every_spec_key():
    assert {k.split(".")[0] for k in SPEC_VALUES} == set(SPEC_KEYS)


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(SPEC_VALUES))
def test_every_spec_key_override_changes_the_sweep_or_is_refused(key, walk_spec, reference):
    good, bad = SPEC_VALUES[key]
    assert _outcome(walk_spec, reference, f"{key}={_hydra(good)}") != "IGNORED"
    assert _outcome(walk_spec, reference, f"{key}={_hydra(bad)}") == "refused"


@pytest.mark.parametrize("override, where", [
    ("algorithm.params.eps_low=0.3", "variants[0] sets clip.low (= algorithm.params.eps_low) itself"),
    ("trainer.steps=50", None),
    ("algorithm.params.mixing=averaged", "variants[4] sets algorithm.params.mixing itself"),
    ("algorithm.name=gspo", "every variant names its own objective (variants[i].algorithm)"),
    ("seed=3", "override seeds=[...] instead"),
    ("verl.nnodes=2", "only trials of the verl backend read the verl: section"),
])
def test_the_shipped_study_refuses_what_a_variant_overwrites(override, where):
    if where is None:
        assert {t.config.trainer.steps for t in load_spec("dhpo_vs_baselines", [override]).trials} == {50}
        return
    with pytest.raises(SpecError, match=f"command-line override '{override}'") as err:
        load_spec("dhpo_vs_baselines", [override])
    assert where in str(err.value)


def test_an_objective_parameter_reaches_exactly_the_trials_whose_objective_has_it(walk_spec):
    spec = load_spec(walk_spec, ["algorithm.params.tau_pos=0.7"])
    reached = {t.config.algorithm.name for t in spec.trials if t.config.algorithm.params.get("tau_pos") == 0.7}
    assert reached == {a for a, s in OBJECTIVES.items() if "tau_pos" in s.param_docs()} and reached
    typed, ids = spec.override_reach[0]
    assert typed == "algorithm.params.tau_pos=0.7" and len(ids) == 2 * len(reached)  # two seeds each
