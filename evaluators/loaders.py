"""Problems from local benchmark files of any common schema: the reading side (the verl RL parquet
writer is the verl backend's, trainers/verl_backend/parquet.py).

    problems = load_problems("data/benchmarks/math500.jsonl")          # list[Problem]
    is_verl_parquet("data/train.parquet")                               # prompt + reward_model columns?

Tested by `.venv/bin/python -m pytest tests/evaluators/test_eval_loaders.py -q`.

Schemas (``load_problems``)
    The schema is detected per file: a ``.parquet`` file whose columns include ``prompt`` and
    ``reward_model`` is verl RL parquet; every other file (``.jsonl``, ``.json``, ``.parquet`` of
    plain columns) is read row by row as the plain schema, of which GSM8K and the synthetic-task
    JSONL are special cases. ``SCHEMAS`` lists them (one line each; error messages quote it).

    verl RL parquet (``.parquet``; what trainers/verl_backend/parquet.py's write_verl_parquet writes)
        prompt         chat list of {"role", "content"} (pandas reads a numpy array of dicts; a
                       plain string is accepted too). Problem.prompt = the last user message's
                       content, Problem.messages = every (role, content) pair.
        reward_model   {"ground_truth": str | number, ...} -> Problem.answer
        data_source    optional; the benchmark name (default: the rows' data_source, else the file stem)
        extra_info     optional {"id" | "unique_id" | "idx" | "index", ...} -> Problem.id
    plain (``.jsonl`` one object a line, ``.json`` a list of objects (or JSON lines), ``.parquet``)
        text     the first of ``problem``, ``question``, ``prompt`` (a non-empty string)
        answer   the first of ``answer``, ``ground_truth``, ``final_answer`` (string, number, or a
                 list, joined with ", " after removing enclosing $...$, as OlympiadBench's
                 final_answer); without one, the content of the last ``\\boxed{...}`` (nested braces
                 allowed; ``\\fbox{}`` too) of ``solution`` (MATH, MATH-500, Minerva)
        solution optional worked solution (a string, or a list of strings joined by blank lines)
        benchmark, id | unique_id | idx   optional
    GSM8K (plain, detected per row): ``{question, answer}`` where ``answer`` ends with a line
        ``#### n``: answer = n without thousands commas, solution = the text before that line.
    synthetic-task JSONL (plain): ``{prompt, answer[, solution, benchmark]}`` (a numeric answer
        becomes its string).

    Problem.benchmark: the ``benchmark`` argument, else the row's ``benchmark`` (plain) or
    ``data_source`` (verl), else the file stem. Problem.id: the row's ``id`` / ``unique_id`` /
    ``idx`` (verl: also those keys of extra_info, then ``<benchmark>-<extra_info.index>``), else
    ``<benchmark>-<i>`` with ``i`` the 0-based position of the problem in the file.
    A null parquet cell counts as an absent field (so a null ``answer`` falls back to ``solution``).
    Errors are ValueErrors naming the file and the 1-based line (JSONL) or row (JSON list,
    parquet), the missing or bad field, and the accepted schemas; a missing file raises
    FileNotFoundError, an empty one ValueError("... no problems (file is empty)").

pyarrow is imported lazily (this module imports without it until a parquet is read).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluators.tasks import Problem

SCHEMAS: tuple[str, ...] = (
    "verl RL parquet (.parquet): prompt = chat list of {role, content}, reward_model.ground_truth"
    "[, data_source, extra_info.index/id]",
    "plain (.jsonl / .json list / .parquet): problem|question|prompt + answer|ground_truth|final_answer"
    "[, solution, id|unique_id|idx, benchmark]",
    "MATH-style (plain): problem + solution whose last \\boxed{...} is the answer",
    "GSM8K (plain): question + answer ending in '#### <number>'",
    "synthetic-task JSONL (plain): prompt + answer[, solution, benchmark]",
)
"""The accepted schemas, one line each (quoted by error messages; details in the module docstring)."""

SUFFIXES: tuple[str, ...] = (".parquet", ".jsonl", ".json")
"""File suffixes load_problems reads."""

TEXT_FIELDS = ("problem", "question", "prompt")
ANSWER_FIELDS = ("answer", "ground_truth", "final_answer")
ID_FIELDS = ("id", "unique_id", "idx")


def schema_help(indent: str = "  ") -> str:
    """The accepted schemas as indented lines (for error messages)."""
    return "accepted schemas:\n" + "\n".join(indent + s for s in SCHEMAS)


# --------------------------------------------------------------------------- helpers

def _plain(value: Any) -> Any:
    """numpy arrays / scalars (as pandas returns them) -> lists / Python scalars, recursively."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _plain(value.tolist())
    return value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) of ``text``, nested braces
    included; ``\\boxed 5`` (no braces) gives "5". None when there is none or it is unclosed."""
    starts = [m for m in re.finditer(r"\\(?:boxed|fbox)\s*(\{|\s+(\S+?)(?=[\s$]|$))", text)]
    for m in reversed(starts):
        if m.group(1) != "{":
            return m.group(2)
        depth, i = 1, m.end()
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):  # an escaped brace does not count
                i += 2
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[m.end():i].strip()
            i += 1
    return None


def _strip_dollars(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text.startswith("$") and text.endswith("$") and "$" not in text[1:-1]:
        return text[1:-1].strip()
    return text


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


class _Rows:
    """Where a row comes from, for error messages."""

    def __init__(self, path: Path, unit: str):
        self.path, self.unit = path, unit

    def where(self, n: int) -> str:
        return f"{self.path}:{n}" if self.unit == "line" else f"{self.path}: row {n}"


def _read_jsonl(path: Path) -> list[tuple[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                rows.append((where, json.loads(line)))
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: invalid JSON ({e.msg})") from e
    return rows


def _read_json(path: Path) -> list[tuple[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":  # JSON lines in a .json file (as datasets' to_json writes)
            return _read_jsonl(path)
        raise ValueError(f"{path}: invalid JSON ({e.msg} at line {e.lineno})") from e
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of objects (or one object a line), got a "
                         f"{type(data).__name__}; {schema_help()}")
    return [(f"{path}: row {i}", row) for i, row in enumerate(data, start=1)]


def _parquet_columns(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)


def is_verl_parquet(path: str | Path) -> bool:
    """True iff ``path`` is a parquet file in verl's RL schema (columns prompt and reward_model)."""
    path = Path(path)
    return path.suffix.lower() == ".parquet" and {"prompt", "reward_model"} <= set(_parquet_columns(path))


