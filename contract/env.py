"""The environment variables the platform reads, typed, with their defaults and meaning, in one place.

    from contract.env import FORWARD_ENTROPY, RAY_AUTH_TOKEN
    if FORWARD_ENTROPY.get():              # bool, default False
        ...
    env = {FORWARD_ENTROPY.name: "1"}      # what a child process is given

Each variable is an `EnvVar`: ``get()`` parses the current value (a malformed one is a ValueError
naming the variable), ``is_set()`` says whether it is there at all, ``set_default(v)`` / ``set(v)`` write
it. Every variable the product reads or sets is here, ours and other tools' (``owner``: Ray, MLflow, verl,
...); no module names one as a raw string (tests/contract/test_env.py checks the source). `ENV_VARS` is the
whole registry; docs/environment.md is generated from it:

    python -m contract.env > docs/environment.md
    python -m contract.env --smoke      # every variable set here parses as its type (names only, no values)
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class EnvVar:
    name: str
    type: type
    default: Any
    doc: str
    owner: str = "rlvr-sweep"
    """Whose variable it is: ours, or the tool that reads it (Ray, MLflow, Hugging Face, ...)."""

    def is_set(self) -> bool:
        return self.name in os.environ

    def raw(self) -> str | None:
        """The value as set (a string), or None."""
        return os.environ.get(self.name)

    def set(self, value: Any) -> None:
        os.environ[self.name] = _text(value)

    def set_default(self, value: Any) -> None:
        """Set unless the user already has: what the product does for other tools' variables."""
        os.environ.setdefault(self.name, _text(value))

    def unset(self) -> None:
        os.environ.pop(self.name, None)

    def get(self) -> Any:
        raw = os.environ.get(self.name)
        if raw is None:
            return self.default
        if self.type is bool:
            value = raw.strip().lower()
            if value in _TRUE or value in _FALSE:
                return value in _TRUE
            raise ValueError(f"environment variable {self.name}: expected one of {_TRUE + _FALSE[:-1]}, got {raw!r}")
        if self.type is str:
            return raw
        try:
            return self.type(raw)
        except ValueError:
            raise ValueError(f"environment variable {self.name}: expected {self.type.__name__}, got {raw!r}") from None


FORWARD_ENTROPY = EnvVar("ZOO_VERL_FORWARD_ENTROPY", bool, False,
                         "verl workers: hand the per-token entropy to the policy losses (DHPO mixing='entropy'); "
                         "the verl backend sets it for such trials.")
GPU_MEMORY_FRACTION = EnvVar("ZOO_VERL_GPU_MEMORY_FRACTION", float, None,
                             "verl workers: cap each process's CUDA memory to this share of the GPU when it first "
                             "uses CUDA (packed trials, resources.gpus < 1); the verl backend sets it.")
PLUGINS = EnvVar("SWEEP_PLUGINS", str, None,
                 "Comma-separated modules every process of the platform imports before it reads a registry "
                 "(trainer backends, generators): a plug-in registers its backend or generator there "
                 "(contract/plugins.py).")
STATUS_EVERY = EnvVar("SWEEP_STATUS_EVERY", float, 60.0,
                      "sweep run: seconds between status lines when stdout is not a terminal (0: none; "
                      "--status-every wins).")
WAIT_NOTE_AFTER = EnvVar("SWEEP_WAIT_NOTE_AFTER", float, 30.0,
                         "sweep run: seconds trials may wait with none running before the driver says once what "
                         "each trial needs and what the cluster has free.")
STORE_TEMPLATE_DIR = EnvVar("SWEEP_STORE_TEMPLATE_DIR", str, None,
                            "A directory where a new sqlite store is copied from an empty one migrated once per "
                            "MLflow version (milliseconds instead of about a CPU-second of migrations; for suites "
                            "and scripts that make many stores). Unset: MLflow migrates each new store.")
# ---- MLflow's own
MLFLOW_TRACKING_URI = EnvVar("MLFLOW_TRACKING_URI", str, None,
                            "The tracking store when --tracking-uri is not given (else the run dir's mlflow.db).",
                            "MLflow")
MLFLOW_SERVER_JOBS = EnvVar("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", bool, True,
                            "Its server's background job runners (GenAI scorers; eight processes, files in /dev/shm). "
                            "`sweep ui` starts its server with them off unless this is set.", "MLflow")
MLFLOW_ARTIFACTS_PROGRESS = EnvVar("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", bool, True,
                                   "A progress bar per artifact download. Reports read one verdicts file per "
                                   "evaluation and turn it off unless this is set.", "MLflow")
