"""Final-answer extraction from a full model response, plus the answer normalisation and
plain-number parsing that evaluators.verifier compares with. Standard library only.

    from evaluators.answer_extraction import extract_final_answer
    extract_final_answer("<think>7*3=21 12+21=33</think><answer>33</answer>")   # '33'
    extract_final_answer("... so the area is \\boxed{\\frac{1}{2}}.")          # '\\frac{1}{2}'
    extract_final_answer("Natalia sold 48+24 = 72 clips.\\n#### 72")           # '72'
    extract_final_answer("The answer is 18 dollars.")                           # '18'
    extract_final_answer("33")                                                  # None

evaluators.verifier re-exports extract_final_answer (and ANSWER_OPEN, ANSWER_CLOSE,
MAX_NUMERIC_CHARS); callers usually import it from there. Tested by
`.venv/bin/python -m pytest tests/evaluators/test_eval_verifier.py -q`.

Extraction (`extract_final_answer`), first form found wins:
  1. the last complete `<answer>...</answer>` block (the last `</answer>` and the nearest
     `<answer>` before it), stripped; if it holds a `\\boxed{}`/`\\fbox{}`, its boxes as in 3;
  2. else MATH's closing line "The final answer is X. I hope it is correct." (the last one), which
     math-verify ranks above any box (an earlier intermediate box does not win over it);
  3. else the last well-formed `\\boxed{...}` / `\\fbox{...}` (nested braces matched; a box left
     open by a truncated response is skipped) or `\\boxed 5`, together with the boxes before it
     that belong to the same answer as math-verify groups them (fewer than 10 characters apart, or
     fewer than 70 with `and`/`or`/`,`/`;` between them; a repeated box counts once):
     `\\boxed{-2} and \\boxed{1}` is the answer `-2, 1`, which math-verify compares as a set;
  4. else GSM8K's `#### 72` (the rest of the last such line);
  5. else "the answer is X" / "the final answer is X" / "Final Answer: X" (case-insensitive, the
     last one): X up to the end of its line or sentence, `$...$` unwrapped, a trailing period
     dropped, and a plain number followed only by words ("18 dollars") reduced to the number.
  A response with none of these (a bare "33") has no answer: None, and no credit.

Normalisation (`_normalise`) and plain numbers (`_to_number`) are the first two steps of
answers_equivalent; evaluators.verifier's module docstring (Equivalence) says what they accept.
"""

from __future__ import annotations

import re
from fractions import Fraction

MAX_NUMERIC_CHARS = 64
"""Strings longer than this are not read as plain numbers (they may still reach math-verify)."""

# ------------------------------------------------------------------------------------ extraction

ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
_BOX = re.compile(r"\\(?:boxed|fbox)\b")
_BOX_TOKEN = re.compile(r"(?!\\(?:boxed|fbox))[^\s$]+")
_BRACE_TOKENS = re.compile(r"\\.|[{}]", re.DOTALL)  # an escaped char (\{ \} \\) is no brace
_GSM8K = re.compile(r"####[ \t]*([^\n]*)")
_PHRASE = re.compile(
    r"\b(?:the[ \t]+(?:final[ \t]+)?answer|final[ \t]+answer)(?:[ \t]*\*\*)?[ \t]*(?:is\b[ \t]*:?|:)(?:[ \t]*\*\*)?",
    re.IGNORECASE)
_SENTENCE_END = re.compile(r"\.(?=\s|$)")
_NUMBER_THEN_WORDS = re.compile(r"(\S*\d\S*?)\s+([A-Za-z]{2,}(?:\s+[A-Za-z]+)*)")
_ADJACENT, _NEAR = 10, 70  # characters between two boxes of one answer (_same_answer)
_SEPARATOR = re.compile(r"\b(?:and|or)\b|[,;]")
_FINAL_IS = re.compile(r"final answer is\s*:?", re.IGNORECASE)
_I_HOPE = re.compile(r"\.?\s?I hope\b")
_MAX_HOPE_ANSWER = 300  # characters between "final answer is" and "I hope"
_MATH_WORDS = {"pi", "sqrt", "ln", "log", "sin", "cos", "tan", "exp", "infinity", "inf", "times", "cdot"}


