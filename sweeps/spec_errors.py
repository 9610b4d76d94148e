"""The error type of sweep specs and its "did you mean" helper."""

from __future__ import annotations

import difflib


class SpecError(ValueError):
    """A malformed sweep spec; the message names the file, the key path and what was expected."""


def unknown_key(where: str, key: str, allowed) -> SpecError:
    hint = difflib.get_close_matches(str(key), list(allowed), n=1)
    did_you_mean = f" (did you mean '{hint[0]}'?)" if hint else ""
    return SpecError(f"{where}: unknown key '{key}'{did_you_mean}; expected one of {sorted(allowed)}")
