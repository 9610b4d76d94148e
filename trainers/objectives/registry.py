"""The flat registry of policy objectives: name -> ObjectiveSpec, ``get_objective``, ``register_objective``.

    from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective
    fn = get_objective("sspo", gate="atanlog", tau_pos=0.5, tau_neg=0.6)
    loss, metrics = fn(PolicyBatch(log_probs=..., old_log_probs=..., advantages=..., response_mask=...))

An ObjectiveSpec is the one source of truth about an objective: everything outside its module
(sweep method labels, the local trainer's clip-fraction metrics, the verl adapter's handling of
rollout IS weights, the test option grids) is read from it. Adding an objective therefore takes
its module, one ``ObjectiveSpec`` below (or a ``register_objective(spec)`` call) and its tests;
tests/trainers/objectives/test_objectives_registry.py checks that every registered spec is complete.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from trainers.objectives.base import PolicyBatch
from contract.suggest import did_you_mean
from trainers.objectives.cispo import CISPOParams, cispo_loss
from trainers.objectives.dhpo import DHPOParams, dhpo_loss
from trainers.objectives.gmpo import GMPOParams, gmpo_loss
from trainers.objectives.grpo import GRPOParams, grpo_loss
from trainers.objectives.gspo import GSPOParams, gspo_loss
from trainers.objectives.sapo import SAPOParams, sapo_loss
from trainers.objectives.sspo import SSPOParams, sspo_loss

if TYPE_CHECKING:  # the losses import torch when they run (base.py): the registry loads without it
    import torch

LossFn = Callable[[PolicyBatch, Any], tuple["torch.Tensor", dict[str, float]]]

CLIPFRAC_LEVELS = ("token", "seq")
"""Values of ObjectiveSpec.clipfrac_level besides None: the X of the logged actor/clipfrac_X."""
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]{0,31}")
"""Objective names: they start trial ids ('dhpo-entropy.s1') and name verl losses ('zoo_dhpo')."""


@dataclass(frozen=True)
class LabelPart:
    """A parameter-dependent piece of an objective's method label (see ObjectiveSpec.label_for).

    ``LabelPart("mixing", {"averaged": "-A", "entropy": "-E"})`` appends '-A' or '-E';
    ``LabelPart("gate")`` appends ' (<gate>)' for every value.
    """

    param: str
    """Field of the params dataclass whose value (its default where a trial leaves it unset) picks the text."""
    texts: Any = ()
    """{value: text appended to the label} ('' for nothing); a value not listed appends ' (<value>)'."""

    def __post_init__(self):
        # stored as (value, text) pairs so that specs stay hashable; a mapping is accepted for reading ease
        pairs = tuple(self.texts.items()) if isinstance(self.texts, Mapping) else tuple(self.texts)
        if not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[1], str) for p in pairs):
            raise ValueError(f"LabelPart({self.param!r}).texts: expected a mapping value -> str, got {self.texts!r}")
        object.__setattr__(self, "texts", pairs)

    def text_for(self, value: Any) -> str:
        """The text appended to the label for this parameter value."""
        for known, text in self.texts:
            if known == value and type(known) is type(value):
                return text
        return f" ({value})"


@dataclass(frozen=True)
class ObjectiveSpec:
    """One objective family: its loss, its params dataclass (paper defaults) and the metadata the
    rest of the platform reads (method label, clip-fraction level, per-response terms)."""

    name: str
    """Registry key (lowercase letters and digits): the sweep specs' ``algorithm``, verl's ``zoo_<name>``."""
    loss_fn: LossFn
    """``loss_fn(batch: PolicyBatch, params) -> (loss, metrics)``, a pure torch function."""
    params_cls: type
    """Frozen dataclass of the parameters; its defaults are the paper defaults, each field has a docstring."""
    summary: str
    """One line for ``python -m trainers.objectives`` and ``sweep ls-objectives``."""
    label: str
    """Method name in tables and MLflow tags, e.g. 'GRPO'; label_for() appends the label_parts."""
    clipfrac_level: Optional[str]
    """'token' or 'seq': the logged actor/clipfrac_<level> the loss's actor/pg_clipfrac fills; None: neither
    (no clip, or the loss reports actor/clipfrac_token and actor/clipfrac_seq itself, as DHPO does)."""
    sequence_term: bool
    """One term J_i per response (aggregate_sequences: gmpo, sspo): verl IS weights enter as a per-response
    geometric mean; False: the loss is a sum of per-token terms and takes the weights per token."""
    label_parts: tuple[LabelPart, ...] = ()
    """Parameter-dependent label pieces, appended in order, e.g. DHPO's mixing -> '-A'/'-E'."""

    def __post_init__(self):
        where = f"ObjectiveSpec({self.name!r})"
        if not isinstance(self.name, str) or not NAME_PATTERN.fullmatch(self.name):
            raise ValueError(f"{where}.name: expected {NAME_PATTERN.pattern!r} (lowercase letters and digits)")
        if not callable(self.loss_fn):
            raise ValueError(f"{where}.loss_fn: expected a callable, got {self.loss_fn!r}")
        if not (isinstance(self.params_cls, type) and dataclasses.is_dataclass(self.params_cls)):
            raise ValueError(f"{where}.params_cls: expected a dataclass, got {self.params_cls!r}")
        for key in ("summary", "label"):
            value = getattr(self, key)
            if not isinstance(value, str) or not value.strip() or value != value.strip() or not value.isprintable():
                raise ValueError(f"{where}.{key}: expected a non-empty single line, got {value!r}")
        if self.clipfrac_level is not None and self.clipfrac_level not in CLIPFRAC_LEVELS:
            raise ValueError(f"{where}.clipfrac_level: expected one of {list(CLIPFRAC_LEVELS)} or None, "
                             f"got {self.clipfrac_level!r}")
        if not isinstance(self.sequence_term, bool):
            raise ValueError(f"{where}.sequence_term: expected true or false, got {self.sequence_term!r}")
        object.__setattr__(self, "label_parts", tuple(self.label_parts))
        fields = [f.name for f in dataclasses.fields(self.params_cls)]
        for part in self.label_parts:
            if not isinstance(part, LabelPart) or part.param not in fields:
                raise ValueError(f"{where}.label_parts: expected LabelPart(<one of {fields}>, ...), got {part!r}")

    def label_for(self, params: Mapping[str, Any] | None = None) -> str:
        """Method label of a configuration: ``label`` plus each label part's text for its parameter's
        value in ``params`` (the dataclass default where absent), e.g. 'SSPO (atanlog)', 'DHPO-E (unified)'."""
        params = params or {}
        out = self.label
        for part in self.label_parts:
            value = params[part.param] if part.param in params else getattr(self.params_cls(), part.param)
            out += part.text_for(value)
        return out

    def param_docs(self) -> dict[str, tuple[Any, str]]:
        """name -> (default, one-line description), read from the params dataclass docstrings."""
        docs = _field_docs(self.params_cls)
        return {f.name: (f.default, docs.get(f.name, "")) for f in dataclasses.fields(self.params_cls)}


