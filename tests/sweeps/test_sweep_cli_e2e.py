"""The `sweep` command line end to end, typed as docs/cli.md writes it: no --no-progress, no
--no-report, no path flags (the working directory is short enough for Ray's sockets).

Real Ray (a local cluster per command), a real MLflow sqlite store, real training. Covers: the live
progress under a pseudo-terminal (the base policy's build under the table, the end-of-run table and
report) and piped, nothing written to HOME or TMPDIR, a grid extended with a seed (only the new trials
run), `sweep status`, `sweep report NAME` (its cells against the recorded metrics, remade byte for byte,
other settings said); Ctrl-C, then SIGTERM to the `sweep resume` that followed, with their exit codes, the
hint and KILLED runs, and the last `sweep resume` continuing bit-exactly; one sqlite store shared by four
drivers at once (the same sweep run twice refused; a diverged trial FAILED without retry and left out of
the table; a stalled trial ended, retried and FAILED; the local cluster's listening sockets and Ray
clients refused without its token); unsatisfiable resources refused before anything is created.
"""

from __future__ import annotations

import csv
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from sweep_testlib import (children, client_for, refusal_without_token, short_cwd, steps_of, store_ready, subprocess_env,
                           sweep_exe, wait_for, write_spec)

pytestmark = [pytest.mark.slow, pytest.mark.lane("local"), pytest.mark.timeout(900)]


