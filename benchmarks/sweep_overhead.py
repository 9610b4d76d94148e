"""Overhead of the sweep platform: the same fixed-work trials run bare, under raw Ray Tune, and by `sweep`.

    python benchmarks/sweep_overhead.py                 # 4 trials of ~30 s each (~5 min on 2 cores)
    python benchmarks/sweep_overhead.py --smoke         # 4 trials of ~3 s, random-init base (~1 min: Ray start-up)
    python benchmarks/sweep_overhead.py --trial-seconds 60 --reps 3   # longer trials, 3 alternating reps
    python benchmarks/sweep_overhead.py --steps 40      # fix the work instead of calibrating it
    python benchmarks/sweep_overhead.py --reuse-actors  # (b) reuses its 2 worker processes (a what-if)
    python benchmarks/sweep_overhead.py --modes ac      # skip (b): only the reference and the platform

Four trials (GRPO, seeds 0-3) of the built-in trainer with one fixed small config: the default
preset (configs/trainer/local_tiny.yaml + model tiny_qwen3 + data arith) with ``trainer.steps`` set so
one trial takes about ``--trial-seconds`` on one core (calibrated in this process: trainer start-up,
one evaluation and a few RL steps are timed first), evaluation only at step 0 and at the end and
cheaper (``data.eval_size=16``, ``trainer.eval_k=1``), ``trainer.checkpoint_every=0`` (only the
final checkpoint that the sweep runner asks for) and one torch thread per trial (``local.threads=1``,
set by the trainer itself in every mode). The trial configs come from ``sweeps.specs.load.load_spec`` on a
spec written into the run directory, so all three modes do bit-identical work (same seeds, same data,
same base checkpoint, same steps). The base checkpoint is built before anything is timed.

  (a) sequential: ``trainers.local.trainer.train`` four times, back to back, in this process
      (a no-op reporter, no checkpoints): the pure work, one core.
  (b) raw Ray Tune: ``ray.init(num_cpus=2)`` + a ``tune.Tuner`` over the four configs with a function
      trainable that calls ``train`` and ``tune.report``s every step, 1 CPU per trial, max 2 concurrent,
      Tune's default loggers on (the platform turns them off: MLflow is its record).
  (c) the platform: ``sweeps.driver.runner.run_sweep(spec, RunOptions(num_cpus=2))``: the same Tune trials
      plus MLflow (sqlite, the driver logs every step of every trial as it streams in), the final
      checkpoint per trial, the progress bookkeeping; max_concurrent 2, 1 CPU per trial.

Wall times: (a) from the first ``train`` to the last return; (b) ``ray.init`` + ``Tuner.fit``;
(c) the ``run_sweep`` call (it starts Ray itself; loading the spec, i.e. the Hydra compose, is done
once beforehand and shown separately). Both (b) and (c) import ``ray.tune`` before their timed
part. ``ray.shutdown()`` between modes, untimed. Ray's temp dir is ``.rt/<mode>`` in the
repository (short: Unix socket paths), MLflow and Tune results go to ``runs/sweep_overhead-<time>/``
(removed afterwards unless --keep).

Figures: (c)/(b) (the platform's cost over raw Tune; target <= 1.05) and the parallel efficiency on
2 cores, (a) / (2 x (b)) (target >= 85%) and (a) / (2 x (c)). With --reps R > 1 the modes run R
times in alternating order (a b c, c b a, ...) and the table shows medians.

Where the time goes (the extra columns): head = mode start to the first trial start (ray.init, the
MLflow DB, Tune set-up); start = per trial, its start to its step-0 result at the driver (worker
process, imports, trainer set-up, one evaluation); RL step = the trainer's own perf/step_time_s;
gap = per step, the interval between two steps minus the step time: in (b) between two results at
the driver (Tune function trainables report synchronously, so this is the report round trip, driver
callbacks included), in (c) between two step ends in the trial (it reports in batches, every
``report_interval_s``);
tail = last result to the end. The 2 cores are shared with other jobs, so a /proc sampler counts the
CPU seconds of this process tree (driver, Ray daemons, workers) and of everything else: efficiency is
also shown against the cores the other jobs left free, and (a)'s CPU over (b)'s / (c)'s CPU is a
load-independent measure of what Ray and the platform cost. In mode (c) this process patches
``SweepTracker`` methods and ``sweeps.driver.runner.init_ray`` with timers (restored after; no file changes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere: `trainers` lives at the repo root
    sys.path.insert(0, str(REPO))

from benchmarks.cpu_meter import CpuMeter  # noqa: E402
from sweeps.driver.runner import RunOptions, prepare_environment, run_sweep  # noqa: E402

RT = REPO / ".rt"  # Ray temp dirs (git-ignored, short path)
os.environ.setdefault("RAY_TMPDIR", str(RT))
prepare_environment(REPO / "runs")  # HF caches, Ray/Tune env: the same for every mode

import logging  # noqa: E402

import yaml  # noqa: E402

from sweeps.specs.load import load_spec  # noqa: E402
from tracking_store.roles import children_filter  # noqa: E402
from trainers.config import TrialConfig  # noqa: E402
from trainers.local.data import load_data  # noqa: E402
from trainers.local.trainer import LocalTrainer, evaluate, train  # noqa: E402
from trainers.local.warmstart import ensure_base_checkpoint  # noqa: E402

logging.getLogger("math_verify").setLevel(logging.ERROR)
SEEDS = [0, 1, 2, 3]


def write_spec(run_dir: Path, steps: int, warm_start_steps: int | None) -> Path:
    warm = {"cache_dir": str(REPO / ".cache" / "base_models")}
    if warm_start_steps is not None:
        warm["steps"] = warm_start_steps
    spec = {
        "name": "sweep_overhead",
        "defaults": [{"trainer": "local_tiny"}, {"model": "tiny_qwen3"}, {"data": "arith"}],
        "base": {"trainer": {"steps": steps, "eval_every": steps, "eval_k": 1, "checkpoint_every": 0},
                 "data": {"eval_size": 16},
                 "local": {"warm_start": warm}},
        "seeds": SEEDS,
        "resources": {"cpus": 1, "gpus": 0},
        "max_concurrent": 2,
        "max_failures": 0,
        "variants": [{"algorithm": "grpo"}],
    }
    path = run_dir / "sweep_overhead.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def calibrate(cfg: TrialConfig, trial_seconds: float) -> tuple[int, dict[str, float]]:
    """Steps so that one trial takes ~trial_seconds: time start-up, one evaluation, a few RL steps."""
    t0 = time.perf_counter()
    tr = LocalTrainer(cfg, log=lambda s: None)
    t1 = time.perf_counter()
    evaluate(tr.model, tr.tokenizer, tr.benchmarks, cfg, 0)
    t2 = time.perf_counter()
    tr.rl_step()  # warm-up (first math-verify call, allocator)
    t3 = time.perf_counter()
    n = 4
    for _ in range(n):
        tr.rl_step()
    step_s = (time.perf_counter() - t3) / n
    fixed = (t1 - t0) + 2 * (t2 - t1)
    steps = max(2, round((trial_seconds - fixed) / step_s))
    return steps, {"init_s": t1 - t0, "eval_s": t2 - t1, "step_s": step_s}


class MlflowTimer:
    """Times the driver's MLflow calls in mode (c) (SweepTracker methods, patched in this process only)."""

    METHODS = ("__init__", "start_trial", "log_result", "set_tags", "end_trial", "end_sweep")

    def __enter__(self):
        from sweeps.tracking.sweep_runs import SweepTracker

        self.calls: dict[str, list[float]] = {m: [] for m in self.METHODS}
        self.trial_started: dict[str, float] = {}  # trial id -> time.time() when its child run was created
        self.saved = {m: getattr(SweepTracker, m) for m in self.METHODS}
        for name, fn in self.saved.items():
            setattr(SweepTracker, name, self._timed(name, fn))
        return self

    def _timed(self, name, fn):
        def wrapper(*args, **kwargs):
            if name == "start_trial":
                self.trial_started[args[1].trial_id] = time.time()
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.calls[name].append(time.perf_counter() - t0)
        return wrapper

    def __exit__(self, *exc):
        from sweeps.tracking.sweep_runs import SweepTracker

        for name, fn in self.saved.items():
            setattr(SweepTracker, name, fn)
        return False


