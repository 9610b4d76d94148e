"""The answer verifier: answer equivalence with a hard time bound, verify_answer and answer_key
(final-answer extraction is evaluators.answer_extraction's, re-exported here).

    from evaluators.verifier import verify_answer, extract_final_answer, answers_equivalent
    verify_answer("... so the area is \\boxed{\\frac{1}{2}}.", "0.5")          # True
    verify_answer("<think>7*3=21 12+21=33</think><answer>33</answer>", "33")   # True
    extract_final_answer("Natalia sold 48+24 = 72 clips.\\n#### 72")          # '72'
    answers_equivalent("\\{1,2\\}", "\\{2,1\\}")                              # True (math-verify)
    answer_key("\\frac{1}{2}") == answer_key("0.5")                           # True (for maj@k)

Extraction (`extract_final_answer`) lives in evaluators.answer_extraction, whose docstring lists
the answer forms and their order (an <answer> block, \\boxed{}, '#### n', "the answer is X"); a
response with none of them has no answer: None, and no credit. It is re-exported here.

Equivalence (`answers_equivalent`), both sides normalised the same way (surrounding whitespace,
`$...$` / `\\(...\\)` / `\\[...\\]`, a whole-string `\\boxed{}`, `\\left` / `\\right` / `\\!` /
`\\displaystyle`, a trailing period; unicode minus -> '-'):
  1. equal strings -> True (an empty prediction is never equivalent);
  2. both plain numbers -> exact rational equality, decided here without math-verify.
     Plain numbers: integers, decimals, thousands separators (`1,000`, `1{,}000`, `1\\,000`),
     `a/b`, `\\frac{a}{b}` / `\\dfrac` / `\\tfrac` / `\\frac12` of integers, with a leading
     `$`/`\\$`, a trailing `%`/`\\%`, `^\\circ` or LaTeX unit `\\text{ cm}` / `\\mbox{..}` /
     `\\mathrm{..}` ignored. So `1,000` == `1000`, `\\dfrac{1}{2}` == `0.5`, `50\\%` == `50` (as
     math-verify decides it; `50\\%` != `0.5`), `5\\text{ cm}` == `5`, but `0.333` != `1/3` and
     `1,2` is not a number (math-verify reads it as the set {1, 2});
  3. otherwise math-verify's parse + verify (LaTeX and symbolic forms: `\\sqrt{2}/2` ==
     `\\frac{\\sqrt2}{2}`, sets `\\{1,2\\}` == `\\{2,1\\}`, intervals `(0,1]` != `[0,1]`, `2\\pi` ==
     `\\pi \\cdot 2`). An equation with a variable on its left matches its right side, as
     math-verify decides: `x=3` == `3`.
     Not compared this way (False): strings longer than MAX_VERIFY_CHARS, and plain-text (no
     LaTeX) strings longer than PLAIN_MAX_CHARS or holding a 20+ digit run or Python `**` towers.
     That last rule is no time bound; it keeps the built-in synthetic task's rewards identical to
     the earlier in-process reward's, which refused such strings (see _plain_text_guard).

The time bound: math-verify runs in a long-lived child process (evaluators/verify_worker.py),
one per parent process, started on first need and shared by all threads under a lock (a caller
waits for the lock first; its bound starts once it sends its request). Each comparison gets
`timeout_s` (DEFAULT_TIMEOUT_S) wall-clock seconds. Inside the child, in its main thread, a SIGALRM
interval timer at 0.9 * timeout_s stops the pure-Python part of a slow comparison (the usual slow
case: the child answers False and lives on). If no answer has come by timeout_s - the child is
stuck in C code holding the GIL, where neither signals nor a thread timeout reach (e.g. a huge
big-integer power) - the parent kills it and the comparison is False; never an exception. The
next symbolic comparison starts a fresh child (start-up, ~1 s of importing sympy, is bounded by
WORKER_START_TIMEOUT_S and not counted in any comparison's bound). This works from any thread,
unlike math-verify's own signal.alarm timeouts (main thread only). Definite answers are cached
(LRU, _CACHE_SIZE pairs); time-outs are not. The child dies with its parent: stdin EOF, and
PR_SET_PDEATHSIG on Linux (it is forked from one long-lived spawner thread, since that signal
fires when the forking *thread* ends). After os.fork a child process starts its own.
Plain-number comparisons never touch the child (~10^5 verify_answer calls per second per core).

The built-in synthetic task (tasks.VOCAB_CHARS: digits, ` ()*+-/:<=>?`, letters of "Q", "think",
"answer") keeps the rewards of the earlier in-process reward (the last <answer> block; that reward
is frozen in tests/evaluators/test_eval_rewards.py and compared on solutions and garbage). The
one new way for such text to score is a literal "the answer is N" outside any <answer> block.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import re
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict

from evaluators.answer_extraction import (  # noqa: F401  (re-exported: public names of this module)
    ANSWER_CLOSE, ANSWER_OPEN, MAX_NUMERIC_CHARS, _normalise, _to_number, extract_final_answer,
)

__all__ = [
    "verify_answer", "extract_final_answer", "answers_equivalent", "answer_key", "DEFAULT_TIMEOUT_S", "UNMARKED",
    "WORKER_START_TIMEOUT_S", "MAX_NUMERIC_CHARS", "MAX_VERIFY_CHARS", "PLAIN_MAX_CHARS", "ANSWER_OPEN", "ANSWER_CLOSE",
]

DEFAULT_TIMEOUT_S = 5.0
"""Wall-clock seconds one symbolic (math-verify) comparison may take before it counts as False."""

WORKER_START_TIMEOUT_S = 120.0
"""Seconds the math-verify child may take to start (import sympy); not part of any comparison's bound."""

