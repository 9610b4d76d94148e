"""`sweep report SWEEP`: the sweep's paper table (md/tex/csv/html) and curves in one offline HTML file,
logged to its parent run.

    sweep report dhpo_vs_baselines
    sweep report dhpo_vs_baselines --smoke                       # the smoke sweep: dhpo_vs_baselines_smoke
    sweep report dhpo_vs_baselines --base "Qwen3-1.7B-Base" --baselines GRPO,GSPO --delta-avg --std
    sweep report sspo_temperature_grid --metric "eval/{benchmark}/avg_at_k" --select-by AVG
    sweep report grid --at best --select-by val/avg/acc --ema-alpha 0.02 --out reports/grid --no-log
    sweep report big_grid --tracking-uri http://mlflow:5000 --rebuild   # the read copy written anew, then read

Settings: those recorded with the sweep, then --spec's `report:` section, then the options
(dashboards/collect/recorded_spec.py report_settings); the report itself: dashboards/report/writer.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, ClassVar, Optional

import typer

from sweeps.commands.options import Direct, StoreOptions, cells_text, grouped, split_list, warnings_as_notes
from sweeps.commands.spec_input import smoke_name


class At(str, Enum):
    final = "final"
    best = "best"


class Mode(str, Enum):
    max = "max"
    min = "min"


class Band(str, Enum):
    minmax = "minmax"
    std = "std"
    seeds = "seeds"
    none = "none"


class By(str, Enum):
    method = "method"
    config = "config"


def _value(choice: Enum | None) -> str | None:
    return None if choice is None else choice.value


@dataclass
class TableOptions:
    """The table's settings (the report: section's table: keys); None keeps the recorded one."""

    panel: ClassVar[str] = "Table"
    metric: Annotated[Optional[str], typer.Option(help="Table metric with {benchmark}: val/{benchmark}/acc (default) or a checkpoint evaluation's eval/{benchmark}/KIND, KIND = avg_at_k, pass_at_k or maj_at_k.")] = None
    select_by: Annotated[Optional[str], typer.Option(help="Metric picking best step/config, e.g. val/avg/acc or AVG.")] = None
    at: Annotated[Optional[At], typer.Option(help="final, or best (the step with the best --select-by).")] = None
    mode: Annotated[Optional[Mode], typer.Option(help="Direction of --select-by.")] = None
    base: Annotated[Optional[str], typer.Option(help="Add a base-model row (step-0 values) with this label.")] = None
    baselines: Annotated[Optional[str], typer.Option(help="Comma-separated baseline methods (strongest in italics).")] = None
    benchmarks: Annotated[Optional[str], typer.Option(help="Comma-separated benchmark columns, in order.")] = None
    delta_avg: Annotated[Optional[bool], typer.Option("--delta-avg", help="Add Delta Avg over the base row (needs --base).")] = None
    std: Annotated[Optional[bool], typer.Option("--std", help="Show mean ± std over seeds.")] = None
    significance: Annotated[Optional[str], typer.Option(help="Mark (†) cells differing from the strongest baseline: auto (default: paired where per-problem verdicts exist, else Welch over >= 3 seeds), paired (per-problem paired t-test, Holm), welch (>= 2 seeds, no correction), off.")] = None
    seed_spread: Annotated[Optional[str], typer.Option(help="The seed spread the paired test judges each method with: own (default: keeps the level when methods differ in stability), moderated or pooled (more power, assumes every method's seeds vary alike).")] = None
    cells: Annotated[Optional[str], typer.Option(help="What a cell shows: 'mean', 'mean ± ci' (95% interval half-width) or 'mean ± std'.")] = None
    select_on: Annotated[Optional[str], typer.Option("--select-on", help="Where a grid picks each method's configuration: select (the selection split, data.select_size), reported (the reported benchmarks themselves, the papers' way) or auto (default: select where logged).")] = None
    power: Annotated[Optional[float], typer.Option(help="A difference in shown units (e.g. 2.0 points): the footnote and stdout say how many seeds per method find it with 80% power.")] = None
    decimals: Annotated[Optional[int], typer.Option(help="Decimals shown (ranking uses them).")] = None
    scale: Annotated[Optional[float], typer.Option(help="Multiply values (default 100: percentages).")] = None

    def given(self) -> dict:
        """The options given, as the table: section's keys and values."""
        values = {**vars(self), "at": _value(self.at), "mode": _value(self.mode), "cells": cells_text(self.cells),
                  "baselines": split_list(self.baselines), "benchmarks": split_list(self.benchmarks)}
        return {k: v for k, v in values.items() if v is not None}


