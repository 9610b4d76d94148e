"""`sweep plan PILOT`: how many seeds a study needs, priced from a pilot before the compute is spent.

    sweep plan dhpo_vs_baselines --detect AVG=3                  # a finished sweep in the store as the pilot
    sweep plan dhpo_vs_baselines --seeds 8 -f csv                # the differences 8 seeds per method can find
    sweep plan dhpo_vs_baselines --budget 200                    # GPU-hours where logged, else wall hours
    sweep plan samples.parquet --baselines GRPO --detect AVG=3,aime24=5 --figure plan.png

PILOT: a sweep's name (its store as every read command finds it: --tracking-uri, $MLFLOW_TRACKING_URI, --run-dir),
or what `sweep table` reads with per-problem scores (a per-sample CSV/Parquet file, an lm-eval mapping, a folder
of METHOD@SEED runs, METHOD@SEED=DIR items). The statistics: dashboards/stats/seed_plan.py; docs/statistics.md.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from sweeps.commands.options import StoreOptions, grouped, split_list, warnings_as_notes


class PlanFormat(str, Enum):
    md = "md"
    csv = "csv"


def parse_detect(text: str | None) -> dict[str, float]:
    """'AVG=3,aime24=5' -> {'AVG': 3.0, 'aime24': 5.0}; ValueError naming --detect and the bad item."""
    out = {}
    for item in split_list(text) or []:
        column, sep, value = item.partition("=")
        try:
            out[column.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not column.strip():
            raise ValueError(f"--detect: {item!r} is not COLUMN=DIFFERENCE in the table's units (e.g. AVG=3)")
    return out


def _is_file_input(pilot: str) -> bool:
    return Path(pilot).exists() or "=" in pilot


def _file_table(pilot: list[str], baselines: list[str] | None):
    """The table of a per-sample pilot (as `sweep table` builds it) and no costs."""
    import pandas as pd

    from dashboards.tables.build import TableConfig, build_table
    from sweeps.commands.table import SampleOptions, load_input

    results, problems, _ = load_input(pilot, SampleOptions())
    if problems is None:
        raise ValueError(f"{pilot[0]}: per-seed numbers only; a plan needs per-problem scores (a per-sample file with "
                         "`problem` and `correct` columns, or lm-eval --log_samples output)")
    if not baselines:
        raise ValueError("--baselines: name the baseline methods of the pilot (e.g. --baselines GRPO)")
    cfg = TableConfig(baselines=baselines, benchmarks=[str(b) for b in pd.unique(results["benchmark"])],
                      significance="paired", cells="mean ± ci", scale=100.0)
    return build_table(results, cfg, problems=problems), {}, "trials"


def _sweep_table(name: str, store: StoreOptions, baselines: list[str] | None):
    """The table of a pilot sweep with the settings recorded with it, and each method's mean trial cost."""
    from contract.metrics import COMPUTE_GPU_S, COMPUTE_WALL_S
    from dashboards.collect.recorded_spec import report_settings
    from dashboards.collect.sweep_runs import collect, find_runs
    from dashboards.model.report import history_keys
    from dashboards.stats.seed_plan import mean_costs
    from dashboards.tables.from_sweep import table_from_sweep
    from tracking_store.uri import resolve_uri

    found = find_runs(name, tracking_uri=resolve_uri(store.tracking_uri, store.run_dir))
    given = {"baselines": baselines} if baselines else {}
    cfg, notes = report_settings(found, None, given, {}, "options")
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    if not cfg.table.baselines:
        raise ValueError(f"sweep {name!r} names no baselines (its report.table.baselines): give --baselines")
    keys = history_keys(cfg, {k for r in found.runs for k in r.metrics}) + [COMPUTE_GPU_S, COMPUTE_WALL_S]
    data = collect(found=found, keys=list(dict.fromkeys(keys)))
    costs, unit = mean_costs(data.trials, data.history, {"GPU-hours": (COMPUTE_GPU_S, 3600.0),
                                                           "wall hours": (COMPUTE_WALL_S, 3600.0)})
    return table_from_sweep(data, cfg.table), costs, unit


@grouped
def plan(
    pilot: Annotated[list[str], typer.Argument(metavar="PILOT", show_default=False, help="A finished sweep's name, or a per-sample results file / lm-eval output as `sweep table` reads it.")],
    detect: Annotated[Optional[str], typer.Option(help="Differences to find, in the table's units: COLUMN=DIFF,... (e.g. AVG=3 or AVG=3,aime24=5): the seeds per method each needs.")] = None,
    seeds: Annotated[Optional[int], typer.Option(help="Seeds per method: the difference each comparison can find with them.")] = None,
    budget: Annotated[Optional[float], typer.Option(help="Compute to spend, in the pilot's cost unit (GPU-hours where logged, else wall hours; trials for a file): the seeds it buys, then as --seeds.")] = None,
    power: Annotated[float, typer.Option(help="The chance of finding a true difference of that size.")] = 0.8,
    baselines: Annotated[Optional[str], typer.Option(help="Comma-separated baseline methods (default for a sweep: its report's).")] = None,
    store: StoreOptions = StoreOptions(),
    format: Annotated[PlanFormat, typer.Option("--format", "-f", help="Output format.")] = PlanFormat.md,
    figure: Annotated[Optional[Path], typer.Option(help="Also draw the detectable difference against seeds per method (PNG or PDF), one line per comparison of the planned columns.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write here instead of stdout.")] = None,
) -> None:
    """Seeds per method for a difference, or the difference a number of seeds or a budget can find, per
    comparison with the strongest baseline (the paired test at Holm's first step), from a pilot.

    Examples:

      sweep plan dhpo_vs_baselines --detect AVG=3

      sweep plan dhpo_vs_baselines --budget 200 -f csv

      sweep plan samples.parquet --baselines GRPO --seeds 8 --figure plan.png
    """
    from dashboards.stats.seed_plan import Target, make_plan

    try:
        target = Target(detect=parse_detect(detect), seeds=seeds, budget=budget, power=power)
        with warnings_as_notes():
            table, costs, unit = (_file_table(pilot, split_list(baselines)) if _is_file_input(pilot[0])
                                  else _sweep_table(pilot[0], store, split_list(baselines)))
            result = make_plan(table, target, costs, unit)
    except (ValueError, FileNotFoundError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    text = result.csv() if format == PlanFormat.csv else result.markdown(table.config.decimals)
    if figure is not None:
        from dashboards.figures.plan_figure import draw_plan

        draw_plan(result, figure)
        typer.echo(f"figure: {figure}", err=True)
    if out:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}")
    else:
        typer.echo(text, nl=False)
