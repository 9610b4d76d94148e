"""The environment-variable registry: typed values, defaults, clear errors, one entry per name."""

from __future__ import annotations

import pytest

from contract.env import ENV_VARS, FORWARD_ENTROPY, RAY_AUTH_TOKEN, EnvVar


def test_bool_variables_parse_the_usual_spellings_and_name_a_bad_one(monkeypatch):
    monkeypatch.delenv(FORWARD_ENTROPY.name, raising=False)
    assert FORWARD_ENTROPY.get() is False and not FORWARD_ENTROPY.is_set()
    for raw, value in (("1", True), ("TRUE", True), ("yes", True), ("0", False), ("off", False), ("", False)):
        monkeypatch.setenv(FORWARD_ENTROPY.name, raw)
        assert FORWARD_ENTROPY.get() is value, raw
    monkeypatch.setenv(FORWARD_ENTROPY.name, "maybe")
    with pytest.raises(ValueError, match="ZOO_VERL_FORWARD_ENTROPY.*'maybe'"):
        FORWARD_ENTROPY.get()


def test_typed_and_string_variables(monkeypatch):
    monkeypatch.setenv(RAY_AUTH_TOKEN.name, "abc")
    assert RAY_AUTH_TOKEN.get() == "abc"
    limit = EnvVar("SWEEP_TEST_LIMIT", float, 3.0, "a test variable")
    monkeypatch.delenv("SWEEP_TEST_LIMIT", raising=False)
    assert limit.get() == 3.0
    monkeypatch.setenv("SWEEP_TEST_LIMIT", "1.5")
    assert limit.get() == 1.5
    monkeypatch.setenv("SWEEP_TEST_LIMIT", "soon")
    with pytest.raises(ValueError, match="SWEEP_TEST_LIMIT: expected float"):
        limit.get()


def test_registry_has_one_documented_entry_per_name():
    names = [v.name for v in ENV_VARS]
    assert len(names) == len(set(names))
    assert all(v.doc.strip() and v.name.isupper() for v in ENV_VARS)
