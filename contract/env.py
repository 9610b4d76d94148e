"""The environment variables the platform reads, typed, with their defaults and meaning, in one place.

    from contract.env import FORWARD_ENTROPY, RAY_AUTH_TOKEN
    if FORWARD_ENTROPY.get():              # bool, default False
        ...
    env = {FORWARD_ENTROPY.name: "1"}      # what a child process is given

Each variable is an `EnvVar`: ``get()`` parses the current value (a malformed one is a ValueError
naming the variable), ``is_set()`` says whether it is there at all. Variables of other tools (Ray,
MLflow, verl) are listed where the platform reads or sets them; `ENV_VARS` is the whole registry
(the docs' environment table is generated from it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class EnvVar:
    name: str
    type: type
    default: Any
    doc: str

    def is_set(self) -> bool:
        return self.name in os.environ

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


MLFLOW_TRACKING_URI = EnvVar("MLFLOW_TRACKING_URI", str, None,
                            "The tracking store when --tracking-uri is not given (else the run dir's mlflow.db).")
RAY_AUTH_TOKEN = EnvVar("RAY_AUTH_TOKEN", str, None,
                        "Ray's cluster token: turns token mode on for the driver (a local cluster gets a fresh one).")
RAY_AUTH_TOKEN_PATH = EnvVar("RAY_AUTH_TOKEN_PATH", str, None, "A file holding Ray's cluster token (as RAY_AUTH_TOKEN).")
RAY_AUTH_MODE = EnvVar("RAY_AUTH_MODE", str, None,
                       "Ray's auth mode; set explicitly it is kept ('disabled' is warned about on a local cluster).")
FORWARD_ENTROPY = EnvVar("ZOO_VERL_FORWARD_ENTROPY", bool, False,
                         "verl workers: hand the per-token entropy to the policy losses (DHPO mixing='entropy'); "
                         "the verl backend sets it for such trials.")
GPU_MEMORY_FRACTION = EnvVar("ZOO_VERL_GPU_MEMORY_FRACTION", float, None,
                             "verl workers: cap each process's CUDA memory to this share of the GPU when it first "
                             "uses CUDA (packed trials, resources.gpus < 1); the verl backend sets it.")
STATUS_EVERY = EnvVar("SWEEP_STATUS_EVERY", float, 60.0,
                      "sweep run: seconds between status lines when stdout is not a terminal (0: none; "
                      "--status-every wins).")
MLFLOW_SERVER_JOBS = EnvVar("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", bool, True,
                            "MLflow's own: its server's background job runners (GenAI scorers; eight processes, "
                            "files in /dev/shm). `sweep ui` starts its server with them off unless this is set.")
MLFLOW_ARTIFACTS_PROGRESS = EnvVar("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", bool, True,
                                   "MLflow's own: a progress bar per artifact download. Reports read one verdicts "
                                   "file per evaluation and turn it off unless this is set.")
VERL_PLATFORM = EnvVar("VERL_PLATFORM", str, None,
                       "verl's device platform; 'cpu' selects the platform of trainers/verl_backend/cpu (CPU runs).")

ENV_VARS = (MLFLOW_TRACKING_URI, RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, RAY_AUTH_MODE, MLFLOW_SERVER_JOBS, FORWARD_ENTROPY,
            GPU_MEMORY_FRACTION, MLFLOW_ARTIFACTS_PROGRESS, VERL_PLATFORM, STATUS_EVERY)
