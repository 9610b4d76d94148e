"""Live terminal progress of a sweep (rich): trials by state, step, key metrics, ETA.

Driven by the runner's Tune callback: ``progress.update(trial_id, state=..., step=..., metrics=...)``.
"""

from __future__ import annotations

import time

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sweeps.spec import Trial
from contract.metrics import PROGRESS

SHOWN = PROGRESS
STYLE = {"PENDING": "dim", "RUNNING": "cyan", "FINISHED": "green", "SKIPPED": "green dim", "FAILED": "red",
         "KILLED": "yellow"}


class LiveProgress:
    def __init__(self, name: str, trials: list[Trial], initial: dict[str, str], console: Console | None = None):
        self.name = name
        self.total_steps: dict[str, int] = {}
        self.rows: dict[str, dict] = {}
        for t in trials:
            self.add(t, initial.get(t.trial_id, "PENDING"))
        self.started = time.time()
        self.done_at_start = sum(self._steps_done().values())
        self.console = console or Console()
        self.live: Live | None = None
        self.last_render = 0.0

    def add(self, trial: Trial, state: str = "PENDING") -> None:
        self.total_steps[trial.trial_id] = trial.config.trainer.steps
        self.rows[trial.trial_id] = {"state": state, "step": 0, "metrics": {}}

    def _steps_done(self) -> dict[str, int]:
        return {tid: (self.total_steps[tid] if r["state"] in ("FINISHED", "SKIPPED") else r["step"])
                for tid, r in self.rows.items()}

    def eta_seconds(self) -> float | None:
        done = sum(self._steps_done().values())
        rate = (done - self.done_at_start) / max(time.time() - self.started, 1e-9)
        if rate <= 0:
            return None
        return (sum(self.total_steps.values()) - done) / rate

    def table(self) -> Table:
        counts = {}
        for r in self.rows.values():
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        eta = self.eta_seconds()
        summary = "  ".join(f"{k.lower()}: {v}" for k, v in sorted(counts.items()))
        title = Text(f"sweep {self.name}  [{summary}]  ETA {_fmt_time(eta)}")  # plain text: names are not markup
        table = Table(title=title, expand=False)
        for col in ("trial", "state", "step") + SHOWN:
            table.add_column(col, justify="left" if col in ("trial", "state") else "right")
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

    def update(self, trial_id: str, state: str, step: int | None = None, metrics: dict | None = None) -> None:
        row = self.rows[trial_id]
        row["state"] = state
        if state != "RUNNING" or step is not None:  # steps arrive: the table shows them
            row["note"] = None
        if step is not None:
            row["step"] = step
        if metrics:
            row["metrics"].update(metrics)
        if self.live and (time.time() - self.last_render > 0.5 or state != "RUNNING"):
            self.live.update(self.view())
            self.last_render = time.time()

    def __enter__(self):
        self.live = Live(self.table(), console=self.console, refresh_per_second=2, transient=False)
        self.live.__enter__()
        return self

    def __exit__(self, *exc):
        self.live.update(self.table())
        self.live.__exit__(*exc)
        self.live = None
        if not self.console.is_terminal:
            self.console.line()  # piped: the table is printed once, at the end; what follows starts a new line


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"
