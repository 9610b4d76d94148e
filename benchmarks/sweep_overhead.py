"""Overhead of the sweep platform: the same fixed-work trials run bare, under raw Ray Tune, and by `sweep`.

    python benchmarks/sweep_overhead.py                 # 4 trials of ~30 s each (~5 min on 2 cores)
    python benchmarks/sweep_overhead.py --smoke         # 4 trials of ~3 s, random-init base (~1 min, mostly Ray start-up)
    python benchmarks/sweep_overhead.py --trial-seconds 60 --reps 3   # longer trials, 3 alternating repetitions
    python benchmarks/sweep_overhead.py --steps 40      # fix the work instead of calibrating it

Four trials (GRPO, seeds 0-3) of the built-in trainer with one fixed small config: the default
preset (configs/trainer/local_tiny.yaml + model tiny_qwen3 + data arith) with ``trainer.steps`` set so
one trial takes about ``--trial-seconds`` on one core (calibrated in this process: trainer start-up,
one evaluation and a few RL steps are timed first), evaluation only at step 0 and at the end and
cheaper (``data.eval_size=16``, ``trainer.eval_k=1``), ``trainer.checkpoint_every=0`` (only the
final checkpoint that the sweep runner asks for) and one torch thread per trial (``trainer.threads=1``,
set by the trainer itself in every mode). The trial configs come from ``sweeps.spec.load_spec`` on a
spec written into the run directory, so all three modes do bit-identical work (same seeds, same data,
same base checkpoint, same steps). The base checkpoint is built before anything is timed.

  (a) sequential: ``trainers.local.trainer.train`` four times, back to back, in this process
      (a no-op reporter, no checkpoints): the pure work, one core.
  (b) raw Ray Tune: ``ray.init(num_cpus=2)`` + a ``tune.Tuner`` over the four configs with a function
      trainable that calls ``train`` and ``tune.report``s every step, 1 CPU per trial, max 2 concurrent.
  (c) the platform: ``sweeps.runner.run_sweep(spec, RunOptions(num_cpus=2))``: the same Tune trials
      plus MLflow (sqlite, the driver logs every step of every trial as it streams in), the final
      checkpoint per trial, the progress bookkeeping; max_concurrent 2, 1 CPU per trial.

Wall times: (a) from the first ``train`` to the last return; (b) ``ray.init`` + ``Tuner.fit``;
(c) the ``run_sweep`` call (it starts Ray itself; loading the spec, i.e. the Hydra compose, is done
once beforehand and shown separately). ``ray.shutdown()`` between modes, untimed. Ray's temp dir is
``.rt/<mode>`` in the repository (short: Unix socket paths), MLflow and Tune results go to
``runs/sweep_overhead-<time>/`` (removed afterwards unless --keep).

Figures: (c)/(b) (the platform's cost over raw Tune; target <= 1.05) and the parallel efficiency on
2 cores, (a) / (2 x (b)) (target >= 85%) and (a) / (2 x (c)). With --reps R > 1 the modes run R
times in alternating order (a b c, c b a, ...) and the table shows medians.
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

from sweeps.runner import RunOptions, prepare_environment, run_sweep  # noqa: E402

RT = REPO / ".rt"  # Ray temp dirs (git-ignored, short path)
os.environ.setdefault("RAY_TMPDIR", str(RT))
prepare_environment(REPO / "runs")  # HF caches, Ray/Tune env: the same for every mode

import logging  # noqa: E402

import yaml  # noqa: E402

from sweeps.spec import load_spec  # noqa: E402
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
                 "warm_start": warm},
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


def mode_a(configs: list[TrialConfig]) -> dict:
    per_trial = []
    started = time.perf_counter()
    for cfg in configs:
        t0 = time.perf_counter()
        train(cfg, lambda step, metrics, ckpt: None, resume_from=None, workdir=None, log=lambda s: None)
        per_trial.append(time.perf_counter() - t0)
    return {"wall": time.perf_counter() - started, "per_trial": per_trial}


def raw_trainable(config: dict) -> None:
    """Function trainable of mode (b): the trainer, reporting every step to Tune, nothing else."""
    from ray import tune

    from trainers.config import TrialConfig
    from trainers.local.trainer import train

    cfg = TrialConfig.from_dict(config["trial"], source="bench")
    train(cfg, lambda step, metrics, ckpt: tune.report({**metrics, "step": step}), log=lambda s: None)


def mode_b(configs: list[TrialConfig], run_dir: Path, temp_dir: Path) -> dict:
    import ray
    from ray import tune

    temp_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ray.init(num_cpus=2, _temp_dir=str(temp_dir), include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    tuner = tune.Tuner(
        tune.with_resources(raw_trainable, {"cpu": 1}),
        param_space={"trial": tune.grid_search([c.to_dict() for c in configs])},
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
        run_config=tune.RunConfig(name="raw", storage_path=str(run_dir / "raw_tune"), verbose=0),
    )
    grid = tuner.fit()
    wall = time.perf_counter() - started
    errors = [r.error for r in grid if r.error]
    ray.shutdown()
    if errors:
        raise RuntimeError(f"raw Tune: {len(errors)} trials failed: {errors[0]}")
    return {"wall": wall}


def mode_c(spec_path: Path, run_dir: Path, temp_dir: Path) -> dict:
    import ray

    spec = load_spec(spec_path)
    started = time.perf_counter()
    result = run_sweep(spec, RunOptions(run_dir=run_dir, num_cpus=2, show_progress=False, ray_temp_dir=temp_dir))
    wall = time.perf_counter() - started
    ray.shutdown()
    bad = {k: v for k, v in result.statuses.items() if v != "FINISHED"}
    if bad:
        raise RuntimeError(f"run_sweep: trials not finished: {bad}")
    return {"wall": wall, "tracking_uri": result.tracking_uri, "parent": result.parent_run_id}


def mlflow_points(uri: str, parent: str, key: str = "reward/mean") -> list[int]:
    """Points of `key` logged per child run: proof that every step was streamed to MLflow."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_run(parent).info.experiment_id
    runs = client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{parent}'")
    return sorted(len(client.get_metric_history(r.info.run_id, key)) for r in runs)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trial-seconds", type=float, default=30.0, help="approximate work per trial (sets the steps)")
    ap.add_argument("--steps", type=int, default=None, help="RL steps per trial (overrides --trial-seconds)")
    ap.add_argument("--reps", type=int, default=1, help="repetitions of the three modes, alternating order")
    ap.add_argument("--warm-start-steps", type=int, default=None,
                    help="supervised steps of the base (default: the preset's; --smoke: 0 = random init)")
    ap.add_argument("--smoke", action="store_true", help="~3 s trials on a random-init base")
    ap.add_argument("--keep", action="store_true", help="keep the run directory (MLflow store, Tune results)")
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
        print(f"base checkpoint: {base}  ({cfg0.warm_start.steps} warm-start steps; "
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

        walls: dict[str, list[float]] = {"a": [], "b": [], "c": []}
        per_trial: list[float] = []
        points: list[int] = []
        for rep in range(args.reps):
            order = "abc" if rep % 2 == 0 else "cba"
            for mode in order:
                load = os.getloadavg()[0]
                print(f"rep {rep + 1}/{args.reps} mode ({mode}) ... (load avg {load:.2f})", flush=True)
                if mode == "a":
                    out = mode_a(configs)
                    per_trial += out["per_trial"]
                elif mode == "b":
                    temp = RT / f"b{rep}"
                    made_temp.append(temp)
                    out = mode_b(configs, run_root / f"b{rep}", temp)
                else:
                    temp = RT / f"c{rep}"
                    made_temp.append(temp)
                    out = mode_c(spec_path, run_root / f"c{rep}", temp)
                    points = mlflow_points(out["tracking_uri"], out["parent"])
                walls[mode].append(out["wall"])
                print(f"  ({mode}) {out['wall']:.1f}s", flush=True)

        a, b, c = (statistics.median(walls[m]) for m in "abc")
        n = len(configs)
        rows = [
            ("(a) sequential, one process (train x4)", a, f"{statistics.median(per_trial):.1f} s/trial"),
            ("(b) raw Ray Tune, 2 concurrent x 1 CPU", b, ""),
            ("(c) sweeps.run_sweep + MLflow, 2 x 1 CPU", c, ""),
        ]
        print(f"\nSweep overhead: {n} trials x {steps} RL steps (~{statistics.median(per_trial):.0f} s of work each), "
              f"2 cores, median of {args.reps} rep(s)")
        print(f"{'mode':44s} {'wall s':>8s}  note")
        for label, wall, note in rows:
            print(f"{label:44s} {wall:8.1f}  {note}")
        print(f"{'(c)/(b)  platform over raw Tune':44s} {c / b:8.3f}  target <= 1.05")
        print(f"{'(a)/(2*(b))  parallel efficiency, raw Tune':44s} {a / (2 * b):8.1%}  target >= 85%")
        print(f"{'(a)/(2*(c))  parallel efficiency, platform':44s} {a / (2 * c):8.1%}")
        print(f"{'ideal 2-core wall (a)/2':44s} {a / 2:8.1f}  Tune over ideal: +{b - a / 2:.1f}s (b), +{c - a / 2:.1f}s (c)")
        print(f"MLflow: {len(points)} child runs, reward/mean points per run: {points} (steps {steps})")
        if args.reps > 1:
            print("all walls: " + "  ".join(f"({m}) " + ", ".join(f"{w:.1f}" for w in walls[m]) for m in "abc"))
    finally:
        for temp in made_temp:
            shutil.rmtree(temp, ignore_errors=True)
        if args.keep:
            print(f"kept {run_root}")
        else:
            shutil.rmtree(run_root, ignore_errors=True)


if __name__ == "__main__":
    main()