def _brace_matches(s: str) -> dict[int, int]:
    """{index of '{': index of its matching '}'} for every matched pair (one linear pass)."""
    stack: list[int] = []
    match: dict[int, int] = {}
    for m in _BRACE_TOKENS.finditer(s):
        tok = m.group()
        if tok == "{":
            stack.append(m.start())
        elif tok == "}" and stack:
            match[stack.pop()] = m.start()
    return match


def _boxes(s: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of every well-formed \\boxed{...} / \\fbox{...} / \\boxed X in s, in order.
    A box inside another box is not listed on its own (the outer one holds it)."""
    found: list[tuple[int, int, str]] = []
    matches: dict[int, int] | None = None
    for m in _BOX.finditer(s):
        if found and m.start() < found[-1][1]:  # nested in the previous box
            continue
        j = m.end()
        while j < len(s) and s[j] in " \t":
            j += 1
        if j < len(s) and s[j] == "{":
            if matches is None:
                matches = _brace_matches(s)
            end = matches.get(j)
            if end is not None:
                found.append((m.start(), end + 1, s[j + 1:end].strip()))
        elif j > m.end():  # "\boxed 5": the next token
            tok = _BOX_TOKEN.match(s, j)
            if tok:
                found.append((m.start(), tok.end(), tok.group().rstrip(".")))
    return found


def _last_boxed(s: str) -> str | None:
    """The last well-formed box's content, with the boxes before it that belong to the same answer
    (`\\boxed{1}, \\boxed{2}` -> '1, 2'; see _same_answer), or None."""
    boxes = _boxes(s)
    if len(boxes) < 2:
        return boxes[0][2] if boxes else None
    group = [boxes[-1]]
    for box in reversed(boxes[:-1]):
        if not _same_answer(s[box[1]:group[0][0]], box[2], group[0][2]):
            break
        if box[2] != group[0][2]:  # a repeated box counts once
            group.insert(0, box)
        else:
            group[0] = box
    return ", ".join(content for _, _, content in group)


def _same_answer(between: str, content: str, next_content: str) -> bool:
    """Whether two boxes are parts of one answer, as math-verify groups them: almost adjacent (under
    _ADJACENT characters apart), or different and under _NEAR characters apart with a separator
    (`and`, `or`, `,`, `;`) between them. Farther apart, the earlier one is an intermediate result."""
    if len(between) < _ADJACENT:
        return True
    return content != next_content and len(between) < _NEAR and bool(_SEPARATOR.search(between))


def _hope_line(s: str) -> str | None:
    """X of the last "final answer is X. I hope it is correct." (MATH's prompt format), or None."""
    if "I hope" not in s:  # the common case, one substring test (math-verify's "I hope" is case-sensitive too)
        return None
    last = None
    for last in _FINAL_IS.finditer(s):
        pass
    if last is None:
        return None
    hope = _I_HOPE.search(s, last.end(), last.end() + _MAX_HOPE_ANSWER)
    if hope is None:
        return None
    return s[last.end():hope.start()].strip() or None


def _answer_block(s: str) -> str | None:
    end = s.rfind(ANSWER_CLOSE)
    if end < 0:
        return None
    start = s.rfind(ANSWER_OPEN, 0, end)
    if start < 0:
        return None
    content = s[start + len(ANSWER_OPEN):end].strip()
    if "\\boxed" in content or "\\fbox" in content:
        boxed = _last_boxed(content)
        if boxed is not None:
            return boxed
    return content


def _phrase_answer(s: str) -> str | None:
    last = None
    for last in _PHRASE.finditer(s):
        pass
    if last is None:
        return None
    rest = s[last.end():].lstrip()
    line = rest.split("\n", 1)[0].strip()
    if line.startswith("$"):  # "$5$." or "$$5$$"
        inner = line.lstrip("$")
        close = inner.find("$")
        ans = inner[:close] if close >= 0 else inner
    elif line.startswith("\\(") and "\\)" in line:
        ans = line[2:line.index("\\)")]
    else:
        end = _SENTENCE_END.search(line)
        ans = line[:end.start()] if end else line
    ans = ans.strip().rstrip(".").strip().strip("*").strip()
    m = _NUMBER_THEN_WORDS.fullmatch(ans) if len(ans) <= 200 else None  # (bounded backtracking)
    if m and _to_number(m.group(1)) is not None and not any(
            w.lower() in _MATH_WORDS for w in m.group(2).split()):
        ans = m.group(1)  # "18 dollars" -> "18"
    return ans or None


def extract_final_answer(response: str) -> str | None:
    """The final answer of a full model response, or None (see the module docstring for the forms
    and their order). Linear time in len(response)."""
    ans = _answer_block(response)
    if ans is not None:
        return ans
    ans = _hope_line(response)
    if ans is not None:
        return ans
    if "\\boxed" in response or "\\fbox" in response:
        ans = _last_boxed(response)
        if ans is not None:
            return ans
    hashes = response.rfind("####")
    if hashes >= 0:
        ans = _GSM8K.match(response, hashes).group(1).strip()
        if ans:
            return ans
    return _phrase_answer(response)


# ---------------------------------------------------------------------------------- normalising

_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_SPACING = re.compile(r"\\left\b|\\right\b|\\!|\\displaystyle\b")
_THIN_THOUSANDS = re.compile(r"(?<=\d),\\!\s*(?=\d{3}(?!\d))")


def _normalise(s: str) -> str:
    """Strip what never changes an answer's meaning: whitespace around it, $...$ / \\(...\\) /
    \\[...\\] around it, a box around all of it, \\left / \\right / \\!, a trailing period."""
    s = s.strip().replace("\u2212", "-")  # unicode minus
    for _ in range(3):  # e.g. "$\boxed{5}$."
        before = s
        if s.endswith("."):  # a sentence's period ("3." is 3 anyway)
            s = s[:-1].rstrip()
        for op, cl in _WRAPPERS:
            if len(s) >= len(op) + len(cl) and s.startswith(op) and s.endswith(cl):
                inner = s[len(op):len(s) - len(cl)]
                if "$" in op and "$" in inner:  # "$1$ and $2$": several spans, not one wrapped answer
                    break
                s = inner.strip()
                break
        m = _BOX.match(s)
        if m:
            j = m.end()
            while j < len(s) and s[j] in " \t":
                j += 1
            if j < len(s) and s[j] == "{" and _brace_matches(s).get(j) == len(s) - 1:
                s = s[j + 1:-1].strip()
        if s == before:
            break
    if "\\" in s:
        s = _THIN_THOUSANDS.sub(",", s)  # "11,\\! 111" is 11111, not the pair (11, 111)
        s = _SPACING.sub("", s).strip()
    return s


# -------------------------------------------------------------------------------- plain numbers

# Integers, decimals, a/b (a may be a decimal). No exponents: Fraction('1e999999') is costly.
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)(/\d+)?")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")
_FRAC = re.compile(r"([+-]?)\\[dt]?frac\s*(?:\{\s*([+-]?\d+(?:\.\d*)?)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d))")
_UNIT = re.compile(r"\s*\\(?:text|mbox|mathrm)\s*\{[^{}\d]*\}(?:\^\{?\d\}?)?$")
_DEGREES = re.compile(r"\s*(?:\^\s*\{?\s*\\circ\s*\}?|°)$")
_PERCENT = re.compile(r"\s*\\?%$")
_LATEX_SEPARATORS = re.compile(r"(?<=\d)(?:\{,\}|\\,|\\ |~)(?=\d{3})")


