"""Our objective parameters under verl's names: the one mapping the verl backend and the loss plug-in share.

    verl_loss_mode("dhpo")            # 'zoo_dhpo': the loss verl's actor.policy_loss.loss_mode selects
    objective_of("zoo_dhpo")          # 'dhpo' (None for verl's own losses)
    ACTOR_FIELDS["eps_low"]           # 'clip_ratio_low': the actor config field that carries our eps_low

Inside the product a parameter has one name (the objective's: ``eps_low``, ``tau_pos``, ``agg``, ...). verl's
actor config has fields for four of them (``ACTOR_FIELDS``) plus ``clip_ratio`` (one range for both sides, the
fallback of ``eps_low``/``eps_high``) and ``loss_agg_mode`` (our ``agg``); every other parameter travels in
``actor.policy_loss`` under its own name (trainers/verl_plugin: ``ZooPolicyLossConfig``; a test fails when the two
drift: tests/trainers/verl_plugin/test_verl_registration.py).
"""

from __future__ import annotations

LOSS_MODE_PREFIX = "zoo_"
ACTOR_FIELDS = {"eps_low": "clip_ratio_low", "eps_high": "clip_ratio_high", "tau_pos": "tau_pos", "tau_neg": "tau_neg"}
"""Our parameter -> the verl actor config field that carries it (read there when policy_loss does not set it)."""
SHARED_CLIP_FIELD = "clip_ratio"
AGG_PARAM, AGG_FIELD = "agg", "loss_agg_mode"


def verl_loss_mode(objective: str) -> str:
    return LOSS_MODE_PREFIX + objective


def objective_of(loss_mode: str) -> str | None:
    """The objective a verl loss_mode selects; None for one of verl's own losses."""
    return loss_mode[len(LOSS_MODE_PREFIX):] if loss_mode.startswith(LOSS_MODE_PREFIX) else None
