"""Trial ids: readable, stable, safe as directory names and MLflow run names.

    config_id("dhpo", [("algorithm.name", "dhpo"), ("algorithm.params.mixing", "entropy")])  # 'dhpo-entropy'

The algorithm, then each variant value in spec order (numbers with short names: tn0.6, tp0.5;
eps_low + eps_high together as clip<low>-<high>), then ``seed+N`` for a variant's nonzero seed offset;
only ``A-Za-z0-9_.+-`` (anything else, and runs of dots, become ``_``); at most MAX_CONFIG_ID
characters (a longer id keeps its head and gets a hash of the whole). The seed suffix ``.s<seed>``
(the trial's seed, offset included) is added by the spec.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

SHORT = {"eps_low": "lo", "eps_high": "hi", "tau_pos": "tp", "tau_neg": "tn", "eps_low_token": "lot",
         "eps_high_token": "hit", "eps_low_seq": "los", "eps_high_seq": "his", "entropy_norm": "norm"}
MAX_ID = 120
"""Longest trial id; config ids get at most MAX_ID - len('.s4294967295') characters."""
MAX_CONFIG_ID = MAX_ID - 12
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_.+-]|\.{2,}")


def safe_id(text: str) -> str:
    """Only A-Za-z0-9_.+- (anything else, and runs of dots, become '_'): ids become directory names."""
    return _UNSAFE_ID.sub("_", text) or "_"


def cap_id(config_id: str) -> str:
    """At most MAX_CONFIG_ID characters: a longer id keeps its head plus a hash of the whole (stable, unique)."""
    if len(config_id) <= MAX_CONFIG_ID:
        return config_id
    digest = hashlib.sha1(config_id.encode()).hexdigest()[:8]
    return f"{config_id[:MAX_CONFIG_ID - 9]}-{digest}"


def id_part(key: str, value: Any, exact: bool = False) -> str:
    """``<short key><value>``; ``exact``: a float in full (its shortest round-trip form), not to 6 digits: two
    search samples that differ only past the 6th digit must not share an id (and so a record)."""
    leaf = key.split(".")[-1]
    if isinstance(value, bool):
        part = leaf if value else f"no-{leaf}"
    elif isinstance(value, str):
        part = value
    elif isinstance(value, list):
        part = "+".join(map(str, value))
    elif exact and isinstance(value, float):
        part = f"{SHORT.get(leaf, leaf)}{value!r}"
    else:
        part = f"{SHORT.get(leaf, leaf)}{value:g}" if isinstance(value, (int, float)) else f"{leaf}{value}"
    return safe_id(part)


def fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def config_id(name: str, pairs: list[tuple[str, Any]], seed_offset: int = 0) -> str:
    """Readable id of one configuration: the algorithm, then each variant value in spec order, then
    ``seed+<offset>`` when the variant shifts its seeds (a replicate of the same values is another configuration)."""
    values = dict(pairs)
    lo, hi = "algorithm.params.eps_low", "algorithm.params.eps_high"
    both = lo in values and hi in values  # shown together as clip<low>-<high>
    parts = [name]
    for key, value in pairs:
        if key == "algorithm.name" or (both and key == hi):
            continue
        parts.append(safe_id(f"clip{fmt(value)}-{fmt(values[hi])}") if both and key == lo else id_part(key, value))
    if seed_offset:
        parts.append(f"seed+{seed_offset}")
    return cap_id("-".join(parts))
