"""The report's "Grid" section: every configuration, the selection bias, whether the setting matters,
and the figures (figures/grid_sensitivity and figures/grid_heatmap .png/.pdf, embedded in the HTML).

    from dashboards.report.grid_section import grid_section
    section = grid_section(history, table_config)        # None unless some method has >= 2 configurations
    paths = section.write(out_dir, ["png", "pdf"])       # grid.md and the figures
    html = section.html(paths)

Values are shown on the table's scale (x100 for accuracies) with the table's decimals. The numbers
are dashboards/stats/grid_stats.py's; the heat map takes methods of one family ("SSPO (atanlog)",
"SSPO (siglog)", ...) that share configuration suffixes, e.g. the SSPO gates x (tau_neg, tau_pos).
"""

from __future__ import annotations

import base64
import html as html_lib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dashboards.stats.grid_stats import Share, grid_frame, grid_rows, selection_bias, variance_shares
from dashboards.figures.static import save_figures
from dashboards.model.table import TableConfig


def short_label(config: str, method: str, configs: list[str]) -> str:
    """A configuration's name without what all configs of its method share (e.g. 'tn0.3-tp0.2')."""
    prefix = os.path.commonprefix(configs) if len(configs) > 1 else ""
    prefix = prefix[: prefix.rfind("-") + 1] if "-" in prefix else ""
    return config[len(prefix):] or config


def _mark(row) -> str:
    """'picked', 'best reported' or both, for a grid row."""
    return ", ".join(m for m, on in (("picked", row.rank == 1), ("best reported", row.best_reported)) if on)


def _plain(x: float) -> str:
    """A mechanism's mean (a fraction or weight, shown as is), '–' where not logged."""
    return "–" if x is None or np.isnan(x) else f"{x:.4f}"


def _family(method: str) -> str:
    return re.sub(r"\s*\(.*\)$", "", method)


