"""Metric names are spelled once, in contract/metrics.py: no other module writes a metric key (or a
key template) as a string literal. Docstrings may mention keys; code must use the contract's names."""

from __future__ import annotations

import ast
from pathlib import Path

from contract.metrics import ACTOR, EVAL, LAST, PERF, RESPONSE_LENGTH, REWARD, TRIAL, VAL
from source_scan import PACKAGES, REPO, docstring_ids
NAMESPACES = (ACTOR, RESPONSE_LENGTH, REWARD, VAL, PERF, EVAL, TRIAL, LAST)


def metric_literals(path: Path) -> list[str]:
    """'file:line: text' of each string constant (f-string parts included) that starts like a metric key."""
    tree = ast.parse(path.read_text(), str(path))
    skip = docstring_ids(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                and node.value.startswith(NAMESPACES):
            found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    return found


def test_no_metric_key_literal_outside_the_contract():
    files = [p for pkg in PACKAGES if pkg != "contract" for p in sorted((REPO / pkg).rglob("*.py"))]
    assert len(files) > 50
    offenders = [hit for p in files for hit in metric_literals(p)]
    assert not offenders, "use contract/metrics.py names instead of:\n" + "\n".join(offenders)


def test_the_check_sees_literals_and_f_string_parts(tmp_path):
    sample = REPO / ".cache" / "metric_literal_sample.py"
    sample.parent.mkdir(exist_ok=True)
    sample.write_text('"""Docs may say actor/entropy."""\nA = "actor/entropy"\nB = f"val/{x}/acc"\nC = "a/b"\n')
    try:
        hits = metric_literals(sample)
    finally:
        sample.unlink()
    assert [h.split(": ", 1)[1] for h in hits] == ["'actor/entropy'", "'val/'"]
