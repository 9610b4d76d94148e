"""Ctrl-C and SIGTERM of a sweep driver: stop at a safe point and tell the truth about it.

    guard = InterruptGuard()
    with guard.installed():          # SIGINT/SIGTERM raise SweepInterrupted in the main thread
        with guard.critical():       # ... but never in the middle of an MLflow write
            tracker.log_result(...)

A signal that arrives inside ``critical()`` is held until the block ends, so a step's metrics are
either written whole or not at all. The runner then marks the parent run and the interrupted
trials KILLED and the CLI exits 130 (SIGINT) or 143 (SIGTERM) with "interrupted: run the same
command again to resume".
"""

from __future__ import annotations

import contextlib
import signal
import threading

from contract.errors import RESUME_HINT



class SweepInterrupted(KeyboardInterrupt):
    """The driver got SIGINT or SIGTERM; ``exit_code`` is 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(f"{signal.Signals(signum).name}: {RESUME_HINT}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class InterruptGuard:
    def __init__(self):
        self.depth = 0
        self.pending: int | None = None
        self.received: int | None = None  # the last signal, kept even if Ray re-raises a bare KeyboardInterrupt

    def _handle(self, signum, frame) -> None:
        self.received = signum
        if self.depth:
            self.pending = signum  # raised when the critical section ends
            return
        raise SweepInterrupted(signum)

    @contextlib.contextmanager
    def installed(self):
        """Install the handlers (main thread only; elsewhere this is a no-op) and restore them after."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    @contextlib.contextmanager
    def critical(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        if not self.depth and self.pending is not None:
            signum, self.pending = self.pending, None
            raise SweepInterrupted(signum)
