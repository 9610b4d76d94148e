"""The vLLM generation backend (GPU only) of evaluators/generation.py.

``import vllm`` happens in ``VLLMGenerator.__init__`` only, after checking that CUDA is available,
so importing this module (or evaluators.generation) never needs vllm. vllm is the ``gpu`` extra:
``pip install -c constraints.txt -e ".[gpu]"`` on a GPU host.

Mapping: SamplingParams(n, temperature, top_p, max_new_tokens, greedy, seed) -> vllm.SamplingParams(
n, temperature (0 when greedy), top_p (1 when greedy), max_tokens, seed). Prompts are rendered as in
the HF backend (a raw string as it is, messages through the chat template of ``llm.get_tokenizer()``),
encoded without added special tokens and passed as token ids, so both backends see the same
tokens. Each prompt gets its own seed, drawn from ``params.seed`` (vLLM seeds the k-th of the n
samples of a request with seed + k). A Sample's num_tokens is the length of the output's token ids
(<eos> included when it ended on one) and truncated is ``finish_reason == "length"``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from evaluators.sampling import GPU_INSTALL, Prompt, Sample, SamplingParams, apply_template, messages_of


class VLLMGenerator:
    def __init__(self, model_dir, *, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.85,
                 dtype: str = "bfloat16", max_model_len: int | None = None, chat_template: bool = False,
                 seed: int = 0):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("the vllm generation backend needs a CUDA GPU and torch.cuda.is_available() is False "
                               "here; use backend 'hf' (CPU or GPU) instead. vllm itself is installed on GPU hosts "
                               f"only, with: {GPU_INSTALL}")
        try:
            import vllm
        except ImportError as exc:
            raise ImportError(f"the vllm generation backend needs vllm, which is not installed ({exc}); on a GPU "
                              f"host install it with: {GPU_INSTALL}") from exc
        self._vllm = vllm
        self.chat_template = chat_template
        self.llm = vllm.LLM(model=str(model_dir), tensor_parallel_size=tensor_parallel_size,
                            gpu_memory_utilization=gpu_memory_utilization, dtype=dtype,
                            max_model_len=max_model_len, seed=seed)
        self.tokenizer = self.llm.get_tokenizer()

    def encode(self, prompt: Prompt) -> list[int]:
        messages = messages_of(prompt, self.chat_template)
        text = prompt if messages is None else apply_template(self.tokenizer, messages)
        ids = list(self.tokenizer.encode(text, add_special_tokens=False))
        if not ids:
            raise ValueError(f"prompt {prompt!r:.200} encodes to no tokens")
        return ids

    def sampling_params(self, params: SamplingParams, seed: int):
        return self._vllm.SamplingParams(
            n=params.n, temperature=0.0 if params.greedy else params.temperature,
            top_p=1.0 if params.greedy else params.top_p, max_tokens=params.max_new_tokens, seed=seed,
            skip_special_tokens=True)

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams,
                 progress: Callable[[int], None] | None = None) -> list[list[Sample]]:
        if not prompts:
            return []
        inputs = [{"prompt_token_ids": self.encode(p)} for p in prompts]
        rng = random.Random(params.seed)
        per_prompt = [self.sampling_params(params, rng.getrandbits(62)) for _ in prompts]
        outputs = self.llm.generate(inputs, per_prompt, use_tqdm=False)
        result = [[Sample(text=o.text, num_tokens=len(o.token_ids), truncated=o.finish_reason == "length")
                   for o in sorted(out.outputs, key=lambda o: o.index)] for out in outputs]
        if progress is not None:
            progress(len(result))
        return result

    def close(self) -> None:
        llm, self.llm = getattr(self, "llm", None), None
        if llm is None:
            return
        del llm
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()


def build_vllm(model_dir, cfg, chat: bool) -> VLLMGenerator:
    """The "vllm" generator of an EvalConfig (evaluators/generators.py): its GPUs per model, memory share and
    seed; dtype 'auto' is bfloat16."""
    return VLLMGenerator(model_dir, tensor_parallel_size=cfg.tensor_parallel_size, chat_template=chat,
                         gpu_memory_utilization=cfg.gpu_memory_utilization, seed=cfg.seed,
                         dtype="bfloat16" if cfg.dtype == "auto" else cfg.dtype)
