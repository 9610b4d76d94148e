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

    python -m evaluators.verify_worker --smoke    # a few comparisons in this process, the protocol's answers
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


SMOKE_PAIRS = (("\\frac{1}{2}", "0.5", True), ("\\{1,2\\}", "\\{2,1\\}", True), ("(0,1]", "[0,1]", False),
               ("\\sqrt{2}/2", "\\frac{\\sqrt2}{2}", True))
"""(pred, gold, equivalent) of --smoke: math-verify's LaTeX and symbolic forms."""


def _quiet_and_timed() -> None:
    """math-verify's warnings and log lines off ("timeout is disabled" etc.), our interval timer on."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    signal.signal(signal.SIGALRM, _on_alarm)


def smoke() -> int:
    """Answer SMOKE_PAIRS as the worker would (same timer, same replies); 0 when each is as expected."""
    _quiet_and_timed()
    wrong = 0
    for pred, gold, expected in SMOKE_PAIRS:
        reply = compare(pred, gold, 60.0)
        wrong += reply.get("ok") is not expected
        print(f"{pred} vs {gold}: {json.dumps(reply)}" + ("" if reply.get("ok") is expected else "  (unexpected)"))
    if wrong:
        print(f"smoke failed: {wrong} of {len(SMOKE_PAIRS)} comparisons unexpected", file=sys.stderr)
        return 1
    print(f"smoke ok: {len(SMOKE_PAIRS)} comparisons answered as expected (math-verify in this process)")
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m evaluators.verify_worker",
        description="Internal: the worker process evaluators.verifier starts (as `python .../verify_worker.py "
                    "PARENT_PID`) for its math-verify comparisons; it answers JSON-line requests on stdin until "
                    "stdin closes. Not a command to run by hand, except --smoke.")
    parser.add_argument("parent_pid", nargs="?", type=int, default=0,
                        help="the verifier's process id: the worker exits when that process dies (0: no check)")
    parser.add_argument("--smoke", action="store_true",
                        help="compare a few answer pairs in this process, print the replies, exit (seconds)")
    args = parser.parse_args(argv)
    if args.smoke:
        return smoke()
    _die_with_parent(args.parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    # Our protocol owns the real stdout; stray prints from libraries go to stderr.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    sys.stdout = sys.stderr
    _quiet_and_timed()
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
