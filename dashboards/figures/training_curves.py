"""Training-curve figures from a sweep's history frame (see dashboards/collect/sweep_runs.py): the ONE place where
curves are aggregated (means, bands, smoothing, scale, labels, line styles); plotly draws them here
(the HTML report), matplotlib in dashboards/figures/static.py (the paper's PNG/PDF files).

    from dashboards.figures.training_curves import figure_spec, plotly_figure, curve_figure, grid_figure, benchmark_grid
    spec = figure_spec(data.history, [ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG], ema_alpha=0.1, acc_scale=100)
    fig = plotly_figure(spec)                   # one row entropy / response length / accuracy (DHPO Fig. 1)
    fig = curve_figure(data.history, ENTROPY, ema_alpha=0.02, band="minmax")
    fig = benchmark_grid(data.history)          # one panel per val/<benchmark>/acc (DHPO Fig. 4)

Contract: a FigureSpec holds panels (one metric each, with its title and y-axis label with unit; the
x axis is always "training step"), and per panel one line per method (by="method") or per
hyper-parameter config (by="config"): the mean over the line's runs at each step, with a band:
"minmax" (min..max over seeds), "std" (mean ± 1 std), "seeds" (thin per-seed lines, as SSPO Fig. 2)
or "none". `spec.line_text` / `spec.band_text` say what the lines and band are; the legends show
them. Each line has a LineStyle (colour, dash, marker) distinct in dash/marker, not only in colour,
so the figures read in grayscale. With several models in the frame, pass model=... or lines are
labelled "model / method". Accuracies (val/<b>/acc, eval/<b>/{avg,pass,maj}_at_k) are multiplied
by `acc_scale` (the table's scale: 100 = percent) and the axis says so.

Smoothing convention (SSPO App. B used alpha = 0.02): an exponential moving average over the
logged points of each run, s_t = alpha * x_t + (1 - alpha) * s_{t-1}, debiased for the first points
(pandas `ewm(alpha, adjust=True)`, like TensorBoard's debiasing), applied per run BEFORE averaging
over seeds, so the band is the spread of the smoothed runs. alpha = 1 means no smoothing; smaller
alpha smooths more. (TensorBoard/W&B's "smoothing 0.98" is alpha = 0.02.) It applies to per-step
training metrics only: evaluation keys (val/*, eval/*: a few points, every eval_every steps) are
NEVER smoothed, so a curve's last point is the mean the table shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from contract.metrics import (CLIP_FRACTION, CLIP_FRACTION_HIGH, CLIP_FRACTION_LOW, CLIP_FRACTION_SEQ,
                              CLIP_FRACTION_TOKEN, CLIP_FRACTIONS, ENTROPY, EVAL, GATE_WEIGHT, GRAD_NORM, LR,
                              MIX_WEIGHT, MIXED_RATIO_MEAN, PG_LOSS, PPO_KL, RATIO_MEAN, RESPONSE_LENGTH_MAX,
                              RESPONSE_LENGTH_MEAN, REWARD_ANSWER_MEAN, REWARD_FORMAT_MEAN, REWARD_MEAN,
                              SEQ_RATIO_MEAN, STEP_TIME, TOKENS_PER_S, VAL, VAL_AVG, VAL_TEMPLATE, val_key)
from dashboards.model.report import BANDS  # the bands a spec's report.band may name

CLIP_KEYS = CLIP_FRACTIONS
X_LABEL = "training step"
TITLES = {ENTROPY: "Entropy", RESPONSE_LENGTH_MEAN: "Mean response length", RESPONSE_LENGTH_MAX: "Max response length",
          REWARD_MEAN: "Reward", VAL_AVG: "Average accuracy", CLIP_FRACTION: "Clip fraction",
          CLIP_FRACTION_TOKEN: "Clip fraction (token)", CLIP_FRACTION_SEQ: "Clip fraction (sequence)",
          PPO_KL: "Approx. KL", GRAD_NORM: "Gradient norm", MIX_WEIGHT: "Mixing weight"}
Y_LABELS = {ENTROPY: "entropy (nats/token)", RESPONSE_LENGTH_MEAN: "response length (tokens)",
            RESPONSE_LENGTH_MAX: "max response length (tokens)", REWARD_MEAN: "mean reward (per response)",
            REWARD_ANSWER_MEAN: "answer reward (per response)", REWARD_FORMAT_MEAN: "format reward (per response)",
            CLIP_FRACTION: "clipped tokens (fraction)", CLIP_FRACTION_TOKEN: "clipped tokens (fraction)",
            CLIP_FRACTION_SEQ: "clipped sequences (fraction)", CLIP_FRACTION_LOW: "clipped tokens (fraction)",
            CLIP_FRACTION_HIGH: "clipped tokens (fraction)", PPO_KL: "approx. KL (nats)",
            GRAD_NORM: "gradient norm (L2, before clipping)", MIX_WEIGHT: "mixing weight w (0–1)",
            GATE_WEIGHT: "gate weight (0–1)", PG_LOSS: "policy loss", LR: "learning rate",
            RATIO_MEAN: "importance ratio", SEQ_RATIO_MEAN: "sequence ratio", MIXED_RATIO_MEAN: "mixed ratio m",
            STEP_TIME: "step time (s)", TOKENS_PER_S: "throughput (tokens/s)"}
EVAL_LABELS = {"avg_at_k": ("Avg@k", True), "pass_at_k": ("pass@k", True), "maj_at_k": ("maj@k", True),
               "k": ("samples per problem", False), "mean_tokens": ("response length (tokens)", False),
               "truncated_frac": ("truncated (fraction)", False)}
"""Per-benchmark checkpoint-evaluation metrics (contract.metrics.EVAL_METRICS): (name, is an accuracy)."""
PALETTE = qualitative.Plotly + qualitative.D3
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
MARKERS = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down", "star", "cross")
STEP_MARKERS = 12
"""Markers drawn per per-step line (the line itself has every step); evaluation points all get one."""


def is_evaluation(key: str) -> bool:
    """An evaluation key (val/*, eval/*): logged every few steps, never smoothed."""
    return key.startswith((VAL, EVAL))


def is_accuracy(key: str) -> bool:
    """val/<b>/acc or an accuracy of a checkpoint evaluation: scaled like the table (acc_scale)."""
    parts = key.split("/")
    if len(parts) != 3:
        return False
    if key.startswith(VAL):
        return key == val_key(parts[1])
    return key.startswith(EVAL) and EVAL_LABELS.get(parts[2], ("", False))[1]


def scale_unit(scale: float) -> str:
    return "%" if scale == 100 else "fraction" if scale == 1 else f"×{scale:g}"


def title_of(key: str) -> str:
    if key in TITLES:
        return TITLES[key]
    parts = key.split("/")
    if len(parts) == 3 and key == val_key(parts[1]):
        return f"{parts[1]} accuracy"
    if len(parts) == 3 and key.startswith(EVAL):
        bench = "Average" if parts[1] == "avg" else parts[1]
        return f"{bench} {EVAL_LABELS.get(parts[2], (parts[2], False))[0]}"
    return key


def y_label(key: str, acc_scale: float = 1.0) -> str:
    """The y-axis title with its unit, e.g. 'entropy (nats/token)', 'accuracy (%)'."""
    if key in Y_LABELS:
        return Y_LABELS[key]
    parts = key.split("/")
    if is_accuracy(key):
        name = "accuracy" if key.startswith(VAL) else EVAL_LABELS[parts[2]][0]
        return f"{name} ({scale_unit(acc_scale)})"
    if len(parts) == 3 and key.startswith(EVAL) and parts[2] in EVAL_LABELS:
        return EVAL_LABELS[parts[2]][0]
    return key


def ema(values: pd.Series | np.ndarray, alpha: float) -> np.ndarray:
    """Debiased EMA over the non-NaN points (alpha=1: identity). NaNs stay NaN."""
    s = pd.Series(np.asarray(values, dtype=float))
    if alpha >= 1:
        return s.to_numpy()
    return s.ewm(alpha=alpha, adjust=True, ignore_na=True).mean().where(s.notna()).to_numpy()


def _check(ema_alpha: float, band: str, by: str) -> None:
    if not 0 < ema_alpha <= 1:
        raise ValueError(f"ema_alpha must be in (0, 1] (1 = no smoothing), got {ema_alpha!r}")
    if band not in BANDS:
        raise ValueError(f"band must be one of {BANDS}, got {band!r}")
    if by not in ("method", "config"):
        raise ValueError(f"by must be 'method' or 'config', got {by!r}")


def _groups(history: pd.DataFrame, by: str, model: str | None) -> tuple[pd.DataFrame, str]:
    h = history if model is None else history[history["model"] == model]
    if model is None and h["model"].nunique() > 1:
        h = h.assign(_group=h["model"].astype(str) + " / " + h[by].astype(str))
        return h, "_group"
    return h, by


@dataclass(frozen=True)
class LineStyle:
    """How one line is drawn: colour plus a dash and a marker (plotly names; static_figures maps them)."""

    color: str
    dash: str
    marker: str


def style_map(history: pd.DataFrame, by: str = "method", model: str | None = None) -> dict[str, LineStyle]:
    """A stable style per line label, in first-appearance order; (dash, marker) pairs differ for up
    to 24 lines. With `model` given (figures of one model) the labels are the plain `by` values of
    the WHOLE frame, so a method keeps its style across the models' figures."""
    h, col = (history, by) if model is not None else _groups(history, by, None)
    return {str(g): LineStyle(PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)], MARKERS[i % len(MARKERS)])
            for i, g in enumerate(pd.unique(h[col]))}


def color_map(history: pd.DataFrame, by: str = "method", model: str | None = None) -> dict[str, str]:
    """The colours of style_map."""
    return {label: s.color for label, s in style_map(history, by, model).items()}


def aggregate(history: pd.DataFrame, key: str, *, by: str = "method", ema_alpha: float = 1.0,
              model: str | None = None, scale: float = 1.0) -> dict[str, pd.DataFrame]:
    """label -> frame indexed by step with columns mean, std, min, max, n and one per run: values x
    `scale`, smoothed per run with `ema_alpha` unless `key` is an evaluation key."""
    h, col = _groups(history, by, model)
    h = h[(h["key"] == key).to_numpy()]
    out = {}
    for label, part in h.groupby(col, sort=False, observed=True):
        wide = part.pivot_table(index="step", columns="run_id", values="value", aggfunc="last", observed=True)
        wide = wide * scale
        if ema_alpha < 1 and not is_evaluation(key):
            wide = wide.ewm(alpha=ema_alpha, adjust=True, ignore_na=True).mean().where(wide.notna())
        stats = pd.DataFrame({"mean": wide.mean(axis=1), "std": wide.std(axis=1, ddof=1).fillna(0.0),
                              "min": wide.min(axis=1), "max": wide.max(axis=1),
                              "n": wide.notna().sum(axis=1)})
        out[str(label)] = pd.concat([stats, wide], axis=1)
    return out


STAT_COLUMNS = ("mean", "std", "min", "max", "n")


@dataclass
class Panel:
    """One metric: its lines (aggregate's frames), title and y-axis label (with unit)."""

    key: str
    title: str
    y_label: str
    smoothed: bool
    lines: dict[str, pd.DataFrame]


@dataclass
class FigureSpec:
    """What a figure draws, for plotly_figure and static_figures.static_figure alike."""

    name: str
    title: str | None
    panels: list[Panel]
    cols: int
    band: str
    styles: dict[str, LineStyle]
    ema_alpha: float
    line_text: str
    """What a line is, e.g. 'mean over 2 seeds'."""
    band_text: str | None
    """What the band is, e.g. 'min–max over the 2 seeds'; None without a band."""

    @property
    def rows(self) -> int:
        return -(-len(self.panels) // self.cols)

    @property
    def smoothing(self) -> str | None:
        """e.g. 'EMA α=0.1 on per-step metrics; evaluations unsmoothed'; None when nothing is smoothed."""
        if not any(p.smoothed for p in self.panels):
            return None
        evals = any(is_evaluation(p.key) for p in self.panels)
        return f"EMA α={self.ema_alpha:g} on per-step metrics" + ("; evaluations unsmoothed" if evals else "")

    @property
    def full_title(self) -> str | None:
        note = self.smoothing
        return f"{self.title} ({note})" if self.title and note else self.title or note

    @property
    def legend_title(self) -> str:
        return f"lines: {self.line_text}" + (f"; {self.band_text}" if self.band_text else "")

    def labels(self) -> list[str]:
        """The line labels drawn in any panel, in style order."""
        drawn = {label for p in self.panels for label in p.lines}
        return [label for label in self.styles if label in drawn] + sorted(drawn - set(self.styles))


def _line_and_band_text(h: pd.DataFrame, col: str, band: str) -> tuple[str, str | None]:
    per_line = h.groupby(col, observed=True).agg(runs=("run_id", "nunique"),
                                                 seeds=("seed", lambda s: s.nunique(dropna=False)))
    if per_line.empty:
        return "mean over seeds", None
    word = "seeds" if (per_line["runs"] == per_line["seeds"]).all() else "runs"
    lo, hi = int(per_line["runs"].min()), int(per_line["runs"].max())
    n = f"{lo}" if lo == hi else f"{lo}–{hi}"
    word = word[:-1] if hi == 1 else word
    band_text = {"minmax": f"band: min–max over the {n} {word}", "std": f"band: mean ± 1 std over the {n} {word}",
                 "seeds": f"thin lines: the {n} single {word}", "none": None}[band]
    return f"mean over {n} {word}", band_text


def figure_spec(history: pd.DataFrame, keys: list[str], *, name: str = "", title: str | None = None,
                titles: list[str] | None = None, cols: int = 3, by: str = "method", ema_alpha: float = 1.0,
                band: str = "minmax", model: str | None = None, styles: dict[str, LineStyle] | None = None,
                acc_scale: float = 1.0) -> FigureSpec:
    """Aggregate `keys` into panels (cols per row, in order: the first row is the paper's Fig. 1)."""
    _check(ema_alpha, band, by)
    if not keys:
        raise ValueError("figure_spec: no metric keys to plot")
    styles = styles or style_map(history, by, model)
    panels = []
    for i, key in enumerate(keys):
        scale = acc_scale if is_accuracy(key) else 1.0
        panels.append(Panel(key, titles[i] if titles else title_of(key), y_label(key, acc_scale),
                            ema_alpha < 1 and not is_evaluation(key),
                            aggregate(history, key, by=by, ema_alpha=ema_alpha, model=model, scale=scale)))
    h, col = _groups(history, by, model)
    line_text, band_text = _line_and_band_text(h[h["key"].isin(keys)], col, band)
    return FigureSpec(name, title, panels, max(1, min(cols, len(keys))), band, styles, ema_alpha, line_text,
                      band_text)


def _rgba(color: str, a: float) -> str:
    c = color.lstrip("#")
    r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{a})"


def _style(spec: FigureSpec, label: str) -> LineStyle:
    return spec.styles.get(label) or LineStyle(PALETTE[len(spec.styles) % len(PALETTE)], "solid", "circle")


def _add_traces(fig: go.Figure, spec: FigureSpec, panel: Panel, row: int, col: int, legend: set[str]) -> None:
    where = {"row": row, "col": col}
    for label, df in panel.lines.items():
        style = _style(spec, label)
        x = df.index.to_numpy()
        if spec.band in ("minmax", "std"):
            lo, hi = (df["min"], df["max"]) if spec.band == "minmax" else (df["mean"] - df["std"], df["mean"] + df["std"])
            fig.add_trace(go.Scatter(x=x, y=hi.to_numpy(), mode="lines", line={"width": 0}, hoverinfo="skip",
                                     legendgroup=label, showlegend=False), **where)
            fig.add_trace(go.Scatter(x=x, y=lo.to_numpy(), mode="lines", line={"width": 0}, fill="tonexty",
                                     fillcolor=_rgba(style.color, 0.18), hoverinfo="skip", legendgroup=label,
                                     showlegend=False), **where)
        elif spec.band == "seeds":
            for run in [c for c in df.columns if c not in STAT_COLUMNS]:
                fig.add_trace(go.Scatter(x=x, y=df[run].to_numpy(), mode="lines", hoverinfo="skip",
                                         line={"width": 0.7, "color": _rgba(style.color, 0.35)}, legendgroup=label,
                                         showlegend=False, connectgaps=True), **where)
        marker = {"symbol": style.marker, "size": 7, "color": style.color,
                  "maxdisplayed": 0 if is_evaluation(panel.key) else STEP_MARKERS}
        fig.add_trace(go.Scatter(x=x, y=df["mean"].to_numpy(), mode="lines+markers", name=label, legendgroup=label,
                                 showlegend=label not in legend, marker=marker, connectgaps=True,
                                 line={"color": style.color, "width": 2, "dash": style.dash},
                                 customdata=df["n"].to_numpy(),
                                 hovertemplate=f"{label}<br>step %{{x}}<br>%{{y:.4g}} (n=%{{customdata}})<extra></extra>"),
                      **where)
        legend.add(label)


def plotly_figure(spec: FigureSpec, *, panel_height: int = 300, height: int | None = None) -> go.Figure:
    """The spec as a plotly figure: a grid of panels, axis titles on every panel, one shared legend
    (one entry per line; its title says what lines and band are)."""
    fig = make_subplots(rows=spec.rows, cols=spec.cols, subplot_titles=[p.title for p in spec.panels],
                        horizontal_spacing=0.08,
                        vertical_spacing=min(0.3, 110 / (panel_height * spec.rows)) if spec.rows > 1 else 0.1)
    legend: set[str] = set()
    for i, panel in enumerate(spec.panels):
        row, col = i // spec.cols + 1, i % spec.cols + 1
        _add_traces(fig, spec, panel, row, col, legend)
        fig.update_xaxes(title_text=X_LABEL, row=row, col=col)
        fig.update_yaxes(title_text=panel.y_label, row=row, col=col)
    fig.update_layout(title=spec.full_title, height=height or panel_height * spec.rows + 150,
                      template="plotly_white", hovermode="x unified", margin={"l": 70, "r": 20, "t": 80, "b": 60},
                      legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.12 / spec.rows - 0.1,
                              "yanchor": "top", "title": {"text": spec.legend_title, "side": "top"}})
    return fig


def _recolored(history: pd.DataFrame, by: str, model: str | None, styles: dict[str, LineStyle] | None,
               colors: dict[str, str] | None) -> dict[str, LineStyle]:
    """`styles` (default style_map) with the colours of `colors` (label -> colour) where given."""
    styles = styles or style_map(history, by, model)
    return {label: LineStyle((colors or {}).get(label, s.color), s.dash, s.marker) for label, s in styles.items()}


def curve_figure(history: pd.DataFrame, key: str, *, by: str = "method", ema_alpha: float = 1.0,
                 band: str = "minmax", model: str | None = None, title: str | None = None,
                 colors: dict[str, str] | None = None, styles: dict[str, LineStyle] | None = None,
                 acc_scale: float = 1.0, height: int = 460) -> go.Figure:
    """One metric vs step, one line per method/config (mean over seeds) with a band. `colors`
    (label -> colour) overrides the colours of `styles`."""
    spec = figure_spec(history, [key], title=title or title_of(key), titles=[""], cols=1, by=by, ema_alpha=ema_alpha,
                       band=band, model=model, styles=_recolored(history, by, model, styles, colors),
                       acc_scale=acc_scale)
    return plotly_figure(spec, height=height)


def grid_figure(history: pd.DataFrame, keys: list[str], *, titles: list[str] | None = None,
                cols: int = 3, by: str = "method", ema_alpha: float = 1.0, band: str = "minmax",
                model: str | None = None, title: str | None = None, colors: dict[str, str] | None = None,
                styles: dict[str, LineStyle] | None = None, acc_scale: float = 1.0,
                panel_height: int = 300) -> go.Figure:
    """Several metrics as a grid of panels sharing one legend (e.g. DHPO Fig. 1 / Fig. 4)."""
    spec = figure_spec(history, keys, title=title, titles=titles, cols=cols, by=by, ema_alpha=ema_alpha, band=band,
                       model=model, styles=_recolored(history, by, model, styles, colors), acc_scale=acc_scale)
    return plotly_figure(spec, panel_height=panel_height)


def benchmark_keys(history: pd.DataFrame, metric: str = VAL_TEMPLATE,
                   benchmarks: list[str] | None = None, include_avg: bool = True) -> list[str]:
    """val/<b>/acc keys present in the history, in `benchmarks` order (else sorted), avg last."""
    a, b = metric.split("{benchmark}", 1)
    present = {k[len(a):len(k) - len(b)] for k in history["key"].unique()
               if k.startswith(a) and k.endswith(b) and "/" not in k[len(a):len(k) - len(b)]}
    names = [x for x in (benchmarks or sorted(present - {"avg"})) if x in present]
    if include_avg and "avg" in present:
        names.append("avg")
    return [metric.format(benchmark=n) for n in names]


def benchmark_grid(history: pd.DataFrame, *, metric: str = VAL_TEMPLATE,
                   benchmarks: list[str] | None = None, cols: int = 4, **kw) -> go.Figure:
    """Accuracy vs step, one panel per benchmark plus the average (like DHPO Fig. 4)."""
    keys = benchmark_keys(history, metric, benchmarks)
    return grid_figure(history, keys, cols=cols, title=kw.pop("title", "Validation accuracy per benchmark"), **kw)


def clipfrac_grid(history: pd.DataFrame, keys: tuple[str, ...] = CLIP_KEYS, **kw) -> go.Figure:
    """Clip-fraction panels (keys that were logged)."""
    present = set(history["key"].unique())
    keys_ = [k for k in keys if k in present]
    return grid_figure(history, keys_, cols=len(keys_) or 1, title=kw.pop("title", "Clip fractions"), **kw)
