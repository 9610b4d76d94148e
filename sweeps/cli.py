"""The `sweep` command line: it only dispatches; each subcommand is one module of sweeps/commands/.

    sweep run dhpo_vs_baselines.yaml                     # the whole study, then the report   (commands/run.py)
    sweep resume dhpo_vs_baselines.yaml                  # = run again: finished trials are skipped
    sweep status dhpo_vs_baselines                       # trials and their MLflow state      (commands/status.py)
    sweep ui dhpo_vs_baselines --open                    # MLflow UI on the sweep's curves    (commands/ui.py)
    sweep report dhpo_vs_baselines --std                 # paper table + curves, again        (commands/report.py)
    sweep table results.csv --format latex               # a table from numbers made elsewhere (commands/table.py)
    sweep plan dhpo_vs_baselines --detect AVG=3          # seeds a study needs, priced from a pilot (commands/plan.py)
    sweep fit curves.csv --baselines GRPO                # compute curves fitted to curves from anywhere (commands/fit.py)
    sweep eval dhpo_vs_baselines --benchmarks aime24,math500   # checkpoints on the papers' benchmarks (commands/eval.py)
    sweep slurm dhpo_vs_baselines.yaml --nodes 2 --run-dir /shared/runs  # one Slurm batch job, requeued when preempted (commands/slurm.py)
    sweep ls-objectives                                  # the objective registry             (commands/ls_objectives.py)

Options shared by several commands are declared once, as dataclasses (commands/options.py `grouped`).
Heavy imports (Ray, MLflow, torch) happen inside the commands that need them: `sweep --help` and a bad
spec answer at once (benchmarks/cli_startup.py).
"""

from __future__ import annotations

import typer

from sweeps.commands.eval import eval_cmd
from sweeps.commands.fit import fit_cmd
from sweeps.commands.ls_objectives import ls_objectives
from sweeps.commands.options import FlagCommand, FlagGroup, fail
from sweeps.commands.plan import plan
from sweeps.commands.report import report
from sweeps.commands.run import resume, run
from sweeps.commands.slurm import slurm
from sweeps.commands.status import status
from sweeps.commands.table import table
from sweeps.commands.ui import ui

app = typer.Typer(help="Turn one YAML into a whole RLVR objective study: Ray Tune trials, MLflow runs, paper tables.",
                  no_args_is_help=True, cls=FlagGroup)  # --install-completion / --show-completion for bash, zsh, fish
for name, command in {"run": run, "resume": resume, "status": status, "ui": ui, "ls-objectives": ls_objectives,
                      "report": report, "table": table, "plan": plan, "fit": fit_cmd, "eval": eval_cmd,
                      "slurm": slurm}.items():
    app.command(name, cls=FlagCommand)(command)  # flags shown as flags in --help (options.FlagCommand)


def main() -> None:
    """The `sweep` command: the app, with a bad input found outside a command's own checks (a plug-in module
    of SWEEP_PLUGINS that does not import) said in one line, exit 2."""
    from contract.errors import InputError

    try:
        app()
    except InputError as err:
        raise SystemExit(fail(f"error: {err}").exit_code) from None


if __name__ == "__main__":
    main()
