"""Curve aggregation (mean/band over seeds), EMA convention and figure structure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboards import curves as cv


def hist(values: dict[tuple[str, int], list[float]], key: str = "actor/entropy", model: str = "m") -> pd.DataFrame:
    recs = []
    for (method, seed), vals in values.items():
        for step, v in enumerate(vals, start=1):
            recs.append(dict(run_id=f"{method}-{seed}", trial_id=f"{method}.s{seed}", method=method, config=method,
                             seed=seed, model=model, key=key, step=step, value=v))
    return pd.DataFrame(recs)


def test_ema_convention():
    x = np.array([1.0, 0.0, 0.0, 4.0])
    assert np.allclose(cv.ema(x, 1.0), x)  # alpha = 1: no smoothing
    a = 0.5  # debiased EMA: weights (1-a)^k on past points, normalised
    w = lambda n: np.array([(1 - a) ** k for k in range(n)][::-1])  # noqa: E731
    exp = [np.dot(w(i + 1), x[: i + 1]) / w(i + 1).sum() for i in range(4)]
    assert np.allclose(cv.ema(x, a), exp)
    assert np.isnan(cv.ema(np.array([1.0, np.nan, 3.0]), 0.1)[1])


def test_aggregate_mean_and_band_over_seeds():
    h = hist({("A", 0): [1, 2, 3], ("A", 1): [3, 4, 5], ("B", 0): [0, 0, 0]})
    agg = cv.aggregate(h, "actor/entropy")
    assert list(agg) == ["A", "B"]
    a = agg["A"]
    assert a["mean"].tolist() == [2, 3, 4] and a["min"].tolist() == [1, 2, 3] and a["max"].tolist() == [3, 4, 5]
    assert a["n"].tolist() == [2, 2, 2] and a["std"].iloc[0] == pytest.approx(np.sqrt(2))
    smooth = cv.aggregate(h, "actor/entropy", ema_alpha=0.5)["A"]
    assert smooth["mean"].iloc[0] == 2 and smooth["mean"].iloc[-1] < 4  # smoothed per run, then averaged


def test_figures_have_one_line_per_method_and_bands():
    h = hist({("A", 0): [1, 2, 3], ("A", 1): [3, 4, 5], ("B", 0): [0, 0, 0], ("B", 1): [1, 1, 1]})
    fig = cv.curve_figure(h, "actor/entropy", band="minmax")
    named = [t for t in fig.data if t.showlegend is not False]
    assert [t.name for t in named] == ["A", "B"] and len(fig.data) == 6  # 2 band traces per line
    assert [t.fill for t in fig.data].count("tonexty") == 2
    assert len(cv.curve_figure(h, "actor/entropy", band="none").data) == 2
    assert len(cv.curve_figure(h, "actor/entropy", band="seeds").data) == 6  # 2 thin + 1 mean each
    assert "EMA" in cv.curve_figure(h, "actor/entropy", ema_alpha=0.02).layout.title.text
    with pytest.raises(ValueError, match="ema_alpha"):
        cv.curve_figure(h, "actor/entropy", ema_alpha=0)
    with pytest.raises(ValueError, match="band"):
        cv.curve_figure(h, "actor/entropy", band="iqr")


def test_grid_panels_and_shared_legend(known_data):
    keys = cv.benchmark_keys(known_data.history, benchmarks=["hard", "easy", "medium"])
    assert keys == ["val/hard/acc", "val/easy/acc", "val/medium/acc", "val/avg/acc"]
    fig = cv.benchmark_grid(known_data.history, benchmarks=["hard", "easy", "medium"], model="m-small")
    assert [a.text for a in fig.layout.annotations] == ["hard accuracy", "easy accuracy", "medium accuracy",
                                                        "Average accuracy"]
    legend = [t.name for t in fig.data if t.showlegend]
    assert legend == ["GRPO", "GSPO", "DHPO-E"]
    by_cfg = cv.curve_figure(known_data.history, "val/avg/acc", by="config", model="m-small", band="none")
    assert len(by_cfg.data) == 4  # one line per config
    both = cv.curve_figure(known_data.history, "val/avg/acc", band="none")
    assert {t.name for t in both.data} == {f"{m} / {x}" for m in ("m-small", "m-large") for x in ("GRPO", "GSPO", "DHPO-E")}
    clip = cv.clipfrac_grid(known_data.history, model="m-small")
    assert len(clip.layout.annotations) == 2  # clipfrac_seq was not logged


def test_colors_stable_across_figures(known_data):
    colors = cv.color_map(known_data.history, "method", model="m-small")
    f1 = cv.curve_figure(known_data.history, "actor/entropy", model="m-small", colors=colors, band="none")
    f2 = cv.curve_figure(known_data.history, "val/avg/acc", model="m-large", colors=colors, band="none")
    assert {t.name: t.line.color for t in f1.data} == {t.name: t.line.color for t in f2.data}
