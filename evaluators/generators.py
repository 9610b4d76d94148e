"""The generation backends by name: what an eval protocol's ``backend`` may say, and how each is built.

    from evaluators.generators import build_generator, generator_names, get_generator_backend
    gen = build_generator(model_dir, cfg, chat=True)     # cfg: an EvalConfig; its backend names the entry
    get_generator_backend("vllm").needs_gpu               # True: a trial without a GPU slot evaluates in a GPU task

An entry names its builder as "module:function" (imported only when it builds), a function
``(model_dir, cfg: EvalConfig, chat: bool) -> Generator`` (the contract: evaluators/sampling.py). Adding a
backend (a plug-in, a test's toy generator) is one ``register_generator`` call; evaluators/eval_config.py,
trial_eval/ and sweeps/ only look backends up here, they never name one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from contract.plugins import load_plugins


@dataclass(frozen=True)
class GeneratorBackend:
    name: str
    build: str
    """"module:function": (model_dir, cfg: EvalConfig, chat: bool) -> Generator."""
    summary: str
    needs_gpu: bool = False
    """It runs on a GPU only: inside a trial whose Tune slot holds no GPU (verl's), a GPU task runs it."""

    def builder(self):
        module, _, function = self.build.partition(":")
        return getattr(importlib.import_module(module), function)


GENERATORS: dict[str, GeneratorBackend] = {
    "hf": GeneratorBackend("hf", "evaluators.generation:build_hf",
                           "transformers / the lean Qwen3 forward (policy.rollout.sample), CPU or GPU"),
    "vllm": GeneratorBackend("vllm", "evaluators.generation_vllm:build_vllm",
                             "vLLM on CUDA GPUs (the `gpu` extra; GPU hosts only)", needs_gpu=True),
}
DEFAULT_GENERATOR = "hf"


def generator_names() -> list[str]:
    load_plugins()  # SWEEP_PLUGINS: the generators plug-ins register join GENERATORS before it is read
    return list(GENERATORS)


def get_generator_backend(name: str) -> GeneratorBackend:
    load_plugins()
    if name not in GENERATORS:
        raise ValueError(f"unknown generation backend {name!r}; expected one of {', '.join(map(repr, GENERATORS))}")
    return GENERATORS[name]


def register_generator(backend: GeneratorBackend) -> None:
    if backend.name in GENERATORS:
        raise ValueError(f"generation backend {backend.name!r} is registered already")
    GENERATORS[backend.name] = backend


def unregister_generator(name: str) -> None:
    GENERATORS.pop(name, None)


def build_generator(model_dir, cfg, chat: bool):
    """The generator ``cfg.backend`` names, on ``model_dir`` (cfg: an EvalConfig)."""
    return get_generator_backend(cfg.backend).builder()(model_dir, cfg, chat)

