"""Tests for evaluators.tasks: determinism, grading, train/test separation, vocabulary, loader."""

import re

import pytest

from evaluators.rewards import RewardConfig, compute_reward
from evaluators.tasks import (
    BENCHMARKS, SPLITS, VOCAB_CHARS, Problem, is_test_prompt, make_split,
)

N = 200


def _n_ops(prompt: str) -> int:
    return sum(prompt.count(op) for op in "+-*")


def _expr(prompt: str) -> str:
    m = re.fullmatch(r"Q: (.+)=\?", prompt)
    assert m, prompt
    return m.group(1)


@pytest.mark.parametrize("name", SPLITS)
def test_deterministic_and_seed_dependent(name):
    a = make_split(name, N, seed=0)
    assert a == make_split(name, N, seed=0)
    b = make_split(name, N, seed=1)
    assert [p.prompt for p in a] != [p.prompt for p in b]
    assert len(a) == N and len({p.prompt for p in a}) == N  # unique within the split


def test_prefix_stability_and_benchmark_field():
    # Asking for more problems extends, does not reshuffle, the smaller split.
    assert make_split("hard", 50, seed=3) == make_split("hard", 120, seed=3)[:50]
    for name in SPLITS:
        assert {p.benchmark for p in make_split(name, 20, seed=0)} == {name}


@pytest.mark.parametrize("name", SPLITS)
def test_reference_solutions_are_correct_and_earn_full_reward(name):
    for p in make_split(name, N, seed=7):
        assert int(p.answer) == eval(_expr(p.prompt))  # noqa: S307 - our own generated digits/ops
        assert compute_reward(p.solution, p.answer, RewardConfig()) == {
            "reward": 2.0, "answer": 1.0, "format": 1.0}
        # Each reasoning step is a true equation, one per operator.
        steps = re.fullmatch(r"<think>(.*)</think><answer>(.*)</answer>", p.solution).group(1).split(" ")
        assert len(steps) == _n_ops(p.prompt)
        for step in steps:
            lhs, rhs = step.split("=")
            assert eval(lhs) == int(rhs)  # noqa: S307
        assert steps[-1].endswith("=" + p.answer)


@pytest.mark.parametrize("name", SPLITS)
def test_lengths_values_and_vocabulary(name):
    vocab = set(VOCAB_CHARS)
    for p in make_split(name, N, seed=11):
        assert len(p.prompt) < 24 and len(p.solution) < 64
        assert 0 <= int(p.answer) <= 999
        for text in (p.prompt, p.solution, p.answer):
            assert set(text) <= vocab, (text, set(text) - vocab)


def test_vocab_is_sorted_unique_and_minimal():
    assert VOCAB_CHARS == "".join(sorted(set(VOCAB_CHARS)))
    used = set()
    for name in SPLITS:
        for p in make_split(name, 200, seed=0):
            used |= set(p.prompt + p.solution)
    # Every declared character is actually used somewhere (no dead vocabulary entries).
    assert used == set(VOCAB_CHARS)


def test_difficulty_is_graded():
    ops = {name: {_n_ops(p.prompt) for p in make_split(name, N, seed=0)} for name in BENCHMARKS}
    assert ops == {"easy": {1}, "medium": {2}, "hard": {3}}
    assert not any("(" in p.prompt for p in make_split("medium", N, seed=0))
    assert any("(" in p.prompt for p in make_split("hard", N, seed=0))
    mean_len = {name: sum(len(p.solution) for p in make_split(name, N, seed=0)) / N
                for name in BENCHMARKS}
    assert mean_len["easy"] < mean_len["medium"] < mean_len["hard"]


def test_train_mix():
    train = make_split("train", 1000, seed=0)
    counts = {d: sum(p.difficulty == d for p in train) for d in BENCHMARKS}
    assert all(200 <= c <= 500 for c in counts.values()), counts
    only_easy = make_split("train", 100, seed=0, mix={"easy": 1.0})
    assert {p.difficulty for p in only_easy} == {"easy"}
    with pytest.raises(ValueError, match="mix"):
        make_split("train", 10, seed=0, mix={"impossible": 1.0})
    with pytest.raises(ValueError, match="train split only"):
        make_split("easy", 10, seed=0, mix={"easy": 1.0})


@pytest.mark.parametrize("seed", [0, 1])
def test_no_train_test_overlap(seed):
    train = {p.prompt for p in make_split("train", 3000, seed=seed)}
    for name in BENCHMARKS:
        test = {p.prompt for p in make_split(name, 200, seed=seed)}
        assert not train & test
        assert all(is_test_prompt(q) for q in test)
    assert not any(is_test_prompt(q) for q in train)


def test_bad_requests():
    with pytest.raises(ValueError, match="unknown split"):
        make_split("valid", 3, seed=0)
    with pytest.raises(ValueError, match="unique"):
        make_split("easy", 5000, seed=0)  # about 250 easy test prompts exist
    assert make_split("easy", 0, seed=0) == []


def test_generated_problems_have_no_id_or_messages():
    for name in SPLITS:
        for p in make_split(name, 5, seed=0):
            assert p.id == "" and p.messages == ()
    p = Problem("Q", "1", id="x-1", messages=(("user", "Q"),))
    assert (p.prompt, p.answer, p.solution, p.benchmark, p.difficulty) == ("Q", "1", "", "", "")
