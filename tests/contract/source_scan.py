"""What the source-scanning tests share: the product's packages and the docstrings a scan skips.

Imported by the tests as `source_scan` (a unique module name beside them).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("contract", "tracking_store", "policy", "evaluators", "trainers", "trial_eval", "dashboards", "sweeps")


def docstring_ids(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a parsed module (module, classes, functions): text, not code."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids
