"""Chaos at scale: N synthetic trials on a 2-node Ray cluster and `mlflow server` on PostgreSQL, with faults injected.

    python benchmarks/chaos.py                        # 500 trials x 20 steps, a 60 s outage
    python benchmarks/chaos.py --smoke                # 10 trials x 10 steps, a 2 s outage (~4 min on 2 cores)
    python benchmarks/chaos.py --trials 100 --seed 3 --outage-s 30 --keep --json runs/chaos.json

Everything is real and on this machine: PostgreSQL (Debian's, as the postgres user: root needed), one
`mlflow server` per store on it, a token-protected `ray start --head` plus a second node (`ray start --address`),
and `sweep run SPEC --address ... --tracking-uri http://...` as a user types it (benchmarks/chaos_procs.py). The
spec (written to the work dir) has 5 methods x N/5 seeds of the synthetic backend (trainers/synthetic/: no model,
``--pace`` s a step, a validation and a checkpoint every 5 steps, ``max_failures`` 5).

1. The fault-free peer: the spec on the cluster into its own store (database ``peer``, its own run dir).
2. The chaos run, into database ``chaos``: the same spec plus ``base.synthetic.crash_fraction`` (a share of the
   trials crash once at a step drawn from ``--seed``: retried from their checkpoints), and at times drawn from
   ``--seed`` (fractions 0.08-0.6 of the peer's wall time; smoke 0.05-0.3), one after another and 20 s apart
   (smoke 3 s): a Ray worker SIGKILLed while it runs one of the driver's trials (a process of the cluster titled
   ``ray::ImplicitFunc.train`` with the driver's ``RAY_JOB_ID``), the second node lost once a trial runs there
   (every process of its `ray start` session SIGKILLed) and started again, the driver SIGKILLed twice once it
   has joined the cluster and the same command run again (it resumes), the tracking server killed and started
   again on its port after ``--outage-s`` seconds.
3. The checks: the drivers' last runs exit 0; every trial of both stores FINISHED and no run left RUNNING;
   every (trial, metric, step) of the chaos store once, the same set with the same values as the peer's (which
   holds every step 0..N of every trial once); `sweep report` of both (``--no-log``): table.md, table.csv,
   table.tex and aggregates.md byte-identical.

Printed: the faults injected and survived (survived: the sweep went on to end with every check passed, and
the fault's own trace is there: the crashed trial FINISHED whole; the drivers' output shows a trial's actor
died, Ray marking the node dead, one stale-lock takeover per killed driver, the store unreachable), the rows
checked, the wall times. Exit 1 if a check fails, a fault kind was not injected (the sweep ended first: make
the trials longer) or not survived, or a trial did not crash as drawn; 2 on bad arguments; 3 when PostgreSQL
or root is missing.

Everything is written under ``--workdir`` (default runs/chaos-<time>; removed at the end unless --keep or a
check failed): Ray's temp dir (``<workdir>/r``: Ray's Unix sockets need it short), TMPDIR, PostgreSQL's data,
the servers' artifacts, the run dirs, the reports. Every process started is ended by pid (by session) at the
end, after a failure too.

``--smoke`` (SMOKE): 10 trials (2 seeds) x 10 steps at 1 s a step (sleep: the trials outlast the faults, one after
another, at little CPU), 1 worker kill, a 2 s outage, a crash fraction of 0.25 (2 trials crash at seed 7: at step
4, before the first checkpoint, and at step 9, after it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from chaos_procs import BIN, ChaosError, Driver, MlflowServer, RayCluster, Store, kill_sessions  # noqa: E402
from scale_stores import free_port, postgres_server  # noqa: E402

METHODS = ("grpo", "gspo", "gmpo", "cispo", "sapo")
MAX_RAY_DIR = 41  # Ray's socket paths: <temp>/session_<date>_<time>_<us>_<pid>/sockets/plasma_store.1 < 108 bytes
REPORT_FILES = ("table.md", "table.csv", "table.tex", "aggregates.md")
KINDS = ("trial crash", "worker SIGKILL", "node lost + back", "driver SIGKILL", "tracking outage")
EVERY = 5  # steps between validations and between checkpoints
SMOKE = {"trials": 10, "steps": 10, "pace": 1.0, "worker_kills": 1, "outage_s": 2.0, "crash_fraction": 0.25,
         "window": (0.05, 0.3), "settle_s": 3.0}


def write_spec(path: Path, trials: int, steps: int, pace: float) -> None:
    spec = {"name": "chaos", "base": {"backend": "synthetic", "synthetic": {"step_seconds": pace},
                                      "trainer": {"steps": steps, "eval_every": EVERY, "checkpoint_every": EVERY}},
            "seeds": list(range(trials // len(METHODS))), "resources": {"cpus": 0.5}, "max_concurrent": 4,
            "max_failures": 5, "max_trials": max(10000, trials), "variants": [{"algorithm": m} for m in METHODS],
            "report": {"table": {"select_by": "val/avg/acc", "at": "final"}}}
    path.write_text(f"# sweep run {path.name}\n" + yaml.safe_dump(spec, sort_keys=False))


def planned_crashes(spec: Path, overrides: list[str]) -> dict[str, int]:
    """trial id -> the step it crashes at, as the synthetic backend draws it (trainers/synthetic/trainer.py)."""
    from sweeps.specs.load import load_spec
    from trainers.synthetic.trainer import crash_step

    return {t.trial_id: s for t in load_spec(spec, overrides).trials if (s := crash_step(t.config))}


def kill_a_trial_worker(cluster: RayCluster, driver: Driver, rng: random.Random) -> str | None:
    """SIGKILL a Ray worker of the cluster that is running one of the driver's trials now; None when the sweep
    ended first."""
    while driver.proc.poll() is None:
        if workers := cluster.trial_workers(driver.proc.pid):
            pid = rng.choice(workers)
            os.kill(pid, signal.SIGKILL)
            return f"pid {pid} (of {len(workers)} running a trial)"
        time.sleep(0.2)
    return None


def run_sweep(driver: Driver, timeout: float) -> tuple[int, float]:
    started = time.monotonic()
    driver.run()
    try:
        return driver.proc.wait(timeout=timeout), time.monotonic() - started
    except subprocess.TimeoutExpired:
        raise ChaosError(f"the sweep did not end within {timeout:.0f} s; see {driver.log}") from None


def chaos_sweep(driver: Driver, faults: list[dict], cluster: RayCluster, server: MlflowServer, rng: random.Random,
                settle_s: float, timeout: float) -> tuple[int, float]:
    """Run the sweep, injecting each fault at its time (one after another); the driver's exit and the wall time.
    A fault the sweep ended before stays not injected (the check then fails: make the trials longer)."""
    started = time.monotonic()
    driver.run()

    def on() -> bool:
        return driver.proc.poll() is None

    ready = 0.0  # the next fault waits for the sweep to take the last one in (settle_s)
    for fault in faults:
        while time.monotonic() - started < max(fault["at"], ready) and on():
            time.sleep(0.5)
        while fault["kind"] == "driver SIGKILL" and on() and cluster.driver_job(driver.proc.pid) is None:
            time.sleep(0.5)  # once it has joined the cluster (and so holds the sweep's lock)
        while fault["kind"] == "node lost + back" and on() and not cluster.trial_workers(driver.proc.pid, node_only=True):
            time.sleep(0.5)  # once a trial runs there: the node takes trials with it
        if fault["kind"] == "worker SIGKILL" and on():
            fault["detail"] = kill_a_trial_worker(cluster, driver, rng)
        if not on() and not fault.get("detail"):  # (a worker killed as the sweep ended was killed all the same)
            print(f"  the sweep ended (exit {driver.proc.returncode}) before {fault['kind']}", flush=True)
            break
        if fault["kind"] == "node lost + back":
            ended, down = cluster.stop_node(), time.monotonic()
            time.sleep(fault["down_s"])
            cluster.start_node()
            fault["detail"] = (f"{ended} of the second node SIGKILLed, `ray start` again after "
                               f"{fault['down_s']:.0f} s, back after {time.monotonic() - down:.0f} s")
        elif fault["kind"] == "driver SIGKILL":
            driver.kill()
            fault["detail"] = f"run {driver.runs} (pid {driver.proc.pid}) killed; the same command again"
            time.sleep(fault["down_s"])
            driver.run()
        elif fault["kind"] == "tracking outage":
            server.stop()
            down = time.monotonic()
            time.sleep(fault["down_s"])
            server.start()
            fault["detail"] = (f"server killed, started again after {fault['down_s']:.0f} s, answering on port "
                               f"{server.port} after {time.monotonic() - down:.0f} s")
        fault["injected"], fault["done_at"] = True, round(time.monotonic() - started, 1)
        ready = fault["done_at"] + settle_s
        print(f"  {fault['done_at']:7.1f} s  {fault['kind']}: {fault['detail']}", flush=True)
    try:
        return driver.proc.wait(timeout=max(timeout - (time.monotonic() - started), 60)), time.monotonic() - started
    except subprocess.TimeoutExpired:
        raise ChaosError(f"the chaos sweep did not end within {timeout:.0f} s; see {driver.log}") from None


def check_states(store: Store, trials: int) -> tuple[bool, str]:
    runs = store.runs()
    trial_states = Counter(status for status, role, _ in runs if role == "trial")
    parents = [status for status, role, _ in runs if role == "parent"]
    running = sum(1 for status, _, _ in runs if status == "RUNNING")
    ok = trial_states == Counter({"FINISHED": trials}) and parents == ["FINISHED"] and running == 0
    return ok, f"trials {dict(trial_states)}, parent {parents}, RUNNING {running}"


def check_rows(chaos: Counter, peer: Counter, trials: int, steps: int) -> tuple[bool, dict]:
    """Every row of the chaos store once, the peer's rows exactly (the peer: every trial/step 0..steps once)."""
    peer_steps = Counter(tid for tid, key, _, _ in peer if key == "trial/step")
    figures = {"rows": sum(chaos.values()), "duplicates": sum(n - 1 for n in chaos.values() if n > 1),
               "missing": len(peer.keys() - chaos.keys()), "extra": len(chaos.keys() - peer.keys()),
               "peer_duplicates": sum(n - 1 for n in peer.values() if n > 1),
               "peer_whole": len(peer_steps) == trials and set(peer_steps.values()) == {steps + 1}}
    ok = figures["rows"] > 0 and figures["peer_whole"] and not any(
        figures[k] for k in ("duplicates", "missing", "extra", "peer_duplicates"))
    return ok, figures


