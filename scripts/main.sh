#!/usr/bin/env bash
# The main job: set up ./.venv if needed, then run the default sweep end to end on the CPU
# (18 trials of the built-in trainer, MLflow store in runs/, tables + HTML report at the end).
#   bash scripts/main.sh [extra sweep-run arguments, e.g. --smoke]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/sweep run dhpo_vs_baselines.yaml "$@"
