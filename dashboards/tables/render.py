"""A built paper table (`Table`) and its renderers: Markdown, LaTeX (booktabs), HTML, CSV.

    table.to_markdown() / table.to_latex(caption=..., label=...) / table.to_html() / table.to_csv()

Marks (see build.py for how they are decided):
    best      Markdown **x**     LaTeX \\textbf{x}     HTML <b>
    second    Markdown <u>x</u>  LaTeX \\underline{x}  HTML <u>
    baseline  Markdown _x_       LaTeX \\textit{x}     HTML <i>
Missing cells are "—" (LaTeX: "--"). Model blocks: a bold header row in Markdown, a
\\multicolumn header between \\midrule's in LaTeX, a <th colspan> row in HTML. The CSV has one
line per row (model, method, config, n, then each column and, with std=True, "<column> std")
with the displayed (scaled, rounded) numbers and no marks.
"""

from __future__ import annotations

import csv
import html
import io
import math
import unicodedata
from dataclasses import dataclass, field

import pandas as pd

from dashboards.model.table import DELTA, Row, TableConfig

_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}


@dataclass
class Table:
    """A built table: rows grouped by model plus the columns; render with to_*()."""

    columns: list[str]
    rows: list[Row]
    config: TableConfig
    footnotes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the report says beside the table (not part of the table files), e.g. that no verdicts exist."""

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(r.model for r in self.rows))

    def fmt(self, col: str, v: float | None) -> str:
        """A value as displayed (scaled, rounded; Delta Avg signed); '—' when missing."""
        if v is None or not math.isfinite(v):
            return "—"
        s = f"{v * self.config.scale:.{self.config.decimals}f}"
        if s.lstrip("-").strip("0.") == "":
            s = s.lstrip("-")  # no "-0.0"
        return ("+" + s if col == DELTA and not s.startswith("-") else s)

    def to_markdown(self) -> str:
        return to_markdown(self)

    def to_latex(self, caption: str | None = None, label: str | None = None) -> str:
        return to_latex(self, caption=caption, label=label)

    def to_html(self) -> str:
        return to_html(self)

    def to_csv(self) -> str:
        return to_csv(self)

    def to_frame(self) -> pd.DataFrame:
        return to_frame(self)


def _one_line(text: str) -> str:
    """Line breaks, tabs and other control/format characters as spaces: a name stays on its line."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in str(text))


def latex_escape(text: str) -> str:
    """Text as literal LaTeX: the ten special characters escaped, line breaks (which could end a
    comment or start a paragraph) turned into spaces."""
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in _one_line(text))


def _label(t: Table, name: str) -> str:
    return t.config.labels.get(name, name)


def _value_text(t: Table, col: str, cell, pm: str) -> str:
    text = t.fmt(col, cell.mean)
    shown = t.config.cell_text
    if col == DELTA or cell.mean is None:
        return text
    if shown == "mean ± std" and cell.std is not None:
        text += f"{pm}{cell.std * t.config.scale:.{t.config.decimals}f}"
    elif shown == "mean ± ci" and cell.ci is not None:
        text += f"{pm}{(cell.ci[1] - cell.ci[0]) / 2 * t.config.scale:.{t.config.decimals}f}"
    return text


# Emphasis wrappers, applied innermost first: baseline (italic), second (underline), best (bold).
MARKDOWN_MARKS = (("baseline", "_{}_"), ("second", "<u>{}</u>"), ("best", "**{}**"))
LATEX_MARKS = (("baseline", "\\textit{{{}}}"), ("second", "\\underline{{{}}}"), ("best", "\\textbf{{{}}}"))


def _wrap_in_marks(text: str, marks: set[str], wrappers: tuple[tuple[str, str], ...], dagger: str = "†") -> str:
    for mark, template in wrappers:
        if mark in marks:
            text = template.format(text)
    return text + dagger if "significant" in marks else text


def _header(t: Table) -> list[str]:
    cols = ["Method"] + (["n"] if t.config.seeds else [])
    return cols + [_label(t, c) for c in t.columns]


