"""Curve aggregation (mean/band over seeds), EMA convention (per-step metrics only), axis labels with
units, the legend's band text, grayscale-distinct line styles and figure structure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contract.metrics import ENTROPY, EVAL_METRICS, RESPONSE_LENGTH_MEAN, VAL_AVG, eval_key, val_key
from dashboards.figures import training_curves as cv


def hist(values: dict[tuple[str, int], list[float]], key: str = ENTROPY, model: str = "m",
         steps: list[int] | None = None) -> pd.DataFrame:
    recs = []
    for (method, seed), vals in values.items():
        for step, v in zip(steps or range(1, len(vals) + 1), vals):
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
    agg = cv.aggregate(h, ENTROPY)
    assert list(agg) == ["A", "B"]
    a = agg["A"]
    assert a["mean"].tolist() == [2, 3, 4] and a["min"].tolist() == [1, 2, 3] and a["max"].tolist() == [3, 4, 5]
    assert a["n"].tolist() == [2, 2, 2] and a["std"].iloc[0] == pytest.approx(np.sqrt(2))
    smooth = cv.aggregate(h, ENTROPY, ema_alpha=0.5)["A"]
    assert smooth["mean"].iloc[0] == 2 and smooth["mean"].iloc[-1] < 4  # smoothed per run, then averaged


def test_figures_have_one_line_per_method_and_bands():
    h = hist({("A", 0): [1, 2, 3], ("A", 1): [3, 4, 5], ("B", 0): [0, 0, 0], ("B", 1): [1, 1, 1]})
    fig = cv.curve_figure(h, ENTROPY, band="minmax")
    named = [t for t in fig.data if t.showlegend is not False]
    assert [t.name for t in named] == ["A", "B"] and len(fig.data) == 6  # 2 band traces per line
    assert fig.layout.legend.title.text == "lines: mean over 2 seeds; band: min–max over the 2 seeds"
    assert [t.fill for t in fig.data].count("tonexty") == 2
    assert len(cv.curve_figure(h, ENTROPY, band="none").data) == 2
    assert len(cv.curve_figure(h, ENTROPY, band="seeds").data) == 6  # 2 thin + 1 mean each
    assert "EMA" in cv.curve_figure(h, ENTROPY, ema_alpha=0.02).layout.title.text
    with pytest.raises(ValueError, match="ema_alpha"):
        cv.curve_figure(h, ENTROPY, ema_alpha=0)
    with pytest.raises(ValueError, match="band"):
        cv.curve_figure(h, ENTROPY, band="iqr")


def test_grid_panels_and_shared_legend(known_data):
    keys = cv.benchmark_keys(known_data.history, benchmarks=["hard", "easy", "medium"])
    assert keys == ["val/hard/acc", "val/easy/acc", "val/medium/acc", VAL_AVG]
    fig = cv.benchmark_grid(known_data.history, benchmarks=["hard", "easy", "medium"], model="m-small")
    assert [a.text for a in fig.layout.annotations] == ["hard accuracy", "easy accuracy", "medium accuracy",
                                                        "Average accuracy"]
    legend = [t.name for t in fig.data if t.showlegend]
    assert legend == ["GRPO", "GSPO", "DHPO-E"]
    by_cfg = cv.curve_figure(known_data.history, VAL_AVG, by="config", model="m-small", band="none")
    assert len(by_cfg.data) == 4  # one line per config
    both = cv.curve_figure(known_data.history, VAL_AVG, band="none")
    assert {t.name for t in both.data} == {f"{m} / {x}" for m in ("m-small", "m-large") for x in ("GRPO", "GSPO", "DHPO-E")}
    clip = cv.clipfrac_grid(known_data.history, model="m-small")
    assert len(clip.layout.annotations) == 2  # clipfrac_seq was not logged


def test_colors_stable_across_figures(known_data):
    colors = cv.color_map(known_data.history, "method", model="m-small")
    f1 = cv.curve_figure(known_data.history, ENTROPY, model="m-small", colors=colors, band="none")
    f2 = cv.curve_figure(known_data.history, VAL_AVG, model="m-large", colors=colors, band="none")
    assert {t.name: t.line.color for t in f1.data} == {t.name: t.line.color for t in f2.data}


def test_evaluation_points_are_never_smoothed_per_step_metrics_are():
    """ema_alpha smooths per-step training metrics only: an evaluation curve's points are the raw means."""
    runs = {("A", 0): [0.2, 0.5, 0.3, 0.9], ("A", 1): [0.4, 0.7, 0.5, 0.7]}
    for key in (VAL_AVG, val_key("hard"), eval_key("aime24", "avg_at_k"), eval_key("avg", "pass_at_k")):
        agg = cv.aggregate(hist(runs, key, steps=[0, 20, 40, 60]), key, ema_alpha=0.1)["A"]
        assert agg["mean"].tolist() == pytest.approx([0.3, 0.6, 0.4, 0.8]), key  # last point: the final eval's mean
        assert cv.is_evaluation(key)
    step = cv.aggregate(hist(runs), ENTROPY, ema_alpha=0.1)["A"]
    assert step["mean"].iloc[-1] == pytest.approx(np.mean([cv.ema(np.array(v), 0.1)[-1] for v in runs.values()]))
    assert step["mean"].iloc[-1] < 0.75  # smoothed: below the raw last mean 0.8


