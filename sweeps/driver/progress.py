"""Progress of a sweep: a live table on a terminal, status lines in a batch log.

Driven by the runner's Tune callback: ``progress.update(trial_id, state=..., step=..., metrics=...)``.

    with LiveProgress(name, trials, statuses, status_every=60.0):   # the runner's use
        ...

On a terminal: a rich table (trials by state, step, key metrics, ETA) redrawn as steps arrive. When
stdout is not a terminal (``sweep run ... > log``, a cluster job), instead of a table drawn once at the
end: a line per trial start and end (its step and key metrics), and every ``status_every`` seconds
(``sweep run --status-every``, env SWEEP_STATUS_EVERY; 0 = off, as ``--quiet``) one status line:
elapsed, counts by state, steps done / total, ETA and the best val/avg/acc so far, e.g.

    [status 12m00s] sweep dhpo_vs_baselines: finished 6, running 2, pending 10; steps 1400/3600; ETA 18m52s; best val/avg/acc 0.594 (grpo.s1)
"""

from __future__ import annotations

import threading
import time

from rich.console import Console, Group
from rich.live import Live
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from sweeps.specs.load import Trial
from contract.metrics import PROGRESS, VAL_AVG

SHOWN = PROGRESS
STYLE = {"PENDING": "dim", "RUNNING": "cyan", "FINISHED": "green", "SKIPPED": "green dim", "FAILED": "red",
         "KILLED": "yellow"}


