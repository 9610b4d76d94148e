"""Sweeps at scale: N synthetic trials through `sweep run` and through raw Ray Tune + MLflow's own logger.

    python benchmarks/sweep_scale.py --smoke                        # 3 trials x 4 steps, 2 slots, grid (~1.5 min)
    python benchmarks/sweep_scale.py                                # 100, 500 and 2000 trials x 200 steps, sqlite
    python benchmarks/sweep_scale.py --trials 100,500 --stores sqlite,postgres   # and `mlflow server` on PostgreSQL
    python benchmarks/sweep_scale.py --searches optuna,asha --trials 100,500     # the searches instead of a grid
    python benchmarks/sweep_scale.py --json runs/scale.json        # the figures as JSON too

The trial is the synthetic backend's (trainers/synthetic/: the metric keys of a real trial, no model; 200
steps, 14 metrics a step (11 of training, 3 compute sums), validation every 50 steps, one checkpoint at the
end; ``--pace`` seconds of sleep a step, 0 by default, so what is measured is the machinery, not the work).
Each mode runs in its own child process, which is the driver, on a local Ray of 2 CPUs, 0.5 CPU and at most 4
trials at once (``--slots``):

  raw    ray.init + tune.Tuner over a function trainable that calls the synthetic train function and
         tune.reports every step (with the last validation values, for ASHA), Tune's
         ``MLflowLoggerCallback`` logging every result to the same kind of store; reuse_actors on, Tune's
         CSV/JSON/TensorBoard loggers off (as the platform has them: MLflow is the one record).
  sweep  ``sweeps.driver.runner.run_sweep`` on a spec of the same trials (load_spec included): what
         ``sweep run SPEC --no-report`` does, status lines as in a batch job.
  tune   raw's Tuner with no logger callback at all: what Ray Tune itself costs the driver (no store, no
         rows), the floor under both; its peak RSS says how much of a driver's growth with N is Tune's.

Searches: ``grid`` (N seeds of one configuration), ``optuna`` (N samples of algorithm.params.eps_low) and
``asha`` (the grid under ASHA, grace period 50 steps). Stores: ``sqlite`` (the default file store) and
``postgres`` (benchmarks/scale_stores.py: `mlflow server`, 2 workers, on PostgreSQL; root needed).

Figures per N (the driver is the child process): wall time; driver CPU seconds per trial (its user+sys);
driver peak RSS (and its growth over N); metric rows that reached the store per second of wall time (rows
counted in the database; raw's rows include Tune's own per-result fields); time from the start to the first
metric row in the store. Then, on the finished sweep only: `sweep status NAME` and `sweep report NAME` (CLI
processes, wall time) and listing every run of the experiment through MLflow's search API (``search_runs``,
paged: what the saved views' runs table asks the server), beside the same listing of raw's experiment.
Targets (issue): sweep/raw <= 1.1 in wall time and driver CPU; RSS growth < 100 MB from 100 to 2,000
trials; report < 15 s and status < 3 s at 2,000 trials x 200 steps.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SLOT_CPUS, SLOTS, RAY_CPUS = 0.5, 4, 2
SMOKE = {"trials": 3, "steps": 4, "slots": 2}
"""--smoke: more trials than slots (one waits for a slot, an actor is reused), every step a validation."""
METRIC = "val/avg/acc"


def base_config(steps: int, pace: float) -> dict:
    return {"backend": "synthetic", "synthetic": {"step_seconds": pace},
            "trainer": {"steps": steps, "eval_every": max(1, steps // 4), "checkpoint_every": steps}}


def stamp(text: str) -> str:
    """``text`` with the date, the commit and the CPU, for the figures' record."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown CPU")
    return f"{text}\n{time.strftime('%Y-%m-%d %H:%M')}, commit {commit or '?'}, {os.cpu_count()} x {cpu}"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------- the two modes (in a child process)

