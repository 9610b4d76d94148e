"""The report's compute-curves section: a sweep's evaluation curves against its compute axis, fitted and written.

    from dashboards.report.compute_section import compute_section
    section, notes = compute_section(history, cfg.compute_curves, baselines=["GRPO"])   # None: nothing to fit
    paths = section.write(out_dir, formats)    # curves.md, curves.tex, curves.csv, curves_seeds.csv
    draws = section.draws()                    # figures/compute_curves.png/.pdf (dashboards/figures/static.py)
    html = section.html(fig_html)              # the HTML report's section (plotly)
    metrics = section.run_metrics()            # {"curves/<model>/<method>/A": ...} for the parent run

``history`` is the report's long frame (dashboards/collect/sweep_runs.py: run_id, method, seed, model, key, step, value).
A trial's curve is its ``metric`` (val/avg/acc) at each evaluation step, against the compute axis
``x`` (contract/metrics.py COMPUTE_AXES): the step itself, or the compute key's cumulative value at that
step (the last one logged at or before it; 0 before the first training step, i.e. at the base's evaluation).
Trials whose compute key is not logged (a store recorded before the compute axes) are left out with a note.
A method with several configs in ``history`` (a grid the table does not reduce to one per method) is fitted
per config, labelled ``method [config]``.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from contract.metrics import COMPUTE_AXES
from dashboards.stats.compute_curves import StudyCurves, fit_study
from dashboards.stats.compute_fit import OK
from dashboards.collect.curve_files import MIN_COMPUTES, MIN_POINTS
from dashboards.tables.compute import curves_csv, curves_latex, curves_markdown, fit_cells, seeds_csv
from dashboards.model.report import CurvesConfig

MAX_FAMILIES = 60
"""More curve families (model x method, or method x config) than this are not fitted: ~0.2 s each (pooled, per
seed, extrapolation), a 2,000-trial grid reported per config would spend minutes on fits nobody reads."""
X_LABELS = {"step": "step", "tokens": "tokens generated", "trained_tokens": "tokens trained",
            "seconds": "wall seconds", "gpu_seconds": "GPU-seconds"}


def curves_frame(history: pd.DataFrame, cfg: CurvesConfig) -> tuple[pd.DataFrame, list[str]]:
    """(model, method, seed, x, value) of every trial's evaluations, and notes on what was left out."""
    values = history[history["key"] == cfg.metric]
    if values.empty:
        return pd.DataFrame(columns=["model", "method", "seed", "x", "value"]), []
    values = values[["run_id", "model", "method", "config", "seed", "step", "value"]].sort_values(["run_id", "step"])
    configs = values.groupby(["model", "method"])["config"].transform("nunique")
    values["method"] = np.where(configs > 1, values["method"].astype(str) + " [" + values["config"].astype(str) + "]",
                                values["method"].astype(str))  # a method's configs: one curve family each
    key, notes = COMPUTE_AXES[cfg.x], []
    if key is None:
        frame = values.rename(columns={"step": "x"})
    else:
        spent = history[history["key"] == key][["run_id", "step", "value"]].rename(columns={"value": "x"})
        missing = sorted(set(values["run_id"]) - set(spent["run_id"]))
        if missing:
            notes.append(f"compute curves: {len(missing)} trial(s) without {key} (recorded before the compute axes) "
                         f"left out of the fits on {cfg.x}")
            values = values[~values["run_id"].isin(missing)]
        frame = pd.merge_asof(values.sort_values("step"), spent.sort_values("step"), on="step", by="run_id",
                              direction="backward")
        frame["x"] = frame["x"].fillna(0.0)  # before the first training step: nothing spent
    frame["seed"] = frame["seed"].astype(str)
    return frame[["model", "method", "seed", "x", "value"]].astype({"model": str, "method": str}), notes