def _to_number(s: str) -> Fraction | None:
    """s as an exact rational if it is a plain number (evaluators.verifier's module docstring,
    Equivalence 2), else None."""
    s = s.strip()
    if len(s) > MAX_NUMERIC_CHARS:
        return None
    if "\\" in s or "$" in s or "%" in s or "°" in s or "−" in s or "{" in s:
        s = s.replace("−", "-")
        s = _UNIT.sub("", s)
        s = _DEGREES.sub("", s)
        s = _PERCENT.sub("", s)
        s = _LATEX_SEPARATORS.sub(",", s)
        if s.startswith("\\$"):
            s = s[2:]
        elif s.startswith("$"):
            s = s[1:]
        elif s.startswith("-\\$") or s.startswith("-$"):
            s = "-" + s.lstrip("-\\$")
        s = s.strip()
        m = _FRAC.fullmatch(s)
        if m:
            sign, num, num1, den, den1 = m.groups()
            try:
                value = Fraction(num if num is not None else num1) / int(den if den is not None else den1)
            except (ValueError, ZeroDivisionError):
                return None
            return -value if sign == "-" else value
    if "," in s and _THOUSANDS.fullmatch(s):  # '1,000' -> '1000'; '1,2' stays (a tuple/set)
        s = s.replace(",", "")
    if not _NUMBER.fullmatch(s):
        return None
    try:
        return Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None
