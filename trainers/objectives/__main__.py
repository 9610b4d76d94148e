"""List the registered objectives and their parameters: ``python -m trainers.objectives [--smoke]``.

``--smoke`` also evaluates every objective once on a random batch (forward + backward).
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


def main(argv: list[str]) -> None:
    if "--write-presets" in argv:
        folder = Path(argv[argv.index("--write-presets") + 1])
        for name in OBJECTIVES:
            (folder / f"{name}.yaml").write_text(preset_yaml(name), encoding="utf-8")
            print(f"wrote {folder / name}.yaml")
        return
    for name, spec in OBJECTIVES.items():
        print(f"{name:6s} {spec.summary}")
        for param, (default, doc) in spec.param_docs().items():
            print(f"    {param:16s} = {default!r:22s} {doc}")
    if "--smoke" in argv:
        import torch  # only here: the listing itself needs no torch

        g = torch.Generator().manual_seed(0)
        old = -torch.rand(4, 16, generator=g) * 3
        for name in OBJECTIVES:
            lp = (old + 0.1 * torch.randn(4, 16, generator=g)).requires_grad_()
            batch = PolicyBatch(lp, old, torch.randn(4, generator=g), torch.ones(4, 16), torch.rand(4, 16, generator=g))
            loss, metrics = get_objective(name)(batch)
            loss.backward()
            print(f"smoke {name:6s} loss={loss.item():+.4f} grad_norm={lp.grad.norm():.4f} metrics={len(metrics)}")


if __name__ == "__main__":
    main(sys.argv[1:])
