"""The README's main command, as a new user runs it: a fresh `git clone`, then `bash scripts/main.sh`.

Smoke size (`--smoke`: one seed, 4 steps per trial) so it fits the suite, but everything else is
what a user gets (the shipped base policy, not built): set-up of a new ./.venv by scripts/setup.sh, the live progress on (no
--no-progress), the end-of-run report on, default paths (runs/, .cache/). The clone is of the
repository's committed HEAD (in CI that is the submitted tree). Its set-up reads the wheels from this
repository's uv cache (UV_CACHE_DIR, as a user with one cache for several clones sets it) instead of
downloading them again: the install itself is the same.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from contract.env import STORE_TEMPLATE_DIR
from trainers.config import load_trial_config
from trainers.local.shipped_bases import recipe
from trainers.local.warmstart import base_key

REPO = Path(__file__).resolve().parent.parent
METHODS = ("GRPO", "GSPO", "GMPO", "CISPO", "DHPO-A", "DHPO-E")
DEFAULT_BASE = base_key(load_trial_config(None, []))  # the default study's (tests/trainers/local/test_shipped_bases.py)
DEFAULT_BASE_SHA1 = recipe(DEFAULT_BASE)["weights_sha1"]

pytestmark = [pytest.mark.slow, pytest.mark.lane("verl"), pytest.mark.timeout(1800)]


def _clone_dir() -> Path:
    """Short (Ray's Unix sockets live under <clone>/runs/.ray) and inside the repository."""
    root = REPO / ".rt"
    root.mkdir(exist_ok=True)
    for n in range(1000):
        path = root / f"m{n}"
        if not path.exists():
            return path
    raise RuntimeError(f"no free directory under {root}")


def _listing(directory: Path) -> set[str]:
    return {str(p) for p in directory.rglob("*")} if directory.is_dir() else set()


STATUS_EVERY_S = 5


def _seconds(text: str) -> int:
    """'1m05s' -> 65 (the status line's elapsed time)."""
    minutes, seconds = text[:-1].split("m")
    return int(minutes) * 60 + int(seconds)


def test_main_command_smoke_from_a_fresh_clone():
    clone = _clone_dir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAY_", "PYTEST_", "VIRTUAL_ENV")) and k not in ("MLFLOW_TRACKING_URI", STORE_TEMPLATE_DIR.name)}
    if (REPO / ".cache" / "uv").is_dir():  # this repository's own set-up filled it
        env["UV_CACHE_DIR"] = str(REPO / ".cache" / "uv")
    env["SWEEP_STATUS_EVERY"] = str(STATUS_EVERY_S)  # a batch log's status lines, every 60 s by default
    ray_home_before = _listing(Path.home() / ".ray")
    try:
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)
        result = subprocess.run(["bash", "scripts/main.sh", "--smoke"], cwd=clone, env=env, capture_output=True,
                                text=True, timeout=1700, stdin=subprocess.DEVNULL)
        out = result.stdout + result.stderr
        assert result.returncode == 0, out[-6000:]
        assert "dhpo_vs_baselines_smoke done in" in out and "'FINISHED': 6" in out
        # the default study starts from the shipped base policy: nothing built, its bytes named
        assert "building base policy" not in out, out[-6000:]
        assert f"base policy {DEFAULT_BASE}: weights sha1 {DEFAULT_BASE_SHA1[:8]}" in out
        # piped, as a batch job: a status line every STATUS_EVERY_S from the start, a line per trial start and end
        elapsed = [_seconds(m) for m in re.findall(r"^\[status (\d+m\d+s)\] sweep dhpo_vs_baselines_smoke: ", out, re.M)]
        assert len(elapsed) >= 3 and elapsed[0] < 60, out[-6000:]  # the first once Ray is up, then every 5 s
        assert max(b - a for a, b in zip(elapsed, elapsed[1:])) <= STATUS_EVERY_S + 3, elapsed
        assert len(re.findall(r"^\[\S+\.s0\] started$", out, re.M)) == 6
        assert len(re.findall(r"^\[\S+\.s0\] finished at step 4/4 ", out, re.M)) == 6
        table = out[out.index("| Method |"):]
        for method in ("Base", *METHODS):
            assert f"| {method} |" in table, method
        report = clone / "runs" / "dhpo_vs_baselines_smoke" / "report"
        assert (report / "report.html").stat().st_size > 100_000  # plotly inline: the page opens offline
        assert "report:" in out
        md = (report / "table.md").read_text()
        assert all(f"| {m} |" in md for m in METHODS)
        assert _listing(Path.home() / ".ray") == ray_home_before  # Ray wrote nothing to ~/.ray (token, sessions)
    finally:
        subprocess.run(["pkill", "-9", "-f", f"{clone}/"], check=False)  # its .venv's and runs/' processes, not m10's
        shutil.rmtree(clone, ignore_errors=True)
