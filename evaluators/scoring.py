"""Generate, verify and score one benchmark: per-problem records and Avg@k / pass@k / maj@k.

The one evaluation path of the platform: the local trainer's periodic validation, `sweep eval` and
a spec's `eval:` section all call `evaluate_benchmark`.

    from evaluators.generation import HFGenerator, SamplingParams
    result = evaluate_benchmark(HFGenerator.from_pretrained("ckpt/"), "aime24", problems,
                                SamplingParams(n=32, temperature=1.0, max_new_tokens=16384))
    result.metrics   # {"avg_at_k": ..., "pass_at_k": ..., "maj_at_k": ..., "k": 32, ...}
    result.records   # one dict per problem: id, prompt, answer, samples, extracted, correct, num_tokens, truncated

Metric names carry no '@' (MLflow refuses it): avg_at_k is DHPO's Avg@k (Pass@1 averaged over k
samples), pass_at_k the unbiased pass@k of Chen et al. (2021) with k = the samples per problem,
maj_at_k majority voting over the k extracted answers (evaluators/metrics.py: ties, no answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from evaluators.metrics import summarize as summarize_votes
from evaluators.tasks import Problem
from evaluators.verifier import extract_final_answer, verify_answer
from contract.metrics import EVAL_METRICS as METRICS  # noqa: F401 (re-exported: per-benchmark names eval/<benchmark>/<name>)


@dataclass
class BenchmarkResult:
    name: str
    """Benchmark name."""
    metrics: dict[str, float]
    """METRICS of this benchmark."""
    records: list[dict]
    """One JSON-ready dict per problem (see the module docstring)."""


def build_prompt(problem: Problem, instruction: str = ""):
    """What the generator is given: the problem's chat messages when it has them (verl parquet),
    else its text with `instruction` appended on a new line."""
    if problem.messages:
        return [{"role": role, "content": content} for role, content in problem.messages]
    return f"{problem.prompt}\n{instruction}" if instruction else problem.prompt


def score_problem(problem: Problem, texts: Sequence[str], unmarked: str = "no_credit") -> tuple[list[str | None], list[bool]]:
    """(extracted answers, verdicts) of one problem's sampled responses (``unmarked``: verify_answer's)."""
    extracted = [extract_final_answer(t) for t in texts]
    correct = [verify_answer(t, problem.answer, unmarked=unmarked) for t in texts]
    return extracted, correct


def summarize(records: list[dict]) -> dict[str, float]:
    """METRICS over a benchmark's records: evaluators.metrics.summarize (k = the fewest samples any
    problem has) plus the mean response length in tokens and the share of truncated responses."""
    metrics = summarize_votes([(r["extracted"], r["correct"]) for r in records])
    tokens = [n for r in records for n in r["num_tokens"]]
    return {**{k: float(v) for k, v in metrics.items()}, "mean_tokens": sum(tokens) / max(len(tokens), 1),
            "truncated_frac": sum(t for r in records for t in r["truncated"]) / max(len(tokens), 1)}


def evaluate_benchmark(generator, name: str, problems: Sequence[Problem], params, *, instruction: str = "",
                       progress: Callable[[int], None] | None = None, unmarked: str = "no_credit",
                       **generate_kwargs) -> BenchmarkResult:
    """Generate `params.n` samples per problem in one call, verify each, summarize. ``unmarked``: what a
    response with no answer marker gets (verify_answer's; the trainer's validation: "no_credit").

    `generate_kwargs` go to `generator.generate` (the HF backend takes `torch_generator`, which the
    local trainer uses to keep its evaluation stream separate from training)."""
    if not problems:
        raise ValueError(f"benchmark {name!r} has no problems")
    prompts = [build_prompt(p, instruction) for p in problems]
    outputs = generator.generate(prompts, params, progress=progress, **generate_kwargs)
    records = []
    for problem, prompt, samples in zip(problems, prompts, outputs):
        texts = [s.text for s in samples]
        extracted, correct = score_problem(problem, texts, unmarked)
        records.append({"id": problem.id, "prompt": prompt, "answer": problem.answer, "samples": texts,
                        "extracted": extracted, "correct": correct, "num_tokens": [s.num_tokens for s in samples],
                        "truncated": [s.truncated for s in samples]})
    return BenchmarkResult(name, summarize(records), records)
