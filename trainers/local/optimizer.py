"""AdamW with a linear learning-rate warm-up for the built-in trainer, without a torch.optim object.

    opt = WarmupAdamW(model.parameters(), lr=1e-5, weight_decay=0.0, warmup_steps=10, fused=True)
    opt.zero_grad(); loss.backward(); opt.step()
    opt.lr                                  # the learning rate of the next step
    torch.save({"opt": opt.state_dict(), "sched": opt.schedule_state_dict()}, f)
    opt.load_state_dict(saved["opt"], saved["sched"])

Why not ``torch.optim.AdamW`` + ``LambdaLR``: a ``torch.optim.Optimizer`` imports ``torch._dynamo``
(with sympy, ~800 modules) on its first call, since its methods are wrapped to keep dynamo out.
That costs ~0.9 CPU-s at the start of every trial process, and a trial never compiles anything.
This class keeps the state itself and calls torch's functional ``torch.optim.adamw.adamw``, which
imports nothing. It uses the same kernel (fused on CPU/CUDA, foreach elsewhere) with the same
arguments, so updates are bit-identical to ``torch.optim.AdamW(fused=...)``. The schedule is
``LambdaLR(lambda s: min(1, (s + 1) / warmup_steps))``, computed the same way. Both state dicts
have torch's layouts (AdamW's and LambdaLR's), so trainer checkpoints from either load in either.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch.optim.adamw import adamw


class WarmupAdamW:
    """AdamW (decoupled weight decay, no amsgrad) over one parameter group; lr warms up linearly."""

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float, warmup_steps: int,
                 fused: bool, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = list(params)
        if len({id(p) for p in self.params}) != len(self.params):
            raise ValueError("WarmupAdamW: a parameter appears twice")
        self.base_lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.warmup_steps = max(warmup_steps, 1)
        self.fused = fused  # torch's fused kernel (CPU, CUDA); else the foreach one
        self.steps_taken = 0  # LambdaLR's last_epoch
        self.state: dict[int, dict[str, torch.Tensor]] = {}  # parameter index -> step, exp_avg, exp_avg_sq

    @property
    def lr(self) -> float:
        """The learning rate of the next step: base lr x min(1, (steps taken + 1) / warmup steps)."""
        return self.base_lr * min(1.0, (self.steps_taken + 1) / self.warmup_steps)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _new_state(self, p: torch.Tensor) -> dict[str, torch.Tensor]:
        # As torch.optim.Adam's _init_group: the fused kernel keeps its step counters on the
        # parameter's device in float32, the foreach one on the CPU in the default float type.
        if self.fused:
            step = torch.zeros((), dtype=torch.float32, device=p.device)
        else:
            default = torch.get_default_dtype()
            step = torch.tensor(0.0, dtype=torch.float64 if default == torch.float64 else torch.float32)
        return {"step": step, "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}

    @torch.no_grad()
    def step(self) -> None:
        """One AdamW update of every parameter that has a gradient, then the schedule advances."""
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        for i in live:
            if i not in self.state:
                self.state[i] = self._new_state(self.params[i])
        if live:
            states = [self.state[i] for i in live]
            adamw([self.params[i] for i in live], [self.params[i].grad for i in live],
                  [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states], [],
                  [s["step"] for s in states], foreach=not self.fused, fused=self.fused,
                  amsgrad=False, beta1=self.betas[0], beta2=self.betas[1], lr=self.lr,
                  weight_decay=self.weight_decay, eps=self.eps, maximize=False)
        self.steps_taken += 1

    # ---- checkpoints, in torch's layouts ------------------------------------------------------
    def state_dict(self) -> dict:
        """torch.optim.AdamW's state_dict layout."""
        group = {"lr": self.lr, "betas": self.betas, "eps": self.eps, "weight_decay": self.weight_decay,
                 "amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                 "differentiable": False, "fused": self.fused, "decoupled_weight_decay": True,
                 "initial_lr": self.base_lr, "params": list(range(len(self.params)))}
        return {"state": {i: dict(s) for i, s in sorted(self.state.items())}, "param_groups": [group]}

    def schedule_state_dict(self) -> dict:
        """torch.optim.lr_scheduler.LambdaLR's state_dict layout."""
        return {"base_lrs": [self.base_lr], "last_epoch": self.steps_taken, "_step_count": self.steps_taken + 1,
                "_is_initial": False, "_get_lr_called_within_step": False, "_last_lr": [self.lr],
                "lr_lambdas": [None]}

    def load_state_dict(self, state: dict, schedule: dict) -> None:
        """Restore from ``state_dict()`` + ``schedule_state_dict()`` (or torch's AdamW + LambdaLR ones)."""
        groups = state.get("param_groups", [])
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            raise ValueError(f"optimizer state: expected one parameter group of {len(self.params)} parameters, "
                             f"got groups of {[len(g['params']) for g in groups]}")
        group = groups[0]
        position = {saved: i for i, saved in enumerate(group["params"])}
        self.state = {}
        for saved, values in state["state"].items():
            p = self.params[position[saved]]
            self.state[position[saved]] = {  # copies: the given dict may be another optimizer's live state
                k: v.to(device=p.device, dtype=torch.float32 if self.fused else v.dtype, copy=True) if k == "step"
                else v.to(device=p.device, dtype=p.dtype, copy=True) for k, v in values.items()}
        self.betas, self.eps, self.weight_decay = tuple(group["betas"]), group["eps"], group["weight_decay"]
        self.base_lr = schedule["base_lrs"][0]
        self.steps_taken = int(schedule["last_epoch"])
