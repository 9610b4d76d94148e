"""The objective zoo: every policy objective of the DHPO and SSPO papers as a pure torch loss.

    from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective
    fn = get_objective("dhpo", mixing="entropy", clip_mode="branch")
    loss, metrics = fn(PolicyBatch(log_probs, old_log_probs, advantages, response_mask, entropy))

One module per family (grpo, gspo, gmpo, cispo, sapo, sspo, dhpo); shared helpers in base.py;
``sweep ls-objectives`` (or ``python -m trainers.objectives [--smoke]``) lists the objectives and their
parameters. A new objective is its module, one ObjectiveSpec in registry.py (or ``register_objective(spec)``)
and its tests.
"""

from trainers.objectives.base import AGG_MODES, PolicyBatch
from trainers.objectives.registry import (
    OBJECTIVES, LabelPart, Objective, ObjectiveSpec, get_objective, register_objective, unregister_objective,
)

__all__ = ["AGG_MODES", "OBJECTIVES", "LabelPart", "Objective", "ObjectiveSpec", "PolicyBatch", "get_objective",
           "register_objective", "unregister_objective"]
