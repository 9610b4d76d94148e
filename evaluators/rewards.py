"""Verifiable rewards: answer correctness + SSPO's graded format reward (SSPO App. A).

    r = r_answer + r_format,  r_answer = 1[final answer equivalent to gold],  r_format in {1, .5, .25, 0}

    from evaluators.rewards import RewardConfig, compute_reward
    compute_reward("<think>3+4=7</think><answer>7</answer>", "7", RewardConfig())
    # {'reward': 2.0, 'answer': 1.0, 'format': 1.0}

The answer reward is evaluators.verifier.verify_answer: the final answer is the last
<answer>...</answer> block, else the last \\boxed{}, else GSM8K's '#### n', else "the answer is X";
equivalence is exact for plain numbers (in-process, thousands of calls per second) and
math-verify for LaTeX / symbolic answers, in a child process with a hard time bound
(verifier.DEFAULT_TIMEOUT_S; past it: 0). Safe to call from any thread (Ray actors, thread pools).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evaluators.verifier import verify_answer

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
_TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)
# <think>X</think> <answer>Y</answer>, whitespace allowed only between the two blocks.
_TEMPLATE = re.compile(r"<think>(.*)</think>\s*<answer>(.*)</answer>", re.DOTALL)


@dataclass(frozen=True)
class RewardConfig:
    answer: bool = True
    """Add the answer reward (1 if the extracted answer is equivalent to the gold, else 0)."""
    format: bool = True
    """Add SSPO's format reward (1 / 0.5 / 0.25 / 0, see format_reward)."""


def answer_reward(response: str, gold: str) -> float:
    """1.0 if the response's final answer is equivalent to `gold` (evaluators.verifier.verify_answer),
    else 0.0 (also when the response has no final answer, e.g. a bare '33')."""
    return 1.0 if verify_answer(response, gold) else 0.0


def format_reward(response: str) -> float:
    """SSPO App. A format reward for the template <think>...</think><answer>...</answer>.

    The paper only names the levels (fully correct format / correct edge tokens (both) /
    correct edge (either) / otherwise). Our precise reading, on the response with leading and
    trailing whitespace stripped:

    1.0   the whole string is `<think>X</think>` + optional whitespace + `<answer>Y</answer>`,
          where X and Y contain none of the four tags (each tag exactly once, in order);
          X and Y may be empty (an empty answer still earns 0 answer reward).
    0.5   not 1.0, but it starts with `<think>` AND ends with `</answer>`.
    0.25  exactly one of: starts with `<think>`, ends with `</answer>`.
    0.0   neither edge is correct.
    """
    s = response.strip()
    m = _TEMPLATE.fullmatch(s)
    if m and not any(tag in m.group(1) or tag in m.group(2) for tag in _TAGS):
        return 1.0
    edges = int(s.startswith(THINK_OPEN)) + int(s.endswith(ANSWER_CLOSE))
    return {2: 0.5, 1: 0.25, 0: 0.0}[edges]


def compute_reward(response: str, gold: str, cfg: RewardConfig) -> dict[str, float]:
    """{'reward': sum of the enabled parts, 'answer': ..., 'format': ...}.

    Both parts are always computed and returned (so accuracy can be logged under a format-only
    reward, and vice versa); only the enabled ones are summed into 'reward'.
    """
    answer = answer_reward(response, gold)
    fmt = format_reward(response)
    reward = (answer if cfg.answer else 0.0) + (fmt if cfg.format else 0.0)
    return {"reward": reward, "answer": answer, "format": fmt}
