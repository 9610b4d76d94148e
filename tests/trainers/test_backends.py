"""The backend registry (trainers/backends.py): every hook is a function held by reference (no "module:function"
string for an editor to lose), and each backend's checkpoint hooks recognise its own checkpoints and nobody
else's (trial_eval relies on both)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from trainers.api import CheckpointNotUsable
from trainers.backends import BACKENDS, Backend, get_backend
from trainers.sections import SECTIONS, sections

HOOKS = [f.name for f in fields(Backend) if f.name not in ("name", "summary", "checkpoints", "packages")]


@pytest.mark.parametrize("name", list(BACKENDS))
def test_every_hook_is_a_function_held_by_reference(name):
    backend = get_backend(name)
    for hook in HOOKS:
        if getattr(backend, hook) is not None:
            assert callable(getattr(backend, hook)), f"{name}.{hook}: {getattr(backend, hook)!r}"
    assert (backend.is_checkpoint is None) == (backend.export_hf is None) == (backend.checkpoints is None)
    section = SECTIONS[name]  # every backend has an entry in the sections' registry, a section or none
    if section.paths is not None:  # {dotted key of its section: default}
        assert isinstance(section.paths, dict) and section.paths, section.paths
    if section.config is not None:  # its trial-config section: a dataclass of defaults, a field of TrialConfig
        from dataclasses import is_dataclass

        from trainers.config import TrialConfig

        assert is_dataclass(section.config) and isinstance(getattr(TrialConfig(), name), section.config)
        assert callable(section.validate)


def test_the_registry_loads_no_heavy_module():
    """Registering the built-in backends imports their light hooks only: torch, verl and Hydra wait for a call."""
    import subprocess
    import sys

    code = ("import sys; import trainers.backends as b; b.get_backend('verl'); "
            "print(sorted(m for m in ('torch', 'verl', 'hydra', 'ray', 'mlflow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def _checkpoints(tmp_path):
    local = tmp_path / "local"
    local.mkdir()
    (local / "trainer_state.pt").write_bytes(b"")
    step = tmp_path / "global_step_4"
    (step / "actor" / "huggingface").mkdir(parents=True)  # no config.json: not mergeable
    pointer = tmp_path / "pointer-4"
    pointer.mkdir()
    (pointer / "verl_checkpoint.json").write_text(json.dumps({"path": str(step), "step": 4}))
    return {"local": [local], "verl": [step, step / "actor", pointer]}


def test_each_backend_recognises_only_its_own_checkpoints(tmp_path):
    found = _checkpoints(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    for name in BACKENDS:
        accepts = get_backend(name).is_checkpoint
        if accepts is None:  # a backend whose checkpoints cannot be evaluated (synthetic) claims none
            continue
        for owner, paths in found.items():
            for path in paths:
                assert accepts(path) == (owner == name), (name, path)
        assert not accepts(empty)


def test_verl_export_refuses_a_checkpoint_without_its_hf_config(tmp_path):
    pointer = _checkpoints(tmp_path)["verl"][2]
    export = get_backend("verl").export_hf
    with pytest.raises(CheckpointNotUsable, match="actor/huggingface/config.json"):
        export(pointer, tmp_path / "out", lambda: pytest.fail("verl needs no trial config"), lambda s: None)


def test_the_trial_config_a_reader_sees_is_the_one_the_registry_builds():
    """trainers/config.py spells TrialConfig out for readers and type checkers (under TYPE_CHECKING); at run time
    it is built from the registry. The two name the same sections, of the same dataclasses, in the same order."""
    import ast
    import dataclasses
    from pathlib import Path

    from trainers.config import TrialConfig, TrialSettings

    tree = ast.parse((Path(__file__).resolve().parents[2] / "trainers" / "config.py").read_text())
    spelled = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "TrialConfig")
    written = [(a.target.id, a.annotation.id) for a in spelled.body if isinstance(a, ast.AnnAssign)]
    own = [f for f in dataclasses.fields(TrialConfig) if f.name not in {g.name for g in dataclasses.fields(TrialSettings)}]
    assert written == [(f.name, f.default_factory.__name__) for f in own]
    assert [name for name, _ in written] == [s.backend for s in sections()]
