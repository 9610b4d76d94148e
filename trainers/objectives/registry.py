"""The flat registry of policy objectives: name -> ObjectiveSpec, and ``get_objective``.

    from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective
    fn = get_objective("sspo", gate="atanlog", tau_pos=0.5, tau_neg=0.6)
    loss, metrics = fn(PolicyBatch(log_probs=..., old_log_probs=..., advantages=..., response_mask=...))
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any, Callable

import torch

from trainers.objectives.base import PolicyBatch
from trainers.objectives.cispo import CISPOParams, cispo_loss
from trainers.objectives.dhpo import DHPOParams, dhpo_loss
from trainers.objectives.gmpo import GMPOParams, gmpo_loss
from trainers.objectives.grpo import GRPOParams, grpo_loss
from trainers.objectives.gspo import GSPOParams, gspo_loss
from trainers.objectives.sapo import SAPOParams, sapo_loss
from trainers.objectives.sspo import SSPOParams, sspo_loss

LossFn = Callable[[PolicyBatch, Any], tuple[torch.Tensor, dict[str, float]]]


@dataclass(frozen=True)
class ObjectiveSpec:
    """One objective family: its loss function, its params dataclass (paper defaults), a summary."""

    name: str
    loss_fn: LossFn
    params_cls: type
    summary: str
    level: str  # 'token' or 'sequence': where the importance ratio lives

    def param_docs(self) -> dict[str, tuple[Any, str]]:
        """name -> (default, one-line description), read from the params dataclass docstrings."""
        return {f.name: (f.default, _field_doc(self.params_cls, f.name)) for f in dataclasses.fields(self.params_cls)}


def _field_doc(cls: type, name: str) -> str:
    import inspect

    lines = inspect.getsource(cls).splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(f"{name}:") and i + 1 < len(lines):
            doc = lines[i + 1].strip()
            if doc.startswith('"""'):
                return doc.strip('"')
    return ""


OBJECTIVES: dict[str, ObjectiveSpec] = {
    spec.name: spec
    for spec in (
        ObjectiveSpec("grpo", grpo_loss, GRPOParams, "token ratio, PPO clip (DAPO clip-higher via eps_high)", "token"),
        ObjectiveSpec("gspo", gspo_loss, GSPOParams, "length-normalised sequence ratio, clipped", "sequence"),
        ObjectiveSpec("gmpo", gmpo_loss, GMPOParams, "geometric mean of sign-aware clipped token ratios", "sequence"),
        ObjectiveSpec("cispo", cispo_loss, CISPOParams, "stop-gradient clipped IS weight x A x log-prob", "token"),
        ObjectiveSpec("sapo", sapo_loss, SAPOParams, "token sigmoid soft gate, temperatures by advantage sign", "token"),
        ObjectiveSpec("sspo", sspo_loss, SSPOParams, "geometric mean of a soft token gate (5 gates)", "sequence"),
        ObjectiveSpec("dhpo", dhpo_loss, DHPOParams, "mix of token and sequence ratios, branch or unified clip", "hybrid"),
    )
}


class Objective:
    """A configured objective: ``loss, metrics = objective(batch)``."""

    def __init__(self, spec: ObjectiveSpec, params: Any):
        self.spec = spec
        self.params = params

    @property
    def name(self) -> str:
        return self.spec.name

    def __call__(self, batch: PolicyBatch) -> tuple[torch.Tensor, dict[str, float]]:
        return self.spec.loss_fn(batch, self.params)

    def __repr__(self) -> str:
        return f"Objective({self.params!r})"


def get_objective(name: str, **params: Any) -> Objective:
    """Validate ``params`` against the family's dataclass and return the configured objective.

    Raises ValueError naming the unknown objective/parameter or the out-of-range value.
    """
    if name not in OBJECTIVES:
        hint = difflib.get_close_matches(str(name), OBJECTIVES, n=1)
        did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise ValueError(f"objective: unknown name {name!r}{did_you_mean}; expected one of {sorted(OBJECTIVES)}")
    spec = OBJECTIVES[name]
    allowed = [f.name for f in dataclasses.fields(spec.params_cls)]
    for key in params:
        if key not in allowed:
            hint = difflib.get_close_matches(key, allowed, n=1)
            did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise ValueError(f"{name}.{key}: unknown parameter{did_you_mean}; expected one of {allowed}")
    try:
        return Objective(spec, spec.params_cls(**params))
    except ValueError as err:
        raise ValueError(f"{name}.{err}") from None
