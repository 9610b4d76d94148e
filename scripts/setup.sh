#!/usr/bin/env bash
# Idempotent set-up of the project virtualenv in ./.venv (no sudo for pip; apt, as root, only for Chromium, PostgreSQL and Slurm).
#   bash scripts/setup.sh            # core + dev + verl + server extras, then pip check
# Packages are installed with uv (pinned, itself installed with pip) from the sources pip is
# configured with (scripts/pip_sources.py), its cache in .cache/uv. torch==2.13.0 (the CPU build)
# is installed first, and constraints.txt pins it on every install call so no other package can
# pull a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
stamp=.venv/.setup-$(cat pyproject.toml constraints.txt scripts/setup.sh scripts/pip_sources.py | sha1sum | cut -c1-12)
if [ -f "$stamp" ]; then
  exit 0
fi
$PIP install -q -c constraints.txt uv==0.13.9
# uv's cache and its temporary files (build locks, left behind) stay in the working directory; a
# UV_CACHE_DIR you set (one cache for several clones) is used instead of .cache/uv
mkdir -p .cache/tmp
export UV_CACHE_DIR="${UV_CACHE_DIR:-$PWD/.cache/uv}" TMPDIR="$PWD/.cache/tmp" UV_NATIVE_TLS=1 UV_PYTHON=.venv/bin/python
mapfile -d '' SOURCES < <(.venv/bin/python scripts/pip_sources.py)
# pip's rule for several indexes (the best version from any). No byte code compiled at install (27,000 files,
# most never imported: about 70 CPU-seconds): Python writes the caches of what is imported, when it is first
# imported (below where PYTHONDONTWRITEBYTECODE stops that)
UV=(.venv/bin/uv pip install -q "${SOURCES[@]}" --index-strategy unsafe-best-match)
"${UV[@]}" -c constraints.txt torch==2.13.0
# The project, its test tools, the verl plug-in with verl's own (core) dependencies and the
# PostgreSQL driver of the server extra, in one resolution. Never the gpu extra (vllm: CUDA only) here or in CI.
"${UV[@]}" -c constraints.txt -e ".[dev,verl,server]"
# verl requires ray[default]. With Ray's dashboard packages importable, every local cluster also
# starts the dashboard head, the dashboard agent and the autoscaler monitor with Prometheus metrics
# ports on 0.0.0.0 (44217, 44227, ...) that do not check Ray's token (include_dashboard=False does
# not stop them); tests/sweeps/test_sweep_cli_e2e.py's token test fails on them. So the packages
# that only ray[default] asks for are removed again (verl's losses do not use them); pip check
# still holds, as it checks verl's `ray` requirement, not Ray's extras. prometheus-client alone
# makes the autoscaler monitor serve metrics on 0.0.0.0:44217: it goes too, with TransferQueue
# (verl-core), its only other user here; every verl trial runs verl's legacy trainer, which does
# not use TransferQueue (trainers/verl_backend/translate.py), and pip check does not check extras.
.venv/bin/uv pip uninstall -q aiohttp-cors colorful opencensus opentelemetry-exporter-prometheus \
  prometheus-client py-spy smart-open virtualenv TransferQueue
# Every installed package's requirements must hold: a conflict fails set-up instead of a test.
if ! pip_check=$($PIP check 2>&1); then
  {
    echo "ERROR: 'pip check' found broken requirements in .venv:"
    echo "$pip_check" | sed 's/^/    | /'
    echo "  Fix pyproject.toml / constraints.txt, then: rm -f .venv/.setup-* && bash scripts/setup.sh"
  } >&2
  exit 1