@functools.cache
def _field_docs(cls: type) -> dict[str, str]:
    """field name -> the one-line docstring under it in the class's source (read once per class: finding a
    class's source parses its whole module)."""
    lines = inspect.getsource(cls).splitlines()
    docs = {}
    for f in dataclasses.fields(cls):
        for i, line in enumerate(lines):
            if line.strip().startswith(f"{f.name}:") and i + 1 < len(lines):
                doc = lines[i + 1].strip()
                if doc.startswith('"""'):
                    docs[f.name] = doc.strip('"')
                    break
    return docs


OBJECTIVES: dict[str, ObjectiveSpec] = {}
"""name -> ObjectiveSpec of every registered objective (the built-ins below, then register_objective)."""


def register_objective(spec: ObjectiveSpec, *, replace: bool = False) -> ObjectiveSpec:
    """Add ``spec`` to OBJECTIVES, so sweeps, both trainers and ``get_objective`` know it; returns it.

    Raises ValueError when its name is taken (unless ``replace``) or its label is another objective's.
    verl's loss registry is filled when trainers.verl_plugin is imported: for an objective registered
    later, call ``trainers.verl_plugin.register_zoo_losses()`` again to get its ``zoo_<name>``.
    """
    if not isinstance(spec, ObjectiveSpec):
        raise ValueError(f"register_objective: expected an ObjectiveSpec, got {spec!r}")
    if spec.name in OBJECTIVES and not replace:
        raise ValueError(f"register_objective: {spec.name!r} is already registered (pass replace=True to replace it)")
    for other in OBJECTIVES.values():
        if other.name != spec.name and other.label == spec.label:
            raise ValueError(f"register_objective: label {spec.label!r} of {spec.name!r} is already {other.name!r}'s")
    OBJECTIVES[spec.name] = spec
    return spec


