"""Test-wide environment: nothing written outside the repository, no network lookups.

Temporary files (TMPDIR) are the session's under <repo>/.rt, and a session that leaves entries of its tools'
names in /tmp fails: tests/suite_tmp.py says how, and how an entry is told to be the suite's.
"""

import functools
import os
import re
import shutil
from pathlib import Path

import pytest
import suite_tmp

from contract.env import STORE_TEMPLATE_DIR

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# The built-in trainer's default numeric mode holds only in a process started with its kernel settings
# (trainers/local/numerics.py): the tests that train in this process start it as a sweep's workers do.
os.environ.update({"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"})


REPO = Path(__file__).resolve().parent.parent
# New sqlite stores (hundreds in a run, here and in every sweep a test starts) copied from one migrated store
# (tracking_store/store_template.py): milliseconds each instead of about a CPU-second of MLflow's migrations.
os.environ.setdefault(STORE_TEMPLATE_DIR.name, str(REPO / ".cache" / "store-template"))
SUITE_TMPDIR = suite_tmp.use_suite_tmpdir()  # now: before any test asks tempfile, before xdist starts workers
TMP_AT_START: set[str] = set()
TMP_LEFT: list[tuple[str, str]] = []


def _first_process(config) -> bool:
    return not hasattr(config, "workerinput")  # not an xdist worker: the session's own process


def pytest_sessionstart(session):
    if _first_process(session.config):
        TMP_AT_START.update(suite_tmp.listing())


def pytest_sessionfinish(session, exitstatus):
    """The session fails when it left entries in /tmp (tests/suite_tmp.py: which count as its own)."""
    if _first_process(session.config) and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        TMP_LEFT[:] = suite_tmp.left_behind(TMP_AT_START, suite_tmp.listing())
        if TMP_LEFT:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if TMP_LEFT:
        terminalreporter.section(f"left in {suite_tmp.SYSTEM_TMP}", red=True)
        for line in suite_tmp.report_lines(TMP_LEFT, SUITE_TMPDIR):
            terminalreporter.line(line)


def pytest_configure(config):
    """Temporary test dirs inside the repository (absolute: some tests chdir), unless --basetemp is given:
    one per pytest process (pytest empties its basetemp when it starts, so two runs must not share
    one); those of processes that are gone are removed."""
    if not config.option.basetemp:
        root = REPO / ".cache" / "pytest"
        root.mkdir(parents=True, exist_ok=True)
        for old in root.glob("p*"):
            if old.name[1:].isdigit() and not suite_tmp.alive(int(old.name[1:])):
                shutil.rmtree(old, ignore_errors=True)
        config.option.basetemp = str(root / f"p{os.getpid()}")


# The test command runs two pytest-xdist workers (`-n 2`, scripts/test.sh). Each test file is one unit of
# work, given whole to the next free worker (module fixtures are built once). The long end-to-end files (minutes
# each) say in themselves which of two lanes they run in, `pytestmark = [pytest.mark.slow, pytest.mark.lane("verl")]`:
# a lane is one unit of work (its files one after the other, in collection order), so the two lanes run side by
# side while the other files fill in around them. No file relies on another having run: what a file needs (a
# built base, a finished sweep) comes from a fixture. `slow` marks what the fast tier (-m "not slow") leaves out:
# every test that starts Ray, a server, a subprocess or a training run.
LANES = ("verl", "local")
_LANE_MARK = re.compile(r"""pytest\.mark\.lane\(\s*["'](\w+)["']\s*\)""")


@functools.cache
def lane_declared_in(path: str) -> str | None:
    """The lane a test file declares (its `pytest.mark.lane("...")`), read from its source: xdist's scheduler
    runs in the controller process, which sees node ids, not markers."""
    try:
        found = set(_LANE_MARK.findall(Path(path).read_text()))
    except OSError:
        return None
    return found.pop() if len(found) == 1 else None


def pytest_collection_modifyitems(config, items):
    """A lane is one of LANES, declared once for a whole file (in its pytestmark)."""
    wrong = set()
    for item in items:
        marks = {m.args[0] if m.args else None for m in item.iter_markers("lane")}
        if marks and (len(marks) > 1 or not marks <= set(LANES) or lane_declared_in(str(item.path)) not in marks):
            wrong.add(f"{item.path.name}: pytest.mark.lane: expected one lane of {LANES} for the whole file "
                      f"(in its pytestmark), got {sorted(map(str, marks))}")
    if wrong:
        raise pytest.UsageError("tests/conftest.py: lanes: " + "; ".join(sorted(wrong)))


@functools.cache
def starts_first(path: str) -> bool:
    """Whether a test file declares `pytest.mark.start_first` (read from its source, as its lane is)."""
    try:
        return "pytest.mark.start_first" in Path(path).read_text()
    except OSError:
        return False


@pytest.hookimpl(optionalhook=True)  # without xdist (-p no:xdist) the hook is not known
def pytest_xdist_make_scheduler(config, log):
    """Units of work for xdist: a test file, or a whole lane of slow files (largest units first). Both lanes
    at once from the start was tried and is slower: two end-to-end files side by side contend for the two
    cores, while one beside the fast files does not. A file that declares `pytest.mark.start_first` (minutes
    spent mostly waiting on daemons, little CPU: the real Slurm's) goes first, beside the CPU-bound work, rather
    than last by its few tests, where it would keep one worker busy after the other has finished."""
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):
        first_moved = False

        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            lane = lane_declared_in(str(Path(config.rootpath) / file))
            return f"lane-{lane}" if lane else file

        def _assign_work_unit(self, node) -> None:
            if not self.first_moved:  # the queue is complete before the first unit is given out
                for scope in [s for s in self.workqueue if starts_first(str(Path(config.rootpath) / s))]:
                    self.workqueue.move_to_end(scope, last=False)
                self.first_moved = True
            super()._assign_work_unit(node)

    return LaneScheduling(config, log)
