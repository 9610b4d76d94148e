"""The error type of sweep specs and its unknown-key message (the "did you mean" hint is
contract/suggest.py's, shared with the trial config)."""

from __future__ import annotations

from contract.errors import InputError
from contract.suggest import did_you_mean


class SpecError(InputError):
    """A malformed sweep spec; the message names the file, the key path and what was expected."""


def unknown_key(where: str, key: str, allowed) -> SpecError:
    return SpecError(f"{where}: unknown key '{key}'{did_you_mean(key, allowed)}; expected one of {sorted(set(allowed))}")
