"""The child process behind evaluators.verifier's symbolic comparisons (math-verify + sympy).

Started by the verifier as `python .../verify_worker.py <parent pid>` (run as a file, so it needs
neither the repository on sys.path nor the `evaluators` package). It speaks JSON lines:

    -> {"ready": true}                                       once, after importing math-verify
    <- {"pred": "\\frac{1}{2}", "gold": "0.5", "timeout": 5.0}
    -> {"ok": true}                                          or {"ok": false, "timed_out": true}

Why a process: a comparison can run C code that holds the GIL for minutes (sympy evaluating
9^{9^{9}} as a big integer), which no thread timeout interrupts; the parent kills this process
instead (see verifier._VerifyWorker). Here, in our own main thread, an interval timer
(SIGALRM, float seconds) also stops the pure-Python part of a slow comparison, so the usual
slow case answers false without costing a restart.

It exits on stdin EOF (the parent closed it or died) and, on Linux, on its parent's death
(PR_SET_PDEATHSIG; the parent spawns it from a thread that lives as long as the parent).
"""

from __future__ import annotations

import json
import os
import signal
import sys


class _Deadline(BaseException):
    """Raised by the interval timer. A BaseException so that math-verify's and sympy's many
    `except Exception` blocks do not swallow it and carry on computing."""


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except Exception:  # noqa: BLE001 - stdin EOF still ends us when the parent goes
            pass
    if parent_pid and os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(0)


def _on_alarm(signum, frame):
    raise _Deadline()


def _wrap(s: str) -> str:
    """math-verify's LaTeX extractor wants $...$ (or a \\boxed{})."""
    return s if "$" in s or "\\boxed" in s else f"${s}$"


def compare(pred: str, gold: str, timeout: float, raw: bool = False) -> dict:
    from math_verify import parse, verify

    # Our own timer replaces math-verify's (its alarm() takes whole seconds only).
    signal.setitimer(signal.ITIMER_REAL, max(float(timeout), 0.01))
    try:
        gold_parsed = parse(_wrap(gold), parsing_timeout=None)
        pred_parsed = parse(pred if raw else _wrap(pred), parsing_timeout=None)  # raw: a whole response
        ok = bool(gold_parsed and pred_parsed and verify(gold_parsed, pred_parsed, timeout_seconds=None))
        return {"ok": ok}
    except _Deadline:
        return {"ok": False, "timed_out": True}
    except Exception:  # noqa: BLE001 - odd input raises many types; odd input is not equivalent
        return {"ok": False}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def plain(response: str, gold: str, timeout: float) -> dict:
    """Plain math-verify as its users call it, ``verify(parse(gold), parse(response))``, with what each side
    extracted (the verifier report of `sweep eval`)."""
    from math_verify import parse, verify

    signal.setitimer(signal.ITIMER_REAL, max(float(timeout), 0.01))
    try:
        gold_parsed, pred_parsed = parse(gold, parsing_timeout=None), parse(response, parsing_timeout=None)
        ok = bool(gold_parsed and pred_parsed and verify(gold_parsed, pred_parsed, timeout_seconds=None))
        shown = [str(p[-1]) if p else "" for p in (pred_parsed, gold_parsed)]
        return {"ok": ok, "pred": shown[0], "gold": shown[1]}
    except _Deadline:
        return {"ok": False, "timed_out": True}
    except Exception:  # noqa: BLE001 - odd input is not equivalent
        return {"ok": False, "pred": "", "gold": ""}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main() -> None:
    parent_pid = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    # Our protocol owns the real stdout; stray prints from libraries go to stderr.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    sys.stdout = sys.stderr
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)  # "timeout is disabled" etc.
    signal.signal(signal.SIGALRM, _on_alarm)
    compare("1", "1", 60.0)  # import math-verify, sympy and the LaTeX parser before "ready"
    out.write('{"ready": true}\n')
    out.flush()
    for line in sys.stdin:
        try:
            req = json.loads(line)
            if req.get("op") == "plain":
                reply = plain(str(req["pred"]), str(req["gold"]), float(req.get("timeout", 5.0)))
            else:
                reply = compare(str(req["pred"]), str(req["gold"]), float(req.get("timeout", 5.0)), bool(req.get("raw")))
        except _Deadline:  # the timer fired between compare()'s try and its finally
            reply = {"ok": False, "timed_out": True}
        except Exception:  # noqa: BLE001 - a malformed request: answer, never die
            reply = {"ok": False}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