def to_markdown(t: Table) -> str:
    head = _header(t)
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join([":---"] + ["---:"] * (len(head) - 1)) + "|"]
    for model in t.models:
        if model:
            lines.append(f"| **{_label(t, model)}** |" + " |" * (len(head) - 1))
        for r in (r for r in t.rows if r.model == model):
            cells = [_label(t, r.label)] + ([str(r.n)] if t.config.seeds else [])
            for col in t.columns:
                c = r.cells[col]
                text = _value_text(t, col, c, " ± ")
                cells.append(_wrap_in_marks(text, c.marks, MARKDOWN_MARKS))
            lines.append("| " + " | ".join(cells) + " |")
    lines += [""] + [f"{'' if i == 0 else '- '}{n}" for i, n in enumerate(t.footnotes)]
    return "\n".join(lines).rstrip() + "\n"


def to_latex(t: Table, caption: str | None = None, label: str | None = None) -> str:
    """booktabs tabular (wrapped in a table float when a caption or label is given)."""
    head = _header(t)
    ncol = len(head)
    spec = "l" + ("c" if t.config.seeds else "") + "c" * len(t.columns)
    labels = [latex_escape(h) if h != DELTA else r"$\Delta$ Avg" for h in head]
    out = ["% requires \\usepackage{booktabs}", f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
           " & ".join(labels) + " \\\\", "\\midrule"]
    for i, model in enumerate(t.models):
        if model:
            if i:
                out.append("\\midrule")
            out += [f"\\multicolumn{{{ncol}}}{{c}}{{\\textit{{{latex_escape(_label(t, model))}}}}} \\\\",
                    "\\midrule"]
        for r in (r for r in t.rows if r.model == model):
            cells = [latex_escape(_label(t, r.label))] + ([str(r.n)] if t.config.seeds else [])
            for col in t.columns:
                c = r.cells[col]
                text = _value_text(t, col, c, " $\\pm$ ")
                if text == "—":
                    cells.append("--")
                    continue
                cells.append(_wrap_in_marks(text, c.marks, LATEX_MARKS, "$^\\dagger$"))
            out.append(" & ".join(cells) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    body = "\n".join(out)
    if t.footnotes:
        body += "\n" + "\n".join("% " + _one_line(n) for n in t.footnotes)  # a newline would end the comment
    if caption or label:
        cap = f"\\caption{{{latex_escape(caption)}}}\n" if caption else ""
        safe_label = "".join(ch for ch in _one_line(label or "") if ch not in "\\{}%")  # cannot close \label{
        lab = f"\\label{{{safe_label}}}\n" if label else ""
        body = f"\\begin{{table}}[t]\n\\centering\n{cap}{lab}{body}\n\\end{{table}}"
    return body + "\n"


def to_html(t: Table) -> str:
    """A <table class="paper-table"> fragment (plus footnotes); style it from the page."""
    head = _header(t)
    esc = html.escape
    out = ['<table class="paper-table">', "<thead><tr>" + "".join(
        f"<th>{esc(h if h != DELTA else 'Δ Avg')}</th>" for h in head) + "</tr></thead>", "<tbody>"]
    for model in t.models:
        if model:
            out.append(f'<tr class="model"><th colspan="{len(head)}">{esc(_label(t, model))}</th></tr>')
        for r in (r for r in t.rows if r.model == model):
            cls = ' class="base"' if r.is_base else ""
            cells = [f"<td class=\"method\">{esc(_label(t, r.label))}</td>"]
            cells += [f"<td>{r.n}</td>"] if t.config.seeds else []
            for col in t.columns:
                c = r.cells[col]
                text = esc(_value_text(t, col, c, " ± "))
                for mark, tag in (("baseline", "i"), ("second", "u"), ("best", "b")):
                    if mark in c.marks:
                        text = f"<{tag}>{text}</{tag}>"
                if "significant" in c.marks:
                    text += "<sup>†</sup>"
                seeds = ", ".join(t.fmt(col, v) for v in c.values)  # the per-seed values behind the mean
                cells.append(f'<td title="per seed: {esc(seeds)}">{text}</td>' if len(c.values) > 1 else f"<td>{text}</td>")
            out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    if t.footnotes:
        out.append('<p class="footnote">' + "<br>".join(esc(n) for n in t.footnotes) + "</p>")
    per_seed = [(r, col, r.cells[col].values) for r in t.rows for col in t.columns if len(r.cells[col].values) > 1]
    if per_seed:  # the values behind each mean (also in each cell's tooltip)
        lines = [f"{esc(_label(t, r.model) + ': ' if r.model else '')}{esc(_label(t, r.label))}, {esc(_label(t, col))}: "
                 f"{esc(', '.join(t.fmt(col, v) for v in values))}" for r, col, values in per_seed]
        out.append('<details class="per-seed"><summary>Per-seed values</summary><p>' + "<br>".join(lines)
                   + "</p></details>")
    return "\n".join(out) + "\n"


STAT_COLUMNS = ("ci_low", "ci_high", "diff", "diff_low", "diff_high", "p", "p_holm", "seed_sd")
"""Per column of table.csv when the table has intervals or a paired test: the cell's 95% interval,
against the strongest baseline the difference, its 95% interval, the p-value and Holm's adjusted one,
and the sd of the row's runs over seeds with the sampling noise taken away (per-problem scores only)."""


def to_frame(t: Table) -> pd.DataFrame:
    """The displayed numbers as a frame (one row per table row, no marks); with intervals or a paired test
    also each column's STAT_COLUMNS (scaled like the values, one more decimal; p-values to 4 digits). Where
    the paired test could not run (a footnote "no paired test: ..."), those columns are there, empty, with a
    ``paired_test`` column giving the reason for each row of that model."""
    recs = []
    # a paired test that could not run (one seed per method, no verdicts of the baseline): the columns stay, empty,
    # and a `paired_test` column gives the footnote's reason, so a CSV reader is not left guessing
    untested = [n for n in t.footnotes if "no paired test: " in n]
    stats = bool(untested) or any(c.ci is not None or c.test for r in t.rows for c in r.cells.values())

    def why_untested(r) -> str:
        if any(c.test for c in r.cells.values()):
            return ""
        mine = [n for n in untested if not r.model or n.startswith(f"{r.model}: ")]
        return mine[0].split("no paired test: ", 1)[1] if mine else ""

    def scaled(v: float | None) -> float | None:
        return None if v is None else round(v * t.config.scale, t.config.decimals + 1)

    for r in t.rows:
        rec = {"model": r.model, "method": r.label, "config": r.config or "", "n": r.n}
        for col in t.columns:
            cell = r.cells[col]
            text = t.fmt(col, cell.mean)
            rec[col] = None if text == "—" else float(text)
            if t.config.cell_text == "mean ± std" and col != DELTA:
                s = cell.std
                rec[f"{col} std"] = None if s is None else round(s * t.config.scale, t.config.decimals)
            if stats and col != DELTA:
                test = cell.test or {}
                rec[f"{col} ci_low"] = scaled(cell.ci[0]) if cell.ci else None
                rec[f"{col} ci_high"] = scaled(cell.ci[1]) if cell.ci else None
                for k in ("diff", "diff_low", "diff_high"):
                    rec[f"{col} {k}"] = scaled(test.get(k))
                for k in ("p", "p_holm"):
                    rec[f"{col} {k}"] = float(f"{test[k]:.4g}") if k in test else None
                rec[f"{col} seed_sd"] = scaled(cell.seed_sd)
        if untested:
            rec["paired_test"] = why_untested(r)
        recs.append(rec)
    return pd.DataFrame(recs)


def to_csv(t: Table) -> str:
    buf = io.StringIO()
    to_frame(t).to_csv(buf, index=False, quoting=csv.QUOTE_MINIMAL)
    return buf.getvalue()


__all__ = ["to_markdown", "to_latex", "to_html", "to_csv", "to_frame", "latex_escape"]
