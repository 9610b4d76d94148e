"""Safe reading of sweep specs and their command-line overrides.

* YAML 1.2 floats (``3e-4`` is a number, as in Hydra/OmegaConf).
* No anchors, aliases or merge keys (``&a``, ``*a``, ``<<``): a spec is written out, so an alias
  bomb fails at its first anchor; nesting deeper than MAX_DEPTH fails too.
* A key that appears twice in one mapping is an error naming the key path and both lines
  (plain PyYAML silently keeps the last).
* Values: no interpolation (``${oc.env:HOME}``, ``${a.b}``: a spec is never resolved, so the text
  would reach model names and MLflow as is) and no non-finite numbers (``.nan``, ``.inf``, ``inf``).

Every error is a SpecError naming the spec file, the key path (or line) and what was expected.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

from sweeps.spec_errors import SpecError

MAX_DEPTH = 32
"""Deepest nesting of mappings/lists in a spec (the deepest real one is about 5)."""
_NON_FINITE = re.compile(r"[-+]?\.?(?:inf|infinity|nan)", re.IGNORECASE)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Refused(yaml.YAMLError):
    """A construct the spec loader refuses (not a syntax error): the message is shown as is."""


def _at(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


class SpecLoader(yaml.SafeLoader):
    """SafeLoader that reads ``3e-4`` as a float (YAML 1.2), refuses anchors/aliases/merge keys and
    deep nesting, and reports duplicate keys."""

    def __init__(self, stream, prefix: str = ""):
        super().__init__(stream)
        self.key_prefix = prefix  # key path of the document (an override's key)
        self._parts: list[str] = []  # key path of the node being composed
        self._paths: dict[int, str] = {}

    def compose_node(self, parent, index):
        # index: the key node of a mapping value, the position of a list item, None for a key
        self._parts.append(f".{index.value}" if isinstance(index, yaml.ScalarNode)
                           else f"[{index}]" if isinstance(index, int) else "")
        try:
            event = self.peek_event()
            where = (self.key_prefix + "".join(self._parts)).lstrip(".") or "top level"
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
        stack = [(node, self.key_prefix)]
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


SpecLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
                                 list("-+0123456789"))


def parse_yaml(text: str, src: str, prefix: str = "") -> Any:
    """The spec text (or an override value at key path ``prefix``) as Python data; SpecError naming
    ``src`` on bad YAML or a refused construct."""
    loader = SpecLoader(text, prefix)
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


def parse_override(item: str, src: str) -> tuple[str, Any]:
    """``key.path=value`` -> (key path, value read as spec YAML, checked like spec values)."""
    where = f"{src} (command-line override {item!r})"
    if not isinstance(item, str) or "=" not in item:
        raise SpecError(f"{where}: expected key.path=value")
    key, text = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise SpecError(f"{where}: expected key.path=value with a non-empty key path, got key {key!r}")
    value = parse_yaml(text, where, key) if text else ""
    check_values(value, where, key)
    if "${" in key:
        _interpolation(where, key, key)
    return key, value


def set_override(data: dict, key: str, value: Any, item: str, src: str) -> None:
    """Set ``data[a][b]... = value`` for key ``a.b...``, creating mappings on the way."""
    node = data
    for part in key.split(".")[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise SpecError(f"{src} (command-line override {item!r}): {part}: expected a mapping to set "
                            f"{key} in, got {node!r}")
    node[key.split(".")[-1]] = value
