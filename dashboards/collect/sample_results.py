"""Per-sample results from any evaluator -> the (results, problems) frames of a paired paper table.

    from dashboards.collect.sample_results import load_samples, load_lm_eval, read_mapping, parse_run
    data = load_samples("samples.csv")                        # or .parquet: the long per-sample format below
    data = load_lm_eval([parse_run("GRPO@0=out/grpo_s0"), ...], metric="exact_match")
    data = load_lm_eval(*read_mapping("runs.yaml"))           # the same from a YAML mapping
    table = build_table(data.results, cfg, problems=data.problems)   # dashboards/tables/build.py: paired test
    for note in data.notes: print("note:", note)             # what the reader should know (stderr)

The long per-sample format, one row per sample (a CSV or a Parquet file):

    model,method,seed,benchmark,problem,correct            optional: sample, config (default: the method)
    qwen3,GRPO,0,gsm8k,17,1                                  correct: 0/1, or a score in [0, 1]
    qwen3,GRPO,0,gsm8k,17,0

A problem's value in a run (model, method, config, seed, benchmark) is the mean of `correct` over its
samples; the run's value on the benchmark is the mean of those over the problems (so a problem weighs
the same whatever its number of samples, as in `sweep report`, whose per-problem verdicts have this
form: dashboards/collect/verdicts.py). Without a `sample` column every row is a sample; with one, a repeated
(run, problem, sample) is an error. Runs of one benchmark may evaluate different problems: the paired
test compares the problems two methods share, and a note says so; a method whose seeds saw different
problems keeps its means but not its paired test (a note names it).

lm-evaluation-harness (`lm_eval ... --log_samples --output_path DIR`) writes one
`samples_<task>_<timestamp>.jsonl` per task, one JSON line per document and filter: `doc_id`, `filter`,
`metrics` (the metric names) and each metric's value. One DIR is one run (method, seed); its task is
the benchmark, `doc_id` the problem and the chosen metric (`exact_match` unless told) the problem's
value. A task logged several times in DIR: the newest file counts, and a note says so. The mapping:

    model: tiny-qwen3            # optional: the table's model block (default: none)
    metric: exact_match          # optional; `acc` for multiple-choice tasks
    filter: strict-match         # needed when a task logged several filters
    runs:                        # paths relative to this file
      - {method: GRPO, seed: 0, path: out/grpo_s0}
      - {method: DHPO, seed: 0, path: out/dhpo_s0, config: dhpo-lr1e-6}

Every error is a ValueError (FileNotFoundError for a missing path) that names the file, and the column
and row (CSV rows count from 1 below the header; line = the file's line) or the JSON line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

KEYS = ("model", "method", "seed", "benchmark", "problem")
SAMPLE_COLUMNS = (*KEYS, "correct")
OPTIONAL = ("sample", "config")
RUN = ["model", "method", "config", "seed", "benchmark"]
MAPPING_KEYS = ("model", "metric", "filter", "runs")
RUN_KEYS = ("method", "seed", "path", "config", "model")
_SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+?)(?:_(?P<time>\d{4}-\d{2}-\d{2}T[\d\-.:]+))?\.jsonl$")


@dataclass
class SampleResults:
    """What `build_table(results, cfg, problems=problems)` takes, and the notes for the reader."""

    results: pd.DataFrame  # model, method, config, seed, benchmark, value (mean over problems)
    problems: pd.DataFrame  # model, method, config, seed, benchmark, problem, value (mean over samples)
    notes: list[str] = field(default_factory=list)


def where(path: Path, index: int) -> str:
    """A row of a file as the user finds it: 'row 3 (line 4)' in a CSV (header on line 1), else 'row 3'."""
    return f"row {index + 1}" + (f" (line {index + 2})" if path.suffix.lower() == ".csv" else "")


def read_table(path: Path, expected: str, **csv_options) -> pd.DataFrame:
    """A results file (.parquet/.pq, otherwise CSV) as a frame; an empty or unreadable file is a ValueError naming
    it and what it should hold (``expected``: its columns), not the reader's own message."""
    parquet = path.suffix.lower() in (".parquet", ".pq")
    try:
        if parquet:
            return pd.read_parquet(path)
        return pd.read_csv(path, **csv_options)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: empty file; expected a header with the columns {expected}") from None
    except (OSError, ValueError, pd.errors.ParserError) as err:  # pyarrow's errors are OSError/ValueError kinds
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{path}: not a readable {'Parquet' if parquet else 'CSV'} "
                         f"file ({first}); expected the columns {expected}") from None


