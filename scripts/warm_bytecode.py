"""Write the bytecode caches (__pycache__/*.pyc) of what the platform's processes import, once, at set-up.

    .venv/bin/python scripts/warm_bytecode.py              # what scripts/setup.sh runs (see below when)
    .venv/bin/python scripts/warm_bytecode.py sweeps.cli   # only these modules (and what they import)

Set-up installs without compiling every file of every package (27,000 files, most never imported: about 70
CPU-seconds). Instead this imports the modules that the platform's processes start with (the CLI, the driver,
the trainers, the reports, the tracking server, Ray's own daemons and workers), with bytecode writing on, so
their caches exist even for a user whose environment sets PYTHONDONTWRITEBYTECODE (Python then reads caches but
never writes them, and every process would compile what it imports again): scripts/setup.sh runs it when
PYTHONDONTWRITEBYTECODE is set; otherwise Python writes each cache when the module is first imported. Prints how
many modules were imported and how long it took; a module that cannot be imported here (an optional dependency
absent) is skipped and named. Where the caches go is Python's choice (PYTHONPYCACHEPREFIX, if set).
"""

from __future__ import annotations

import importlib
import logging
import sys
import time

# The platform's own entry modules (each imports its heavy dependencies: torch, ray, mlflow, transformers, verl,
# pandas, scipy, matplotlib, plotly), then the modules that Ray's and MLflow's own processes start from.
MODULES = (
    "sweeps.cli", "sweeps.driver.runner", "sweeps.driver.trial", "trainers.local.trainer",
    "trainers.verl_backend.launch", "trainers.verl_plugin", "verl.trainer.main_ppo", "evaluators.generation",
    "dashboards.report.writer", "dashboards.figures.static", "dashboards.figures.training_curves",
    "dashboards.figures.compute", "tracking_store.client",
    "ray.tune", "ray.train", "ray._private.workers.default_worker", "ray._private.log_monitor",
    "ray.autoscaler._private.monitor", "ray.dashboard.dashboard", "ray.dashboard.agent",
    "ray._private.runtime_env.agent.main", "mlflow.server", "mlflow.store.tracking.sqlalchemy_store",
)


def main(argv: list[str]) -> int:
    if any(arg.startswith("-") for arg in argv):
        print(__doc__)
        return 0 if argv in (["-h"], ["--help"]) else 2
    sys.dont_write_bytecode = False  # this process writes the caches, whatever PYTHONDONTWRITEBYTECODE says
    logging.disable(logging.WARNING)  # what the imported packages say about this machine (no GPU...) is not news here
    started, before = time.monotonic(), len(sys.modules)
    skipped = []
    for name in argv or MODULES:
        try:
            importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - an optional part missing here: its caches are written when used
            skipped.append(f"{name} ({type(err).__name__})")
    print(f"bytecode written for {len(sys.modules) - before} modules in {time.monotonic() - started:.0f}s"
          + (f"; not importable here: {', '.join(skipped)}" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
