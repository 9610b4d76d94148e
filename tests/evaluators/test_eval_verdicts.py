"""The per-problem verdicts document (evaluators/verdicts.py): round trip, stable ids, size."""

from __future__ import annotations

import json

import pytest

from evaluators.verdicts import FORMAT, dumps, loads, problem_ids


def _records(n: int, k: int, ids=None):
    return [{"id": (ids or [""] * n)[i], "correct": [(i + j) % 3 == 0 for j in range(k)]} for i in range(n)]


def test_round_trip_keeps_every_sample_verdict_and_the_avg_at_k_terms():
    text = dumps(40, {"easy": _records(5, 4), "aime24": _records(3, 2, ids=["a", "b", "c"])})
    v = loads(text)
    assert list(v) == ["easy", "aime24"]
    assert v["easy"].ids == ["easy-0", "easy-1", "easy-2", "easy-3", "easy-4"]  # generated splits: by index
    assert v["aime24"].ids == ["a", "b", "c"]  # loaded files: their own ids
    assert v["easy"].correct[0] == [1, 0, 0, 1]
    assert v["easy"].fractions == [sum(c) / 4 for c in v["easy"].correct]
    assert json.loads(text)["step"] == 40


def test_the_default_studys_evaluation_is_a_few_kilobytes():
    """3 benchmarks x 64 problems x 4 samples (the default study's validation)."""
    text = dumps(200, {b: _records(64, 4) for b in ("easy", "medium", "hard")})
    assert 2_000 < len(text.encode()) < 6_000


def test_other_documents_are_refused():
    with pytest.raises(ValueError, match=FORMAT):
        loads(json.dumps({"format": "something-else"}))
    bad = json.loads(dumps(0, {"easy": _records(2, 1)}))
    bad["benchmarks"]["easy"]["ids"].append("x")
    with pytest.raises(ValueError, match="3 ids but 2"):
        loads(json.dumps(bad))
    assert problem_ids("hard", ["", "q7"]) == ["hard-0", "q7"]