MLFLOW_TELEMETRY_OFF = EnvVar("MLFLOW_DISABLE_TELEMETRY", bool, False,
                              "Its telemetry (writes ~/.config/mlflow): set to true by sweeps/ and dashboards/ "
                              "unless set.", "MLflow")
MLFLOW_QUIET_URLS = EnvVar("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", bool, False,
                           "A 'View run ... at' line per finished run on stdout: off (true) unless set.", "MLflow")
MLFLOW_HTTP_RETRIES = EnvVar("MLFLOW_HTTP_REQUEST_MAX_RETRIES", int, 7,
                             "Retries of an http store's request: 2 unless set, so an outage is said at once (the "
                             "tracking writer keeps retrying on its own).", "MLflow")
MLFLOW_HTTP_BACKOFF = EnvVar("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", float, 2.0,
                             "Backoff between those retries: 1 unless set.", "MLflow")
MLFLOW_HTTP_TIMEOUT = EnvVar("MLFLOW_HTTP_REQUEST_TIMEOUT", float, 120.0,
                             "Seconds an http store's request may take: 30 unless set.", "MLflow")
MLFLOW_USERNAME = EnvVar("MLFLOW_TRACKING_USERNAME", str, None,
                         "A server's basic-auth user, with MLFLOW_TRACKING_PASSWORD (also read by the read commands' "
                         "own REST reads, tracking_store/rest_reads.py).", "MLflow")
MLFLOW_PASSWORD = EnvVar("MLFLOW_TRACKING_PASSWORD", str, None, "That user's password (never printed).", "MLflow")
MLFLOW_TOKEN = EnvVar("MLFLOW_TRACKING_TOKEN", str, None, "A bearer token for the server (never printed).", "MLflow")
MLFLOW_INSECURE_TLS = EnvVar("MLFLOW_TRACKING_INSECURE_TLS", bool, False,
                             "Skip TLS certificate checks of an https server.", "MLflow")
MLFLOW_SERVER_CERT = EnvVar("MLFLOW_TRACKING_SERVER_CERT_PATH", str, None,
                            "A CA bundle to check an https server's certificate with.", "MLflow")
MLFLOW_CLIENT_CERT = EnvVar("MLFLOW_TRACKING_CLIENT_CERT_PATH", str, None,
                            "A client certificate (PEM with its key) for an https server that asks for one.", "MLflow")
MLFLOW_BACKEND_STORE = EnvVar("MLFLOW_BACKEND_STORE_URI", str, None,
                              "The store of the `mlflow server` that `sweep ui` starts: set to the sweep's store.",
                              "MLflow")
# ---- Ray's and Ray Tune's own (sweeps/driver/ray_cluster.py sets them before Ray starts)
RAY_AUTH_TOKEN = EnvVar("RAY_AUTH_TOKEN", str, None,
                        "The cluster token: turns token mode on for the driver (a local cluster gets a fresh one).",
                        "Ray")
RAY_AUTH_TOKEN_PATH = EnvVar("RAY_AUTH_TOKEN_PATH", str, None, "A file holding the cluster token (as RAY_AUTH_TOKEN).",
                             "Ray")
RAY_AUTH_MODE = EnvVar("RAY_AUTH_MODE", str, None,
                       "The auth mode; set explicitly it is kept ('disabled' is warned about on a local cluster).",
                       "Ray")
RAY_USAGE_STATS = EnvVar("RAY_USAGE_STATS_ENABLED", bool, True, "Usage statistics: off unless set.", "Ray")
RAY_PRESTART_WORKERS = EnvVar("RAY_prestart_worker_first_driver", bool, True,
                              "Idle workers started with a local cluster for its first driver: off unless set (each "
                              "trial starts its own; the idle ones cost about a CPU-second per sweep).", "Ray")
RAY_TMPDIR = EnvVar("RAY_TMPDIR", str, None, "Where Ray keeps its address file: the sweep's Ray temp dir.", "Ray")
RAY_DEDUP_LOGS = EnvVar("RAY_DEDUP_LOGS", bool, True, "Deduplicated worker logs: off unless set.", "Ray")
RAY_AIR_NEW_OUTPUT = EnvVar("RAY_AIR_NEW_OUTPUT", bool, True, "Tune's new console output: off unless set.", "Ray")
RAY_CHDIR_TO_TRIAL_DIR = EnvVar("RAY_CHDIR_TO_TRIAL_DIR", bool, True,
                                "A trial's working directory is its Tune directory: off unless set.", "Ray")
