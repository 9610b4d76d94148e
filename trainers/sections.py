"""Each backend's own section of the trial config (``local:``, ``verl:``, ``synthetic:``): its dataclass of
defaults, its check, its path keys. trainers/config.py builds TrialConfig from these; trainers/backends.py holds
the rest of a backend (its train function and hooks). The two are apart so that the code a hook runs (a
trainer, an export) may import TrialConfig without the config importing it back.

    from trainers.sections import section_of, sections
    section_of("verl").config              # VerlConfig
    [s.backend for s in sections()]        # ['local', 'verl', 'synthetic']: the backends with a section

Every registered backend has an entry here, a section or none (``config=None``): `register_backend` in
trainers/backends.py adds both halves. Only light modules are imported (dataclasses and their checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from contract.plugins import load_plugins
from trainers.local.config import PATHS as LOCAL_PATHS
from trainers.local.config import LocalConfig, validate_local_section
from trainers.synthetic.config import SyntheticConfig, validate_synthetic_section
from trainers.verl_backend.config import PATHS as VERL_PATHS
from trainers.verl_backend.config import VerlConfig, validate_verl_section


@dataclass(frozen=True)
class Section:
    backend: str
    config: Optional[type] = None
    """The dataclass of its section ``<backend>:`` (its defaults); None: the backend has no section."""
    validate: Optional[Callable[[Any, str], None]] = None
    """(cfg, source) -> None: range checks of its section, a ConfigError naming the key."""
    paths: Optional[dict[str, str]] = None
    """{dotted key of its section: default}: the keys holding paths, made absolute against the directory a
    sweep starts in (trainers/backends.py ``absolute_paths``)."""
    paths_in_every_trial: bool = False
    """Its ``paths`` made absolute in every trial's config, not only its own trials' (local: the trial-config
    hashes a resume compares stay as they were)."""
    omitted_at_defaults: bool = False
    """Left out of TrialConfig.to_dict() while at its defaults (a section added after trials were recorded:
    their config hashes stay as they were)."""


DEFAULT_BACKEND = "local"
"""The backend of a trial config that names none (TrialConfig.backend's default)."""

SECTIONS: dict[str, Section] = {
    "local": Section("local", LocalConfig, validate_local_section, LOCAL_PATHS, paths_in_every_trial=True),
    "verl": Section("verl", VerlConfig, validate_verl_section, VERL_PATHS),
    "synthetic": Section("synthetic", SyntheticConfig, validate_synthetic_section, omitted_at_defaults=True),
}


def section_of(backend: str) -> Section:
    """The entry of a registered backend; ValueError naming the registered ones."""
    load_plugins()  # SWEEP_PLUGINS: the backends plug-ins register join before the registry is read
    if backend not in SECTIONS:
        raise ValueError(f"backend: unknown trainer backend {backend!r}; expected one of {list(SECTIONS)}")
    return SECTIONS[backend]


def sections() -> list[Section]:
    """The entries of the backends with a section, in registry order."""
    load_plugins()
    return [s for s in SECTIONS.values() if s.config is not None]
