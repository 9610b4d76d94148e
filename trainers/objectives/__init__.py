"""The objective zoo: every policy objective of the DHPO and SSPO papers as a pure torch loss.

    from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective
    fn = get_objective("dhpo", mixing="entropy", clip_mode="branch")
    loss, metrics = fn(PolicyBatch(log_probs, old_log_probs, advantages, response_mask, entropy))

One module per family (grpo, gspo, gmpo, cispo, sapo, sspo, dhpo); shared helpers in base.py;
``python -m trainers.objectives`` lists the objectives and their parameters.
"""

from trainers.objectives.base import AGG_MODES, PolicyBatch
from trainers.objectives.registry import OBJECTIVES, Objective, ObjectiveSpec, get_objective

__all__ = ["AGG_MODES", "OBJECTIVES", "Objective", "ObjectiveSpec", "PolicyBatch", "get_objective"]
