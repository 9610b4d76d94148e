"""The report's "Aggregates" section: mean and IQM over benchmarks x seeds, probability of improvement,
the interval figure (figures/aggregates.png/.pdf, and plotly in the HTML) and the performance profiles
(figures/profiles.png/.pdf: the share of a method's scores above each threshold, with a band).

    from dashboards.report.aggregates_section import study_aggregates, aggregates_html, aggregate_draws
    blocks = study_aggregates(table)     # per model: rows of (label, Aggregate), improvements
    html = aggregates_html(blocks, table.config)
    paths = save_figures(aggregate_draws(blocks, table.config), out_dir, ["png", "pdf"])  # static_figures.py

A row enters with its per-seed value of every benchmark column (dashboards/stats/aggregates.py: the
numbers and their intervals over whole runs); the base row is shown for reference, and the
probability of improvement compares each method row with each baseline row of its block.
"""

from __future__ import annotations

import html as html_lib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dashboards.stats.aggregates import MIN_IQM_SCORES, Aggregate, Improvement, aggregate, improvement, performance_profile
from dashboards.model.table import AVG, DELTA, TableConfig


@dataclass
class Block:
    model: str
    rows: list[tuple[str, Aggregate]] = field(default_factory=list)
    improvements: list[tuple[str, str, Improvement]] = field(default_factory=list)
    """(method, baseline, P(method > baseline))."""
    matrices: dict[str, np.ndarray] = field(default_factory=dict)
    """label -> (runs, benchmarks) scores, for the performance profiles."""


def _matrix(row, benches: list[str]) -> np.ndarray | None:
    """(seeds, benchmarks) of a row, or None when its benchmarks do not share one set of seeds."""
    cols = [row.cells[b].values for b in benches if b in row.cells]
    if len(cols) != len(benches) or not cols or len({len(c) for c in cols}) != 1 or not cols[0]:
        return None
    return np.array(cols, dtype=float).T


def study_aggregates(table) -> list[Block]:
    """Per model block: each row's aggregate, and P(method > baseline) for every method x baseline."""
    cfg: TableConfig = table.config
    benches = [c for c in table.columns if c not in (AVG, DELTA)]
    blocks = []
    for model in table.models:
        rows = [r for r in table.rows if r.model == model]
        mats = {r.label: (r, _matrix(r, benches)) for r in rows}
        block = Block(model)
        for label, (r, m) in mats.items():
            if m is not None:
                block.rows.append((label, aggregate(m, alpha=cfg.alpha)))
                block.matrices[label] = m
        baselines = [b for b in cfg.baselines if b in mats and mats[b][1] is not None]
        for label, (r, m) in mats.items():
            if r.is_base or m is None:
                continue
            for b in baselines:
                if b != label:
                    block.improvements.append((label, b, improvement(m, mats[b][1], alpha=cfg.alpha)))
        if block.rows:
            blocks.append(block)
    return blocks


def _num(v: float, cfg: TableConfig) -> str:
    return f"{v * cfg.scale:.{cfg.decimals}f}"


def _iqm_text(a: Aggregate, cfg: TableConfig, sep: str = " ") -> str:
    return "—" if a.iqm is None else f"{_num(a.iqm, cfg)}{sep}[{_num(a.iqm_ci[0], cfg)}, {_num(a.iqm_ci[1], cfg)}]"


def iqm_note(blocks: list[Block]) -> str:
    """Why the IQM is not shown (too few scores per method), or ''."""
    few = {a.runs * a.tasks for b in blocks for _, a in b.rows if a.iqm is None}
    if not few:
        return ""
    return (f"IQM not shown where a method has fewer than {MIN_IQM_SCORES} scores (runs x benchmarks; here "
            f"{', '.join(map(str, sorted(few)))}): a mean of the middle half of so few numbers is not robust.")


INTERVALS = ("95% intervals over whole runs (a run's scores on every benchmark move together): the mean's a "
             "t-interval over the runs' means, the IQM's from the jackknife over runs, P(X > Y)'s a score interval "
             "at its U-statistic variance")

