"""Where `verify_answer` and plain math-verify disagree on an evaluation: the audit before a table is published.

    rows, total = disagreements(records)          # records: a <benchmark>.jsonl of `sweep eval`
    write_report({"aime24": (rows, total)}, Path("verifier_report.md"))

    sweep eval dhpo_vs_baselines --benchmarks math500 --verifier-report   # writes it beside the results

For every sampled response: the platform's verdict (as the evaluation recorded it) and plain math-verify's,
``verify(parse(gold), parse(response))`` as TRL / open-r1 / lighteval call it, each with the answer it
extracted. A row is a disagreement, or a response math-verify could not judge within the time bound. A
deliberate difference shows up here too: with ``unmarked: no_credit`` a bare number math-verify credits.
"""

from __future__ import annotations

from pathlib import Path

from evaluators.verifier import DEFAULT_TIMEOUT_S, math_verify_verdict

SHOWN_CHARS = 80  # of each extracted answer in the markdown table


def disagreements(records: list[dict], timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[list[dict], int]:
    """(the responses where the verdicts differ, how many responses were compared)."""
    rows, total = [], 0
    for record in records:
        for i, text in enumerate(record["samples"]):
            total += 1
            ours = bool(record["correct"][i])
            theirs, their_answer, their_gold = math_verify_verdict(text, record["answer"], timeout_s)
            if theirs is None or theirs != ours:
                rows.append({"id": record["id"], "sample": i, "gold": record["answer"], "ours": ours,
                             "our_answer": record["extracted"][i], "math_verify": theirs,
                             "math_verify_answer": their_answer, "math_verify_gold": their_gold})
    return rows, total


def _cell(value) -> str:
    text = "—" if value is None else str(value)
    text = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(by_benchmark: dict[str, tuple[list[dict], int]], path: Path) -> Path:
    """A markdown file: per benchmark, the count and a table of the disagreements."""
    lines = ["# Verifier report: verify_answer vs plain math-verify", ""]
    for name, (rows, total) in by_benchmark.items():
        lines += [f"## {name}: {len(rows)} of {total} responses disagree", ""]
        if rows:
            lines += ["| problem | sample | gold | verify_answer | its answer | math-verify | its answer |",
                      "|---|---:|---|---|---|---|---|"]
            for r in rows:
                verdict = "timed out" if r["math_verify"] is None else r["math_verify"]
                lines.append(f"| {_cell(r['id'])} | {r['sample']} | {_cell(r['gold'])} | {r['ours']} | "
                             f"{_cell(r['our_answer'])} | {verdict} | {_cell(r['math_verify_answer'])} |")
            lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
