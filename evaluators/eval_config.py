"""The evaluation protocol: which benchmarks, how many samples, how to decode. Typed and validated.

It is the `eval:` section of a sweep spec (run on every trial's final checkpoint) and the options
of `sweep eval`. Defaults follow DHPO's protocol: temperature 1.0, top-p 1.0, 16K new tokens, each
benchmark's own samples per problem (AIME 32, AMC 4, others 1); `greedy: true` is SSPO's protocol.

    cfg = EvalConfig.from_dict({"benchmarks": ["aime24", "math500"], "samples": 4}, where="spec.yaml: eval")
    cfg.samples_for("aime24")   # 4 (32 without `samples`)
    cfg.protocol_hash()         # keys the per-benchmark result files, so a changed protocol never reuses them
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from contract.errors import InputError
from evaluators.verifier import UNMARKED
from evaluators.benchmarks import PAPER_BENCHMARKS, SYNTHETIC_BENCHMARKS  # PAPER_: DHPO Table 1's columns, in order
from contract.suggest import did_you_mean
from evaluators.generators import DEFAULT_GENERATOR, generator_names
MATH_INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}."
"""Appended to a plain-text problem of the paper benchmarks (verl's math recipes use this line)."""
PROMPT_FORMATS = ("auto", "chat", "raw")


class EvalConfigError(InputError):
    """A bad `eval` value; the message names the key and what was expected."""


@dataclass
class EvalConfig:
    benchmarks: list[str] = field(default_factory=lambda: list(PAPER_BENCHMARKS))
    """Benchmarks to evaluate: registry names (evaluators/benchmarks.py) or keys of `files`."""
    samples: int | None = None
    """Samples per problem for every benchmark; null = each benchmark's default (AIME 32, AMC 4, others 1)."""
    greedy: bool = False
    """Greedy decoding with one sample per problem (SSPO's protocol) instead of sampling."""
    temperature: float = 1.0
    """Sampling temperature (DHPO: 1.0)."""
    top_p: float = 1.0
    """Nucleus sampling (1.0 = off)."""
    max_new_tokens: int = 16384
    """Response length cap (the papers: 16K); capped further by the model's context length."""
    prompt_format: str = "auto"
    """'chat' (the tokenizer's chat template), 'raw' (the text as is) or 'auto' (chat when the model has a template)."""
    instruction: str | None = None
    """Line appended to plain-text problems; null = MATH_INSTRUCTION for the paper benchmarks, none otherwise."""
    backend: str = DEFAULT_GENERATOR
    """Generation backend (evaluators/generators.py): 'hf' (transformers / lean forward, CPU or GPU) or 'vllm' (GPU, the `gpu` extra)."""
    data_dir: str = "data/benchmarks"
    """Directory searched for <benchmark>.parquet / .jsonl / .json (relative to the working directory)."""
    files: dict[str, str] = field(default_factory=dict)
    """Benchmark name -> file, overriding data_dir (any schema evaluators/loaders.py reads)."""
    size: int = 64
    """Problems per synthetic benchmark (easy / medium / hard)."""
    data_seed: int = 1234
    """Seed of the synthetic benchmarks (the trainers' data.seed default)."""
    limit: int | None = None
    """Evaluate only the first N problems of each benchmark (quick checks); null = all."""
    seed: int = 0
    """Sampling seed."""
    batch_size: int = 256
    """Sequences per generation batch (hf backend)."""
    device: str = "auto"
    """'auto' (cuda when available), 'cpu' or 'cuda' (hf backend)."""
    dtype: str = "auto"
    """'auto' (bfloat16 on GPU, float32 on CPU), 'float32' or 'bfloat16'."""
    tensor_parallel_size: int = 1
    """GPUs per model (vllm backend)."""
    gpu_memory_utilization: float = 0.85
    """Share of GPU memory vLLM may take."""
    base: bool = False
    """Also evaluate the trials' base model once (logged at step 0 of each trial: the table's `base:` row)."""
    unmarked: str = "auto"
    """A response with no answer marker (evaluators/verifier.py): 'field' (math-verify's verdict on it, as
    the papers grade), 'no_credit' (as the training reward: a bare number is no answer), or 'auto': field
    for the papers' benchmarks and files you give, no_credit for the built-in synthetic tasks (graded as
    their training reward and the trainer's validation grade them)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, where: str = "eval") -> "EvalConfig":
        """Build and validate; an unknown key or a bad value raises EvalConfigError naming `where.key`."""
        data = dict(data or {})
        if not isinstance(data, dict):
            raise EvalConfigError(f"{where}: expected a mapping, got {data!r}")
        known = [f.name for f in dataclasses.fields(cls)]
        for key in data:
            if key not in known:
                raise EvalConfigError(f"{where}.{key}: unknown key{did_you_mean(key, known)}; expected one of {known}")
        if isinstance(data.get("benchmarks"), str):
            data["benchmarks"] = [b.strip() for b in data["benchmarks"].split(",") if b.strip()]
        return cls(**data).validate(where)

    def validate(self, where: str = "eval") -> "EvalConfig":
        def bad(key: str, expected: str) -> EvalConfigError:
            return EvalConfigError(f"{where}.{key}: expected {expected}, got {getattr(self, key)!r}")

        def is_int(v: Any) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        def is_num(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        if not isinstance(self.benchmarks, list) or not self.benchmarks \
                or not all(isinstance(b, str) and b for b in self.benchmarks):
            raise bad("benchmarks", "a non-empty list of benchmark names")
        if len(set(self.benchmarks)) != len(self.benchmarks):
            raise bad("benchmarks", "each benchmark once")
        if self.samples is not None and not (is_int(self.samples) and self.samples >= 1):
            raise bad("samples", "an integer >= 1 or null")
        for key in ("greedy", "base"):
            if not isinstance(getattr(self, key), bool):
                raise bad(key, "true or false")
        if not (is_num(self.temperature) and self.temperature > 0):
            raise bad("temperature", "a number > 0")
        if not (is_num(self.top_p) and 0 < self.top_p <= 1):
            raise bad("top_p", "a number in (0, 1]")
        for key in ("max_new_tokens", "size", "batch_size", "tensor_parallel_size"):
            if not (is_int(getattr(self, key)) and getattr(self, key) >= 1):
                raise bad(key, "an integer >= 1")
        for key in ("seed", "data_seed"):
            if not (is_int(getattr(self, key)) and getattr(self, key) >= 0):
                raise bad(key, "an integer >= 0")
        if self.limit is not None and not (is_int(self.limit) and self.limit >= 1):
            raise bad("limit", "an integer >= 1 or null")
        if self.prompt_format not in PROMPT_FORMATS:
            raise bad("prompt_format", f"one of {PROMPT_FORMATS}")
        if self.instruction is not None and not isinstance(self.instruction, str):
            raise bad("instruction", "a string or null")
        if self.backend not in generator_names():
            raise bad("backend", f"one of {tuple(generator_names())} (evaluators/generators.py)")
        if not isinstance(self.data_dir, str) or not self.data_dir:
            raise bad("data_dir", "a directory path")
        if not isinstance(self.files, dict) or not all(isinstance(k, str) and isinstance(v, str) and v
                                                       for k, v in self.files.items()):
            raise bad("files", "a mapping benchmark name -> file path")
        if self.device not in ("auto", "cpu", "cuda"):
            raise bad("device", "'auto', 'cpu' or 'cuda'")
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise bad("dtype", "'auto', 'float32', 'bfloat16' or 'float16'")
        if self.unmarked not in ("auto", *UNMARKED):
            raise bad("unmarked", f"one of {('auto', *UNMARKED)}")
        if not (is_num(self.gpu_memory_utilization) and 0 < self.gpu_memory_utilization <= 1):
            raise bad("gpu_memory_utilization", "a number in (0, 1]")
        return self

    def samples_for(self, default_samples: int) -> int:
        """Samples per problem for a benchmark whose registry default is `default_samples`."""
        if self.greedy:
            return 1
        return self.samples if self.samples is not None else default_samples

    def unmarked_for(self, benchmark: str) -> str:
        """verify_answer's ``unmarked`` for one benchmark (see the field)."""
        if self.unmarked != "auto":
            return self.unmarked
        return "no_credit" if benchmark in SYNTHETIC_BENCHMARKS and benchmark not in self.files else "field"

    def instruction_for(self, benchmark: str) -> str:
        if self.instruction is not None:
            return self.instruction
        return MATH_INSTRUCTION if benchmark in PAPER_BENCHMARKS else ""

    def protocol_hash(self) -> str:
        """12 hex digits over everything that changes a benchmark's results (not which benchmarks
        are run, nor where files are searched for: a moved file gives the same problems)."""
        d = dataclasses.asdict(self)
        for key in ("benchmarks", "data_dir", "files", "device", "batch_size", "gpu_memory_utilization", "base"):
            d.pop(key)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