UNMARKED = ("no_credit", "field")
"""verify_answer's choices for a response with no answer marker (see there)."""
MAX_VERIFY_CHARS = 2000
"""Normalised strings longer than this never reach math-verify (not equivalent). Real final
answers are far shorter; the cap keeps a trainer scoring long garbage from paying a timeout each."""

PLAIN_MAX_CHARS = 128
"""Plain-text (non-LaTeX) answers longer than this never reach math-verify; see _plain_text_guard."""

_CACHE_SIZE = 4096

# ----------------------------------------------------------------------------------- answer keys

def answer_key(answer: str) -> str:
    """A canonical string for grouping answers (maj@k): equal plain numbers share one key
    ('0.5', '1/2', '\\frac{1}{2}', '$0.50$' -> '1/2'); other answers are normalised and lose all
    whitespace, '$', '\\left', '\\right', '\\!', '\\,' and \\dfrac/\\tfrac spellings. Equivalent
    symbolic forms ('\\sqrt{2}/2' vs '\\frac{\\sqrt2}{2}') may still get different keys."""
    s = _normalise(answer)
    num = _to_number(s)
    if num is not None:
        return str(num)
    s = re.sub(r"\\[dt]frac\b", r"\\frac", s)
    s = re.sub(r"\\[,;:! ]|\\left\b|\\right\b", "", s)
    return re.sub(r"\s+", "", s).replace("$", "")


# ------------------------------------------------------------------------------- the math-verify child

class _StartFailed(Exception):
    pass