@dataclass
class GridSection:
    rows: pd.DataFrame
    shares: list[Share]
    bias: pd.DataFrame
    cfg: TableConfig

    def _v(self, x: float | None) -> str:
        return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x * self.cfg.scale:.{self.cfg.decimals}f}"

    def _cell(self, mean, half) -> str:
        return self._v(mean) + ("" if half is None or np.isnan(half) else f" ± {self._v(half)}")

    @property
    def split_name(self) -> str:
        return "selection split" if self.rows["split"].iloc[0] == "select" else "reported benchmarks (not held out)"

    def lines(self) -> dict[str, list[str]]:
        """The section's text lines: 'matters' (one per method), 'bias' (one per method)."""
        matters = [f"{s.method}: configurations {s.config_share:.0%} of the variance, seeds {1 - s.config_share:.0%} "
                   f"(F({s.configs - 1}, {s.trials - s.configs}) = {s.f:.2f}, p = {s.p:.3g}; {s.configs} configurations, "
                   f"{s.trials} trials; spread of the configuration means {self._v(s.spread)})" for s in self.shares]
        bias = []
        for b in self.bias.itertuples():
            same = b.picked == b.best_reported_config
            bias.append(f"{b.method}: picked {b.picked} (selection {self._v(b.picked_selection)}, reported "
                        f"{self._v(b.picked_reported)}); best on the reported AVG: "
                        + ("the same" if same else f"{b.best_reported_config} ({self._v(b.best_reported)}, "
                                                     f"+{self._v(b.bias)} over the pick)"))
        return {"matters": matters, "bias": bias}

    def markdown(self) -> str:
        sel = "selection score" + (" (selection split)" if self.rows["split"].iloc[0] == "select" else " (reported)")
        out = [f"# Grid: every configuration (picked on the {self.split_name})", "",
               f"| method | configuration | n | {sel} | reported AVG | rank | | clip fraction | gate weight |",
               "|---|---|---|---|---|---|---|---|---|"]
        for r in self.rows.itertuples():
            mark = _mark(r)
            out.append(f"| {r.method} | {r.config} | {r.n} | {self._cell(r.selection, r.selection_ci)} | "
                       f"{self._cell(r.reported, r.reported_ci)} | {r.rank} | {mark} | {_plain(r.clip_fraction)} | "
                       f"{_plain(r.gate_weight)} |")
        lines = self.lines()
        out += ["", "Intervals: 95% t-intervals over seeds. Clip fraction (actor/pg_clipfrac) and gate weight "
                    "(actor/gate_weight, SAPO/SSPO): means over the training steps and seeds; a gate weight near 1 and "
                    "a clip fraction near 0 say the temperature or clip range cannot act.", "",
                "## Does the setting matter (reported AVG)", ""]
        out += [f"- {line}" for line in lines["matters"]] or ["- no method has two configurations and spare seeds"]
        out += ["", "## Selection bias", ""] + [f"- {line}" for line in lines["bias"]]
        return "\n".join(out) + "\n"

    def figures(self) -> dict:
        """{name: draw()} for dashboards/static_figures.save_figures."""
        methods = [m for m, g in self.rows.groupby("method", sort=False) if len(g) >= 2]
        draw = {"grid_sensitivity": lambda: self._sensitivity(methods)} if methods else {}
        families = self._families()
        if families:
            draw["grid_heatmap"] = lambda: self._heatmap(families)
        return draw

    def _families(self) -> dict[str, tuple[list[str], list[str], np.ndarray]]:
        """family -> (methods, configuration labels, matrix of reported means) where >= 2 methods share labels."""
        out = {}
        for family, g in self.rows.groupby(self.rows["method"].map(_family), sort=False):
            methods = list(dict.fromkeys(g["method"]))
            labels = {m: {short_label(c, m, list(v["config"])): r for c, r in zip(v["config"], v["reported"])}
                      for m, v in g.groupby("method", sort=False)}
            shared = [lab for lab in dict.fromkeys(x for m in methods for x in labels[m])
                      if sum(lab in labels[m] for m in methods) >= 2]
            keep = [m for m in methods if sum(lab in labels[m] for lab in shared) >= 2]
            if len(keep) >= 2 and len(shared) >= 2:
                matrix = np.array([[labels[m].get(lab, np.nan) for lab in shared] for m in keep], dtype=float)
                out[family] = (keep, shared, matrix * self.cfg.scale)
        return out

    def _sensitivity(self, methods: list[str]):
        from matplotlib.figure import Figure

        cols = min(3, len(methods))
        rows_n = -(-len(methods) // cols)
        fig = Figure(figsize=(3.2 * cols, 2.4 * rows_n), layout="constrained")
        for i, method in enumerate(methods):
            ax = fig.add_subplot(rows_n, cols, i + 1)
            g = self.rows[self.rows["method"] == method]
            labels = [short_label(c, method, list(g["config"])) for c in g["config"]]
            x = np.arange(len(g))
            for col, style, name in (("reported", "o-", "reported AVG"), ("selection", "s--", "selection score")):
                half = g[f"{col}_ci"].fillna(0).to_numpy(float) * self.cfg.scale
                ax.errorbar(x, g[col].to_numpy(float) * self.cfg.scale, yerr=half, fmt=style, capsize=2,
                            label=name, alpha=1.0 if col == "reported" else 0.6)
            picked = np.flatnonzero(g["rank"].to_numpy() == 1)
            ax.plot(x[picked], g["reported"].to_numpy(float)[picked] * self.cfg.scale, "*", ms=11, color="black",
                    label="picked")
            ax.set_xticks(x, labels, rotation=30, ha="right")
            ax.set_title(method)
            if i == 0:
                ax.legend(loc="best")
        fig.suptitle(f"Score per configuration (mean, 95% interval over seeds); picked on the {self.split_name}")
        return fig

    def _heatmap(self, families):
        from matplotlib.figure import Figure

        fig = Figure(figsize=(4.2 * len(families), 2.8), layout="constrained")
        for i, (family, (methods, labels, matrix)) in enumerate(families.items()):
            ax = fig.add_subplot(1, len(families), i + 1)
            image = ax.imshow(matrix, cmap="viridis", aspect="auto")
            ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
            ax.set_yticks(range(len(methods)), methods)
            low, high = np.nanmin(matrix), np.nanmax(matrix)
            for (r, c), v in np.ndenumerate(matrix):
                if not np.isnan(v):  # dark text on the bright end of viridis
                    bright = high > low and (v - low) / (high - low) > 0.6
                    ax.text(c, r, f"{v:.{self.cfg.decimals}f}", ha="center", va="center",
                            color="black" if bright else "white", fontsize=7)
            ax.set_title(f"{family}: reported AVG")
            fig.colorbar(image, ax=ax)
        return fig

    def write(self, out_dir: str | Path, formats) -> dict[str, Path]:
        """grid.md (with 'md' in formats) and the figures; {key: path}."""
        out = Path(out_dir)
        paths: dict[str, Path] = {}
        if "md" in formats:
            paths["grid"] = out / "grid.md"
            paths["grid"].write_text(self.markdown(), encoding="utf-8")
        paths.update(save_figures(self.figures(), out, formats))
        return paths

    def html(self, paths: dict[str, Path]) -> str:
        """The section for report.html: the table, the two lists and the PNG figures inline."""
        esc = html_lib.escape
        head = "".join(f"<th>{esc(h)}</th>" for h in ("method", "configuration", "n", "selection score",
                                                     "reported AVG", "rank", "", "clip fraction", "gate weight"))
        body = []
        for r in self.rows.itertuples():
            mark = _mark(r)
            style = ' style="font-weight:bold"' if r.rank == 1 else ""
            body.append(f"<tr{style}><td>{esc(str(r.method))}</td><td>{esc(str(r.config))}</td><td>{r.n}</td>"
                        f"<td>{self._cell(r.selection, r.selection_ci)}</td><td>{self._cell(r.reported, r.reported_ci)}"
                        f"</td><td>{r.rank}</td><td>{mark}</td><td>{_plain(r.clip_fraction)}</td>"
                        f"<td>{_plain(r.gate_weight)}</td></tr>")
        lines = self.lines()
        figs = "".join(f'<img alt="{name}" style="max-width:100%" src="data:image/png;base64,'
                       f'{base64.b64encode(paths[key].read_bytes()).decode()}">'
                       for key, name in (("png:grid_sensitivity", "sensitivity"), ("png:grid_heatmap", "heat map"))
                       if key in paths)
        items = lambda xs: "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in xs) + "</ul>"  # noqa: E731
        return (f"<h2>Grid: every configuration (picked on the {esc(self.split_name)})</h2>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
                f"<p>Intervals: 95% t-intervals over seeds.</p><h3>Does the setting matter (reported AVG)</h3>"
                f"{items(lines['matters'])}<h3>Selection bias</h3>{items(lines['bias'])}{figs}")


def grid_section(history: pd.DataFrame, cfg: TableConfig) -> GridSection | None:
    """The section of a sweep whose table picks among >= 2 configurations of some method, else None."""
    if cfg.rows == "config":
        return None
    frame = grid_frame(history, cfg)
    if frame.empty or frame.groupby(["model", "method"], observed=True)["config"].nunique().max() < 2:
        return None
    rows = grid_rows(frame, cfg.mode)
    return GridSection(rows, variance_shares(frame), selection_bias(rows), cfg)
