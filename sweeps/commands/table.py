"""`sweep table INPUT...`: a paper table from results produced elsewhere.

    sweep table results.csv --format latex --base Base --baselines GRPO,GSPO --delta-avg
    sweep table results.csv -f md --benchmarks aime24,aime25,math500 --std --decimals 2
    sweep table results.parquet -f csv --scale 1 --out table.csv
    sweep table samples.csv --baselines GRPO -f csv          # per-sample: the paired test, as sweep report
    sweep table runs.yaml --baselines GRPO                   # lm-eval --log_samples folders, by a mapping
    sweep table GRPO@0=out/g0 GRPO@1=out/g1 DHPO@0=out/d0 DHPO@1=out/d1 --baselines GRPO
    sweep table out/ --baselines GRPO                        # out/METHOD@SEED/ folders of lm-eval output

INPUT: a per-seed file (columns model, method, benchmark, value; optional seed, config), a per-sample file
(columns model, method, seed, benchmark, problem, correct: told apart by `problem` and `correct`), an
lm-eval mapping (.yaml), a folder of METHOD@SEED run folders, or METHOD[@SEED]=DIR items. Per-sample and
lm-eval input are read by dashboards/collect/sample_results.py; dashboards/tables/build.py builds the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, ClassVar, Optional

import typer

from sweeps.commands.options import cells_text, grouped, split_list, warnings_as_notes


class TableFormat(str, Enum):
    latex = "latex"
    md = "md"
    html = "html"
    csv = "csv"


FORMAT_METHODS = {TableFormat.latex: "to_latex", TableFormat.md: "to_markdown", TableFormat.html: "to_html",
                  TableFormat.csv: "to_csv"}


@dataclass
class FileTableOptions:
    """dashboards.tables.build.TableConfig's settings, as options."""

    panel: ClassVar[str] = "Table"
    base: Annotated[Optional[str], typer.Option(help="Method name of the base-model rows in the file.")] = None
    baselines: Annotated[Optional[str], typer.Option(help="Comma-separated baseline methods (strongest in italics).")] = None
    benchmarks: Annotated[Optional[str], typer.Option(help="Comma-separated benchmark columns, in order.")] = None
    methods: Annotated[Optional[str], typer.Option(help="Comma-separated row order/filter.")] = None
    delta_avg: Annotated[bool, typer.Option("--delta-avg", help="Add Delta Avg over --base.")] = False
    avg: Annotated[bool, typer.Option("--avg/--no-avg", help="Show the AVG column.")] = True
    std: Annotated[bool, typer.Option("--std", help="Show mean ± std over seeds.")] = False
    seeds: Annotated[bool, typer.Option("--seeds", help="Add a seed-count column n.")] = False
    significance: Annotated[str, typer.Option(help="Mark (†) cells differing from the strongest baseline: auto (per-sample input: the paired test with Holm's correction, as sweep report; per-seed numbers: Welch's t-test over >= 3 seeds), paired, welch (>= 2 seeds), off.")] = "auto"
    cells: Annotated[Optional[str], typer.Option(help="What a cell shows: 'mean', 'mean ± ci' (95% interval: problems and seeds for per-sample input, else a t-interval over seeds) or 'mean ± std'. Default: 'mean ± ci' for per-sample input, else 'mean'.")] = None
    seed_spread: Annotated[str, typer.Option(help="Per-sample input: the seed spread the paired test judges each method with: own (default), moderated or pooled (docs/statistics.md).")] = "own"
    power: Annotated[Optional[float], typer.Option(help="Per-sample input: a difference in shown units (e.g. 2.0 points); the footnote adds the seeds per method the paired test needs to find it.")] = None
    decimals: Annotated[int, typer.Option(help="Decimals shown (ranking uses them).")] = 1
    scale: Annotated[Optional[float], typer.Option(help="Multiply values; default: 100 when every value is in [0, 1] (fractions), else 1 (already percent).")] = None
    lower_is_better: Annotated[Optional[str], typer.Option(help="Comma-separated columns where lower wins.")] = None
    select_by: Annotated[str, typer.Option(help="Best config per method by: AVG or a benchmark name.")] = "AVG"

    def table_config(self, file_benchmarks: list[str], scale: float, cells: str = "mean"):
        from dashboards.tables.build import TableConfig

        return TableConfig(base=self.base, baselines=split_list(self.baselines) or [],
                           benchmarks=split_list(self.benchmarks) or file_benchmarks, methods=split_list(self.methods),
                           delta_avg=self.delta_avg, avg=self.avg, std=self.std, seeds=self.seeds,
                           cells=cells_text(self.cells) or cells, significance=self.significance, decimals=self.decimals,
                           scale=scale, lower_is_better=split_list(self.lower_is_better) or [], select_by=self.select_by,
                           power=self.power, seed_spread=self.seed_spread)


@dataclass
class SampleOptions:
    """How lm-evaluation-harness sample logs are read (dashboards/collect/sample_results.py)."""

    panel: ClassVar[str] = "lm-eval input"
    metric: Annotated[Optional[str], typer.Option(help="The per-document metric of the samples files (default: the mapping's, else exact_match; acc for multiple choice).")] = None
    filter: Annotated[Optional[str], typer.Option("--filter", help="The lm-eval filter to read when a task logged several (e.g. strict-match).")] = None
    model: Annotated[Optional[str], typer.Option(help="The model block the runs are shown under (default: the mapping's, else none).")] = None


def detected_scale(values) -> float:
    """100 when every finite value lies in [0, 1] (fractions), else 1 (already percentages or other units)."""
    finite = values[values.notna()]
    return 100.0 if len(finite) and bool(((finite >= 0) & (finite <= 1)).all()) else 1.0


