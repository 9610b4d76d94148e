"""Safe reading of sweep specs and their command-line overrides.

* Spec files: read with OmegaConf's YAML loader (``3e-4`` is a float, dates stay strings, as Hydra
  reads configs), plus:
* No anchors, aliases or merge keys (``&a``, ``*a``, ``<<``): a spec is written out, so an alias
  bomb fails at its first anchor; nesting deeper than MAX_DEPTH fails too.
* A key that appears twice in one mapping is an error naming the key path and both lines
  (plain PyYAML silently keeps the last).
* Overrides: parsed by Hydra's override grammar (trainers/overrides.py: ``key=value``, ``+key=value``,
  ``++key=value``, ``~key[=value]``; no anchors or aliases there either).
* Values, in the file and in overrides: no interpolation (``${oc.env:HOME}``, ``${a.b}``: a spec is
  never resolved, so the text would reach model names and MLflow as is) and no non-finite numbers
  (``.nan``, ``.inf``, ``inf``, ``nan``, or such a string).

Every error is a SpecError naming the spec file, the key path (or line) and what was expected.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from omegaconf._utils import get_yaml_loader  # the loader OmegaConf.load uses (Hydra's YAML)

from sweeps.specs.errors import SpecError
from trainers.overrides import OverrideError, parse

MAX_DEPTH = 32
"""Deepest nesting of mappings/lists in a spec (the deepest real one is about 5)."""
_NON_FINITE = re.compile(r"[-+]?\.?(?:inf|infinity|nan)", re.IGNORECASE)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Refused(yaml.YAMLError):
    """A construct the spec loader refuses (not a syntax error): the message is shown as is."""


def _at(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


class SpecLoader(get_yaml_loader()):
    """OmegaConf's (safe) YAML loader that also refuses anchors/aliases/merge keys and deep nesting,
    and names the key path and both lines of a duplicate key."""

    def __init__(self, stream):
        super().__init__(stream)
        self._parts: list[str] = []  # key path of the node being composed
        self._paths: dict[int, str] = {}

    def compose_node(self, parent, index):
        # index: the key node of a mapping value, the position of a list item, None for a key
        self._parts.append(f".{index.value}" if isinstance(index, yaml.ScalarNode)
                           else f"[{index}]" if isinstance(index, int) else "")
        try:
            event = self.peek_event()
            where = "".join(self._parts).lstrip(".") or "top level"
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
                raise _Refused(f"{where}: YAML anchors and aliases ('{sign}{event.anchor}', {_at(event.start_mark)}) "
                               "are not allowed in a spec; expected the values written out")
            if len(self._parts) > MAX_DEPTH:
                raise _Refused(f"{where}: nested more than {MAX_DEPTH} levels deep ({_at(event.start_mark)}); "
                               "expected a flatter spec")
            return super().compose_node(parent, index)
        finally:
            self._parts.pop()

    def construct_document(self, node):
        self._paths = {}
        stack = [(node, "")]
        while stack:  # key path of every mapping, for the duplicate-key message
            n, path = stack.pop()
            self._paths[id(n)] = path
            if isinstance(n, yaml.MappingNode):
                stack += [(v, f"{path}.{k.value}" if path else str(k.value)) for k, v in n.value]
            elif isinstance(n, yaml.SequenceNode):
                stack += [(v, f"{path}[{i}]") for i, v in enumerate(n.value)]
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            path = self._paths.get(id(node), "")
            first: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    raise _Refused(f"{path or 'top level'}: YAML merge keys ('<<', {_at(key_node.start_mark)}) are "
                                   "not allowed in a spec; expected the keys written out")
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.get(key)
                except TypeError:  # unhashable: the base class says so
                    continue
                if seen is not None:
                    where = f"{path}.{key}" if path else str(key)
                    raise _Refused(f"{where}: duplicate key {key!r} at {_at(key_node.start_mark)} (first at "
                                   f"{_at(seen.start_mark)}); expected each key once in a mapping")
                first[key] = key_node
        return super().construct_mapping(node, deep)


def parse_yaml(text: str, src: str) -> Any:
    """The spec text as Python data; SpecError naming ``src`` on bad YAML or a refused construct."""
    loader = SpecLoader(text)
    try:
        return loader.get_single_data()
    except _Refused as err:
        raise SpecError(f"{src}: {err}") from None
    except yaml.YAMLError as err:
        raise SpecError(f"{src}: not valid YAML: {err}") from None
    finally:
        loader.dispose()


def check_values(value: Any, src: str, path: str = "") -> None:
    """Refuse interpolations and non-finite numbers anywhere in ``value`` (keys included)."""
    stack = [(value, path)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, dict):
            for k, sub in v.items():
                kp = f"{p}.{k}" if p else str(k)
                if isinstance(k, str) and "${" in k:
                    _interpolation(src, kp, k)
                stack.append((sub, kp))
        elif isinstance(v, list):
            stack += [(sub, f"{p}[{i}]") for i, sub in enumerate(v)]
        elif isinstance(v, float) and not math.isfinite(v):
            raise SpecError(f"{src}: {p or 'value'}: expected a finite number, got {v}")
        elif isinstance(v, str):
            if "${" in v:
                _interpolation(src, p, v)
            if _NON_FINITE.fullmatch(v.strip()):
                raise SpecError(f"{src}: {p or 'value'}: expected a finite number, got {v!r}")


def _interpolation(src: str, path: str, text: str) -> None:
    raise SpecError(f"{src}: {path or 'value'}: expected a plain value, got {text!r}: interpolations such as "
                    "${oc.env:VAR} or ${a.b} are not resolved in a spec and not allowed (write the value itself)")


def parse_overrides(items: list[str], src: str) -> list[tuple[str, Any]]:
    """Each command-line override as (where, Hydra Override): parsed by Hydra's grammar, its value
    checked like spec values; SpecError naming ``src``, the override and the key path."""
    parsed = []
    for item in items:
        where = f"{src} (command-line override {item!r})"
        try:
            ov = parse(item)
        except OverrideError as err:
            raise SpecError(f"{where}: {err}") from None
        if ov.key_or_group.count(".") + 1 + _depth(ov.value()) > MAX_DEPTH:
            raise SpecError(f"{where}: {ov.key_or_group}: nested more than {MAX_DEPTH} levels deep; expected a flatter value")
        check_values(ov.value(), where, ov.key_or_group)
        parsed.append((where, ov))
    return parsed


def _depth(value: Any) -> int:
    """Levels of mappings/lists in ``value`` (0 for a scalar)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if isinstance(v, (dict, list)):
            stack += [(sub, d + 1) for sub in (v.values() if isinstance(v, dict) else v)]
    return deepest
