"""The error of bad input, and the one check that raises it.

    from contract.errors import ConfigError, require
    require(steps >= 1, "my.yaml", "trainer.steps", "an integer >= 1", steps)
    # ConfigError: my.yaml: trainer.steps: expected an integer >= 1, got 0

`InputError` is the base of every error that means "the user's input is wrong" (a spec, a trial
config, an override, an evaluation section, a target): its message names the file or source, the
key and what was expected, and the command line answers it with exit code 2 before anything runs.
"""

from __future__ import annotations

from typing import Any


RESUME_HINT = "interrupted: run the same command again to resume"  # the last words of a stopped driver


class InputError(ValueError):
    """Bad input from the user; the message names where, which key, and what was expected."""


class ConfigError(InputError):
    """A bad trial-configuration value (trainers/config.py and each backend's section)."""


def require(ok: bool, source: str, path: str, expected: str, value: Any) -> None:
    """Raise ConfigError('<source>: <path>: expected <expected>, got <value>') unless ``ok``."""
    if not ok:
        raise ConfigError(f"{source}: {path}: expected {expected}, got {value!r}")