RAY_DRAIN_ON_SIGTERM = EnvVar("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", float, 30.0,
                              "Seconds a `ray start --block` node drains after SIGTERM: 0 in a `sweep slurm` job's Ray "
                              "nodes (sweeps/slurm/job_script.py), which stop with the job.", "Ray")
TUNE_STRICT_METRICS_OFF = EnvVar("TUNE_DISABLE_STRICT_METRIC_CHECKING", bool, False,
                                 "Tune's check that every result has the search metric: off unless set.", "Ray")
TUNE_CHECKPOINT_SYNC_WARNING = EnvVar("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", float, 5.0,
                                      "Tune's warning on slow experiment syncs: 0 (off) unless set.", "Ray")
TUNE_SIGINT_HANDLER_OFF = EnvVar("TUNE_DISABLE_SIGINT_HANDLER", bool, False,
                                 "Always set: Ctrl-C and SIGTERM are the driver's (sweeps/driver/interrupts.py).", "Ray")
TUNE_AUTO_LOGGERS_OFF = EnvVar("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", bool, False,
                               "Tune's CSV/JSON/TensorBoard files per trial: off unless set (MLflow is the record).",
                               "Ray")
# ---- Slurm's, in a `sweep slurm` job (sweeps/slurm/job_script.py)
SLURM_JOB_ID = EnvVar("SLURM_JOB_ID", str, None,
                      "The Slurm job a driver runs in: recorded on the parent run (provenance.slurm_job), shown by "
                      "`sweep status`.", "Slurm")
# ---- caches and quiet libraries (sweeps/driver/ray_cluster.py: inside the run directory)
HF_HOME = EnvVar("HF_HOME", str, None, "Hugging Face's cache: <run dir>/.cache/huggingface unless set.",
                 "Hugging Face")
HF_HUB_OFFLINE = EnvVar("HF_HUB_OFFLINE", bool, False, "No model hub downloads: on unless set.", "Hugging Face")
HF_HUB_PROGRESS_OFF = EnvVar("HF_HUB_DISABLE_PROGRESS_BARS", bool, False, "Hub progress bars: off unless set.",
                             "Hugging Face")
TRANSFORMERS_VERBOSITY = EnvVar("TRANSFORMERS_VERBOSITY", str, "warning", "'error' unless set.", "Hugging Face")
MPLCONFIGDIR = EnvVar("MPLCONFIGDIR", str, None,
                      "matplotlib's cache: in the run directory (or the report's folder) unless set.", "matplotlib")
TORCHINDUCTOR_CACHE_DIR = EnvVar("TORCHINDUCTOR_CACHE_DIR", str, None,
                                 "torch.compile's cache: <run dir>/.cache/torchinductor unless set.", "torch")
TRITON_CACHE_DIR = EnvVar("TRITON_CACHE_DIR", str, None, "Triton's cache: <run dir>/.cache/triton unless set.",
                          "torch")
CUDA_VISIBLE_DEVICES = EnvVar("CUDA_VISIBLE_DEVICES", str, None,
                              "The GPUs a process sees: read for placement, set while a local Ray starts on "
                              "chosen GPUs.", "CUDA")
RANK = EnvVar("RANK", int, 0, "A distributed worker's rank (torch.distributed), read by the verl rollout.", "torch")
TOKENIZERS_PARALLELISM = EnvVar("TOKENIZERS_PARALLELISM", bool, True,
                                "Tokenizer threads: off for the verl CPU path's processes.", "Hugging Face")
TRANSFORMERS_OFFLINE = EnvVar("TRANSFORMERS_OFFLINE", bool, False, "On for the verl CPU path's processes.",
                              "Hugging Face")
HF_DATASETS_CACHE = EnvVar("HF_DATASETS_CACHE", str, None, "The verl processes' datasets cache: under the trial's cache.",
                           "Hugging Face")
TMPDIR = EnvVar("TMPDIR", str, None,
                "Temporary files of the processes the platform starts, not in /tmp: verl's under the trial's cache; "
                "unless set, a local Ray node's under its temp dir (<run dir>/.ray/tmp) and `sweep ui`'s server's "
                "under <run dir>/.cache/tmp.", "POSIX")
XDG_CACHE_HOME = EnvVar("XDG_CACHE_HOME", str, None, "The verl processes' other caches: under the trial's cache.",
                        "POSIX")