class LiveProgress:
    def __init__(self, name: str, trials: list[Trial], initial: dict[str, str], console: Console | None = None,
                 status_every: float = 60.0):
        self.name = name
        self.status_every = status_every
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self.total_steps: dict[str, int] = {}
        self.rows: dict[str, dict] = {}
        for t in trials:
            self.add(t, initial.get(t.trial_id, "PENDING"))
        self.started = time.time()
        self.stepping_since: float | None = None  # when the first step arrived: the ETA's clock (not the base's build)
        self.done_at_start = sum(self._steps_done().values())
        self.console = console or Console()
        self.live: Live | None = None
        self.last_render = 0.0

    def add(self, trial: Trial, state: str = "PENDING") -> None:
        self.total_steps[trial.trial_id] = trial.config.trainer.steps
        self.rows[trial.trial_id] = {"state": state, "step": 0, "metrics": {}}

    def _steps_done(self) -> dict[str, int]:
        rows = dict(self.rows)  # a copy: the status thread reads while a search adds trials
        return {tid: (self.total_steps.get(tid, 0) if r["state"] in ("FINISHED", "SKIPPED") else r["step"])
                for tid, r in rows.items()}

    def eta_seconds(self) -> float | None:
        done = sum(self._steps_done().values())
        since = self.stepping_since if self.stepping_since is not None else self.started
        rate = (done - self.done_at_start) / max(time.time() - since, 1e-9)
        if rate <= 0:
            return None
        return (sum(dict(self.total_steps).values()) - done) / rate

    def table(self) -> Table:
        counts = {}
        for r in self.rows.values():
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        eta = self.eta_seconds()
        summary = "  ".join(f"{k.lower()}: {v}" for k, v in sorted(counts.items()))
        title = Text(f"sweep {self.name}  [{summary}]  ETA {_fmt_time(eta)}")  # plain text: names are not markup
        table = Table(title=title, expand=False)
        widest = max((len(tid) for tid in self.rows), default=5)
        for col in ("trial", "state", "step") + SHOWN:  # trial ids are never cut, piped or not
            table.add_column(col, justify="left" if col in ("trial", "state") else "right",
                             no_wrap=col == "trial", min_width=widest if col == "trial" else None)
        order = {"RUNNING": 0, "FAILED": 1, "KILLED": 1, "PENDING": 2, "FINISHED": 3, "SKIPPED": 4}
        for tid, r in sorted(self.rows.items(), key=lambda kv: (order[kv[1]["state"]], kv[0])):
            m = r["metrics"]
            step = self.total_steps[tid] if r["state"] in ("FINISHED", "SKIPPED") else r["step"]
            table.add_row(Text(tid), Text(r["state"], style=STYLE[r["state"]]), f"{step}/{self.total_steps[tid]}",
                          *[f"{m[k]:.3f}" if k in m else "" for k in SHOWN])
        return table

    def note(self, trial_id: str, text: str | None) -> None:
        """A running trial's line before its first step (building its base policy, resuming), shown
        under the table on a terminal and printed as a line elsewhere; None clears it."""
        row = self.rows.get(trial_id)
        if row is None or row.get("note") == text:
            return
        row["note"] = text
        if text and not self.console.is_terminal:
            self.console.print(f"[{trial_id}] {text}", markup=False, highlight=False, soft_wrap=True)
        elif self.live:
            self.live.update(self.view())
            self.last_render = time.time()

    def view(self) -> Table | Group:
        """The table, and under it the running trials' notes (lines as wide as the terminal)."""
        notes = [f"{tid}: {r['note']}" for tid, r in self.rows.items() if r.get("note")]
        return Group(self.table(), Text("\n".join(notes))) if notes else self.table()

    @property
    def batch(self) -> bool:
        """Status lines instead of a live table: stdout is not a terminal and they are not turned off."""
        return not self.console.is_terminal and self.status_every > 0

    def _line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def status_line(self) -> str:
        """One line: elapsed, counts by state, steps done / total, ETA, the best val/avg/acc so far."""
        rows = dict(self.rows)
        counts: dict[str, int] = {}
        for r in rows.values():
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        order = ("FINISHED", "SKIPPED", "RUNNING", "PENDING", "FAILED", "KILLED")
        states = ", ".join(f"{k.lower()} {counts[k]}" for k in order if counts.get(k))
        done, total = sum(self._steps_done().values()), sum(dict(self.total_steps).values())
        scored = [(r["metrics"][VAL_AVG], tid) for tid, r in rows.items() if VAL_AVG in r["metrics"]]
        best = f"; best {VAL_AVG} {max(scored)[0]:.3f} ({max(scored)[1]})" if scored else ""
        return (f"[status {_fmt_time(time.time() - self.started)}] sweep {self.name}: {states}; steps {done}/{total}; "
                f"ETA {_fmt_time(self.eta_seconds())}{best}")

    def _tick(self) -> None:
        while not self._stop.wait(self.status_every):
            self._line(self.status_line())

    def _transition(self, trial_id: str, before: str, row: dict) -> None:
        """A batch log's line per trial start and end."""
        state = row["state"]
        if state == "RUNNING" and before != "RUNNING":
            self._line(f"[{trial_id}] started")
        elif state in ("FINISHED", "FAILED", "KILLED") and before != state:
            m = row["metrics"]
            shown = "  ".join(f"{k}={m[k]:.4g}" for k in SHOWN if k in m)
            step = self.total_steps[trial_id] if state == "FINISHED" else row["step"]
            self._line(f"[{trial_id}] {state.lower()} at step {step}/{self.total_steps[trial_id]}  {shown}".rstrip())

    def update(self, trial_id: str, state: str, step: int | None = None, metrics: dict | None = None) -> None:
        row = self.rows[trial_id]
        before = row["state"]
        row["state"] = state
        if state != "RUNNING" or step is not None:  # steps arrive: the table shows them
            row["note"] = None
        if step is not None:
            if self.stepping_since is None and step > row["step"]:
                self.stepping_since = time.time()
            row["step"] = step
        if metrics:
            row["metrics"].update(metrics)
        if self.batch:
            self._transition(trial_id, before, row)
        if self.live and (time.time() - self.last_render > 0.5 or state != "RUNNING"):
            self.live.update(self.view())
            self.last_render = time.time()

    def __enter__(self):
        if self.batch:
            self._line(self.status_line())
            self._ticker = threading.Thread(target=self._tick, name="sweep-status", daemon=True)
            self._ticker.start()
        if self.console.is_terminal:  # piped, the table is printed once, at the end (__exit__)
            self.live = Live(self.table(), console=self.console, refresh_per_second=2, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
            self._line(self.status_line())
        if self.live is not None:
            self.live.update(self.table())
            self.live.__exit__(*exc)
            self.live = None
            return
        # piped: the table once, as wide as its cells need (a log has no width), so no cell is cut
        table = self.table()
        needed = Measurement.get(self.console, self.console.options.update_width(1000), table).maximum
        width = self.console.width
        self.console.width = max(width, needed)
        try:
            self.console.print(table)
        finally:
            self.console.width = width


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"