def sweep(cwd: Path, *args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """`sweep ARGS` in ``cwd`` with stdout/stderr piped (not a terminal); ``env`` on top of the test's."""
    return subprocess.run([sweep_exe(), *args], cwd=cwd, env={**subprocess_env(), **(env or {})}, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def sweep_in_pty(cwd: Path, *args: str, timeout: float = 600, env: dict | None = None) -> tuple[int, str]:
    """`sweep ARGS` on a pseudo-terminal, as typed in a shell: (exit code, everything it showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sweep_exe(), *args], cwd=cwd,
                            env={**subprocess_env(), "TERM": "xterm", "COLUMNS": "160", **(env or {})},
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out, deadline = b"", time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the command ended
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=60), out.decode(errors="replace")


def spec_in(cwd: Path, name: str, **kw) -> str:
    """A tiny spec written into ``cwd``; returns its file name (what a user types)."""
    return write_spec(cwd, name, **kw).name


def final_value(client, run_id: str, key: str) -> float:
    history = client.get_metric_history(run_id, key)
    return max(history, key=lambda m: m.step).value


def history(client, run_id: str, keys=("actor/entropy", "reward/mean", "actor/grad_norm", "val/avg/acc")) -> dict:
    return {k: sorted((m.step, m.value) for m in client.get_metric_history(run_id, k)) for k in keys}


BUILD_STEPS = 50  # the documented run's base: about 8 s to build on one core


def test_run_as_documented_pty_then_piped_extension_status_and_report(tmp_path):
    cwd = short_cwd()
    name = spec_in(cwd, "cli_doc", seeds=(0,), steps=4,
                   variants=[{"algorithm": "grpo"}, {"algorithm": "dhpo", "mixing": "entropy"}],
                   report={"table": {"select_by": "val/avg/acc", "at": "final", "base": "Base", "baselines": ["GRPO"]}},
                   # built by this run (seconds): the driver shows the newest of its progress lines (one per
                   # tenth) every 2 s under the table
                   warm_start={"steps": BUILD_STEPS, "cache_dir": str(cwd / "bases")})
    # nothing is written outside the working directory: an empty HOME and TMPDIR stay empty
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    user_dirs = {"HOME": str(home), "TMPDIR": str(tmp)}
    code, shown = sweep_in_pty(cwd, "run", name, env=user_dirs)
    assert code == 0, shown[-4000:]
    assert "cli_doc" in shown and "FINISHED" in shown  # the live table, on a terminal
    # while the base policy is built (before any step), its progress is under the live table
    assert "grpo.s0: building base policy" in shown or "dhpo-entropy.s0: building base policy" in shown, shown[:3000]
    assert f"/{BUILD_STEPS}: nll=" in shown, shown[:3000]
    # the end-of-run table drawn for the terminal (no Markdown marks), its legend, and the report
    end = shown[shown.rindex("Method"):]
    assert "┃" in end and "<u>" not in end and "| Method |" not in end and "strongest baseline" in end, end
    assert all(row in end for row in ("Base", "GRPO", "DHPO-E")) and "report: " in end
    report_dir = cwd / "runs" / "cli_doc" / "report"
    assert (report_dir / "report.html").is_file() and (report_dir / "table.csv").is_file()

    client = client_for(cwd / "runs")
    kids = children(client, "cli_doc")
    assert sorted(kids) == ["dhpo-entropy.s0", "grpo.s0"]
    assert all(r.info.status == "FINISHED" for r in kids.values())

    # The report's cells are the recorded final accuracies (x100), per method and benchmark.
    with open(report_dir / "table.csv") as f:
        rows = {row["method"]: row for row in csv.DictReader(f)}
    for tid, method in (("grpo.s0", "GRPO"), ("dhpo-entropy.s0", "DHPO-E")):
        for bench in ("easy", "medium", "hard"):
            recorded = 100 * final_value(client, kids[tid].info.run_id, f"val/{bench}/acc")
            assert float(rows[method][bench]) == pytest.approx(recorded, abs=0.051), (method, bench)

    # The grid extended with a seed, piped (stdout is a file, not a terminal): only the new trials run, the
    # finished ones are kept as they are, the table is printed.
    extended = sweep(cwd, "run", name, "seeds=[0,1]", env=user_dirs)
    assert extended.returncode == 0, extended.stderr[-3000:]
    assert "'FINISHED': 2" in extended.stdout and "'SKIPPED': 2" in extended.stdout and "| Method |" in extended.stdout
    now = children(client, "cli_doc")
    assert sorted(now) == ["dhpo-entropy.s0", "dhpo-entropy.s1", "grpo.s0", "grpo.s1"]
    assert {tid: now[tid].info.run_id for tid in kids} == {tid: r.info.run_id for tid, r in kids.items()}

    status = sweep(cwd, "status", name, "seeds=[0,1]", env=user_dirs)
    assert status.returncode == 0, status.stderr
    for tid in ("grpo.s0", "grpo.s1", "dhpo-entropy.s1"):
        assert tid in status.stdout
    assert status.stdout.count("FINISHED") == 4 and "4/4" in status.stdout

    # `sweep report NAME` remakes the same report from the settings recorded with the sweep (base
    # row, baseline italics): the table byte for byte, silently; other settings are said on stderr
    made_by_run = (report_dir / "table.md").read_bytes()
    assert b"| Base |" in made_by_run and b"_" in made_by_run
    (report_dir / "table.csv").unlink()
    (report_dir / "table.md").unlink()
    report = sweep(cwd, "report", "cli_doc", env=user_dirs)
    assert report.returncode == 0, report.stderr
    assert (report_dir / "table.csv").is_file()  # where `sweep run` wrote it: <run dir>/<sweep>/report
    assert (report_dir / "table.md").read_bytes() == made_by_run
    assert "note:" not in report.stderr, report.stderr
    other = sweep(cwd, "report", "cli_doc", "--decimals", "2", "--no-log", "--out", "other", env=user_dirs)
    assert other.returncode == 0, other.stderr
    assert "differs from the one recorded" in other.stderr and "table.decimals: 1 -> 2" in other.stderr
    assert (report_dir / "table.md").read_bytes() == made_by_run
    assert not any(home.iterdir()) and not any(tmp.iterdir()), (sorted(home.rglob("*")), sorted(tmp.rglob("*")))


def _start(cwd: Path, *args: str, log: Path, err: Path | None = None) -> subprocess.Popen:
    """`sweep ARGS` in the background, in a session of its own; stdout to ``log``, stderr too unless ``err``."""
    return subprocess.Popen([sweep_exe(), *args], cwd=cwd, env=subprocess_env(), start_new_session=True,
                            stdout=open(log, "w"), stderr=open(err, "w") if err else subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def _all_running_past(client, sweep_name: str, min_step: dict[str, int]):
    """A check: every trial of ``min_step`` RUNNING with at least that step recorded (its runs then), else None."""
    def check():
        kids = children(client, sweep_name)
        ok = all(tid in kids and kids[tid].info.status == "RUNNING"
                 and kids[tid].data.metrics.get("trial/step", 0) >= step for tid, step in min_step.items())
        return kids if ok else None
    return check


def _end(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


STEPS = 120  # long enough to be caught midway twice (a step takes ~0.1 s)
INTERRUPTED = ("grpo", "gspo")


def _interrupt_spec(cwd: Path, name: str, max_concurrent: int) -> str:
    return spec_in(cwd, name, seeds=(0,), steps=STEPS, checkpoint_every=4, max_concurrent=max_concurrent,
                   variants=[{"algorithm": o} for o in INTERRUPTED])


def _failing_specs(cwd: Path) -> tuple[str, str]:
    """cli_nan: a GRPO trial and one that diverges (lr 1e6); cli_stall: a trial whose base evaluation (3 x 200
    x 40 samples) takes far longer than its stall_timeout_s of 2 s, retried once (max_failures 1)."""
    nan = spec_in(cwd, "cli_nan", seeds=(0,), steps=6, max_failures=2,
                  variants=[{"algorithm": "grpo"},
                            {"algorithm": "grpo", "label": "GRPO-hot", "trainer.lr": 1.0e6, "trainer.weight_decay": 0.0}])
    path = write_spec(cwd, "cli_stall", seeds=(0,), steps=4, max_failures=1, variants=[{"algorithm": "grpo"}])
    spec = yaml.safe_load(path.read_text())
    spec["stall_timeout_s"] = 2
    spec["base"]["data"]["eval_size"] = 200
    spec["base"]["trainer"]["eval_k"] = 40
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return nan, path.name


@pytest.fixture(scope="module")
def shared_store() -> dict:
    """One sqlite store, four drivers on it. The reference sweep cli_int_ref (the interrupted test's two trials,
    one at a time, uninterrupted, --no-report) runs in the background; once it has recorded step 2: its local
    Ray's listeners probed without the token, and at the same time the same sweep run again, two Ray clients
    with no or a wrong token, and two other sweeps on the same store (cli_nan, cli_stall). What each showed is
    recorded for the tests; the reference's histories are what the interrupted trials must reproduce."""
    import psutil

    cwd = short_cwd()
    ref = _interrupt_spec(cwd, "cli_int_ref", max_concurrent=1)
    nan, stall = _failing_specs(cwd)
    client = client_for(cwd / "runs")
    log = cwd / "ref.log"
    proc = _start(cwd, "run", ref, "--no-report", log=log)
    others: list[subprocess.Popen] = []  # each in a session of its own, ended by its process group
    try:
        try:
            wait_for(lambda: store_ready(cwd / "runs") and _all_running_past(client, "cli_int_ref", {"grpo.s0": 2})(),
                     timeout=300)
        except TimeoutError:
            raise AssertionError("no step 2 within 300 s; the sweep's log:\n" + log.read_text()[-4000:]) from None
        # Every non-loopback listener of the running local cluster, and how it answers a client without the token
        ray_dir = str(cwd / "runs" / ".ray")
        owned = {p.pid for p in psutil.process_iter(["cmdline"]) if ray_dir in " ".join(p.info["cmdline"] or [])}
        owned |= {c.pid for c in psutil.Process(proc.pid).children(recursive=True)} | {proc.pid}
        exposed = [(psutil.Process(c.pid).name(), c.laddr) for c in psutil.net_connections("inet")
                   if c.status == psutil.CONN_LISTEN and c.pid in owned and not c.laddr.ip.startswith(("127.", "::1"))]
        refusals = [(name, laddr, refusal_without_token(laddr.port, "127.0.0.1" if laddr.ip in ("::", "0.0.0.0")
                                                        else laddr.ip)) for name, laddr in exposed]
        gcs_port = next((laddr.port for name, laddr in exposed if name == "gcs_server"), None)
        clients = {  # side by side: each retries for ~20 s before it gives up
            auth: subprocess.Popen([str(Path(sweep_exe()).with_name("python")), "-c",
                                    f"import ray; ray.init(address='127.0.0.1:{gcs_port}'); print('CONNECTED')"],
                                   env={**subprocess_env(), **dict(auth)}, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, start_new_session=True)
            for auth in ((("RAY_AUTH_MODE", "disabled"),), (("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN", "0" * 64)))}
        others += clients.values()
        commands = {"twice": ("run", ref), "cli_nan": ("run", nan), "cli_stall": ("run", stall, "--no-report")}
        started = {name: _start(cwd, *args, log=cwd / f"{name}.out", err=cwd / f"{name}.err")
                   for name, args in commands.items()}
        others += started.values()
        deadline, said = time.monotonic() + 30, {}
        for auth, client_proc in clients.items():
            try:
                said[auth] = client_proc.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
            except subprocess.TimeoutExpired:  # still retrying after 30 s: not connected either
                _end(client_proc)
                said[auth] = client_proc.communicate()[0]
        ref_alive_after_clients = proc.poll() is None
        codes = {name: p.wait(timeout=600) for name, p in started.items()}
        ref_code = proc.wait(timeout=600)
    finally:
        for p in [proc, *others]:
            _end(p)
    runs = children(client, "cli_int_ref")
    return {"cwd": cwd, "client": client, "ref_pid": proc.pid, "ref_code": ref_code, "ref_log": log.read_text(),
            "refusals": refusals, "gcs_port": gcs_port, "clients": said, "ref_alive_after_clients": ref_alive_after_clients,
            "codes": codes, "stdout": {name: (cwd / f"{name}.out").read_text() for name in commands},
            "stderr": {name: (cwd / f"{name}.err").read_text() for name in commands},
            "histories": {tid.split(".")[0]: history(client, run.info.run_id) for tid, run in runs.items()}}


def test_one_writer_per_sweep_sweeps_share_a_store_and_the_cluster_needs_its_token(shared_store):
    """The shared store's drivers: the second run of the running sweep refused naming its pid, every outside
    listener of its local Ray and two Ray clients refused without the token, and all four drivers ran to their
    end on the one sqlite store (the reference's steps each once)."""
    s = shared_store
    client = s["client"]
    # The same sweep again while it runs: refused, naming the owner; nothing of it touched.
    twice = s["stdout"]["twice"] + s["stderr"]["twice"]
    assert s["codes"]["twice"] == 3, twice
    assert "already running" in s["stderr"]["twice"] and f"pid {s['ref_pid']}" in s["stderr"]["twice"]
    # Every non-loopback listener of the running local cluster refuses a client without the token.
    assert len(s["refusals"]) >= 4, "expected Ray's daemons to listen on all interfaces, as Ray does"
    for name, laddr, refusal in s["refusals"]:
        assert refusal, (name, laddr)
    assert s["gcs_port"] is not None, s["refusals"]
    assert s["ref_alive_after_clients"], "the reference sweep ended before the clients had tried its cluster"
    for auth, said in s["clients"].items():
        assert "CONNECTED" not in said, auth
    # Three other drivers on the same sqlite store at the same time: each ran to its end.
    assert s["ref_code"] == 0, s["ref_log"][-3000:]
    assert s["codes"]["cli_nan"] == 1 and s["codes"]["cli_stall"] == 1, (s["stderr"]["cli_nan"][-3000:],
                                                                         s["stderr"]["cli_stall"][-3000:])
    for text in (s["ref_log"], *s["stdout"].values(), *s["stderr"].values()):
        assert "database is locked" not in text
    runs = children(client, "cli_int_ref")
    assert sorted(runs) == sorted(f"{o}.s0" for o in INTERRUPTED), sorted(runs)
    for run in runs.values():
        assert run.info.status == "FINISHED"
        assert steps_of(client, run.info.run_id, "actor/entropy") == list(range(1, STEPS + 1))


def test_ctrl_c_then_sigterm_end_killed_with_the_hint_and_resume_is_bit_exact(shared_store, tmp_path):
    """Both trials at once: Ctrl-C midway (130; it reaches the whole foreground process group, as a terminal
    sends it), `sweep resume` stopped by SIGTERM to the driver only once both went on past where they stopped
    (143), then `sweep resume` to the end: every step once and each trial's history the uninterrupted one's,
    bit for bit."""
    cwd = short_cwd()
    name = _interrupt_spec(cwd, "cli_int", max_concurrent=len(INTERRUPTED))
    sweep_name = name[:-5]
    client = client_for(cwd / "runs")
    past = {f"{o}.s0": 9 for o in INTERRUPTED}
    for sig, code, command in ((signal.SIGINT, 130, "run"), (signal.SIGTERM, 143, "resume")):
        log = tmp_path / f"{command}.log"
        proc = _start(cwd, command, name, log=log)
        try:
            wait_for(lambda: store_ready(cwd / "runs") and _all_running_past(client, sweep_name, past)(), timeout=300)
        except TimeoutError:
            _end(proc)
            raise AssertionError(f"{command}: not past {past} within 300 s\n" + log.read_text()[-4000:]) from None
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        assert proc.wait(timeout=120) == code, log.read_text()[-4000:]
        out = log.read_text()
        assert "interrupted: run the same command again to resume" in out
        assert "Tuner.restore" not in out and "done in" not in out
        exp = client.get_experiment_by_name(sweep_name)
        parent = client.search_runs([exp.experiment_id], "tags.role = 'parent'")[0]
        assert parent.info.status == "KILLED", command
        kids = children(client, sweep_name)
        assert sorted(kids) == sorted(past)
        for tid, child in kids.items():
            assert child.info.status == "KILLED", (command, tid)
            stopped_at = int(child.data.metrics["trial/step"])
            assert past[tid] <= stopped_at < STEPS, (command, tid, stopped_at)
            past[tid] = stopped_at + 4  # the resumed attempt must go on past where this one stopped

    resumed = sweep(cwd, "resume", name)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    for tid, child in children(client, sweep_name).items():
        assert child.info.status == "FINISHED" and int(child.data.tags["ray.resumed_from"]) >= 4, tid
        assert steps_of(client, child.info.run_id, "actor/entropy") == list(range(1, STEPS + 1))  # each step once
        # The same trial run without interruption: the same history, bit for bit.
        assert history(client, child.info.run_id) == shared_store["histories"][tid.split(".")[0]], tid


def test_diverged_trial_fails_with_its_reason_without_retry_and_is_left_out_of_the_table(shared_store):
    """cli_nan of the shared store: exit 1, the diverged trial FAILED with its reason, not retried, named on
    stderr, and no row of the table but a footnote."""
    cwd, client = shared_store["cwd"], shared_store["client"]
    said = shared_store["stderr"]["cli_nan"]
    assert shared_store["codes"]["cli_nan"] == 1, shared_store["stdout"]["cli_nan"][-3000:] + said[-3000:]
    kids = children(client, "cli_nan")
    hot = next(r for r in kids.values() if r.data.tags["method"] == "GRPO-hot")
    ok = next(r for r in kids.values() if r.data.tags["method"] == "GRPO")
    assert ok.info.status == "FINISHED"
    assert hot.info.status == "FAILED"
    assert "diverged at step" in hot.data.tags["failure_reason"] and "non-finite" in hot.data.tags["failure_reason"]
    assert "retries" not in hot.data.tags  # deterministic divergence: not retried
    assert "FAILED" in said and hot.data.tags["trial_id"] in said
    table = (cwd / "runs" / "cli_nan" / "report" / "table.md").read_text()
    assert "GRPO-hot" not in table.split("\n\n")[0]  # no row for it in the table itself
    assert "GRPO-hot" in table and "diverged" in table  # ... but a footnote says it was left out, and why


def test_unsatisfiable_resources_fail_fast_and_create_nothing():
    cwd = short_cwd()
    name = spec_in(cwd, "cli_gpu", seeds=(0,), steps=4, variants=[{"algorithm": "grpo"}],
                   resources={"cpus": 1, "gpus": 1})
    started = time.monotonic()
    result = sweep(cwd, "run", name, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "resources.gpus" in result.stderr and "GPU" in result.stderr
    assert not (cwd / "runs" / "mlflow.db").exists()  # nothing recorded
    assert time.monotonic() - started < 120  # (the bound is the subprocess timeout: no waiting for a GPU)
    too_many = sweep(cwd, "run", name, "resources.gpus=0", "resources.cpus=64", timeout=120)
    assert too_many.returncode == 2 and "resources.cpus" in too_many.stderr
    bad_value = sweep(cwd, "run", name, "resources.gpus=0", "trainer.lr=.nan", timeout=120)
    assert bad_value.returncode == 2 and "finite" in bad_value.stderr and "error" not in bad_value.stdout
    assert not (cwd / "runs" / "mlflow.db").exists()


def test_stalled_trial_is_ended_retried_and_failed_with_the_reason(shared_store):
    """cli_stall of the shared store: exit 1, its trial FAILED after one retry, the stall as its reason."""
    said = shared_store["stdout"]["cli_stall"][-3000:] + shared_store["stderr"]["cli_stall"][-3000:]
    assert shared_store["codes"]["cli_stall"] == 1, said
    kids = children(shared_store["client"], "cli_stall")
    assert len(kids) == 1, said
    (child,) = kids.values()
    assert child.info.status == "FAILED"
    assert child.data.tags["retries"] == "1"  # retried once (max_failures: 1), stalled again
    assert "stalled: no step reported" in child.data.tags["failure_reason"]
