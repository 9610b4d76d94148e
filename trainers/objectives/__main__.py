"""List the registered objectives and their parameters: ``python -m trainers.objectives [--smoke]``.

The listing is ``sweep ls-objectives``'s, as plain text. ``--smoke`` also evaluates every objective once on a
random batch (forward + backward).
``--write-presets DIR`` writes each objective's Hydra preset ``DIR/<name>.yaml`` from the registry (its paper
defaults and their docs): configs/algorithm/ is written this way, and tests/trainers/objectives keeps it equal.
"""

import sys
from pathlib import Path

from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective


def preset_yaml(name: str) -> str:
    """configs/algorithm/<name>.yaml: the objective's name and paper defaults, each with its doc as a comment."""
    spec = OBJECTIVES[name]
    lines = [f"# {spec.label}: {spec.summary} (paper defaults).", f"name: {name}", "params:"]
    for param, (default, doc) in spec.param_docs().items():
        lines.append(f"  {param}: {_yaml_scalar(default)}  # {doc}")
    return "\n".join(lines) + "\n"


def _yaml_scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return f"{value:.1f}"  # 10.0, not 10: YAML reads it back as a float
    if isinstance(value, float):
        return f"{value:.10f}".rstrip("0") if 1e-4 <= abs(value) < 1e6 else repr(value)
    return str(value)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m trainers.objectives",
        description="List the registered objectives and their parameters with the papers' defaults (plain text; "
                    "`sweep ls-objectives` shows the same as tables).")
    parser.add_argument("--smoke", action="store_true",
                        help="also evaluate every objective once on a random batch, forward and backward (seconds)")
    parser.add_argument("--write-presets", metavar="DIR", type=Path, default=None,
                        help="instead write each objective's Hydra preset DIR/<name>.yaml (configs/algorithm/ is "
                             "written this way)")
    args = parser.parse_args(argv)
    if args.write_presets is not None:
        if args.smoke:
            parser.error("--write-presets and --smoke: one at a time")
        if not args.write_presets.is_dir():
            parser.error(f"--write-presets: {args.write_presets} is not a folder")
        folder = args.write_presets
        for name in OBJECTIVES:
            (folder / f"{name}.yaml").write_text(preset_yaml(name), encoding="utf-8")
            print(f"wrote {folder / name}.yaml")
        return 0
    for name, spec in OBJECTIVES.items():
        print(f"{name:6s} {spec.summary}")
        for param, (default, doc) in spec.param_docs().items():
            print(f"    {param:16s} = {default!r:22s} {doc}")
    if args.smoke:
        import torch  # only here: the listing itself needs no torch

        g = torch.Generator().manual_seed(0)
        old = -torch.rand(4, 16, generator=g) * 3
        for name in OBJECTIVES:
            lp = (old + 0.1 * torch.randn(4, 16, generator=g)).requires_grad_()
            batch = PolicyBatch(lp, old, torch.randn(4, generator=g), torch.ones(4, 16), torch.rand(4, 16, generator=g))
            loss, metrics = get_objective(name)(batch)
            loss.backward()
            print(f"smoke {name:6s} loss={loss.item():+.4f} grad_norm={lp.grad.norm():.4f} metrics={len(metrics)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
