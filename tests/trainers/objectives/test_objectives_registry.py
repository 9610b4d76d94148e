"""Every registered objective is complete (label, clip-fraction level, sequence term, documented
params), and the registration API refuses incomplete or clashing specs.

A new objective is its module, one ObjectiveSpec (or register_objective) and its tests: this file
needs no edit, it checks whatever OBJECTIVES holds.
"""

from __future__ import annotations

import dataclasses

import pytest

from objectives_testlib import check_objective_complete, depends_only_on_response_advantages
from trainers.objectives import (
    OBJECTIVES, LabelPart, ObjectiveSpec, get_objective, register_objective, unregister_objective,
)
from trainers.objectives.grpo import GRPOParams, grpo_loss
from trainers.objectives.sspo import GATES


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_registered_objective_is_complete(name):
    check_objective_complete(OBJECTIVES[name])


def test_labels_and_metadata_of_the_built_ins():
    """Pinned: sweep method labels, trial tags and the local trainer's metrics depend on these."""
    meta = {n: (s.label, s.clipfrac_level, s.sequence_term) for n, s in OBJECTIVES.items()}
    assert {n: meta[n] for n in ("grpo", "gspo", "gmpo", "cispo", "sapo", "sspo", "dhpo")} == {
        "grpo": ("GRPO", "token", False), "gspo": ("GSPO", "seq", False), "gmpo": ("GMPO", "token", True),
        "cispo": ("CISPO", "token", False), "sapo": ("SAPO", None, False), "sspo": ("SSPO", None, True),
        "dhpo": ("DHPO", None, False),
    }


@pytest.mark.parametrize("name,params,label", [
    ("grpo", {}, "GRPO"),
    ("grpo", {"eps_high": 0.28}, "GRPO"),
    ("gmpo", {"clip_in_log_space": True}, "GMPO"),
    ("sspo", {}, "SSPO (atanlog)"),
    *[("sspo", {"gate": g, "tau_pos": 0.2}, f"SSPO ({g})") for g in GATES],
    ("dhpo", {}, "DHPO-A"),
    ("dhpo", {"mixing": "averaged", "clip_mode": "branch"}, "DHPO-A"),
    ("dhpo", {"mixing": "entropy"}, "DHPO-E"),
    ("dhpo", {"clip_mode": "unified"}, "DHPO-A (unified)"),
    ("dhpo", {"mixing": "entropy", "clip_mode": "unified", "entropy_norm": "sequence"}, "DHPO-E (unified)"),
])
def test_label_for(name, params, label):
    assert OBJECTIVES[name].label_for(params) == label


def test_label_part_fallback_and_types():
    part = LabelPart("mixing", {"entropy": "-E"})
    assert part.texts == (("entropy", "-E"),)  # stored as pairs: specs stay hashable
    assert part.text_for("entropy") == "-E" and part.text_for("other") == " (other)"
    assert LabelPart("flag", {True: "+"}).text_for(1) == " (1)"  # 1 == True, but not the listed value
    hash(OBJECTIVES["dhpo"])
    with pytest.raises(ValueError, match="texts"):
        LabelPart("gate", {"atanlog": 3})


def test_sequence_term_check_tells_the_two_kinds_apart():
    assert depends_only_on_response_advantages("gmpo", {})
    assert depends_only_on_response_advantages("sspo", {"gate": "gumbel"})
    assert not depends_only_on_response_advantages("gspo", {})  # one ratio per response, but per-token terms
    assert not depends_only_on_response_advantages("grpo", {"agg": "token-mean"})


# ---- the registration API ----


def _spec(**changes):
    base = dict(name="toyreg", loss_fn=grpo_loss, params_cls=GRPOParams, summary="a test double of grpo",
                label="ToyReg", clipfrac_level="token", sequence_term=False)
    return ObjectiveSpec(**{**base, **changes})


def test_register_and_unregister():
    spec = _spec()
    assert register_objective(spec) is spec
    try:
        assert OBJECTIVES["toyreg"] is spec and get_objective("toyreg").spec is spec
        with pytest.raises(ValueError, match="already registered"):
            register_objective(_spec(label="Other"))
        replacement = register_objective(_spec(label="ToyReg2"), replace=True)
        assert OBJECTIVES["toyreg"] is replacement
    finally:
        assert unregister_objective("toyreg").name == "toyreg"
    assert "toyreg" not in OBJECTIVES
    with pytest.raises(ValueError, match="not registered"):
        unregister_objective("toyreg")
    with pytest.raises(ValueError, match="unknown name"):
        get_objective("toyreg")


def test_register_refuses_a_taken_label():
    with pytest.raises(ValueError, match="label 'GRPO'.*'grpo'"):
        register_objective(_spec(label="GRPO"))
    assert "toyreg" not in OBJECTIVES
    with pytest.raises(ValueError, match="expected an ObjectiveSpec"):
        register_objective("toyreg")


@pytest.mark.parametrize("changes,needle", [
    ({"name": "Toy"}, "name"),
    ({"name": "toy-x"}, "name"),
    ({"label": ""}, "label"),
    ({"label": " GRPO"}, "label"),
    ({"label": "two\nlines"}, "label"),
    ({"summary": ""}, "summary"),
    ({"clipfrac_level": "sequence"}, "clipfrac_level"),
    ({"clipfrac_level": "both"}, "clipfrac_level"),
    ({"sequence_term": 1}, "sequence_term"),
    ({"params_cls": dict}, "params_cls"),
    ({"loss_fn": None}, "loss_fn"),
    ({"label_parts": (LabelPart("gate"),)}, "label_parts"),  # grpo has no 'gate'
    ({"label_parts": ("eps_high",)}, "label_parts"),
])
def test_incomplete_spec_is_refused(changes, needle):
    with pytest.raises(ValueError, match=needle):
        _spec(**changes)


def test_replace_revalidates():
    with pytest.raises(ValueError, match="clipfrac_level"):
        dataclasses.replace(OBJECTIVES["grpo"], clipfrac_level="tok")


def test_algorithm_presets_are_the_registry_written_out():
    """configs/algorithm/<name>.yaml is `python -m trainers.objectives --write-presets configs/algorithm`: one
    file per objective, its paper defaults and docs exactly, and each reads back as the registry's defaults."""
    import dataclasses
    from pathlib import Path

    import yaml

    from trainers.objectives.__main__ import preset_yaml

    folder = Path(__file__).resolve().parents[3] / "configs" / "algorithm"
    assert sorted(p.stem for p in folder.glob("*.yaml")) == sorted(OBJECTIVES)
    for name in OBJECTIVES:
        text = (folder / f"{name}.yaml").read_text(encoding="utf-8")
        assert text == preset_yaml(name), f"regenerate: python -m trainers.objectives --write-presets {folder}"
        preset = yaml.safe_load(text)
        defaults = dataclasses.asdict(get_objective(name).params)
        assert preset == {"name": name, "params": defaults}
        assert all(type(preset["params"][k]) is type(v) for k, v in defaults.items()), name
