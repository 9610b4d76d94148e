"""Run one trial of the built-in trainer from the command line, printing each logged step.

    python -m trainers.local                                  # the default preset (200 steps)
    python -m trainers.local configs/trainer/local_tiny.yaml algorithm.name=dhpo algorithm.params.mixing=entropy
    python -m trainers.local --smoke                          # a few steps, seconds
    python -m trainers.local --workdir runs/manual            # also write checkpoints there
    python -m trainers.local --resume runs/manual/checkpoint_000050
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainers.config import ConfigError, load_trial_config
from trainers.local.trainer import train

SMOKE_OVERRIDES = ["trainer.steps=3", "trainer.eval_every=3", "data.eval_size=8", "trainer.eval_k=1",
                   "trainer.prompts_per_step=4", "trainer.group_size=4"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainers.local", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("args", nargs="*", help="[CONFIG.yaml] then key=value overrides")
    parser.add_argument("--smoke", action="store_true", help="tiny run (3 steps) for a quick end-to-end check")
    parser.add_argument("--workdir", type=Path, default=None, help="directory for checkpoints")
    parser.add_argument("--resume", type=Path, default=None, help="checkpoint directory to resume from")
    ns = parser.parse_args(argv)
    config_path = ns.args[0] if ns.args and "=" not in ns.args[0] else None
    overrides = [a for a in ns.args if "=" in a]
    if ns.smoke:
        overrides = SMOKE_OVERRIDES + overrides
    try:
        cfg = load_trial_config(config_path, overrides)
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    final = train(cfg, lambda step, metrics, ckpt: None, resume_from=ns.resume, workdir=ns.workdir)
    print(json.dumps({k: round(v, 4) for k, v in final.items() if k.startswith(("val/", "reward/"))}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
