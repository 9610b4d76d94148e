"""Static paper figures (dashboards/figures/static.py): one mean line per method per panel, bands,
unsmoothed evaluation points, axis titles, the legend's band text, grayscale-distinct styles, the
PNG/PDF/SVG files (they open; deterministic) and matplotlib's cache kept out of $HOME."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from contract.metrics import ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG
from dashboards.figures import training_curves as cv
from dashboards.figures import static as sf

REPO = Path(__file__).resolve().parents[2]
KEYS = [ENTROPY, RESPONSE_LENGTH_MEAN, VAL_AVG]
METHODS = ["GRPO", "GSPO", "DHPO-E"]


@pytest.fixture(scope="module")
def spec(known_data):
    return cv.figure_spec(known_data.history, KEYS, name="dynamics", title="Training dynamics", model="m-small",
                          by="config", ema_alpha=0.3, acc_scale=100)


@pytest.fixture(scope="module")
def method_spec(known_data):
    return cv.figure_spec(known_data.history, KEYS, name="dynamics", model="m-small", ema_alpha=0.3, acc_scale=100)


def mean_lines(ax) -> list:
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def test_one_mean_line_per_method_per_panel_with_axis_titles(method_spec, tmp_path):
    fig = sf.static_figure(method_spec, tmp_path / "mpl")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 3
    for ax, key in zip(axes, KEYS):
        assert [ln.get_label() for ln in mean_lines(ax)] == METHODS, key
        assert ax.get_xlabel() == "training step" and ax.get_ylabel() == cv.y_label(key, 100)
        assert len(ax.collections) == len(METHODS)  # one min-max band each
    assert [ax.get_ylabel() for ax in axes] == ["entropy (nats/token)", "response length (tokens)", "accuracy (%)"]
    positions = [ax.get_position() for ax in axes]  # one row, left to right (DHPO Fig. 1)
    assert positions[0].x0 < positions[1].x0 < positions[2].x0 and len({round(p.y0, 3) for p in positions}) == 1


def test_legend_names_the_methods_and_the_band(method_spec, tmp_path):
    fig = sf.static_figure(method_spec, tmp_path / "mpl")
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == METHODS + ["band: min–max over the 2–4 runs"]  # GRPO: 2 configs x 2 seeds
    assert legend.get_title().get_text() == "lines: mean over 2–4 runs"


def test_line_styles_differ_in_grayscale(method_spec, tmp_path):
    fig = sf.static_figure(method_spec, tmp_path / "mpl")
    for ax in fig.axes:
        styles = [(ln.get_linestyle(), ln.get_marker()) for ln in mean_lines(ax)]
        assert styles == [("-", "o"), ("--", "s"), (":", "D")]  # differ in dash AND marker, not colour alone
    assert len(set(map(str, sf.DASHES.values()))) == len(cv.DASHES) and set(sf.DASHES) == set(cv.DASHES)
    assert len(set(sf.MARKERS.values())) == len(cv.MARKERS) and set(sf.MARKERS) == set(cv.MARKERS)


def test_evaluation_points_are_not_smoothed(spec, known_data, tmp_path):
    """The last plotted accuracy point = the unsmoothed mean over seeds of the final evaluation (x100)."""
    fig = sf.static_figure(spec, tmp_path / "mpl")
    acc_ax = fig.axes[2]
    h = known_data.history
    for line in mean_lines(acc_ax):
        final = h[(h["config"] == line.get_label()) & (h["key"] == VAL_AVG) & (h["step"] == h["step"].max())]
        assert line.get_xdata()[-1] == 10 and line.get_ydata()[-1] == pytest.approx(100 * final["value"].mean())
    ent = mean_lines(fig.axes[0])[0]  # per-step: smoothed (debiased EMA per run, then the mean)
    raw = h[(h["config"] == ent.get_label()) & (h["key"] == ENTROPY)].pivot(index="step", columns="run_id",
                                                                            values="value")
    smooth = np.mean([cv.ema(raw[c].to_numpy(), 0.3)[-1] for c in raw], axis=0)
    assert ent.get_ydata()[-1] == pytest.approx(smooth) and ent.get_ydata()[-1] != pytest.approx(raw.iloc[-1].mean())


def test_seed_band_draws_thin_unlabelled_lines(known_data, tmp_path):
    spec = cv.figure_spec(known_data.history, [VAL_AVG], model="m-small", band="seeds")
    ax = sf.static_figure(spec, tmp_path / "mpl").axes[0]
    assert [ln.get_label() for ln in mean_lines(ax)] == METHODS
    assert len(ax.get_lines()) == len(METHODS) + 8  # 8 runs of m-small, one thin line each


@pytest.mark.slow
def test_files_open_and_are_deterministic(spec, method_spec, tmp_path):
    paths = sf.write_static_figures([spec], tmp_path / "a", ["html", "png", "pdf", "svg"])
    assert sorted(paths) == ["pdf:dynamics", "png:dynamics", "svg:dynamics"]
    assert all(p.parent == tmp_path / "a" / "figures" and p.name.startswith("dynamics.") for p in paths.values())
    with Image.open(paths["png:dynamics"]) as im:
        im.load()
        w, h = sf.PANEL_SIZE[0] * 3, sf.PANEL_SIZE[1] + 0.5
        assert im.format == "PNG" and abs(im.size[0] - w * sf.DPI) <= 1 and abs(im.size[1] - h * sf.DPI) <= 1
        assert len(set(np.asarray(im.convert("L")).ravel().tolist())) > 20  # drawn, not blank
    assert paths["pdf:dynamics"].read_bytes().startswith(b"%PDF-") and paths["pdf:dynamics"].stat().st_size > 5000
    assert b"<svg" in paths["svg:dynamics"].read_bytes()[:2000]
    again = sf.write_static_figures([spec], tmp_path / "b", ["png", "pdf", "svg"])
    for key, p in paths.items():
        assert p.read_bytes() == again[key].read_bytes(), key  # no dates, fixed ids
    assert sf.write_static_figures([spec], tmp_path / "c", ["html", "md"]) == {}


@pytest.mark.slow
def test_matplotlib_writes_nothing_under_home(known_store, tmp_path):
    """A fresh interpreter without MPLCONFIGDIR: matplotlib's config and font cache land in the
    report folder (<out>/.matplotlib), nothing under $HOME or the XDG folders."""
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "report"
    script = textwrap.dedent(f"""
        from dashboards.collect.sweep_runs import collect
        from dashboards.report.writer import ReportConfig, write_report
        data = collect({known_store.sweep!r}, tracking_uri={known_store.uri!r})
        paths = write_report(data, {str(out)!r}, ReportConfig(formats=["png"], benchmark_grid=False, clipfrac=False))
        import matplotlib
        print(sorted(paths), matplotlib.get_cachedir(), matplotlib.get_configdir())
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cache = str((out / ".matplotlib").resolve())
    assert proc.stdout.split() == ["['png:aggregates',", "'png:grid_sensitivity',", "'png:m-large-dynamics',",
                                   "'png:m-small-dynamics',", "'png:profiles']", cache, cache]
    assert list((out / ".matplotlib").glob("fontlist-*.json")), "the font cache is in the report folder"
    assert [p for p in home.rglob("*")] == []


@pytest.mark.slow
def test_figures_drawn_in_a_forked_process_are_the_same_files(known_data, tmp_path):
    """`sweep report` draws its static figures in a forked process beside the rest: the same files, byte for
    byte, and the same {fmt:name: path} as drawn in place."""
    from dashboards.report.writer import ReportConfig, figure_specs
    from dashboards.figures.static import draw_in_background, static_draws, write_static_figures

    specs = figure_specs(known_data.history, ReportConfig(), model="m-small")
    here = write_static_figures(specs, tmp_path / "here", ["png", "pdf"])
    join = draw_in_background(static_draws(specs), tmp_path / "forked", ["png", "pdf"])
    there = join()
    assert list(there) == list(here) and len(here) == 2 * len(specs)
    for key, path in here.items():
        assert there[key] == tmp_path / "forked" / path.relative_to(tmp_path / "here")
        assert there[key].read_bytes() == path.read_bytes(), key
