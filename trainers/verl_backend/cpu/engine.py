"""Registers verl's FSDP engines for device "cpu" as soon as verl imports them.

verl 0.9.1 registers ``FSDPEngineWithLMHead`` / ``FSDPEngineWithValueHead`` (backends fsdp,
fsdp2) only for devices cuda and npu (verl/workers/engine/fsdp/transformer_impl.py), and
``EngineRegistry.get_engine_cls`` looks them up by ``get_device_name()`` ("cpu" on our platform).
The same classes run on CPU with FSDP2 (``strategy=fsdp2``: FSDP1 passes ``device_id`` and
``sync_module_states``), so registering them under "cpu" is all it takes.

The alternative, env ``VERL_ENGINE_DEVICE=cuda`` (read by get_engine_cls), works too but makes
every engine lookup of the process pretend to be CUDA. Importing transformer_impl eagerly costs
~7 s per process (it pulls in every engine verl ships), so instead a ``sys.meta_path`` hook
registers the classes right after verl itself imports that module; if it is already imported,
they are registered at once.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

from trainers.verl_backend.cpu.platform import PLATFORM_NAME

FSDP_MODULE = "verl.workers.engine.fsdp.transformer_impl"
_ENGINES = (("language_model", "FSDPEngineWithLMHead"), ("value_model", "FSDPEngineWithValueHead"))
_BACKENDS = ("fsdp", "fsdp2")


def register_fsdp_for_cpu(module: ModuleType) -> None:
    """Add device "cpu" entries for verl's FSDP engines defined in ``module`` (idempotent)."""
    from verl.workers.engine.base import EngineRegistry

    for model_type, class_name in _ENGINES:
        engine_cls = getattr(module, class_name, None)
        if engine_cls is None:
            continue
        for backend in _BACKENDS:
            table = EngineRegistry._engines.setdefault(model_type, {}).setdefault(backend, {})
            table.setdefault(PLATFORM_NAME, engine_cls)


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of FSDP_MODULE to register after it runs."""

    def find_spec(self, fullname, path, target=None):
        if fullname != FSDP_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                module.__loader__ = spec.loader = loader  # the module keeps the real loader
                loader.exec_module(module)
                register_fsdp_for_cpu(module)

        spec.loader = _Loader()
        return spec


def install_fsdp_cpu_registration() -> None:
    """Register now if verl's FSDP engines are imported, else as soon as they are (idempotent)."""
    module = sys.modules.get(FSDP_MODULE)
    if module is not None:
        register_fsdp_for_cpu(module)
        return
    if not any(isinstance(finder, _RegisterAfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
