"""The environment-variable registry: typed values, defaults, clear errors, one entry per name."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from contract.env import ENV_VARS, FORWARD_ENTROPY, RAY_AUTH_TOKEN, EnvVar, markdown_table
from source_scan import PACKAGES, REPO, docstring_ids


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
    # upper case, but for Ray's system settings, which are RAY_ + the setting's own (lower-case) name
    assert all(v.doc.strip() and (v.name.isupper() or (v.owner == "Ray" and v.name.startswith("RAY_")))
               for v in ENV_VARS)




def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) \
        and node.value.id == "os"


def raw_environment_uses(path: Path, registered: set[str]) -> list[str]:
    """'file:line: text' of each registered name spelled as a string, and of each os.environ / os.getenv use
    whose variable is a string literal (registered or not): both must go through contract/env.py."""
    tree = ast.parse(path.read_text(), str(path))
    skip, found = docstring_ids(tree), []
    where = lambda node, text: f"{path.relative_to(REPO)}:{node.lineno}: {text}"  # noqa: E731
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                and node.value in registered:
            found.append(where(node, node.value))
        literal = None
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            literal = node.slice
        elif isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute) and (
                _is_environ(node.func.value) or (node.func.attr == "getenv" and isinstance(node.func.value, ast.Name)
                                                 and node.func.value.id == "os")):
            literal = node.args[0]
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            literal = node.left
        if isinstance(literal, ast.Constant) and isinstance(literal.value, str):
            found.append(where(node, f"os.environ with {literal.value!r}"))
    return found


def test_every_variable_the_product_reads_or_sets_goes_through_the_registry():
    registered = {v.name for v in ENV_VARS}
    files = [p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py")) if p != REPO / "contract" / "env.py"]
    assert len(files) > 100
    found = [hit for p in files for hit in raw_environment_uses(p, registered)]
    assert not found, "use contract.env's EnvVar (add one there for a new variable):\n" + "\n".join(found)


def test_the_scan_finds_raw_names(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_text('"""MLFLOW_TRACKING_URI in a docstring is fine."""\nimport os\nx = os.environ.get("SOME_VAR")\n'
                   'y = {"MLFLOW_TRACKING_URI": 1}\nif "OTHER" in os.environ:\n    os.environ["THIRD"] = "1"\n')
    hits = raw_environment_uses(bad, {"MLFLOW_TRACKING_URI"})
    assert sorted(h.split(": ", 1)[1] for h in hits) == sorted(
        ["os.environ with 'SOME_VAR'", "MLFLOW_TRACKING_URI", "os.environ with 'OTHER'", "os.environ with 'THIRD'"])
    assert not any(":1:" in h for h in hits)  # the docstring's mention


def test_docs_environment_table_is_generated_from_the_registry():
    page = (REPO / "docs" / "environment.md").read_text(encoding="utf-8")
    assert page == markdown_table(), "regenerate it: python -m contract.env > docs/environment.md"
    assert all(f"`{v.name}`" in page for v in ENV_VARS)


def test_set_default_keeps_the_users_value_and_set_unset_write(monkeypatch):
    var = EnvVar("SWEEP_TEST_SWITCH", bool, False, "a test variable")
    monkeypatch.delenv(var.name, raising=False)
    var.set_default(True)
    assert var.raw() == "true" and var.get() is True
    var.set_default(False)  # already set: kept
    assert var.get() is True
    var.set(0)
    assert var.raw() == "0" and var.get() is False
    var.unset()
    assert not var.is_set() and var.raw() is None