def aggregates_html(blocks: list[Block], cfg: TableConfig) -> str:
    """Two small tables per model: aggregates with intervals, and the probability of improvement."""
    if not blocks:
        return ""
    esc = html_lib.escape
    note = iqm_note(blocks)
    out = ['<h2>Aggregates</h2><p class="meta">Over benchmarks x seeds: mean and IQM (interquartile mean, the '
           'middle 50% of the per-seed benchmark scores), and the probability that a run of a method beats a run '
           f'of a baseline on a benchmark (rliable, Agarwal et al. 2021), with {esc(INTERVALS)} '
           f'(docs/statistics.md).{" " + esc(note) if note else ""}</p>']
    for b in blocks:
        if len(blocks) > 1 or b.model:
            out.append(f"<h3>{esc(cfg.labels.get(b.model, b.model))}</h3>")
        out.append('<table class="paper-table"><thead><tr><th>Method</th><th>Mean</th><th>95% CI</th><th>IQM</th>'
                   '<th>95% CI</th><th>runs x benchmarks</th></tr></thead><tbody>')
        for label, a in b.rows:
            out.append(f'<tr><td class="method">{esc(cfg.labels.get(label, label))}</td><td>{_num(a.mean, cfg)}</td>'
                       f'<td>[{_num(a.mean_ci[0], cfg)}, {_num(a.mean_ci[1], cfg)}]</td>'
                       f'<td>{"—" if a.iqm is None else _num(a.iqm, cfg)}</td>'
                       f'<td>{"" if a.iqm is None else f"[{_num(a.iqm_ci[0], cfg)}, {_num(a.iqm_ci[1], cfg)}]"}</td>'
                       f'<td>{a.runs} x {a.tasks}</td></tr>')
        out.append("</tbody></table>")
        if b.improvements:
            out.append('<table class="paper-table"><thead><tr><th>P(X &gt; Y)</th><th>Y</th><th>P</th><th>95% CI</th>'
                       '</tr></thead><tbody>')
            for x, y, p in b.improvements:
                out.append(f'<tr><td class="method">{esc(cfg.labels.get(x, x))}</td><td>{esc(cfg.labels.get(y, y))}</td>'
                           f'<td>{p.value:.2f}</td><td>[{p.ci[0]:.2f}, {p.ci[1]:.2f}]</td></tr>')
            out.append("</tbody></table>")
    return "\n".join(out) + "\n"


def aggregates_markdown(blocks: list[Block], cfg: TableConfig) -> str:
    """The aggregates as Markdown (aggregates.md beside table.md)."""
    lines = [f"{INTERVALS}.", ""]
    if iqm_note(blocks):
        lines += [iqm_note(blocks), ""]
    for b in blocks:
        if b.model:
            lines += [f"**{cfg.labels.get(b.model, b.model)}**", ""]
        lines += ["| Method | Mean [95% CI] | IQM [95% CI] |", "|:---|---:|---:|"]
        lines += [f"| {cfg.labels.get(label, label)} | {_num(a.mean, cfg)} [{_num(a.mean_ci[0], cfg)}, "
                  f"{_num(a.mean_ci[1], cfg)}] | {_iqm_text(a, cfg)} |"
                  for label, a in b.rows]
        if b.improvements:
            lines += ["", "| X | Y | P(X > Y) [95% CI] |", "|:---|:---|---:|"]
            lines += [f"| {cfg.labels.get(x, x)} | {cfg.labels.get(y, y)} | {p.value:.2f} [{p.ci[0]:.2f}, {p.ci[1]:.2f}] |"
                      for x, y, p in b.improvements]
        lines.append("")
    return "\n".join(lines)


