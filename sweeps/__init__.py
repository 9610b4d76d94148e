"""Sweeps: spec loading/validation/expansion, the Ray Tune runner, MLflow tracking, the `sweep` CLI."""

from contract.env import MLFLOW_TELEMETRY_OFF as _TELEMETRY_OFF

# MLflow's telemetry writes ~/.config/mlflow; nothing of ours may be written outside the working dir.
_TELEMETRY_OFF.set_default("true")
