"""Test-wide environment: nothing written outside the repository, no network lookups.

Temporary files (TMPDIR) are the session's under <repo>/.rt, and a session that leaves entries of its tools'
names in /tmp fails: tests/suite_tmp.py says how, and how an entry is told to be the suite's.
"""

import os
import shutil
from pathlib import Path

import pytest
import suite_tmp

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# The built-in trainer's default numeric mode holds only in a process started with its kernel settings
# (trainers/local/numerics.py): the tests that train in this process start it as a sweep's workers do.
os.environ.update({"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"})


REPO = Path(__file__).resolve().parent.parent
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


# The test command runs two pytest-xdist workers (`-n 2`, scripts/test.sh). Each test file is one unit
# of work, given whole to the next free worker (module fixtures are built once); the slow end-to-end
# files form two lanes of about equal length that run side by side, each file in the order listed.
# Seconds: the whole suite's `--durations=60` on two workers and 2 cores (docs/testing.md has the run).
SLOW_LANES = {
    "lane-verl": (  # verl main_ppo on the CPU, the fresh-clone main command, the benchmarks: CPU-bound
        "test_sweep_verl_e2e.py",          # ~180 s
        "test_sweep_verl_cluster.py",      # ~320 s (one sweep in a module fixture)
        "test_main_command.py",            # ~185 s (a new .venv, then the smoke sweep building the default base)
        "test_cpu_main_ppo.py",            # ~55 s
        "test_shipped_study_dynamics.py",  # ~65 s (the default base: main_command's, copied)
        "test_benchmarks_smoke.py",        # ~570 s (the tracking-outage, sweep-scale and chaos smokes; chaos ~360 s)
        "test_sweep_eval.py",              # ~45 s
        "test_sweep_grid.py",              # ~60 s (a 6-trial grid with a selection split)
    ),
    "lane-local": (  # local-trainer sweeps, clusters, servers and outages: much waiting on processes
        "test_sweep_cluster_server.py",    # ~300 s
        "test_sweep_cli_e2e.py",           # ~355 s
        "test_sweep_e2e.py",               # ~175 s
        "test_sweep_store_postgres.py",    # ~40 s
        "test_read_copy_server.py",        # a 6-trial synthetic sweep on an mlflow server, read both ways
        "test_sweep_ui.py",                # ~25 s
        "test_sweep_stop_e2e.py",          # ~30 s
        "test_sweep_ui_terminal.py",       # ~7 s
        "test_sweep_ui_grid.py",           # ~60 s (sweep ui of a grid, its view in Chromium)
        "test_local_trainer.py",           # ~20 s
        "test_synthetic_faults.py",        # ~40 s (three synthetic trials: a retried crash, a divergence, a crash each attempt)
        "test_sweep_plugins.py",           # ~40 s (a toy backend and generator through sweep run and sweep eval)
        "test_sample_results.py",          # ~60 s (lm-eval's own CLI, 4 runs, then sweep table on its samples)
    ),
}
LANE_OF = {module: lane for lane, modules in SLOW_LANES.items() for module in modules}


LANE_POSITION = {module: i for modules in SLOW_LANES.values() for i, module in enumerate(modules)}


def pytest_collection_modifyitems(config, items):
    """A slow test in a file of no lane would run beside the lanes unplanned: named here instead. The
    lanes' files run in the order SLOW_LANES lists them (the main command leaves the default base it
    built for the shipped-study test); every other test keeps its place."""
    stray = sorted({item.path.name for item in items if item.get_closest_marker("slow") and item.path.name not in LANE_OF})
    if stray:
        raise pytest.UsageError(f"tests/conftest.py: SLOW_LANES: slow tests in {stray}, which no lane lists; "
                                "add each file to the lane whose length it balances best")
    places = [i for i, item in enumerate(items) if item.path.name in LANE_OF]
    in_lane_order = sorted((items[i] for i in places), key=lambda item: LANE_POSITION[item.path.name])  # stable
    for i, item in zip(places, in_lane_order):
        items[i] = item


@pytest.hookimpl(optionalhook=True)  # without xdist (-p no:xdist) the hook is not known
def pytest_xdist_make_scheduler(config, log):
    """Units of work for xdist: a test file, or a whole lane of slow files (largest units first). Both lanes
    at once from the start was tried and is slower: two end-to-end files side by side contend for the two
    cores, while one beside the fast files does not."""
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return LANE_OF.get(Path(file).name, file)

    return LaneScheduling(config, log)
