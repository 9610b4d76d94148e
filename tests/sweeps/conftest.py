"""Isolation for the sweep tests: each test gets the process environment back as it found it
(the driver sets RAY_TMPDIR, RAY_AUTH_* and Tune variables), and the short Ray/CLI directories it
created under <repo>/.rt (sweep_testlib.short_cwd / short_ray_dir) are removed, with any process still
running from them: a test's own after it, a module fixture's after the module."""

from __future__ import annotations

import os
import shutil
import sys
import types
from pathlib import Path

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


@pytest.fixture(autouse=True, scope="module")
def module_short_dirs():
    """The short directories a module fixture made (a sweep its tests share), removed once the module's
    fixtures are torn down (the per-test fixture above sees only each test's own)."""
    first = len(CREATED)
    yield
    for path in CREATED[first:]:
        kill_ray_processes(path)
        shutil.rmtree(path, ignore_errors=True)
    del CREATED[first:]


@pytest.fixture
def empty_cwd(tmp_path, monkeypatch) -> Path:
    """An empty working directory, and a sweeps.driver.runner stub: a spec test that wrongly gets past
    validation or a dry run fails instead of starting Ray."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    runner = types.ModuleType("sweeps.driver.runner")
    runner.RunOptions = runner.run_sweep = lambda *a, **k: pytest.fail("the sweep was run, not listed")
    monkeypatch.setitem(sys.modules, "sweeps.driver.runner", runner)
    return cwd
