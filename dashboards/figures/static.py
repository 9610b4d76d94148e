"""Static paper figures (PNG, PDF, SVG) of the report's curves, drawn with matplotlib.

    from dashboards.figures.training_curves import figure_spec
    from dashboards.figures.static import static_figure, write_static_figures
    spec = figure_spec(history, [ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG], name="dynamics", acc_scale=100)
    paths = write_static_figures([spec], "reports/my_sweep", ["png", "pdf"])
    # {"png:dynamics": .../figures/dynamics.png, "pdf:dynamics": .../figures/dynamics.pdf}

Contract:
  * Draws exactly what the HTML report draws: a dashboards.figures.training_curves.FigureSpec (means, bands,
    smoothing, accuracy scale, titles, axis labels with units, line styles all come from there).
  * static_figure(spec) -> matplotlib Figure (Agg canvas, no pyplot, no display): per panel (Axes)
    ONE mean Line2D per line, labelled with the line's label (the method); the per-seed lines of
    band="seeds" are labelled "_seed ..." (matplotlib's not-in-legend prefix); min-max / std bands
    are filled polygons. Every panel has the x label "training step" and its y label with unit.
    One figure legend below the panels: one entry per method (colour + dash + marker: readable
    in grayscale), a grey patch saying what the band is, the title saying what a line is.
  * write_static_figures(specs, out_dir, formats) writes <out_dir>/figures/<spec.name>.<fmt> for fmt
    in ("png", "pdf", "svg") ∩ formats and returns {"<fmt>:<name>": path}; draw_in_background(draws)
    does the same for any {name: drawing function} in a forked process (`sweep report`: drawing beside the rest of the report). Files are deterministic
    (no dates in PDF/SVG metadata, fixed SVG ids); PDF fonts are embedded as TrueType (Type 42).
  * matplotlib keeps a config dir and a font cache under MPLCONFIGDIR (else ~/.config/matplotlib,
    ~/.cache/matplotlib). import_matplotlib(config_dir) points both at `config_dir` (write_static_figures:
    <out_dir>/.matplotlib; static_figure alone: <cwd>/.cache/matplotlib) for the import only, unless
    MPLCONFIGDIR is set; matplotlib then keeps that directory for the process and nothing is written
    under $HOME. (If matplotlib.font_manager was imported before, its directories are whatever that
    import chose.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

from contract.env import MPLCONFIGDIR
from dashboards.figures.training_curves import STAT_COLUMNS, X_LABEL, FigureSpec, is_evaluation

STATIC_FORMATS = ("png", "pdf", "svg")
DPI = 200
PANEL_SIZE = (3.4, 2.6)
"""Inches per panel: a row of three is 10.2 in wide (scaled to a paper's text width, about 7 in)."""
DASHES = {"solid": "-", "dash": "--", "dot": ":", "dashdot": "-.", "longdash": (0, (9, 3)),
          "longdashdot": (0, (9, 2, 1, 2))}
"""plotly dash name -> matplotlib linestyle."""
MARKERS = {"circle": "o", "square": "s", "diamond": "D", "triangle-up": "^", "x": "x", "triangle-down": "v",
           "star": "*", "cross": "P"}
"""plotly marker symbol -> matplotlib marker."""
RC = {"font.size": 8, "axes.titlesize": 9, "legend.fontsize": 8, "pdf.fonttype": 42, "svg.fonttype": "none",
      "svg.hashsalt": "sweep-report", "axes.spines.top": False, "axes.spines.right": False}
METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None}, "svg": {"Date": None}}
STEP_MARKERS = 10
"""Markers per per-step line (the line has every step); every evaluation point gets one."""


def import_matplotlib(config_dir: Path) -> ModuleType:
    """Import matplotlib (and its font manager, which builds or reads the font cache) with
    MPLCONFIGDIR = `config_dir` unless MPLCONFIGDIR is already set; the environment is restored
    afterwards (matplotlib caches both directories on first use). Returns the matplotlib module."""
    set_here = not MPLCONFIGDIR.is_set() and "matplotlib.font_manager" not in sys.modules
    if set_here:
        config_dir.mkdir(parents=True, exist_ok=True)
        MPLCONFIGDIR.set(config_dir.resolve())
    try:
        import matplotlib
        import matplotlib.font_manager  # noqa: F401  (the font cache: under MPLCONFIGDIR)
    finally:
        if set_here:
            MPLCONFIGDIR.unset()
    return matplotlib


def static_figure(spec: FigureSpec, config_dir: Path | None = None):
    """The spec as a matplotlib Figure (Agg canvas). See the module docstring for what it holds."""
    mpl = import_matplotlib(config_dir or Path.cwd() / ".cache" / "matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    labels = spec.labels()
    with mpl.rc_context(RC):
        fig = Figure(figsize=(PANEL_SIZE[0] * spec.cols, PANEL_SIZE[1] * spec.rows + 0.5), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(spec.rows, spec.cols, squeeze=False).ravel()
        for ax, panel in zip(axes, spec.panels):
            for label, df in panel.lines.items():
                _draw_line(ax, spec, label, df, labels, evaluation=is_evaluation(panel.key))
            ax.set_title(panel.title)
            ax.set_xlabel(X_LABEL)
            ax.set_ylabel(panel.y_label)
            ax.grid(True, linewidth=0.4, alpha=0.4)
        for ax in axes[len(spec.panels):]:
            ax.set_visible(False)
        handles = [Line2D([], [], color=spec.styles[label].color, linestyle=DASHES[spec.styles[label].dash],
                          marker=MARKERS[spec.styles[label].marker], markersize=4.5, linewidth=1.5, label=label)
                   for label in labels if label in spec.styles]
        if spec.band_text and spec.band != "seeds":
            handles.append(Patch(facecolor="0.55", alpha=0.35, linewidth=0, label=spec.band_text))
        elif spec.band_text:
            handles.append(Line2D([], [], color="0.55", linewidth=0.7, label=spec.band_text))
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5),
                   title=f"lines: {spec.line_text}", frameon=False)
        if spec.full_title:
            fig.suptitle(spec.full_title, fontsize=10)
    return fig


