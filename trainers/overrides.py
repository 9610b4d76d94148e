"""Command-line overrides in Hydra's own grammar, applied to plain nested dicts.

One implementation for ``sweep run SPEC.yaml ...`` and ``python -m trainers.local ...``. Each
override is parsed by Hydra's parser (``hydra.core.override_parser``), so values are typed as in
Hydra: ``3e-4`` and ``1e3`` are floats, ``[0,1]`` a list, ``{lr: 0.1}`` a mapping, ``null`` None,
``true`` a bool, ``'3'`` (quoted) the string '3', ``int(3.7)`` 3. We apply the parsed override to
our config dict ourselves (configs are plain dicts checked by their own code afterwards):

==================  ============================================================================
``key=value``       set a key the config's schema knows; a mapping value is merged into the
                    mapping already there (Hydra's merge); a list or scalar replaces
``+key=value``      add a key that has no value yet; an error if it has one: "trainer.lr already
                    exists; use trainer.lr=... or ++trainer.lr=..." (as in Hydra a null counts as
                    no value, so ``+model.path=...`` works)
``++key=value``     set or add
``~key``            delete the key; an error if it has no value. In a trial config a deleted key
                    is back at its dataclass default (every section and field has one)
``~key=value``      delete only if the current value equals ``value``; else an error naming both
==================  ============================================================================

Schemas: a *closed* mapping (the fields of a trial-config dataclass, the top-level keys of a sweep
spec) lists its keys, and every form fails on a key it does not list, naming the key path with a
"did you mean" hint. Its keys exist even when the config does not write them (a default counts: a
structured config, as in Hydra). An *open* mapping (``algorithm.params``, ``data.eval_files``, a
spec's sections) takes any key, which its consumer then checks; there a plain ``key=value`` may add
a key, as every objective parameter has a paper default (Hydra would ask for ``+``).

Refused with a clear message: Hydra sweeps (``a,b``, ``choice()``, ``range()``, ``interval()``,
``glob()``: a trial takes one value; a grid is a list in a spec variant), ``key@package``, group
paths ``a/b``. Hydra's grammar has no YAML anchors/aliases, and unquoted values are ASCII (quote
others: ``model.name='café'``). Interpolations (``${...}``) are never resolved (specs refuse them).
"""

from __future__ import annotations

import copy
from typing import Any

from contract.errors import InputError
from contract.suggest import did_you_mean

_MISSING = object()
_PARSER = None
USAGE = "key=value, +key=value, ++key=value or ~key[=value]"


class OverrideError(InputError):
    """A malformed or inapplicable override; callers prefix where it came from."""


def parse(item: str):
    """The Hydra ``Override`` of one command-line item; OverrideError unless it is one plain override."""
    global _PARSER
    from hydra.errors import HydraException

    if _PARSER is None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        _PARSER = OverridesParser.create()
    if not isinstance(item, str):
        raise OverrideError(f"expected an override string ({USAGE}), got {item!r}")
    try:
        ov = _PARSER.parse_override(item)  # parse_overrides would turn a lexer error into a caret drawing
    except HydraException as err:
        raise OverrideError(f"not a valid override in Hydra's grammar ({USAGE}): {_parse_error(item, err)}") from None
    except RecursionError:  # Hydra's parser recurses per nesting level
        raise OverrideError("nested too deeply; expected a flatter value") from None
    key = ov.key_or_group
    if not key or "/" in key:
        raise OverrideError(f"expected a dotted key path such as trainer.lr, got {key!r}")
    if ov.package is not None:
        raise OverrideError(f"{key}@{ov.package}: '@package' is not supported; expected a dotted key path")
    if ov.is_sweep_override():
        raise OverrideError(f"{key}: expected one value, got a Hydra sweep ({item.split('=', 1)[-1]}): sweeps "
                            "(a,b / choice / range / interval / glob) are not supported here; for a list value write "
                            "[a,b] (quote a string with a comma: 'a,b'), and put a grid axis in a spec variant")
    return ov