def _note(message: str) -> None:
    typer.echo(f"note: {message}", err=True)


def load_input(inputs: list[str], lm: SampleOptions):
    """(results, problems or None, what was read) of the command's INPUT items (the module docstring)."""
    from dashboards.collect.sweep_runs import load_results
    from dashboards.collect.sample_results import is_sample_file, load_lm_eval, load_samples, parse_run, read_mapping, runs_in

    items = [i for i in inputs if "=" in i and not Path(i).exists()]
    first = Path(inputs[0])
    lm_eval = bool(items) or first.is_dir() or first.suffix.lower() in (".yaml", ".yml")
    if not lm_eval and any(v is not None for v in vars(lm).values()):
        given = ", ".join(f"--{k}" for k, v in vars(lm).items() if v is not None)
        raise ValueError(f"{given}: for lm-eval input only (a .yaml mapping, a folder of runs or METHOD@SEED=DIR items)")
    if items and len(items) != len(inputs):
        raise ValueError(f"{', '.join(i for i in inputs if i not in items)}: give either one file (or folder) or "
                         "METHOD[@SEED]=DIR items, one per lm-eval run")
    if not items and len(inputs) > 1:
        raise ValueError(f"{len(inputs)} inputs: give one results file, mapping or folder, or METHOD[@SEED]=DIR items")
    if lm_eval:
        runs, given = ([parse_run(i) for i in items], {}) if items else \
            (runs_in(first), {}) if first.is_dir() else read_mapping(first)
        data = load_lm_eval(runs, given, metric=lm.metric, filter_=lm.filter, model=lm.model)
    elif is_sample_file(first):
        data = load_samples(first)
    else:
        df = load_results(first)
        if df.empty:
            raise ValueError(f"{first}: no rows below the header")
        if df["value"].isna().all():
            raise ValueError(f"{first}: no values: the column 'value' is empty in every row")
        return df, None, None
    return data.results, data.problems, data


def table_text(inputs: list[str], lm: SampleOptions, options: FileTableOptions, format: TableFormat) -> str:
    """The table of the command's INPUT items in `format`; notes on stderr; ValueError on bad input."""
    import pandas as pd

    from dashboards.tables.build import build_table

    df, problems, data = load_input(inputs, lm)
    scale = options.scale
    if scale is None and data is None:
        scale = detected_scale(df["value"])
        what = "every value is in [0, 1]: shown x100" if scale == 100 else "values outside [0, 1]: shown as given"
        typer.echo(f"note: {what} (--scale sets it)", err=True)
    elif data is not None:
        for n in data.notes:
            _note(n)
        if not options.baselines and options.significance != "off":
            _note("no --baselines: no cell is tested (name the baseline methods, e.g. --baselines GRPO)")
    cfg = options.table_config([str(b) for b in pd.unique(df["benchmark"])], 100.0 if scale is None else scale,
                               "mean" if data is None else "mean ± ci")
    built = build_table(df, cfg, problems=problems)  # its warnings: notes (warnings_as_notes, in the command)
    if not any(c.mean is not None and math.isfinite(c.mean) for r in built.rows for c in r.cells.values()):
        raise ValueError(f"nothing to show: no values for benchmark(s) {', '.join(cfg.benchmarks)}; the input's: "
                         f"{', '.join(map(str, pd.unique(df['benchmark'])))}")
    for n in built.notes:
        _note(n)
    return getattr(built, FORMAT_METHODS[format])()


@grouped
def table(
    inputs: Annotated[list[str], typer.Argument(metavar="INPUT", show_default=False, help="A results file (per-seed: model, method, benchmark, value; or per-sample: model, method, seed, benchmark, problem, correct), an lm-eval mapping (.yaml), a folder of METHOD@SEED lm-eval runs, or METHOD@SEED=DIR items, one per lm-eval run (@SEED optional).")],
    format: Annotated[TableFormat, typer.Option("--format", "-f", help="Output format.")] = TableFormat.md,
    options: FileTableOptions = FileTableOptions(),
    lm: SampleOptions = SampleOptions(),
    out: Annotated[Optional[Path], typer.Option(help="Write here instead of stdout.")] = None,
) -> None:
    """Paper table from results produced elsewhere (AVG computed; mean over seeds).

    Examples:

      sweep table results.csv --format latex --base Base --baselines GRPO,GSPO --delta-avg

      sweep table results.csv -f md --benchmarks aime24,aime25,math500 --std --decimals 2

      sweep table results.parquet -f csv --scale 1 --out table.csv

      sweep table samples.parquet --baselines GRPO -f csv

      sweep table runs.yaml --baselines GRPO --metric exact_match --filter strict-match

      sweep table GRPO@0=out/grpo_s0 GRPO@1=out/grpo_s1 DHPO@0=out/dhpo_s0 DHPO@1=out/dhpo_s1 --baselines GRPO

    Per-seed numbers: benchmark columns keep the file's order unless --benchmarks gives one; without
    --scale the values are read as fractions (x100) when all of them lie in [0, 1], else as already
    scaled (x1); a note on stderr says which; --significance auto is Welch's test over >= 3 seeds.

    Per-sample input (a file with `problem` and `correct` columns, or lm-eval --log_samples output: a
    task is a benchmark, a doc_id a problem): a problem's value is its share of correct samples, shown
    x100; the cells are 'mean ± ci' and --significance auto is the paired test with Holm's correction,
    intervals and power, as in sweep report (differences and p-values in --format csv).
    """
    try:
        with warnings_as_notes():  # a warning of the reading or the statistics: a note line, never Python's print
            text = table_text(inputs, lm, options, format)
    except (ValueError, FileNotFoundError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if out:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}")
    else:
        typer.echo(text, nl=False)
