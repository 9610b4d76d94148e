"""Command-line entry points: `sweep report` and `sweep table` (plus a smoke run).

The functions are plain typer commands; the sweep CLI registers them:
    app.command("report")(report_cmd); app.command("table")(table_cmd)
They also run standalone:
    python -m dashboards.cli report my_sweep --tracking-uri sqlite:////abs/mlflow.db --out reports/my_sweep
    python -m dashboards.cli table results.csv --format latex --base Base --delta-avg
    python -m dashboards --smoke      # synthetic store in ./.dashboards-smoke-*/, full report, seconds
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from contract.run_layout import RunLayout
from dashboards.cli_options import RunDir, TrackingUri
from tracking_store.client import open_existing
from tracking_store.tables import local_artifact_dir
from tracking_store.uri import mask_uri, resolve_uri, sqlite_path


class TableFormat(str, Enum):
    latex = "latex"
    md = "md"
    html = "html"
    csv = "csv"


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


_FORMAT_METHODS = {TableFormat.latex: "to_latex", TableFormat.md: "to_markdown", TableFormat.html: "to_html",
                   TableFormat.csv: "to_csv"}


def _value(choice: Enum | None) -> str | None:
    return None if choice is None else choice.value


def _split(s: Optional[str]) -> Optional[list[str]]:
    return None if s is None else [x.strip() for x in s.split(",") if x.strip()]


def report_cmd(
    sweep_name: Annotated[Optional[str], typer.Argument(help="Sweep (= MLflow experiment) name.")] = None,
    tracking_uri: TrackingUri = None,
    run_dir: RunDir = Path("runs"),
    parent_run_id: Annotated[Optional[str], typer.Option(help="Select the sweep by its parent run instead of by name.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output directory (default: the run dir's SWEEP_NAME/report for the run dir's store, else reports/SWEEP_NAME).")] = None,
    spec: Annotated[Optional[Path], typer.Option(help="Sweep YAML whose `report:` section configures the report (default: the section recorded with the sweep).")] = None,
    metric: Annotated[Optional[str], typer.Option(help="Table metric with {benchmark}: val/{benchmark}/acc (default) or a checkpoint evaluation's eval/{benchmark}/KIND, KIND = avg_at_k, pass_at_k or maj_at_k.")] = None,
    select_by: Annotated[Optional[str], typer.Option(help="Metric picking best step/config, e.g. val/avg/acc or AVG.")] = None,
    at: Annotated[Optional[At], typer.Option(help="final, or best (the step with the best --select-by).")] = None,
    mode: Annotated[Optional[Mode], typer.Option(help="Direction of --select-by.")] = None,
    base: Annotated[Optional[str], typer.Option(help="Add a base-model row (step-0 values) with this label.")] = None,
    baselines: Annotated[Optional[str], typer.Option(help="Comma-separated baseline methods (strongest in italics).")] = None,
    benchmarks: Annotated[Optional[str], typer.Option(help="Comma-separated benchmark columns, in order.")] = None,
    delta_avg: Annotated[Optional[bool], typer.Option("--delta-avg", help="Add Delta Avg over the base row (needs --base).")] = None,
    std: Annotated[Optional[bool], typer.Option("--std", help="Show mean ± std over seeds.")] = None,
    significance: Annotated[Optional[str], typer.Option(help="Mark (†) cells differing from the strongest baseline: auto (default: paired where per-problem verdicts exist, else Welch over >= 3 seeds), paired (per-problem bootstrap, Holm), welch (>= 2 seeds, no correction), off.")] = None,
    cells: Annotated[Optional[str], typer.Option(help="What a cell shows: 'mean', 'mean ± ci' (95% interval half-width) or 'mean ± std'.")] = None,
    select_on: Annotated[Optional[str], typer.Option("--select-on", help="Where a grid picks each method's configuration: select (the selection split, data.select_size), reported (the reported benchmarks themselves, the papers' way) or auto (default: select where logged).")] = None,
    power: Annotated[Optional[float], typer.Option(help="A difference in shown units (e.g. 2.0 points): the footnote and stdout say how many seeds per method find it with 80% power.")] = None,
    decimals: Annotated[Optional[int], typer.Option(help="Decimals shown (ranking uses them).")] = None,
    scale: Annotated[Optional[float], typer.Option(help="Multiply values (default 100: percentages).")] = None,
    curves: Annotated[Optional[str], typer.Option(help="Comma-separated metric keys for the curves grid.")] = None,
    ema_alpha: Annotated[Optional[float], typer.Option(help="EMA weight of the newest point, (0,1]; 1 = none, SSPO used 0.02.")] = None,
    band: Annotated[Optional[Band], typer.Option(metavar="BAND", help="Spread over seeds drawn around each curve: minmax, std, seeds or none.")] = None,
    by: Annotated[Optional[By], typer.Option(help="One curve per method or per config.")] = None,
    formats: Annotated[Optional[str], typer.Option(help="Comma-separated, from: html, md, latex, csv, png, pdf, svg.")] = None,
    log: Annotated[bool, typer.Option("--log/--no-log", help="Log the files as artifacts of the parent run.")] = True,
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
    if not sweep_name and not parent_run_id and spec is None:
        raise typer.BadParameter("give SWEEP_NAME (or --parent-run-id, or --spec with a name)")
    overrides = {k: v for k, v in {
        "metric": metric, "select_by": select_by, "at": _value(at), "mode": _value(mode), "base": base,
        "baselines": _split(baselines), "benchmarks": _split(benchmarks), "delta_avg": delta_avg, "std": std,
        "significance": significance, "cells": _cells(cells), "power": power, "decimals": decimals, "select_on": select_on,
        "scale": scale}.items() if v is not None}
    top = {k: v for k, v in {"curves": _split(curves), "ema_alpha": ema_alpha, "band": _value(band),
                             "by": _value(by), "formats": _split(formats)}.items() if v is not None}
    try:
        spec_section = None
        if spec is not None:
            import yaml
            doc = yaml.safe_load(spec.read_text()) or {}
            spec_section = dict(doc.get("report") or {})
            sweep_name = sweep_name or doc.get("name")
            if not sweep_name and not parent_run_id:
                raise ValueError(f"{spec}: no name: key; give SWEEP_NAME")
        from dashboards.collect import collect, find_runs
        from dashboards.report import history_keys, write_report

        uri = resolve_uri(tracking_uri, run_dir)
        found = find_runs(sweep_name, tracking_uri=uri, parent_run_id=parent_run_id)
        cfg = _report_config(found, spec_section, overrides, top, spec)
        data = collect(found=found, keys=history_keys(cfg, {k for r in found.runs for k in r.metrics}))
        db = sqlite_path(uri)  # default: where `sweep run` writes it for the run dir's store, else ./reports/
        in_run_dir = db is not None and db == RunLayout(run_dir).store.resolve() and sweep_name
        out = out or (RunLayout(run_dir.resolve()).sweep(data.sweep).report if in_run_dir
                      else Path.cwd() / "reports" / (sweep_name or parent_run_id))
        if log and data.parent_run_id is None:
            typer.echo(f"note: sweep {data.sweep!r} has no parent run (tag role=parent); report not logged to MLflow",
                       err=True)
        paths = write_report(data, out, cfg, log_to_run=data.parent_run_id if log else None,
                             tracking_uri=data.tracking_uri, figures_in_background=True)
    except (ValueError, TypeError, OSError) as e:
        typer.echo(f"error: {mask_uri(str(e))}", err=True)
        raise typer.Exit(2) from None
    for fmt, p in paths.items():
        typer.echo(f"{fmt:>6}: {p}")
    if power is not None and "md" in paths:  # the power analysis' lines of the table's footnotes
        for line in paths["md"].read_text(encoding="utf-8").splitlines():
            if "80% power" in line:
                typer.echo(line.lstrip("- "))


def _cells(text: Optional[str]) -> Optional[str]:
    """--cells as typed: 'mean +- ci' (ASCII) is 'mean ± ci'."""
    return None if text is None else " ".join(text.replace("+-", "±").replace("±", " ± ").split())


def _report_config(found, spec_section: dict | None, overrides: dict, top: dict, spec: Path | None):
    """The report's settings: the `report:` section recorded with the sweep (``found``: its SweepRuns), or
    the --spec file's (benchmark and method order still from the recorded one when the file leaves them
    out), then the options; a note on stderr when they differ from the recorded settings."""
    from dashboards.recorded_spec import changed_settings, recorded_report_section, recorded_spec
    from dashboards.report import ReportConfig

    recorded, complete, parent = None, False, found.parent
    if parent is not None:
        local = local_artifact_dir(parent.artifact_uri)  # read in place, else through MLflow
        client = None if local is not None else (found.client or open_existing(found.tracking_uri))
        recorded, complete = recorded_report_section(recorded_spec(client, parent.run_id, parent.artifact_uri))
    if recorded is not None and not complete and spec_section is None:
        typer.echo(f"note: sweep {found.sweep!r} was recorded with its spec's report: section only (not the "
                   "benchmark and method order `sweep run` added): those come from the recorded trials", err=True)
    if spec_section is not None:
        section = spec_section
        table = section.setdefault("table", {})
        for key in ("benchmarks", "methods"):  # the order a spec's trials give them (sweeps/spec_sections.py)
            if key not in table and key in ((recorded or {}).get("table") or {}):
                table[key] = recorded["table"][key]
    elif recorded is not None:
        section = recorded
    else:
        section = {}
        typer.echo(f"note: no spec is recorded with sweep {found.sweep!r}: default report settings "
                   "(pass --spec FILE for a spec's report: section)", err=True)
    section = {**section, **top, "table": {**(section.get("table") or {}), **overrides}}
    cfg = ReportConfig.from_dict(section)
    if recorded is not None:
        changed = changed_settings(cfg, ReportConfig.from_dict(recorded))
        if changed:
            source = f"--spec {spec} and options" if spec is not None else "options"
            typer.echo(f"note: this report differs from the one recorded with sweep {found.sweep!r} ({source}): "
                       + "; ".join(changed), err=True)
    return cfg


def detected_scale(values) -> float:
    """100 when every finite value lies in [0, 1] (fractions), else 1 (already percentages or other units)."""
    finite = values[values.notna()]
    return 100.0 if len(finite) and bool(((finite >= 0) & (finite <= 1)).all()) else 1.0


def table_cmd(
    results: Annotated[Path, typer.Argument(help="Long-format CSV/parquet: model, method, benchmark, value (optional: seed, config).")],
    format: Annotated[TableFormat, typer.Option("--format", "-f", help="Output format.")] = TableFormat.md,
    base: Annotated[Optional[str], typer.Option(help="Method name of the base-model rows in the file.")] = None,
    baselines: Annotated[Optional[str], typer.Option(help="Comma-separated baseline methods (strongest in italics).")] = None,
    benchmarks: Annotated[Optional[str], typer.Option(help="Comma-separated benchmark columns, in order.")] = None,
    methods: Annotated[Optional[str], typer.Option(help="Comma-separated row order/filter.")] = None,
    delta_avg: Annotated[bool, typer.Option("--delta-avg", help="Add Delta Avg over --base.")] = False,
    avg: Annotated[bool, typer.Option("--avg/--no-avg", help="Show the AVG column.")] = True,
    std: Annotated[bool, typer.Option("--std", help="Show mean ± std over seeds.")] = False,
    seeds: Annotated[bool, typer.Option("--seeds", help="Add a seed-count column n.")] = False,
    significance: Annotated[str, typer.Option(help="Mark (†) cells differing from the strongest baseline (a results file has no per-problem verdicts: Welch's t-test over seeds): auto (>= 3 seeds), welch (>= 2), off.")] = "auto",
    cells: Annotated[str, typer.Option(help="What a cell shows: 'mean', 'mean ± ci' (t-interval over seeds) or 'mean ± std'.")] = "mean",
    decimals: Annotated[int, typer.Option(help="Decimals shown (ranking uses them).")] = 1,
    scale: Annotated[Optional[float], typer.Option(help="Multiply values; default: 100 when every value is in [0, 1] (fractions), else 1 (already percent).")] = None,
    lower_is_better: Annotated[Optional[str], typer.Option(help="Comma-separated columns where lower wins.")] = None,
    select_by: Annotated[str, typer.Option(help="Best config per method by: AVG or a benchmark name.")] = "AVG",
    out: Annotated[Optional[Path], typer.Option(help="Write here instead of stdout.")] = None,
) -> None:
    """Paper table from numbers produced elsewhere (AVG computed; mean over seeds).

    Examples:

      sweep table results.csv --format latex --base Base --baselines GRPO,GSPO --delta-avg

      sweep table results.csv -f md --benchmarks aime24,aime25,math500 --std --decimals 2

      sweep table results.parquet -f csv --scale 1 --out table.csv

    Benchmark columns keep the file's order unless --benchmarks gives one. Without --scale the values
    are read as fractions (x100) when all of them lie in [0, 1], else as already scaled (x1); a note on
    stderr says which.
    """
    import pandas as pd

    from dashboards.collect import load_results
    from dashboards.tables import TableConfig, build_table

    try:
        df = load_results(results)
        if scale is None:
            scale = detected_scale(df["value"])
            what = "every value is in [0, 1]: shown x100" if scale == 100 else "values outside [0, 1]: shown as given"
            typer.echo(f"note: {what} (--scale sets it)", err=True)
        cfg = TableConfig(base=base, baselines=_split(baselines) or [],
                          benchmarks=_split(benchmarks) or [str(b) for b in pd.unique(df["benchmark"])],
                          methods=_split(methods), delta_avg=delta_avg, avg=avg, std=std, seeds=seeds, cells=_cells(cells),
                          significance=significance, decimals=decimals, scale=scale, lower_is_better=_split(lower_is_better) or [],
                          select_by=select_by)
        text = getattr(build_table(df, cfg), _FORMAT_METHODS[format])()
    except (ValueError, FileNotFoundError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if out:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}")
    else:
        typer.echo(text, nl=False)


def smoke(keep: bool = False) -> Path:
    """Synthetic store in a throwaway run directory ./.dashboards-smoke-*/ -> collect -> report (logged to the
    parent run; written to <that dir>/smoke/report/)."""
    from dashboards.report import ReportConfig, report_from_mlflow
    from dashboards.synthetic import fill_store

    t0 = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix=".dashboards-smoke-", dir=Path.cwd()))
    run = RunLayout(root)
    uri = f"sqlite:///{run.store}"
    try:
        fill_store(uri, "smoke", artifact_root=str(run.artifacts), seeds=(0, 1), steps=20,
                   eval_every=5, configs_per_method=1)
        cfg = ReportConfig.from_dict({"table": {"base": "Base", "delta_avg": True, "std": True,
                                                "baselines": ["GRPO", "GSPO", "GMPO", "CISPO", "SAPO"]},
                                      "ema_alpha": 0.3})
        paths = report_from_mlflow("smoke", tracking_uri=uri, out_dir=run.sweep("smoke").report, config=cfg)
        typer.echo(paths["md"].read_text())
        size = paths["html"].stat().st_size / 1e6
        typer.echo(f"smoke ok in {time.perf_counter() - t0:.1f}s: {paths['html']} ({size:.1f} MB)"
                   + ("" if keep else " [removed; pass --keep to keep it]"))
        return paths["html"]
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def make_app() -> typer.Typer:
    app = typer.Typer(help="Sweep reports: paper tables and curve dashboards from MLflow.",
                      no_args_is_help=True, add_completion=False)
    app.command("report")(report_cmd)
    app.command("table")(table_cmd)
    return app


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--smoke" in argv:
        smoke(keep="--keep" in argv)
        return
    make_app()(args=argv, prog_name="python -m dashboards")


if __name__ == "__main__":
    main()
