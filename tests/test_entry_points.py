"""The `python -m` entry points: the modules with a `__main__` are the ones docs/cli.md lists, and each runs.

* every module of the product packages that is a `__main__.py` or has an `if __name__ == "__main__":` block
  (found with ast) is a row of docs/cli.md's "Other entry points" table, and every row is such a module
  (`sweeps.cli` is the `sweep` command itself, not in it);
* `python -m MODULE --help` exits 0 and shows `--smoke`, without importing torch, ray or mlflow;
* `python -m MODULE --smoke` exits 0 and prints its result, for each module whose smoke no other test runs
  (ALREADY_SMOKED names those tests), in a fresh working directory that it leaves empty.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PRODUCT = ("contract", "tracking_store", "policy", "evaluators", "trainers", "trial_eval", "dashboards", "sweeps")
SWEEP_COMMAND = "sweeps.cli"
HEAVY = ("torch", "ray", "mlflow")

# Smokes that another test runs already, and where.
ALREADY_SMOKED = {
    "dashboards": "tests/dashboards/test_dashboards_cli.py::test_smoke_mode_runs_in_a_temp_dir_inside_cwd",
    "dashboards.stats.score_simulation":
        "tests/dashboards/test_calibration.py::test_the_command_prints_a_row_per_scenario",
    "trainers.local": "tests/trainers/local/test_local_trainer.py::test_cli_smoke_runs_and_rejects_bad_config",
}
# The others: a line of output that only a smoke which did its work prints.
SMOKE_SAYS = {
    "contract.env": r"^smoke ok: \d+ variables \(\d+ ours\), \d+ rows in docs/environment.md's table",
    "evaluators.verify_worker": r"^\\\{1,2\\\} vs \\\{2,1\\\}: \{\"ok\": true\}$",
    "sweeps.slurm.after_driver": r"^smoke ok: closed 2 runs of a dead driver: KILLED, KILLED; lease left: False$",
    "sweeps.slurm.wait_nodes": r"^smoke ok: 1 of 1 node\(s\) of a local Ray joined in \d+ s$",
    "trainers.config": r"^smoke ok: the defaults with 3 overrides resolved, validated and read back equal",
    "trainers.local.warmstart": r"^smoke ok: base policy [0-9a-f]{16} built in [\d.]+s \(20 warm-start steps\) "
                                r"and found again in its cache",
    "trainers.objectives": r"^smoke dhpo\s+loss=[+-]\d+\.\d{4} grad_norm=\d+\.\d{4} metrics=\d+$",
    "trainers.verl_backend.shaped_model": r"^smoke ok: qwen3-0.6b with 2 layers and 1,024 ids: [\d,]+ parameters built, "
                                          r"loaded back in bfloat16, every id decodes$",
    "trainers.verl_backend.shipped_base": r"^smoke ok: tiny-qwen3-[0-9a-f]{12}: its bytes, its spec and the recipe's "
                                          r"first 50 warm-start steps match RECIPE.json$",
    "trainers.verl_backend.launch": r"^smoke ok: the dry run of the defaults with backend=verl verl.device=cpu: "
                                    r"python -m verl.trainer.main_ppo with \d+ overrides",
}
ENTRY_POINTS = sorted([*ALREADY_SMOKED, *SMOKE_SAYS])


def _is_main_guard(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
            and len(node.test.ops) == 1 and isinstance(node.test.ops[0], ast.Eq)
            and len(node.test.comparators) == 1 and isinstance(node.test.comparators[0], ast.Constant)
            and node.test.comparators[0].value == "__main__")


def runnable_modules() -> set[str]:
    """`python -m` names of the product's modules that are a `__main__.py` or have a `__main__` guard."""
    found = set()
    for package in PRODUCT:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            if path.name == "__main__.py":
                found.add(".".join(parts[:-1]))
            elif any(_is_main_guard(node) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))):
                found.add(".".join(parts[:-1] if path.name == "__init__.py" else parts))
    return found


def documented_modules() -> set[str]:
    """The first cell of each row of docs/cli.md's "Other entry points" table."""
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("\n## Other entry points\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1) for m in re.finditer(r"^\| `([\w.]+)` \|", section, re.M)}


def _run(module: str, *args: str, cwd: Path, timeout: int, python_flags: tuple[str, ...] = ()):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *python_flags, "-m", module, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_the_runnable_modules_are_the_documented_ones():
    found = runnable_modules()
    assert SWEEP_COMMAND in found
    found.discard(SWEEP_COMMAND)
    assert found == documented_modules(), "docs/cli.md's table of other entry points and the modules differ"
    assert found == set(ENTRY_POINTS), "this file's lists and the modules differ"


@pytest.mark.parametrize("module", sorted(ALREADY_SMOKED))
def test_the_smokes_run_elsewhere_are_there(module):
    path, name = ALREADY_SMOKED[module].split("::")
    text = (REPO / path).read_text(encoding="utf-8")
    test = text.split(f"def {name}(", 1)[1].split("\ndef ", 1)[0]
    assert "--smoke" in test and (module in text or module.replace(".", "/") in text), ALREADY_SMOKED[module]


@pytest.mark.slow
@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_help_shows_smoke_without_heavy_imports(module, tmp_path):
    done = _run(module, "--help", cwd=tmp_path, timeout=120, python_flags=("-X", "importtime"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"usage: python -m {module} ") and "--smoke" in done.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not imported & set(HEAVY), f"--help imports {sorted(imported & set(HEAVY))}"


@pytest.mark.slow
@pytest.mark.parametrize("module", ["trainers.config", "trainers.objectives", "trainers.verl_backend.launch"])
def test_a_bad_argument_exits_2(module, tmp_path):
    done = _run(module, "--no-such-option", cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and "unrecognized arguments: --no-such-option" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(SMOKE_SAYS))
def test_smoke(module, tmp_path):
    done = _run(module, "--smoke", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert re.search(SMOKE_SAYS[module], done.stdout, re.M), done.stdout[-3000:]
    assert list(tmp_path.iterdir()) == [], "the smoke left files in its working directory"
