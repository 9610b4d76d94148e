"""Synthetic verifiable arithmetic tasks, deterministic from a seed (files of problems: evaluators/loaders.py).

Every problem is an integer expression over + - * (and parentheses on `hard`):

    prompt    Q: 12+7*3=?
    solution  <think>7*3=21 12+21=33</think><answer>33</answer>
    answer    33

The reasoning is one `a op b = c` step per operator, in evaluation order (post-order of the
expression tree: innermost / highest-precedence first, left to right), so a policy can lengthen
or collapse its reasoning during training. Benchmarks are graded by the number of operators:

    easy    1 op  (+ or -), operands 0..40           Q: 12+7=?
    medium  2 ops (+ - *), no parentheses            Q: 12+7*3=?
    hard    3 ops (+ - *), parentheses where needed  Q: (12+7)*3-5=?

`train` mixes the three (weights `TRAIN_MIX` unless `mix=` is given). All values (operands,
intermediate results, answers) are non-negative and <= 999; prompts are < 24 characters and
solutions < 64 (generation rejects and redraws otherwise). Every character of every generated
string is in `VOCAB_CHARS`, the fixed vocabulary of the trainer's character-level tokenizer.

Train/test separation does not depend on `n`: a prompt is reserved for testing iff a stable hash
of it falls in a fixed 1/`TEST_BUCKETS` bucket. Test splits draw only reserved prompts, `train`
never does, so no test prompt is ever a train prompt, for any seeds and sizes. Prompts are unique
within a split.

    from evaluators.tasks import make_split
    for p in make_split("medium", 3, seed=0):   # three problems of a split: the same three for seed 0
        print(p.prompt, p.solution, p.answer)
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

BENCHMARKS: tuple[str, ...] = ("easy", "medium", "hard")
"""Test benchmark names, easiest first."""

SPLITS: tuple[str, ...] = ("train",) + BENCHMARKS
"""Every name `make_split` accepts."""

TRAIN_MIX: Mapping[str, float] = MappingProxyType({"easy": 0.3, "medium": 0.4, "hard": 0.3})
"""Default difficulty weights of the train split (read-only; pass `mix=` to change them)."""

VOCAB_CHARS: str = " ()*+-/0123456789:<=>?Qaehiknrstw"
"""Every character a generated prompt, solution or answer can contain (sorted, no duplicates)."""

TEST_BUCKETS: int = 10
"""A prompt is reserved for test splits iff its hash is 0 modulo this (10% of the space)."""

MAX_PROMPT_CHARS = 23
MAX_SOLUTION_CHARS = 63
MAX_VALUE = 999
EASY_MAX_OPERAND = 40  # easy operands 0..40: small enough that the tiny base policy solves some
LEAF_MAX = 20  # other +/- operands 1..20, multiplication operands 2..9
MAX_CONSECUTIVE_MISSES = 20_000
_PREC = {"+": 1, "-": 1, "*": 2}
_N_OPS = {"easy": 1, "medium": 2, "hard": 3}


@dataclass(frozen=True)
class Problem:
    prompt: str
    """What the policy is conditioned on, e.g. 'Q: 12+7*3=?'."""
    answer: str
    """Gold answer string compared by evaluators.verifier.verify_answer, e.g. '33'."""
    solution: str = ""
    """A reference response in the exact response format ('' when a loaded file has none)."""
    benchmark: str = ""
    """Split or benchmark the problem belongs to ('train', 'easy', ...; file stem for JSONL)."""
    difficulty: str = ""
    """Generator difficulty ('easy' / 'medium' / 'hard'); '' for loaded problems."""
    id: str = ""
    """Stable problem id of a loaded file (its id / unique_id / idx, else '<benchmark>-<row>');
    '' for generated problems."""
    messages: tuple[tuple[str, str], ...] = ()
    """(role, content) pairs when the source row had a chat-format prompt (verl parquet), whose
    last user content is `prompt`; () otherwise."""


# --------------------------------------------------------------------------- expression trees
# A tree is either an int (a leaf) or a tuple (op, left, right).

def _value(tree) -> int:
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    a, b = _value(left), _value(right)
    return a + b if op == "+" else a - b if op == "-" else a * b


def _render(tree) -> str:
    """Infix with the minimal parentheses under which standard precedence and left-to-right
    evaluation rebuild exactly this tree (so the steps match how a reader would evaluate it)."""
    if isinstance(tree, int):
        return str(tree)
    op, left, right = tree
    ls, rs = _render(left), _render(right)
    if not isinstance(left, int) and _PREC[left[0]] < _PREC[op]:
        ls = f"({ls})"
    if not isinstance(right, int) and _PREC[right[0]] <= _PREC[op]:
        rs = f"({rs})"
    return f"{ls}{op}{rs}"


def _steps(tree, out: list[str]) -> int:
    """Append one 'a op b=c' step per operator in post-order; return the tree's value."""
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    a, b = _steps(left, out), _steps(right, out)
    c = _value((op, a, b))
    out.append(f"{a}{op}{b}={c}")
    return c


