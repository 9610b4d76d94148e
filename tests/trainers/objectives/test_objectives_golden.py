"""Golden values: the torch objectives vs an independent pure-Python reference and stored numbers.

The golden case (B=3, T=4, right-padded) and the option grid live in objectives_reference.py;
golden_values.json was generated from that reference by make_golden.py. Padding is filled with
garbage (nan, inf, 1e30) before calling the library.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from objectives_reference import GOLDEN_CASES, GOLDEN_INPUTS, REFERENCES, STOP_GRADIENT, reference
from objectives_testlib import DEFAULTS, evaluate, golden_tensors, variant_grid
from trainers.objectives import AGG_MODES, OBJECTIVES

GOLDEN = json.loads((Path(__file__).with_name("golden_values.json")).read_text())
IDS = [case_id for case_id, _, _ in GOLDEN_CASES]
CASES = {case_id: (name, params) for case_id, name, params in GOLDEN_CASES}


def run_library(name, params, dtype):
    lp, old, adv, mask, ent = golden_tensors(GOLDEN_INPUTS, dtype=dtype, garbage=True)
    return evaluate(name, params, lp, old, adv, mask, ent)


def assert_matches(loss, grad, metrics, want_loss, want_grad, want_metrics, rtol, atol):
    assert loss.item() == pytest.approx(want_loss, rel=rtol, abs=atol)
    want = torch.tensor(want_grad, dtype=torch.float64)
    assert torch.allclose(grad.double(), want, rtol=rtol, atol=atol), (grad, want)
    for key, value in want_metrics.items():
        assert key in metrics, key
        assert metrics[key] == pytest.approx(value, rel=rtol, abs=atol), key


def test_json_matches_the_reference_definition():
    assert GOLDEN["inputs"] == json.loads(json.dumps(GOLDEN_INPUTS))
    assert list(GOLDEN["cases"]) == IDS, "golden_values.json is stale: run make_golden.py"
    for case_id, (name, params) in CASES.items():
        assert GOLDEN["cases"][case_id]["objective"] == name
        assert GOLDEN["cases"][case_id]["params"] == params


@pytest.mark.parametrize("case_id", IDS)
def test_reference_reproduces_json(case_id):
    loss, grad, metrics = reference(*CASES[case_id])
    want = GOLDEN["cases"][case_id]
    assert loss == pytest.approx(want["loss"], rel=1e-13, abs=1e-15)
    for row, want_row in zip(grad, want["grad"]):
        assert row == pytest.approx(want_row, rel=1e-13, abs=1e-15)
    assert metrics == pytest.approx(want["metrics"], rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("case_id", IDS)
def test_library_float64_matches_reference(case_id):
    name, params = CASES[case_id]
    want_loss, want_grad, want_metrics = reference(name, params)
    assert_matches(*run_library(name, params, torch.float64), want_loss, want_grad, want_metrics, 1e-10, 1e-12)


@pytest.mark.parametrize("case_id", IDS)
def test_library_float64_matches_json(case_id):
    name, params = CASES[case_id]
    want = GOLDEN["cases"][case_id]
    assert_matches(*run_library(name, params, torch.float64), want["loss"], want["grad"], want["metrics"], 1e-10, 1e-12)


@pytest.mark.parametrize("case_id", IDS)
def test_library_float32_matches_json(case_id):
    name, params = CASES[case_id]
    want = GOLDEN["cases"][case_id]
    assert_matches(*run_library(name, params, torch.float32), want["loss"], want["grad"], want["metrics"], 1e-5, 1e-6)


# ---- the reference is self-consistent: its hand-derived gradient is the slope of its value ----
# ---- (of the value with the stop-gradient parts frozen, for objectives that have one)      ----

# Every case is checked (every objective x aggregation x option of GOLDEN_CASES). The slope is
# taken of the right function:
#   * grpo, gmpo, sapo, sspo have no stop-gradient: the slope of the loss value itself;
#   * cispo, gspo, dhpo (STOP_GRADIENT) do: their gradient is by definition the slope of the value
#     with the stop-gradient parts held at the golden point (``frozen=GOLDEN_INPUTS``):
#     - CISPO's loss is sg[clip(r)] A log pi; the slope of its value would add
#       d clip(r)/d log pi * A * log pi, which the stop-gradient removes on purpose;
#     - GSPO/DHPO use s_{i,t} = sg[s_i] pi/sg[pi] (DHPO eq. 5): moving log pi_{i,t} moves only
#       token t's s_{i,t} (by its own factor), not the s_i of every token of the response.
#       (For GSPO both slopes agree, as the aggregation weight is the same for all tokens of a
#       response; for DHPO with token-varying w or per-token clipping they do not.)
#   The frozen surrogate equals the value at the golden point itself (checked below), so it is
#   the same function, only with the stop-gradient honoured.


def _fd_slope(name, params, i, t, h=1e-6):
    frozen = GOLDEN_INPUTS if name in STOP_GRADIENT else None
    plus, minus = (json.loads(json.dumps(GOLDEN_INPUTS)) for _ in range(2))
    plus["log_probs"][i][t] += h
    minus["log_probs"][i][t] -= h
    loss = lambda inp: reference(name, params, inp, frozen=frozen)[0]  # noqa: E731
    return (loss(plus) - loss(minus)) / (2 * h)


def test_every_registered_objective_has_a_reference_and_golden_cases():
    assert set(REFERENCES) == set(OBJECTIVES), "add a ref_<name> to objectives_reference.py"
    assert set(STOP_GRADIENT) <= set(OBJECTIVES)
    for name in OBJECTIVES:
        for agg in AGG_MODES:
            have = [params for _, n, params in GOLDEN_CASES if n == name and params["agg"] == agg]
            for variant in variant_grid(name):  # every discrete option value (registry-derived)
                assert any(all(params.get(k, DEFAULTS[name][k]) == v for k, v in variant.items()) for params in have), (
                    f"no golden case for {name} {variant} agg={agg}: add one to objectives_reference._cases")


@pytest.mark.parametrize("case_id", IDS)
def test_reference_gradient_is_finite_difference_slope(case_id):
    name, params = CASES[case_id]
    loss, grad, _ = reference(name, params)
    if name in STOP_GRADIENT:  # the frozen surrogate is the same function at the point itself
        assert reference(name, params, frozen=GOLDEN_INPUTS)[0] == loss
    for i, row in enumerate(GOLDEN_INPUTS["response_mask"]):
        for t, valid in enumerate(row):
            if valid:
                assert _fd_slope(name, params, i, t) == pytest.approx(grad[i][t], abs=1e-8), (i, t)


# ---- the golden case actually exercises the options ----


def _loss(case_id):
    return GOLDEN["cases"][case_id]["loss"]


@pytest.mark.parametrize("agg", ["seq-mean-token-mean", "token-mean"])
def test_golden_cases_are_discriminating(agg):
    m = lambda case_id: GOLDEN["cases"][f"{case_id}/{agg}"]["metrics"]  # noqa: E731
    assert m("grpo/default")["actor/pg_clipfrac_high"] > 0 and m("grpo/default")["actor/pg_clipfrac_low"] > 0
    assert m("gspo/default")["actor/pg_clipfrac"] > 0 and m("gspo/asym")["actor/pg_clipfrac"] > 0
    for tight in ("gmpo/tight", "gmpo/tight-logspace"):
        assert m(tight)["actor/pg_clipfrac_high"] > 0 and m(tight)["actor/pg_clipfrac_low"] > 0
    assert m("gmpo/tight") != m("gmpo/tight-logspace")
    assert m("cispo/default")["actor/pg_clipfrac_high"] > 0 and m("cispo/low0.2")["actor/pg_clipfrac_low"] > 0
    assert m("dhpo/averaged-branch-batch")["actor/clipfrac_token"] > 0
    assert m("dhpo/entropy-branch-tightseq")["actor/clipfrac_seq"] > 0
    assert m("dhpo/averaged-unified-tight")["actor/pg_clipfrac"] > 0
    distinct = [
        ("gmpo/tight", "gmpo/tight-logspace"),
        ("gmpo/default", "gmpo/tight"),
        ("dhpo/averaged-branch-batch", "dhpo/averaged-unified-batch"),
        ("dhpo/entropy-branch-batch", "dhpo/entropy-branch-sequence"),
        ("dhpo/entropy-unified-batch", "dhpo/entropy-unified-sequence"),
        ("dhpo/averaged-branch-batch", "dhpo/entropy-branch-batch"),
        ("sapo/default", "sapo/tau3-4"),
        ("sspo/atanlog", "sspo/atanlog-tau0.2-0.3"),
    ]
    for a, b in distinct:
        assert not math.isclose(_loss(f"{a}/{agg}"), _loss(f"{b}/{agg}"), rel_tol=1e-9), (a, b)
    gates = {_loss(f"sspo/{g}/{agg}") for g in ("atanlog", "siglog", "expatan", "expsig", "gumbel")}
    assert len(gates) == 5
    # entropy_norm only matters for entropy mixing
    assert _loss(f"dhpo/averaged-branch-batch/{agg}") == _loss(f"dhpo/averaged-branch-sequence/{agg}")


def test_aggregations_differ_on_the_golden_case():
    for case_id in IDS:
        if case_id.endswith("/token-mean"):
            other = case_id.replace("/token-mean", "/seq-mean-token-mean")
            assert not math.isclose(_loss(case_id), _loss(other), rel_tol=1e-9), case_id
