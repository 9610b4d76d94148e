#!/usr/bin/env bash
# Idempotent set-up of the project virtualenv in ./.venv (no sudo for pip; apt only for Chromium).
#   bash scripts/setup.sh            # core + dev + verl plug-in deps
# torch==2.13.0 (the CPU build) is installed first, and constraints.txt pins it on every
# pip call so no other package can pull a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
stamp=.venv/.setup-$(cat pyproject.toml constraints.txt scripts/setup.sh | sha1sum | cut -c1-12)
if [ -f "$stamp" ]; then
  exit 0
fi
$PIP install -q torch==2.13.0
$PIP install -q -c constraints.txt -e ".[dev]"
# verl for the plug-in tests: its core_algos only (its dependency set pins other torch builds),
# plus the few packages core_algos / FSDPActorConfig / workers.utils.losses import.
$PIP install -q -c constraints.txt --no-deps verl==0.9.1
$PIP install -q -c constraints.txt "tensordict>=0.8.0,<=0.10.0,!=0.9.0" codetiming datasets
# Debian's Chromium for the headless report test (skipped with a reason when absent).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 \
    || (apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1)) \
    || echo "note: chromium not installed; the headless report test will be skipped"
fi
rm -f .venv/.setup-*
touch "$stamp"
