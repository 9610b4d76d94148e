"""One self-contained HTML report (tables + curves) per sweep, logged to the sweep's parent run.

    from dashboards.report.writer import ReportConfig, report_from_mlflow, write_report
    cfg = ReportConfig.from_dict({"table": {"select_by": "val/avg/acc", "at": "final"},
                                  "curves": ["actor/entropy", "response_length/mean", "val/avg/acc"]})
    paths = report_from_mlflow("my_sweep", tracking_uri="sqlite:////abs/mlflow.db", out_dir="reports/my_sweep")

`ReportConfig` is the sweep spec's `report:` section. The HTML embeds plotly.js inline (no CDN:
it opens offline, ~5 MB). Beside it: table.md, table.tex, table.csv, and the static paper figures
figures/<name>.png/.pdf/.svg (matplotlib, dashboards/figures/static.py; png and pdf by default). The
HTML and static figures draw the same dashboards.figures.training_curves.FigureSpec: per metric one line per method
(mean over seeds) with a band the legend names, per-step metrics EMA-smoothed (`ema_alpha`),
evaluation points never, accuracies x the table's `scale`; the first figure ("dynamics") is a row
entropy / response length / accuracy (DHPO Fig. 1). With one line per method and a table that
picked one config per method (a grid), the curves draw that config only, so they match the table.
With `log_to_run` (report_from_mlflow: the parent run), every file is logged as an artifact under
`report/` (figures under `report/figures/`), and the run's description (tag `mlflow.note.content`,
Markdown in the MLflow UI) becomes the paper table and what the sweep was (`run_note`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import re
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from dashboards.figures import training_curves as cv
from dashboards.report.aggregates_section import (
                                                  aggregates_html, aggregates_markdown, plotly_aggregates, study_aggregates, aggregate_draws,
                                                  )
from dashboards.collect.sweep_runs import SweepData, collect, find_runs
from dashboards.report.compute_section import compute_section
from dashboards.report.grid_section import grid_section
from dashboards.model.report import (  # noqa: F401  (the spec's report: section, re-exported)
    DEFAULT_CURVES, DEFAULT_EMA_ALPHA, FORMATS, ReportConfig, history_keys,
)
from dashboards.figures.static import draw_in_background, save_figures, static_draws
from dashboards.tables.from_sweep import failed_trials, table_from_sweep, with_declared_benchmarks
from dashboards.tables.build import TableConfig
from tracking_store.run_files import run_writer

NOTE_TAG = "mlflow.note.content"  # a run's description in the MLflow UI
MAX_NOTE = 8000  # MLflow's limit on a run tag's value


def _fig_html(fig: go.Figure, div_id: str) -> str:
    h = int(fig.layout.height or 450)
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, default_height=f"{h}px",
                       config={"displaylogo": False, "responsive": True})


def figure_specs(history, cfg: ReportConfig, model: str | None = None) -> list[cv.FigureSpec]:
    """The figures of one model: curves grid ("dynamics", 3 per row), per-benchmark grid, clip fractions."""
    kw = {"by": cfg.by, "ema_alpha": cfg.ema_alpha, "band": cfg.band, "model": model,
          "acc_scale": cfg.table.scale,  # accuracies on the table's scale
          "styles": cv.style_map(history, cfg.by, model=model or "")}  # one style per method, all models
    present = set(history["key"].unique())
    specs = []
    keys = [k for k in cfg.curves if k in present]
    if keys:
        specs.append(cv.figure_spec(history, keys, name="dynamics", cols=3, title="Training dynamics", **kw))
    bench = cv.benchmark_keys(history, cfg.table.metric, cfg.table.benchmarks) if cfg.benchmark_grid else []
    if bench:
        specs.append(cv.figure_spec(history, bench, name="benchmarks", cols=4,
                                    title="Validation accuracy per benchmark", **kw))
    clip = [k for k in cv.CLIP_KEYS if k in present] if cfg.clipfrac else []
    if clip:
        specs.append(cv.figure_spec(history, clip, name="clipfrac", cols=len(clip), title="Clip fractions", **kw))
    return specs


def build_figures(history, cfg: ReportConfig, model: str | None = None) -> list[tuple[str, go.Figure]]:
    """(name, plotly figure) pairs for one model, as figure_specs."""
    return [(spec.name, cv.plotly_figure(spec)) for spec in figure_specs(history, cfg, model)]


def curve_history(data: SweepData, table, cfg: ReportConfig) -> tuple[pd.DataFrame, list[str]]:
    """The runs the curves draw, and a note for each kind left out: FAILED trials (as in the table),
    and, with one line per method and a table that shows one config per method (its best, see its
    footnote), the other configs' runs."""
    history, notes = data.history, []
    failed = failed_trials(data.trials)
    if len(failed) and not history.empty:
        history = history[~history["run_id"].isin(set(failed["run_id"]))]
        notes.append(f"{len(failed)} FAILED trial(s) not drawn (the table leaves them out too: its footnote names them).")
    if cfg.by != "method" or cfg.table.rows != "method" or history.empty:
        return history, notes
    shown = {(r.model, r.label): set(r.config.split(",")) for r in table.rows if not r.is_base and r.config}
    t = data.trials  # decided per run (thousands), not per point (millions)
    hidden = {rid for rid, m, me, c in zip(t["run_id"], t["model"].astype(str), t["method"].astype(str),
                                           t["config"].astype(str)) if (m, me) in shown and c not in shown[(m, me)]}
    drop = history["run_id"].isin(hidden).to_numpy() if hidden else None
    if drop is None or not drop.any():
        return history, notes
    return history[~drop], notes + ["Curves of a method with several configs show the config the table shows "
                                    "(its footnote names it); the others are not drawn."]


