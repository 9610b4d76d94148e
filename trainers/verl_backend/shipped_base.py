"""The verl backend's default base policy, shipped: the warm-started tiny Qwen3 that verl_cpu_smoke.yaml and every
verl study without ``model.path`` start from, committed in the repository as what it stands for (the pretrained
model an RL study starts from). ``assets.tiny_qwen3`` copies it into the cache instead of building it (80 s on
2 cores); other sizes and warm starts are built once into the cache as before.

    python -m trainers.verl_backend.shipped_base --ship     # rebuild it from its recipe into bases/ (minutes)
    python -m trainers.verl_backend.shipped_base --check    # its bytes, its spec, the recipe's first 50 steps (seconds)
    python -m trainers.verl_backend.shipped_base --smoke    # the check, as the end-to-end smoke of this command

``trainers/verl_backend/bases/tiny-qwen3-<spec key>/`` holds the checkpoint's files (``zoo_asset.json`` is its
spec) and ``RECIPE.json``: {"command", "warm_start_steps", "weights_sha1", "probe_steps", "probe_sha1": sha1 of the
weights after the recipe's first ``probe_steps`` warm-start steps, "kernel_env"}. The warm start is deterministic
for a given kernel choice, so the recipe runs under the reproducible numeric mode's variables
(trainers/local/numerics.py: AVX2 kernels, MKL's COMPATIBLE branch); the command re-executes itself with them.
Exit 0 when the check finds nothing wrong, 1 (each problem printed) otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from datetime import date
from pathlib import Path

from trainers.local.numerics import kernel_env
from trainers.verl_backend.assets import (
    ASSET_MARKER, SHIPPED_DIR, SHIPPED_RECIPE, TINY_DEFAULTS, _spec, build_tiny_model, save_model_dir, spec_key,
)
from trainers.verl_backend.config import VerlConfig

PROBE_STEPS = 50
COMMAND = "python -m trainers.verl_backend.shipped_base --ship"


def default_dir() -> Path:
    """The shipped directory of the default base (it may not exist yet)."""
    steps = VerlConfig().tiny_warm_start_steps
    return SHIPPED_DIR / f"tiny-qwen3-{spec_key(_spec(TINY_DEFAULTS, steps))}"


def weights_sha1(directory: Path) -> str:
    return hashlib.sha1((directory / "model.safetensors").read_bytes()).hexdigest()


def probe_sha1(steps: int, probe_steps: int = PROBE_STEPS) -> str:
    """sha1 of the weights after the recipe's first ``probe_steps`` of its ``steps`` warm-start steps."""
    from trainers.local.shipped_bases import state_sha1

    model, _ = build_tiny_model(TINY_DEFAULTS, steps, log=lambda line: None, stop_after=probe_steps)
    return state_sha1(model)


def ship(log=print) -> Path:
    """Build the default base from scratch into bases/ with its RECIPE.json."""
    steps, target = VerlConfig().tiny_warm_start_steps, default_dir()
    log(f"building the verl backend's default base ({steps} warm-start steps) into {target} ...")
    probe = probe_sha1(steps)
    model, tokenizer = build_tiny_model(TINY_DEFAULTS, steps, log=lambda line: None)
    SHIPPED_DIR.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".ship-", dir=SHIPPED_DIR))
    try:
        save_model_dir(tmp, model, tokenizer, _spec(TINY_DEFAULTS, steps))
        (tmp / SHIPPED_RECIPE).write_text(json.dumps({
            "command": COMMAND, "warm_start_steps": steps, "weights_sha1": weights_sha1(tmp),
            "probe_steps": PROBE_STEPS, "probe_sha1": probe, "kernel_env": kernel_env("reproducible"),
            "built": date.today().isoformat()}, indent=1) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"shipped: {target} (weights sha1 {weights_sha1(target)[:8]}, probe {probe[:8]})")
    return target


def check() -> list[str]:
    """What is wrong with the shipped default base (empty: nothing)."""
    target = default_dir()
    rebuild = f"rebuild it: {COMMAND}"
    if not (target / ASSET_MARKER).is_file() or not (target / SHIPPED_RECIPE).is_file():
        found = sorted(p.name for p in SHIPPED_DIR.glob("tiny-qwen3-*"))
        return [f"{target.name}: not shipped under {SHIPPED_DIR} (found {found or 'nothing'}: the spec of the "
                f"default base changed); {rebuild}"]
    made = json.loads((target / SHIPPED_RECIPE).read_text())
    problems = []
    if weights_sha1(target) != made["weights_sha1"]:
        problems.append(f"{target.name}: the weights' sha1 is not RECIPE.json's {made['weights_sha1'][:8]} (changed files)")
    if json.loads((target / ASSET_MARKER).read_text()) != json.loads(json.dumps(_spec(TINY_DEFAULTS, made["warm_start_steps"]))):
        problems.append(f"{target.name}: {ASSET_MARKER} is not the spec of the default base; {rebuild}")
    probe = probe_sha1(made["warm_start_steps"], made["probe_steps"])
    if probe != made["probe_sha1"]:
        problems.append(f"{target.name}: the recipe's first {made['probe_steps']} warm-start steps give weights sha1 "
                        f"{probe[:8]}, not the recorded {made['probe_sha1'][:8]} (the warm start changed); {rebuild}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainers.verl_backend.shipped_base", description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--ship", action="store_true", help="rebuild the default base into bases/ (minutes)")
    what.add_argument("--check", action="store_true", help="check the shipped base against its recipe (seconds)")
    what.add_argument("--smoke", action="store_true", help="the check (the end-to-end path of this command)")
    args = parser.parse_args(argv)
    wanted = kernel_env("reproducible")
    if any(os.environ.get(name) != value for name, value in wanted.items()):  # before torch's first operation
        os.execve(sys.executable, [sys.executable, "-m", "trainers.verl_backend.shipped_base", *(argv or sys.argv[1:])],
                  {**os.environ, **wanted})
    if args.ship:
        ship()
        return 0
    problems = check()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{default_dir().name}: {len(problems)} problem(s)")
        return 1
    print(f"{'smoke ok: ' if args.smoke else ''}{default_dir().name}: its bytes, its spec and the recipe's first "
          f"{PROBE_STEPS} warm-start steps match RECIPE.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
