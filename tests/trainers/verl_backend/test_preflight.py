"""The verl backend's checks before any trial starts (trainers/verl_backend/preflight.py)."""

from __future__ import annotations

import importlib.metadata

import pytest

from trainers.config import ConfigError
from trainers.verl_backend import preflight


def test_another_verl_version_is_refused_before_anything_starts(monkeypatch):
    preflight.check_verl_installed("spec.yaml")  # the installed one passes
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.10.0")
    with pytest.raises(ConfigError, match=r"spec.yaml: backend: 'verl' needs verl 0.9.1 exactly .* found 0.10.0"):
        preflight.check_verl_installed("spec.yaml")
