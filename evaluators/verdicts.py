"""Per-problem verdicts of one evaluation, as a compact JSON artifact: which samples got each problem right.

    from evaluators.verdicts import from_results, dumps, loads
    text = dumps(step, {"easy": result_easy.records, "medium": ...})   # a few KB per evaluation
    v = loads(text)              # {"easy": BenchmarkVerdicts(ids=[...], correct=[[1, 0, 1, 1], ...]), ...}
    v["easy"].fractions          # per-problem share of samples judged correct (Avg@k's terms)

Format ``rlvr-verdicts/1``: ``{"format", "step", "benchmarks": {name: {"ids": [...], "correct": [...]}}}``
where ``correct[i]`` is problem i's samples as a string of 0/1 (sample order kept). A problem's id
is the stable id of its source row (evaluators.tasks.Problem.id), or ``<benchmark>-<index>`` for a
generated split, whose problems are the same for the same `data.seed` and `data.eval_size`: every
method of a study is then evaluated on the same ids, which the paired statistics
(dashboards/stats/paired_stats.py) rely on. MLflow artifact path: contract.metrics.verdicts_artifact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

FORMAT = "rlvr-verdicts/1"


@dataclass
class BenchmarkVerdicts:
    ids: list[str]
    correct: list[list[int]]

    @property
    def fractions(self) -> list[float]:
        """Per problem: the share of its samples judged correct (their mean is Avg@k)."""
        return [sum(c) / len(c) if c else 0.0 for c in self.correct]


def problem_ids(benchmark: str, ids: Iterable[str]) -> list[str]:
    """Stable ids: a problem's own id, else ``<benchmark>-<index>`` (generated splits)."""
    return [pid or f"{benchmark}-{i}" for i, pid in enumerate(ids)]


def dumps(step: int, records: dict[str, list[dict]]) -> str:
    """The artifact text of one evaluation from evaluators.scoring records ({benchmark: records})."""
    body = {}
    for name, recs in records.items():
        body[name] = {"ids": problem_ids(name, (r.get("id", "") for r in recs)),
                      "correct": ["".join("1" if ok else "0" for ok in r["correct"]) for r in recs]}
    return json.dumps({"format": FORMAT, "step": int(step), "benchmarks": body}, separators=(",", ":"))


def loads(text: str) -> dict[str, BenchmarkVerdicts]:
    """{benchmark: verdicts} of an artifact; ValueError on another format."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} document (format {doc.get('format') if isinstance(doc, dict) else None!r})")
    out = {}
    for name, b in doc["benchmarks"].items():
        if len(b["ids"]) != len(b["correct"]):
            raise ValueError(f"{name}: {len(b['ids'])} ids but {len(b['correct'])} verdict strings")
        out[name] = BenchmarkVerdicts(list(b["ids"]), [[int(ch) for ch in s] for s in b["correct"]])
    return out
