#!/usr/bin/env bash
# The test suite under coverage.py: the product packages' line coverage, with every Python process the suite
# starts measured too (`patch = ["subprocess"]` in pyproject.toml's [tool.coverage.run]: sweep commands, Ray
# workers, servers; a process killed by SIGKILL leaves no data). Slower than scripts/test.sh by the tracing.
#   bash scripts/coverage.sh [pytest args]     # e.g. -m "not slow"; prints the TOTAL line
# Data and the per-file report: .cache/coverage/ (data.*, report.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
export TMPDIR="$PWD/.rt/tmp-$$"
mkdir -p "$TMPDIR"
bash scripts/setup.sh
rm -rf .cache/coverage
mkdir -p .cache/coverage
export COVERAGE_FILE="$PWD/.cache/coverage/data"
status=0
.venv/bin/python -m coverage run -m pytest -n 2 "$@" || status=$?
.venv/bin/python -m coverage combine -q
# -i: the product as other checkouts hold it (test_main_command's fresh clone, removed after) is left out
.venv/bin/python -m coverage report -i --skip-empty 2>/dev/null > .cache/coverage/report.txt || true
grep "^TOTAL" .cache/coverage/report.txt
exit "$status"
