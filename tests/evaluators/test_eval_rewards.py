"""Tests for evaluators.rewards: the answer reward (= evaluators.verifier.verify_answer) on the
trainers' tag format, SSPO format levels, thread safety, and that the built-in synthetic task's
rewards are those of the earlier in-process reward (frozen below as _legacy_answer_reward)."""

import random
import re
import threading
import time
from fractions import Fraction

import pytest

from evaluators import verifier
from evaluators.rewards import RewardConfig, answer_reward, compute_reward, format_reward
from evaluators.tasks import VOCAB_CHARS, make_split
from evaluators.verifier import answers_equivalent, extract_final_answer


@pytest.mark.parametrize("response,expected", [
    ("<think>x</think><answer> 33 </answer>", "33"),
    ("<answer>1</answer> then <answer>2</answer>", "2"),          # last block wins
    ("<answer>5</answer> <answer>6", "5"),                         # last *complete* block
    ("<answer>1<answer>2</answer>", "2"),
    ("<answer></answer>", ""),
    ("no tags 33", None),
    ("<answer>33", None),
    ("33</answer>", None),
])
def test_extract_answer(response, expected):
    assert extract_final_answer(response) == expected


@pytest.mark.parametrize("pred,gold", [
    ("33", "33"), (" 33 ", "33"), ("3.0", "3"), ("3", "3.00"), ("1/2", "0.5"), ("0.5", "1/2"),
    ("-4", "-4.0"), ("+7", "7"), ("1,000", "1000"), (".5", "0.5"), ("2/4", "1/2"),
    ("\\frac{1}{2}", "0.5"), ("\\frac{66}{2}", "33"), ("x+1", "1+x"), ("\\sqrt{4}", "2"),
])
def test_equivalent(pred, gold):
    assert answers_equivalent(pred, gold)


@pytest.mark.parametrize("pred,gold", [
    ("34", "33"), ("0.333", "1/3"), ("", "0"), ("abc", "33"), ("1,2", "12"), ("3.1", "3"),
    ("1/0", "0"), ("-33", "33"), ("\\frac{1}{3}", "0.5"),
])
def test_not_equivalent(pred, gold):
    assert not answers_equivalent(pred, gold)


# ---- the time bound is the verifier child's timeout (tests/evaluators/test_eval_verifier.py); these
# are the inputs the earlier in-process reward refused up front to bound sympy's time. ----

EXPENSIVE = ["9^9^9^9", "2^{99999999}", "100000!", "\\fact{100000}", "9" * 5000, "x" * 10_000,
             "3" + "+0" * 70]  # the last is equal to 3, but a plain-text answer over PLAIN_MAX_CHARS


@pytest.mark.parametrize("pred", EXPENSIVE, ids=lambda p: p[:12])
def test_expensive_inputs_are_false_within_the_bound(pred):
    verifier._WORKER.compare("1", "1", 60)  # start-up is not part of the bound
    start = time.monotonic()
    assert answers_equivalent(pred, "3", timeout_s=1.0) is False
    assert time.monotonic() - start < 10


def test_cheap_symbolic_input_goes_through():
    assert answers_equivalent("3+0+0", "3") is True
    assert answers_equivalent("2^{10}", "1024") is True
    assert answers_equivalent("2^{2^{2}}", "16") is True  # towers are no longer refused up front
    assert answers_equivalent("2^{2^{2}}", "8") is False


def test_exponent_notation_is_not_a_number(monkeypatch):
    """Fraction('1e999999999') would build a 10^9-digit integer: the number path refuses exponents,
    so the string reaches math-verify as text, which reads it as the symbolic 1*E*999999999
    (Euler's number, not 10^999999999) and finds it unequal without evaluating it."""
    seen = []
    from evaluators import answer_extraction  # where numbers are parsed

    real = answer_extraction.Fraction

    def fraction(s, *args):
        seen.append(s)
        return real(s, *args)

    monkeypatch.setattr(answer_extraction, "Fraction", fraction)
    assert answers_equivalent("1e999999999", "3") is False
    assert "1e999999999" not in seen


def test_answer_reward():
    assert answer_reward("<think>a</think><answer>33</answer>", "33") == 1.0
    assert answer_reward("<think>a</think><answer>32</answer>", "33") == 0.0
    assert answer_reward("<think>a</think>33", "33") == 0.0  # no final answer, no credit
    assert answer_reward("<think>a</think>so it is \\boxed{33}", "33") == 1.0  # other answer forms count
    assert answer_reward("17 + 16 = 33\n#### 33", "33") == 1.0
    assert answer_reward("<think>a</think><answer>\\boxed{\\frac{66}{2}}</answer>", "\\boxed{33}") == 1.0


@pytest.mark.parametrize("response,level", [
    # 1.0: the full template, whitespace around the whole and between the blocks allowed
    ("<think>7*3=21 12+21=33</think><answer>33</answer>", 1.0),
    ("  \n<think>a</think> \n <answer>33</answer>\n", 1.0),
    ("<think></think><answer></answer>", 1.0),
    # 0.5: both edges right, interior wrong
    ("<think>a</think>junk<answer>33</answer>", 0.5),
    ("<think>a<answer>33</answer>", 0.5),                        # missing </think>
    ("<think>a</think><answer>1</answer><answer>2</answer>", 0.5),  # duplicate answer block
    ("<think>a</think><think>b</think><answer>33</answer>", 0.5),
    ("<think>33</answer>", 0.5),
    # 0.25: exactly one edge right
    ("<think>a</think><answer>33</answer> trailing", 0.25),
    ("<think>a</think>33", 0.25),
    ("leading <think>a</think><answer>33</answer>", 0.25),
    ("<answer>33</answer>", 0.25),
    # 0.0: neither edge
    ("33", 0.0),
    ("", 0.0),
    ("</think><answer>33</answer> x", 0.0),
    ("<answer>33</answer><think>a</think>", 0.0),
])
def test_format_reward_levels(response, level):
    assert format_reward(response) == level