def plotly_aggregates(blocks: list[Block], cfg: TableConfig):
    """Interval plot (plotly): per model a row of panels Mean, IQM (where shown) and the performance profiles."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    titles = [f"{b.model} {t}".strip() for b in blocks for t in ("Mean", "IQM", "performance profile")]
    fig = make_subplots(rows=len(blocks), cols=3, subplot_titles=titles)
    for i, b in enumerate(blocks, start=1):
        for j, (point, ci) in enumerate((("mean", "mean_ci"), ("iqm", "iqm_ci")), start=1):
            shown = [(cfg.labels.get(label, label), a) for label, a in b.rows if getattr(a, point) is not None]
            if not shown:
                continue
            x = [getattr(a, point) * cfg.scale for _, a in shown]
            lo = [getattr(a, ci)[0] * cfg.scale for _, a in shown]
            hi = [getattr(a, ci)[1] * cfg.scale for _, a in shown]
            fig.add_trace(go.Scatter(x=x, y=[label for label, _ in shown], mode="markers", showlegend=False,
                                     marker={"color": "#1f77b4"},
                                     error_x={"type": "data", "symmetric": False,
                                              "array": [h - v for h, v in zip(hi, x)],
                                              "arrayminus": [v - lo_ for v, lo_ in zip(x, lo)]}), row=i, col=j)
        for label, m in b.matrices.items():
            taus, share, _, _ = performance_profile(m, alpha=cfg.alpha)
            fig.add_trace(go.Scatter(x=taus * cfg.scale, y=share, mode="lines", name=cfg.labels.get(label, label),
                                     showlegend=i == 1), row=i, col=3)
    fig.update_layout(height=max(300, 60 + 28 * sum(len(b.rows) for b in blocks)), title="Aggregates (95% CI)")
    return fig


def aggregate_figure(blocks: list[Block], cfg: TableConfig):
    """The interval plot as a matplotlib Figure (Agg): per model a row of two panels, Mean and IQM."""
    from dashboards.figures.static import RC, import_matplotlib

    mpl = import_matplotlib(Path.cwd() / ".cache" / "matplotlib")  # as static_figure: imported already by save_figures
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = sum(0.35 * len(b.rows) + 0.8 for b in blocks)
    with mpl.rc_context(RC):
        fig = Figure(figsize=(7.0, height), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(blocks), 2, squeeze=False)
        for (ax_mean, ax_iqm), b in zip(axes, blocks):
            labels = [cfg.labels.get(label, label) for label, _ in b.rows]
            y = np.arange(len(labels))[::-1]
            for ax, point, ci, title in ((ax_mean, "mean", "mean_ci", "Mean"), (ax_iqm, "iqm", "iqm_ci", "IQM")):
                if all(getattr(a, point) is None for _, a in b.rows):
                    ax.text(0.5, 0.5, f"too few scores for a robust IQM\n(< {MIN_IQM_SCORES} per method)",
                            ha="center", va="center", transform=ax.transAxes, fontsize=8)
                for yi, (_, a) in zip(y, b.rows):
                    if getattr(a, point) is None:
                        continue
                    lo, hi = (v * cfg.scale for v in getattr(a, ci))
                    ax.plot([lo, hi], [yi, yi], color="#1f77b4", linewidth=5, alpha=0.45, solid_capstyle="butt")
                    ax.plot([getattr(a, point) * cfg.scale], [yi], marker="|", color="black", markersize=10)
                ax.set_yticks(y, labels if ax is ax_mean else [""] * len(labels))
                ax.set_title(f"{b.model + ': ' if b.model and len(blocks) > 1 else ''}{title}")
                ax.set_xlabel(f"score x{cfg.scale:g} (95% CI)")
                ax.grid(True, axis="x", linewidth=0.4, alpha=0.4)
    return fig


def profile_figure(blocks: list[Block], cfg: TableConfig):
    """rliable's performance profiles as a matplotlib Figure (Agg): per model, the share of each method's
    scores (runs x benchmarks) above each threshold, with its 95% band over runs."""
    from dashboards.figures.static import RC, import_matplotlib

    mpl = import_matplotlib(Path.cwd() / ".cache" / "matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with mpl.rc_context(RC):
        fig = Figure(figsize=(4.2 * len(blocks), 3.2), layout="constrained")
        FigureCanvasAgg(fig)
        for ax, b in zip(fig.subplots(1, len(blocks), squeeze=False)[0], blocks):
            for label, m in b.matrices.items():
                taus, share, low, high = performance_profile(m, alpha=cfg.alpha)
                line, = ax.plot(taus * cfg.scale, share, linewidth=1.2, label=cfg.labels.get(label, label))
                ax.fill_between(taus * cfg.scale, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
            ax.set_title(f"{b.model + ': ' if b.model else ''}performance profile")
            ax.set_xlabel(f"score x{cfg.scale:g} (threshold)")
            ax.set_ylabel("share of runs' scores above")
            ax.set_ylim(0, 1.02)
            ax.grid(True, linewidth=0.4, alpha=0.4)
            ax.legend(fontsize=7, frameon=False)
    return fig


def aggregate_draws(blocks: list[Block], cfg: TableConfig) -> dict:
    """{"aggregates": ..., "profiles": ...}: functions drawing the figures ({} without blocks), for save_figures."""
    if not blocks:
        return {}
    return {"aggregates": lambda: aggregate_figure(blocks, cfg), "profiles": lambda: profile_figure(blocks, cfg)}

