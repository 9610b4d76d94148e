"""What a trial run records as its MLflow params: its resolved config, flattened (dotted keys).

    params = logged_params(trial)   # {"trainer.steps": 200, "algorithm.params.eps_low": 0.2, ...}

Used by the tracker (sweeps/tracking/sweep_runs.py) and by the grid's saved view (sweeps/ui/views.py), which
draws the params a grid sweeps.
"""

from __future__ import annotations

from sweeps.specs.load import Trial
from sweeps.specs.variants import flatten


def logged_params(trial: Trial) -> dict[str, object]:
    """A trial run's params: its resolved config, flattened, without the sections of the OTHER backends
    (a local trial has no verl.* params), and with the objective's effective parameters (defaults
    included: e.g. DHPO's branch clip ranges, which a spec rarely sets)."""
    from trainers.backends import backend_names

    config = trial.config.to_dict()
    for name in backend_names():
        if name != trial.config.backend:
            config.pop(name, None)
    config["algorithm"]["params"] = trial.config.algorithm.typed_params()
    return flatten(config)
