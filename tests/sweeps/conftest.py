"""Isolation for the sweep tests: each test gets the process environment back as it found it
(the driver sets RAY_TMPDIR, RAY_AUTH_* and Tune variables), and the short Ray/CLI directories it
created under <repo>/.rt are removed, with any process still running from them."""

from __future__ import annotations

import os
import shutil

import pytest
from sweep_testlib import REPO, kill_ray_processes


@pytest.fixture(autouse=True)
def isolated_environment_and_short_dirs():
    saved = dict(os.environ)
    root = REPO / ".rt"
    before = set(root.iterdir()) if root.is_dir() else set()
    yield
    os.environ.clear()
    os.environ.update(saved)
    for path in (set(root.iterdir()) if root.is_dir() else set()) - before:
        kill_ray_processes(path)
        shutil.rmtree(path, ignore_errors=True)
