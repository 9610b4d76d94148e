"""CPU seconds used by a process tree (by role: driver, Ray daemons, workers) and by everything else.

    with CpuMeter() as meter:
        ...  # start Ray, run trials
    meter.result  # {"cpu_ours", "cpu_others", "span", "cpu_roles": {"driver": s, "workers": s, ...}}

Linux only (/proc). Used by benchmarks/sweep_overhead.py.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


class CpuMeter:
    """CPU seconds used by this process tree (driver, Ray daemons, workers) and by everything else.

    A thread samples utime+stime of every descendant every second (a process that exits loses at
    most its last interval; at the end the trial workers are idle); the machine's busy time comes
    from /proc/stat. "Others" = machine busy - ours: the load from other jobs that the trials
    competed with.
    """

    INTERVAL_S = 1.0  # a sample costs ~2 ms of CPU, which in (b) and (c) is taken from the trials

    def __init__(self):
        self.hz = os.sysconf("SC_CLK_TCK")
        self.seen: dict[int, float] = {}
        self.roles: dict[int, str] = {}  # pid -> what it is (driver, raylet, gcs, worker, ...)
        self.stop_flag = threading.Event()

    @staticmethod
    def _machine_busy() -> int:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields) - fields[3] - fields[4]  # all but idle and iowait (steal counts as taken)

    def _sample(self) -> None:
        parents: dict[int, int] = {}
        ticks: dict[int, int] = {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            rest = stat.rsplit(")", 1)[1].split()  # fields after the command name
            parents[int(d.name)] = int(rest[1])
            ticks[int(d.name)] = int(rest[11]) + int(rest[12])  # utime + stime
        ours, frontier = {os.getpid()}, [os.getpid()]
        children: dict[int, list[int]] = {}
        for pid, ppid in parents.items():
            children.setdefault(ppid, []).append(pid)
        while frontier:
            for child in children.get(frontier.pop(), []):
                if child not in ours:
                    ours.add(child)
                    frontier.append(child)
        for pid in ours:
            if pid in ticks:
                self.seen[pid] = max(self.seen.get(pid, 0), ticks[pid])
                role = self._role(pid)  # every time: a forked worker execs, then renames itself
                if role != "other" or pid not in self.roles:  # (an exiting process has no cmdline)
                    self.roles[pid] = role

    @staticmethod
    def _role(pid: int) -> str:
        if pid == os.getpid():
            return "driver"
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            return "other"
        exe = Path(argv[0]).name
        if exe in ("ray::DashboardAgent", "ray::RuntimeEnvAgent"):
            return exe[5:]
        if exe.startswith("ray::") or any(a.endswith("default_worker.py") for a in argv[1:3]):
            return "workers"
        if exe in ("raylet", "gcs_server"):
            return exe
        script = " ".join(argv[1:3])  # python [-u] SCRIPT
        for key, role in (("dashboard.py", "dashboard"), ("log_monitor.py", "log monitor"), ("monitor.py", "monitor")):
            if key in script:
                return role
        return "other"

    def _loop(self) -> None:
        while not self.stop_flag.wait(self.INTERVAL_S):
            self._sample()

    def __enter__(self):
        self._sample()
        self.start_seen = dict(self.seen)
        self.t0, self.busy0 = time.perf_counter(), self._machine_busy()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        self.thread.join()
        self._sample()
        wall = time.perf_counter() - self.t0
        busy = (self._machine_busy() - self.busy0) / self.hz
        by_role: dict[str, float] = {}
        for pid, v in self.seen.items():
            role = self.roles.get(pid, "other")
            by_role[role] = by_role.get(role, 0.0) + (v - self.start_seen.get(pid, 0)) / self.hz
        ours = sum(by_role.values())
        self.result = {"cpu_ours": ours, "cpu_others": max(0.0, busy - ours), "span": wall, "cpu_roles": by_role}
        return False