def arrival_gaps(arrivals: dict[str, list[tuple[float, float | None]]]) -> list[float]:
    """Per step: interval between two consecutive steps' times minus the trainer's own step time,
    i.e. the time a trial spends outside rl_step. (b): the times results reached the driver; Tune
    function trainables report synchronously (the training thread waits in tune.report until the
    driver has processed the result), so this is the report round trip, driver callbacks included.
    (c): the time each step ended in the trial (trials batch their reports, sweeps/driver/trial.py)."""
    gaps = []
    for seq in arrivals.values():
        for (t_prev, _), (t, step_s) in zip(seq, seq[1:]):
            if step_s is not None:
                gaps.append(t - t_prev - step_s)
    return gaps


def start_latencies(started: dict[str, float], arrivals: dict[str, list]) -> list[float]:
    """Per trial: from the trial's start (Tune's on_trial_start) to its first result (step 0 = the
    base-model evaluation) reaching the driver: worker start, imports, trainer set-up, one evaluation."""
    return [arrivals[k][0][0] - t for k, t in started.items() if arrivals.get(k)]


def head_tail(t_begin: float, t_end: float, started: dict[str, float], arrivals: dict[str, list]) -> dict:
    """head: mode start -> first trial started (ray.init, Tune set-up); tail: last result -> mode end;
    alone: how long the last trial ran after the one before it ended (one core idle)."""
    ends = sorted(seq[-1][0] for seq in arrivals.values())
    return {"head": min(started.values()) - t_begin, "tail": t_end - ends[-1],
            "alone": ends[-1] - ends[-2] if len(ends) > 1 else 0.0}


