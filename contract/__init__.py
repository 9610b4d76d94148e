"""The ground floor: what every package of the platform agrees on, and nothing else.

    from contract.metrics import ENTROPY, val_key      # metric names and key templates
    from contract.errors import ConfigError, require   # the error of bad input, and its one check
    from contract.suggest import did_you_mean          # the "did you mean" hint of unknown keys
    from contract.run_layout import RunLayout          # where everything lives under a run directory

Pure Python (no torch, pandas, Ray or MLflow): any package imports it cheaply, and it imports no
package of the platform. The floors above it, low to high: policy, evaluators, trainers,
trial_eval, dashboards, sweeps (tests/test_import_floors.py).
"""
