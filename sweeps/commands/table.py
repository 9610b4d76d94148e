"""`sweep table RESULTS`: a paper table from numbers produced elsewhere (a long CSV or parquet file).

    sweep table results.csv --format latex --base Base --baselines GRPO,GSPO --delta-avg
    sweep table results.csv -f md --benchmarks aime24,aime25,math500 --std --decimals 2
    sweep table results.parquet -f csv --scale 1 --out table.csv

The file's columns: model, method, benchmark, value (optional: seed, config); dashboards/tables.py builds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, ClassVar, Optional

import typer

from sweeps.commands.options import cells_text, grouped, split_list


class TableFormat(str, Enum):
    latex = "latex"
    md = "md"
    html = "html"
    csv = "csv"


FORMAT_METHODS = {TableFormat.latex: "to_latex", TableFormat.md: "to_markdown", TableFormat.html: "to_html",
                  TableFormat.csv: "to_csv"}


@dataclass
class FileTableOptions:
    """dashboards.tables.TableConfig's settings, as options."""

    panel: ClassVar[str] = "Table"
    base: Annotated[Optional[str], typer.Option(help="Method name of the base-model rows in the file.")] = None
    baselines: Annotated[Optional[str], typer.Option(help="Comma-separated baseline methods (strongest in italics).")] = None
    benchmarks: Annotated[Optional[str], typer.Option(help="Comma-separated benchmark columns, in order.")] = None
    methods: Annotated[Optional[str], typer.Option(help="Comma-separated row order/filter.")] = None
    delta_avg: Annotated[bool, typer.Option("--delta-avg", help="Add Delta Avg over --base.")] = False
    avg: Annotated[bool, typer.Option("--avg/--no-avg", help="Show the AVG column.")] = True
    std: Annotated[bool, typer.Option("--std", help="Show mean ± std over seeds.")] = False
    seeds: Annotated[bool, typer.Option("--seeds", help="Add a seed-count column n.")] = False
    significance: Annotated[str, typer.Option(help="Mark (†) cells differing from the strongest baseline (a results file has no per-problem verdicts: Welch's t-test over seeds): auto (>= 3 seeds), welch (>= 2), off.")] = "auto"
    cells: Annotated[str, typer.Option(help="What a cell shows: 'mean', 'mean ± ci' (t-interval over seeds) or 'mean ± std'.")] = "mean"
    decimals: Annotated[int, typer.Option(help="Decimals shown (ranking uses them).")] = 1
    scale: Annotated[Optional[float], typer.Option(help="Multiply values; default: 100 when every value is in [0, 1] (fractions), else 1 (already percent).")] = None
    lower_is_better: Annotated[Optional[str], typer.Option(help="Comma-separated columns where lower wins.")] = None
    select_by: Annotated[str, typer.Option(help="Best config per method by: AVG or a benchmark name.")] = "AVG"

    def table_config(self, file_benchmarks: list[str], scale: float):
        from dashboards.tables import TableConfig

        return TableConfig(base=self.base, baselines=split_list(self.baselines) or [],
                           benchmarks=split_list(self.benchmarks) or file_benchmarks, methods=split_list(self.methods),
                           delta_avg=self.delta_avg, avg=self.avg, std=self.std, seeds=self.seeds,
                           cells=cells_text(self.cells), significance=self.significance, decimals=self.decimals,
                           scale=scale, lower_is_better=split_list(self.lower_is_better) or [], select_by=self.select_by)


def detected_scale(values) -> float:
    """100 when every finite value lies in [0, 1] (fractions), else 1 (already percentages or other units)."""
    finite = values[values.notna()]
    return 100.0 if len(finite) and bool(((finite >= 0) & (finite <= 1)).all()) else 1.0


@grouped
def table(
    results: Annotated[Path, typer.Argument(help="Long-format CSV/parquet: model, method, benchmark, value (optional: seed, config).")],
    format: Annotated[TableFormat, typer.Option("--format", "-f", help="Output format.")] = TableFormat.md,
    options: FileTableOptions = FileTableOptions(),
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
    from dashboards.tables import build_table

    try:
        df = load_results(results)
        scale = options.scale
        if scale is None:
            scale = detected_scale(df["value"])
            what = "every value is in [0, 1]: shown x100" if scale == 100 else "values outside [0, 1]: shown as given"
            typer.echo(f"note: {what} (--scale sets it)", err=True)
        cfg = options.table_config([str(b) for b in pd.unique(df["benchmark"])], scale)
        text = getattr(build_table(df, cfg), FORMAT_METHODS[format])()
    except (ValueError, FileNotFoundError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if out:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}")
    else:
        typer.echo(text, nl=False)
