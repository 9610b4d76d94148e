"""Generation backends behind one interface: n samples per prompt, as text.

    gen = make_generator("hf", "path/to/model_dir", device="auto", batch_size=256)
    out = gen.generate(["Q: 12+7=?", [{"role": "user", "content": "Q: 3*4=?"}]],
                       SamplingParams(n=8, temperature=1.0, max_new_tokens=512, seed=0))
    out[1][0].text, out[1][0].num_tokens, out[1][0].truncated
    gen.close()

Backends (evaluators/generators.py looks them up by name; ``make_generator(backend, model_dir, **options)``
builds one with its own options):
  "hf"    HFGenerator: policy.rollout.sample (KV cache; the lean Qwen3 forward of
          policy/fast_qwen3.py where it applies, each distinct prompt prefilled once,
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

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.sampling import (GPU_INSTALL, Generator, Prompt, Sample, SamplingParams, apply_template,
                                 dir_has_chat_template, has_chat_template, messages_of)

if TYPE_CHECKING:
    import torch

__all__ = ["GPU_INSTALL", "Generator", "HFGenerator", "Prompt", "Sample", "SamplingParams",
           "apply_template", "dir_has_chat_template", "has_chat_template", "make_generator", "messages_of"]


# ---- Hugging Face / lean forward ----------------------------------------------------------------
class HFGenerator:
    """Batched KV-cache sampling with policy.rollout.sample (see the module docstring)."""

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
        """Load a local model directory with policy.model.load_policy: parameters only (lean
        forward, no transformers import) for a Qwen3 with a plain tokenizer, else the transformers
        model; ``lean=False`` forces the latter. ``device="auto"``: cuda when available."""
        from policy.model import load_policy, resolve_device

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

        from policy.rollout import sample

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


# ---- the "hf" entry of evaluators/generators.py, and the generators by name with their own options ----
def build_hf(model_dir, cfg, chat: bool) -> HFGenerator:
    """The "hf" generator of an EvalConfig: its device (a clear error for 'cuda' without CUDA), dtype
    ('auto': bfloat16 on a GPU, float32 on a CPU) and batch size."""
    from policy.model import resolve_device

    device = resolve_device(cfg.device).type
    dtype = ("bfloat16" if device == "cuda" else "float32") if cfg.dtype == "auto" else cfg.dtype
    return HFGenerator.from_pretrained(model_dir, device=device, dtype=dtype, batch_size=cfg.batch_size,
                                       chat_template=chat)


def make_generator(backend: str, model_dir, **options) -> Generator:
    """``HFGenerator.from_pretrained(model_dir, **options)`` ("hf") or ``VLLMGenerator(model_dir,
    **options)`` ("vllm"): the two built-in backends with their own options (benchmarks, tests); an eval
    protocol builds through evaluators/generators.py."""
    if backend == "hf":
        return HFGenerator.from_pretrained(model_dir, **options)
    if backend == "vllm":
        from evaluators.generation_vllm import VLLMGenerator

        return VLLMGenerator(model_dir, **options)
    raise ValueError(f"unknown generation backend {backend!r}; expected one of 'hf', 'vllm'")
