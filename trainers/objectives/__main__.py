"""List the registered objectives and their parameters: ``python -m trainers.objectives [--smoke]``.

``--smoke`` also evaluates every objective once on a random batch (forward + backward).
"""

import sys

from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective


def main(argv: list[str]) -> None:
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
