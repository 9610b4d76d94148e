"""Sweeps: spec loading/validation/expansion, the Ray Tune runner, MLflow tracking, the `sweep` CLI."""

import os as _os

# MLflow's telemetry writes ~/.config/mlflow; nothing of ours may be written outside the working dir.
_os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
