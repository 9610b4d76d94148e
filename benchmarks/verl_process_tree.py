"""CPU seconds and timestamps of the process tree of one verl run, by role (benchmarks/verl_overhead.py).

    become_subreaper()                    # orphans stay in this process's tree
    with TreeMeter() as meter:            # /proc samples every 0.2 s: CPU by role (ROLES)
        watcher = Watcher(metrics_jsonl, meter, exit_role="verl driver (main_ppo)")
        ...                               # run the command
        meter.wait_quiet()
    meter.by_role, meter.others, watcher.steps, watcher.exited, ray_times(temp_dir, pids)

Linux only (/proc, prctl). Roles: sweep driver, Ray daemons, Ray workers starting, Tune trial worker,
verl driver (main_ppo), verl Ray workers, other (``role_of`` reads each process's command line).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")
ROLES = ("sweep driver", "Ray daemons", "Ray workers starting", "Tune trial worker", "verl driver (main_ppo)",
         "verl Ray workers", "other")


def become_subreaper() -> None:
    """Orphans of our children are re-parented to this process (not to init): they stay in the sampled tree."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, utime+stime ticks, state) of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(d)] = (int(rest[1]), int(rest[11]) + int(rest[12]), rest[0])
    return out


def _descendants(table: dict[int, tuple[int, int, str]]) -> set[int]:
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    found, frontier = set(), [os.getpid()]
    while frontier:
        for child in kids.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def role_of(pid: int) -> str | None:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    if not argv or not argv[0]:
        return None  # a zombie or a process being set up
    exe, joined = Path(argv[0]).name, " ".join(argv)
    if "verl.trainer.main_ppo" in joined:
        return "verl driver (main_ppo)"
    if "sweeps.cli" in joined or (len(argv) > 1 and Path(argv[1]).name == "sweep"):
        return "sweep driver"
    if exe in ("gcs_server", "raylet") or exe in ("ray::RuntimeEnvAgent", "ray::DashboardAgent") or any(
            key in joined for key in ("log_monitor.py", "monitor.py", "dashboard", "runtime_env/agent",
                                      "ray_process_reaper")):
        return "Ray daemons"
    if exe.startswith("ray::IDLE") or "default_worker.py" in joined:
        return "Ray workers starting"
    if exe.startswith(("ray::ImplicitFunc", "ray::run_trial")):
        return "Tune trial worker"
    if exe.startswith("ray::"):
        return "verl Ray workers"
    return "other"


def _machine_busy() -> float:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / HZ  # all but idle and iowait


class TreeMeter:
    """CPU of everything this process starts, by role, from /proc samples every ``interval`` seconds."""

    def __init__(self, interval: float = 0.2):
        self.interval = interval
        self.last: dict[int, int] = {}
        self.role: dict[int, str] = {}
        self.by_role = {r: 0.0 for r in ROLES}
        self.stop_flag = threading.Event()

    def _sample(self) -> None:
        table = _proc_table()
        for pid in _descendants(table):
            ticks = table[pid][1]
            role = role_of(pid) or self.role.get(pid, "other")
            self.role[pid] = role
            self.by_role[role] += (ticks - self.last.get(pid, 0)) / HZ
            self.last[pid] = ticks

    def pids(self, role: str) -> list[int]:
        return [pid for pid, r in list(self.role.items()) if r == role]

    def _loop(self) -> None:
        while not self.stop_flag.wait(self.interval):
            self._sample()

    def __enter__(self):
        self.busy0, self.own0 = _machine_busy(), time.process_time()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def wait_quiet(self, timeout: float = 90.0) -> float:
        """Reap every finished descendant until none is left running; returns when that happened."""
        deadline = time.monotonic() + timeout
        while True:
            while True:  # zombies re-parented to us
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
            table = _proc_table()
            alive = [p for p in _descendants(table) if table[p][2] != "Z"]
            if not alive:
                return time.time()
            if time.monotonic() > deadline:
                print(f"warning: {len(alive)} processes still running after {timeout:g}s: not counted", file=sys.stderr)
                return time.time()
            time.sleep(0.1)

    def __exit__(self, *exc):
        self.stop_flag.set()
        self.thread.join()
        self._sample()
        self.cpu = sum(self.by_role.values())
        self.count = {r: sum(1 for v in self.role.values() if v == r) for r in ROLES}  # processes, by last role
        self.own = time.process_time() - self.own0  # this process: the sampler and the pollers
        self.others = max(0.0, _machine_busy() - self.busy0 - self.cpu - self.own)
        return False


class Watcher:
    """Timestamps, polled every 0.1 s: new lines of a metrics.jsonl (step -> arrival time), the
    appearance of a file, and the exit of the first process of a role once the meter has seen it."""

    def __init__(self, metrics: Path, meter: TreeMeter, exit_role: str | None):
        self.metrics, self.meter, self.exit_role = metrics, meter, exit_role
        self.steps: dict[int, float] = {}
        self.exit_pid: int | None = None
        self.exited: float | None = None
        self.offset, self.partial = 0, b""
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            with open(self.metrics, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        now = time.time()
        self.offset += len(chunk)
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()
        for raw in lines:
            try:
                self.steps.setdefault(int(json.loads(raw)["step"]), now)
            except (ValueError, KeyError, TypeError):
                continue

    def _poll_exit(self) -> None:
        if self.exit_role is None or self.exited is not None:
            return
        if self.exit_pid is None:
            pids = self.meter.pids(self.exit_role)
            self.exit_pid = pids[0] if pids else None
            return
        try:
            state = Path(f"/proc/{self.exit_pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "Z"
        if state == "Z":
            self.exited = time.time()

    def _loop(self) -> None:
        while not self.stop_flag.wait(0.1):
            self._read()
            self._poll_exit()

    def stop(self) -> None:
        self.stop_flag.set()
        self.thread.join()
        self._read()


def _ray_ts(path: Path) -> float | None:
    """Time of the first line of one of Ray's logs ('[2026-11-23 03:27:40,188 I ...')."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)", line)
                if m:
                    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except OSError:
        pass
    return None


def ray_times(temp_dir: Path, driver_pids: dict[str, int | None]) -> dict[str, float | None]:
    """'ray_start': the GCS's first log line; '<name>': when the driver with that pid connected."""
    logs = temp_dir / "session_latest" / "logs"
    out: dict[str, float | None] = {"ray_start": _ray_ts(logs / "gcs_server.out")}
    for name, pid in driver_pids.items():
        found = sorted(logs.glob(f"python-core-driver-*_{pid}.log")) if pid else []
        out[name] = _ray_ts(found[0]) if found else None
    return out


def wait_for_quiet(limit_s: float, max_cores: float = 0.3) -> float:
    """Wait (up to ``limit_s``) until other processes use < ``max_cores`` cores over 3 s; returns their
    load then (cores). Both modes start under comparable load; the load during each run is printed."""
    deadline = time.monotonic() + limit_s
    while True:
        busy0, t0 = _machine_busy(), time.monotonic()
        time.sleep(3.0)
        cores = (_machine_busy() - busy0) / (time.monotonic() - t0)
        if cores < max_cores or time.monotonic() > deadline:
            return cores
