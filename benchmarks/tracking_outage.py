"""A tracking-server outage in the middle of a sweep: what it costs the trials, the driver's memory, the flush.

    python benchmarks/tracking_outage.py                  # 2 trials x 3000 steps, a 120 s outage (~6 min)
    python benchmarks/tracking_outage.py --smoke          # 2 x 20 steps, a 2 s outage (~2 min on 2 cores)
    python benchmarks/tracking_outage.py --outage-s 300 --steps 8000

A real `mlflow server` on 127.0.0.1 (sqlite backend) and `sweep run` exactly as a user types it against it
(`--tracking-uri http://...`, a local Ray, two one-CPU GRPO trials of the built-in trainer on a random-init
tiny base, one validation at the start and at the end, no checkpoints but the final one). Two runs, in one
process, side by side:

  (a) no outage: the peer;
  (b) the server is killed once the first step is in the store, kept down ``--outage-s`` seconds, restarted.

Printed per run: the sweep's wall time and (b)/(a); the driver process's peak resident memory (the `sweep`
process only, sampled every 0.2 s; Ray's workers are separate processes) overall and during the outage;
for (b) the steps the driver held when the server came back (its own "writing N held steps" line), the
journal's peak size on disk, and the flush time: server back up -> the journal empty (every held step in
the store). Both runs end by checking that every step of every trial is in the store exactly once.

MLflow's http retry budget is cut to seconds in both runs (MLFLOW_HTTP_REQUEST_MAX_RETRIES=0), as a driver
sets it by default (tracking_store/client.py). Everything is written under ``runs/tracking_outage-<time>/`` (removed
unless --keep) and Ray's temp dir ``.rt/outage-*``. The driver runs in a session of its own; at the end every
process of that session (the local Ray's too) is ended by pid.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from chaos_procs import kill_sessions
from contract.env import MLFLOW_SERVER_JOBS
from tracking_store.roles import TRIAL, role_filter

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root: Path):
        self.root, self.port, self.proc = root, _free_port(), None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/health", timeout=2):
                return True
        except OSError:
            return False

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{self.root / 'server.db'}",
             "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
             "--artifacts-destination", str(self.root / "artifacts")],
            env={**os.environ, MLFLOW_SERVER_JOBS.name: "false"},  # as docs/clusters.md starts it
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        while not self.up():
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def write_spec(root: Path, name: str, steps: int) -> Path:
    spec = {
        "name": name,
        "defaults": [{"trainer": "local_tiny"}, {"model": "tiny_qwen3"}, {"data": "arith"}],
        "base": {"trainer": {"steps": steps, "eval_every": steps, "eval_k": 1, "checkpoint_every": 0},
                 "data": {"eval_size": 8},
                 "local": {"warm_start": {"steps": 0, "cache_dir": str(REPO / ".cache" / "base_models")}}},
        "seeds": [0, 1], "resources": {"cpus": 1, "gpus": 0}, "max_concurrent": 2,
        "variants": [{"algorithm": "grpo"}],
    }
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def steps_in_store(server: Server, sweep: str) -> dict[str, list[int]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(server.uri)
    exp = client.get_experiment_by_name(sweep)
    runs = client.search_runs([exp.experiment_id], role_filter(TRIAL))
    return {r.data.tags["trial_id"]: sorted(m.step for m in client.get_metric_history(r.info.run_id, "reward/mean"))
            for r in runs}


def run(root: Path, server: Server, name: str, steps: int, outage_s: float) -> dict:
    spec = write_spec(root, name, steps)
    ray_dir = Path(tempfile.mkdtemp(prefix="outage-", dir=REPO / ".rt"))
    env = {**os.environ, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
    env.pop("MLFLOW_TRACKING_URI", None)
    log = root / f"{name}.log"
    started = time.perf_counter()
    driver = subprocess.Popen([str(BIN / "sweep"), "run", str(spec), "--tracking-uri", server.uri, "--run-dir",
                               str(root / "runs"), "--ray-temp-dir", str(ray_dir), "--no-progress", "--no-report"],
                              env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    figures = {"peak_rss": 0.0, "outage_rss": 0.0, "journal_peak_kb": 0.0}
    down = threading.Event()
    stop_sampling = threading.Event()
    journal_dir = root / "runs" / name / "tracking"

    def sample():
        while not stop_sampling.is_set():
            mb = rss_mb(driver.pid)
            figures["peak_rss"] = max(figures["peak_rss"], mb)
            if down.is_set():
                figures["outage_rss"] = max(figures["outage_rss"], mb)
            size = sum(p.stat().st_size for p in journal_dir.glob("journal-*.jsonl")) if journal_dir.exists() else 0
            figures["journal_peak_kb"] = max(figures["journal_peak_kb"], size / 1024)
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    try:
        if outage_s:
            from mlflow.tracking import MlflowClient

            client = MlflowClient(server.uri)
            while driver.poll() is None:  # the first step in the store
                exp = client.get_experiment_by_name(name)
                runs = client.search_runs([exp.experiment_id], role_filter(TRIAL)) if exp else []
                if any(r.data.metrics.get("reward/mean") is not None for r in runs):
                    break
                time.sleep(0.5)
            server.stop()
            down.set()
            time.sleep(outage_s)
            down.clear()
            server.start()
            back = time.perf_counter()
            while any(p.stat().st_size for p in journal_dir.glob("journal-*.jsonl")) and driver.poll() is None:
                time.sleep(0.1)
            figures["flush_s"] = time.perf_counter() - back
        rc = driver.wait()
    finally:
        stop_sampling.set()
        kill_sessions({driver.pid})  # the driver and the local Ray it started (its session), by pid
        driver.wait()
        shutil.rmtree(ray_dir, ignore_errors=True)
    figures["wall_s"] = time.perf_counter() - started
    text = log.read_text()
    held = [line for line in text.splitlines() if "held steps" in line and "reachable again" in line]
    figures["held"] = held[0].split("writing ")[1].split(" held")[0] if held else "-"
    recorded = steps_in_store(server, name)
    complete = len(recorded) == 2 and all(v == list(range(1, steps + 1)) for v in recorded.values())
    if rc != 0 or not complete:
        raise SystemExit(f"{name}: exit {rc}, every step once: {complete}\n{text[-3000:]}")
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000, help="steps per trial (long enough to outlast the outage)")
    ap.add_argument("--outage-s", type=float, default=120.0)
    ap.add_argument("--smoke", action="store_true", help="20 steps, a 2 s outage (~2 min)")
    ap.add_argument("--keep", action="store_true", help="keep runs/tracking_outage-<time>/")
    args = ap.parse_args()
    if args.smoke:
        args.steps, args.outage_s = 20, 2.0  # the trials still run while the server is down and restarting
    root = REPO / "runs" / time.strftime("tracking_outage-%Y%m%d-%H%M%S")
    root.mkdir(parents=True)
    (REPO / ".rt").mkdir(exist_ok=True)
    server = Server(root)
    server.start()
    try:
        a = run(root, server, "outage_peer", args.steps, 0.0)
        b = run(root, server, "outage_down", args.steps, args.outage_s)
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\n2 trials x {args.steps} steps, `sweep run --tracking-uri http://...`, outage {args.outage_s:.0f} s in (b)")
    print(f"{'':28}{'(a) no outage':>16}{'(b) outage':>14}{'(b)/(a)':>10}")
    print(f"{'sweep wall time (s)':28}{a['wall_s']:16.1f}{b['wall_s']:14.1f}{b['wall_s'] / a['wall_s']:10.2f}")
    print(f"{'driver peak RSS (MB)':28}{a['peak_rss']:16.0f}{b['peak_rss']:14.0f}{b['peak_rss'] / a['peak_rss']:10.2f}")
    print(f"{'driver peak RSS, outage (MB)':28}{'-':>16}{b['outage_rss']:14.0f}")
    print(f"{'journal peak on disk (KB)':28}{a['journal_peak_kb']:16.0f}{b['journal_peak_kb']:14.0f}")
    print(f"{'steps held at recovery':28}{'-':>16}{b['held']:>14}")
    print(f"{'flush: back -> journal empty':28}{'-':>16}{b.get('flush_s', float('nan')):13.1f}s")
    print("every step of every trial in the store exactly once: yes (both runs)")


if __name__ == "__main__":
    main()
