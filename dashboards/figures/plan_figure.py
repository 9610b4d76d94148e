"""The seed plan's figure: the difference each comparison can find against seeds per method (`sweep plan --figure`).

    from dashboards.figures.plan_figure import draw_plan
    draw_plan(plan, "plan.png")     # or .pdf / .svg: one panel per model, one line per comparison and column

Each line is dashboards/stats/seed_plan.py `Plan.curves`: the detectable difference (shown units) at the plan's
level and power for 2..UP_TO seeds per method (or up to the plan's largest seed count, if more). A --detect
target is a dotted horizontal line; the pilot's own seeds are marked on each line. matplotlib as the report's
static figures draw (dashboards/figures/static.py: Agg canvas, no pyplot, deterministic files).
"""

from __future__ import annotations

from pathlib import Path

from dashboards.figures.static import DPI, METADATA, PANEL_SIZE, import_matplotlib

UP_TO = 20


def draw_plan(plan, path: str | Path) -> Path:
    """Write the figure to ``path`` (its suffix: png, pdf or svg); returns the path."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in METADATA:
        raise ValueError(f"--figure {path}: expected a .png, .pdf or .svg file name")
    mpl = import_matplotlib(Path.cwd() / ".cache" / "matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    up_to = max([UP_TO] + [r.seeds for r in plan.rows if r.seeds])
    curves = plan.curves(up_to)
    models = list(dict.fromkeys(r.model for r in plan.rows))
    with mpl.rc_context({"font.size": 8}):
        fig = Figure(figsize=(PANEL_SIZE[0] * 1.6, PANEL_SIZE[1] * 1.4 * len(models)), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
        for ax, model in zip(axes, models):
            for r in (r for r in plan.rows if r.model == model):
                points = curves[(model, r.method, r.column)]
                (line,) = ax.plot([s for s, _ in points], [d for _, d in points], linewidth=1.2,
                                  label=f"{r.method} vs {r.baseline}, {r.column}")
                ax.plot([min(r.pilot_seeds)], [r.detectable_now], marker="o", color=line.get_color(), markersize=4)
            for column, difference in plan.target.detect.items():
                ax.axhline(difference, linestyle=":", color="0.3", linewidth=0.9)
                ax.annotate(f"target {column} {difference:g}", (up_to, difference), ha="right", va="bottom",
                            fontsize=7, color="0.3")
            ax.set_xlabel("seeds per method")
            ax.set_ylabel("detectable difference (points)")
            ax.set_title(f"{model}: power {plan.target.power:g}, p < {plan.alpha:g} at Holm's first step "
                         "(dot: the pilot's seeds)")
            ax.set_ylim(bottom=0)
            ax.grid(True, linewidth=0.4, alpha=0.4)
            ax.legend(frameon=False, fontsize=7)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format=fmt, dpi=DPI, metadata=METADATA[fmt])
    return path
