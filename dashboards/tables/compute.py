"""The compute-curves table of a study (dashboards/stats/compute_curves.py): Markdown, LaTeX (booktabs), CSV.

    from dashboards.tables.compute import curves_markdown, curves_latex, curves_csv, seeds_csv
    text = curves_markdown(study, scale=100, x_label="step")

One row per model and method: the pooled fit's A (ceiling), B (efficiency) and C_mid (the compute at half
the gain), each with its 95% interval, or the fit's status in words ("not identified", "not converged");
A's difference and B's ratio to the strongest baseline (Holm-adjusted: † when p < 0.05); the extrapolation
check (the last point measured, and predicted by the fit on the first share of compute; "missed" when the
error's interval excludes 0). Pass rates (A, R0, the extrapolation) are shown x ``scale`` (100: percent);
B is a pure number, C_mid in the compute's unit. The footnotes say the model, the interval's method, the
cut and the strongest baseline, and every method's note (why a fit is not identified, a collapse).

The CSV has one row per model and method with the columns `A`, `A_low`, `A_high`, `B`, `B_low`, `B_high`,
`C_mid`, `C_mid_low`, `C_mid_high` (empty unless `fit` is ok), `fit` (ok, not identified, not converged),
then R0, the comparison and the extrapolation columns and `note`; unrounded, pass rates x ``scale``.
"""

from __future__ import annotations

import csv
import io
import math

from dashboards.stats.compute_curves import Comparison, MethodCurves, StudyCurves
from dashboards.stats.compute_fit import OK, Fit
from dashboards.tables.render import latex_escape

CSV_COLUMNS = ("model", "method", "seeds", "fit", "A", "A_low", "A_high", "B", "B_low", "B_high", "C_mid",
               "C_mid_low", "C_mid_high", "R0", "baseline", "dA", "dA_low", "dA_high", "dA_p_holm", "B_ratio",
               "B_ratio_low", "B_ratio_high", "B_ratio_p_holm", "last_measured", "last_predicted", "extrapolation_error",
               "extrapolation_low", "extrapolation_high", "extrapolation_missed", "reason", "note")
SEED_COLUMNS = ("model", "method", "seed", "fit", "A", "A_low", "A_high", "B", "B_low", "B_high", "C_mid",
                "C_mid_low", "C_mid_high", "R0", "reason")


def _num(v: float | None, decimals: int) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.{decimals}f}"


def _sig(v: float) -> str:
    """A compute value: 3 significant digits."""
    return f"{v:.3g}" if math.isfinite(v) else "—"


def _with_ci(value: float, ci, fmt) -> str:
    return f"{fmt(value)} [{fmt(ci[0])}, {fmt(ci[1])}]"


def fit_cells(fit: Fit, scale: float, decimals: int) -> tuple[str, str, str]:
    """(A, B, C_mid) cells of a fit: value [interval], or its status in words."""
    if fit.status != OK:
        return fit.status, fit.status, fit.status
    return (_with_ci(fit.A, fit.A_ci, lambda v: _num(v * scale, decimals)),
            _with_ci(fit.B, fit.B_ci, lambda v: _num(v, 2)),
            _with_ci(fit.C_mid, fit.C_mid_ci, _sig))


def _comparison(c: Comparison | None, scale: float, decimals: int) -> str:
    if c is None:
        return "—"
    mark = "†" if c.significant else ""
    if c.parameter == "A":
        return f"{c.estimate * scale:+.{decimals}f} [{c.interval[0] * scale:+.{decimals}f}, {c.interval[1] * scale:+.{decimals}f}]{mark}"
    return f"{c.estimate:.2f}× [{c.interval[0]:.2f}, {c.interval[1]:.2f}]{mark}"


def _extrapolation(m: MethodCurves, scale: float, decimals: int) -> str:
    e = m.extrapolation
    if e is None or e.fit.status != OK:
        return f"early fit {e.fit.status}" if e is not None else "—"
    missed = " missed" if e.missed else ""
    return (f"{_num(e.measured * scale, decimals)} vs {_num(e.predicted * scale, decimals)} "
            f"({e.error * scale:+.{decimals}f} [{e.interval[0] * scale:+.{decimals}f}, {e.interval[1] * scale:+.{decimals}f}]){missed}")


def _find(study: StudyCurves, m: MethodCurves, parameter: str) -> Comparison | None:
    return next((c for c in study.comparisons if c.model == m.model and c.method == m.method and c.parameter == parameter), None)


def _rows(study: StudyCurves, scale: float, decimals: int) -> list[list[str]]:
    rows = []
    for m in study.methods:
        a, b, c = fit_cells(m.fit, scale, decimals)
        base = study.baselines.get(m.model)
        name = f"_{m.method}_" if m.method == base else m.method
        rows.append([m.model, name, str(m.n_seeds), a, b, c, _comparison(_find(study, m, "A"), scale, decimals),
                     _comparison(_find(study, m, "B"), scale, decimals), _extrapolation(m, scale, decimals)])
    return rows


