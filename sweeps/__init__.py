"""Sweeps: spec loading/validation/expansion, the Ray Tune runner, MLflow tracking, the `sweep` CLI.

Rooms, low to high (a room imports only rooms below it: tests/test_import_floors.py):

    specs/      a sweep spec read, composed, expanded into trials and validated
    tracking/   the sweep in MLflow: parent and trial runs, the journal and its writer, the Tune callback, status
    ui/         `sweep ui`: saved views, their pages, the local MLflow server
    driver/     Ray started or joined, trials placed and run by Tune, interrupts, progress, the end report
    commands/   one module per `sweep` subcommand (cli.py dispatches)
"""

from contract.env import MLFLOW_TELEMETRY_OFF as _TELEMETRY_OFF

# MLflow's telemetry writes ~/.config/mlflow; nothing of ours may be written outside the working dir.
_TELEMETRY_OFF.set_default("true")
