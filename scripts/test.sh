#!/usr/bin/env bash
# The test command: set up ./.venv if needed, then run the whole pytest suite on two workers
# (pytest-xdist; a file is one unit of work, the slow files run in two lanes: tests/conftest.py).
#   bash scripts/test.sh [pytest args]      # e.g. -m "not slow" (the fast tier), or a test file
set -euo pipefail
cd "$(dirname "$0")/.."
# Temporary files of set-up and of the suite (every process it starts) in the repository, not /tmp: this
# session's directory, named by this pid (exec keeps it), which tests/conftest.py takes (tests/suite_tmp.py).
export TMPDIR="$PWD/.rt/tmp-$$"
mkdir -p "$TMPDIR"
# Bytecode caches written (git-ignored __pycache__/): the suite starts hundreds of Python processes, and pytest's
# workers rewrite every test module; with PYTHONDONTWRITEBYTECODE set each of them would compile them again.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n 2 "$@"
