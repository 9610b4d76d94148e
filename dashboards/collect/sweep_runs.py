"""Read a sweep's runs from MLflow (or a results CSV/parquet) into pandas.

    from dashboards.collect.sweep_runs import collect, find_runs, load_results
    data = collect("dhpo_vs_baselines", tracking_uri="sqlite:////abs/mlflow.db")
    found = find_runs("dhpo_vs_baselines", tracking_uri=uri); data = collect(found=found, keys=[...])  # two steps
    data.trials    # one row per trial run: run_id, tags, params.<key>, final metric values
    data.history   # long: run_id, trial_id, method, config, seed, model, key, step, value
    results = load_results("results.csv")   # long: model, method, benchmark, value[, seed, config]

Runs are found by the sweep runner's layout (DESIGN.md "MLflow layout"): experiment = sweep
name, trial runs tagged role=trial and nested under the parent (tag mlflow.parentRunId). A sqlite
store's runs, tags, params and latest metrics are read from its tables (tracking_store/tables.py:
2,000 runs in well under a second, against ~10 s through MLflow's ORM); other stores through MLflow.

Histories are read in bulk by tracking_store/history.py: a sqlite store's `metrics` table directly, an
`mlflow server` with one REST call per key per 100 runs, any other store per (run, key), from a thread pool.
Pass `bulk=False` to skip the sqlite reads.
Only the histories of ``keys`` are read when given: a report reads the ~6 keys it shows, not all 16-32.

Any other store is read through the sweep's read copy where it has one (tracking_store/read_copy.py: the finished
trial runs and their histories in a few files of the parent run; what ended after it, what still runs, from the
store): ``read="auto"`` (default: the copy for stores other than a sqlite file, whose tables are as quick),
``"copy"`` (the copy on any store that has one), ``"direct"`` (never the copy).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from contract.suggest import did_you_mean
from dashboards.collect.sample_results import numeric_column, read_table
from tracking_store.client import StoreMissing
from tracking_store.rest_reads import open_reader
from tracking_store.history import joined_history, read_history_client, read_history_sqlite
from tracking_store.read_copy import CopyView, open_copy
from tracking_store.roles import PARENT, PARENT_RUN_TAG, TRIAL, children_filter, role_filter
from tracking_store.tables import RunRecord, experiment_id, experiment_names, read_runs
from tracking_store.uri import mask_uri, resolve_uri, sqlite_path

TRIAL_TAGS = ("trial_id", "method", "config", "algorithm", "seed", "model", "backend", "sweep", "failure_reason",
              "stopped_by")
HISTORY_COLUMNS = ["run_id", "trial_id", "method", "config", "seed", "model", "key", "step", "value"]
RESULT_COLUMNS = ("model", "method", "benchmark", "value")
OPTIONAL_RESULT_COLUMNS = ("seed", "config")
_SEED_SUFFIX = re.compile(r"\.s(\d+)$")  # trial ids end in .s<seed>


@dataclass
class SweepData:
    """Everything a report needs from one sweep."""

    sweep: str
    trials: pd.DataFrame
    history: pd.DataFrame
    tracking_uri: str | None = None
    experiment_id: str | None = None
    parent_run_id: str | None = None
    provenance: dict[str, str] = field(default_factory=dict)
    """The parent run's provenance.* tags (sweeps/tracking/provenance.py), without the prefix."""


def _client(tracking_uri: str | None):
    """A client of an existing store (``resolve_uri``'s rule for None); ValueError naming a missing one."""
    uri = resolve_uri(tracking_uri)
    try:
        return open_reader(uri), uri
    except StoreMissing as err:
        raise ValueError(str(err)) from None


def _find_experiment(client, sweep: str):
    exp = client.get_experiment_by_name(sweep)
    if exp is not None:
        return exp
    names = sorted(e.name for e in client.search_experiments())
    listing = ", ".join(names) if names else "(none)"
    raise ValueError(f"unknown sweep {sweep!r}{did_you_mean(sweep, names)}: no MLflow experiment of that name at "
                     f"{mask_uri(client.tracking_uri)}. Experiments there: {listing}")


def _search(client, exp_id: str, filter_string: str) -> list[RunRecord]:
    runs, token = [], None
    while True:
        page = client.search_runs([exp_id], filter_string=filter_string, max_results=1000,
                                  page_token=token)
        runs.extend(RunRecord.of(r) for r in page)
        token = page.token
        if not token:
            return runs


