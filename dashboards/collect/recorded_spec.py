"""The spec recorded with a sweep: its parent run's ``spec/resolved.json`` (and ``.yaml``) artifacts.

    recorded = recorded_spec(client, parent_run_id)   # {} when the run has none
    recorded = recorded_spec(None, parent_run_id, artifact_uri)   # local artifacts: read in place, no client
    section = recorded.get("report")                    # the report: section `sweep run` used
    cfg, notes = report_settings(found, None, {"base": "Base"}, {})   # `sweep report`: recorded, then options

`sweep run` (sweeps/tracking/sweep_runs.py) writes the artifact at every run of a sweep: ``spec`` (the YAML as
written), ``report`` (the report: section with its defaults, i.e. what the end-of-run report used)
and ``trials`` (trial id -> resolved config). `sweep status` reads the plan from it and `sweep
report NAME` its report settings, so a name is enough to remake the same report.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

import yaml

from contract.env import MLFLOW_ARTIFACTS_PROGRESS
from dashboards.model.report import ReportConfig
from tracking_store.rest_reads import open_reader
from tracking_store.tables import local_artifact_dir

RESOLVED_SPEC = "spec/resolved.yaml"  # artifact path on the sweep's parent run (for people)
RESOLVED_SPEC_JSON = "spec/resolved.json"  # the same mapping for the commands: a 2,000-trial grid's YAML takes
                                           # ~14 s to parse, its JSON a fraction of a second


def dump_resolved(resolved: dict) -> tuple[str, str]:
    """(YAML, JSON) texts of a resolved spec, as `sweep run` records them (libyaml's dumper where built)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(resolved, Dumper=dumper, sort_keys=False), json.dumps(resolved, default=str)


def _parsed(artifact: str, text: str) -> dict:
    if artifact == RESOLVED_SPEC_JSON:
        return json.loads(text) or {}
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


def recorded_spec(client, run_id: str, artifact_uri: str | None = None) -> dict:
    """The parent run's resolved spec as a mapping (its JSON, else its YAML: a sweep recorded before the
    JSON existed); {} when it has none (recorded before either existed). Local artifacts (``artifact_uri``
    ``file:///...``, the sqlite default) are read in place, and ``client`` may then be None."""
    local = local_artifact_dir(artifact_uri)
    if local is not None:
        for artifact in (RESOLVED_SPEC_JSON, RESOLVED_SPEC):
            if (local / artifact).is_file():
                return _parsed(artifact, (local / artifact).read_text(encoding="utf-8"))
        return {}
    bar = MLFLOW_ARTIFACTS_PROGRESS.raw()
    MLFLOW_ARTIFACTS_PROGRESS.set("false")  # one small file: no progress bar on the terminal
    try:
        with tempfile.TemporaryDirectory(dir=Path.cwd(), prefix=".sweep-spec-") as tmp:
            for artifact in (RESOLVED_SPEC_JSON, RESOLVED_SPEC):
                try:
                    path = Path(client.download_artifacts(run_id, artifact, tmp))
                except Exception:  # noqa: BLE001 - MLflow raises several types for a missing artifact
                    continue
                return _parsed(artifact, path.read_text(encoding="utf-8"))
            return {}
    finally:
        if bar is None:
            MLFLOW_ARTIFACTS_PROGRESS.unset()
        else:
            MLFLOW_ARTIFACTS_PROGRESS.set(bar)


def recorded_report_section(recorded: dict) -> tuple[dict | None, bool]:
    """(the report: section `sweep run` used, complete) from a recorded spec: its ``report`` entry
    (complete: with the defaults it filled in), else the section as written in its ``spec`` (a sweep
    recorded before the entry existed: complete=False), else (None, False)."""
    if isinstance(recorded.get("report"), dict):
        return recorded["report"], True
    written = (recorded.get("spec") or {}).get("report") if isinstance(recorded.get("spec"), dict) else None
    return (dict(written), False) if isinstance(written, dict) else (None, False)


def changed_settings(made, recorded) -> list[str]:
    """'key: recorded -> made' for each ReportConfig field (table fields as table.<key>) that differs."""
    def flat(cfg) -> dict:
        d = dataclasses.asdict(cfg)
        table = d.pop("table")
        return {**d, **{f"table.{k}": v for k, v in table.items()}}

    mine, theirs = flat(made), flat(recorded)
    return [f"{k}: {theirs[k]!r} -> {mine[k]!r}" for k in mine if mine[k] != theirs[k]]


def report_settings(found, spec_section: dict | None, table: dict, top: dict,
                    source: str = "options") -> tuple[ReportConfig, list[str]]:
    """(the report's settings, notes for the user) for `sweep report`: the `report:` section recorded with
    the sweep (``found``: its dashboards.collect.sweep_runs.SweepRuns), or ``spec_section`` (a --spec file's; benchmark
    and method order still from the recorded one when it leaves them out), then ``top`` (curves, band, ...)
    and ``table`` (the table's keys) given as options; a note names each setting that differs from the
    recorded report, ``source`` saying where the difference came from."""
    recorded, complete, parent, notes = None, False, found.parent, []
    if parent is not None:
        local = local_artifact_dir(parent.artifact_uri)  # read in place, else through MLflow
        client = None if local is not None else (found.client or open_reader(found.tracking_uri))
        recorded, complete = recorded_report_section(recorded_spec(client, parent.run_id, parent.artifact_uri))
    if recorded is not None and not complete and spec_section is None:
        notes.append(f"sweep {found.sweep!r} was recorded with its spec's report: section only (not the benchmark "
                     "and method order `sweep run` added): those come from the recorded trials")
    if spec_section is not None:
        section = spec_section
        order = section.setdefault("table", {})
        for key in ("benchmarks", "methods"):  # the order a spec's trials give them (sweeps/specs/sections.py)
            if key not in order and key in ((recorded or {}).get("table") or {}):
                order[key] = recorded["table"][key]
    elif recorded is not None:
        section = recorded
    else:
        section = {}
        notes.append(f"no spec is recorded with sweep {found.sweep!r}: default report settings "
                     "(pass --spec FILE for a spec's report: section)")
    cfg = ReportConfig.from_dict({**section, **top, "table": {**(section.get("table") or {}), **table}})
    changed = changed_settings(cfg, ReportConfig.from_dict(recorded)) if recorded is not None else []
    if changed:
        notes.append(f"this report differs from the one recorded with sweep {found.sweep!r} ({source}): "
                     + "; ".join(changed))
    return cfg, notes
