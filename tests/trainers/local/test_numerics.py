"""The numeric mode (trainers/local/numerics.py): its settings hold in a process started with them, a process
whose kernels were chosen without them is refused, one sweep has one mode, and the mode is in the base's key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweeps.specs.load import SpecError, load_spec
from trainers.config import TrialConfig
from trainers.local.numerics import KERNELS, kernel_env, trial_env
from trainers.local.warmstart import base_key

REPO = Path(__file__).resolve().parents[3]
KERNEL_NAMES = {var.name for var in KERNELS}


def _in_fresh_process(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run ``code`` in a new Python whose environment has ``env`` and none of the other kernel variables."""
    clean = {k: v for k, v in os.environ.items() if k not in KERNEL_NAMES} | env
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=clean, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


APPLY = """
import json, torch
from trainers.config import TrialConfig
from trainers.local.numerics import NumericsError, apply_numerics
cfg = TrialConfig.from_dict({{"local": {{"numerics": "{mode}"}}}})
{before}
try:
    print(json.dumps(apply_numerics(cfg.local)))
except NumericsError as err:
    print(json.dumps({{"error": str(err)}}))
a = torch.randn(192, 192, generator=torch.Generator().manual_seed(0))
import hashlib; print(hashlib.sha1((a @ a).numpy().tobytes()).hexdigest())
"""


def _apply(mode: str, env: dict[str, str], before: str = "") -> tuple[dict, str]:
    done = _in_fresh_process(APPLY.format(mode=mode, before=before), env)
    assert done.returncode == 0, done.stderr[-2000:]
    settings, product = done.stdout.strip().splitlines()[-2:]
    return json.loads(settings), product


@pytest.mark.slow
def test_the_reproducible_settings_hold_in_a_process_started_with_them():
    settings, product = _apply("reproducible", kernel_env("reproducible"))
    assert settings == {"numerics": "reproducible", "numerics.aten": "AVX2", "numerics.mkl": "COMPATIBLE",
                        "numerics.onednn": "off", "numerics.threads": "1",
                        "numerics.env": "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2"}
    native, native_product = _apply("native", {})
    assert native["numerics.mkl"] == "off" and native["numerics.onednn"] == "on" and native["numerics.env"] == "none"
    # MKL's reproducible branch is another code path: the same product has other bytes than the CPU's own
    assert product != native_product


@pytest.mark.slow
def test_a_process_that_ran_mkl_before_the_mode_is_refused_naming_the_variable():
    settings, _ = _apply("reproducible", {}, before="torch.randn(64, 64) @ torch.randn(64, 64)")
    assert "MKL already ran" in settings["error"] and "MKL_CBWR=COMPATIBLE" in settings["error"]


@pytest.mark.slow
def test_mkl_is_set_in_process_when_it_has_not_run_yet():
    # the kernel variables torch reads at import, but no MKL_CBWR: MKL's branch is set in the process itself
    without_mkl = {k: v for k, v in kernel_env("reproducible").items() if k != "MKL_CBWR"}
    settings, product = _apply("reproducible", without_mkl)
    assert settings["numerics.mkl"] == "COMPATIBLE" and "MKL_CBWR" not in settings["numerics.env"]
    assert product == _apply("reproducible", kernel_env("reproducible"))[1]


@pytest.mark.slow
def test_torch_kernels_chosen_without_the_mode_are_refused_naming_the_variable():
    settings, _ = _apply("reproducible", {"ATEN_CPU_CAPABILITY": "default"})  # torch's scalar kernels
    assert "torch chose its DEFAULT kernels" in settings["error"] and "ATEN_CPU_CAPABILITY=avx2" in settings["error"]


def test_one_sweep_has_one_mode_and_its_workers_get_its_variables(tmp_path):
    spec = tmp_path / "mixed.yaml"
    spec.write_text("name: mixed\ndefaults: [{trainer: local_tiny}, {model: tiny_qwen3}, {data: arith}]\n"
                    "variants:\n  - {algorithm: grpo}\n  - {algorithm: gspo, local.numerics: native}\n")
    with pytest.raises(SpecError, match=r"local.numerics: expected one mode for every trial of a sweep.*'native', "
                                        r"'reproducible'"):
        load_spec(spec)
    spec.write_text(spec.read_text().replace(", local.numerics: native", ""))
    configs = [t.config for t in load_spec(spec, ["local.numerics=native"]).trials]
    assert {c.local.numerics for c in configs} == {"native"} and trial_env(configs) == {}
    default = [t.config for t in load_spec("dhpo_vs_baselines").trials]
    assert trial_env(default) == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def test_a_bad_mode_is_refused_and_the_mode_is_part_of_the_base_key():
    from trainers.config import ConfigError

    with pytest.raises(ConfigError, match=r"local.numerics: expected 'reproducible' or 'native', got 'fast'"):
        TrialConfig.from_dict({"local": {"numerics": "fast"}}, source="t.yaml")
    native = TrialConfig.from_dict({"local": {"numerics": "native"}})
    assert base_key(native) != base_key(TrialConfig())  # a base built natively is never reused as a reproducible one