def _read_parquet(path: Path) -> list[tuple[str, Any]]:
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:  # pyarrow raises its own error types for a corrupt file
        raise ValueError(f"{path}: cannot read parquet ({e})") from e
    # a null cell is an absent field (a column exists for every row; JSON's explicit null is an error)
    return [(f"{path}: row {i}", {k: _plain(v) for k, v in row.items() if v is not None})
            for i, row in enumerate(rows, start=1)]


# --------------------------------------------------------------------------- row parsers

def _bad(where: str, msg: str) -> ValueError:
    return ValueError(f"{where}: {msg}; {schema_help()}")


def _first(row: Mapping, keys: Sequence[str]) -> tuple[str | None, Any]:
    """(key, value) of the first of ``keys`` in ``row`` (a present non-null value wins over a null)."""
    present = [k for k in keys if k in row]
    for k in present:
        if not _missing(row[k]):
            return k, row[k]
    return (present[0], row[present[0]]) if present else (None, None)


def _row_id(row: Mapping) -> str:
    key, value = _first(row, ID_FIELDS)
    return "" if key is None or _missing(value) else str(value)


def _answer_text(value: Any) -> str | None:
    if _is_scalar(value):
        return str(value).strip()
    if isinstance(value, list) and value and all(_is_scalar(v) for v in value):
        return ", ".join(_strip_dollars(str(v)) for v in value)
    return None