def mode_a(configs: list[TrialConfig]) -> dict:
    per_trial, steps, gaps, starts = [], [], [], []
    last = [0.0]

    def report(step, metrics, ckpt):
        now = time.perf_counter()
        if step == 0:
            starts.append(now - last[0])
        if "perf/step_time_s" in metrics:
            steps.append(metrics["perf/step_time_s"])
            gaps.append(now - last[0] - metrics["perf/step_time_s"])
        last[0] = time.perf_counter()

    started = time.perf_counter()
    for cfg in configs:
        t0 = last[0] = time.perf_counter()
        train(cfg, report, resume_from=None, workdir=None, log=lambda s: None)
        per_trial.append(time.perf_counter() - t0)
    return {"wall": time.perf_counter() - started, "per_trial": per_trial, "step_times": steps, "gaps": gaps,
            "starts": starts}


def raw_trainable(config: dict) -> None:
    """Function trainable of mode (b): the trainer, reporting every step to Tune, nothing else."""
    from ray import tune

    from trainers.config import TrialConfig
    from trainers.local.trainer import train

    cfg = TrialConfig.from_dict(config["trial"], source="bench")
    train(cfg, lambda step, metrics, ckpt: tune.report({**metrics, "step": step}), log=lambda s: None)


def mode_b(configs: list[TrialConfig], run_dir: Path, temp_dir: Path, reuse_actors: bool = False) -> dict:
    import ray
    from ray import tune

    temp_dir.mkdir(parents=True, exist_ok=True)
    started, t_begin = time.perf_counter(), time.time()
    ray.init(num_cpus=2, _temp_dir=str(temp_dir), include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    ray_init_s = time.perf_counter() - started
    arrivals: dict[str, list[tuple[float, float | None]]] = {}
    trial_started: dict[str, float] = {}

    class Arrivals(tune.Callback):
        def on_trial_start(self, iteration, trials, trial, **info):
            trial_started[trial.trial_id] = time.time()

        def on_trial_result(self, iteration, trials, trial, result, **info):
            arrivals.setdefault(trial.trial_id, []).append((time.time(), result.get("perf/step_time_s")))

    tuner = tune.Tuner(
        tune.with_resources(raw_trainable, {"cpu": 1}),
        param_space={"trial": tune.grid_search([c.to_dict() for c in configs])},
        tune_config=tune.TuneConfig(max_concurrent_trials=2, reuse_actors=reuse_actors),
        run_config=tune.RunConfig(name="raw", storage_path=str(run_dir / "raw_tune"), verbose=0,
                                  callbacks=[Arrivals()]),
    )
    platform_setting = os.environ.get("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS")
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "0"  # raw Tune: its default CSV/JSON/TensorBoard loggers
    try:
        grid = tuner.fit()
    finally:
        if platform_setting is None:
            del os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"]
        else:
            os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = platform_setting
    wall, t_end = time.perf_counter() - started, time.time()
    errors = [r.error for r in grid if r.error]
    ray.shutdown()
    if errors:
        raise RuntimeError(f"raw Tune: {len(errors)} trials failed: {errors[0]}")
    steps = [step_s for seq in arrivals.values() for _, step_s in seq if step_s is not None]
    return {"wall": wall, "step_times": steps, "gaps": arrival_gaps(arrivals), "ray_init": ray_init_s,
            "starts": start_latencies(trial_started, arrivals), **head_tail(t_begin, t_end, trial_started, arrivals)}


def mode_c(spec_path: Path, run_dir: Path, temp_dir: Path) -> dict:
    import ray
    from ray import tune  # noqa: F401 - imported before the timed part, as in (b)

    spec = load_spec(spec_path)
    import sweeps.driver.runner as runner

    init_ray, ray_init_s = runner.init_ray, []

    def timed_init_ray(*args, **kwargs):  # patched in this process only, restored below
        t0 = time.perf_counter()
        init_ray(*args, **kwargs)
        ray_init_s.append(time.perf_counter() - t0)

    runner.init_ray = timed_init_ray
    started, t_begin = time.perf_counter(), time.time()
    try:
        with MlflowTimer() as timer:
            result = run_sweep(spec, RunOptions(run_dir=run_dir, num_cpus=2, show_progress=False,
                                                ray_temp_dir=temp_dir))
    finally:
        runner.init_ray = init_ray
    wall, t_end = time.perf_counter() - started, time.time()
    ray.shutdown()
    bad = {k: v for k, v in result.statuses.items() if v != "FINISHED"}
    if bad:
        raise RuntimeError(f"run_sweep: trials not finished: {bad}")
    points, steps, arrivals = mlflow_history(result.tracking_uri, result.parent_run_id)
    return {"wall": wall, "points": points, "step_times": steps, "gaps": arrival_gaps(arrivals),
            "mlflow": timer.calls, "starts": start_latencies(timer.trial_started, arrivals), "ray_init": ray_init_s[0],
            **head_tail(t_begin, t_end, timer.trial_started, arrivals)}


def mlflow_history(uri: str, parent: str) -> tuple[list[int], list[float], dict]:
    """reward/mean points per child run (every step streamed?), all perf/step_time_s values, and per
    trial the (time, step time) of every step: each step is stamped with the time it ended in the
    trial (sweeps/driver/trial.py sends them in batches; SweepTracker.log_result keeps the stamps)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_run(parent).info.experiment_id
    runs = client.search_runs([exp], children_filter(parent))
    points = sorted(len(client.get_metric_history(r.info.run_id, "reward/mean")) for r in runs)
    arrivals = {}
    for r in runs:
        history = sorted(client.get_metric_history(r.info.run_id, "trial/step"), key=lambda m: m.step)
        step_s = {m.step: m.value for m in client.get_metric_history(r.info.run_id, "perf/step_time_s")}
        tid = r.data.tags.get("trial_id", r.info.run_id)
        arrivals[tid] = [(m.timestamp / 1000, step_s.get(m.step)) for m in history]
    steps = [v for seq in arrivals.values() for _, v in seq if v is not None]
    return points, steps, arrivals


def print_table(runs: dict[str, list[dict]], n: int, steps: int, reps: int) -> None:
    modes = [m for m in "abc" if runs.get(m)]

    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[mode])

    wall = {m: med(m, "wall") for m in modes}
    a = wall["a"]
    per_trial = statistics.median(t for r in runs["a"] for t in r["per_trial"])
    labels = {"a": "(a) sequential, one process (train x4)", "b": "(b) raw Ray Tune, 2 concurrent x 1 CPU",
              "c": "(c) sweeps.run_sweep + MLflow, 2 x 1 CPU"}
    print(f"\nSweep overhead: {n} trials x {steps} RL steps (~{per_trial:.0f} s of work each), 2 cores, "
          f"median of {reps} rep(s)")
    print(f"{'mode':42s} {'wall s':>7s} {'head s':>7s} {'start s':>8s} {'RL step s':>10s} {'gap ms':>7s} "
          f"{'tail s':>7s} {'our CPU s':>10s} {'others CPU s':>13s}")
    for m in modes:
        step = statistics.median(t for r in runs[m] for t in r["step_times"])
        gaps = [g for r in runs[m] for g in r["gaps"]]
        gap = 1000 * statistics.median(gaps) if gaps else float("nan")
        others = med(m, "cpu_others")
        start = statistics.median(t for r in runs[m] for t in r["starts"])
        head, tail = (med(m, k) if m != "a" else 0.0 for k in ("head", "tail"))
        print(f"{labels[m]:42s} {wall[m]:7.1f} {head:7.1f} {start:8.2f} {step:10.3f} {gap:7.1f} {tail:7.1f} "
              f"{med(m, 'cpu_ours'):10.1f} "
              f"{others:8.1f} ({others / med(m, 'span'):.2f} cores)")
    if "b" in wall and "c" in wall:
        print(f"{'(c)/(b)  platform over raw Tune':42s} {wall['c'] / wall['b']:7.3f}   target <= 1.05")
    for m, what in (("b", "raw Tune"), ("c", "platform")):
        if m in wall:
            print(f"{f'(a)/(2*({m}))  parallel efficiency, {what}':42s} {a / (2 * wall[m]):7.1%}   target >= 85%")
    print(f"{'ideal 2-core wall = (a)/2':42s} {a / 2:7.1f}   "
          + ", ".join(f"({m}) +{wall[m] - a / 2:.1f}s" for m in modes if m != "a") + " over it")
    for m in modes[1:]:  # what the other jobs left us: 2 cores minus their average use during the mode
        free = max(0.05, 2 - med(m, "cpu_others") / med(m, "span"))
        print(f"{f'({m}) efficiency on the cores left free, (a)/(free*({m}))':42s} {a / (free * wall[m]):7.1%}"
              f"   ({free:.2f} cores free on average)")
        print(f"{f'useful CPU share (a)/({m}) CPU s':42s} {med('a', 'cpu_ours') / med(m, 'cpu_ours'):7.1%}"
              "   (Ray/platform CPU cost, load-independent)")
    print("head s: mode start -> first trial started (ray.init, MLflow DB, Tune set-up); tail s: last result ->")
    print("mode end (Tune/sweep wind-down); start s: median per trial from its start to its first result (step-0")
    print("evaluation) at the driver (worker start, imports, trainer set-up);")
    print("RL step s: median perf/step_time_s inside the trials; gap ms: median time per step outside rl_step")
    print("(the report round trip); our CPU s: this process tree (driver, Ray, workers); others CPU s: the rest")
    print("of the machine meanwhile (other jobs), in average cores busy. ray.init: "
          + ", ".join(f"({m}) {med(m, 'ray_init'):.1f}s" for m in modes[1:]) + "; the last trial ran alone "
          + ", ".join(f"({m}) {med(m, 'alone'):.1f}s" for m in modes[1:]) + " (one core idle meanwhile)")
    for m in modes:
        roles = runs[m][-1]["cpu_roles"]
        print(f"CPU s by process ({m}): "
              + ", ".join(f"{k} {v:.1f}" for k, v in sorted(roles.items(), key=lambda kv: -kv[1]) if v >= 0.05))
    if "c" in runs:
        calls = runs["c"][-1]["mlflow"]
        total = sum(sum(v) for v in calls.values())
        print(f"driver time in MLflow (c): {total:.1f}s; " + ", ".join(
            f"{k.strip('_')} {len(v)}x {sum(v):.2f}s (max {max(v):.3f})" for k, v in calls.items() if v))
        points = runs["c"][-1]["points"]
        print(f"MLflow (c): {len(points)} child runs, reward/mean points per run {points} (steps per trial {steps})")
    if reps > 1:
        print("all walls: " + "  ".join(f"({m}) " + ", ".join(f"{r['wall']:.1f}" for r in runs[m]) for m in modes))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trial-seconds", type=float, default=30.0, help="approximate work per trial (sets the steps)")
    ap.add_argument("--steps", type=int, default=None, help="RL steps per trial (overrides --trial-seconds)")
    ap.add_argument("--reps", type=int, default=1, help="repetitions of the three modes, alternating order")
    ap.add_argument("--warm-start-steps", type=int, default=None,
                    help="supervised steps of the base (default: the preset's; --smoke: 0 = random init)")
    ap.add_argument("--smoke", action="store_true", help="~3 s trials on a random-init base")
    ap.add_argument("--keep", action="store_true", help="keep the run directory (MLflow store, Tune results)")
    ap.add_argument("--modes", default="abc",
                    help="which modes to run (a is always run: it is the reference), e.g. --modes ac")
    ap.add_argument("--reuse-actors", action="store_true",
                    help="(b) with TuneConfig(reuse_actors=True): one worker process per lane (what-if for the runner)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.trial_seconds = 3.0
        args.warm_start_steps = 0 if args.warm_start_steps is None else args.warm_start_steps

    run_root = REPO / "runs" / time.strftime("sweep_overhead-%Y%m%d-%H%M%S")
    run_root.mkdir(parents=True)
    made_temp = []
    try:
        # One base checkpoint, built (or found) before anything is timed; then the step count.
        spec = load_spec(write_spec(run_root, 2, args.warm_start_steps))
        cfg0 = spec.trials[0].config
        train_problems, _ = load_data(cfg0)
        base = ensure_base_checkpoint(cfg0, train_problems)
        print(f"base checkpoint: {base}  ({cfg0.local.warm_start.steps} warm-start steps; "
              f"max_new_tokens {cfg0.trainer.max_new_tokens})")
        if args.steps is None:
            steps, cal = calibrate(cfg0, args.trial_seconds)
            print(f"calibration: start-up {cal['init_s']:.2f}s, evaluation {cal['eval_s']:.2f}s, "
                  f"RL step {cal['step_s']:.3f}s -> {steps} steps for ~{args.trial_seconds:g}s per trial")
        else:
            steps = args.steps
        spec_path = write_spec(run_root, steps, args.warm_start_steps)
        t0 = time.perf_counter()
        spec = load_spec(spec_path)
        spec_s = time.perf_counter() - t0
        configs = [t.config for t in spec.trials]
        print(f"{len(configs)} trials ({', '.join(t.trial_id for t in spec.trials)}), {steps} steps each; "
              f"load_spec {spec_s:.2f}s (not timed below)")

        order = "a" + "".join(m for m in "bc" if m in args.modes)
        runs: dict[str, list[dict]] = {m: [] for m in order}
        for rep in range(args.reps):
            for mode in (order if rep % 2 == 0 else order[::-1]):
                print(f"rep {rep + 1}/{args.reps} mode ({mode}) ... (load avg {os.getloadavg()[0]:.2f})", flush=True)
                with CpuMeter() as meter:
                    if mode == "a":
                        out = mode_a(configs)
                    else:
                        made_temp.append(RT / f"{mode}{rep}")
                        out = (mode_b(configs, run_root / f"b{rep}", made_temp[-1], args.reuse_actors)
                               if mode == "b" else mode_c(spec_path, run_root / f"c{rep}", made_temp[-1]))
                out.update(meter.result)
                runs[mode].append(out)
                print(f"  ({mode}) {out['wall']:.1f}s", flush=True)
        print_table(runs, len(configs), steps, args.reps)
        if args.reuse_actors:
            print("(b) ran with TuneConfig(reuse_actors=True); (c) uses the runner as it is")
    finally:
        for temp in made_temp:
            shutil.rmtree(temp, ignore_errors=True)
        if args.keep:
            print(f"kept {run_root}")
        else:
            shutil.rmtree(run_root, ignore_errors=True)


if __name__ == "__main__":
    main()
