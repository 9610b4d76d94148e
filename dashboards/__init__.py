"""Sweep dashboards: MLflow -> pandas collection, paper tables, plotly curves, one HTML report.

    python -m dashboards --smoke                     # synthetic end-to-end run, seconds
    sweep report SWEEP [--tracking-uri URI] [--out DIR]      # the commands: sweeps/commands/report.py, table.py
    sweep table RESULTS.csv --format latex

Rooms, low to high (a room imports only rooms below it: tests/test_import_floors.py):

    collect/   a study's data: a sweep's runs from MLflow, recorded specs and verdicts, results files
    stats/     paired tests, intervals, aggregates, seed spread, grid selection, compute-curve fits
    tables/    paper tables: built from a sweep or a file, rendered as Markdown, LaTeX, HTML, CSV, terminal
    figures/   training curves (plotly, matplotlib) and compute curves
    report/    `sweep report`: its settings, sections, files and HTML; the smoke run
"""

from contract.env import MLFLOW_TELEMETRY_OFF as _TELEMETRY_OFF

# MLflow's telemetry writes ~/.config/mlflow; nothing of ours may be written outside the working dir.
_TELEMETRY_OFF.set_default("true")