class _Spawner:
    """Starts child processes from one long-lived daemon thread: PR_SET_PDEATHSIG fires when the
    *thread* that forked the child ends, and callers' threads (thread pools) come and go."""

    def __init__(self):
        self._lock = threading.Lock()
        self._requests: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None

    def popen(self, args: list[str], **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="verify-worker-spawner", daemon=True)
                self._thread.start()
        box: list = []
        done = threading.Event()
        self._requests.put((args, kwargs, box, done))
        done.wait()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def _serve(self):
        while True:
            args, kwargs, box, done = self._requests.get()
            try:
                box.append(subprocess.Popen(args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                box.append(e)
            done.set()


class _VerifyWorker:
    """Client of one evaluators/verify_worker.py child: JSON lines over pipes, one request at a
    time (a lock), each bounded by its timeout; a child past its bound is killed and replaced on
    next use."""

    def __init__(self):
        self._lock = threading.Lock()
        self._spawner = _Spawner()
        self._proc: subprocess.Popen | None = None
        self._buf = b""
        self.restarts = 0
        """Children started so far (tests read it)."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def compare(self, pred: str, gold: str, timeout_s: float, raw: bool = False) -> bool | None:
        """True / False, or None when the comparison ran past timeout_s (or the child failed). ``raw``:
        ``pred`` is a whole response, for math-verify's own extraction."""
        reply = self.ask({"pred": pred, "gold": gold, "raw": raw}, timeout_s)
        return None if reply is None else bool(reply.get("ok"))

    def ask(self, request: dict, timeout_s: float) -> dict | None:
        """The child's reply to one request, or None past timeout_s (the child is then killed) or on failure."""
        with self._lock:
            try:
                proc = self._ensure_started()
            except _StartFailed:
                return None
            data = (json.dumps({**request, "timeout": timeout_s * 0.9}) + "\n").encode()
            deadline = time.monotonic() + timeout_s
            try:
                self._write(proc, data, deadline)
                reply = json.loads(self._readline(proc, deadline))
            except (OSError, ValueError, TimeoutError, EOFError):
                self._kill()
                return None
            return None if reply.get("timed_out") else reply

    def close(self) -> None:
        with self._lock:
            self._kill()

    # -- internals (called with the lock held)

    def _ensure_started(self) -> subprocess.Popen:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._kill()
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify_worker.py")
        try:
            proc = self._spawner.popen(
                [sys.executable, script, str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                bufsize=0, close_fds=True, start_new_session=True)  # no terminal Ctrl-C
        except OSError as e:
            raise _StartFailed(str(e)) from e
        self._proc, self._buf = proc, b""
        self.restarts += 1
        os.set_blocking(proc.stdin.fileno(), False)
        try:
            ready = json.loads(self._readline(proc, time.monotonic() + WORKER_START_TIMEOUT_S))
            if not ready.get("ready"):
                raise ValueError(ready)
        except (OSError, ValueError, TimeoutError, EOFError) as e:
            self._kill()
            raise _StartFailed(repr(e)) from e
        return proc

    def _write(self, proc: subprocess.Popen, data: bytes, deadline: float) -> None:
        fd = proc.stdin.fileno()
        poller = select.poll()  # not select.select: it fails on fds >= 1024 (Ray workers have many)
        poller.register(fd, select.POLLOUT)
        while data:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if poller.poll(left * 1000):
                data = data[os.write(fd, data):]

    def _readline(self, proc: subprocess.Popen, deadline: float) -> bytes:
        fd = proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if poller.poll(left * 1000):
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise EOFError("verify worker exited")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def _kill(self) -> None:
        proc, self._proc, self._buf = self._proc, None, b""
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def _forget_after_fork(self) -> None:
        """In a forked child: the parent's child process and lock are not ours."""
        if self._proc is not None:
            for stream in (self._proc.stdin, self._proc.stdout):
                try:
                    stream.close()  # our copies only, so the parent's child still sees EOF when it goes
                except OSError:
                    pass
            _ORPHANS.append(self._proc)  # never collected: no Popen.__del__ warnings about it
        self._lock = threading.Lock()
        self._spawner = _Spawner()
        self._proc, self._buf = None, b""


_ORPHANS: list = []
_WORKER = _VerifyWorker()
atexit.register(_WORKER.close)

_cache: OrderedDict[tuple[str, str], bool] = OrderedDict()
_cache_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _cache_lock
    _cache_lock = threading.Lock()  # another thread may have held it at the fork
    _WORKER._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


_LATEX_CHARS = re.compile(r"[\\{}^$]")
_PY_POWER_BIG = re.compile(r"\*\*\s*\d{4,}")
_LONG_DIGITS = re.compile(r"\d{20,}")


def _plain_text_guard(s: str) -> bool:
    """False for plain-text (no LaTeX: none of \\ { } ^ $) answers that are long, hold a run of
    20+ digits or Python-style powers ('**' twice, or '**' then 4+ digits). Not a time bound
    (the child's timeout is): it keeps the built-in synthetic task's rewards (responses in
    tasks.VOCAB_CHARS, garbage from a tiny model included) identical to those of the earlier
    in-process reward, which refused such strings; they are not answers a verifier should credit."""
    if _LATEX_CHARS.search(s):
        return True
    return (len(s) <= PLAIN_MAX_CHARS and s.count("**") <= 1 and not _PY_POWER_BIG.search(s)
            and not _LONG_DIGITS.search(s))


def _symbolic_equal(pred: str, gold: str, timeout_s: float, raw: bool = False) -> bool:
    """math-verify in the child, bounded by timeout_s; definite answers are cached (LRU). ``raw``: ``pred``
    is the tail of a whole response that math-verify extracts from itself (no plain-text guard)."""
    if len(pred) > MAX_VERIFY_CHARS or len(gold) > MAX_VERIFY_CHARS or not timeout_s > 0:
        return False
    if not ((raw or _plain_text_guard(pred)) and _plain_text_guard(gold)):
        return False
    key = (pred, gold, raw)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    result = _WORKER.compare(pred, gold, timeout_s, raw)
    if result is None:  # timed out (or no worker): not equivalent, and not cached
        return False
    with _cache_lock:
        _cache[key] = result
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


# ----------------------------------------------------------------------------------- public API

def answers_equivalent(pred: str, gold: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Whether the extracted answer `pred` is equivalent to `gold` (see the module docstring):
    normalised string equality, else exact rational equality of plain numbers (in-process), else
    math-verify in the child process within timeout_s seconds (False past it, never an exception)."""
    pred, gold = _normalise(pred), _normalise(gold)
    if not pred:
        return False
    if pred == gold:
        return True
    p_num, g_num = _to_number(pred), _to_number(gold)
    if p_num is not None and g_num is not None:
        return p_num == g_num
    return _symbolic_equal(pred, gold, timeout_s)


def verify_answer(response_text: str, ground_truth: str, timeout_s: float = DEFAULT_TIMEOUT_S, *,
                  unmarked: str = "no_credit") -> bool:
    """Whether the final answer extracted from a full response is equivalent to the ground truth.
    A ground truth that carries a marker itself (a \\boxed{}, '#### 72', an <answer> block, a solution
    ending in one) is reduced to its final answer first; a plain one ('33', '$\\frac{1}{2}$') is used as it is.

    ``unmarked``: what a response with no answer marker gets. "no_credit" (the default, training
    rewards): nothing, a bare "33" is no answer. "field": what math-verify gives it, its own extraction
    over the response's last MAX_VERIFY_CHARS characters (the last LaTeX span or number; the papers'
    evaluation, `sweep eval`, uses it). The one deliberate difference from math-verify is "no_credit"."""
    if unmarked not in UNMARKED:
        raise ValueError(f"unmarked: expected one of {UNMARKED}, got {unmarked!r}")
    pred = extract_final_answer(response_text)
    gold = extract_final_answer(ground_truth)
    gold = ground_truth if gold is None else gold
    if pred is None:
        if unmarked == "no_credit" or not response_text.strip():
            return False
        return _symbolic_equal(response_text[-MAX_VERIFY_CHARS:], _normalise(gold), timeout_s, raw=True)
    return answers_equivalent(pred, gold, timeout_s)


def math_verify_verdict(response_text: str, ground_truth: str,
                        timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[bool | None, str, str]:
    """Plain math-verify's verdict on a whole response, ``verify(parse(gold), parse(response))`` as its users
    call it, and what it extracted from each side; None past the time bound. For audits (`sweep eval
    --verifier-report`), not for rewards."""
    reply = _WORKER.ask({"op": "plain", "pred": response_text[-MAX_VERIFY_CHARS:], "gold": ground_truth}, timeout_s)
    if reply is None:
        return None, "", ""
    return bool(reply.get("ok")), str(reply.get("pred", "")), str(reply.get("gold", ""))
