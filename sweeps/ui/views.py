"""The saved views a sweep's experiment carries in the MLflow UI (3.17): what `sweep ui NAME` opens.

    tags = experiment_tags(spec, existing_tags)    # written by SweepTracker whenever the sweep runs

A saved view is an experiment tag ``mlflow.sharedViewState.<id>`` (sweeps/ui/pages.py: VIEW_TAG,
CURVES_VIEW_TAG), listed in the runs page's "Views" menu (newest ``createdAt`` first) and opened by
the URL's ``viewStateShareKey=<id>`` (store.py: runs_page_url, curves_page_url). Two per sweep:

- "Sweep curves" (``sweep-curves``): the chart mode, trial runs grouped by their ``method`` tag, one
  mean line and min-max band per method (``useGroupedValuesInCharts``), smoothed, and only the papers'
  curves: entropy, response length, reward, validation accuracy (average and per benchmark), clip
  fractions (a chart with no data is hidden: ``hideEmptyCharts``). Every other metric gets a chart of
  its own from the UI, hidden by the charts search (``chartsSearchFilter``, a regular expression of the
  keys above; clearing the search box shows them). In table mode: one row per method, its averages.
- "Sweep trials" (``sweep-trials``): the table of trial runs with method, seed and the key metrics.
- "Sweep grid" (``sweep-grid``), only for a grid (a method with two or more configurations): the chart
  mode with parallel-coordinates charts (``PARALLEL``: ``selectedParams``, ``selectedMetrics``) of the
  swept parameters (those that differ between the configurations of one algorithm; one chart per set of
  them, as the UI draws a run only where it has every axis) and the final selection score
  (``select/avg/acc`` where the trials evaluate a selection split) and ``val/avg/acc``, one line per
  trial run; the run list grouped by method.

Format, from MLflow 3.17.2's web-app bundle (mlflow/server/js/build/static/js; minified, located by
these strings): the tag value is ``{"name", "createdAt", "updatedAt", "state"}`` with ``state`` a JSON
string, or ``deflate;<base64 zlib>`` (chunk 3448, module 53787; main, module 58180); the page takes from it the search facets ``searchFilter, orderByKey,
orderByAsc, ...`` (chunk 3793, module 57637) and the UI-state keys ``selectedColumns, columnOrder, ...,
compareRunCharts, compareRunSections, isAccordionReordered, groupBy, groupsExpanded,
useGroupedValuesInCharts, hideEmptyCharts, globalLineChartConfig, chartsSearchFilter`` (main bundle,
module 1395). A view cannot choose table or chart mode: that is the URL's ``compareRunsMode=CHART``
(chunk 2809, module 13627; default TABLE), and MLflow has no per-experiment default view, so the
experiment's own page opens the table until "Views > Sweep curves" and "Chart view" are chosen (the
"Views" menu opens ``runs?viewStateShareKey=<id>`` alone: table mode; chunk 5439).
"""

from __future__ import annotations

import base64
import json
import re
import time
import zlib

from contract.metrics import (
                              CLIP_FRACTIONS,
                              ENTROPY,
                              EVAL_AVG,
                              PROGRESS,
                              RESPONSE_LENGTH_MEAN,
                              REWARD_MEAN,
                              SELECT_AVG,
                              TRIAL_STEP,
                              VAL_AVG,
                              eval_key,
                              val_key,
                              val_metrics,
                              )
from sweeps.specs.load import SweepSpec
from sweeps.ui.pages import BY_RUN_NAME, CURVES_FILTER, CURVES_VIEW_TAG, GRID_VIEW_TAG, TRIALS_FILTER, VIEW_TAG

KIND_TAG, MODEL_TRAINING = "mlflow.experimentKind", "custom_model_development"  # the UI's "Machine learning"
VIEW_NAME = "Sweep trials"
CURVES_VIEW_NAME = "Sweep curves"
GRID_VIEW_NAME = "Sweep grid"
GROUP_TAG = "method"  # the trial runs' tag the curves are grouped by
LINE_SMOOTHNESS = 50  # the UI's slider, 0-100: an exponential moving average of weight 0.5
TRAINING_SECTION, VALIDATION_SECTION = "Training curves", "Validation accuracy"
MAX_TAG_VALUE = 20_000  # MLflow's limit on an experiment tag's value (mlflow/utils/validation.py)


def benchmarks(spec: SweepSpec) -> list[str]:
    return list(dict.fromkeys(b for t in spec.trials for b in t.config.data.benchmarks))