def _draw_line(ax, spec: FigureSpec, label: str, df, labels: list[str], evaluation: bool) -> None:
    style = spec.styles[label]
    x = df.index.to_numpy(dtype=float)
    mean = df["mean"].to_numpy(dtype=float)
    if spec.band in ("minmax", "std"):
        lo, hi = ((df["min"], df["max"]) if spec.band == "minmax"
                  else (df["mean"] - df["std"], df["mean"] + df["std"]))
        ok = np.isfinite(lo.to_numpy(dtype=float)) & np.isfinite(hi.to_numpy(dtype=float))
        ax.fill_between(x[ok], lo.to_numpy(dtype=float)[ok], hi.to_numpy(dtype=float)[ok], color=style.color,
                        alpha=0.18, linewidth=0)
    elif spec.band == "seeds":
        for run in [c for c in df.columns if c not in STAT_COLUMNS]:
            y = df[run].to_numpy(dtype=float)
            ok = np.isfinite(y)
            ax.plot(x[ok], y[ok], color=style.color, alpha=0.35, linewidth=0.6, label=f"_seed {run}")
    ok = np.isfinite(mean)
    n = int(ok.sum())
    every = 1 if evaluation else max(1, n // STEP_MARKERS)
    offset = (labels.index(label) * every) // max(1, len(labels)) if label in labels else 0
    ax.plot(x[ok], mean[ok], color=style.color, linestyle=DASHES[style.dash], marker=MARKERS[style.marker],
            markersize=4 if evaluation else 3.5, markevery=(min(offset, max(0, n - 1)), every), linewidth=1.5,
            label=label)


def static_draws(specs: list[FigureSpec]) -> dict[str, Callable]:
    """{spec.name: a function drawing its Figure}, for save_figures or draw_in_background."""
    return {spec.name: (lambda spec=spec: static_figure(spec)) for spec in specs}


def write_static_figures(specs: list[FigureSpec], out_dir: str | Path, formats) -> dict[str, Path]:
    """Write figures/<name>.<fmt> under out_dir for the static formats in `formats`; {"fmt:name": path}."""
    return save_figures(static_draws(specs), out_dir, formats)


def draw_in_background(draw: dict[str, Callable], out_dir: str | Path, formats,
                       processes: int | None = None) -> Callable[[], dict[str, Path]]:
    """Start ``save_figures(draw, out_dir, formats)`` in forked child processes (``processes``, default one per
    core, each drawing every n-th figure), so the other cores draw while the caller goes on (a 2,000-trial
    report: the curves and the aggregates beside the tables, the HTML page and the upload); returns
    ``join()``, which waits and gives the same {"fmt:name": path}. For a process without other threads only
    (`sweep report`; a sweep's driver runs Ray's and draws in place). Where fork is not available it draws now."""
    import multiprocessing
    import os

    wanted = [f for f in STATIC_FORMATS if f in formats]
    out = Path(out_dir)
    paths = {f"{fmt}:{name}": out / "figures" / f"{name}.{fmt}" for name in draw for fmt in wanted}
    if not paths or "fork" not in multiprocessing.get_all_start_methods():
        done = save_figures(draw, out_dir, formats)
        return done.copy
    (out / "figures").mkdir(parents=True, exist_ok=True)
    import_matplotlib(out / ".matplotlib")  # the font cache built once, here, before other processes use it
    names = list(draw)
    n = max(1, min(processes or os.cpu_count() or 1, len(names)))
    children = [multiprocessing.get_context("fork").Process(
        target=save_figures, args=({name: draw[name] for name in names[i::n]}, out, formats),
        name=f"static-figures-{i}", daemon=True) for i in range(n)]
    for child in children:
        child.start()

    def join() -> dict[str, Path]:
        for child in children:
            child.join()
        failed = [child.exitcode for child in children if child.exitcode != 0]
        if failed:
            raise RuntimeError(f"static figures: a drawing process ended with exit code {failed[0]} (its error is "
                               "printed above)")
        return paths
    return join


def save_figures(draw: dict, out_dir: str | Path, formats) -> dict[str, Path]:
    """figures/<name>.<fmt> under out_dir for each {name: function drawing a matplotlib Figure} and each static
    format in `formats` (matplotlib's cache in <out_dir>/.matplotlib, deterministic metadata); {"fmt:name": path}."""
    wanted = [f for f in STATIC_FORMATS if f in formats]
    if not wanted or not draw:
        return {}
    out = Path(out_dir)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    mpl = import_matplotlib(out / ".matplotlib")
    paths = {}
    for name, make in draw.items():
        fig = make()
        with mpl.rc_context(RC):
            for fmt in wanted:
                path = out / "figures" / f"{name}.{fmt}"
                fig.savefig(path, format=fmt, dpi=DPI, metadata=METADATA[fmt])
                paths[f"{fmt}:{name}"] = path
    return paths