def _parse_error(item: str, err: Exception) -> str:
    cause = err.__cause__
    index = getattr(cause, "startIndex", None)
    if isinstance(index, int) and 0 <= index < len(item):
        quote = " (quote text outside ASCII: key='...')" if not item[index].isascii() else ""
        return f"unexpected character {item[index]!r} at position {index + 1}{quote}"
    lines = [line for line in str(err).splitlines()
             if line.strip() and not line.startswith(("See https://", "Error parsing override"))]
    return "; ".join(lines) or str(err)


def apply(tree: dict, ov, schema: Any = None, defaults: dict | None = None, *, key: str | None = None,
          prefix: str = "") -> None:
    """Apply one parsed override to ``tree`` in place.

    ``schema``: a closed mapping is a dict of its keys' schemas, None an open mapping or a leaf (see
    the module docstring); ``defaults``: the values of keys
    the tree leaves out (a trial config's dataclass defaults); ``key``: the path in ``tree`` (default:
    the override's key); ``prefix``: shown before key paths in messages (e.g. 'base.')."""
    key = ov.key_or_group if key is None else key
    parts = key.split(".")
    name = prefix + key
    sch = schema
    for i, part in enumerate(parts):  # every form: a key a closed mapping does not list is a typo
        if isinstance(sch, dict):
            if part not in sch:
                above = prefix + ".".join(parts[:i]) + ("." if i else "")
                raise OverrideError(f"{above}{part}: unknown key{did_you_mean(part, sch, above)}; "
                                    f"expected one of {sorted(sch)}")
            sch = sch[part]
        else:
            sch = None
    current = _lookup(tree, parts)
    if current is _MISSING:
        current = _lookup(defaults, parts)
    if ov.is_delete():
        value = ov.value()
        if current is _MISSING or current is None:
            raise OverrideError(f"{name}: cannot delete it: it has no value")
        if value is not None and value != current:
            raise OverrideError(f"{name}: not deleted: its value is {current!r}, not {value!r}")
        parent = _lookup(tree, parts[:-1])
        if isinstance(parent, dict) and parts[-1] in parent:
            del parent[parts[-1]]
        elif isinstance(parent, list) and _index(parent, parts[-1]) is not None:
            del parent[_index(parent, parts[-1])]
        return  # not in the tree: it is at its default already
    if ov.is_add() and current is not _MISSING and current is not None:
        raise OverrideError(f"{name} already exists; use {name}=... or ++{name}=... (its value: {current!r})")
    _set(tree, parts, copy.deepcopy(ov.value()), defaults, name, prefix)


def _index(node: list, part: str) -> int | None:
    return int(part) if part.isdigit() and int(part) < len(node) else None


def _lookup(node: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and _index(node, part) is not None:
            node = node[_index(node, part)]
        else:
            return _MISSING
    return node


def _set(tree: dict, parts: list[str], value: Any, defaults: dict | None, name: str, prefix: str) -> None:
    node: Any = tree
    for i, part in enumerate(parts):
        here = prefix + ".".join(parts[:i + 1])
        if isinstance(node, list):
            at = _index(node, part)
            if at is None:
                raise OverrideError(f"{here}: expected an index below {len(node)} of the list at "
                                    f"{prefix + '.'.join(parts[:i])}")
        elif isinstance(node, dict):
            at = part
        else:
            raise OverrideError(f"{prefix + '.'.join(parts[:i])}: expected a mapping to set {name} in, got {node!r}")
        if i == len(parts) - 1:
            if isinstance(value, dict) and isinstance(node, dict) and isinstance(node.get(at), dict):
                _merge(node[at], value)
            else:
                node[at] = value
            return
        if isinstance(node, dict) and at not in node:
            default = _lookup(defaults, parts[:i + 1])
            if default is not _MISSING and not isinstance(default, dict):
                raise OverrideError(f"{here}: expected a mapping to set {name} in, got {default!r}")
            node[at] = {}
        node = node[at]


def _merge(into: dict, value: dict) -> None:
    for k, v in value.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v
