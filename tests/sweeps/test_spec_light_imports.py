"""Checking a spec and listing the objectives import nothing heavy, so `sweep run` on a bad spec,
`sweep run --dry-run` of a local spec and `sweep ls-objectives` answer about as fast as `sweep --help`
(benchmarks/cli_startup.py times them).

Each check runs in a fresh interpreter and reads its ``sys.modules``. HEAVY lists what this path
imported before and must not again: torch (the objective modules imported it at module level; now
only their computing functions import it, trainers/objectives/base.py), pandas, numpy, pyarrow and
plotly (the spec's ``report:`` section was checked with dashboards/report/writer.py's ReportConfig; now it
lives in dashboards/model/report.py), and ray, mlflow, transformers, verl, which the runner, the
trainers and the report need, never the validation.

One step may import verl (and torch, ray, transformers with it): a verl spec's preflight composes
each trial's main_ppo config with verl's own schema (trainers/verl_backend/preflight.py). In the
spec check it is replaced by a recorder, so everything else a verl spec goes through is checked too.

    .venv/bin/python -m pytest -q tests/sweeps/test_spec_light_imports.py
"""

from __future__ import annotations

import pytest
import json
import subprocess
import sys
import textwrap

from sweep_testlib import REPO, shipped_user_inputs

from sweeps.specs.load import CONFIGS_DIR

HEAVY = ("torch", "numpy", "pandas", "pyarrow", "plotly", "ray", "mlflow", "transformers", "verl")
SHIPPED = sorted((CONFIGS_DIR / "sweeps").glob("*.yaml"))
INPUTS = REPO / ".cache" / "shipped_inputs"


def _python(code: str, cwd, *args: str) -> list:
    """Run ``code`` in a fresh interpreter; its last stdout line is JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


SPEC_CHECK = """
    import json, sys
    import trainers.verl_backend.preflight as verl_preflight
    from sweeps.specs.load import SpecError, load_spec

    preflighted = []
    verl_preflight.preflight = lambda configs, source: preflighted.append(source)  # imports verl: see the docstring
    results = []
    for path, overrides in json.loads(sys.argv[1]):
        try:
            spec = load_spec(path, overrides)
            outcome = f"{len(spec.trials)} trials"
        except SpecError as err:
            outcome = f"SpecError: {err}"
        results.append([path, outcome])
    heavy = sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)
    print(json.dumps([results, heavy, preflighted]))
"""


@pytest.mark.slow
def test_loading_every_shipped_spec_imports_nothing_heavy(tmp_path):
    specs = [[str(p), [f"base.{o}" for o in shipped_user_inputs(p, INPUTS)]] for p in SHIPPED]
    results, heavy, preflighted = _python(SPEC_CHECK, tmp_path, json.dumps(specs), json.dumps(HEAVY))
    for path, outcome in results:  # every shipped spec is valid with the inputs its first line documents
        assert outcome.endswith(" trials"), f"{path}: {outcome}"
    assert heavy == [], f"validating the shipped specs imported {heavy}"
    assert preflighted, "no verl spec reached its preflight: is the recorder still in place?"


CLI_CHECK = """
    import json, sys
    from typer.testing import CliRunner
    from sweeps.cli import app

    runs = []
    for args in json.loads(sys.argv[1]):
        result = CliRunner().invoke(app, args)
        runs.append([args, result.exit_code, result.output])
    heavy = sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)
    print(json.dumps([runs, heavy]))
"""

BAD_SPECS = {  # file -> (its text, a piece of the error)
    "unknown_key.yaml": ("name: bad\nvariantz: [{algorithm: grpo}]\n", "unknown key 'variantz'"),
    "unknown_objective.yaml": ("name: bad\nvariants: [{algorithm: grpx}]\n", "unknown key 'grpx'"),
    "unknown_param.yaml": ("name: bad\nvariants: [{algorithm: sspo, gait: atanlog}]\n", "unknown key 'gait'"),
    "bad_param.yaml": ("name: bad\nvariants: [{algorithm: grpo, eps_low: -1}]\n", "grpo.eps_low: expected a finite"),
    "bad_report.yaml": ("name: bad\nvariants: [{algorithm: grpo}]\nreport: {band: wide}\n", "ReportConfig.band"),
}


def test_cli_errors_dry_run_and_ls_objectives_import_nothing_heavy(tmp_path):
    for name, (text, _) in BAD_SPECS.items():
        (tmp_path / name).write_text(text)
    commands = [["ls-objectives"], ["run", "dhpo_vs_baselines", "--dry-run"], ["run", "missing.yaml"]]
    commands += [["run", name] for name in BAD_SPECS]
    runs, heavy = _python(CLI_CHECK, tmp_path, json.dumps(commands), json.dumps(HEAVY))
    codes = {" ".join(args): code for args, code, _ in runs}
    assert codes == {"ls-objectives": 0, "run dhpo_vs_baselines --dry-run": 0, "run missing.yaml": 2,
                     **{f"run {name}": 2 for name in BAD_SPECS}}, runs
    for args, _, output in runs[3:]:
        assert BAD_SPECS[args[1]][1] in " ".join(output.split()), output[-2000:]
    for name in ("grpo", "gspo", "gmpo", "cispo", "sapo", "sspo", "dhpo"):  # the whole listing
        assert f"{name}: " in runs[0][2], runs[0][2]
    assert heavy == [], f"these commands imported {heavy}"
