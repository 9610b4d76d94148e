"""Plotly training-curve figures from a sweep's history frame (see dashboards/collect.py).

    from dashboards.curves import curve_figure, grid_figure, benchmark_grid, clipfrac_grid
    fig = curve_figure(data.history, "actor/entropy", ema_alpha=0.02, band="minmax")
    fig = benchmark_grid(data.history)          # one panel per val/<benchmark>/acc (DHPO Fig. 4)
    fig.write_html("entropy.html")

One line per method (by="method") or per hyper-parameter config (by="config"): the mean over
seeds at each step, with a band: "minmax" (min..max over seeds), "std" (mean ± 1 std), "seeds"
(thin per-seed lines, as SSPO Fig. 2) or "none". With several models in the frame, pass model=...
or lines are labelled "model / method".

Smoothing convention (SSPO App. B used alpha = 0.02): an exponential moving average over the
logged points of each run, s_t = alpha * x_t + (1 - alpha) * s_{t-1}, debiased for the first points
(pandas `ewm(alpha, adjust=True)`, like TensorBoard's debiasing), applied per run BEFORE averaging
over seeds, so the band is the spread of the smoothed runs. alpha = 1 means no smoothing; smaller
alpha smooths more. (TensorBoard/W&B's "smoothing 0.98" is alpha = 0.02.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from contract.metrics import CLIP_FRACTIONS

BANDS = ("minmax", "std", "seeds", "none")
CLIP_KEYS = CLIP_FRACTIONS
TITLES = {"actor/entropy": "Entropy", "response_length/mean": "Mean response length",
          "response_length/max": "Max response length", "reward/mean": "Reward",
          "val/avg/acc": "Average accuracy", "actor/pg_clipfrac": "Clip fraction",
          "actor/clipfrac_token": "Clip fraction (token)", "actor/clipfrac_seq": "Clip fraction (sequence)",
          "actor/ppo_kl": "Approx. KL", "actor/grad_norm": "Gradient norm", "actor/mix_weight": "Mixing weight"}
PALETTE = qualitative.Plotly + qualitative.D3


def title_of(key: str) -> str:
    if key in TITLES:
        return TITLES[key]
    parts = key.split("/")
    if len(parts) == 3 and parts[0] == "val":
        return f"{parts[1]} accuracy"
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


def color_map(history: pd.DataFrame, by: str = "method", model: str | None = None) -> dict[str, str]:
    """A stable color per line label, in first-appearance order. With `model` given (figures of
    one model) the labels are the plain `by` values of the WHOLE frame, so a method keeps its
    color across the models' figures; without, labels are as the figures name them."""
    h, col = (history, by) if model is not None else _groups(history, by, None)
    return {str(g): PALETTE[i % len(PALETTE)] for i, g in enumerate(pd.unique(h[col]))}


def aggregate(history: pd.DataFrame, key: str, *, by: str = "method", ema_alpha: float = 1.0,
              model: str | None = None) -> dict[str, pd.DataFrame]:
    """label -> frame indexed by step with columns mean, std, min, max, n and one per run."""
    h, col = _groups(history, by, model)
    h = h[(h["key"] == key).to_numpy()]
    out = {}
    for label, part in h.groupby(col, sort=False, observed=True):
        wide = part.pivot_table(index="step", columns="run_id", values="value", aggfunc="last", observed=True)
        if ema_alpha < 1:
            wide = wide.ewm(alpha=ema_alpha, adjust=True, ignore_na=True).mean().where(wide.notna())
        stats = pd.DataFrame({"mean": wide.mean(axis=1), "std": wide.std(axis=1, ddof=1).fillna(0.0),
                              "min": wide.min(axis=1), "max": wide.max(axis=1),
                              "n": wide.notna().sum(axis=1)})
        out[str(label)] = pd.concat([stats, wide], axis=1)
    return out


def _rgba(color: str, a: float) -> str:
    c = color.lstrip("#")
    r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{a})"


def _add_traces(fig: go.Figure, agg: dict[str, pd.DataFrame], colors: dict[str, str], band: str,
                row: int | None, col: int | None, show_legend: bool) -> None:
    where = {} if row is None else {"row": row, "col": col}
    for label, df in agg.items():
        color = colors.get(label, PALETTE[len(colors) % len(PALETTE)])
        x = df.index.to_numpy()
        if band in ("minmax", "std"):
            lo, hi = (df["min"], df["max"]) if band == "minmax" else (df["mean"] - df["std"], df["mean"] + df["std"])
            fig.add_trace(go.Scatter(x=x, y=hi.to_numpy(), mode="lines", line={"width": 0}, hoverinfo="skip",
                                     legendgroup=label, showlegend=False), **where)
            fig.add_trace(go.Scatter(x=x, y=lo.to_numpy(), mode="lines", line={"width": 0}, fill="tonexty",
                                     fillcolor=_rgba(color, 0.18), hoverinfo="skip", legendgroup=label,
                                     showlegend=False), **where)
        elif band == "seeds":
            for run in [c for c in df.columns if c not in ("mean", "std", "min", "max", "n")]:
                fig.add_trace(go.Scatter(x=x, y=df[run].to_numpy(), mode="lines", hoverinfo="skip",
                                         line={"width": 0.7, "color": _rgba(color, 0.35)}, legendgroup=label,
                                         showlegend=False, connectgaps=True), **where)
        fig.add_trace(go.Scatter(x=x, y=df["mean"].to_numpy(), mode="lines", name=label, legendgroup=label,
                                 showlegend=show_legend, line={"color": color, "width": 2}, connectgaps=True,
                                 customdata=df["n"].to_numpy(),
                                 hovertemplate=f"{label}<br>step %{{x}}<br>%{{y:.4g}} (n=%{{customdata}})<extra></extra>"),
                      **where)