def _plain_row(where: str, row: Any, default_benchmark: str, explicit: str | None, i: int) -> Problem:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    key, text = _first(row, TEXT_FIELDS)
    if key is None:
        raise _bad(where, "missing required field 'prompt' (or 'problem' / 'question')")
    if not isinstance(text, str) or not text.strip():
        raise _bad(where, f"{key!r} must be a non-empty string")
    solution_value = row.get("solution")
    if isinstance(solution_value, list) and all(isinstance(s, str) for s in solution_value):
        solution_value = "\n\n".join(solution_value)
    elif _missing(solution_value):
        solution_value = ""
    for k, v in (("solution", solution_value), ("benchmark", row.get("benchmark"))):
        if k in row and not _missing(v) and not isinstance(v, str):
            raise _bad(where, f"{k!r} must be a string")
    solution = solution_value
    akey, avalue = _first(row, ANSWER_FIELDS)
    if akey is not None:
        answer = _answer_text(avalue)
        if answer is None:
            raise _bad(where, f"{akey!r} must be a string or a number")
        gsm = re.fullmatch(r"(.*?)\n?####\s*(\S[^\n]*?)\s*", answer, re.S) if akey == "answer" else None
        if gsm:
            answer = gsm.group(2).replace(",", "")
            solution = solution or gsm.group(1).strip()
    elif solution:
        answer = last_boxed(solution)
        if not answer:
            raise _bad(where, "missing required field 'answer' (or 'ground_truth' / 'final_answer'), "
                              "and 'solution' has no \\boxed{...} answer")
    else:
        raise _bad(where, "missing required field 'answer' (or 'ground_truth' / 'final_answer', "
                          "or a 'solution' with a \\boxed{...} answer)")
    benchmark = explicit or row.get("benchmark") or default_benchmark
    return Problem(prompt=text, answer=answer, solution=solution, benchmark=benchmark,
                   id=_row_id(row) or f"{benchmark}-{i}")


def _messages(where: str, prompt: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(prompt, str):
        return ()
    ok = isinstance(prompt, list) and prompt and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in prompt)
    if not ok:
        raise _bad(where, "'prompt' must be a non-empty chat list of {'role': str, 'content': str} messages")
    return tuple((m["role"], m["content"]) for m in prompt)


def _verl_row(where: str, row: dict, default_benchmark: str, explicit: str | None, i: int) -> Problem:
    prompt = row.get("prompt")
    if _missing(prompt):
        raise _bad(where, "missing required field 'prompt'")
    messages = _messages(where, prompt)
    if messages:
        users = [c for r, c in messages if r == "user"]
        if not users:
            raise _bad(where, "'prompt' has no user message")
        text = users[-1]
    else:
        text = prompt
    if not text.strip():
        raise _bad(where, "the problem text (last user message) is empty")
    rm = row.get("reward_model")
    if not isinstance(rm, dict) or _missing(rm.get("ground_truth")):
        raise _bad(where, "missing required field 'reward_model.ground_truth'")
    answer = _answer_text(rm["ground_truth"])
    if answer is None:
        raise _bad(where, "'reward_model.ground_truth' must be a string or a number")
    source = row.get("data_source")
    benchmark = explicit or (source if isinstance(source, str) and source else default_benchmark)
    extra = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else {}
    pid = _row_id(row) or _row_id(extra)
    if not pid and not _missing(extra.get("index")):
        pid = f"{benchmark}-{extra['index']}"
    return Problem(prompt=text, answer=answer, benchmark=benchmark, id=pid or f"{benchmark}-{i}",
                   messages=messages)


# --------------------------------------------------------------------------- load

def load_problems(path: str | Path, benchmark: str | None = None) -> list[Problem]:
    """Problems of a local ``.parquet`` / ``.jsonl`` / ``.json`` file in any schema of the module
    docstring; ``benchmark`` (default: per row, else the file stem) names their benchmark."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{path}: unsupported file type {suffix!r}; expected one of {list(SUFFIXES)}; {schema_help()}")
    if not path.is_file():
        raise FileNotFoundError(f"benchmark file not found: {path}")
    if suffix == ".parquet":
        verl = is_verl_parquet(path)
        rows = _read_parquet(path)
    else:
        verl = False
        rows = _read_jsonl(path) if suffix == ".jsonl" else _read_json(path)
    if not rows:
        raise ValueError(f"{path}: no problems (file is empty)")
    parse = _verl_row if verl else _plain_row
    return [parse(where, row, path.stem, benchmark, i) for i, (where, row) in enumerate(rows)]
