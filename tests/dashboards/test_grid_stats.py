"""A grid's numbers (dashboards/stats/grid_stats.py) on hand-made histories with known answers: the picks on the
selection split, the reported AVG, the intervals, the selection bias and the variance decomposition."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dashboards.report.grid_section import grid_section, short_label
from dashboards.stats.grid_stats import grid_frame, grid_rows, selection_bias, variance_shares
from dashboards.model.table import TableConfig


def history(values: dict, select: dict | None = None, benches=("easy", "hard")) -> pd.DataFrame:
    """values: {(method, config): [per-seed reported value]} (every benchmark gets it at step 10, the
    base 0 at step 0); select: the same for the selection split (select/<bench>/acc)."""
    rows = []
    for (method, config), per_seed in values.items():
        for seed, v in enumerate(per_seed):
            run = f"{config}.s{seed}"
            for b in (*benches, "avg"):  # as the trainer logs them: each benchmark and their mean
                rows.append((run, "tiny", method, config, seed, 0, f"val/{b}/acc", 0.0))
                rows.append((run, "tiny", method, config, seed, 10, f"val/{b}/acc", v))
                if select is not None:
                    rows.append((run, "tiny", method, config, seed, 10, f"select/{b}/acc", select[(method, config)][seed]))
    return pd.DataFrame(rows, columns=["run_id", "model", "method", "config", "seed", "step", "key", "value"])


VALUES = {("GRPO", "grpo-clip0.1"): [0.50, 0.52, 0.54], ("GRPO", "grpo-clip0.2"): [0.60, 0.62, 0.64],
          ("GRPO", "grpo-clip0.3"): [0.55, 0.57, 0.59], ("GSPO", "gspo"): [0.40, 0.41, 0.42]}
# the selection split prefers clip0.3, the reported one clip0.2: picking on the reported split would claim 0.62
SELECT = {("GRPO", "grpo-clip0.1"): [0.3, 0.3, 0.3], ("GRPO", "grpo-clip0.2"): [0.4, 0.4, 0.4],
          ("GRPO", "grpo-clip0.3"): [0.5, 0.5, 0.5], ("GSPO", "gspo"): [0.2, 0.2, 0.2]}


def test_the_pick_is_made_on_the_selection_split_and_the_bias_is_what_the_reported_pick_would_claim():
    frame = grid_frame(history(VALUES, SELECT), TableConfig())
    assert set(frame["split"]) == {"select"}
    rows = grid_rows(frame).set_index("config")
    assert rows.loc["grpo-clip0.3", "rank"] == 1 and rows.loc["grpo-clip0.1", "rank"] == 3
    assert rows.loc["grpo-clip0.2", "best_reported"] and not rows.loc["grpo-clip0.3", "best_reported"]
    assert rows.loc["grpo-clip0.3", "selection"] == pytest.approx(0.5)
    assert rows.loc["grpo-clip0.3", "reported"] == pytest.approx(0.57)
    half = stats.t.ppf(0.975, 2) * np.std([0.55, 0.57, 0.59], ddof=1) / math.sqrt(3)
    assert rows.loc["grpo-clip0.3", "reported_ci"] == pytest.approx(half)
    bias = selection_bias(grid_rows(frame)).set_index("method")
    assert list(bias.index) == ["GRPO"]  # GSPO has one configuration: nothing to pick
    assert bias.loc["GRPO", "picked"] == "grpo-clip0.3" and bias.loc["GRPO", "best_reported_config"] == "grpo-clip0.2"
    assert bias.loc["GRPO", "bias"] == pytest.approx(0.05)


def test_without_a_selection_split_the_reported_benchmarks_pick_and_it_says_so():
    frame = grid_frame(history(VALUES), TableConfig())
    assert set(frame["split"]) == {"reported"}
    rows = grid_rows(frame).set_index("config")
    assert rows.loc["grpo-clip0.2", "rank"] == 1 and rows.loc["grpo-clip0.2", "best_reported"]
    assert selection_bias(grid_rows(frame))["bias"].tolist() == [0.0]
    with pytest.raises(ValueError, match="select_on: 'select' needs select/ values"):
        grid_frame(history(VALUES), TableConfig(select_on="select"))
    reported = grid_frame(history(VALUES, SELECT), TableConfig(select_on="reported"))
    assert set(reported["split"]) == {"reported"}


def test_the_variance_decomposition_on_known_numbers():
    # configs shift the mean by 0.1 apart, seeds by 0.02: MS_between = 3 * var(means) = 3 * 0.0025 * ...
    frame = grid_frame(history(VALUES), TableConfig())
    (grpo,) = [s for s in variance_shares(frame) if s.method == "GRPO"]
    groups = [np.array(VALUES[("GRPO", c)]) for c in ("grpo-clip0.1", "grpo-clip0.2", "grpo-clip0.3")]
    grand = np.concatenate(groups).mean()
    ms_b = sum(3 * (g.mean() - grand) ** 2 for g in groups) / 2
    ms_w = sum(((g - g.mean()) ** 2).sum() for g in groups) / 6
    sigma_c = (ms_b - ms_w) / 3
    assert (grpo.configs, grpo.trials) == (3, 9)
    assert grpo.config_share == pytest.approx(sigma_c / (sigma_c + ms_w))
    assert grpo.f == pytest.approx(ms_b / ms_w) and grpo.p == pytest.approx(stats.f.sf(ms_b / ms_w, 2, 6))
    assert grpo.spread == pytest.approx(0.10)
    noise = {("A", f"a-{i}"): [0.5 + d for d in (-0.1, 0.0, 0.1)] for i in range(3)}  # configs identical
    (flat,) = variance_shares(grid_frame(history(noise), TableConfig()))
    assert flat.config_share == 0.0 and flat.p == pytest.approx(1.0)


@pytest.mark.slow
def test_the_section_writes_its_table_and_figures(tmp_path):
    families = {("SSPO (atanlog)", "sspo-atanlog-tn0.3-tp0.2"): [0.5, 0.6], ("SSPO (atanlog)", "sspo-atanlog-tn0.6-tp0.5"): [0.4, 0.5],
                ("SSPO (siglog)", "sspo-siglog-tn0.3-tp0.2"): [0.3, 0.4], ("SSPO (siglog)", "sspo-siglog-tn0.6-tp0.5"): [0.2, 0.3]}
    section = grid_section(history(families), TableConfig())
    paths = section.write(tmp_path, ["md", "png", "pdf"])
    md = paths["grid"].read_text()
    assert "| SSPO (atanlog) | sspo-atanlog-tn0.3-tp0.2 | 2 | 55.0 ± 63.5 | 55.0 ± 63.5 | 1 | picked, best reported | – | – |" in md
    assert "picked on the reported benchmarks (not held out)" in md
    for name in ("grid_sensitivity", "grid_heatmap"):
        assert paths[f"png:{name}"].read_bytes()[:4] == b"\x89PNG" and paths[f"pdf:{name}"].stat().st_size > 1000
    assert section._families()["SSPO"][1] == ["tn0.3-tp0.2", "tn0.6-tp0.5"]
    assert "data:image/png;base64," in section.html(paths)
    assert short_label("grpo-clip0.1-0.1", "GRPO", ["grpo-clip0.1-0.1", "grpo-clip0.2-0.2"]) == "clip0.1-0.1"
    assert grid_section(history({("GSPO", "gspo"): [0.4, 0.5]}), TableConfig()) is None  # not a grid


def test_the_mechanisms_are_each_configurations_mean_over_steps_and_seeds():
    h = history(VALUES)
    extra = []
    for run, config, seed in h[["run_id", "config", "seed"]].drop_duplicates().itertuples(index=False):
        for step, w in ((1, 0.90), (2, 0.96)):  # per trial: mean 0.93 (+ 0.01 per seed)
            extra.append((run, "tiny", "GRPO" if config.startswith("grpo") else "GSPO", config, seed, step,
                          "actor/gate_weight", w + 0.01 * seed))
    h = pd.concat([h, pd.DataFrame(extra, columns=h.columns)], ignore_index=True)
    rows = grid_rows(grid_frame(h, TableConfig())).set_index("config")
    assert rows.loc["grpo-clip0.2", "gate_weight"] == pytest.approx(0.94)  # seeds 0, 1, 2: 0.93 + 0.01
    assert np.isnan(rows.loc["grpo-clip0.2", "clip_fraction"])
