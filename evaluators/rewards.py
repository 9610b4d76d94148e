"""Verifiable rewards: answer correctness + SSPO's graded format reward (SSPO App. A).

    r = r_answer + r_format,  r_answer = 1[extracted answer == gold],  r_format in {1, .5, .25, 0}

    from evaluators.rewards import RewardConfig, compute_reward
    compute_reward("<think>3+4=7</think><answer>7</answer>", "7", RewardConfig())
    # {'reward': 2.0, 'answer': 1.0, 'format': 1.0}

Safe to call from any thread (Ray actors, thread pools): math-verify is called with its
signal.alarm timeouts disabled (`parsing_timeout=None`, `timeout_seconds=None`; signals only work
in the main thread), and its running time is bounded here instead by only handing it short
strings without exponent towers or factorials (see `_cheap_for_sympy`). Its one-off "timeout is disabled" warning is silenced.

Self-check: python -m evaluators.rewards
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from fractions import Fraction

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
_TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)
# <think>X</think> <answer>Y</answer>, whitespace allowed only between the two blocks.
_TEMPLATE = re.compile(r"<think>(.*)</think>\s*<answer>(.*)</answer>", re.DOTALL)
# Plain numbers only: integers, decimals, a/b. No exponents (Fraction('1e999999') is costly).
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)(/\d+)?")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")

MAX_NUMERIC_CHARS = 64
"""Strings longer than this are never parsed as numbers."""
MAX_VERIFY_CHARS = 128
"""Strings longer than this never reach math-verify (bounds sympy's running time)."""


@dataclass(frozen=True)
class RewardConfig:
    answer: bool = True
    """Add the answer reward (1 if the extracted answer is equivalent to the gold, else 0)."""
    format: bool = True
    """Add SSPO's format reward (1 / 0.5 / 0.25 / 0, see format_reward)."""


def extract_answer(response: str) -> str | None:
    """The stripped text of the last complete <answer>...</answer> block, or None.

    "Last complete block": the last '</answer>' and the nearest '<answer>' before it, so
    '<answer>5</answer> <answer>6' gives '5' and '<answer>1<answer>2</answer>' gives '2'.
    """
    end = response.rfind(ANSWER_CLOSE)
    if end < 0:
        return None
    start = response.rfind(ANSWER_OPEN, 0, end)
    if start < 0:
        return None
    return response[start + len(ANSWER_OPEN):end].strip()


def _to_number(s: str) -> Fraction | None:
    s = s.strip()
    if _THOUSANDS.fullmatch(s):  # '1,000' -> '1000'; '1,2' stays (a tuple, not a number)
        s = s.replace(",", "")
    if len(s) > MAX_NUMERIC_CHARS or not _NUMBER.fullmatch(s):
        return None
    try:
        return Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None


def _cheap_for_sympy(s: str) -> bool:
    """Heuristic bound on sympy's time: short, at most one power, no factorial, no huge literal.
    (Exponent towers like 9^9^9 or 1000000! make sympy evaluate gigantic integers.)"""
    if len(s) > MAX_VERIFY_CHARS or "!" in s or "\\fact" in s:
        return False
    if s.count("^") + s.count("**") > 1:
        return False
    return not re.search(r"\d{20,}", s) and not re.search(r"(\^|\*\*)\s*\{?\s*\d{4,}", s)


def _math_verify_equal(pred: str, gold: str) -> bool:
    if not (_cheap_for_sympy(pred) and _cheap_for_sympy(gold)):
        return False
    from math_verify import parse, verify  # deferred: imports sympy (~0.4 s)

    # We disable its signal timeouts on purpose (see the module docstring): silence its one-off warning.
    logging.getLogger("math_verify").setLevel(logging.ERROR)

    def wrap(s: str) -> str:  # math-verify's LaTeX extractor wants $...$ (or \boxed{})
        return s if "$" in s or "\\boxed" in s else f"${s}$"

    try:
        gold_parsed = parse(wrap(gold), parsing_timeout=None)
        pred_parsed = parse(wrap(pred), parsing_timeout=None)
        if not gold_parsed or not pred_parsed:
            return False
        return bool(verify(gold_parsed, pred_parsed, timeout_seconds=None))
    except Exception:  # math-verify/sympy raise many types on odd input; odd input is wrong
        return False


def answers_equivalent(pred: str, gold: str) -> bool:
    """Exact match after strip; else, if both parse as plain numbers (int, decimal, a/b;
    thousands commas dropped), exact rational equality ('3.0' == '3', '1/2' == '0.5',
    '0.333' != '1/3'); else math-verify (LaTeX / symbolic, e.g. '\\frac{66}{2}' == '33')."""
    pred, gold = pred.strip(), gold.strip()
    if not pred:
        return False
    if pred == gold:
        return True
    p_num, g_num = _to_number(pred), _to_number(gold)
    if p_num is not None and g_num is not None:
        return p_num == g_num
    return _math_verify_equal(pred, gold)


def answer_reward(response: str, gold: str) -> float:
    """1.0 if the response's extracted answer is equivalent to `gold`, else 0.0 (also when no
    <answer>...</answer> block is present)."""
    pred = extract_answer(response)
    return 1.0 if pred is not None and answers_equivalent(pred, gold) else 0.0


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


if __name__ == "__main__":
    cfg = RewardConfig()
    for resp, gold in [
        ("<think>7*3=21 12+21=33</think><answer>33</answer>", "33"),
        ("<think>7*3=21</think> <answer>33.0</answer>", "33"),
        ("<think>half</think><answer>\\frac{1}{2}</answer>", "0.5"),
        ("<think>7*3=21 12+21=33</think>33", "33"),
        ("33", "33"),
    ]:
        print(f"{resp!r:55s} gold={gold!r:6s} {compute_reward(resp, gold, cfg)}")
