"""Compute-curve figures as ScaleRL draws them (matplotlib, PNG/PDF beside the report's other figures).

    from dashboards.figures.compute import compute_figure, compute_draws
    fig = compute_figure(frame, study, model="Qwen3", scale=100, x_label="step")
    save_figures(compute_draws(frame, study, scale=100, x_label="step"), out_dir, ["png", "pdf"])

One panel per model: per method the measured points (the mean over seeds at each evaluation, its min-max
over seeds as a band), the pooled fit as a line over the measured compute and dashed beyond it (to 1.5x
the largest compute: the extrapolated part), and the ceiling A as a thin horizontal line; a method whose
fit is not ok has its points only, and the legend says its status. Styles (colour, dash, marker) are the
report's per method (dashboards/figures/training_curves.py style_map), so a method looks the same in every figure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from dashboards.stats.compute_curves import StudyCurves
from dashboards.stats.compute_fit import OK
from dashboards.figures.training_curves import style_map
from dashboards.figures.static import DASHES, MARKERS, PANEL_SIZE, RC, import_matplotlib

EXTRAPOLATE_TO = 1.5
"""The dashed part of a fit runs to this multiple of the largest measured compute."""


def _measured(group: pd.DataFrame) -> pd.DataFrame:
    """Mean, min and max over seeds at each evaluation (the seeds' i-th points: their compute may differ)."""
    g = group.sort_values("x").copy()
    g["i"] = g.groupby("seed").cumcount()
    return g.groupby("i").agg(x=("x", "mean"), mean=("value", "mean"), low=("value", "min"), high=("value", "max"))


def compute_figure(frame: pd.DataFrame, study: StudyCurves, *, model: str, scale: float = 100.0,
                   x_label: str = "step", config_dir: Path | None = None):
    """One model's panel as a matplotlib Figure (Agg canvas, no pyplot)."""
    mpl = import_matplotlib(config_dir or Path.cwd() / ".cache" / "matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    styles = style_map(frame, "method", model=model)  # every model's methods: a method keeps its style
    mine = frame[frame["model"].astype(str) == model]
    with mpl.rc_context(RC):
        fig = Figure(figsize=(PANEL_SIZE[0] * 1.8, PANEL_SIZE[1] * 1.5), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        for m in [m for m in study.methods if m.model == model]:
            style = styles[m.method]
            points = _measured(mine[mine["method"].astype(str) == m.method])
            ax.fill_between(points["x"], points["low"] * scale, points["high"] * scale, color=style.color, alpha=0.15,
                            linewidth=0)
            label = m.method if m.fit.status == OK else f"{m.method} (fit {m.fit.status})"
            ax.plot(points["x"], points["mean"] * scale, linestyle="none", marker=MARKERS[style.marker],
                    color=style.color, markersize=4, label=label)
            if m.fit.status != OK:
                continue
            x_max = float(points["x"].max())
            inside = np.linspace(max(x_max * 1e-3, 1e-9), x_max, 200)
            beyond = np.linspace(x_max, EXTRAPOLATE_TO * x_max, 60)
            ax.plot(inside, m.fit.predict(inside) * scale, color=style.color, linestyle=DASHES["solid"], linewidth=1.4)
            ax.plot(beyond, m.fit.predict(beyond) * scale, color=style.color, linestyle=DASHES["dash"], linewidth=1.4)
            ax.axhline(m.fit.A * scale, color=style.color, linestyle=DASHES["dot"], linewidth=0.8, alpha=0.8)
        ax.set_xlabel(f"training compute ({x_label})")
        ax.set_ylabel("pass rate" + (" (%)" if scale == 100 else ""))
        ax.set_title(f"{model}: R(C) = R0 + (A − R0) / (1 + (C_mid / C)^B)" if model else "compute curves")
        ax.grid(True, linewidth=0.4, alpha=0.4)
        ax.legend(loc="lower right", frameon=False,
                  title="points: mean over seeds (band: min–max); line: fit, dashed beyond the data; dotted: A")
    return fig


def compute_draws(frame: pd.DataFrame, study: StudyCurves, *, scale: float = 100.0,
                  x_label: str = "step") -> dict[str, Callable]:
    """{figure name: drawing function} for dashboards.figures.static.save_figures: ``compute_curves`` for one
    model, ``compute_curves_<model>`` for each of several."""
    models = list(dict.fromkeys(m.model for m in study.methods))
    return {("compute_curves" if len(models) == 1 else f"compute_curves_{_safe(model)}"):
            (lambda model=model: compute_figure(frame, study, model=model, scale=scale, x_label=x_label))
            for model in models}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "model"
