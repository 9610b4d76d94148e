"""Generation backends behind one interface: n samples per prompt, as text.

    gen = make_generator("hf", "path/to/model_dir", device="auto", batch_size=256)
    out = gen.generate(["Q: 12+7=?", [{"role": "user", "content": "Q: 3*4=?"}]],
                       SamplingParams(n=8, temperature=1.0, max_new_tokens=512, seed=0))
    out[1][0].text, out[1][0].num_tokens, out[1][0].truncated
    gen.close()

Backends (``make_generator(backend, model_dir, **options)``):
  "hf"    HFGenerator: trainers.local.rollout.sample (KV cache; the lean Qwen3 forward of
          trainers/local/fast_qwen3.py where it applies, each distinct prompt prefilled once,
          finished rows dropped from the decode batch), CPU or GPU. Options: device, dtype,
          batch_size, chat_template, lean.
  "vllm"  VLLMGenerator (evaluators/generation_vllm.py): vLLM on a CUDA GPU, installed with
          ``pip install -c constraints.txt -e ".[gpu]"`` (GPU hosts only). Options: those of its
          constructor (tensor_parallel_size, gpu_memory_utilization, dtype, max_model_len,
          chat_template, seed).

Prompts: a string is encoded as it is (no special tokens added) unless ``chat_template=True``, which
wraps it as one user message; a list of messages ``[{"role": ..., "content": ...}, ...]`` always goes
through the tokenizer's chat template (``add_generation_prompt=True``). A tokenizer without a chat
template (the local trainer's character tokenizer has none) gives a ValueError for chat prompts.

Sampling (``SamplingParams``): ``greedy`` is argmax decoding (temperature and top_p are then ignored)
and requires ``n == 1``: greedy samples of one prompt are all the same, so more would only cost time
(Pass@1 under greedy decoding, as trainers/local/trainer.py evaluates it with k = 1).

Reproducibility: the HF backend draws from ``torch_generator`` when one is given, otherwise from
``torch.Generator().manual_seed(params.seed)``. With raw prompts, batch_size 256 and the same
generator, its texts are bit-identical to trainers/local/trainer.py ``evaluate`` (each prompt repeated
n times contiguously, the flat list sampled in chunks of ``batch_size`` sequences, one ``sample`` call
per chunk). vLLM gives prompt i its own seed drawn from ``params.seed`` (vLLM seeds the k-th of the
n samples with seed + k), so repeated prompts in one call do not get identical samples.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch

GPU_INSTALL = 'pip install -c constraints.txt -e ".[gpu]"'
BACKENDS = ("hf", "vllm")


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


# ---- prompts ----------------------------------------------------------------------------------
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


# ---- Hugging Face / lean forward ----------------------------------------------------------------
class HFGenerator:
    """Batched KV-cache sampling with trainers.local.rollout.sample (see the module docstring)."""

    def __init__(self, model, tokenizer, *, batch_size: int = 256, chat_template: bool = False,
                 lean: bool | None = None):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"HFGenerator: batch_size must be an integer >= 1, got {batch_size!r}")
        if tokenizer.eos_token_id is None:
            raise ValueError("HFGenerator: the tokenizer has no eos token")
        self.model, self.tokenizer = model, tokenizer
        self.batch_size, self.chat_template, self.lean = batch_size, chat_template, lean
        self.eos_id = tokenizer.eos_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self._model_dir: Path | None = None  # from_pretrained: where a chat template may be read from
        self._template_tokenizer = None

    @classmethod
    def from_pretrained(cls, model_dir, *, device="auto", dtype="float32", **kw) -> "HFGenerator":
        """Load a local model directory with trainers.local.model.load_policy: parameters only (lean
        forward, no transformers import) for a Qwen3 with a plain tokenizer, else the transformers
        model; ``lean=False`` forces the latter. ``device="auto"``: cuda when available."""
        from trainers.local.model import load_policy, resolve_device

        model, tokenizer = load_policy(model_dir, resolve_device(device), dtype, lean=kw.get("lean") is not False)
        generator = cls(model, tokenizer, **kw)
        generator._model_dir = Path(model_dir)
        return generator

    def _templating_tokenizer(self):
        """The tokenizer itself when it has a chat template; for a lean-loaded directory (LeanTokenizer
        has none) the directory's transformers tokenizer, loaded once, when the directory has one."""
        if has_chat_template(self.tokenizer):
            return self.tokenizer
        if self._template_tokenizer is None and self._model_dir is not None and dir_has_chat_template(self._model_dir):
            from transformers import AutoTokenizer

            self._template_tokenizer = AutoTokenizer.from_pretrained(self._model_dir, local_files_only=True)
        return self._template_tokenizer or self.tokenizer

    def encode(self, prompt: Prompt) -> list[int]:
        messages = messages_of(prompt, self.chat_template)
        text = prompt if messages is None else apply_template(self._templating_tokenizer(), messages)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if not ids:
            raise ValueError(f"prompt {prompt!r:.200} encodes to no tokens")
        return list(ids)

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams,
                 progress: Callable[[int], None] | None = None,
                 torch_generator: torch.Generator | None = None) -> list[list[Sample]]:
        import torch

        from trainers.local.rollout import sample

        encoded = [self.encode(p) for p in prompts]
        gen = torch_generator if torch_generator is not None else torch.Generator().manual_seed(params.seed)
        n = params.n
        flat = [ids for ids in encoded for _ in range(n)]  # each prompt n times, contiguously
        samples: list[Sample] = []
        reported = 0
        for start in range(0, len(flat), self.batch_size):
            chunk = flat[start:start + self.batch_size]
            ro = sample(self.model, chunk, max_new_tokens=params.max_new_tokens, eos_id=self.eos_id,
                        pad_id=self.pad_id, temperature=params.temperature, top_p=params.top_p,
                        greedy=params.greedy, generator=gen, lean=self.lean)
            samples += self._samples(ro.response_ids.cpu(), ro.response_mask.cpu())
            finished = (start + len(chunk)) // n
            if progress is not None and finished > reported:
                progress(finished - reported)
                reported = finished
        return [samples[i * n:(i + 1) * n] for i in range(len(encoded))]

    def _samples(self, ids, mask) -> list[Sample]:
        lengths = mask.sum(1).tolist()
        ended = ((ids == self.eos_id) & mask.bool()).any(1).tolist()
        return [Sample(text=self.tokenizer.decode(row[:length].tolist(), skip_special_tokens=True),
                       num_tokens=int(length), truncated=not eos)
                for row, length, eos in zip(ids, lengths, ended)]

    def close(self) -> None:
        device = getattr(next(self.model.parameters(), None), "device", None) if self.model is not None else None
        self.model = None
        self._template_tokenizer = None
        if device is not None and device.type == "cuda":
            import torch

            torch.cuda.empty_cache()


# ---- backends by name ---------------------------------------------------------------------------
def make_generator(backend: str, model_dir, **options) -> Generator:
    """``HFGenerator.from_pretrained(model_dir, **options)`` ("hf") or ``VLLMGenerator(model_dir,
    **options)`` ("vllm")."""
    if backend == "hf":
        return HFGenerator.from_pretrained(model_dir, **options)
    if backend == "vllm":
        from evaluators.generation_vllm import VLLMGenerator

        return VLLMGenerator(model_dir, **options)
    raise ValueError(f"unknown generation backend {backend!r}; expected one of {', '.join(map(repr, BACKENDS))}")


def __getattr__(name: str):
    """``from evaluators.generation import VLLMGenerator`` (it lives in generation_vllm.py; importing
    that module does not import vllm)."""
    if name == "VLLMGenerator":
        from evaluators.generation_vllm import VLLMGenerator

        return VLLMGenerator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
