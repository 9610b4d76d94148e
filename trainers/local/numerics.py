"""The built-in trainer's numeric mode: the same bytes on any x86-64 CPU with AVX2, or native speed.

``local.numerics: reproducible`` (the default) fixes what makes a CPU's float results its own:

=====================  =====================================================================
torch's kernels        ``ATEN_CPU_CAPABILITY=avx2``: the AVX2 build of every vector kernel, not
                       the widest one the CPU has (AVX-512 sums in another order)
MKL (matrix products)  ``MKL_CBWR=COMPATIBLE``: MKL's reproducible branch. Its ``AVX2`` branch
                       holds on Intel CPUs only: elsewhere MKL falls back to its automatic
                       dispatch (measured on an AMD EPYC: the branch in force is AUTO)
oneDNN                 off in the trainer's process (``ONEDNN_MAX_CPU_ISA=AVX2`` for the rest)
threads                ``local.threads`` (1 by default), whatever the machine's cores
=====================  =====================================================================

torch reads its variable once, at its first operation, and MKL its variable at its first call:
they are set in the environment a process starts with. ``sweep run`` gives them to its Ray
workers (trainers/backends.py ``trial_env``), ``python -m trainers.local`` and ``sweep eval`` set
them before torch loads; ``apply_numerics`` then checks, in the process that computes, that they
hold (NumericsError otherwise) and returns what a trial records as its ``provenance.numerics.*``
tags. ``local.numerics: native`` leaves the CPU's own kernels (docs/local-trainer.md: the cost).

    set_kernel_env("reproducible")          # first thing in a process, before torch is imported
    apply_numerics(cfg.local)               # {"numerics": "reproducible", "numerics.aten": "AVX2", ...}

Still different: other architectures (ARM's NEON/SVE kernels, no MKL) and GPU kernels; there the
mode fixes threads and oneDNN only, and the recorded ``numerics.aten`` says which kernels ran.
"""

from __future__ import annotations

import ctypes
import platform
from pathlib import Path

from contract.env import ATEN_CPU_CAPABILITY, MKL_CBWR, ONEDNN_MAX_CPU_ISA
from contract.errors import ConfigError

KERNELS = {ATEN_CPU_CAPABILITY: "avx2", MKL_CBWR: "COMPATIBLE", ONEDNN_MAX_CPU_ISA: "AVX2"}
"""The reproducible mode's variables and values."""
MKL_BRANCH, MKL_COMPATIBLE = 1, 3  # mkl_cbwr.h: MKL_CBWR_BRANCH (what to read), MKL_CBWR_COMPATIBLE
MKL_BRANCHES = {1: "off", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 8: "SSE4_2", 9: "AVX", 10: "AVX2", 12: "AVX512"}
X86 = ("x86_64", "amd64")


class NumericsError(RuntimeError):
    """The numeric mode does not hold in this process (it was started without its variables)."""


def kernel_env(mode: str) -> dict[str, str]:
    """The variables a process running the trainer in ``mode`` must start with ({} for native)."""
    return {var.name: value for var, value in KERNELS.items()} if mode == "reproducible" else {}


def set_kernel_env(mode: str) -> None:
    """Set the mode's variables in this process's environment: effective only before torch's first
    operation (call it before importing torch); ``apply_numerics`` says whether it was in time."""
    for var, value in KERNELS.items():
        if mode == "reproducible":
            var.set(value)


def check_modes(configs: list, source: str) -> None:
    """One numeric mode per sweep: its trials share Ray's worker processes, which start with its variables."""
    modes = sorted({c.local.numerics for c in configs})
    if len(modes) > 1:
        raise ConfigError(f"{source}: local.numerics: expected one mode for every trial of a sweep (their Ray "
                          f"workers start with its kernel settings), got {modes}; set it in base: or the override "
                          f"local.numerics=...")


def trial_env(configs: list) -> dict[str, str]:
    """The variables every Ray worker of a sweep of these trials starts with (trainers/backends.py hook)."""
    modes = {c.local.numerics for c in configs}
    return kernel_env(modes.pop()) if len(modes) == 1 else {}


def _mkl():
    """MKL's reproducibility functions inside torch (linked in statically); None where torch has no MKL."""
    import torch

    try:
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        return lib.mkl_serv_cbwr_get, lib.mkl_serv_cbwr_set
    except (OSError, AttributeError):
        return None


def _mkl_branch(want: int | None) -> str:
    """MKL's branch in force, after setting ``want`` if MKL has not run yet ('n/a' without MKL)."""
    functions = _mkl()
    if functions is None:
        return "n/a"
    get, put = functions
    if want is not None and get(MKL_BRANCH) != want and put(want) != 0:
        branch = MKL_BRANCHES.get(get(MKL_BRANCH), str(get(MKL_BRANCH)))
        raise NumericsError(f"local.numerics: reproducible: MKL already ran on its {branch} branch in this process; "
                            f"start it with {MKL_CBWR.name}=COMPATIBLE in its environment")
    code = get(MKL_BRANCH)
    return MKL_BRANCHES.get(code, str(code))


def apply_numerics(local) -> dict[str, str]:
    """Apply the mode of ``local`` (a LocalConfig) in this process and check that it holds; the
    settings in force, to record: {"numerics": mode, "numerics.aten": ..., "numerics.mkl": ...,
    "numerics.onednn": "on"|"off", "numerics.threads": "1", "numerics.env": the kernel variables the process
    has}. NumericsError when it cannot hold."""
    import torch

    reproducible = local.numerics == "reproducible"
    torch.backends.mkldnn.enabled = not reproducible
    mkl = _mkl_branch(MKL_COMPATIBLE if reproducible else None)
    aten = torch.backends.cpu.get_cpu_capability()
    if reproducible and platform.machine().lower() in X86 and aten != "AVX2":
        if ATEN_CPU_CAPABILITY.raw() == KERNELS[ATEN_CPU_CAPABILITY]:  # set in time, yet not AVX2: the CPU lacks it
            raise NumericsError(f"local.numerics: reproducible needs an x86-64 CPU with AVX2; this one runs torch's "
                                f"{aten} kernels: use local.numerics: native")
        raise NumericsError(f"local.numerics: reproducible: torch chose its {aten} kernels before the mode was applied; "
                            f"start the process with {ATEN_CPU_CAPABILITY.name}=avx2 in its environment (sweep run does "
                            f"for its trials, python -m trainers.local and sweep eval for themselves)")
    return {"numerics": local.numerics, "numerics.aten": aten, "numerics.mkl": mkl,
            "numerics.onednn": "on" if torch.backends.mkldnn.enabled else "off", "numerics.threads": str(local.threads),
            "numerics.env": " ".join(f"{var.name}={var.raw()}" for var in KERNELS if var.is_set()) or "none"}


def trial_setup(cfg) -> dict[str, str]:
    """The backend hook: the mode of the trial config ``cfg`` applied in the trial's process (apply_numerics)."""
    return apply_numerics(cfg.local)
