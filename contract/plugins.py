"""Plug-ins: modules named in ``SWEEP_PLUGINS``, imported before a registry is read, in every process.

    SWEEP_PLUGINS=my_lab.backends,my_lab.generators sweep run study.yaml

A plug-in module registers what it adds when it is imported (``trainers.backends.register_backend``,
``evaluators.generators.register_generator``). The registries call ``load_plugins()`` before they are
read (a name looked up, the names listed), so the driver, the Ray workers a local sweep starts (they
inherit the environment) and every command see the same registry. A module that cannot be imported is an
``InputError`` naming it (`sweep` prints it in one line, exit 2).
"""

from __future__ import annotations

import importlib

from contract.env import PLUGINS
from contract.errors import InputError


def plugin_modules() -> list[str]:
    return [name.strip() for name in (PLUGINS.get() or "").split(",") if name.strip()]


def load_plugins() -> None:
    """Import every module of ``SWEEP_PLUGINS`` (once: Python caches modules)."""
    for name in plugin_modules():
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise InputError(f"{PLUGINS.name}: cannot import plug-in module {name!r} ({err}); expected an "
                             "importable module (on PYTHONPATH) that registers a backend or generator") from None