def unregister_objective(name: str) -> ObjectiveSpec:
    """Remove objective ``name`` from OBJECTIVES (e.g. in a test's teardown); returns its spec."""
    if name not in OBJECTIVES:
        raise ValueError(f"unregister_objective: {name!r} is not registered; registered: {sorted(OBJECTIVES)}")
    return OBJECTIVES.pop(name)


for _spec in (
    ObjectiveSpec("grpo", grpo_loss, GRPOParams, "token ratio, PPO clip (DAPO clip-higher via eps_high)",
                  label="GRPO", clipfrac_level="token", sequence_term=False),
    ObjectiveSpec("gspo", gspo_loss, GSPOParams, "length-normalised sequence ratio, clipped",
                  label="GSPO", clipfrac_level="seq", sequence_term=False),
    ObjectiveSpec("gmpo", gmpo_loss, GMPOParams, "geometric mean of sign-aware clipped token ratios",
                  label="GMPO", clipfrac_level="token", sequence_term=True),
    ObjectiveSpec("cispo", cispo_loss, CISPOParams, "stop-gradient clipped IS weight x A x log-prob",
                  label="CISPO", clipfrac_level="token", sequence_term=False),
    ObjectiveSpec("sapo", sapo_loss, SAPOParams, "token sigmoid soft gate, temperatures by advantage sign",
                  label="SAPO", clipfrac_level=None, sequence_term=False),
    ObjectiveSpec("sspo", sspo_loss, SSPOParams, "geometric mean of a soft token gate (5 gates)",
                  label="SSPO", clipfrac_level=None, sequence_term=True,
                  label_parts=(LabelPart("gate"),)),
    ObjectiveSpec("dhpo", dhpo_loss, DHPOParams, "mix of token and sequence ratios, branch or unified clip",
                  label="DHPO", clipfrac_level=None, sequence_term=False,
                  label_parts=(LabelPart("mixing", {"averaged": "-A", "entropy": "-E"}),
                               LabelPart("clip_mode", {"branch": "", "unified": " (unified)"}))),
):
    register_objective(_spec)
del _spec


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
        raise ValueError(f"objective: unknown name {name!r}{did_you_mean(name, OBJECTIVES)}; "
                         f"expected one of {sorted(OBJECTIVES)}")
    spec = OBJECTIVES[name]
    allowed = [f.name for f in dataclasses.fields(spec.params_cls)]
    for key in params:
        if key not in allowed:
            raise ValueError(f"{name}.{key}: unknown parameter{did_you_mean(key, allowed)}; expected one of {allowed}")
    try:
        return Objective(spec, spec.params_cls(**params))
    except ValueError as err:
        raise ValueError(f"{name}.{err}") from None
