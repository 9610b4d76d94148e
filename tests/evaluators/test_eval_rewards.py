"""Tests for evaluators.rewards: extraction, equivalence, SSPO format levels, thread safety."""

import threading

import pytest

from evaluators import rewards
from evaluators.rewards import (
    RewardConfig, answer_reward, answers_equivalent, compute_reward, extract_answer, format_reward,
)


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
    assert extract_answer(response) == expected


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


# ---- the time bound: math-verify runs without timeouts (they need signals, see the module
# docstring), so its running time is bounded by never handing it expensive input. These tests check
# that mechanism (what reaches the costly parsers), not wall-clock speed. ----

EXPENSIVE = ["9^9^9^9", "2^{99999999}", "100000!", "\\fact{100000}", "9" * 5000, "x" * 10_000,
             "3" + "+0" * 70]  # the last is equal to 3, but longer than MAX_VERIFY_CHARS


class CostlyCalls:
    """What reached the costly parsers: strings handed to math-verify's parse (sympy), the number
    of verify calls, strings the number path turned into a Fraction. With ``run_real`` off the
    spies only record (so a broken guard makes these tests fail instead of hang)."""

    def __init__(self):
        self.parse: list[str] = []
        self.verify = 0
        self.fraction: list[str] = []
        self.run_real = True


@pytest.fixture
def costly_calls(monkeypatch):
    import math_verify

    calls = CostlyCalls()
    real_parse, real_verify, real_fraction = math_verify.parse, math_verify.verify, rewards.Fraction

    def parse(s, *args, **kwargs):
        calls.parse.append(s)
        return real_parse(s, *args, **kwargs) if calls.run_real else []

    def verify(*args, **kwargs):
        calls.verify += 1
        return real_verify(*args, **kwargs) if calls.run_real else False

    def fraction(s, *args):
        calls.fraction.append(s)
        if not calls.run_real and s != "3":
            raise ValueError("spy: not evaluated")
        return real_fraction(s, *args)

    monkeypatch.setattr(math_verify, "parse", parse)
    monkeypatch.setattr(math_verify, "verify", verify)
    monkeypatch.setattr(rewards, "Fraction", fraction)
    return calls


@pytest.mark.parametrize("pred", EXPENSIVE, ids=lambda p: p[:12])
def test_expensive_inputs_never_reach_sympy(pred, costly_calls):
    costly_calls.run_real = False
    assert answers_equivalent(pred, "3") is False
    # rejected by the guard before any costly parser: only the gold "3" was read (as a number)
    assert costly_calls.parse == [] and costly_calls.verify == 0 and costly_calls.fraction == ["3"]


def test_the_guard_lets_cheap_input_through(costly_calls):
    """Control for the test above: the spies do see math-verify and Fraction when they are used."""
    assert answers_equivalent("3+0+0", "3") is True  # the value of EXPENSIVE[-1], short enough
    assert answers_equivalent("2^{10}", "1024") is True  # one power is allowed
    assert costly_calls.parse == ["$3$", "$3+0+0$", "$1024$", "$2^{10}$"] and costly_calls.verify == 2
    assert answers_equivalent("2^{2^{2}}", "16") is False  # a tower is refused (although 2^4 = 16)
    assert answers_equivalent("1/2", "0.5") is True  # plain numbers: exact rationals, no math-verify
    assert len(costly_calls.parse) == 4 and costly_calls.verify == 2
    assert costly_calls.fraction[-2:] == ["1/2", "0.5"]


def test_exponent_notation_is_not_a_number(costly_calls):
    """Fraction('1e999999999') would build a 10^9-digit integer: the number path refuses exponents,
    so the string reaches math-verify as text, which reads it as the symbolic 1*E*999999999
    (Euler's number, not 10^999999999) and finds it unequal without evaluating it."""
    assert answers_equivalent("1e999999999", "3") is False
    assert "1e999999999" not in costly_calls.fraction
    assert costly_calls.parse == ["$3$", "$1e999999999$"] and costly_calls.verify == 1


def test_answer_reward():
    assert answer_reward("<think>a</think><answer>33</answer>", "33") == 1.0
    assert answer_reward("<think>a</think><answer>32</answer>", "33") == 0.0
    assert answer_reward("<think>a</think>33", "33") == 0.0  # no answer block, no credit


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
    """math-verify's default timeouts use signal.alarm, which raises outside the main thread."""
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
