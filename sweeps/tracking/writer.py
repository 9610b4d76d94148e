"""Trials never wait on MLflow: the driver journals what trials report, a thread writes it to the store.

    writer = TrackingWriter(journal_path, get_tracker, outage_limit_s=3600, echo=print)
    writer.start()
    writer.log_steps(trial_id, [(step, time, metrics), ...])   # durable on local disk when it returns
    writer.end_trial(trial_id, "FINISHED")
    writer.raise_if_failed()          # the driver's loop: a real store error, or an outage past the limit
    writer.drain(timeout_s)           # everything journaled is in the store (the end of a sweep)

The journal (``<run dir>/<sweep>/tracking/journal-<hash of the store URI>.jsonl``) is an append-only file of
JSON lines, fsync'd on every append, beside ``.offset``: how far the writer has written. Operations (``Op``, each
with its way into the store in ``APPLY``): ``start``, ``steps``, ``tags``, ``end``, ``eval``, ``verdicts`` of a trial;
a new tracked event is an ``Op``, its ``APPLY`` entry and the driver's method that journals it. The writer reads whole lines from the offset in bounded
chunks (memory stays bounded however long an outage lasts), applies them through ``SweepTracker`` (which skips
steps the store already has and writes whole steps per transaction), then moves the offset; once caught up the
journal is emptied. Every ``COPY_EVERY`` ended trials (or ``COPY_AFTER_S`` after the first of them) it also writes
the read copy's next segment (tracking_store/read_copy.py), the trials' records and histories as the store now
holds them; the driver writes the last one when the sweep ends. Every operation is idempotent, so a driver killed between a write and the offset update
replays it harmlessly: a re-run of the sweep replays the journal before any trial starts (each step once).

Outages: a transient store error (tracking_store/client.py ``is_transient``) is retried with backoff, forever, while
trials go on. The writer says ``tracking store unreachable since T; N steps held; retrying`` once (and every 5
minutes), and ``tracking store reachable again after Ds; writing N held steps`` on recovery. An outage longer
than ``outage_limit_s`` becomes ``TrackingOutage`` (exit 75) in the driver's loop: the sweep ends as an
interruption, the journal keeps everything, the same command resumes. A non-transient error fails the sweep.
"""

from __future__ import annotations

import json
import os
import threading
import time
from enum import Enum
from pathlib import Path
from typing import Callable

from contract.errors import RESUME_HINT
from contract.run_layout import SweepLayout
from tracking_store.client import is_transient
from tracking_store.lease import LEASE_HEARTBEAT_S
from tracking_store.uri import where

ROUND_S = 1.0  # the writer's idle tick (heartbeat, retries); it wakes at once when something is journaled
CHUNK_BYTES = 4 << 20  # the most journal read into memory at once
REMIND_S = 300.0  # an outage is said again this often
COPY_EVERY = 50  # ended trials that make the read copy's next segment (tracking_store/read_copy.py) ...
COPY_AFTER_S = 300.0  # ... or this long after the first of them ended, whichever comes first
OUTAGE_EXIT = 75  # EX_TEMPFAIL: try again later
RETRY_MAX_S = 5.0  # the longest wait between two tries during an outage (how soon a recovery is seen)


class Op(str, Enum):
    """A journaled operation on a trial: the ``op`` of a journal line."""

    START = "start"
    STEPS = "steps"
    TAGS = "tags"
    END = "end"
    EVAL = "eval"
    VERDICTS = "verdicts"


def _log_steps(tracker, trial_id: str, op: dict) -> None:
    for step, when, metrics in op["steps"]:
        tracker.log_result(trial_id, int(step), metrics, timestamp=float(when))


def _set_tags(tracker, trial_id: str, op: dict) -> None:
    tracker.flush(trial_id)  # the steps before the tags first
    tracker.set_tags(trial_id, op["tags"])


APPLY: dict[Op, Callable[[object, str, dict], None]] = {
    Op.START: lambda tracker, trial_id, op: None,  # the trial's run is made (or found) before any op but steps
    Op.STEPS: _log_steps,
    Op.TAGS: _set_tags,
    Op.END: lambda tracker, trial_id, op: tracker.end_trial(trial_id, op["status"], error=op.get("error"),
                                                            reason=op.get("reason")),
    Op.EVAL: lambda tracker, trial_id, op: tracker.log_eval(trial_id, op["evaluations"]),
    Op.VERDICTS: lambda tracker, trial_id, op: tracker.log_verdicts(trial_id, op["step"], op["text"]),
}
"""How each operation reaches the store, through sweeps/tracking/sweep_runs.py's SweepTracker."""


class TrackingOutage(KeyboardInterrupt):
    """The store stayed unreachable longer than the limit; the sweep ends as an interruption (exit 75)."""

    exit_code = OUTAGE_EXIT


