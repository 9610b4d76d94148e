"""A sweep's run roles, tags and filters are declared once (tracking_store/roles.py): no copy elsewhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tracking_store.roles import PARENT, TRIAL, children_filter, parent_tags, role_filter, trial_tags

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ["contract", "tracking_store", "policy", "evaluators", "trainers", "trial_eval", "dashboards", "sweeps",
            "benchmarks", "scripts"]


def _code_strings(path: Path):
    """(line, text) of every string constant in ``path`` that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def _role_dicts(path: Path):
    """(line) of every dict literal with a "role" key: a run's tags spelled out by hand."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "role" for k in node.keys):
            values = [v.value for v in node.values if isinstance(v, ast.Constant)]
            if any(v in (PARENT, TRIAL, "eval") for v in values):
                yield node.lineno


def test_no_module_spells_out_a_role_a_filter_or_the_nesting_tag():
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if path == REPO / "tracking_store" / "roles.py":
                continue
            found += [f"{path.relative_to(REPO)}:{line}: {text!r}" for line, text in _code_strings(path)
                      if re.search(r"tags\.role\b|mlflow\.parentRunId|role\s*=\s*'", text)]
            found += [f"{path.relative_to(REPO)}:{line}: a run's role tags by hand" for line in _role_dicts(path)]
    assert not found, "use tracking_store/roles.py instead of:\n" + "\n".join(found)


def test_the_check_sees_a_copy(tmp_path):
    copy = tmp_path / "copy.py"
    copy.write_text('"""tags.role = \'trial\' in a docstring is prose."""\nF = "tags.role = \'trial\'"\n'
                    'T = {"role": "parent", "sweep": "s"}\n')
    assert [line for line, text in _code_strings(copy) if "tags.role" in text] == [2]
    assert list(_role_dicts(copy)) == [3]


def test_the_declarations():
    assert role_filter(TRIAL) == "tags.role = 'trial'" and children_filter("abc") == "tags.`mlflow.parentRunId` = 'abc'"
    assert parent_tags("s") == {"role": "parent", "sweep": "s"}
    assert trial_tags("s", "p", "t.s0", method="GRPO") == {
        "mlflow.parentRunId": "p", "role": "trial", "sweep": "s", "trial_id": "t.s0", "method": "GRPO"}
    with pytest.raises(ValueError, match="role: expected one of parent, trial, eval, got 'child'"):
        role_filter("child")