def numeric_column(df: pd.DataFrame, column: str, path: Path, allow_empty: bool = False) -> pd.Series:
    """`df[column]` as floats; ValueError naming the file, the column and the first row that is not a finite
    number (inf, 1e999 and text are refused; an empty cell, NA or NaN counts as one unless `allow_empty`)."""
    raw = df[column]
    if raw.dtype == bool:
        return raw.astype(float)
    values = pd.to_numeric(raw, errors="coerce")
    infinite = values.abs() == float("inf")
    bad = (values.isna() if not allow_empty else values.isna() & raw.notna()) | infinite
    if bad.any():
        i = int(bad.to_numpy().argmax())
        cell = raw.iloc[i]
        text = repr(cell) if isinstance(cell, str) else str(cell)  # a number read as one: inf, not np.float64(inf)
        shown = "empty" if pd.isna(cell) else f"{text} is not a finite number" if infinite.iloc[i] \
            else f"{text} is not a number"
        more = f" ({int(bad.sum())} such rows)" if bad.sum() > 1 else ""
        raise ValueError(f"{path}: column {column!r}, {where(path, i)}: {shown}{more}")
    return values.astype(float)


def is_sample_file(path: str | Path) -> bool:
    """Whether a CSV/Parquet file is per-sample (has `problem` and `correct` columns); False when unreadable."""
    path = Path(path)
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
        else:
            names = list(pd.read_csv(path, nrows=0).columns)
    except Exception:  # noqa: BLE001 - not a table here: the per-seed reader says why
        return False
    return {"problem", "correct"} <= {str(c).strip() for c in names}


