"""Stop rules (sweeps/specs/stop_rules.py): parsing with clear errors, the monitor's semantics, the spec section."""

from __future__ import annotations

import pytest

from sweeps.specs.load import SpecError, load_spec
from sweeps.specs.stop_rules import StopMonitor, StopRule, StopRuleError, parse_stop_rules


def feed(monitor: StopMonitor, values: list, key: str = "actor/entropy") -> list:
    """The stop reason (or None) after each step; None values are steps without the metric."""
    return [monitor.update(step, {} if v is None else {key: v}) for step, v in enumerate(values, 1)]


def test_threshold_needs_consecutive_values_and_resets():
    m = StopMonitor([StopRule("actor/entropy", below=0.1, for_steps=3, name="collapse")])
    out = feed(m, [0.05, 0.05, 0.5, 0.05, None, 0.05, 0.05])
    assert out[:6] == [None] * 6  # the 0.5 reset the streak; a step without the metric does not count
    assert out[6] == "rule collapse at step 7"


def test_above_and_default_label():
    m = StopMonitor([StopRule("response_length/mean", above=100.0, for_steps=2)])
    assert feed(m, [150, 50, 150, 160], "response_length/mean") == [
        None, None, None, "rule response_length/mean>100 for 2 at step 4"]


def test_no_improvement_counts_values_without_a_new_best():
    m = StopMonitor([StopRule("val/avg/acc", no_improvement=2, min_delta=0.01)])
    # 0.30 best, 0.305 is not better by > 0.01, 0.40 new best, then 0.40 and 0.39: two without improvement
    out = feed(m, [0.30, None, 0.305, 0.40, 0.40, 0.39], "val/avg/acc")
    assert out == [None, None, None, None, None, "rule val/avg/acc no improvement in 2 at step 6"]
    low = StopMonitor([StopRule("actor/grad_norm", no_improvement=1, mode="min")])
    assert feed(low, [5.0, 4.0, 4.5], "actor/grad_norm") == [None, None, "rule actor/grad_norm no improvement in 1 at step 3"]


def test_first_rule_that_fires_wins_and_non_finite_is_ignored():
    m = StopMonitor([StopRule("actor/entropy", below=0.0), StopRule("reward/mean", above=0.5, name="solved")])
    assert m.update(1, {"actor/entropy": float("nan"), "reward/mean": 0.9}) == "rule solved at step 1"


@pytest.mark.parametrize("section, needle", [
    ({"metric": "actor/entropy"}, "a list of rules"),
    (["actor/entropy"], "stop[0]: expected a mapping"),
    ([{"metric": "actor/entropy", "below": 0.1, "patience": 3}], "unknown key(s) ['patience']"),
    ([{"metric": "entropy", "below": 0.1}], "stop[0].metric: expected a reported metric name"),
    ([{"metric": "actor/entropy"}], "exactly one of below / above / no_improvement"),
    ([{"metric": "actor/entropy", "below": 0.1, "above": 1.0}], "exactly one of"),
    ([{"metric": "actor/entropy", "below": "low"}], "stop[0].below: expected a finite number"),
    ([{"metric": "actor/entropy", "below": 0.1, "for_steps": 0}], "stop[0].for_steps: expected an integer >= 1"),
    ([{"metric": "val/avg/acc", "no_improvement": 2, "mode": "up"}], "stop[0].mode"),
])
def test_bad_rules_name_the_entry_and_what_was_expected(section, needle):
    with pytest.raises(StopRuleError) as err:
        parse_stop_rules(section, "spec.yaml")
    assert "spec.yaml: stop" in str(err.value) and needle in str(err.value)


def test_spec_stop_section(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: st\nvariants: [{algorithm: grpo}]\n"
                    "stop: [{metric: actor/entropy, below: 0.01, for_steps: 20, name: entropy_collapse}]\n")
    spec = load_spec(path)
    assert spec.stop == [StopRule("actor/entropy", below=0.01, for_steps=20, name="entropy_collapse")]
    assert load_spec(path, ["stop=[]"]).stop == []
    path.write_text("name: st\nvariants: [{algorithm: grpo}]\nstop: [{metric: actor/entropy}]\n")
    with pytest.raises(SpecError, match=r"s\.yaml: stop\[0\]: expected exactly one of"):
        load_spec(path)