def curve_figure(history: pd.DataFrame, key: str, *, by: str = "method", ema_alpha: float = 1.0,
                 band: str = "minmax", model: str | None = None, title: str | None = None,
                 colors: dict[str, str] | None = None, height: int = 420) -> go.Figure:
    """One metric vs step, one line per method/config (mean over seeds) with a band."""
    _check(ema_alpha, band, by)
    colors = colors or color_map(history, by, model)
    fig = go.Figure()
    _add_traces(fig, aggregate(history, key, by=by, ema_alpha=ema_alpha, model=model), colors, band,
                None, None, True)
    smooth = f" (EMA α={ema_alpha:g})" if ema_alpha < 1 else ""
    fig.update_layout(title=(title or title_of(key)) + smooth, xaxis_title="step", yaxis_title=key,
                      height=height, template="plotly_white", hovermode="x unified",
                      margin={"l": 60, "r": 20, "t": 60, "b": 50})
    return fig


def grid_figure(history: pd.DataFrame, keys: list[str], *, titles: list[str] | None = None,
                cols: int = 3, by: str = "method", ema_alpha: float = 1.0, band: str = "minmax",
                model: str | None = None, title: str | None = None,
                colors: dict[str, str] | None = None, panel_height: int = 300) -> go.Figure:
    """Several metrics as a grid of panels sharing one legend (e.g. DHPO Fig. 1 / Fig. 4)."""
    _check(ema_alpha, band, by)
    if not keys:
        raise ValueError("grid_figure: no metric keys to plot")
    colors = colors or color_map(history, by, model)
    cols = max(1, min(cols, len(keys)))
    nrows = -(-len(keys) // cols)
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=titles or [title_of(k) for k in keys],
                        horizontal_spacing=0.07, vertical_spacing=0.5 / nrows if nrows > 1 else 0.1)
    for i, key in enumerate(keys):
        agg = aggregate(history, key, by=by, ema_alpha=ema_alpha, model=model)
        _add_traces(fig, agg, colors, band, i // cols + 1, i % cols + 1, show_legend=(i == 0))
    smooth = f" (EMA α={ema_alpha:g})" if ema_alpha < 1 else ""
    fig.update_xaxes(title_text="step", row=nrows)
    fig.update_layout(title=(title or "") + smooth if (title or smooth) else None,
                      height=panel_height * nrows + 90, template="plotly_white",
                      margin={"l": 60, "r": 20, "t": 80, "b": 50})
    return fig


def benchmark_keys(history: pd.DataFrame, metric: str = "val/{benchmark}/acc",
                   benchmarks: list[str] | None = None, include_avg: bool = True) -> list[str]:
    """val/<b>/acc keys present in the history, in `benchmarks` order (else sorted), avg last."""
    a, b = metric.split("{benchmark}", 1)
    present = {k[len(a):len(k) - len(b)] for k in history["key"].unique()
               if k.startswith(a) and k.endswith(b) and "/" not in k[len(a):len(k) - len(b)]}
    names = [x for x in (benchmarks or sorted(present - {"avg"})) if x in present]
    if include_avg and "avg" in present:
        names.append("avg")
    return [metric.format(benchmark=n) for n in names]


def benchmark_grid(history: pd.DataFrame, *, metric: str = "val/{benchmark}/acc",
                   benchmarks: list[str] | None = None, cols: int = 4, **kw) -> go.Figure:
    """Accuracy vs step, one panel per benchmark plus the average (like DHPO Fig. 4)."""
    keys = benchmark_keys(history, metric, benchmarks)
    return grid_figure(history, keys, cols=cols, title=kw.pop("title", "Validation accuracy per benchmark"), **kw)


def clipfrac_grid(history: pd.DataFrame, keys: tuple[str, ...] = CLIP_KEYS, **kw) -> go.Figure:
    """Clip-fraction panels (keys that were logged)."""
    present = set(history["key"].unique())
    keys_ = [k for k in keys if k in present]
    return grid_figure(history, keys_, cols=len(keys_) or 1, title=kw.pop("title", "Clip fractions"), **kw)