PYTHONPATH = EnvVar("PYTHONPATH", str, None,
                    "Extended with the repository for the processes the verl backend starts.", "Python")
PYTHONUNBUFFERED = EnvVar("PYTHONUNBUFFERED", bool, False, "Set for the `mlflow server` `sweep ui` starts.",
                          "Python")
# ---- CPU kernels: the built-in trainer's numeric mode (trainers/local/numerics.py)
ATEN_CPU_CAPABILITY = EnvVar("ATEN_CPU_CAPABILITY", str, None,
                             "torch's vector kernels (default, avx2, avx512): 'avx2' in the processes of a trainer "
                             "with local.numerics: reproducible; read once, before torch's first operation.", "torch")
MKL_CBWR = EnvVar("MKL_CBWR", str, None,
                  "MKL's code branch (conditional numerical reproducibility): 'COMPATIBLE' in the processes of a "
                  "trainer with local.numerics: reproducible (the one branch MKL keeps on every vendor's CPU).", "MKL")
ONEDNN_MAX_CPU_ISA = EnvVar("ONEDNN_MAX_CPU_ISA", str, None,
                            "oneDNN's widest instruction set: 'AVX2' with local.numerics: reproducible (which also "
                            "turns oneDNN off in the trainer's process).", "oneDNN")
# ---- verl
VERL_PLATFORM = EnvVar("VERL_PLATFORM", str, None,
                       "Its device platform; 'cpu' selects the platform of trainers/verl_backend/cpu (CPU runs).",
                       "verl")
VERL_EXTERNAL_MODULES = EnvVar("VERL_USE_EXTERNAL_MODULES", str, None,
                               "Modules every verl process imports (our loss plug-in, the CPU platform, the zoo_hf "
                               "rollout): set for verl's processes by the verl backend.", "verl")
VERL_FILE_LOGGER_PATH = EnvVar("VERL_FILE_LOGGER_PATH", str, None,
                               "Where verl's file logger writes a trial's metrics (metrics.jsonl): set by the verl "
                               "backend.", "verl")
RECORD_PARAMS = EnvVar("ZOO_VERL_RECORD_PARAMS", str, None,
                       "verl workers: a file the loss plug-in appends one JSON line to per (process, loss, params) "
                       "(an audit of what the losses ran with; tests).")

ENV_VARS = tuple(v for v in list(globals().values()) if isinstance(v, EnvVar))
"""Every variable above, in the order written."""


def markdown_table() -> str:
    """docs/environment.md: ours first, then each tool's, as written."""
    ours = [v for v in ENV_VARS if v.owner == EnvVar.owner]
    lines = ["# Environment variables", "",
             "Generated from `contract/env.py` by `python -m contract.env > docs/environment.md` (the suite checks "
             "that it is current). Ours first, then the variables of other tools that the platform reads or sets.",
             "", "| variable | owner | type | default | meaning |", "|---|---|---|---|---|"]
    for v in ours + [v for v in ENV_VARS if v not in ours]:
        default = "" if v.default is None else f"`{_text(v.default)}`"
        lines.append(f"| `{v.name}` | {v.owner} | {v.type.__name__} | {default} | {v.doc.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def smoke() -> int:
    """Read every variable from this process's environment through its type and render the table; 0 when all
    parse. Prints names only: a value may be a credential."""
    bad, found = [], []
    for v in ENV_VARS:
        try:
            v.get()
        except ValueError as err:
            bad.append(str(err))
        if v.is_set():
            found.append(v.name)
    rows = markdown_table().count("\n| `")
    ours = sum(v.owner == EnvVar.owner for v in ENV_VARS)
    print(f"set here: {', '.join(found) or 'none'}")
    for message in bad:
        print(f"error: {message}", file=sys.stderr)
    if bad:
        return 1
    print(f"smoke ok: {len(ENV_VARS)} variables ({ours} ours), {rows} rows in docs/environment.md's table; "
          f"{len(found)} set here, each parses as its type")
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m contract.env",
        description="Print docs/environment.md: the environment variables the platform reads or sets, "
                    "with their owner, type, default and meaning (a Markdown table on stdout).",
        epilog="regenerate the page: python -m contract.env > docs/environment.md")
    parser.add_argument("--smoke", action="store_true",
                        help="check instead: every variable set in this environment parses as its type "
                             "(prints names, never values); exit 1 naming each one that does not")
    args = parser.parse_args(argv)
    if args.smoke:
        return smoke()
    print(markdown_table(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