def key_metrics(spec: SweepSpec) -> list[str]:
    """The metric columns of the trials view: accuracy per benchmark and average, the checkpoint
    evaluation's Avg@k (with an eval: section), reward, entropy, response length, last step."""
    keys = val_metrics(benchmarks(spec))
    if spec.eval is not None:
        keys += [eval_key(b, "avg_at_k") for b in spec.eval.benchmarks] + [EVAL_AVG]
    return list(dict.fromkeys(keys + list(PROGRESS) + [TRIAL_STEP]))


def trials_view_state(spec: SweepSpec) -> dict:
    """The trials view's state (search facets + runs-table UI state)."""
    columns = [f"tags.`{t}`" for t in (GROUP_TAG, "seed")] + [f"metrics.`{k}`" for k in key_metrics(spec)]
    return {"searchFilter": TRIALS_FILTER, "orderByKey": BY_RUN_NAME, "orderByAsc": True,
            "selectedColumns": columns, "columnOrder": columns,  # in this order (else: by type, then name)
            "runsHiddenMode": "SHOW_ALL"}  # every trial in the charts (default: the first 10)


def curve_sections(spec: SweepSpec) -> dict[str, list[str]]:
    """The curves view's sections and their metric keys, in order: the papers' figures."""
    return {TRAINING_SECTION: [ENTROPY, RESPONSE_LENGTH_MEAN, REWARD_MEAN, *CLIP_FRACTIONS],
            VALIDATION_SECTION: [VAL_AVG, *(val_key(b) for b in benchmarks(spec))]}


def _line_chart(key: str, section_uuid: str, n: int) -> dict:
    """A line chart card as the UI serializes one (RunsChartsLineCardConfig: main bundle, module 63989)."""
    return {"uuid": f"sweep-curves-chart-{n}", "type": "LINE", "runsCountToCompare": 10,
            "metricSectionId": section_uuid, "deleted": False, "isGenerated": False,
            "displayName": key, "metricKey": key, "selectedMetricKeys": [key],
            "lineSmoothness": 0, "useGlobalLineSmoothing": True,  # the view's smoothing (globalLineChartConfig)
            "xAxisKey": "step", "useGlobalXaxisKey": True, "selectedXAxisMetricKey": "",
            "xAxisScaleType": "linear", "scaleType": "linear", "range": {},
            "yAxisKey": "metric", "yAxisExpressions": [], "ignoreOutliers": False}


def _js_regex_escape(text: str) -> str:
    return re.sub(r"[.*+?^${}()|[\]\\]", lambda m: "\\" + m.group(0), text)


def curves_view_state(spec: SweepSpec) -> dict:
    """The curves view's state (search facets + charts UI state); the URL adds ``compareRunsMode=CHART``."""
    sections, charts = [], []
    for name, keys in curve_sections(spec).items():
        uuid = f"sweep-curves-{len(sections)}"
        sections.append({"uuid": uuid, "name": name, "display": True, "isReordered": False, "deleted": False,
                         "isGenerated": False})
        charts += [_line_chart(k, uuid, len(charts) + i) for i, k in enumerate(keys)]
    shown = [c["metricKey"] for c in charts]
    methods = dict.fromkeys(t.method for t in spec.trials)
    columns = trials_view_state(spec)["selectedColumns"]  # its table mode: each method's averages
    return {"searchFilter": CURVES_FILTER, "orderByKey": BY_RUN_NAME, "orderByAsc": True,
            "selectedColumns": columns, "columnOrder": columns,
            "runsHiddenMode": "SHOW_ALL",  # every method's group in the charts (default: the first 10 rows)
            "groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": GROUP_TAG}]},
            "groupsExpanded": {f"tag.{GROUP_TAG}.{m}": False for m in methods},  # the run list: one row per method
            "useGroupedValuesInCharts": True,  # a mean line and a min-max band per method, not a line per run
            "hideEmptyCharts": True,  # e.g. a clip fraction the methods do not log
            "globalLineChartConfig": {"xAxisKey": "step", "lineSmoothness": LINE_SMOOTHNESS, "selectedXAxisMetricKey": ""},
            "compareRunSections": sections, "compareRunCharts": charts,
            "isAccordionReordered": True,  # keep these sections first (the UI appends one per other metric prefix)
            "chartsSearchFilter": "^(" + "|".join(_js_regex_escape(k) for k in shown) + ")$"}


