"""What `sweep run` prints before it starts: the expanded trial table with the resources it asks, and with
--dry-run the exact command each trial runs (for backends that launch one).

    print_trials(Console(), spec)      # trial id, method, params, seed, steps; resources; packing
    print_commands(Console(), spec)    # '# TRIAL_ID' then the command, unwrapped, for verl trials
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from sweeps.specs.load import SweepSpec


def print_trials(console: Console, spec: SweepSpec) -> None:
    table = Table(title=f"{spec.name}: {len(spec.trials)} trials")
    # the id column is never cut: ids are what `sweep status` and MLflow run names show
    table.add_column("trial id", no_wrap=True, min_width=max(len(t.trial_id) for t in spec.trials))
    params_of = {t.trial_id: [f"{k}={v}" for k, v in t.config.algorithm.params.items()] for t in spec.trials}
    widest = max((len(p) for ps in params_of.values() for p in ps), default=6)
    for col in ("method", "params", "seed", "steps"):  # folded, never cut with "…"
        table.add_column(col, overflow="fold", min_width=widest if col == "params" else None)
    for t in spec.trials:
        params = "\n".join(params_of[t.trial_id])
        table.add_row(*(Text(str(x)) for x in (t.trial_id, t.method, params, t.config.seed,
                                              t.config.trainer.steps)))  # shown verbatim, never read as markup
    console.print(table)
    r = spec.resources
    console.print(f"resources per trial: {r.cpus:g} CPU, {r.gpus:g} GPU; max concurrent: {spec.max_concurrent}; "
                  f"total ask at full concurrency: {r.cpus * spec.max_concurrent:g} CPU, {r.gpus * spec.max_concurrent:g} GPU; "
                  f"retries per trial: {spec.max_failures}")
    for typed, reached in spec.override_reach:  # every trial-config override, and whom it reaches
        whom = f"all {len(spec.trials)} trials" if len(reached) == len(spec.trials) else (
            f"{len(reached)} of {len(spec.trials)} trials ({', '.join(sorted({t.method for t in spec.trials if t.trial_id in reached}))})")
        console.print(Text(f"override {typed}: {whom}"))
    if 0 < r.gpus < 1:  # packing (verl: the commands below cap each process's CUDA memory to the share)
        per_gpu = round(1 / r.gpus)
        console.print(f"packing: {per_gpu} trials share each GPU (resources.gpus {r.gpus:g}); "
                      f"{min(per_gpu, spec.max_concurrent)} at once on a one-GPU machine")


def print_commands(console: Console, spec: SweepSpec) -> None:
    """--dry-run: the exact command each trial runs, for backends that launch one (verl main_ppo)."""
    from trainers.backends import describe

    for t in spec.trials:
        command = describe(t.config)
        if command is not None:
            console.print(f"# {t.trial_id}", markup=False, highlight=False)
            print(command)  # plain print: never wrapped, so it can be copied into a shell