def load_samples(path: str | Path) -> SampleResults:
    """Read and check a long per-sample file (module docstring) into table frames."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"results file not found: {path}")
    df = read_table(path, ", ".join(SAMPLE_COLUMNS),
                    dtype={c: str for c in ("model", "method", "config", "benchmark", "problem", "sample")})
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in SAMPLE_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}. A per-sample file has the columns "
                         f"{', '.join(SAMPLE_COLUMNS)} (optional: {', '.join(OPTIONAL)}); found: {', '.join(df.columns)}")
    if df.empty:
        raise ValueError(f"{path}: no rows below the header")
    for c in [*KEYS, *[c for c in OPTIONAL if c in df.columns]]:
        empty = df[c].isna()
        if empty.any():
            raise ValueError(f"{path}: column {c!r}, {where(path, int(empty.to_numpy().argmax()))}: empty")
    df["correct"] = numeric_column(df, "correct", path)
    outside = (df["correct"] < 0) | (df["correct"] > 1)
    if outside.any():
        i = int(outside.to_numpy().argmax())
        raise ValueError(f"{path}: column 'correct', {where(path, i)}: {df['correct'].iloc[i]:g} is outside [0, 1] "
                         "(1 = judged correct, 0 = not, or a score in between)")
    if "config" not in df.columns:
        df["config"] = df["method"]
    if "sample" in df.columns:
        dup = df.duplicated([*RUN, "problem", "sample"], keep=False)
        if dup.any():
            rows = [where(path, int(i)) for i in df.index[dup][:2]]
            raise ValueError(f"{path}: {rows[0]} and {rows[1]} are the same sample (model, method, config, seed, "
                             f"benchmark, problem, sample); {int(dup.sum())} rows repeat one")
    for c in ("model", "method", "config", "benchmark", "problem"):
        df[c] = df[c].astype(str).str.strip()
    return aggregate(df, str(path))


def aggregate(samples: pd.DataFrame, source: str) -> SampleResults:
    """Checked samples (RUN columns, problem, correct) -> per-problem and per-run values, and the notes."""
    problems = (samples.groupby([*RUN, "problem"], sort=False, observed=True)["correct"].mean()
                .rename("value").reset_index())
    results = problems.groupby(RUN, sort=False, observed=True)["value"].mean().reset_index()
    return SampleResults(results, problems, _problem_notes(problems, source))


def _problem_notes(problems: pd.DataFrame, source: str) -> list[str]:
    notes = []
    sets = problems.groupby(RUN, sort=False, observed=True)["problem"].agg(frozenset)
    for (model, method, config, bench), per_seed in sets.groupby(level=[0, 1, 2, 4], sort=False):
        if per_seed.nunique() > 1:
            who = f"{model} " if model else ""
            sizes = ", ".join(f"seed {s}: {len(p)}" for (_, _, _, s, _), p in per_seed.items())
            notes.append(f"{source}: {who}{method} ({config}) on {bench}: its seeds saw different problems "
                         f"({sizes}); its means stand, but its cells get no paired test")
    for (model, bench), per_run in sets.groupby(level=[0, 4], sort=False):
        if per_run.nunique() > 1:
            shared = frozenset.intersection(*per_run)
            every = frozenset.union(*per_run)
            notes.append(f"{source}: {model + ' ' if model else ''}{bench}: the runs evaluated different problems "
                         f"({len(shared)} shared of {len(every)}); each mean is over its run's own problems, the "
                         "paired test compares the shared ones")
    return notes


# --------------------------------------------------------------------------- lm-evaluation-harness

@dataclass
class Run:
    """One lm-eval output directory: a (model, method, config, seed) run."""

    method: str
    path: Path
    seed: int | str | None = None
    config: str | None = None
    model: str | None = None


def _seed(text: object) -> int | str:
    s = str(text).strip()
    return int(s) if re.fullmatch(r"-?\d+", s) else s


def parse_run(item: str) -> Run:
    """`METHOD[@SEED]=DIR` -> Run; ValueError explaining the form."""
    name, eq, path = item.partition("=")
    method, at, seed = name.partition("@")
    if not eq or not method.strip() or not path.strip() or (at and not seed.strip()):
        raise ValueError(f"{item!r}: expected METHOD[@SEED]=DIR (an lm-eval --output_path), e.g. GRPO@0=out/grpo_s0")
    return Run(method.strip(), Path(path.strip()), _seed(seed) if at else None)


def read_mapping(path: str | Path) -> tuple[list[Run], dict]:
    """A YAML mapping (module docstring) -> (runs, {'metric', 'filter'} given); run paths relative to the file."""
    import yaml

    from contract.suggest import did_you_mean

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"mapping file not found: {path}")
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("runs"), list) or not spec["runs"]:
        raise ValueError(f"{path}: expected a mapping with a non-empty list `runs:` of {{method, seed, path}} "
                         "(optional: model, metric, filter)")
    for k in spec:
        if k not in MAPPING_KEYS:
            raise ValueError(f"{path}: unknown key {k!r}{did_you_mean(k, MAPPING_KEYS)} (known: {', '.join(MAPPING_KEYS)})")
    runs = []
    for i, r in enumerate(spec["runs"], 1):
        if not isinstance(r, dict) or not r.get("method") or not r.get("path"):
            raise ValueError(f"{path}: runs[{i}]: expected {{method: NAME, seed: N, path: DIR}}, got {r!r}")
        for k in r:
            if k not in RUN_KEYS:
                raise ValueError(f"{path}: runs[{i}]: unknown key {k!r}{did_you_mean(k, RUN_KEYS)} "
                                 f"(known: {', '.join(RUN_KEYS)})")
        model = r.get("model", spec.get("model"))
        runs.append(Run(str(r["method"]), path.parent / str(r["path"]), None if r.get("seed") is None else _seed(r["seed"]),
                        None if r.get("config") is None else str(r["config"]), None if model is None else str(model)))
    return runs, {k: str(spec[k]) for k in ("metric", "filter") if spec.get(k) is not None}


def runs_in(root: str | Path) -> list[Run]:
    """The runs of a directory whose subdirectories are named METHOD@SEED (or METHOD), e.g. out/GRPO@0/."""
    root = Path(root)
    folders = [d for d in sorted(root.iterdir()) if d.is_dir() and any(d.rglob("samples_*.jsonl"))]
    model_folder = next((d for d in folders if "@" not in d.name and any(d.glob("samples_*.jsonl"))), None)
    if any(root.glob("samples_*.jsonl")) or model_folder is not None:
        # lm-eval writes DIR/<model>/samples_*.jsonl: this is one run's --output_path, not a folder of runs
        raise ValueError(f"{root}: one run's lm-eval output (samples files in {model_folder or root}): give it as "
                         f"METHOD[@SEED]={root}, one item per run, or put each run in {root}/METHOD@SEED/")
    if not folders:
        raise ValueError(f"{root}: no run folders with lm-eval samples_*.jsonl files (expected {root}/METHOD@SEED/...)")
    return [Run(d.name.partition("@")[0], d, _seed(d.name.partition("@")[2]) if "@" in d.name else None)
            for d in folders]


def _sample_files(run: Run, notes: list[str]) -> dict[str, Path]:
    """{task: the newest samples file of that task} under the run's directory."""
    if not run.path.is_dir():
        raise FileNotFoundError(f"{run.method}: lm-eval output directory not found: {run.path}")
    found: dict[str, list[tuple[str, Path]]] = {}
    for p in sorted(run.path.rglob("samples_*.jsonl")):
        m = _SAMPLES_FILE.match(p.name)
        if m:
            found.setdefault(m["task"], []).append((m["time"] or "", p))
    if not found:
        raise ValueError(f"{run.path}: no lm-eval samples_<task>_<timestamp>.jsonl files (run lm_eval with "
                         "--log_samples --output_path DIR)")
    out = {}
    for task, files in found.items():
        folders = sorted({str(p.parent) for _, p in files})
        if len(folders) > 1:
            raise ValueError(f"{run.path}: task {task!r} was logged in several folders ({', '.join(folders)}), "
                             "e.g. by several models: give the one folder of this run")
        files.sort()
        if len(files) > 1:
            notes.append(f"{run.path}: {len(files)} sample files of task {task!r}: using the newest, {files[-1][1].name}")
        out[task] = files[-1][1]
    return out


