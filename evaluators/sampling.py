"""The generation contract every backend shares: sampling parameters, samples, prompts, chat templates.

    from evaluators.sampling import SamplingParams, Sample, messages_of
    params = SamplingParams(n=8, temperature=1.0, max_new_tokens=512, seed=0)
    messages_of("Q: 12+7=?", chat_template=True)   # [{"role": "user", "content": "Q: 12+7=?"}]

The backends (evaluators/generators.py: "hf" in evaluators/generation.py, "vllm" in evaluators/generation_vllm.py) import this;
see evaluators/generation.py for the prompt and sampling conventions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

GPU_INSTALL = 'pip install -c constraints.txt -e ".[gpu]"'


@dataclass(frozen=True)
class SamplingParams:
    n: int = 1  # samples per prompt
    temperature: float = 1.0  # softmax temperature (ignored when greedy)
    top_p: float = 1.0  # nucleus mass (1.0: the full distribution; ignored when greedy)
    max_new_tokens: int = 1024  # new tokens per sample at most, <eos> included
    greedy: bool = False  # argmax decoding; requires n == 1
    seed: int = 0  # seeds the sampling RNG (HF: unless a torch_generator is given)

    def __post_init__(self):
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"SamplingParams.n must be an integer >= 1, got {self.n!r}")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"SamplingParams.max_new_tokens must be an integer >= 1, got {self.max_new_tokens!r}")
        if self.greedy and self.n != 1:
            raise ValueError(f"SamplingParams: greedy decoding gives one answer per prompt, so n must be 1 (got n={self.n})")
        if not self.greedy and not self.temperature > 0:
            raise ValueError(f"SamplingParams.temperature must be > 0 (use greedy=True for argmax), got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"SamplingParams.top_p must be in (0, 1], got {self.top_p!r}")


@dataclass(frozen=True)
class Sample:
    text: str  # decoded response, special tokens skipped
    num_tokens: int  # generated tokens incl. <eos>
    truncated: bool  # hit max_new_tokens without <eos>


Prompt = str | Sequence[Mapping[str, str]]  # raw text, or chat messages [{"role", "content"}, ...]


class Generator(Protocol):
    def generate(self, prompts: Sequence[Prompt], params: SamplingParams,
                 progress: Callable[[int], None] | None = None) -> list[list[Sample]]:
        """One list of ``params.n`` samples per prompt, in order; ``progress(k)`` as k more prompts finish."""

    def close(self) -> None:
        """Release the model (and its GPU memory)."""


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None)) and hasattr(tokenizer, "apply_chat_template")


def messages_of(prompt: Prompt, chat_template: bool) -> list[dict[str, str]] | None:
    """The chat messages of ``prompt``, or None for a raw string encoded as it is."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}] if chat_template else None
    if isinstance(prompt, Sequence) and prompt and all(isinstance(m, Mapping) for m in prompt):
        messages = [dict(m) for m in prompt]
        if all(isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages):
            return messages
    raise TypeError(f"a prompt is a string or a non-empty list of {{'role': str, 'content': str}} messages, "
                    f"got {prompt!r:.200}")


def apply_template(tokenizer, messages: list[dict[str, str]]) -> str:
    if not has_chat_template(tokenizer):
        raise ValueError(f"the tokenizer ({type(tokenizer).__name__}) has no chat template, so chat messages (or "
                         "chat_template=True) cannot be rendered; pass raw string prompts with chat_template=False")
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def dir_has_chat_template(path: Path) -> bool:
    """Whether a model directory's tokenizer carries a chat template (file or tokenizer_config key)."""
    path = Path(path)
    if (path / "chat_template.jinja").is_file() or (path / "chat_template.json").is_file():
        return True
    config = path / "tokenizer_config.json"
    return config.is_file() and bool(json.loads(config.read_text()).get("chat_template"))