def write_spec(job: dict) -> Path:
    import yaml

    n, steps = job["n"], job["steps"]
    spec = {"name": job["name"], "base": base_config(steps, job["pace"]), "resources": {"cpus": SLOT_CPUS},
            "max_concurrent": job["slots"], "max_failures": 0, "max_trials": max(10000, n),
            "seeds": [0] if job["search"] == "optuna" else list(range(n)), "variants": [{"algorithm": "grpo"}],
            "report": {"table": {"select_by": METRIC, "at": "final"}}}
    if job["search"] == "optuna":
        spec["search"] = {"method": "optuna", "metric": METRIC, "mode": "max", "num_samples": n,
                          "space": {"algorithm.params.eps_low": {"type": "float", "low": 0.1, "high": 0.3}}}
    if job["search"] == "asha":
        spec["scheduler"] = {"type": "asha", "metric": METRIC, "mode": "max", "grace_period": max(1, steps // 4)}
    path = Path(job["run_dir"]) / f"{job['name']}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run_sweep_mode(job: dict) -> None:
    from sweeps.driver.runner import RunOptions, run_sweep
    from sweeps.specs.load import load_spec

    spec = load_spec(write_spec(job))
    run_sweep(spec, RunOptions(run_dir=Path(job["run_dir"]), tracking_uri=job["tracking_uri"], num_cpus=RAY_CPUS,
                               ray_temp_dir=Path(job["temp_dir"]), status_every=60.0))


def raw_trainable(config: dict) -> None:
    import tempfile

    from ray import tune

    from contract.metrics import VAL
    from trainers.config import TrialConfig
    from trainers.synthetic.trainer import train

    trial = dict(config["base"], seed=config["seed"])
    if "eps_low" in config:
        trial["algorithm"] = {"name": "grpo", "params": {"eps_low": config["eps_low"]}}
    last_val: dict[str, float] = {}

    def report(step: int, metrics: dict, checkpoint: Path | None) -> None:
        last_val.update({k: v for k, v in metrics.items() if k.startswith(VAL)})
        result = {**last_val, **metrics, "step": step}
        tune.report(result, checkpoint=tune.Checkpoint.from_directory(checkpoint) if checkpoint else None)

    with tempfile.TemporaryDirectory() as workdir:
        train(TrialConfig.from_dict(trial), report, workdir=Path(workdir), log=lambda line: None)


def run_raw_mode(job: dict) -> None:
    """raw (MLflow's logger callback) and tune (no callback): the same Tuner."""
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"  # as the platform does: MLflow is the only record
    import ray
    from ray import tune
    from ray.air.integrations.mlflow import MLflowLoggerCallback

    n, steps = job["n"], job["steps"]
    ray.init(num_cpus=RAY_CPUS, _temp_dir=job["temp_dir"], include_dashboard=False, log_to_driver=False,
             configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    space: dict = {"base": base_config(steps, job["pace"])}
    extra: dict = {}
    if job["search"] == "optuna":
        from ray.tune.search.optuna import OptunaSearch

        space.update(seed=0, eps_low=tune.uniform(0.1, 0.3))
        extra = {"search_alg": OptunaSearch(metric=METRIC, mode="max"), "num_samples": n}
    else:
        space["seed"] = tune.grid_search(list(range(n)))
    if job["search"] == "asha":
        from ray.tune.schedulers import ASHAScheduler

        extra["scheduler"] = ASHAScheduler(metric=METRIC, mode="max", time_attr="step", grace_period=max(1, steps // 4),
                                           max_t=steps)
    tracking_uri = job["tracking_uri"] or f"sqlite:///{job['run_dir']}/mlflow.db"
    tuner = tune.Tuner(
        tune.with_resources(raw_trainable, {"cpu": SLOT_CPUS}), param_space=space,
        tune_config=tune.TuneConfig(max_concurrent_trials=job["slots"], reuse_actors=True, **extra),
        run_config=tune.RunConfig(name=job["name"], storage_path=str(Path(job["run_dir"]) / "raw_tune"), verbose=0,
                                  failure_config=tune.FailureConfig(max_failures=0),
                                  checkpoint_config=tune.CheckpointConfig(num_to_keep=3),
                                  callbacks=[] if job["mode"] == "tune" else [
                                      MLflowLoggerCallback(tracking_uri=tracking_uri, experiment_name=job["name"],
                                                           save_artifact=False)]))
    tuner.fit()
    ray.shutdown()


def store_rows(db_uri: str, name: str) -> tuple[int, float | None]:
    """Metric rows of experiment ``name`` and the first row's time (epoch seconds), straight from the database."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(db_uri)
    query = sqlalchemy.text("SELECT COUNT(*), MIN(m.timestamp) FROM metrics m JOIN runs r ON m.run_uuid = r.run_uuid "
                            "JOIN experiments e ON r.experiment_id = e.experiment_id WHERE e.name = :name")
    with engine.connect() as conn:
        count, first = conn.execute(query, {"name": name}).one()
    engine.dispose()
    return int(count), (first / 1000 if first else None)


def list_runs_s(tracking_uri: str, name: str) -> tuple[float, int]:
    """Seconds to list every run of the experiment through the search API (pages of 1000), and the count."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    t0 = time.perf_counter()
    experiment = client.get_experiment_by_name(name)
    runs, token = 0, None
    while True:
        page = client.search_runs([experiment.experiment_id], max_results=1000, page_token=token)
        runs += len(page)
        token = page.token
        if not token:
            return time.perf_counter() - t0, runs


def cli_s(job: dict, command: str) -> float:
    args = [sys.executable, "-m", "sweeps.cli", command, job["name"], "--run-dir", job["run_dir"]]
    if job["tracking_uri"]:
        args += ["--tracking-uri", job["tracking_uri"]]
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, cwd=job["run_dir"], timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"sweep {command} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - t0


def child(job: dict) -> dict:
    os.chdir(job["run_dir"])
    rss0, cpu0, t0 = rss_mb(), cpu_s(), time.time()
    (run_sweep_mode if job["mode"] == "sweep" else run_raw_mode)(job)
    wall, cpu = time.time() - t0, cpu_s() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"wall_s": wall, "cpu_per_trial_s": cpu / job["n"], "rss_start_mb": rss0, "rss_peak_mb": peak, "rows": 0}
    if job["mode"] == "tune":  # nothing was recorded
        return out
    tracking_uri = job["tracking_uri"] or f"sqlite:///{job['run_dir']}/mlflow.db"
    rows, first = store_rows(job["db_uri"] or tracking_uri, job["name"])
    out.update(rows=rows, rows_per_s=rows / wall, first_row_s=(first - t0) if first else None)
    out["list_runs_s"], out["runs_listed"] = list_runs_s(tracking_uri, job["name"])
    if job["mode"] == "sweep":
        out["status_s"], out["report_s"] = cli_s(job, "status"), cli_s(job, "report")
    return out


# ---------------------------------------------------------------- the parent: jobs, figures

def run_child(job: dict) -> dict:
    Path(job["run_dir"]).mkdir(parents=True, exist_ok=True)
    log = Path(job["run_dir"]) / "driver.log"
    with open(log, "w") as out:
        done = subprocess.run([sys.executable, __file__, "--child", json.dumps(job)], stdout=out, stderr=subprocess.STDOUT,
                              timeout=6 * 3600)
    lines = log.read_text().splitlines()
    results = [line[len("RESULT "):] for line in lines if line.startswith("RESULT ")]
    if done.returncode != 0 or not results:
        raise SystemExit(f"{job['mode']} N={job['n']} failed (rc {done.returncode}); the end of {log}:\n"
                         + "\n".join(lines[-30:]))
    return json.loads(results[-1])


def fmt(value, spec: str = ".1f") -> str:
    return "–" if value is None else format(value, spec)


def print_table(store: str, search: str, figures: dict[int, dict[str, dict]], steps: int) -> None:
    print(f"\n## store {store}, {search}: N trials x {steps} steps (raw = Ray Tune + MLflowLoggerCallback; "
          f"sweep = sweep run)")
    print("| N | wall s raw / sweep | ratio | driver CPU s/trial raw / sweep | ratio | peak RSS MB raw / sweep "
          "| rows/s raw / sweep | first row s raw / sweep | list runs s raw / sweep | sweep status s | sweep report s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tune_alone = {n: by_mode["tune"] for n, by_mode in figures.items() if "tune" in by_mode}
    for n, by_mode in sorted(figures.items()):
        raw, ours = by_mode.get("raw", {}), by_mode.get("sweep", {})

        def pair(key: str, spec: str = ".1f") -> str:
            return f"{fmt(raw.get(key), spec)} / {fmt(ours.get(key), spec)}"

        def ratio(key: str) -> str:
            return f"{ours[key] / raw[key]:.2f}" if raw.get(key) and ours.get(key) else "–"
        print(f"| {n} | {pair('wall_s')} | {ratio('wall_s')} | {pair('cpu_per_trial_s', '.3f')} | "
              f"{ratio('cpu_per_trial_s')} | {pair('rss_peak_mb', '.0f')} | {pair('rows_per_s', '.0f')} | "
              f"{pair('first_row_s')} | {pair('list_runs_s', '.2f')} | {fmt(ours.get('status_s'), '.2f')} | "
              f"{fmt(ours.get('report_s'), '.2f')} |")
    for n, alone in sorted(tune_alone.items()):
        print(f"Ray Tune alone (no logger), N={n}: wall {alone['wall_s']:.1f} s, driver CPU "
              f"{alone['cpu_per_trial_s']:.3f} s/trial, peak RSS {alone['rss_peak_mb']:.0f} MB")
    sizes = sorted(figures)
    if len(sizes) > 1:
        for mode in ("tune", "raw", "sweep"):
            lo, hi = (figures[sizes[0]].get(mode, {}).get("rss_peak_mb"), figures[sizes[-1]].get(mode, {}).get("rss_peak_mb"))
            if lo and hi:
                print(f"{mode}: driver peak RSS grows {hi - lo:+.0f} MB from {sizes[0]} to {sizes[-1]} trials")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", default="100,500,2000", help="Comma-separated trial counts (default 100,500,2000).")
    parser.add_argument("--steps", type=int, default=200, help="Steps per trial (default 200).")
    parser.add_argument("--pace", type=float, default=0.0, help="Seconds each step sleeps (default 0).")
    parser.add_argument("--slots", type=int, default=SLOTS, help=f"Trials at once (default {SLOTS}, {SLOT_CPUS} CPU each).")
    parser.add_argument("--stores", default="sqlite", help="Comma-separated: sqlite, postgres (default sqlite).")
    parser.add_argument("--searches", default="grid", help="Comma-separated: grid, optuna, asha (default grid).")
    parser.add_argument("--modes", default="raw,sweep", help="Comma-separated: raw, sweep, tune (default raw,sweep).")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE['trials']} trials x {SMOKE['steps']} steps, "
                        f"{SMOKE['slots']} slots, sqlite, grid (~1.5 minutes).")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "sweep_scale", help="Where the runs go (removed unless --keep).")
    parser.add_argument("--keep", action="store_true", help="Keep the stores and Tune results.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(child(json.loads(args.child))), flush=True)
        return
    if args.smoke:
        args.trials, args.steps, args.slots = str(SMOKE["trials"]), SMOKE["steps"], SMOKE["slots"]
    sizes = [int(n) for n in args.trials.split(",")]
    stores, searches, modes = args.stores.split(","), args.searches.split(","), args.modes.split(",")
    for name, values, allowed in (("--stores", stores, ("sqlite", "postgres")), ("--searches", searches, ("grid", "optuna", "asha")),
                                  ("--modes", modes, ("raw", "sweep", "tune"))):
        if not set(values) <= set(allowed):
            parser.error(f"{name}: expected some of {', '.join(allowed)}, got {','.join(values)}")
    from scale_stores import open_store

    print(stamp(f"sweep_scale: trials {sizes} x {args.steps} steps, pace {args.pace} s, {args.slots} slots of "
                f"{SLOT_CPUS} CPU on a Ray of {RAY_CPUS} CPUs; stores {stores}; searches {searches}"))
    out, everything = args.out.resolve(), {}
    shutil.rmtree(out, ignore_errors=True)
    for store_kind in stores:
        with open_store(store_kind, out / store_kind) as store:
            for search in searches:
                figures: dict[int, dict] = {}
                for n in sizes:
                    for mode in modes:
                        name = f"scale-{search}-{n}-{mode}"
                        job = {"mode": mode, "search": search, "n": n, "steps": args.steps, "pace": args.pace,
                               "slots": args.slots, "name": name, "run_dir": str(out / store_kind / name),
                               "temp_dir": str(REPO / ".rt" / f"scale-{mode[0]}"),
                               "tracking_uri": store.tracking_uri, "db_uri": store.db_uri}
                        print(f"{store_kind} {search} N={n} {mode} ...", flush=True)
                        figures.setdefault(n, {})[mode] = result = run_child(job)
                        print(f"  wall {result['wall_s']:.1f} s, driver CPU {result['cpu_per_trial_s']:.3f} s/trial, "
                              f"peak RSS {result['rss_peak_mb']:.0f} MB, {result['rows']} rows", flush=True)
                everything[f"{store_kind}/{search}"] = figures
                print_table(store_kind, search, figures, args.steps)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(everything, indent=1))
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
