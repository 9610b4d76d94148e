"""verl plug-in: registers every objective of the zoo into verl's policy-loss registry as ``zoo_<name>``.

Importing this package registers zoo_grpo, zoo_gspo, zoo_gmpo, zoo_cispo, zoo_sapo, zoo_sspo and
zoo_dhpo into ``verl.trainer.ppo.core_algos.POLICY_LOSS_REGISTRY`` (verl 0.9.1). verl imports the
modules named in ``VERL_USE_EXTERNAL_MODULES`` at the end of ``import verl`` (verl/__init__.py),
in the driver and in every worker process that imports verl, so a run only needs:

    VERL_USE_EXTERNAL_MODULES=trainers.verl_plugin python -m verl.trainer.main_ppo \\
        actor_rollout_ref.actor.policy_loss.loss_mode=zoo_gspo \\
        actor_rollout_ref.actor.clip_ratio_low=3e-4 actor_rollout_ref.actor.clip_ratio_high=4e-4 \\
        actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean ...

Zoo parameters verl's actor config has no field for (gate, mixing, clip_mode, ...) go into
``policy_loss`` after swapping its dataclass for ``ZooPolicyLossConfig``:

        actor_rollout_ref.actor.policy_loss._target_=trainers.verl_plugin.ZooPolicyLossConfig \\
        +actor_rollout_ref.actor.policy_loss.gate=siglog

DHPO with entropy mixing also needs ``ZOO_VERL_FORWARD_ENTROPY=1`` and
``actor_rollout_ref.actor.calculate_entropy=True`` (verl does not pass entropy to policy losses;
see ``enable_entropy_forwarding``; the wrapper also forwards verl's dp_group, over which the
entropy min/max of DHPO-E's 'batch' scope is all-reduced). ``ZOO_VERL_RECORD_PARAMS=<path>``
makes every process append, once per zoo loss and parameter set, the parameters that reached the
loss as a JSON line to <path>. The full parameter mapping, the entropy scope, the record format
and every known difference to verl's own losses are documented in ``trainers/verl_plugin/registry.py``.

Install (CPU or GPU; verl's extras pin another torch, so no deps and then the few its loss
registry needs):

    pip install -c constraints.txt verl==0.9.1 --no-deps
    pip install -c constraints.txt "tensordict>=0.8.0,<=0.10.0,!=0.9.0" codetiming datasets
"""

import warnings

from contract.env import FORWARD_ENTROPY, GPU_MEMORY_FRACTION

try:
    import verl
    import verl.trainer.ppo.core_algos  # noqa: F401  (also imports verl.workers.config)
except ImportError as err:  # verl itself, or one of the packages its loss registry imports
    raise ImportError(
        "trainers.verl_plugin needs verl 0.9.1 and the packages its loss registry imports "
        f"({err}). Install them with the repository's constraints file, e.g.\n"
        "    pip install -c constraints.txt verl==0.9.1 --no-deps\n"
        '    pip install -c constraints.txt "tensordict>=0.8.0,<=0.10.0,!=0.9.0" codetiming datasets'
    ) from err

if getattr(verl, "__version__", None) != "0.9.1":  # the loss signature and config fields are 0.9.1's
    warnings.warn(f"trainers.verl_plugin targets verl 0.9.1, found {getattr(verl, '__version__', '?')}", stacklevel=2)

from trainers.verl_plugin.registry import (  # noqa: E402
    PREFIX, ZooPolicyLossConfig, enable_entropy_forwarding, make_policy_loss, objective_params,
    register_zoo_losses,
)
from trainers.verl_plugin.gpu_share import cap_cuda_memory  # noqa: E402

register_zoo_losses()

# Opt-in (env var, because Ray workers import this module via VERL_USE_EXTERNAL_MODULES and
# have no other hook): forward the actor's per-token entropy to zoo losses (dhpo mixing=entropy).
if FORWARD_ENTROPY.get():
    enable_entropy_forwarding()
# Packed trials (resources.gpus < 1): every process's CUDA memory capped to the trial's share.
if GPU_MEMORY_FRACTION.get() is not None:
    cap_cuda_memory(GPU_MEMORY_FRACTION.get())

__all__ = [
    "PREFIX", "ZooPolicyLossConfig", "enable_entropy_forwarding", "make_policy_loss",
    "objective_params", "register_zoo_losses",
]
