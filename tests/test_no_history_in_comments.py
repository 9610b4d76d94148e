"""Code and test comments carry no dates and no commit ids: figures with dates live in docs/ (the house rules)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("contract", "tracking_store", "policy", "evaluators", "trainers", "trial_eval", "dashboards", "sweeps",
           "scripts", "benchmarks", "tests")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
COMMIT = re.compile(r"\b(?:commit|at|HEAD)\s+`?[0-9a-f]{7,40}\b")


def history_in_comments(text: str) -> list[tuple[int, str]]:
    """(line, comment) of each comment that names a date or a commit."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT and (DATE.search(token.string) or COMMIT.search(token.string)):
            found.append((token.start[0], token.string))
    return found


def test_comments_name_no_date_and_no_commit():
    files = [p for folder in FOLDERS for p in sorted((REPO / folder).rglob("*.py"))]
    assert len(files) > 200
    found = [f"{p.relative_to(REPO)}:{line}: {text}" for p in files
             for line, text in history_in_comments(p.read_text(encoding="utf-8"))]
    assert not found, "move dated figures and commit ids to docs/:\n" + "\n".join(found)


def test_the_check_sees_dates_and_commits():
    text = "x = 1  # measured 2026-11-27\ny = 2  # as of commit 9ca4c21\nz = 3  # seed 20241104, sha 8ff231f3\n"
    assert [line for line, _ in history_in_comments(text)] == [1, 2]
