"""Sweep dashboards: MLflow -> pandas collection, paper tables, plotly curves, one HTML report.

    python -m dashboards --smoke                     # synthetic end-to-end run, seconds
    sweep report SWEEP [--tracking-uri URI] [--out DIR]      # the commands: sweeps/commands/report.py, table.py
    sweep table RESULTS.csv --format latex

Modules: collect (MLflow/CSV -> frames), tables (+ table_model, render: md/latex/html/csv,
significance), curves (means, bands, smoothing; plotly), static_figures (matplotlib PNG/PDF/SVG),
report (HTML + artifacts; report_config: ReportConfig, no pandas), terminal_table, recorded_spec (and the
report's settings), synthetic (test/bench stores), smoke.
"""

from contract.env import MLFLOW_TELEMETRY_OFF as _TELEMETRY_OFF

# MLflow's telemetry writes ~/.config/mlflow; nothing of ours may be written outside the working dir.
_TELEMETRY_OFF.set_default("true")