def journal_path(sweep_dir: Path, tracking_uri: str) -> Path:
    """One journal per store: a run directory used with two stores never replays one's steps into the other
    (contract/run_layout.py ``SweepLayout.journal``)."""
    return SweepLayout.of_dir(sweep_dir).journal(tracking_uri)


class Journal:
    """Append-only JSON lines with a durable read offset (see the module docstring)."""

    def __init__(self, path: Path):
        self.path, self.offset_path = path, path.with_suffix(".offset")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        with open(path, "ab+") as f:  # a line torn by a killed driver was never acknowledged: drop it
            f.seek(0)
            data = f.read()
            whole = data.rfind(b"\n") + 1
            if whole < len(data):
                f.truncate(whole)
        self.size = whole
        try:
            self.committed = min(int(self.offset_path.read_text()), self.size)
        except (OSError, ValueError):
            self.committed = 0
        self.held = sum(len(op.get("steps", ())) for op in self._ops(self.committed, self.size))

    def _ops(self, start: int, end: int):
        with open(self.path, "rb") as f:  # line by line: a long outage's journal is never read whole
            f.seek(start)
            while f.tell() < end:
                yield json.loads(f.readline())

    def append(self, op: dict) -> None:
        line = (json.dumps(op, separators=(",", ":")) + "\n").encode()
        with self.lock:
            with open(self.path, "ab") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self.size += len(line)
            self.held += len(op.get("steps", ()))

    def read(self) -> tuple[list[dict], int]:
        """Whole operations after the offset, at most ``CHUNK_BYTES`` (one at least), and where they end."""
        with self.lock:
            start, size = self.committed, self.size
        if start >= size:
            return [], start
        with open(self.path, "rb") as f:
            f.seek(start)
            data = f.read(min(size - start, CHUNK_BYTES))
        whole = data.rfind(b"\n") + 1
        if whole == 0:  # one operation longer than a chunk
            with open(self.path, "rb") as f:
                f.seek(start)
                data = f.readline()
            whole = len(data)
        return [json.loads(line) for line in data[:whole].splitlines()], start + whole

    def commit(self, ops: list[dict], end: int) -> None:
        with self.lock:
            self.held -= sum(len(op.get("steps", ())) for op in ops)
            self.committed = end
            if end >= self.size:  # caught up: start an empty journal
                with open(self.path, "wb"):
                    pass
                self.size = self.committed = 0
            tmp = self.offset_path.with_suffix(".offset.tmp")
            tmp.write_text(str(self.committed))
            os.replace(tmp, self.offset_path)

    def set_aside(self, why: str) -> Path:
        """Keep the unwritten operations in ``<journal>.<why>-<time>.jsonl`` and start an empty journal."""
        with self.lock:
            kept = self.path.with_name(f"{self.path.stem}.{why}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
            with open(self.path, "rb") as src, open(kept, "wb") as dst:
                src.seek(self.committed)
                dst.write(src.read())
            with open(self.path, "wb"):
                pass
            self.size = self.committed = self.held = 0
            self.offset_path.write_text("0")
        return kept

    def pending(self) -> bool:
        with self.lock:
            return self.committed < self.size


class TrackingWriter(threading.Thread):
    """The driver's only MLflow writer, in its own thread (see the module docstring)."""

    def __init__(self, journal: Journal, get_tracker: Callable, outage_limit_s: float, echo: Callable[[str], None],
                 trial_of: Callable[[str, dict | None], object]):
        super().__init__(name="tracking-writer", daemon=True)
        self.journal, self.get_tracker, self.outage_limit_s, self.echo = journal, get_tracker, outage_limit_s, echo
        self.trial_of = trial_of
        self.accepted: dict[str, int] = {}  # trial id -> the last step journaled (what the callback dedups against)
        self.started: set[str] = set()
        self.failure: BaseException | None = None
        self.down_since: float | None = None
        self.wake, self.stopping = threading.Event(), threading.Event()
        self.idle = threading.Event()
        self.last_heartbeat = time.monotonic()
        self.store_name = ""
        self.ended, self.first_ended = 0, 0.0  # trials ended since the read copy's last segment, and when the first

    # ---- the driver's side: journal only, never MLflow ----------------------------------------------
    def start_trial(self, trial_id: str, tune_config: dict | None = None) -> None:
        self._append(Op.START, trial_id, **({"tune_config": tune_config} if tune_config else {}))
        self.started.add(trial_id)

    def log_steps(self, trial_id: str, steps: list[tuple[int, float, dict]]) -> None:
        """Journal the steps after the last one accepted (a retried trial replays steps)."""
        last = self.accepted.get(trial_id, -1)
        new = [[step, when, metrics] for step, when, metrics in steps if step > last]
        if new:
            self._append(Op.STEPS, trial_id, steps=new)
            self.accepted[trial_id] = new[-1][0]

    def set_tags(self, trial_id: str, tags: dict[str, str]) -> None:
        self._append(Op.TAGS, trial_id, tags={k: str(v) for k, v in tags.items()})

    def end_trial(self, trial_id: str, status: str, error: str | None = None, reason: str | None = None) -> None:
        self._append(Op.END, trial_id, status=status, error=error, reason=reason)

    def log_eval(self, trial_id: str, evaluations: list[dict]) -> None:
        self._append(Op.EVAL, trial_id, evaluations=evaluations)

    def log_verdicts(self, trial_id: str, step: int, text: str) -> None:
        self._append(Op.VERDICTS, trial_id, step=int(step), text=text)

    def last_step(self, trial_id: str) -> int:
        return self.accepted.get(trial_id, -1)

    def _append(self, op: Op, trial_id: str, **fields) -> None:
        self.journal.append({"op": op.value, "trial": trial_id, **fields})
        self.idle.clear()
        self.wake.set()  # written at once; what arrives while a write is under way goes in the next one

    def raise_if_failed(self) -> None:
        if self.failure is not None:
            raise self.failure

    def drain(self, timeout_s: float | None = None) -> bool:
        """Wait until everything journaled is in the store; False on a timeout. Raises the writer's failure."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            self.raise_if_failed()
            if not self.journal.pending() and self.idle.is_set():
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            self.wake.set()
            time.sleep(0.05)

    def close(self) -> None:
        self.stopping.set()
        self.wake.set()
        self.join(timeout=30)

    # ---- the writer thread -------------------------------------------------------------------------
    def run(self) -> None:
        try:
            tracker = self.get_tracker()
            self.store_name = where(tracker.tracking_uri)
            while not self.stopping.is_set():
                self.wake.wait(ROUND_S)
                self.wake.clear()
                self._round(tracker)
        except BaseException as err:  # noqa: BLE001 - handed to the driver's loop
            self.failure = err
            self.idle.set()

    def _round(self, tracker) -> None:
        while True:
            ops, end = self.journal.read()
            if not ops:
                break
            self.retrying(lambda: self._apply(tracker, ops))
            self.journal.commit(ops, end)
            self._copy_when_due(tracker)  # here too: a writer behind the trials may not catch up for long
        self.retrying(tracker.flush)
        self._copy_when_due(tracker)
        if time.monotonic() - self.last_heartbeat > LEASE_HEARTBEAT_S:
            self.retrying(tracker.lease.heartbeat)
            self.last_heartbeat = time.monotonic()
        if not self.journal.pending():
            self.idle.set()

    def _copy_when_due(self, tracker) -> None:
        if self.ended >= COPY_EVERY or (self.ended and time.monotonic() - self.first_ended > COPY_AFTER_S):
            self.retrying(tracker.write_copy)
            self.ended = 0

    def _apply(self, tracker, ops: list[dict]) -> None:
        for op in ops:
            tid, kind = op["trial"], Op(op["op"])
            if kind is not Op.STEPS and (kind is Op.START or tid not in tracker.children):
                tracker.start_trial(self.trial_of(tid, op.get("tune_config")))  # a replay may begin after its start
            APPLY[kind](tracker, tid, op)
            if kind is Op.END:
                self.first_ended = self.first_ended if self.ended else time.monotonic()
                self.ended += 1
        tracker.flush()

    def retrying(self, write: Callable[[], object]) -> None:
        """Run ``write`` until it succeeds: transient errors are waited out (saying so), others raised."""
        delay, reminded = 1.0, 0.0
        while True:
            try:
                write()
            except Exception as err:  # noqa: BLE001 - sorted below
                if not is_transient(err):
                    raise
                now = time.time()
                if self.down_since is None:
                    self.down_since = reminded = now
                    self.echo(f"tracking store {self.store_name} unreachable since {time.strftime('%H:%M:%S')}; "
                              f"{self.journal.held} steps held; retrying (trials go on; limit {self.outage_limit_s:.0f}s)")
                elif now - reminded > REMIND_S:
                    reminded = now
                    self.echo(f"tracking store {self.store_name} still unreachable ({now - self.down_since:.0f}s); "
                              f"{self.journal.held} steps held; retrying")
                if now - self.down_since > self.outage_limit_s:
                    raise TrackingOutage(
                        f"tracking store {self.store_name} unreachable for {now - self.down_since:.0f}s (limit "
                        f"{self.outage_limit_s:.0f}s, --tracking-outage-limit); {self.journal.held} steps are held in "
                        f"{self.journal.path}: nothing is lost. {RESUME_HINT} once the store is back") from err
                self.wake.wait(delay)
                self.wake.clear()
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            if self.down_since is not None:
                self.echo(f"tracking store {self.store_name} reachable again after {time.time() - self.down_since:.0f}s; "
                          f"writing {self.journal.held} held steps")
                self.down_since = None
            return
