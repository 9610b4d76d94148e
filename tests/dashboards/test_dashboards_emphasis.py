"""Emphasis rules on hand-made frames, and the renderers' well-formedness."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from dashboards.tables.build import AVG, DELTA, TableConfig, build_table


def frame(rows: dict[str, dict[str, float | None]], model: str = "m") -> pd.DataFrame:
    """{method: {benchmark: value}} -> long results frame (one seed); None = not logged."""
    recs = [dict(model=model, method=m, config=m, seed=0, benchmark=b, value=v)
            for m, cells in rows.items() for b, v in cells.items() if v is not None]
    return pd.DataFrame(recs)


def marks(table, col: str) -> dict[str, set]:
    return {r.label: r.cells[col].marks for r in table.rows}


CFG = dict(select_by="AVG", benchmarks=["x", "y"])


def test_best_bold_second_underlined():
    t = build_table(frame({"A": {"x": 0.5, "y": 0.1}, "B": {"x": 0.7, "y": 0.2}, "C": {"x": 0.6, "y": 0.35}}),
                    TableConfig(**CFG))
    assert marks(t, "x") == {"A": set(), "B": {"best"}, "C": {"second"}}
    assert marks(t, "y") == {"A": set(), "B": {"second"}, "C": {"best"}}
    assert marks(t, AVG) == {"A": set(), "B": {"second"}, "C": {"best"}}  # 30, 45, 47.5
    assert t.to_frame().set_index("method").loc["C", AVG] == 47.5
    assert "| C | <u>60.0</u> | **35.0** | **47.5** |" in t.to_markdown()


def test_ties_at_displayed_precision_share_the_mark():
    # 0.12341 and 0.12349 both show as 12.3 -> both bold; with two tied for best nobody is second
    t = build_table(frame({"A": {"x": 0.12341, "y": 0.5}, "B": {"x": 0.12349, "y": 0.4},
                           "C": {"x": 0.1, "y": 0.4}}), TableConfig(**CFG))
    assert marks(t, "x") == {"A": {"best"}, "B": {"best"}, "C": set()}
    # y: A best, B and C tie for second -> both underlined
    assert marks(t, "y") == {"A": {"best"}, "B": {"second"}, "C": {"second"}}
    # at 3 decimals x is no longer tied
    t3 = build_table(frame({"A": {"x": 0.12341, "y": 0.5}, "B": {"x": 0.12349, "y": 0.4}}),
                     TableConfig(**CFG, decimals=3))
    assert marks(t3, "x") == {"A": {"second"}, "B": {"best"}}


def test_lower_is_better_columns():
    t = build_table(frame({"A": {"x": 0.5, "y": 0.1}, "B": {"x": 0.7, "y": 0.2}, "C": {"x": 0.6, "y": 0.3}}),
                    TableConfig(**CFG, lower_is_better=["y"]))
    assert marks(t, "x") == {"A": set(), "B": {"best"}, "C": {"second"}}
    assert marks(t, "y") == {"A": {"best"}, "B": {"second"}, "C": set()}


def test_missing_cells_are_dashes_and_not_ranked():
    t = build_table(frame({"A": {"x": None, "y": 0.9}, "B": {"x": 0.3, "y": 0.2}, "C": {"x": 0.2, "y": 0.1}}),
                    TableConfig(**CFG))
    assert marks(t, "x") == {"A": set(), "B": {"best"}, "C": {"second"}}
    a = next(r for r in t.rows if r.label == "A")
    assert a.cells["x"].mean is None and a.cells[AVG].mean is None  # AVG needs every benchmark
    assert marks(t, AVG) == {"A": set(), "B": {"best"}, "C": {"second"}}
    md = t.to_markdown()
    assert "| A | — | **90.0** | — |" in md
    assert "| A & -- &" not in t.to_latex() and "A & -- & \\textbf{90.0} & -- \\\\" in t.to_latex()
    assert "<td>—</td>" in t.to_html()
    assert t.to_frame().set_index("method").loc["A"].isna()["x"]


def test_base_row_is_never_emphasised_and_delta_avg():
    t = build_table(frame({"Base": {"x": 0.9, "y": 0.9}, "A": {"x": 0.5, "y": 0.1}, "B": {"x": 0.7, "y": 0.2}}),
                    TableConfig(**CFG, base="Base", delta_avg=True))
    assert [r.label for r in t.rows] == ["Base", "A", "B"]
    assert marks(t, "x") == {"Base": set(), "A": {"second"}, "B": {"best"}}
    b = next(r for r in t.rows if r.label == "B")
    assert b.cells[DELTA].mean == pytest.approx(((0.7 - 0.9) + (0.2 - 0.9)) / 2)
    assert "| B | **70.0** | **20.0** | **45.0** | **-45.0** |" in t.to_markdown()
    assert "| Base | 90.0 | 90.0 | 90.0 | — |" in t.to_markdown()


def test_strongest_baseline_italic_whole_row():
    rows = {"GRPO": {"x": 0.50, "y": 0.30}, "GSPO": {"x": 0.55, "y": 0.20}, "SAPO": {"x": 0.40, "y": 0.60},
            "SSPO": {"x": 0.60, "y": 0.65}}
    t = build_table(frame(rows), TableConfig(**CFG, baselines=["GRPO", "GSPO", "SAPO"]))
    # AVG: GRPO 40, GSPO 37.5, SAPO 50 -> SAPO is the strongest baseline: italic everywhere
    assert all("baseline" in r.cells[c].marks for r in t.rows if r.label == "SAPO" for c in ("x", "y", AVG))
    assert not any("baseline" in r.cells[c].marks for r in t.rows if r.label != "SAPO" for c in t.columns)
    # marks combine: SAPO is second in y and AVG -> underlined italic
    assert "<u>_60.0_</u>" in t.to_markdown() and "\\underline{\\textit{60.0}}" in t.to_latex()
    assert "<u><i>60.0</i></u>" in t.to_html()


def test_strongest_baseline_tie_italicises_one_row_the_one_the_footnote_names():
    # A and B both show AVG 40.0: the exact tie goes to the baseline listed first
    t = build_table(frame({"A": {"x": 0.5, "y": 0.3}, "B": {"x": 0.3, "y": 0.5}, "C": {"x": 0.9, "y": 0.9}}),
                    TableConfig(**CFG, baselines=["B", "A"]))
    assert {r.label for r in t.rows if "baseline" in r.cells[AVG].marks} == {"B"}
    # a tie at the shown precision (40.0 vs 40.0) goes to the better unrounded AVG: A (40.02)
    t = build_table(frame({"A": {"x": 0.5004, "y": 0.3}, "B": {"x": 0.3, "y": 0.5}, "C": {"x": 0.9, "y": 0.9}}),
                    TableConfig(**CFG, baselines=["B", "A"]))
    assert {r.label for r in t.rows if "baseline" in r.cells[AVG].marks} == {"A"}


def test_significance_footnote_names_the_italic_baseline_on_a_tie():
    seeds = [dict(model="m", method=m, config=m, seed=s, benchmark=b, value=v + 0.01 * s)
             for m, (x, y) in {"A": (0.5, 0.3), "B": (0.3, 0.5), "C": (0.9, 0.9)}.items()
             for s in range(3) for b, v in (("x", x), ("y", y))]
    t = build_table(pd.DataFrame(seeds), TableConfig(**CFG, baselines=["B", "A"], significance="auto"))
    italic = [r.label for r in t.rows if "baseline" in r.cells[AVG].marks]
    assert italic == ["B"] and any("strongest baseline B " in n for n in t.footnotes), t.footnotes


def _latex_checks(tex: str, ncols: int) -> None:
    depth = 0
    for ch in re.sub(r"\\[{}]", "", tex):  # escaped braces do not count
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    assert tex.count("\\begin{tabular}") == tex.count("\\end{tabular}") == 1
    assert "\\toprule" in tex and "\\bottomrule" in tex
    body = tex.split("\\toprule", 1)[1].split("\\bottomrule", 1)[0]
    for line in body.splitlines():
        if line.endswith("\\\\") and "multicolumn" not in line:
            assert line.count(" & ") == ncols - 1, line


def test_latex_well_formed_and_every_column_has_its_bold():
    df = pd.concat([frame({"Base": {"x": 0.1, "y": 0.1, "z_1": 0.1}, "GRPO": {"x": 0.5, "y": 0.3, "z_1": 0.4},
                           "A&B {x}": {"x": 0.5, "y": 0.2, "z_1": None}, "C_2": {"x": 0.4, "y": 0.3, "z_1": 0.41}},
                          model="Qwen3 1.7B"),
                    frame({"Base": {"x": 0.2, "y": 0.2, "z_1": 0.2}, "GRPO": {"x": 0.6, "y": 0.7, "z_1": 0.8},
                           "C_2": {"x": 0.6, "y": 0.1, "z_1": 0.8}}, model="Qwen3_4B")])
    cfg = TableConfig(select_by="AVG", benchmarks=["x", "y", "z_1"], base="Base", delta_avg=True, std=True,
                      baselines=["GRPO"])
    t = build_table(df, cfg)
    tex = t.to_latex(caption="Pass@1 (%) & more", label="tab:main")
    _latex_checks(tex, ncols=1 + len(t.columns))
    assert "A\\&B \\{x\\}" in tex and "C\\_2" in tex and "z\\_1" in tex and "Qwen3\\_4B" in tex
    assert tex.count("\\multicolumn{6}{c}") == 2 and "$\\Delta$ Avg" in tex
    # every column of every model block has its bold best (ties included)
    blocks = tex.split("\\multicolumn")[1:]
    for block in blocks:
        lines = [ln for ln in block.splitlines()[1:] if ln.endswith("\\\\")]
        cells = [ln[:-2].split(" & ")[1:] for ln in lines]
        for j in range(len(t.columns)):
            assert any("\\textbf" in c[j] for c in cells), (block, j)
    # ties: x in block 1 (GRPO 50.0 == A&B 50.0) both bold; block 2 x and z_1 tied too
    # (GRPO is the strongest baseline, so its cells are \\textbf{\\textit{...}})
    def bold(block, v):
        return len(re.findall(r"\\textbf\{(?:\\textit\{)?" + re.escape(v), block))
    assert bold(blocks[0], "50.0") == 2 and "\\textbf{\\textit{50.0}}" in blocks[0]
    assert bold(blocks[1], "60.0") == 2 and bold(blocks[1], "80.0") == 2
