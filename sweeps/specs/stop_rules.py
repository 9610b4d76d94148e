"""Stop rules: end a trial early when a metric condition holds (a spec's `stop:` section).

    stop:
      - {metric: actor/entropy, below: 0.01, for_steps: 20, name: entropy_collapse}
      - {metric: val/avg/acc, no_improvement: 3}         # 3 evaluations without a new best
      - {metric: response_length/mean, above: 900, for_steps: 5}

A threshold rule (`below` / `above`) fires when the metric is below / above the threshold at
`for_steps` consecutive reported values of it (default 1). A `no_improvement` rule fires when that
many consecutive reported values of the metric fail to beat its best so far by more than `min_delta`
(`mode: max`, the default, or `min`); validation metrics are reported only at evaluations, so for
them the count is in evaluations. Steps without the metric do not count either way.

The trial checks its rules as it reports each step (sweeps/driver/trial.py): the first rule that fires ends
the backend (the verl process with it) after that step is sent, and the trial ends FINISHED with the
tag ``stopped_by = "rule <name> at step N"``; a re-run treats it as done, and the tables footnote it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from contract.errors import InputError
from contract.metrics import LOGGED_PREFIXES

KEYS = ("metric", "below", "above", "for_steps", "no_improvement", "mode", "min_delta", "name")


class StopRuleError(InputError):
    """A bad `stop:` entry; the message names it and what was expected."""


class TrialStopped(Exception):
    """Raised out of the backend's report call when a rule fired; caught by the trial function."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class StopRule:
    metric: str
    """The metric watched (a reported metric name, e.g. actor/entropy or val/avg/acc)."""
    below: float | None = None
    """Fire when the metric is below this value ..."""
    above: float | None = None
    """... or above this value ..."""
    for_steps: int = 1
    """... at this many consecutive reported values."""
    no_improvement: int | None = None
    """Or: fire after this many consecutive values without a new best."""
    mode: str = "max"
    """Direction of 'best' for no_improvement."""
    min_delta: float = 0.0
    """A new best must beat the old one by more than this."""
    name: str = ""
    """Label in the stopped_by tag (default: derived from the rule)."""

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.no_improvement is not None:
            return f"{self.metric} no improvement in {self.no_improvement}"
        op, value = ("<", self.below) if self.below is not None else (">", self.above)
        return f"{self.metric}{op}{value:g} for {self.for_steps}"


def parse_stop_rules(section: Any, where: str) -> list[StopRule]:
    """The `stop:` section as rules; StopRuleError naming `where` and the entry for anything malformed."""
    if section is None:
        return []
    if not isinstance(section, list):
        raise StopRuleError(f"{where}: stop: expected a list of rules like [{{metric: actor/entropy, below: 0.01, "
                            f"for_steps: 20}}], got {section!r}")
    rules = []
    for i, raw in enumerate(section):
        at = f"{where}: stop[{i}]"
        if not isinstance(raw, dict):
            raise StopRuleError(f"{at}: expected a mapping with keys from {list(KEYS)}, got {raw!r}")
        unknown = sorted(set(raw) - set(KEYS))
        if unknown:
            raise StopRuleError(f"{at}: unknown key(s) {unknown}; expected some of {list(KEYS)}")
        metric = raw.get("metric")
        if not isinstance(metric, str) or not metric.startswith(LOGGED_PREFIXES):
            raise StopRuleError(f"{at}.metric: expected a reported metric name under {', '.join(LOGGED_PREFIXES)}, "
                                f"got {metric!r}")
        kinds = [k for k in ("below", "above", "no_improvement") if raw.get(k) is not None]
        if len(kinds) != 1:
            raise StopRuleError(f"{at}: expected exactly one of below / above / no_improvement, got {kinds or 'none'}")
        for key in ("below", "above", "min_delta"):
            value = raw.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise StopRuleError(f"{at}.{key}: expected a finite number, got {value!r}")
        for key in ("for_steps", "no_improvement"):
            value = raw.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise StopRuleError(f"{at}.{key}: expected an integer >= 1, got {value!r}")
        if raw.get("mode", "max") not in ("max", "min"):
            raise StopRuleError(f"{at}.mode: expected 'max' or 'min', got {raw.get('mode')!r}")
        if not isinstance(raw.get("name", ""), str) or len(raw.get("name", "")) > 60:
            raise StopRuleError(f"{at}.name: expected a string of at most 60 characters, got {raw.get('name')!r}")
        rules.append(StopRule(**raw))
    return rules


class StopMonitor:
    """Feeds each reported step to every rule; `update` returns the stop reason of the first that fires."""

    def __init__(self, rules: list[StopRule]):
        self.rules = rules
        self.streak = [0] * len(rules)
        self.best: list[float | None] = [None] * len(rules)

    def update(self, step: int, metrics: dict[str, Any]) -> str | None:
        for i, rule in enumerate(self.rules):
            value = metrics.get(rule.metric)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                continue
            if rule.no_improvement is not None:
                sign = 1.0 if rule.mode == "max" else -1.0
                if self.best[i] is None or sign * (value - self.best[i]) > rule.min_delta:
                    self.best[i], self.streak[i] = float(value), 0
                else:
                    self.streak[i] += 1
                hit = self.streak[i] >= rule.no_improvement
            else:
                holds = value < rule.below if rule.below is not None else value > rule.above
                self.streak[i] = self.streak[i] + 1 if holds else 0
                hit = self.streak[i] >= rule.for_steps
            if hit:
                return f"rule {rule.label} at step {step}"
        return None