_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:1280px;color:#222}
h1{font-size:1.6em} h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table.paper-table{border-collapse:collapse;margin:12px 0;font-variant-numeric:tabular-nums}
table.paper-table th,table.paper-table td{padding:4px 10px;text-align:right}
table.paper-table td.method,table.paper-table thead th:first-child{text-align:left}
table.paper-table thead th{border-top:2px solid #333;border-bottom:1px solid #333}
table.paper-table tbody tr:last-child td{border-bottom:2px solid #333}
table.paper-table tr.model th{text-align:center;font-style:italic;border-bottom:1px solid #999;background:#f6f6f6}
table.paper-table tr.base td{color:#555}
.footnote,.meta{color:#555;font-size:.9em} .note{color:#a60}
details pre{background:#f6f6f6;padding:8px;overflow:auto}"""


def write_report(data: SweepData, out_dir: str | Path, config: ReportConfig | None = None, *,
                 log_to_run: str | None = None, tracking_uri: str | None = None,
                 figures_in_background: bool = False) -> dict[str, Path]:
    """Write the report files into out_dir; return {format: path}. See the module docstring.
    ``figures_in_background``: the static figures (curves and aggregates) are drawn by a forked process meanwhile (a process
    without other threads only: `sweep report`)."""
    cfg = (config or ReportConfig()).validate()
    cfg = dataclasses.replace(cfg, table=with_declared_benchmarks(data, cfg.table))  # table and curves alike
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    title = cfg.title or f"Sweep {data.sweep}"
    table = table_from_sweep(data, cfg.table)
    paths: dict[str, Path] = {}
    for fmt, name, text in (("md", "table.md", table.to_markdown), ("latex", "table.tex", table.to_latex),
                            ("csv", "table.csv", table.to_csv)):
        if fmt in cfg.formats:
            paths[fmt] = out / name
            paths[fmt].write_text(text(), encoding="utf-8")
    blocks = study_aggregates(table) if table.rows else []
    if blocks and "md" in cfg.formats:
        paths["aggregates"] = out / "aggregates.md"
        paths["aggregates"].write_text(aggregates_markdown(blocks, cfg.table), encoding="utf-8")
    failed = set(failed_trials(data.trials)["run_id"])
    grid = grid_section(data.history[~data.history["run_id"].isin(failed)], cfg.table) if table.rows else None
    if grid is not None:
        paths.update(grid.write(out, cfg.formats))
    history, curve_notes = curve_history(data, table, cfg)
    models = [str(m) for m in pd.unique(history["model"])]
    sections, specs, notes = [], [], []
    for model in models:
        head = f"<h2>Curves: {html.escape(str(model))}</h2>" if len(models) > 1 else "<h2>Curves</h2>"
        divs = []
        for spec in figure_specs(history, cfg, model):
            divs.append(_fig_html(cv.plotly_figure(spec), f"fig-{len(specs)}"))
            specs.append(dataclasses.replace(spec, name=f"{model}-{spec.name}" if len(models) > 1 else spec.name))
        sections.append(head + "\n".join(divs))
    if not table.rows:
        notes.append(f"No table: no {cfg.table.metric} values logged yet")
    notes += table.notes
    missing = [k for k in cfg.curves if k not in set(data.history["key"])]
    if missing:
        notes.append(f"Not logged, not drawn: {', '.join(missing)}")
    notes += curve_notes
    compute, compute_notes = compute_section(history, cfg.compute_curves, baselines=cfg.table.baselines,
                                             scale=cfg.table.scale)
    notes += compute_notes
    if compute is not None:
        paths.update(compute.write(out, cfg.formats))
    draws = {**static_draws(specs), **aggregate_draws(blocks, cfg.table), **(compute.draws() if compute else {})}
    join_figures = draw_in_background(draws, out, cfg.formats) if figures_in_background else None
    figure_paths = {} if join_figures else save_figures(draws, out, cfg.formats)
    if "html" in cfg.formats:
        extra = aggregates_html(blocks, cfg.table)
        if blocks:
            extra += _fig_html(plotly_aggregates(blocks, cfg.table), "fig-aggregates")
        if grid is not None:
            extra += grid.html(paths)
        if compute is not None:
            extra += compute.html(_fig_html)
        html_page = _page(title, data, table, sections, notes, cfg, extra)
    writer = run_writer(tracking_uri or data.tracking_uri, log_to_run) if log_to_run else None  # beside the drawing
    paths.update(join_figures() if join_figures else figure_paths)
    if "html" in cfg.formats:
        paths["html"] = out / "report.html"
        paths["html"].write_text(html_page, encoding="utf-8")
    if writer is not None:
        writer.log_files([(p, "report" if p.parent == out else "report/figures") for p in paths.values()])
        writer.set_tag(NOTE_TAG, run_note(data, table, cfg, writer.tag("spec_file"), "html" in paths))
        if compute is not None and compute.run_metrics():
            writer.log_metrics(compute.run_metrics())
    return paths


def run_note(data: SweepData, table, cfg: ReportConfig, spec_file: str | None = None, html_report: bool = True) -> str:
    """The report's run description (Markdown): what the sweep was, the paper table, how to read it."""
    t = data.trials

    def listed(col: str) -> str:
        values = [str(v) for v in dict.fromkeys(t[col]) if v is not None and str(v) != "nan"] if col in t else []
        if col == "seed" and all(v.lstrip("-").isdigit() for v in values):
            values = [str(v) for v in sorted(map(int, values))]
        return ", ".join(values) or "none"

    status = t["status"].value_counts().to_dict() if "status" in t else {}
    what = [f"spec `{spec_file}`" if spec_file else None,
            f"{len(t)} trials ({', '.join(f'{k} {v}' for k, v in status.items())})" if len(t) else "no trials yet",
            f"methods: {listed('method')}", f"seeds: {listed('seed')}", f"models: {listed('model')}"]
    head = [f"**Sweep `{data.sweep}`**: " + "; ".join(w for w in what if w), ""]
    tail = ["", _values_line(cfg.table, "Bold: best; italic: strongest baseline."),  # the UI drops <u>
            *(["", _mlflow_scale_line(cfg.table)] if cfg.table.scale != 1 else []),
            "", (f"Full report (curves, LaTeX, CSV): artifacts `report/`{', open `report/report.html`' if html_report else ''}. "
                 f"Written {dt.datetime.now().isoformat(timespec='seconds')}.")]
    body = [re.sub(r"</?u>", "", ln) for ln in table.to_markdown().splitlines()] if table.rows \
        else [f"No table yet: no {cfg.table.metric} values logged."]
    note, keep = "\n".join(head + body + tail) + "\n", len(body)
    cut = ["", "(table cut to fit the description: the whole table is in the report, `report/`)"]
    while len(note) > MAX_NOTE and keep > 2:  # a very large table: its first rows, the rest in report/
        keep -= 1
        note = "\n".join(head + body[:keep] + cut + tail) + "\n"
    return note[:MAX_NOTE]


def _mlflow_scale_line(tc: TableConfig) -> str:
    """How MLflow's own charts (the logged fractions) relate to the table's scaled values."""
    return (f"MLflow's charts show the logged values; this table and the report's accuracy curves show them "
            f"x{tc.scale:g} (e.g. 0.523 in MLflow = {0.523 * tc.scale:.{tc.decimals}f} here).")


def _values_line(tc: TableConfig, marks: str = "Bold: best; underlined: second; italic: strongest baseline.") -> str:
    return (f"Values: {tc.metric} at the {tc.at} step"
            + (f" (best by {tc.select_by}, {tc.mode})" if tc.at == "best" else "")
            + f", mean over seeds, x{tc.scale:g}. {marks}")


def _page(title: str, data: SweepData, table, sections: list[str], notes: list[str], cfg: ReportConfig,
          aggregates: str = "") -> str:
    t = data.trials
    status = t["status"].value_counts().to_dict() if "status" in t else {}
    meta = (f"{len(t)} trials; methods: {', '.join(map(str, dict.fromkeys(t['method'])))}; "
            f"models: {', '.join(map(str, dict.fromkeys(t['model'])))}; status: "
            f"{', '.join(f'{k} {v}' for k, v in status.items())}; generated "
            f"{dt.datetime.now().isoformat(timespec='seconds')}")
    how = _values_line(cfg.table)
    notes_html = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
</head><body>
<h1>{html.escape(title)}</h1>
<p class="meta">{html.escape(meta)}</p>
<h2>Results</h2>
<p class="meta">{html.escape(how)}</p>
{table.to_html()}
<details><summary>LaTeX</summary><pre>{html.escape(table.to_latex())}</pre></details>
{notes_html}
{aggregates}
{''.join(sections)}
{_provenance_footer(data)}
</body></html>
"""


def _provenance_footer(data: SweepData) -> str:
    """The parent run's provenance (code commit, packages, host, cluster) under the report."""
    if not data.provenance:
        return ""
    items = "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>" for k, v in data.provenance.items())
    return f'<footer class="meta"><h2>Provenance</h2><ul>{items}</ul></footer>'


def report_from_mlflow(sweep: str | None, *, tracking_uri: str | None = None, out_dir: str | Path,
                       config: ReportConfig | None = None, parent_run_id: str | None = None,
                       log: bool = True, log_run_id: str | None = None) -> dict[str, Path]:
    """collect() + write_report(); with `log`, the files become artifacts of `log_run_id` or else
    the sweep's parent run. By sweep name every trial run of the experiment counts (a re-run spec
    that opened a new parent run still reports the trials finished before); parent_run_id
    restricts the report to that parent's children."""
    cfg = config or ReportConfig()
    found = find_runs(sweep, tracking_uri=tracking_uri, parent_run_id=parent_run_id)
    data = collect(found=found, keys=history_keys(cfg, {k for r in found.runs for k in r.metrics}))
    run = (log_run_id or data.parent_run_id) if log else None
    if log and run is None:
        print(f"note: sweep {data.sweep!r} has no parent run (tag role=parent); report not logged to MLflow")
    return write_report(data, out_dir, cfg, log_to_run=run, tracking_uri=data.tracking_uri)