def _task_values(path: Path, metric: str, filter_: str | None) -> tuple[list[str], list[float]]:
    """(doc ids, metric values) of one samples file, for the chosen filter."""
    lines = []
    with path.open(encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if text.strip():
                try:
                    lines.append((n, json.loads(text)))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}: line {n}: not JSON ({err.msg})") from None
    filters = list(dict.fromkeys(str(d.get("filter", "none")) for _, d in lines))
    if filter_ is None and len(filters) > 1:
        raise ValueError(f"{path}: several lm-eval filters ({', '.join(filters)}): choose one with --filter "
                         "(or `filter:` in the mapping)")
    chosen = filter_ if filter_ is not None else (filters[0] if filters else "none")
    ids, values, seen = [], [], {}
    for n, d in lines:
        if str(d.get("filter", "none")) != chosen:
            continue
        if "doc_id" not in d:
            raise ValueError(f"{path}: line {n}: no doc_id (not an lm-eval samples file?)")
        if metric not in d:
            named = d.get("metrics") or [k for k, v in d.items() if isinstance(v, (int, float)) and k != "doc_id"]
            raise ValueError(f"{path}: line {n}: no metric {metric!r}; this task logs {', '.join(map(str, named))} "
                             "(choose one with --metric, or `metric:` in the mapping)")
        v = d[metric]
        if isinstance(v, bool):
            v = float(v)
        if not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ValueError(f"{path}: line {n}: {metric} = {v!r} is not a per-document score in [0, 1] "
                             "(a corpus-level or unbounded metric cannot be paired per problem)")
        doc = str(d["doc_id"])
        if doc in seen:
            raise ValueError(f"{path}: lines {seen[doc]} and {n}: doc_id {doc} twice under filter {chosen!r}")
        seen[doc] = n
        ids.append(doc)
        values.append(float(v))
    if not ids:
        raise ValueError(f"{path}: no lines under filter {chosen!r}; its filters: {', '.join(filters) or 'none'}")
    return ids, values


def load_lm_eval(runs: list[Run], options: dict | None = None, *, metric: str | None = None,
                 filter_: str | None = None, model: str | None = None) -> SampleResults:
    """The runs' lm-eval samples as table frames. `options`: read_mapping's; keywords override them. A run
    without a seed gets the next free number among its method's runs (0, 1, ...)."""
    options = options or {}
    metric = metric or options.get("metric") or "exact_match"
    filter_ = filter_ if filter_ is not None else options.get("filter")
    notes: list[str] = []
    frames, keys = [], {}
    for run in runs:
        label = model if model is not None else (run.model or "")
        if run.seed is None:
            taken = {k[3] for k in keys if k[:3] == (label, run.method, run.config or run.method)}
            run.seed = next(i for i in range(len(runs) + 1) if i not in taken)
        key = (label, run.method, run.config or run.method, run.seed)
        if key in keys or run.path in keys.values():
            twin = next(k for k, p in keys.items() if k == key or p == run.path)
            raise ValueError(f"{run.method}@{run.seed} ({run.path}) and {twin[1]}@{twin[3]} ({keys[twin]}): the same "
                             "run given twice (one METHOD@SEED and one folder per lm-eval run)")
        keys[key] = run.path
        for task, path in _sample_files(run, notes).items():
            ids, values = _task_values(path, metric, filter_)
            frames.append(pd.DataFrame({"model": label, "method": run.method, "config": run.config or run.method,
                                        "seed": [run.seed] * len(ids), "benchmark": task, "problem": ids,
                                        "correct": values}))
    data = aggregate(pd.concat(frames, ignore_index=True), "lm-eval samples")
    data.notes[:0] = notes
    return data
