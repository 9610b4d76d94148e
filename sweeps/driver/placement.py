"""Where a sweep's trials run on Ray: each trial's Tune slot, how many run at once, and what a
local Ray instance must declare. Computed before any trial starts.

    placement = plan(spec, local_capacity(None), local=True)
    tune.with_resources(run_trial, placement.tune_resources)

A trial of a backend without a ``placement`` hook (trainers/backends.py; the local backend) trains
inside its Tune slot, ``resources`` ({cpus, gpus} per trial); at most ``max_concurrent`` run at
once. A backend whose trials place their own resources outside Tune (verl: its own placement
groups, trainers/verl_backend/placement.py) decides the slot, the concurrency and what a local
``ray.init`` declares with that hook; such a sweep runs that one backend only.
"""

from __future__ import annotations

from contract.errors import ConfigError
from sweeps.driver.ray_cluster import Capacity
from sweeps.specs.errors import SpecError
from trainers.api import Placement
from trainers.backends import get_backend

__all__ = ["Placement", "plan"]


def plan(spec, capacity: Capacity, local: bool) -> Placement:
    """The placement of ``spec`` on a cluster with ``capacity`` (``local``: a ray.init we start)."""
    r = spec.resources
    names = {t.config.backend for t in spec.trials}
    placing = sorted(n for n in names if get_backend(n).placement is not None)
    if not placing:
        return Placement({"cpu": r.cpus, "gpu": r.gpus}, spec.max_concurrent, 0)
    if len(names) > 1:
        raise SpecError(f"{spec.path}: backend: a sweep runs one backend; this one mixes {placing[0]!r} with "
                        f"{sorted(names - {placing[0]})}")
    place = get_backend(placing[0]).placement
    try:
        return place([t.config for t in spec.trials], r, spec.max_concurrent, capacity, local, str(spec.path))
    except ConfigError as err:
        raise SpecError(str(err)) from None