@dataclass
class ComputeSection:
    frame: pd.DataFrame
    study: StudyCurves
    x_label: str
    scale: float = 100.0

    def write(self, out: Path, formats) -> dict[str, Path]:
        files = {"md": ("curves.md", lambda: curves_markdown(self.study, scale=self.scale, x_label=self.x_label)),
                 "latex": ("curves.tex", lambda: curves_latex(self.study, scale=self.scale, x_label=self.x_label)),
                 "csv": ("curves.csv", lambda: curves_csv(self.study, scale=self.scale))}
        paths = {}
        for fmt, (name, text) in files.items():
            if fmt in formats:
                paths[f"curves_{fmt}"] = out / name
                paths[f"curves_{fmt}"].write_text(text(), encoding="utf-8")
        if "csv" in formats:
            paths["curves_seeds"] = out / "curves_seeds.csv"
            paths["curves_seeds"].write_text(seeds_csv(self.study, scale=self.scale), encoding="utf-8")
        return paths

    def draws(self) -> dict:
        from dashboards.figures.compute import compute_draws

        return compute_draws(self.frame, self.study, scale=self.scale, x_label=self.x_label)

    def html(self, fig_html) -> str:
        """The section; ``fig_html(figure, div_id)`` embeds a plotly figure as the report does."""
        import plotly.graph_objects as go

        rows = "".join(
            "<tr>" + "".join(f"<td>{html_lib.escape(c)}</td>" for c in (m.model, m.method, *fit_cells(m.fit, self.scale, 1)))
            + "</tr>" for m in self.study.methods)
        table = ("<table class=\"paper-table\"><thead><tr><th>Model</th><th>Method</th><th>A (ceiling)</th>"
                 f"<th>B (efficiency)</th><th>C_mid ({html_lib.escape(self.x_label)})</th></tr></thead>"
                 f"<tbody>{rows}</tbody></table>")
        fig = go.Figure()
        for m in self.study.methods:
            part = self.frame[(self.frame["model"] == m.model) & (self.frame["method"] == m.method)]
            mean = part.groupby("x", as_index=False)["value"].mean()
            name = m.method if len(set(self.frame["model"])) == 1 else f"{m.model} / {m.method}"
            fig.add_scatter(x=mean["x"], y=mean["value"] * self.scale, mode="markers", name=name, legendgroup=name)
            if m.fit.status == OK:
                top = float(part["x"].max())
                xs = np.linspace(top / 200, 1.5 * top, 150)
                fig.add_scatter(x=xs, y=m.fit.predict(xs) * self.scale, mode="lines", legendgroup=name, showlegend=False,
                                line={"dash": "solid"}, name=f"{name} fit")
        fig.update_layout(height=420, xaxis_title=f"training compute ({self.x_label})",
                          yaxis_title="pass rate" + (" (%)" if self.scale == 100 else ""), template="plotly_white")
        notes = "".join(f'<p class="footnote">{html_lib.escape(n)}</p>' for n in _footnotes(self))
        return f"<h2>Compute curves</h2>{table}{fig_html(fig, 'fig-compute-curves')}{notes}"

    def run_metrics(self) -> dict[str, float]:
        """A, B and C_mid (and A's interval) of every identified pooled fit, for the parent run."""
        out = {}
        for m in self.study.methods:
            if m.fit.status != OK:
                continue
            head = f"curves/{metric_safe(m.model)}/{metric_safe(m.method)}/"
            out.update({head + "A": m.fit.A, head + "A_low": m.fit.A_ci[0], head + "A_high": m.fit.A_ci[1],
                        head + "B": m.fit.B, head + "C_mid": m.fit.C_mid})
        return out


def _footnotes(section: ComputeSection) -> list[str]:
    from dashboards.tables.compute import footnotes

    return footnotes(section.study, section.scale, section.x_label)


def metric_safe(name: str) -> str:
    """A name as MLflow allows it in a metric key (letters, digits, _ . - space; the rest become _)."""
    return re.sub(r"[^A-Za-z0-9_.\- ]", "_", name) or "_"


def compute_section(history: pd.DataFrame, cfg: CurvesConfig, *, baselines: list[str] | None = None,
                    scale: float = 100.0) -> tuple[ComputeSection | None, list[str]]:
    """(the fits of ``history``'s curves, or None when disabled or when no method has enough points; notes on
    what was left out)."""
    if not cfg.enabled or history.empty:
        return None, []
    frame, notes = curves_frame(history, cfg)
    spent = frame[frame["x"] > 0].groupby(["model", "method"])["x"]
    enough = {key for key, n, distinct in zip(spent.size().index, spent.size(), spent.nunique())
              if n >= MIN_POINTS and distinct >= MIN_COMPUTES}
    few = [f"{model} / {method}" for model, method in dict.fromkeys(zip(frame["model"], frame["method"]))
           if (model, method) not in enough]
    if few:
        notes.append(f"compute curves: {', '.join(few)} not fitted: fewer than {MIN_POINTS} evaluations at "
                     f"{MIN_COMPUTES} compute values after compute 0 (the sigmoid has 3 parameters)")
        frame = frame[[key in enough for key in zip(frame["model"], frame["method"])]]
    families = frame[["model", "method"]].drop_duplicates()
    if len(families) > MAX_FAMILIES:
        notes.append(f"compute curves: {len(families)} method/config curve families, more than {MAX_FAMILIES}: not "
                     "fitted (a grid reported per config; report.table.rows: method picks one config per method)")
        return None, notes
    if frame.empty:
        return None, notes
    study = fit_study(frame, cfg, baselines=[b for b in baselines or [] if b in set(frame["method"])] or None)
    return ComputeSection(frame, study, X_LABELS[cfg.x], scale), notes