def grid_axes(spec: SweepSpec) -> tuple[dict[str, list[str]], list[str]] | None:
    """A grid's parallel charts: ({title: swept param keys}, metric keys), one chart per set of swept
    params (the algorithms sharing it: a run lacking a chart's params has no line there); None when no
    method has two configurations."""
    from sweeps.specs.trial_params import logged_params  # the objectives' registry: only for a sweep being recorded

    configs: dict[str, set[str]] = {}
    for t in spec.trials:
        configs.setdefault(t.method, set()).add(t.config_id)
    if max((len(c) for c in configs.values()), default=0) < 2:
        return None
    by_algorithm: dict[str, list[dict]] = {}
    for t in {t.config_id: t for t in spec.trials}.values():  # one trial per configuration
        by_algorithm.setdefault(t.config.algorithm.name, []).append(logged_params(t))
    charts: dict[tuple[str, ...], list[str]] = {}
    for name, params in by_algorithm.items():
        swept = tuple(k for k in params[0] if k != "seed" and len({str(p.get(k)) for p in params}) > 1)
        if swept:
            charts.setdefault(swept, []).append(name)
    selection = any(t.config.data.select_size or t.config.data.select_files for t in spec.trials)
    return ({", ".join(names): list(keys) for keys, names in charts.items()},
            ([SELECT_AVG] if selection else []) + [VAL_AVG])


def grid_view_state(spec: SweepSpec, axes: tuple[dict[str, list[str]], list[str]]) -> dict:
    """The grid view's state: a parallel-coordinates chart of the swept params and the final scores per
    set of swept params."""
    groups, metrics = axes
    section = {"uuid": "sweep-grid-0", "name": "Grid", "display": True, "isReordered": False, "deleted": False,
               "isGenerated": False}
    charts = [{"uuid": f"sweep-grid-chart-{i}", "type": "PARALLEL", "runsCountToCompare": 1000,
               "metricSectionId": section["uuid"], "deleted": False, "isGenerated": False,
               "displayName": f"{title}: {metrics[0]}", "selectedParams": params, "selectedMetrics": metrics,
               "showAllRuns": True} for i, (title, params) in enumerate(groups.items())]
    columns = trials_view_state(spec)["selectedColumns"]
    return {"searchFilter": CURVES_FILTER, "orderByKey": BY_RUN_NAME, "orderByAsc": True,
            "selectedColumns": columns, "columnOrder": columns, "runsHiddenMode": "SHOW_ALL",
            "groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": GROUP_TAG}]},
            "groupsExpanded": {}, "useGroupedValuesInCharts": False,  # one line per trial run, not per method
            "compareRunSections": [section], "compareRunCharts": charts, "isAccordionReordered": True,
            "chartsSearchFilter": ""}  # a filter would hide the parallel charts too: the UI's own metric charts follow


def view_tag(name: str, state: dict, created: int, now: int) -> str:
    """A saved view's tag value; its state deflated (the UI's ``deflate;<base64>``, chunk 3448 module 53787 via
    main module 58180) when the plain one would pass MLflow's limit on an experiment tag (many benchmarks)."""
    text = json.dumps(state, separators=(",", ":"))
    plain = json.dumps({"name": name, "createdAt": created, "updatedAt": now, "state": text}, separators=(",", ":"))
    if len(plain) <= MAX_TAG_VALUE:
        return plain
    text = "deflate;" + base64.b64encode(zlib.compress(text.encode(), 9)).decode()
    return json.dumps({"name": name, "createdAt": created, "updatedAt": now, "state": text}, separators=(",", ":"))


def view_state(tag_value: str) -> dict:
    """The state of a saved view's tag value (plain or deflated)."""
    text = json.loads(tag_value)["state"]
    if text.startswith("deflate;"):
        text = zlib.decompress(base64.b64decode(text[len("deflate;"):])).decode()
    return json.loads(text)


def experiment_tags(spec: SweepSpec, existing: dict[str, str] | None = None) -> dict[str, str]:
    """The experiment's tags for the UI: model-training kind and both views (their creation times kept; the
    curves view newer, so listed first)."""
    now = int(time.time() * 1000)

    def created(tag: str, default: int) -> int:
        try:
            return int(json.loads((existing or {})[tag])["createdAt"])
        except (KeyError, TypeError, ValueError):
            return default

    trials_created = created(VIEW_TAG, now)
    curves_created = created(CURVES_VIEW_TAG, max(now, trials_created + 1))
    tags = {KIND_TAG: MODEL_TRAINING,
            VIEW_TAG: view_tag(VIEW_NAME, trials_view_state(spec), trials_created, now),
            CURVES_VIEW_TAG: view_tag(CURVES_VIEW_NAME, curves_view_state(spec), curves_created, now)}
    axes = grid_axes(spec)
    if axes is not None:  # listed first in "Views": the grid is what a grid study is about
        grid_created = created(GRID_VIEW_TAG, max(now, curves_created + 1))
        tags[GRID_VIEW_TAG] = view_tag(GRID_VIEW_NAME, grid_view_state(spec, axes), grid_created, now)
    return tags
