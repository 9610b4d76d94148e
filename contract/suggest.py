"""The "did you mean" hint of every unknown-key error: trial configs, sweep specs and overrides.

Here (not in sweeps/) so trainers can use it without importing sweeps; sweeps/specs/errors.py
builds its messages on it.
"""

from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(key: object, allowed: Iterable[object], prefix: str = "") -> str:
    """`` (did you mean '<prefix><closest>'?)`` for the closest allowed key, or '' when none is close."""
    hint = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=1)
    return f" (did you mean '{prefix}{hint[0]}'?)" if hint else ""
