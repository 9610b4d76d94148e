"""A real two-node Slurm cluster for the `sweep slurm` tests: MUNGE, slurmctld and two slurmd (`slurmd -N`, half
of this machine's CPUs each) from Debian's packages, each started here in the foreground with every file under
one short temp dir (its key, sockets, state, spool, logs and slurm.conf), on free ports. Clients find it through
SLURM_CONF.

stop() cancels what is left of the jobs, then ends the three daemons by pid and every process whose command line
names the temp dir (a job's script, its steps' Ray nodes when their temp dir is under it)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

from cluster_testlib import free_port
from sweep_testlib import kill_pids, pids_under, wait_for

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
PARTITION = "debug"


def slurm_missing() -> str | None:
    """Why the Slurm tests cannot run here (None: they can)."""
    missing = [d for d in DAEMONS if shutil.which(d) is None and not Path(f"/usr/sbin/{d}").exists()]
    if missing:
        return f"Slurm/MUNGE not installed ({', '.join(missing)}): apt-get install slurmctld slurmd slurm-client munge"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs"
    return None


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class SlurmCluster:
    """One partition, ``debug``, of two nodes on this machine (``<host>1`` and ``<host>2``), jobs requeueable."""

    def __init__(self, root: Path):
        self.root = root
        self.conf = root / "slurm.conf"
        self.host = socket.gethostname().split(".")[0]
        self.nodes = [f"{self.host}{i}" for i in (1, 2)]
        self.cpus_per_node = max(1, (os.cpu_count() or 2) // 2)
        self.procs: list[subprocess.Popen] = []

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def start(self) -> None:
        r = self.root
        for sub in ("key", "sock", "state", "spool", "log"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "key", 0o700)
        os.chmod(r / "sock", 0o755)
        subprocess.run([_exe("mungekey"), "--create", "--keyfile", str(r / "key" / "munge.key")], check=True,
                       capture_output=True)
        os.chmod(r / "key" / "munge.key", 0o400)
        socket_path = r / "sock" / "munge.sock"
        self._start([_exe("munged"), "--foreground", "--force", f"--key-file={r / 'key' / 'munge.key'}",
                     f"--socket={socket_path}", f"--pid-file={r / 'sock' / 'munged.pid'}",
                     f"--log-file={r / 'log' / 'munged.log'}", f"--seed-file={r / 'key' / 'seed'}"])
        wait_for(socket_path.exists, timeout=30, interval=0.1)
        self.conf.write_text(self._config(socket_path))
        (r / "plugstack.conf").write_text("")
        self._start([_exe("slurmctld"), "-D", "-f", str(self.conf)])
        for node in self.nodes:
            (r / "spool" / node).mkdir()
            self._start([_exe("slurmd"), "-D", "-N", node, "-f", str(self.conf)], name=f"slurmd-{node}")
        wait_for(lambda: self.ask("sinfo", "--noheader", "--format=%T %D").split() == ["idle", "2"], timeout=60)

    def _config(self, munge_socket: Path) -> str:
        r = self.root
        nodes = [f"NodeName={node} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={free_port()} "
                 f"CPUs={self.cpus_per_node} RealMemory=1000 State=UNKNOWN" for node in self.nodes]
        return "\n".join([
            "ClusterName=sweeptest", f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={free_port()}", "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={munge_socket}",
            f"StateSaveLocation={r / 'state'}", f"SlurmdSpoolDir={r / 'spool' / '%n'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}", f"SlurmdPidFile={r / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={r / 'log' / 'slurmd-%n.log'}",
            f"PlugStackConfig={r / 'plugstack.conf'}", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "MpiDefault=none", "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            "ReturnToService=2", "KillWait=120", "MinJobAge=3600", "JobRequeue=1",  # KillWait: a loaded 2-core machine
            *nodes, f"PartitionName={PARTITION} Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP", ""])

    def _start(self, args: list[str], name: str | None = None) -> None:
        log = (self.root / "log" / f"{name or Path(args[0]).name}.out").open("w")
        self.procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env={**os.environ, **self.env}, start_new_session=True))

    def ask(self, *args: str) -> str:
        """A Slurm client command's stdout (check=True)."""
        return subprocess.run([_exe(args[0]), *args[1:]], env={**os.environ, **self.env}, capture_output=True,
                              text=True, check=True, timeout=60).stdout

    def job_state(self, job_id: str) -> str:
        """'PENDING BeginTime', 'RUNNING None', 'COMPLETED None', ... ('' once Slurm forgot it)."""
        return self.ask("squeue", "--noheader", "--states=all", f"--jobs={job_id}", "--format=%T %r").strip()

    def log(self) -> str:
        return "".join(p.read_text(errors="replace")[-3000:] for p in sorted((self.root / "log").glob("*.log")))

    def stop(self, *also: Path) -> None:
        """Cancel every job, end the daemons (TERM, then KILL after 10 s) and every process naming the temp dir or
        one of ``also`` (the Ray temp dirs of the jobs)."""
        try:
            self.ask("scancel", "--user=root")
            wait_for(lambda: not self.ask("squeue", "--noheader", "--format=%i").strip(), timeout=45)
        except (subprocess.SubprocessError, OSError, TimeoutError):
            pass
        steps = self._step_daemons()
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for marker in (self.root, *also):
            kill_pids(pids_under(str(marker)))
        kill_pids(steps)

    def _step_daemons(self) -> list[int]:
        """The slurmstepd processes of this cluster's jobs (their environment names its slurm.conf)."""
        found = []
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and (proc / "comm").read_text().startswith("slurmstepd") and \
                        f"SLURM_CONF={self.conf}".encode() in (proc / "environ").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
        return found