def _trial_runs(client, exp_id: str, parent_run_id: str | None) -> list[RunRecord]:
    if parent_run_id:
        return _search(client, exp_id, children_filter(parent_run_id))
    runs = _search(client, exp_id, role_filter(TRIAL))
    if not runs:  # stores written without role tags: every nested run is a trial
        runs = [r for r in _search(client, exp_id, "") if PARENT_RUN_TAG in r.tags]
    return runs


def _runs_frame(runs: list[RunRecord]) -> pd.DataFrame:
    rows = []
    for r in runs:
        tags = r.tags
        row = {"run_id": r.run_id, "run_name": r.run_name, "status": r.status,
               "start_time": r.start_time, "parent_run_id": tags.get(PARENT_RUN_TAG),
               "artifact_uri": r.artifact_uri}
        row.update({t: tags.get(t) for t in TRIAL_TAGS})
        row["trial_id"] = row["trial_id"] or r.run_name or r.run_id
        row["config"] = row["config"] or _SEED_SUFFIX.sub("", row["trial_id"])
        if row["seed"] is None and (m := _SEED_SUFFIX.search(row["trial_id"])):
            row["seed"] = m.group(1)
        row["method"] = row["method"] or row["algorithm"] or row["config"]
        row["model"] = row["model"] or "model"
        row.update({f"params.{k}": v for k, v in r.params.items()})
        rows.append(row)
    cols = ["run_id", "run_name", "status", "start_time", "parent_run_id", "artifact_uri", *TRIAL_TAGS]
    frame = pd.DataFrame(rows, columns=cols if not rows else None)
    frame["seed"] = pd.to_numeric(frame["seed"], errors="coerce").astype("Int64")
    frame = frame.sort_values(["start_time", "trial_id"], kind="stable")
    dup = frame["trial_id"].duplicated(keep=False)
    if dup.any():  # never pick one silently: which run is the trial's is the user's call
        shown = frame.loc[dup].groupby("trial_id", observed=True)["run_id"].apply(list).head(3).to_dict()
        raise ValueError(f"{frame.loc[dup, 'trial_id'].nunique()} trial id(s) have several runs in this sweep, e.g. "
                         f"{shown}; a table would have to pick one. Delete the extra runs (mlflow runs delete "
                         "--run-id RUN_ID) or report them from another experiment")
    return frame.reset_index(drop=True)


def final_values(history: pd.DataFrame) -> pd.DataFrame:
    """run_id x key frame of each metric's value at its last logged step."""
    if history.empty:
        return pd.DataFrame(index=pd.Index([], name="run_id"))
    last = history.sort_values(["run_id", "key", "step"], kind="stable")
    last = last.drop_duplicates(["run_id", "key"], keep="last")
    return last.pivot_table(index="run_id", columns="key", values="value", aggfunc="last", observed=True)


