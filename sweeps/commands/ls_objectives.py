"""`sweep ls-objectives`: the objective registry (trainers/objectives/), one table per objective.

    sweep ls-objectives          # names, summaries, parameters with the papers' defaults and meanings
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

console = Console()


def ls_objectives() -> None:
    """List the objective registry: names, summaries and parameters with paper defaults."""
    from trainers.objectives import OBJECTIVES

    for name, spec in OBJECTIVES.items():
        table = Table(title=f"{name}: {spec.summary}", show_header=True)
        for col in ("parameter", "default", "meaning"):
            table.add_column(col)
        for param, (default, doc) in spec.param_docs().items():
            table.add_row(param, repr(default), doc)
        console.print(table)
