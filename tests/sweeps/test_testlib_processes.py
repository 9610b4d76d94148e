"""The tests' process clean-up ends a test's own processes only: two pytest workers make short dirs
side by side under <repo>/.rt (c1, c16, ...), and one test's clean-up must not end the other's."""

from __future__ import annotations

import subprocess
import sys
import time

from sweep_testlib import kill_ray_processes, pids_under


def test_clean_up_of_a_dir_spares_a_sibling_whose_name_starts_the_same(tmp_path):
    mine, sibling = tmp_path / "c1", tmp_path / "c16"
    sleeper = "import sys, time; time.sleep(60)"
    procs = {name: subprocess.Popen([sys.executable, "-c", sleeper, f"--temp-dir={path}/session"])
             for name, path in (("mine", mine), ("sibling", sibling))}
    procs["bare"] = subprocess.Popen([sys.executable, "-c", sleeper, str(mine)])
    try:
        expected = sorted([procs["mine"].pid, procs["bare"].pid])
        deadline = time.monotonic() + 10  # a child shows its own command line only once it has exec'd
        while sorted(pids_under(mine)) != expected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(pids_under(mine)) == expected
        while pids_under(sibling) != [procs["sibling"].pid] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pids_under(sibling) == [procs["sibling"].pid]
        kill_ray_processes(mine)
        assert procs["mine"].wait(timeout=30) < 0 and procs["bare"].wait(timeout=30) < 0
        assert procs["sibling"].poll() is None
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
