"""The suite's temporary files stay in the repository: none are left in the system's temp dir (/tmp).

tests/conftest.py calls ``use_suite_tmpdir()`` when it is imported, before any test runs and before pytest-xdist
starts its workers: TMPDIR (and Python's ``tempfile.tempdir``) becomes ``<repo>/.rt/tmp-<pid>`` (git-ignored;
short, as Ray and Python put Unix sockets there), one per pytest session (the pid is the session's first
pytest process: scripts/test.sh sets it before set-up, and `exec` keeps the pid). The workers and every process
a test starts inherit it, so Python's tempfile, MLflow's store-init lock (``db_init_lock-*`` in
``tempfile.gettempdir()``), multiprocessing, Ray, torch, matplotlib, Chromium and uv write there instead of /tmp.
A later session removes the directories of sessions that are gone (as tests/conftest.py does for pytest's
basetemp under .cache/pytest).

The check (tests/conftest.py, in the session's first process): /tmp is listed when the session starts and
when it ends, and the session fails (exit 1, a "left in /tmp" section naming each entry and the tool whose name
it has) when a new entry there has a name that a tool of the suite gives its temporary files (``SUITE_NAMES``).
That is how an entry is told to be the suite's: /tmp is shared, and other processes write there meanwhile
(a shell's ``tmp.XXXXXXXXXX``, a log file) without telling whose they are. The rule's limit: a process outside
the suite that makes an entry of one of these names during the session (another Python program's default
``tmpXXXXXXXX``, another pytest run) is blamed on the suite; run the suite alone to be sure. An entry the suite
makes and removes again is not "left".
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / ".rt"
PREFIX = "tmp-"
SYSTEM_TMP = Path("/tmp")

SUITE_NAMES = (  # (name pattern, the tool that names its temporary files so)
    (r"tmp[a-z0-9_]{8}.*", "Python's tempfile (mkdtemp, mkstemp, TemporaryDirectory: MLflow, wandb, ...)"),
    (r"db_init_lock-.*", "MLflow's store-init lock"),
    (r"verdicts-.*", "the report's verdicts (dashboards/collect/verdicts.py)"),
    (r"pymp-.*", "Python's multiprocessing"),
    (r"ray|_ray_lockfiles", "Ray"),
    (r"torchinductor_.*", "torch.compile"),
    (r"matplotlib-.*", "matplotlib"),
    (r"\.org\.chromium\.Chromium\..*|\.com\.google\.Chrome\..*", "Chromium"),
    (r"\.s\.PGSQL\..*", "PostgreSQL"),
    (r"pytest-of-.*", "pytest"),
    (r"\.tmp[A-Za-z0-9]{6}|uv-.*", "uv (its build dirs, uv-setuptools-*.lock)"),
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _session_dir(path: str | None) -> Path | None:
    """``path`` when it is a session's temp dir of this repository that exists, else None."""
    if not path:
        return None
    p = Path(path)
    return p if p.parent == ROOT and p.name.startswith(PREFIX) and p.is_dir() else None


def use_suite_tmpdir() -> Path:
    """TMPDIR of this pytest session (the module docstring): inherited when set by scripts/test.sh or by the
    session's first process (an xdist worker), else made; ``tempfile`` is pointed there too (it keeps the first
    directory it found)."""
    path = _session_dir(os.environ.get("TMPDIR"))
    if path is None:
        ROOT.mkdir(exist_ok=True)
        for old in ROOT.glob(f"{PREFIX}*"):
            pid = old.name[len(PREFIX):]
            if pid.isdigit() and not alive(int(pid)):
                shutil.rmtree(old, ignore_errors=True)
        path = ROOT / f"{PREFIX}{os.getpid()}"
        path.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(path)
    tempfile.tempdir = str(path)
    return path


def listing() -> set[str]:
    """The names in /tmp now."""
    try:
        return set(os.listdir(SYSTEM_TMP))
    except OSError:
        return set()


def tool_of(name: str) -> str | None:
    """The suite's tool whose temporary files have this name (``SUITE_NAMES``), or None."""
    return next((tool for pattern, tool in SUITE_NAMES if re.fullmatch(pattern, name)), None)


def left_behind(before: set[str], after: set[str]) -> list[tuple[str, str]]:
    """(name, tool) of each entry new in /tmp since ``before`` that has a name of the suite's tools."""
    return sorted((name, tool) for name in after - before if (tool := tool_of(name)))


def report_lines(left: list[tuple[str, str]], tmpdir: Path) -> list[str]:
    """What the session says about the entries it left (with each one's time, to tell it from another process')."""
    lines = []
    for name, tool in left:
        try:
            made = time.strftime("%H:%M:%S", time.localtime((SYSTEM_TMP / name).lstat().st_mtime))
        except OSError:
            made = "gone since"
        lines.append(f"{SYSTEM_TMP / name} ({made}): new during the session, named as {tool} names its files")
    return lines + [f"the suite's temporary files belong in TMPDIR={tmpdir} (tests/suite_tmp.py): a tool ignored "
                    "it, or a process was started without it; set its temporary path explicitly"]
