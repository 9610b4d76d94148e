"""Curves from anywhere: a long-format CSV or Parquet file of pass rate against compute, checked, for `sweep fit`.

    from dashboards.collect.curve_files import read_curves
    curves = read_curves("curves.csv", x="auto", scale=None, benchmark=None)
    curves.frame      # model, method, seed, x, value (value in [0, 1]); one curve per (model, method, seed)
    curves.x_label    # "step" or "compute"; curves.scale: what the file's values were divided by; curves.notes

The file has one row per evaluation: ``method``, ``seed``, ``step`` and/or ``compute``, ``value``, and
optionally ``model`` (one unnamed block when absent) and ``benchmark`` (then a point's value is the mean
over the benchmarks logged at it, or only ``benchmark``'s rows when one is chosen). ``x="auto"`` fits on
``compute`` when the file has it, else on ``step``. Values are pass rates: in [0, 1], or in [0, scale]
with ``scale`` given (100 for percentages). Every problem is a ValueError naming the file, the column or
the curve, and what was expected: a missing column, a value that is not a number, a negative compute,
values outside [0, 1] without a scale, a point given twice, a method with fewer points than a fit needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dashboards.collect.sample_results import numeric_column

REQUIRED = ("method", "seed", "value")
X_COLUMNS = ("step", "compute")
MIN_POINTS = 4
"""Points (over a method's seeds, at compute > 0) below which no fit is attempted: the sigmoid has 3 parameters."""
MIN_COMPUTES = 3
"""Distinct compute values (> 0) below which no fit is attempted: three parameters need three places."""


@dataclass
class CurvesFile:
    frame: pd.DataFrame
    x_label: str
    scale: float
    notes: list[str] = field(default_factory=list)


def _read(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise FileNotFoundError(f"curves file not found: {path}")
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            return pd.read_parquet(path)
        except ImportError as err:
            raise ValueError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow), or give a CSV ({err})") from None
    if path.suffix.lower() not in (".csv", ".txt"):
        raise ValueError(f"{path}: expected a .csv or .parquet file of curves")
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: empty file; expected a header {', '.join(REQUIRED)}, step and/or compute") from None


def read_curves(path: str | Path, *, x: str = "auto", scale: float | None = None,
                benchmark: str | None = None) -> CurvesFile:
    path = Path(path)
    df = _read(path)
    df.columns = [str(c).strip() for c in df.columns]
    expected = f"columns {', '.join(REQUIRED)}, step and/or compute (optional: model, benchmark)"
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing or not any(c in df.columns for c in X_COLUMNS):
        missing += [] if any(c in df.columns for c in X_COLUMNS) else ["step or compute"]
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; expected {expected}; found: {', '.join(df.columns)}")
    if df.empty:
        raise ValueError(f"{path}: no rows below the header")
    if x not in ("auto", *X_COLUMNS):
        raise ValueError(f"x: expected auto, step or compute, got {x!r}")
    column = ("compute" if "compute" in df.columns else "step") if x == "auto" else x
    if column not in df.columns:
        raise ValueError(f"{path}: --x {column}: the file has no column {column!r}; found: {', '.join(df.columns)}")
    notes = []
    if "model" not in df.columns:
        df["model"] = ""
    if "benchmark" in df.columns:
        df["benchmark"] = df["benchmark"].astype(str)
        if benchmark is not None:
            if benchmark not in set(df["benchmark"]):
                raise ValueError(f"{path}: --benchmark {benchmark}: not in the file's benchmarks "
                                 f"{sorted(set(df['benchmark']))}")
            df = df[df["benchmark"] == benchmark]
    elif benchmark is not None:
        raise ValueError(f"{path}: --benchmark {benchmark}: the file has no benchmark column")
    df["x"] = numeric_column(df, column, path)
    df["value"] = numeric_column(df, "value", path)
    if (df["x"] < 0).any():
        i = int((df["x"] < 0).to_numpy().argmax())
        raise ValueError(f"{path}: column {column!r}: {df['x'].iloc[i]:g} is negative; expected the compute spent (>= 0)")
    for c in ("model", "method", "seed"):
        df[c] = df[c].astype(str)
    keys = ["model", "method", "seed", "x"]
    if "benchmark" in df.columns:
        twice = df.duplicated([*keys, "benchmark"])
        if twice.any():
            raise ValueError(f"{path}: {_point(df[twice].iloc[0], column)} of benchmark {df[twice]['benchmark'].iloc[0]!r} "
                             "is given twice; expected one row per model, method, seed, compute and benchmark")
        n_bench = df["benchmark"].nunique()
        df = df.groupby(keys, as_index=False, sort=False)["value"].mean()
        if n_bench > 1:
            notes.append(f"a point's value is the mean over {n_bench} benchmarks (--benchmark chooses one)")
    twice = df.duplicated(keys)
    if twice.any():
        raise ValueError(f"{path}: {_point(df[twice].iloc[0], column)} is given twice; expected one row per model, "
                         f"method, seed and {column} (or a benchmark column)")
    low, high = float(df["value"].min()), float(df["value"].max())
    if scale is None:
        if low < 0 or high > 1:
            raise ValueError(f"{path}: column 'value' runs from {low:g} to {high:g}, outside [0, 1]: give --scale "
                             "(e.g. --scale 100 when the values are percentages); expected pass rates")
        scale = 1.0
    elif scale <= 0:
        raise ValueError(f"--scale: expected a number > 0, got {scale:g}")
    elif low < 0 or high > scale:
        raise ValueError(f"{path}: column 'value' runs from {low:g} to {high:g}, outside [0, {scale:g}] (--scale {scale:g})")
    df["value"] = df["value"] / scale
    for (model, method), g in df.groupby(["model", "method"], sort=False):
        spent = g["x"][g["x"] > 0]
        if len(spent) < MIN_POINTS or spent.nunique() < MIN_COMPUTES:
            name = f"{model} / {method}" if model else str(method)
            raise ValueError(f"{path}: {name}: {len(spent)} point(s) at {spent.nunique()} value(s) of {column} > 0; a fit "
                             f"needs at least {MIN_POINTS} points at {MIN_COMPUTES} values (the sigmoid has 3 parameters)")
    return CurvesFile(df[["model", "method", "seed", "x", "value"]].reset_index(drop=True), column, scale, notes)


def _point(row, column: str) -> str:
    model = f"model {row['model']!r}, " if row["model"] else ""
    return f"the point ({model}method {row['method']!r}, seed {row['seed']}, {column} {row['x']:g})"
