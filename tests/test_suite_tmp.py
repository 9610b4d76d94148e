"""The suite leaves /tmp as it found it (tests/suite_tmp.py): its processes' temporary files are in its own TMPDIR
inside the repository (MLflow's store-init lock included), and a session that leaves an entry of its tools' names
in /tmp fails, naming it."""

from __future__ import annotations

import pytest
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import suite_tmp

REPO = Path(__file__).resolve().parent.parent

MLFLOW_INIT = """
import sqlalchemy, sys, tempfile
from mlflow.store.db.utils import _safe_initialize_tables
_safe_initialize_tables(sqlalchemy.create_engine(f"sqlite:///{sys.argv[1]}"))
print(tempfile.gettempdir())
"""


@pytest.mark.slow
def test_every_process_of_the_session_has_its_temp_dir_in_the_repository(tmp_path):
    here = Path(tempfile.gettempdir())
    assert here == Path(os.environ["TMPDIR"]) and here.parent == REPO / ".rt" and here.name.startswith("tmp-")
    assert here.is_dir()
    # a process a test starts inherits it: MLflow's store-init lock (db_init_lock-<hash> in tempfile.gettempdir())
    # goes there, not to /tmp
    before = suite_tmp.listing()
    locks = set(here.glob("db_init_lock-*"))
    done = subprocess.run([sys.executable, "-c", MLFLOW_INIT, str(tmp_path / "mlflow.db")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert Path(done.stdout.strip()) == here
    assert len(set(here.glob("db_init_lock-*")) - locks) == 1
    assert not [n for n in suite_tmp.listing() - before if n.startswith("db_init_lock-")]


def test_the_check_tells_the_suites_entries_from_other_processes():
    before = {"old.log", "tmpzzzzzzzz"}
    after = before | {"db_init_lock-0f3a", "tmpab3_x9zq", "tmpab3_x9zqwandb-media", "pymp-k2j3", "ray",
                      "torchinductor_root", ".org.chromium.Chromium.aB12", "fresh_suite.log", "tmp.J7EwnesP2D",
                      "bash_tool_7b5e", "notes"}
    left = dict(suite_tmp.left_behind(before, after))
    assert set(left) == {"db_init_lock-0f3a", "tmpab3_x9zq", "tmpab3_x9zqwandb-media", "pymp-k2j3", "ray",
                         "torchinductor_root", ".org.chromium.Chromium.aB12"}
    assert left["db_init_lock-0f3a"] == "MLflow's store-init lock" and left["ray"] == "Ray"
    assert suite_tmp.left_behind(after, after) == []


def test_a_session_that_leaves_an_entry_in_tmp_fails_and_names_it(tmp_path):
    """A pytest session with this suite's conftest, whose one test passes but leaves /tmp/pymp-<uuid>: exit 1 and
    a "left in /tmp" section naming the entry; removed here afterwards."""
    name = f"pymp-suite-check-{uuid.uuid4().hex[:12]}"
    (tmp_path / "test_leaves.py").write_text(textwrap.dedent(f"""
        from pathlib import Path

        def test_passes_but_leaves_a_file_in_tmp():
            Path("/tmp/{name}").write_text("left")
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:xdist", "-p", "no:cacheprovider",
                               "-q", "test_leaves.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    finally:
        Path("/tmp", name).unlink(missing_ok=True)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout and "left in /tmp" in done.stdout
    assert re.search(rf"^/tmp/{name} \(\d\d:\d\d:\d\d\): new during the session, named as Python's "
                     "multiprocessing names its files$", done.stdout, re.M), done.stdout