def _header(study: StudyCurves, x_label: str) -> list[str]:
    share = f"{study.config.extrapolate:.0%}"
    return ["Model", "Method", "n", "A (ceiling)", "B (efficiency)", f"C_mid ({x_label})", "ΔA vs baseline",
            "B ratio vs baseline", f"Last point: measured vs predicted from the first {share}"]


def footnotes(study: StudyCurves, scale: float, x_label: str) -> list[str]:
    cfg = study.config
    unit = "x100, percent" if scale == 100 else f"x{scale:g}"
    r0 = "fitted" if cfg.r0 == "fit" else "fixed at the curve's start (the base policy's score)"
    notes = [f"R(C) = R0 + (A − R0) / (1 + (C_mid / C)^B) (ScaleRL, Khatri et al. 2025) against C = {x_label}, "
             f"fitted from {cfg.fit_from:.0%} of the largest compute on, every seed's points pooled; R0 {r0}; "
             f"pass rates {unit}.",
             f"Intervals: {1 - cfg.alpha:.0%}, delta method with the seed as the cluster, Student's t at seeds − 1 "
             "(B and C_mid on the log scale); a single seed's: from its residuals.",
             "† differs from the strongest baseline (the highest A among the baselines, in italics) at Holm-adjusted "
             f"p < {cfg.alpha:g} over the model's methods, separately for A and for B."]
    for m in study.methods:
        for text in (m.fit.reason, m.note):
            if text:
                notes.append(f"{m.model} / {m.method}: {text}.")
        e = m.extrapolation
        if e is not None and e.missed:
            notes.append(f"{m.model} / {m.method}: the fit on the first {cfg.extrapolate:.0%} of compute missed the last "
                         "point beyond its own interval.")
    return notes


def curves_markdown(study: StudyCurves, *, scale: float = 100.0, decimals: int = 1, x_label: str = "step") -> str:
    header = _header(study, x_label)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(study, scale, decimals)]
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in footnotes(study, scale, x_label)) + "\n"


def curves_latex(study: StudyCurves, *, scale: float = 100.0, decimals: int = 1, x_label: str = "step",
                 caption: str = "Compute curves") -> str:
    header = _header(study, x_label)

    def cell(text: str) -> str:
        italic = text.startswith("_") and text.endswith("_") and len(text) > 2
        body = latex_escape(text[1:-1] if italic else text).replace("†", r"$^\dagger$").replace("×", r"$\times$")
        return rf"\textit{{{body}}}" if italic else body

    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_escape(caption)}}}",
             r"\begin{tabular}{ll" + "c" * (len(header) - 2) + "}", r"\toprule",
             " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(cell(c) for c in row) + r" \\" for row in _rows(study, scale, decimals)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [r"\par\footnotesize " + latex_escape(n) for n in footnotes(study, scale, x_label)]
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _fit_values(fit: Fit, scale: float) -> dict:
    out = {"fit": fit.status, "R0": fit.params.get("R0", math.nan) * scale if fit.params else ""}
    if fit.status == OK:
        for name, k in (("A", scale), ("B", 1.0), ("C_mid", 1.0)):
            out[name] = fit.params[name] * k
            out[f"{name}_low"], out[f"{name}_high"] = (v * k for v in fit.intervals[name])
    return out


def curves_csv(study: StudyCurves, *, scale: float = 100.0) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, CSV_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    for m in study.methods:
        row = {"model": m.model, "method": m.method, "seeds": m.n_seeds, "reason": m.fit.reason, "note": m.note,
               "baseline": study.baselines.get(m.model, ""), **_fit_values(m.fit, scale)}
        for parameter, prefix, k in (("A", "dA", scale), ("B", "B_ratio", 1.0)):
            c = _find(study, m, parameter)
            if c is not None:
                row.update({prefix: c.estimate * k, f"{prefix}_low": c.interval[0] * k,
                            f"{prefix}_high": c.interval[1] * k, f"{prefix}_p_holm": c.p_holm})
        e = m.extrapolation
        if e is not None and e.fit.status == OK:
            row.update({"last_measured": e.measured * scale, "last_predicted": e.predicted * scale,
                        "extrapolation_error": e.error * scale, "extrapolation_low": e.interval[0] * scale,
                        "extrapolation_high": e.interval[1] * scale, "extrapolation_missed": e.missed})
        writer.writerow(row)
    return buf.getvalue()


def seeds_csv(study: StudyCurves, *, scale: float = 100.0) -> str:
    """Each seed's own fit: one row per model, method and seed (one row per method whose seeds were not fitted:
    fit "not fitted", the reason)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, SEED_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    for m in study.methods:
        if m.seed_fits_skipped:
            writer.writerow({"model": m.model, "method": m.method, "fit": "not fitted", "reason": m.seed_fits_skipped})
        for seed, fit in m.seed_fits.items():
            writer.writerow({"model": m.model, "method": m.method, "seed": seed, "reason": fit.reason,
                             **_fit_values(fit, scale)})
    return buf.getvalue()
