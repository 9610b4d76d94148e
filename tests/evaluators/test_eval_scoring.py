"""Tests for evaluators.scoring: prompts, per-problem records and the benchmark metrics.

The generator here is a scripted stand-in (fixed responses per prompt) so that every verdict and
metric is known by hand; the real HF backend is exercised in test_eval_generation.py and end to
end in tests/sweeps/test_sweep_eval.py.
"""

import math

import pytest

from evaluators.generation import Sample, SamplingParams
from evaluators.scoring import METRICS, build_prompt, evaluate_benchmark, summarize
from evaluators.tasks import Problem


class Scripted:
    """Returns the scripted responses of each prompt (by prompt text), and records the calls."""

    def __init__(self, responses: dict[str, list[str]]):
        self.responses, self.calls = responses, []

    def generate(self, prompts, params, progress=None, **kwargs):
        self.calls.append((prompts, params, kwargs))
        out = []
        for p in prompts:
            key = p if isinstance(p, str) else p[-1]["content"]
            texts = self.responses[key][:params.n]
            out.append([Sample(t, len(t), truncated=t.endswith("...")) for t in texts])
        if progress:
            progress(len(prompts))
        return out

    def close(self):
        pass


def test_build_prompt_uses_messages_else_text_plus_instruction():
    plain = Problem(prompt="What is 2+2?", answer="4")
    assert build_prompt(plain) == "What is 2+2?"
    assert build_prompt(plain, "Box it.") == "What is 2+2?\nBox it."
    chat = Problem(prompt="What is 2+2?", answer="4", messages=(("system", "Be brief."), ("user", "What is 2+2?")))
    assert build_prompt(chat, "ignored") == [{"role": "system", "content": "Be brief."},
                                              {"role": "user", "content": "What is 2+2?"}]


def test_records_and_metrics_by_hand():
    problems = [Problem(prompt="p1", answer="\\frac{1}{2}", id="a"), Problem(prompt="p2", answer="12", id="b")]
    gen = Scripted({
        # p1: 2 of 4 right ('0.5' and '1/2' are one vote of 2) tie with '3' (2 votes, wrong) -> maj = 1/2
        "p1": ["\\boxed{0.5}", "The answer is 3.", "\\boxed{3}", "<answer>1/2</answer>"],
        # p2: 1 of 4 right, no answer at all in two; the one vote '12' and '13' tie -> maj = 1/2
        "p2": ["#### 12", "I give up...", "no idea", "\\boxed{13}"],
    })
    progress = []
    result = evaluate_benchmark(gen, "toy", problems, SamplingParams(n=4, max_new_tokens=8), progress=progress.append)
    assert progress == [2]
    r1, r2 = result.records
    assert r1["id"] == "a" and r1["correct"] == [True, False, False, True]
    assert r1["extracted"] == ["0.5", "3", "3", "1/2"]
    assert r2["extracted"][:3] == ["12", None, None] and r2["correct"] == [True, False, False, False]
    assert r2["truncated"] == [False, True, False, False]
    m = result.metrics
    assert set(m) == set(METRICS)
    assert m["avg_at_k"] == pytest.approx((2 / 4 + 1 / 4) / 2)
    assert m["pass_at_k"] == 1.0  # every problem has a correct sample among its 4
    assert m["maj_at_k"] == pytest.approx((0.5 + 0.5) / 2)
    assert m["k"] == 4
    assert m["truncated_frac"] == pytest.approx(1 / 8)


def test_instruction_reaches_the_generator_and_kwargs_pass_through():
    gen = Scripted({"q\nBox it.": ["\\boxed{1}"]})
    evaluate_benchmark(gen, "toy", [Problem(prompt="q", answer="1")], SamplingParams(n=1), instruction="Box it.",
                       torch_generator="stream")
    prompts, params, kwargs = gen.calls[0]
    assert prompts == ["q\nBox it."] and params.n == 1 and kwargs == {"torch_generator": "stream"}


def test_summarize_pass_at_k_uses_each_problems_samples():
    records = [{"correct": [True, False], "extracted": ["1", "2"], "num_tokens": [3, 5], "truncated": [False, False]},
               {"correct": [False, False], "extracted": ["1", "1"], "num_tokens": [1, 1], "truncated": [False, False]}]
    m = summarize(records)
    assert m["pass_at_k"] == pytest.approx(0.5) and m["avg_at_k"] == pytest.approx(0.25)
    assert m["mean_tokens"] == pytest.approx(2.5) and math.isclose(m["maj_at_k"], 0.25)  # tie 1-1 on the first


def test_empty_benchmark_is_an_error():
    with pytest.raises(ValueError, match="toy"):
        evaluate_benchmark(Scripted({}), "toy", [], SamplingParams())
