"""Run one trial of the built-in trainer from the command line, printing each logged step.

    python -m trainers.local                                  # the default preset (200 steps)
    python -m trainers.local my_trial.yaml algorithm.name=dhpo algorithm.params.mixing=entropy  # a trial YAML: model:, trainer:, ...
    python -m trainers.local --smoke                          # 3 steps from a 20-step base, seconds
    python -m trainers.local --workdir runs/manual            # also write checkpoints there
    python -m trainers.local --resume runs/manual/checkpoint_000050
    python -m trainers.local algorithm.params.eps_low=3e-4 ~trainer.lr +algorithm.params.agg=token-mean

Overrides are Hydra's: key=value, +key=value (add), ++key=value (set or add), ~key[=value] (delete:
back to the dataclass default); values typed by Hydra (3e-4 is a float). See trainers/overrides.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from contract.metrics import REWARD, VAL
from trainers.config import ConfigError, load_trial_config, split_args
from trainers.local.numerics import set_kernel_env

SMOKE_OVERRIDES = ["trainer.steps=3", "trainer.eval_every=3", "data.eval_size=8", "trainer.eval_k=1",
                   "trainer.prompts_per_step=4", "trainer.group_size=4", "local.warm_start.steps=20"]
"""What --smoke applies before the command line's overrides (its base: 20 warm-start steps, not the preset's
2000, so a first smoke builds it in seconds; cached under local.warm_start.cache_dir like any base)."""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainers.local", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("args", nargs="*", help="[CONFIG.yaml] then overrides: key=value, +key=value, ++key=value, ~key")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny run for a quick end-to-end check: 3 steps from a base warm-started for 20 steps")
    parser.add_argument("--workdir", type=Path, default=None, help="directory for checkpoints")
    parser.add_argument("--resume", type=Path, default=None, help="checkpoint directory to resume from")
    ns = parser.parse_intermixed_args(argv)
    try:
        config_path, overrides = split_args(ns.args)
        cfg = load_trial_config(config_path, (SMOKE_OVERRIDES if ns.smoke else []) + overrides)
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    set_kernel_env(cfg.local.numerics)  # before torch loads: its kernels are chosen at its first operation
    from trainers.local.trainer import train

    final = train(cfg, lambda step, metrics, ckpt: None, resume_from=ns.resume, workdir=ns.workdir)
    print(json.dumps({k: round(v, 4) for k, v in final.items() if k.startswith((VAL, REWARD))}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