def _with_meta(hist: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Add trial_id, method, config, seed, model per point (categoricals, via the run codes)."""
    rc = hist["run_id"].cat.codes.to_numpy()  # run codes follow trials' row order
    out = {"run_id": hist["run_id"]}
    for col in ("trial_id", "method", "config", "seed", "model"):
        if col == "seed":
            out[col] = pd.array(trials["seed"].to_numpy()[rc], dtype="Int64")
            continue
        codes, uniques = pd.factorize(trials[col].astype(object), use_na_sentinel=False)
        out[col] = pd.Categorical.from_codes(codes[rc], categories=pd.Index(uniques, dtype=object))
    out.update({"key": hist["key"], "step": hist["step"], "value": hist["value"]})
    return pd.DataFrame(out)[HISTORY_COLUMNS]


@dataclass
class SweepRuns:
    """A sweep's runs as found, before any history is read: what a report's settings and keys come from."""

    sweep: str
    tracking_uri: str
    experiment_id: str
    runs: list[RunRecord]
    parent: RunRecord | None
    client: object | None = None
    """An MlflowClient where the store was read through MLflow; None where its tables were read directly."""
    copy: CopyView | None = None
    """The sweep's read copy where the runs were read through it."""


def _sqlite_runs(db: Path, uri: str, sweep: str) -> SweepRuns:
    """By name, from a sqlite store's tables (tracking_store/tables.py): no MLflow import, no ORM."""
    exp_id = experiment_id(db, sweep)
    if exp_id is None:
        names = experiment_names(db)
        raise ValueError(f"unknown sweep {sweep!r}{did_you_mean(sweep, names)}: no MLflow experiment of that name at "
                         f"{mask_uri(uri)}. Experiments there: {', '.join(names) or '(none)'}")
    parents = read_runs(db, exp_id, role=PARENT, params=False)
    runs = read_runs(db, exp_id, role=TRIAL)
    if not runs:  # stores written without role tags: every nested run is a trial
        runs = [r for r in read_runs(db, exp_id) if PARENT_RUN_TAG in r.tags]
    newest = max(parents, key=lambda r: r.start_time or 0) if parents else None
    return SweepRuns(sweep, uri, exp_id, runs, newest)


READS = ("auto", "copy", "direct")


def _through_copy(client, exp_id: str, parents: list[RunRecord], parent_run_id: str | None) -> CopyView | None:
    """The trial runs through the read copy of the sweep's first parent run (where the driver writes it), only
    ``parent_run_id``'s children when given; None without a copy."""
    if not parents:
        return None
    view = open_copy(client, exp_id, min(parents, key=lambda r: (r.start_time or 0, r.run_id)))
    if view is not None and parent_run_id:
        view.runs = [r for r in view.runs if r.tags.get(PARENT_RUN_TAG) == parent_run_id]
    return view


def find_runs(sweep: str | None = None, *, tracking_uri: str | None = None, parent_run_id: str | None = None,
              bulk: bool = True, read: str = "auto") -> SweepRuns:
    """A sweep's trial runs and its parent run: by experiment (= sweep) name, or by the parent run's id.
    A sqlite store found by name is read from its tables (``bulk=False``: through MLflow); ``read``: whether the
    sweep's read copy is used (module docstring)."""
    if read not in READS:
        raise ValueError(f"read={read!r}: expected one of {', '.join(READS)}")
    if not sweep and not parent_run_id:
        raise ValueError("collect: give a sweep (experiment) name or a parent_run_id")
    db = sqlite_path(tracking_uri) if bulk else None
    if db is not None and not db.exists():
        raise ValueError(f"no MLflow store at {db}: nothing was recorded there; a sweep tracked elsewhere: "
                         "--tracking-uri URI or MLFLOW_TRACKING_URI, or --run-dir DIR")
    if db is not None and not parent_run_id and read != "copy":
        return _sqlite_runs(db, tracking_uri, sweep)
    client, uri = _client(tracking_uri)
    use_copy = read == "copy" or (read == "auto" and sqlite_path(uri) is None)
    if parent_run_id:  # only this parent's children
        run = client.get_run(parent_run_id)
        parent, exp_id = RunRecord.of(run), str(run.info.experiment_id)
        sweep = sweep or parent.tags.get("sweep") or client.get_experiment(exp_id).name
        view = _through_copy(client, exp_id, _search(client, exp_id, role_filter(PARENT)), parent_run_id) if use_copy else None
        runs = view.runs if view is not None else _trial_runs(client, exp_id, parent_run_id)
        return SweepRuns(sweep, uri, exp_id, runs, parent, client, view)
    exp_id = _find_experiment(client, sweep).experiment_id  # every trial run; reports attach to the newest parent
    parents = _search(client, exp_id, role_filter(PARENT))
    view = _through_copy(client, exp_id, parents, None) if use_copy else None
    runs = view.runs if view is not None else _trial_runs(client, exp_id, None)
    return SweepRuns(sweep, uri, str(exp_id), runs, parents[0] if parents else None, client, view)


def _histories(found: SweepRuns, run_ids: list[str], run_keys: dict[str, list[str]], bulk: bool,
               workers: int) -> pd.DataFrame:
    """The runs' histories of their keys: from the read copy where it holds them, the rest from the store."""
    keys = sorted({k for ks in run_keys.values() for k in ks})
    view = found.copy
    copied = ([rid for rid in run_ids if rid not in view.live and all(view.copy.holds(rid, k) for k in run_keys[rid])]
              if view is not None else [])
    rest = [rid for rid in run_ids if rid not in set(copied)]
    db = sqlite_path(found.tracking_uri) if bulk else None
    if not rest:
        from_store = None
    elif db is not None and db.exists():
        from_store = read_history_sqlite(db, rest, keys)
    else:
        from_store = read_history_client(found.client or _client(found.tracking_uri)[0], rest,
                                         {rid: run_keys[rid] for rid in rest}, workers)
    if not copied:  # every run read from the store (run_ids is never empty)
        return from_store
    parts = [view.copy.history(copied, keys)] + ([from_store] if from_store is not None else [])
    return joined_history(run_ids, keys, parts)


def collect(sweep: str | None = None, *, tracking_uri: str | None = None,
            parent_run_id: str | None = None, keys: list[str] | None = None,
            statuses: tuple[str, ...] | None = None, bulk: bool = True,
            workers: int = 16, found: SweepRuns | None = None, read: str = "auto") -> SweepData:
    """Load one sweep: by experiment (= sweep) name, or by the parent run's id (or the runs ``find_runs`` found).

    keys: only these metric keys' histories (default all: a report passes the keys it draws and tabulates).
    statuses: keep runs in these states only (e.g. ("FINISHED",)); default all, so partial sweeps can be
    inspected. The history's string columns are pandas categoricals (1M points fit in ~30 MB).
    """
    found = found or find_runs(sweep, tracking_uri=tracking_uri, parent_run_id=parent_run_id, bulk=bulk, read=read)
    sweep, uri, exp_id, runs = found.sweep, found.tracking_uri, found.experiment_id, found.runs
    if not runs:
        raise ValueError(f"sweep {sweep!r} (experiment {exp_id} at {mask_uri(uri)}) has no trial runs yet")
    trials = _runs_frame(runs)
    if statuses:
        seen = trials["status"].value_counts().to_dict()
        trials = trials[trials["status"].isin(statuses)].reset_index(drop=True)
        if trials.empty:
            raise ValueError(f"sweep {sweep!r} has no trial runs with status in {list(statuses)} "
                             f"(statuses found: {seen})")
    run_ids = trials["run_id"].tolist()
    # the keys each run logged, from its latest-metric rows
    run_keys = {r.run_id: [k for k in r.metrics if keys is None or k in keys] for r in runs}
    hist = _histories(found, run_ids, run_keys, bulk, workers)
    history = _with_meta(hist, trials)
    finals = final_values(hist)
    finals.columns = finals.columns.astype(object)
    finals.index = finals.index.astype(object)
    g = hist.groupby("run_id", observed=True)["step"]
    steps = pd.DataFrame({"last_step": g.max(), "n_steps": g.nunique()})
    steps.index = steps.index.astype(object)
    trials = trials.merge(steps, left_on="run_id", right_index=True, how="left")
    trials = trials.merge(finals, left_on="run_id", right_index=True, how="left")
    parent = found.parent
    provenance = ({k[len("provenance."):]: v for k, v in sorted(parent.tags.items()) if k.startswith("provenance.")}
                  if parent is not None else {})
    return SweepData(sweep, trials, history, uri, str(exp_id), parent.run_id if parent else None, provenance)


def load_results(path: str | Path) -> pd.DataFrame:
    """A long-format results file (.csv, .parquet) -> frame with model, method, benchmark,
    value, seed, config (seed/config optional in the file; filled when absent). A value that is not a
    number is a ValueError naming the file, the column and the row; an empty one is a missing value."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"results file not found: {path}")
    df = read_table(path, ", ".join(RESULT_COLUMNS))
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in RESULT_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}. Expected long format with columns "
                         f"{', '.join(RESULT_COLUMNS)} (optional: {', '.join(OPTIONAL_RESULT_COLUMNS)}); "
                         f"found: {', '.join(df.columns)}")
    df["value"] = numeric_column(df, "value", path, allow_empty=True)  # an empty cell is a missing value ("—")
    if "seed" not in df.columns:  # each row is one observation
        df["seed"] = df.groupby(["model", "method", "benchmark"]).cumcount()
    if "config" not in df.columns:
        df["config"] = df["method"]
    for c in ("model", "method", "benchmark", "config"):
        df[c] = df[c].astype(str)
    return df[[*RESULT_COLUMNS, *OPTIONAL_RESULT_COLUMNS]]