fi
# Debian's Chromium for the headless report test (tests/dashboards/test_dashboards_report.py looks
# for chromium, chromium-browser, google-chrome or chrome on PATH), installed with apt as root.
# If it cannot be installed: a loud WARNING on stderr and set-up still succeeds (non-root users
# cannot apt; the test is then skipped locally), except under CI=true, where the browser test must
# run (it fails without a browser), so set-up fails here already.
have_browser() {
  local b
  for b in chromium chromium-browser google-chrome chrome; do
    command -v "$b" >/dev/null 2>&1 && return 0
  done
  return 1
}
if ! have_browser; then
  chromium_why=""
  if ! command -v apt-get >/dev/null 2>&1; then
    chromium_why="apt-get is not available on this system"
  elif [ "$(id -u)" != 0 ]; then
    chromium_why="set-up is not running as root, so apt-get cannot install it"
  else
    chromium_log=$(mktemp)
    if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium \
           || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }; } >"$chromium_log" 2>&1; then
      chromium_why="'apt-get install -y chromium' failed; its last lines:
$(tail -n 15 "$chromium_log" | sed 's/^/    | /')"
    elif ! have_browser; then
      chromium_why="apt-get installed chromium, but no chromium is on PATH ($PATH)"
    fi
    rm -f "$chromium_log"
  fi
  if [ -n "$chromium_why" ]; then
    {
      echo
      echo "=============================================================================="
      echo "WARNING: Chromium is NOT installed: $chromium_why"
      echo "  The headless-browser report test (tests/dashboards/test_dashboards_report.py)"
      echo "  is SKIPPED without it, and FAILS under CI=true."
      echo "  Install it as root:"
      echo "      apt-get update && apt-get install -y chromium"
      echo "  or re-run this set-up as root (the stamp file makes a plain re-run a no-op):"
      echo "      rm -f .venv/.setup-* && bash scripts/setup.sh"
      echo "=============================================================================="
      echo
    } >&2
    case "${CI:-}" in
      true | TRUE | True | 1)
        echo "ERROR: CI=true and Chromium could not be installed: set-up fails (exit 1)." >&2
        exit 1 ;;
    esac
  fi
fi
# PostgreSQL's server binaries for the PostgreSQL tracking-store test (tests/sweeps/test_sweep_cluster_server.py,
# skipped without them; run under CI=true), from Debian's packages, as root; as for Chromium above.
have_postgres() {
  command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}
if ! have_postgres; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null 2>&1; } || true
  fi
  if ! have_postgres; then
    echo "WARNING: PostgreSQL (initdb) is not installed: the PostgreSQL store test is SKIPPED (apt-get install postgresql)" >&2
    case "${CI:-}" in
      true | TRUE | True | 1)
        echo "ERROR: CI=true and PostgreSQL could not be installed: set-up fails (exit 1)." >&2
        exit 1 ;;
    esac
  fi
fi
# Slurm's daemons and commands and MUNGE, for the `sweep slurm` tests (tests/sweeps/test_sweep_slurm.py starts a
# one-node cluster of its own; skipped without them; run under CI=true), from Debian's packages, as root, as above.
have_slurm() {
  command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1 \
    && command -v munged >/dev/null 2>&1
}
if ! have_slurm; then
  slurm_packages="slurmctld slurmd slurm-client munge"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $slurm_packages >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 \
           && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $slurm_packages >/dev/null 2>&1; } \
      || true
  fi
  if ! have_slurm; then
    echo "WARNING: Slurm (slurmctld, slurmd, sbatch, munged) is not installed: the sweep slurm tests are SKIPPED" \
         "(apt-get install $slurm_packages)" >&2
    case "${CI:-}" in
      true | TRUE | True | 1)
        echo "ERROR: CI=true and Slurm could not be installed: set-up fails (exit 1)." >&2
        exit 1 ;;
    esac
  fi
fi
# With PYTHONDONTWRITEBYTECODE set, Python reads byte code caches but never writes them, so every process would
# compile what it imports again: the caches of what the platform's processes import are written once, here.
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
  .venv/bin/python scripts/warm_bytecode.py
fi
rm -f .venv/.setup-*
touch "$stamp"