def _all_values(tree) -> list[int]:
    if isinstance(tree, int):
        return [tree]
    return _all_values(tree[1]) + _all_values(tree[2]) + [_value(tree)]


def _random_tree(rng: random.Random, n_ops: int, parent_op: str | None = None):
    if n_ops == 0:
        # Multiplication operands stay single-digit so products stay small.
        return rng.randint(2, 9) if parent_op == "*" else rng.randint(1, LEAF_MAX)
    op = rng.choice("+-*")
    n_left = rng.randint(0, n_ops - 1)
    return (op, _random_tree(rng, n_left, op), _random_tree(rng, n_ops - 1 - n_left, op))


def _draw(rng: random.Random, difficulty: str):
    """One candidate tree for `difficulty`, or None when it breaks a constraint (caller redraws)."""
    if difficulty == "easy":
        a, b = rng.randint(0, EASY_MAX_OPERAND), rng.randint(0, EASY_MAX_OPERAND)
        tree = ("+", a, b) if rng.random() < 0.5 else ("-", max(a, b), min(a, b))
    else:
        tree = _random_tree(rng, _N_OPS[difficulty])
        if difficulty == "medium" and "(" in _render(tree):
            return None
    if any(v < 0 or v > MAX_VALUE for v in _all_values(tree)):
        return None
    return tree


def _problem(tree, benchmark: str, difficulty: str) -> Problem:
    steps: list[str] = []
    answer = str(_steps(tree, steps))
    return Problem(
        prompt=f"Q: {_render(tree)}=?",
        answer=answer,
        solution=f"<think>{' '.join(steps)}</think><answer>{answer}</answer>",
        benchmark=benchmark,
        difficulty=difficulty,
    )


def is_test_prompt(prompt: str) -> bool:
    """True iff `prompt` is reserved for test splits (stable across processes and seeds)."""
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % TEST_BUCKETS == 0


def _rng(name: str, seed: int) -> random.Random:
    digest = hashlib.sha256(f"{name}:{seed}".encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def make_split(name: str, n: int, seed: int,
               mix: Mapping[str, float] | None = None) -> list[Problem]:
    """`n` unique problems of split `name` ('train' or one of BENCHMARKS), deterministic in `seed`.

    `mix` (train only) maps difficulty -> weight; default TRAIN_MIX. Raises ValueError for an
    unknown name/difficulty or when the space cannot supply `n` unique prompts (easy holds about
    about 2.3k train and 250 test prompts; medium and hard are far larger).
    """
    if name not in SPLITS:
        raise ValueError(f"unknown split {name!r}; expected one of {SPLITS}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if name == "train":
        mix = dict(TRAIN_MIX if mix is None else mix)
        bad = sorted(set(mix) - set(BENCHMARKS))
        if bad or not mix or any(w < 0 for w in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError(f"bad train mix {mix}: keys from {BENCHMARKS}, weights >= 0, sum > 0")
    elif mix is not None:
        raise ValueError(f"mix applies to the train split only, not {name!r}")
    rng = _rng(name, seed)
    want_test = name != "train"
    seen: set[str] = set()
    out: list[Problem] = []
    misses = 0  # consecutive draws that added nothing; many in a row = the space is exhausted
    while len(out) < n:
        misses += 1
        if misses > MAX_CONSECUTIVE_MISSES:
            raise ValueError(
                f"could only draw {len(out)} unique {name!r} problems of {n} requested "
                f"(seed {seed}); ask for fewer")
        if want_test:
            difficulty = name
        else:
            difficulty = rng.choices(list(mix), weights=list(mix.values()))[0]
        tree = _draw(rng, difficulty)
        if tree is None:
            continue
        p = _problem(tree, name, difficulty)
        if (p.prompt in seen or is_test_prompt(p.prompt) != want_test
                or len(p.prompt) > MAX_PROMPT_CHARS or len(p.solution) > MAX_SOLUTION_CHARS):
            continue
        seen.add(p.prompt)
        out.append(p)
        misses = 0
    return out
