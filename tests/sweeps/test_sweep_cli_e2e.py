"""The `sweep` command line end to end, typed as docs/cli.md writes it: no --no-progress, no
--no-report, no path flags (the working directory is short enough for Ray's sockets).

Real Ray (a local cluster per command), a real MLflow sqlite store, real training. Covers: the
live progress under a pseudo-terminal and piped, re-run, a grid extended with a seed, `sweep
status`, `sweep report NAME` (its cells against the recorded metrics), Ctrl-C and SIGTERM with
their exit codes and KILLED runs, `sweep resume` continuing bit-exactly, diverged trials, one
writer per sweep, two sweeps on one store, unsatisfiable resources, a stalled trial, and the
local cluster's listening sockets.
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


def test_run_as_documented_pty_then_piped_rerun_extension_status_and_report(tmp_path):
    cwd = short_cwd()
    name = spec_in(cwd, "cli_doc", seeds=(0,), steps=4,
                   variants=[{"algorithm": "grpo"}, {"algorithm": "dhpo", "mixing": "entropy"}],
                   report={"table": {"select_by": "val/avg/acc", "at": "final", "base": "Base", "baselines": ["GRPO"]}},
                   warm_start={"steps": 300, "cache_dir": str(cwd / "bases")})  # built by this run
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
    assert "/300: nll=" in shown, shown[:3000]
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

    # Same command again, piped (stdout is a file, not a terminal): nothing re-runs, the table is printed.
    again = sweep(cwd, "run", name, env=user_dirs)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "'SKIPPED': 2" in again.stdout and "| Method |" in again.stdout
    assert {r.info.run_id for r in children(client, "cli_doc").values()} == {r.info.run_id for r in kids.values()}

    # A grid extended with a seed: only the new trials run.
    extended = sweep(cwd, "run", name, "seeds=[0,1]", env=user_dirs)
    assert extended.returncode == 0, extended.stderr[-3000:]
    assert "'FINISHED': 2" in extended.stdout and "'SKIPPED': 2" in extended.stdout
    assert sorted(children(client, "cli_doc")) == ["dhpo-entropy.s0", "dhpo-entropy.s1", "grpo.s0", "grpo.s1"]

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


def _start(cwd: Path, *args: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sweep_exe(), *args], cwd=cwd, env=subprocess_env(), start_new_session=True,
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _midway(client, sweep_name: str, step: int = 9):
    def check():
        kids = children(client, sweep_name)
        running = [r for r in kids.values() if r.info.status == "RUNNING" and r.data.metrics.get("trial/step", 0) >= step]
        return running[0] if running else None
    return check


STEPS = 120  # long enough to be caught midway (a step takes ~0.1 s)
INTERRUPTED = ("grpo", "gspo")


def _interrupt_spec(cwd: Path, name: str, objectives) -> str:
    return spec_in(cwd, name, seeds=(0,), steps=STEPS, checkpoint_every=4, max_concurrent=len(objectives),
                   variants=[{"algorithm": o} for o in objectives])


@pytest.fixture(scope="module")
def uninterrupted() -> dict:
    """The interrupted trials run without interruption, both in one sweep of their own directory: each
    trial's history (a trial's numbers depend on its config and seed only, not on its sweep)."""
    cwd = short_cwd()
    name = _interrupt_spec(cwd, "cli_int_ref", INTERRUPTED)
    ref = sweep(cwd, "run", name, "--no-report")
    assert ref.returncode == 0, ref.stderr[-3000:]
    client = client_for(cwd / "runs")
    runs = children(client, "cli_int_ref")
    assert sorted(runs) == sorted(f"{o}.s0" for o in INTERRUPTED), sorted(runs)
    return {trial_id.split(".")[0]: history(client, run.info.run_id) for trial_id, run in runs.items()}


@pytest.mark.parametrize("sig,code,objective", [(signal.SIGINT, 130, "grpo"), (signal.SIGTERM, 143, "gspo")],
                         ids=["ctrl-c-grpo", "sigterm-gspo"])
def test_interrupt_ends_killed_with_hint_and_resume_is_bit_exact(sig, code, objective, uninterrupted, tmp_path):
    # Ctrl-C reaches the whole foreground process group (as a terminal sends it); SIGTERM the driver only.
    cwd = short_cwd()
    name = _interrupt_spec(cwd, f"cli_int_{objective}", (objective,))
    sweep_name = name[:-5]
    client = client_for(cwd / "runs")
    log = tmp_path / "driver.log"
    proc = _start(cwd, "run", name, log=log)
    try:
        wait_for(lambda: store_ready(cwd / "runs") and _midway(client, sweep_name)(), timeout=300)
    except TimeoutError:
        proc.kill()
        raise AssertionError(log.read_text()[-4000:]) from None
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
    assert parent.info.status == "KILLED"
    (child,) = children(client, sweep_name).values()
    assert child.info.status == "KILLED"
    stopped_at = int(child.data.metrics["trial/step"])
    assert 9 <= stopped_at < STEPS

    resumed = sweep(cwd, "resume", name)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    (child,) = children(client, sweep_name).values()
    assert child.info.status == "FINISHED" and int(child.data.tags["ray.resumed_from"]) >= 4
    assert steps_of(client, child.info.run_id, "actor/entropy") == list(range(1, STEPS + 1))  # each step once
    # The same trial run without interruption: the same history, bit for bit.
    assert history(client, child.info.run_id) == uninterrupted[objective]


def test_diverged_trial_fails_with_its_reason_without_retry_and_is_left_out_of_the_table():
    cwd = short_cwd()
    name = spec_in(cwd, "cli_nan", seeds=(0,), steps=6, max_failures=2,
                   variants=[{"algorithm": "grpo"},
                             {"algorithm": "grpo", "label": "GRPO-hot", "trainer.lr": 1.0e6, "trainer.weight_decay": 0.0}])
    result = sweep(cwd, "run", name)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    client = client_for(cwd / "runs")
    kids = children(client, "cli_nan")
    hot = next(r for r in kids.values() if r.data.tags["method"] == "GRPO-hot")
    ok = next(r for r in kids.values() if r.data.tags["method"] == "GRPO")
    assert ok.info.status == "FINISHED"
    assert hot.info.status == "FAILED"
    assert "diverged at step" in hot.data.tags["failure_reason"] and "non-finite" in hot.data.tags["failure_reason"]
    assert "retries" not in hot.data.tags  # deterministic divergence: not retried
    assert "FAILED" in result.stderr and hot.data.tags["trial_id"] in result.stderr
    table = (cwd / "runs" / "cli_nan" / "report" / "table.md").read_text()
    assert "GRPO-hot" not in table.split("\n\n")[0]  # no row for it in the table itself
    assert "GRPO-hot" in table and "diverged" in table  # ... but a footnote says it was left out, and why


def test_one_writer_per_sweep_two_sweeps_share_a_store_and_the_cluster_needs_its_token():
    import psutil

    cwd = short_cwd()
    first = spec_in(cwd, "cli_lock_a", seeds=(0,), steps=300, max_concurrent=1, variants=[{"algorithm": "grpo"}])
    other = spec_in(cwd, "cli_lock_b", seeds=(0,), steps=6, max_concurrent=1, variants=[{"algorithm": "cispo"}])
    log = cwd / "a.log"
    proc = _start(cwd, "run", first, "--no-report", log=log)
    client = client_for(cwd / "runs")
    try:
        try:
            wait_for(lambda: store_ready(cwd / "runs") and _midway(client, "cli_lock_a", 2)(), timeout=300)
        except TimeoutError:
            raise AssertionError("no step 2 within 300 s; the sweep's log:\n" + log.read_text()[-4000:]) from None
        # The same sweep again while it runs: refused, naming the owner; nothing of it touched.
        twice = sweep(cwd, "run", first)
        assert twice.returncode == 3, twice.stdout + twice.stderr
        assert "already running" in twice.stderr and f"pid {proc.pid}" in twice.stderr

        # Every non-loopback listener of the running local cluster refuses a client without the token.
        ray_dir = str(cwd / "runs" / ".ray")
        owned = {p.pid for p in psutil.process_iter(["cmdline"]) if ray_dir in " ".join(p.info["cmdline"] or [])}
        owned |= {c.pid for c in psutil.Process(proc.pid).children(recursive=True)} | {proc.pid}
        exposed = [c for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and c.pid in owned
                   and not c.laddr.ip.startswith(("127.", "::1"))]
        assert len(exposed) >= 4, "expected Ray's daemons to listen on all interfaces, as Ray does"
        for c in exposed:
            host = "127.0.0.1" if c.laddr.ip in ("::", "0.0.0.0") else c.laddr.ip
            assert refusal_without_token(c.laddr.port, host), (psutil.Process(c.pid).name(), c.laddr)
        gcs_port = next(c.laddr.port for c in exposed if psutil.Process(c.pid).name() == "gcs_server")
        clients = {  # side by side: each retries for ~20 s before it gives up
            auth: subprocess.Popen([str(Path(sweep_exe()).with_name("python")), "-c",
                                    f"import ray; ray.init(address='127.0.0.1:{gcs_port}'); print('CONNECTED')"],
                                   env={**subprocess_env(), **dict(auth)}, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
            for auth in ((("RAY_AUTH_MODE", "disabled"),), (("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN", "0" * 64)))}
        deadline = time.monotonic() + 30
        for auth, client_proc in clients.items():
            try:
                said = client_proc.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
            except subprocess.TimeoutExpired:  # still retrying after 30 s: not connected either
                client_proc.kill()
                said = client_proc.communicate()[0]
            assert "CONNECTED" not in said, auth

        # Another sweep on the same sqlite store, at the same time: both complete.
        b = sweep(cwd, "run", other)
        assert b.returncode == 0, b.stdout[-3000:] + b.stderr[-3000:]
        assert proc.wait(timeout=600) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    for text in (log.read_text(), b.stdout + b.stderr):
        assert "database is locked" not in text
    assert [r.info.status for r in children(client, "cli_lock_a").values()] == ["FINISHED"]
    assert [r.info.status for r in children(client, "cli_lock_b").values()] == ["FINISHED"]
    assert steps_of(client, children(client, "cli_lock_a")["grpo.s0"].info.run_id, "actor/entropy") == list(range(1, 301))


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


def test_stalled_trial_is_ended_retried_and_failed_with_the_reason():
    cwd = short_cwd()
    path = write_spec(cwd, "cli_stall", seeds=(0,), steps=4, max_failures=1, variants=[{"algorithm": "grpo"}])
    spec = yaml.safe_load(path.read_text())
    spec["stall_timeout_s"] = 2
    spec["base"]["data"]["eval_size"] = 200  # the base evaluation alone (3 x 200 x 40 samples) takes far longer than 2 s
    spec["base"]["trainer"]["eval_k"] = 40
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = sweep(cwd, "run", path.name, "--no-report")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    kids = children(client_for(cwd / "runs"), "cli_stall")
    assert len(kids) == 1, result.stdout[-3000:] + result.stderr[-3000:]
    (child,) = kids.values()
    assert child.info.status == "FAILED"
    assert child.data.tags["retries"] == "1"  # retried once (max_failures: 1), stalled again
    assert "stalled: no step reported" in child.data.tags["failure_reason"]