def test_accuracies_on_the_table_scale_and_axis_titles_with_units():
    h = pd.concat([hist({("A", 0): [1.0, 0.8], ("B", 0): [1.2, 0.9]}),
                   hist({("A", 0): [100.0, 120.0], ("B", 0): [90.0, 95.0]}, RESPONSE_LENGTH_MEAN),
                   hist({("A", 0): [0.30, 0.523], ("B", 0): [0.2, 0.4]}, VAL_AVG, steps=[0, 10])])
    spec = cv.figure_spec(h, [ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG], acc_scale=100, ema_alpha=0.5)
    assert [p.y_label for p in spec.panels] == ["entropy (nats/token)", "response length (tokens)", "accuracy (%)"]
    assert spec.panels[2].lines["A"]["mean"].tolist() == pytest.approx([30.0, 52.3])  # x100, like the table
    assert spec.panels[1].lines["A"]["mean"].iloc[0] == 100.0  # not an accuracy: not scaled
    assert [p.smoothed for p in spec.panels] == [True, True, False]
    assert spec.smoothing == "EMA α=0.5 on per-step metrics; evaluations unsmoothed"
    assert cv.y_label(VAL_AVG, 1) == "accuracy (fraction)" and cv.y_label(eval_key("x", "avg_at_k"), 100) == "Avg@k (%)"
    assert set(cv.EVAL_LABELS) == set(EVAL_METRICS)  # every checkpoint-evaluation metric has a label
    fig = cv.plotly_figure(spec)
    xs = [fig.layout[a].title.text for a in ("xaxis", "xaxis2", "xaxis3")]
    ys = [fig.layout[a].title.text for a in ("yaxis", "yaxis2", "yaxis3")]
    assert xs == ["training step"] * 3 and ys == [p.y_label for p in spec.panels]
    assert [fig.layout[a].domain[0] < fig.layout[b].domain[0] for a, b in (("xaxis", "xaxis2"), ("xaxis2", "xaxis3"))] \
        == [True, True] and fig.layout.yaxis.domain == fig.layout.yaxis3.domain  # one row of three panels


@pytest.mark.parametrize("band,text", [("minmax", "band: min–max over the 3 seeds"),
                                       ("std", "band: mean ± 1 std over the 3 seeds"),
                                       ("seeds", "thin lines: the 3 single seeds"), ("none", None)])
def test_the_legend_says_what_the_band_is(band, text):
    h = hist({(m, s): [s + 1.0, s + 2.0] for m in ("A", "B") for s in range(3)})
    spec = cv.figure_spec(h, [ENTROPY], band=band)
    assert spec.band_text == text and spec.line_text == "mean over 3 seeds"
    assert cv.plotly_figure(spec).layout.legend.title.text == "lines: mean over 3 seeds" + (f"; {text}" if text else "")


def test_runs_not_seeds_when_a_line_mixes_configs(known_data):
    spec = cv.figure_spec(known_data.history, [VAL_AVG], model="m-small")  # GRPO: 2 configs x 2 seeds
    assert spec.line_text == "mean over 2–4 runs" and spec.band_text == "band: min–max over the 2–4 runs"
    one = cv.figure_spec(known_data.history, [VAL_AVG], model="m-small", by="config")
    assert one.line_text == "mean over 2 seeds"


def test_line_styles_differ_beyond_colour():
    """Readable in grayscale: every method's (dash, marker) differs; the first 6 differ in dash alone."""
    h = hist({(f"M{i}", 0): [1.0, 2.0] for i in range(10)})
    styles = cv.style_map(h)
    pairs = [(s.dash, s.marker) for s in styles.values()]
    assert len(set(pairs)) == 10 and len({d for d, _ in pairs[:6]}) == 6 and len({m for _, m in pairs[:8]}) == 8
    fig = cv.curve_figure(h, ENTROPY, band="none")
    assert [(t.line.dash, t.marker.symbol) for t in fig.data] == pairs and all("markers" in t.mode for t in fig.data)
