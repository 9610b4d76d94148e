"""`sweep fit CURVES`: compute-performance curves fitted to curves recorded anywhere (verl, TRL, a tracker's export).

    sweep fit curves.csv                                    # the table (Markdown) on stdout
    sweep fit curves.parquet -f latex --baselines GRPO --x compute --scale 100
    sweep fit curves.csv -f csv --out fits.csv --figure fits.png
    sweep fit --smoke                                       # simulated curves, end to end in seconds

CURVES: a long-format CSV or Parquet file, one row per evaluation: method, seed, step and/or compute, value
(optional: model, benchmark), read and checked by dashboards/collect/curve_files.py; fitted, compared and
extrapolated by dashboards/stats/compute_curves.py as `sweep report` does for a sweep (docs/compute-curves.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, ClassVar, Optional

import typer

from sweeps.commands.options import fail, grouped, split_list, warnings_as_notes


class FitFormat(str, Enum):
    md = "md"
    latex = "latex"
    csv = "csv"


def _simulated(path: Path) -> None:
    """The --smoke input: three methods' simulated curves (the default study's noise) written as a curves file."""
    import numpy as np

    from dashboards.stats.curve_simulation import DEFAULT_CURVE, simulate

    A, B, C_mid = DEFAULT_CURVE
    frame = simulate({"GRPO": DEFAULT_CURVE, "GSPO": (A + 0.03, B, C_mid), "DHPO": (A + 0.05, 1.5 * B, C_mid)},
                     rng=np.random.default_rng(0), model="simulated")
    frame.rename(columns={"x": "step"}).to_csv(path, index=False)


@dataclass
class FitOptions:
    """What is fitted and compared (report.compute_curves' settings, docs/compute-curves.md)."""

    panel: ClassVar[str] = "Fit"
    x: Annotated[str, typer.Option("--x", help="The compute axis: compute, step, or auto (compute when the file has it).")] = "auto"
    benchmark: Annotated[Optional[str], typer.Option(help="Fit one benchmark's rows (default: a point's mean over the benchmarks).")] = None
    baselines: Annotated[Optional[str], typer.Option(help="Comma-separated baseline methods; the one with the highest A is compared with every other method (default: every method is a candidate).")] = None
    fit_from: Annotated[float, typer.Option(help="Leave out points below this share of the largest compute.")] = 0.1
    extrapolate: Annotated[float, typer.Option(help="The extrapolation check fits on this share of the compute and predicts the last point.")] = 0.5
    r0: Annotated[str, typer.Option("--r0", help="R0: base (fixed at the curve's value at compute 0) or fit.")] = "base"

    def config(self):
        """The settings as dashboards' CurvesConfig; a bad value is a usage error naming its option."""
        from dashboards.stats.compute_curves import CurvesConfig

        if self.r0 not in ("base", "fit"):
            raise fail(f"error: --r0: expected base or fit, got {self.r0!r}")
        if not 0 <= self.fit_from < 1:
            raise fail(f"error: --fit-from: expected a share of the compute in [0, 1), got {self.fit_from:g}")
        if not 0 < self.extrapolate < 1:
            raise fail(f"error: --extrapolate: expected a share of the compute in [0, 1) above 0, got {self.extrapolate:g}")
        # seed_fits=0: this command writes no seed's own fit (the report's curves_seeds.csv), so none is fitted
        return CurvesConfig(fit_from=self.fit_from, extrapolate=self.extrapolate, r0=self.r0, seed_fits=0)


@grouped
def fit_cmd(
    curves: Annotated[Optional[Path], typer.Argument(metavar="CURVES", show_default=False, help="A long-format CSV or Parquet file: method, seed, step and/or compute, value (optional: model, benchmark).")] = None,
    fit: FitOptions = FitOptions(),
    format: Annotated[FitFormat, typer.Option("--format", "-f", help="Output format.")] = FitFormat.md,
    out: Annotated[Optional[Path], typer.Option(help="Write here instead of stdout.")] = None,
    scale: Annotated[Optional[float], typer.Option(help="The values' scale: 100 when they are percentages; default: they are pass rates in [0, 1].")] = None,
    decimals: Annotated[int, typer.Option(help="Decimals of pass rates (shown x100).")] = 1,
    figure: Annotated[Optional[Path], typer.Option(help="Also draw the figure here (.png or .pdf).")] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="Fit simulated curves (three methods, three seeds): seconds, end to end.")] = False,
) -> None:
    """Fit ScaleRL's compute curve R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) to curves from anywhere.

    Examples:

      sweep fit curves.csv --baselines GRPO

      sweep fit curves.parquet -f latex --x compute --scale 100

      sweep fit curves.csv -f csv --out fits.csv --figure fits.png

    Per model and method: the ceiling A, the efficiency B and the compute at half the gain C_mid with 95%
    intervals (seeds as clusters), or "not identified" / "not converged" in their place; A's difference
    and B's ratio to the strongest baseline (Holm-adjusted); the fit on the first half of the compute
    predicting the last point. The CSV has one row per model and method (A, A_low, A_high, B, ..., fit).
    """
    settings = fit.config()
    if figure is not None and figure.suffix.lower() not in (".png", ".pdf"):
        raise fail(f"error: --figure {figure}: expected a .png or .pdf path")
    if curves is None and not smoke:
        raise fail("error: CURVES: expected a curves file (or --smoke)")
    from dashboards.tables.compute import curves_csv, curves_latex, curves_markdown

    data, study = _fitted(curves, fit, settings, scale=scale, smoke=smoke)
    if format is FitFormat.csv:
        text = curves_csv(study)
    elif format is FitFormat.latex:
        text = curves_latex(study, decimals=decimals, x_label=data.x_label)
    else:
        text = curves_markdown(study, decimals=decimals, x_label=data.x_label)
    if out:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}")
    else:
        typer.echo(text, nl=False)
    if figure is not None:
        _draw(data, study, figure)
        typer.echo(f"wrote {figure}")


def _fitted(curves: Optional[Path], fit: FitOptions, settings, *, scale: Optional[float], smoke: bool):
    """(the curves read, their fitted study); the file's problems as usage errors, its notes on stderr."""
    import tempfile

    from dashboards.stats.compute_curves import fit_study
    from dashboards.collect.curve_files import read_curves

    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        if smoke:
            curves = Path(tmp) / "simulated_curves.csv"
            _simulated(curves)
        try:
            with warnings_as_notes():
                data = read_curves(curves, x=fit.x, scale=scale, benchmark=fit.benchmark)
                for note in data.notes:
                    typer.echo(f"note: {note}", err=True)
                known = sorted(set(data.frame["method"]))
                unknown = [b for b in split_list(fit.baselines) or [] if b not in known]
                if unknown:
                    raise ValueError(f"--baselines {','.join(unknown)}: not a method of {curves.name}; its methods: "
                                     f"{', '.join(known)}")
                return data, fit_study(data.frame, settings, baselines=split_list(fit.baselines))
        except (ValueError, FileNotFoundError) as err:
            raise fail(f"error: {err}") from None


def _draw(data, study, path: Path) -> None:
    from dashboards.figures.compute import compute_figure
    from dashboards.figures.static import METADATA

    models = list(dict.fromkeys(m.model for m in study.methods))
    for model in models:
        target = path if len(models) == 1 else path.with_name(f"{path.stem}_{model}{path.suffix}")
        fig = compute_figure(data.frame, study, model=model, x_label=data.x_label)
        fmt = target.suffix.lower()[1:]
        fig.savefig(target, format=fmt, dpi=200, metadata=METADATA[fmt])