def test_compute_reward_config():
    good = "<think>3+4=7</think><answer>7</answer>"
    assert compute_reward(good, "7", RewardConfig()) == {"reward": 2.0, "answer": 1.0, "format": 1.0}
    assert compute_reward(good, "8", RewardConfig()) == {"reward": 1.0, "answer": 0.0, "format": 1.0}
    assert compute_reward(good, "7", RewardConfig(format=False))["reward"] == 1.0
    assert compute_reward(good, "8", RewardConfig(answer=False)) == {
        "reward": 1.0, "answer": 0.0, "format": 1.0}
    assert compute_reward(good, "7", RewardConfig(answer=False, format=False))["reward"] == 0.0
    assert compute_reward("<think>x", "7", RewardConfig())["reward"] == 0.25


def test_math_verify_path_from_worker_thread():
    """math-verify's default timeouts use signal.alarm, which raises outside the main thread; the
    verifier runs it in a child process, so any thread may call it."""
    results, errors = [], []

    def work():
        try:
            results.append(answers_equivalent("\\frac{1}{2}", "0.5"))
            results.append(answers_equivalent("\\frac{1}{3}", "0.5"))
            results.append(answer_reward("<think>a</think><answer>\\frac{66}{2}</answer>", "33"))
        except BaseException as e:  # noqa: BLE001 - surface anything to the main thread
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive()
    assert errors == []
    assert results == [True, False, 1.0]


def test_math_verify_defaults_really_fail_in_threads():
    """Guards the premise of the test above: if this stops failing, math-verify changed."""
    from math_verify import parse

    errors = []
    t = threading.Thread(target=lambda: errors.append(_try(lambda: parse("$1/2$"))))
    t.start()
    t.join(timeout=60)
    assert errors and isinstance(errors[0], ValueError)


def _try(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    return None


# ---- the built-in synthetic task: rewards identical to the earlier in-process reward ----

_LEGACY_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)(/\d+)?")
_LEGACY_THOUSANDS = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")


def _legacy_answer_reward(response: str, gold: str) -> float:
    """The answer reward before evaluators.verifier (frozen copy): the last <answer> block, exact
    rationals for plain numbers, else in-process math-verify behind a cheap-input heuristic."""
    end = response.rfind("</answer>")
    start = response.rfind("<answer>", 0, end) if end >= 0 else -1
    if start < 0:
        return 0.0
    pred, gold = response[start + len("<answer>"):end].strip(), gold.strip()

    def number(s):
        if _LEGACY_THOUSANDS.fullmatch(s):
            s = s.replace(",", "")
        if len(s) > 64 or not _LEGACY_NUMBER.fullmatch(s):
            return None
        try:
            return Fraction(s)
        except (ValueError, ZeroDivisionError):
            return None

    def cheap(s):
        if len(s) > 128 or "!" in s or "\\fact" in s or s.count("^") + s.count("**") > 1:
            return False
        return not re.search(r"\d{20,}", s) and not re.search(r"(\^|\*\*)\s*\{?\s*\d{4,}", s)

    if not pred:
        return 0.0
    if pred == gold:
        return 1.0
    p, g = number(pred), number(gold)
    if p is not None and g is not None:
        return float(p == g)
    if not (cheap(pred) and cheap(gold)):
        return 0.0
    from math_verify import parse, verify

    wrap = lambda s: s if "$" in s or "\\boxed" in s else f"${s}$"  # noqa: E731
    try:
        gp, pp = parse(wrap(gold), parsing_timeout=None), parse(wrap(pred), parsing_timeout=None)
        return float(bool(gp and pp and verify(gp, pp, timeout_seconds=None)))
    except Exception:  # noqa: BLE001
        return 0.0


def _synthetic_responses(seed: int = 0):
    """Reference solutions, corrupted ones, and tiny-model-like garbage over VOCAB_CHARS + tags."""
    rng = random.Random(seed)
    pieces = list(VOCAB_CHARS) + ["<think>", "</think>", "<answer>", "</answer>", "<eos>", "**"] + [
        str(i) for i in range(40)]
    problems = [p for split in ("easy", "medium", "hard") for p in make_split(split, 40, seed=seed)]
    for p in problems:
        yield p.solution, p.answer
        chars = list(p.solution)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice(VOCAB_CHARS)
        yield "".join(chars), p.answer
        for _ in range(4):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))[:80]
            if rng.random() < 0.6:
                inner = rng.choice([p.answer, f" {p.answer} ", f"({p.answer})", f"{p.answer}+0", f"0{p.answer}",
                                    f"{p.answer}**1", "".join(rng.choice(VOCAB_CHARS) for _ in range(rng.randint(0, 12)))])
                cut = rng.randint(0, len(text))
                text = text[:cut] + f"<answer>{inner}</answer>" + text[cut:]
            yield text, p.answer
    # the legacy heuristic's cut-offs, on strings the synthetic vocabulary can spell
    for inner in ["0" * 25 + " 5", "2**2**2", "5**1000", "5 " + "+0" * 70, "1" * 70]:
        yield f"<think>a</think><answer>{inner}</answer>", "5"


@pytest.mark.slow
def test_synthetic_task_rewards_match_the_legacy_reward():
    cases = list(_synthetic_responses())
    assert len(cases) > 500
    got = [answer_reward(r, g) for r, g in cases]
    want = [_legacy_answer_reward(r, g) for r, g in cases]
    assert [(c, a, b) for c, a, b in zip(cases, got, want) if a != b] == []
    assert 100 < sum(got) < len(cases) - 100  # both outcomes well represented
