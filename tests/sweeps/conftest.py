"""Isolation for the sweep tests: each test gets the process environment back as it found it
(the driver sets RAY_TMPDIR, RAY_AUTH_* and Tune variables), and the short Ray/CLI directories it
created under <repo>/.rt (sweep_testlib.short_cwd / short_ray_dir) are removed, with any process still
running from them."""

from __future__ import annotations

import os
import shutil

import pytest
from sweep_testlib import CREATED, kill_ray_processes


@pytest.fixture(autouse=True)
def isolated_environment_and_short_dirs():
    saved = dict(os.environ)
    first = len(CREATED)
    yield
    os.environ.clear()
    os.environ.update(saved)
    for path in CREATED[first:]:  # only this test's: another pytest process may be using <repo>/.rt too
        kill_ray_processes(path)
        shutil.rmtree(path, ignore_errors=True)
    del CREATED[first:]