@dataclass
class FigureOptions:
    """The curves and the files written (the report: section's own keys); None keeps the recorded one."""

    panel: ClassVar[str] = "Curves and files"
    curves: Annotated[Optional[str], typer.Option(help="Comma-separated metric keys for the curves grid.")] = None
    ema_alpha: Annotated[Optional[float], typer.Option(help="EMA weight of the newest point, (0,1]; 1 = none, SSPO used 0.02.")] = None
    band: Annotated[Optional[Band], typer.Option(metavar="BAND", help="Spread over seeds drawn around each curve: minmax, std, seeds or none.")] = None
    by: Annotated[Optional[By], typer.Option(help="One curve per method or per config.")] = None
    formats: Annotated[Optional[str], typer.Option(help="Comma-separated, from: html, md, latex, csv, png, pdf, svg.")] = None

    def given(self) -> dict:
        values = {"curves": split_list(self.curves), "ema_alpha": self.ema_alpha, "band": _value(self.band),
                  "by": _value(self.by), "formats": split_list(self.formats)}
        return {k: v for k, v in values.items() if v is not None}


@grouped
def report(
    sweep_name: Annotated[Optional[str], typer.Argument(help="Sweep (= MLflow experiment) name.")] = None,
    store: StoreOptions = StoreOptions(),
    parent_run_id: Annotated[Optional[str], typer.Option(help="Select the sweep by its parent run instead of by name.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output directory (default: the run dir's SWEEP_NAME/report for the run dir's store, else reports/SWEEP_NAME).")] = None,
    spec: Annotated[Optional[Path], typer.Option(help="Sweep YAML whose `report:` section configures the report (default: the section recorded with the sweep).")] = None,
    table: TableOptions = TableOptions(),
    figures: FigureOptions = FigureOptions(),
    log: Annotated[bool, typer.Option("--log/--no-log", help="Log the files as artifacts of the parent run.")] = True,
    smoke: Annotated[bool, typer.Option("--smoke", help="The smoke-size sweep (sweep run --smoke): SWEEP_NAME_smoke.")] = False,
    direct: Direct = False,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Write the sweep's read copy anew from the store (every ended trial run), then report from it.")] = False,
) -> None:
    """Write the sweep's report: paper table (md/tex/csv/html) + curves in ONE offline HTML file.

    The settings are those recorded with the sweep (its spec's report: section, as `sweep run`
    used it), then --spec's section, then the options; a note on stderr names what differs.

    Examples:

      sweep report dhpo_vs_baselines

      sweep report dhpo_vs_baselines --base "Qwen3-1.7B-Base" --baselines GRPO,GSPO --delta-avg --std

      sweep report sspo_temperature_grid --metric "eval/{benchmark}/avg_at_k" --select-by AVG --base Base --delta-avg

      sweep report grid --at best --select-by val/avg/acc --ema-alpha 0.02 --out reports/grid --no-log

      sweep report dhpo_vs_baselines --spec configs/sweeps/dhpo_vs_baselines.yaml --tracking-uri http://127.0.0.1:5000
    """
    from tracking_store.uri import mask_uri

    if not sweep_name and not parent_run_id and spec is None:
        raise typer.BadParameter("give SWEEP_NAME (or --parent-run-id, or --spec with a name)")
    if smoke and not sweep_name:
        raise typer.BadParameter("--smoke: give SWEEP_NAME (the report is of SWEEP_NAME_smoke)")
    sweep_name = smoke_name(sweep_name) if smoke else sweep_name
    try:
        with warnings_as_notes():  # a warning of the reading, the statistics or the figures: a note line
            paths = _write(sweep_name, parent_run_id, store, out, spec, table, figures, log,
                           "direct" if direct else "auto", rebuild)
    except (ValueError, TypeError, OSError) as e:
        typer.echo(f"error: {mask_uri(str(e))}", err=True)
        raise typer.Exit(2) from None
    for fmt, p in paths.items():
        typer.echo(f"{fmt:>6}: {p}")
    if table.power is not None and "md" in paths:  # the power analysis' lines of the table's footnotes
        for line in paths["md"].read_text(encoding="utf-8").splitlines():
            if "80% power" in line:
                typer.echo(line.lstrip("- "))