def incomplete_trials(chaos: Counter, peer: Counter) -> set[str]:
    return {row[0] for row in (peer.keys() ^ chaos.keys())} | {row[0] for row, n in chaos.items() if n > 1}


def report(name: str, uri: str, out: Path, cwd: Path, env: dict) -> dict[str, bytes]:
    """`sweep report NAME` against the server: REPORT_FILES' bytes, or {"error": what it said} when it failed."""
    done = subprocess.run([str(BIN / "sweep"), "report", name, "--tracking-uri", uri, "--out", str(out), "--no-log"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=3600, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        print(f"  sweep report failed (exit {done.returncode}): {done.stderr.strip()[-500:]}", flush=True)
        return {"error": done.stderr[-3000:].encode()}
    return {f: (out / f).read_bytes() for f in REPORT_FILES if (out / f).is_file()}


def plan_faults(rng: random.Random, peer_wall: float, args: argparse.Namespace) -> list[dict]:
    """The faults of the chaos run, each at a time drawn in ``args.window`` (fractions of the peer's wall time);
    a node stays down 5-15 s (smoke 1-2 s), a killed driver 1-5 s (smoke 0.5-1 s)."""
    kinds = ["worker SIGKILL"] * args.worker_kills + ["node lost + back", "driver SIGKILL", "driver SIGKILL",
                                                       "tracking outage"]
    node, gap = ((1, 2), (0.5, 1)) if args.smoke else ((5, 15), (1, 5))
    faults = [{"kind": kind, "at": round(rng.uniform(*args.window) * peer_wall, 1), "injected": False,
               "down_s": args.outage_s if kind == "tracking outage" else rng.uniform(*node)
               if kind == "node lost + back" else rng.uniform(*gap)} for kind in kinds]
    return sorted(faults, key=lambda f: f["at"])


def clean_env(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAY_", "PYTEST_", "MLFLOW_")) and k not in ("TMPDIR", "TMP", "TEMP")}
    tmp = workdir / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return {**env, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
            "RAY_USAGE_STATS_ENABLED": "0", "MLFLOW_DISABLE_TELEMETRY": "true", "HF_HUB_OFFLINE": "1"}


def run_all(args: argparse.Namespace, workdir: Path) -> dict:
    env = clean_env(workdir)
    os.environ["TMPDIR"] = tempfile.tempdir = env["TMPDIR"]  # this process's own temporary files too
    spec = workdir / "chaos.yaml"
    write_spec(spec, args.trials, args.steps, args.pace)
    chaos_overrides = [f"base.synthetic.crash_fraction={args.crash_fraction}", f"base.synthetic.crash_seed={args.seed}"]
    crashes = planned_crashes(spec, chaos_overrides)
    rng = random.Random(args.seed)
    figures: dict = {"trials": args.trials, "steps": args.steps, "seed": args.seed, "planned_crashes": len(crashes)}
    token = secrets.token_hex(32)
    cluster = RayCluster(workdir / "r", env, free_port(), token)
    servers: list[MlflowServer] = []
    drivers: list[Driver] = []
    postmaster: set[int] = set()
    try:
        with postgres_server(workdir) as chaos_db:
            postmaster.add(int((workdir / "pgdata" / "postmaster.pid").read_text().split()[0]))
            Store(chaos_db.rsplit("/", 1)[0] + "/postgres").query("CREATE DATABASE peer")
            peer_db = chaos_db.rsplit("/", 1)[0] + "/peer"
            cluster.start()
            print(f"cluster at {cluster.address} (2 nodes), PostgreSQL up; work dir {workdir}", flush=True)
            driver_env = {**env, "RAY_AUTH_TOKEN": token, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
                          "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
            runs = {}
            for name, db, overrides in (("peer", peer_db, []), ("chaos", chaos_db, chaos_overrides)):
                server = MlflowServer(db, workdir / f"server-{name}", env, free_port())
                servers.append(server)
                server.start()
                driver = Driver(["run", str(spec), *overrides, "--address", cluster.address, "--tracking-uri",
                                 server.uri, "--run-dir", str(workdir / name), "--no-progress", "--no-report"],
                                workdir, driver_env, workdir / "logs" / name)
                drivers.append(driver)
                store = Store(db)
                print(f"{name} sweep: {args.trials} trials x {args.steps} steps ...", flush=True)
                if name == "peer":
                    rc, wall = run_sweep(driver, args.timeout)
                    faults = plan_faults(rng, wall, args)
                else:
                    rc, wall = chaos_sweep(driver, faults, cluster, server, rng, args.settle_s, args.timeout)
                print(f"  exit {rc} after {wall:.1f} s ({driver.runs} driver run(s))", flush=True)
                figures[f"{name}_wall_s"], figures[f"{name}_exit"] = round(wall, 1), rc
                runs[name] = {"rows": store.rows(), "said": driver.said(),
                              "report": report("chaos", server.uri, workdir / f"report-{name}", workdir, env)}
                runs[name]["states"] = check_states(store, args.trials)
                server.stop()
    finally:
        for driver in drivers:
            driver.kill()
        for server in servers:
            if server.proc is not None:
                kill_sessions({server.proc.pid})
        cluster.stop()
        kill_sessions(postmaster)  # the postmaster is killed by postgres_server; its backends by their session
    peer, chaos = runs["peer"], runs["chaos"]
    rows_ok, row_figures = check_rows(chaos["rows"], peer["rows"], args.trials, args.steps)
    differing = sorted(f for f in set(peer["report"]) | set(chaos["report"])
                       if peer["report"].get(f) != chaos["report"].get(f))
    checks = {"exit 0": figures["peer_exit"] == 0 and figures["chaos_exit"] == 0,
              "states truthful": peer["states"][0] and chaos["states"][0], "every step once": rows_ok,
              "report identical": not differing and "table.md" in chaos["report"] and "error" not in peer["report"]}
    crashed = sorted(p.parent.name for p in (workdir / "chaos" / "chaos" / "trials").glob("*/synthetic_failures"))
    broken = incomplete_trials(chaos["rows"], peer["rows"])
    whole = all(checks.values())
    said = chaos["said"]
    driver_kills = sum(f["injected"] for f in faults if f["kind"] == "driver SIGKILL")
    evidence = {"trial crash": lambda f: f["trial"] not in broken,
                "worker SIGKILL": lambda f: "ActorDiedError" in said or "ActorUnavailableError" in said,
                "node lost + back": lambda f: "has been marked dead" in said,
                "driver SIGKILL": lambda f: said.count("taking over the stale lock") >= driver_kills,
                "tracking outage": lambda f: "unreachable since" in said}
    faults += [{"kind": "trial crash", "trial": t, "injected": True, "detail": f"at step {crashes.get(t)}"}
               for t in crashed]
    for fault in faults:
        fault["survived"] = bool(fault["injected"] and whole and evidence[fault["kind"]](fault))
    figures.update(checks=checks, rows=row_figures, report_files=sorted(chaos["report"]), report_differing=differing,
                   states={"peer": peer["states"][1], "chaos": chaos["states"][1]}, faults=faults,
                   injected={k: sum(f["injected"] for f in faults if f["kind"] == k) for k in KINDS},
                   survived={k: sum(f["survived"] for f in faults if f["kind"] == k) for k in KINDS})
    return figures


def print_figures(f: dict, outage_s: float) -> bool:
    print(f"\nchaos: {f['trials']} synthetic trials x {f['steps']} steps, 2-node `ray start` cluster, `mlflow server`"
          f" on PostgreSQL, seed {f['seed']}")
    print(f"{'fault':34}{'injected':>9}{'survived':>10}")
    for kind in KINDS:
        label = f"{kind} ({outage_s:.0f} s)" if kind == "tracking outage" else kind
        print(f"{label:34}{f['injected'][kind]:9d}{f['survived'][kind]:10d}")
    print(f"{'all faults':34}{sum(f['injected'].values()):9d}{sum(f['survived'].values()):10d}")
    print(f"(trial crashes drawn from the seed: {f['planned_crashes']}; each fault kind must be injected and survived)")
    r = f["rows"]
    print(f"rows checked: {r['rows']} (duplicates {r['duplicates']}, missing {r['missing']}, extra or differing "
          f"{r['extra']}; the peer whole: {'yes' if r['peer_whole'] else 'NO'})")
    print(f"trial states: chaos {f['states']['chaos']}; peer {f['states']['peer']}")
    print(f"report files compared: {', '.join(f['report_files'])}; differing: {', '.join(f['report_differing']) or 'none'}")
    for name, ok in f["checks"].items():
        print(f"check {name}: {'passed' if ok else 'FAILED'}")
    print(f"wall time: chaos {f['chaos_wall_s']:.1f} s, fault-free {f['peer_wall_s']:.1f} s, "
          f"whole benchmark {f['total_wall_s']:.1f} s")
    kinds_ok = all(f["injected"][k] > 0 and f["survived"][k] == f["injected"][k] for k in KINDS) and \
        f["injected"]["trial crash"] == f["planned_crashes"]
    passed = all(f["checks"].values()) and kinds_ok
    print(f"all checks passed: {'yes' if passed else 'NO'}")
    return passed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=500, help=f"Trials, a multiple of {len(METHODS)} (default 500).")
    ap.add_argument("--steps", type=int, default=20, help="Steps per trial (default 20).")
    ap.add_argument("--pace", type=float, default=0.05, help="Seconds a step sleeps (default 0.05).")
    ap.add_argument("--seed", type=int, default=7, help="Seed of the fault times and the crashing trials (default 7).")
    ap.add_argument("--crash-fraction", type=float, default=0.1, help="Share of trials that crash once (default 0.1).")
    ap.add_argument("--worker-kills", type=int, default=2, help="Ray worker SIGKILLs (default 2).")
    ap.add_argument("--outage-s", type=float, default=60.0, help="Seconds the tracking server is down (default 60).")
    ap.add_argument("--smoke", action="store_true", help="10 trials x 10 steps, 1 s a step, 1 worker kill, a 2 s "
                    "outage (~4 min).")
    ap.add_argument("--workdir", type=Path, default=None, help="Where everything goes (default runs/chaos-<time>).")
    ap.add_argument("--keep", action="store_true", help="Keep the work dir (it is kept anyway when a check fails).")
    ap.add_argument("--timeout", type=float, default=3 * 3600, help="Seconds each sweep may take (default 3 h).")
    ap.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    args = ap.parse_args(argv)
    args.window, args.settle_s = (0.08, 0.6), 20.0
    if args.smoke:  # trials long enough that the faults, one after another, land while it runs
        vars(args).update(SMOKE)
    if args.trials < len(METHODS) or args.trials % len(METHODS) or args.steps < EVERY:
        ap.error(f"--trials: a multiple of {len(METHODS)} (got {args.trials}); --steps: at least {EVERY} "
                 f"(got {args.steps})")
    workdir = (args.workdir or REPO / "runs" / time.strftime("chaos-%y%m%d-%H%M%S")).resolve()
    if len(str(workdir / "r")) > MAX_RAY_DIR:
        ap.error(f"--workdir {workdir}: too long for Ray's Unix sockets (its temp dir {workdir / 'r'} must be at most "
                 f"{MAX_RAY_DIR} characters); give a shorter one")
    if workdir.exists() and any(workdir.iterdir()):
        ap.error(f"--workdir {workdir}: exists and is not empty")
    pg = shutil.which("initdb") or next(iter(Path("/usr/lib/postgresql").glob("*/bin/initdb")), None)
    if os.geteuid() != 0 or not pg:
        print("chaos: PostgreSQL's initdb and root (to run it as the postgres user) are needed; scripts/setup.sh "
              "installs PostgreSQL under CI=true", file=sys.stderr)
        return 3
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    passed = False
    try:
        figures = run_all(args, workdir)
        figures["total_wall_s"] = round(time.monotonic() - started, 1)
        passed = print_figures(figures, args.outage_s)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(figures, indent=1, default=str))
    except ChaosError as err:
        print(f"chaos: {err}", file=sys.stderr)
    finally:
        if passed and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif not passed:
            print(f"chaos: the work dir is kept for a look: {workdir}", file=sys.stderr)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
