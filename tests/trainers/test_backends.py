"""The backend registry (trainers/backends.py): every hook names a real function, and each backend's
checkpoint hooks recognise its own checkpoints and nobody else's (trial_eval relies on both)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from trainers.backends import BACKENDS, Backend, CheckpointNotUsable, get_backend

HOOKS = [f.name for f in fields(Backend) if f.name not in ("name", "summary", "checkpoints", "paths",
                                                           "paths_in_every_trial", "packages",
                                                           "section_omitted_at_defaults")]


@pytest.mark.parametrize("name", list(BACKENDS))
def test_every_hook_resolves_to_a_function(name):
    backend = get_backend(name)
    for hook in HOOKS:
        if getattr(backend, hook) is not None:
            assert callable(backend.load(hook)), f"{name}.{hook}: {getattr(backend, hook)}"
    if backend.paths is not None:  # {dotted key of its section: default}
        assert isinstance(backend.load("paths"), dict) and backend.load("paths"), backend.paths
    assert (backend.is_checkpoint is None) == (backend.export_hf is None) == (backend.checkpoints is None)
    if backend.section is not None:  # its trial-config section: a dataclass of defaults, a field of TrialConfig
        from dataclasses import is_dataclass

        from trainers.config import TrialConfig

        assert is_dataclass(backend.load("section")) and isinstance(getattr(TrialConfig(), name), backend.load("section"))


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
        accepts = get_backend(name).load("is_checkpoint")
        if accepts is None:  # a backend whose checkpoints cannot be evaluated (synthetic) claims none
            continue
        for owner, paths in found.items():
            for path in paths:
                assert accepts(path) == (owner == name), (name, path)
        assert not accepts(empty)


def test_verl_export_refuses_a_checkpoint_without_its_hf_config(tmp_path):
    pointer = _checkpoints(tmp_path)["verl"][2]
    export = get_backend("verl").load("export_hf")
    with pytest.raises(CheckpointNotUsable, match="actor/huggingface/config.json"):
        export(pointer, tmp_path / "out", lambda: pytest.fail("verl needs no trial config"), lambda s: None)