def _spec_section(spec: Path | None, sweep_name: str | None, parent_run_id: str | None) -> tuple[dict | None, str | None]:
    """(--spec's report: section, the sweep's name: SWEEP_NAME, else the file's name: key)."""
    if spec is None:
        return None, sweep_name
    import yaml

    doc = yaml.safe_load(spec.read_text()) or {}
    sweep_name = sweep_name or doc.get("name")
    if not sweep_name and not parent_run_id:
        raise ValueError(f"{spec}: no name: key; give SWEEP_NAME")
    return dict(doc.get("report") or {}), sweep_name


def _write(sweep_name, parent_run_id, store: StoreOptions, out, spec, table: TableOptions, figures: FigureOptions,
           log: bool, read: str, rebuild: bool) -> dict[str, Path]:
    from contract.run_layout import RunLayout
    from dashboards.collect.sweep_runs import collect, find_runs
    from dashboards.collect.recorded_spec import report_settings
    from dashboards.model.report import history_keys
    from dashboards.report.writer import write_report
    from tracking_store.uri import resolve_uri, sqlite_path

    spec_section, sweep_name = _spec_section(spec, sweep_name, parent_run_id)
    uri = resolve_uri(store.tracking_uri, store.run_dir)
    found = find_runs(sweep_name, tracking_uri=uri, parent_run_id=parent_run_id, read="direct" if rebuild else read)
    cfg, notes = report_settings(found, spec_section, table.given(), figures.given(),
                                 f"--spec {spec} and options" if spec is not None else "options")
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    if rebuild:
        _rebuild(found, lambda logged: history_keys(cfg, logged))
        found = find_runs(sweep_name, tracking_uri=uri, parent_run_id=parent_run_id, read=read)
    data = collect(found=found, keys=history_keys(cfg, {k for r in found.runs for k in r.metrics}))
    db = sqlite_path(uri)  # default: where `sweep run` writes it for the run dir's store, else ./reports/
    in_run_dir = db is not None and db == RunLayout(store.run_dir).store.resolve() and sweep_name
    out = out or (RunLayout(store.run_dir.resolve()).sweep(data.sweep).report if in_run_dir
                  else Path.cwd() / "reports" / (sweep_name or parent_run_id))
    if log and data.parent_run_id is None:
        typer.echo(f"note: sweep {data.sweep!r} has no parent run (tag role=parent); report not logged to MLflow",
                   err=True)
    return write_report(data, out, cfg, log_to_run=data.parent_run_id if log else None,
                        tracking_uri=data.tracking_uri, figures_in_background=True)


def _rebuild(found, keys_for) -> None:
    """The sweep's read copy written anew (tracking_store/read_copy.py rebuild_copy), said on stderr."""
    from tracking_store.client import open_existing, sweep_parent
    from tracking_store.read_copy import rebuild_copy

    client = open_existing(found.tracking_uri)  # it writes: MLflow's client
    parent = sweep_parent(client, found.experiment_id)
    if parent is None:
        raise ValueError(f"sweep {found.sweep!r} has no parent run (tag role=parent) to hold a read copy")
    n = rebuild_copy(client, found.tracking_uri, found.experiment_id, parent.info.run_id, keys_for)
    typer.echo(f"read copy of {found.sweep!r} written anew: {n} ended trial runs", err=True)
