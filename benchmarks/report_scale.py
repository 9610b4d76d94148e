"""How report building scales with the number of trials (collect + table + curves).

    python benchmarks/report_scale.py            # 50 and 200 trials x 300 steps x 15 metrics
    python benchmarks/report_scale.py --smoke    # tiny sizes, seconds
    python benchmarks/report_scale.py --keep     # keep the store in ./.report_scale/ and reuse it next time

Fills an MLflow sqlite store in ./.report_scale/ (inside the current directory) the way the sweep
runner does: parent + nested trial runs, every metric logged per step with log_batch (1000
metrics per call). Two sweeps: one of 50 trials, one of 200 (8 methods x 5 configs x 5 seeds).
Filling is slow (MLflow's ORM writes, a few minutes for 1.1M points) and is not timed. Then, per
sweep, it times collect() (runs + bulk SQL history read), the paper table (all renderers) and the
curve figures (built and serialised to HTML divs), median of 3 runs, and prints the 200/50 ratio
against linear (4x).
Target: < 10 s in total at 200 trials.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboards.collect.sweep_runs import collect  # noqa: E402
from dashboards.report.writer import ReportConfig, _fig_html, build_figures  # noqa: E402
from dashboards.collect.synthetic_store import BENCHMARKS, METHODS, TRAIN_KEYS, fill_store  # noqa: E402
from dashboards.tables.from_sweep import table_from_sweep  # noqa: E402


def _fill(uri: str, root: Path, name: str, methods, configs: int, seeds, steps: int) -> None:
    t0 = time.perf_counter()
    n_total = len(methods) * configs * len(seeds)

    def progress(i: int, n: int) -> None:
        if i == n or i % max(1, n // 10) == 0:
            el = time.perf_counter() - t0
            print(f"  fill {name}: {i}/{n} trials, {el:.0f}s elapsed, ~{el / i * (n - i):.0f}s left", flush=True)

    print(f"filling {name}: {n_total} trials x {steps} steps x {len(TRAIN_KEYS) + len(BENCHMARKS) + 1} metrics")
    fill_store(uri, name, artifact_root=str(root / "artifacts"), methods=methods, configs_per_method=configs,
               seeds=seeds, steps=steps, eval_every=1, mix_weight_for_dhpo=False, progress=progress)


def _time(name: str, uri: str) -> dict[str, float]:
    cfg = ReportConfig.from_dict({"table": {"base": "Base", "delta_avg": True, "std": True,
                                            "baselines": ["GRPO", "GSPO"]}, "ema_alpha": 0.1})
    t = {}
    t0 = time.perf_counter()
    data = collect(name, tracking_uri=uri)
    t["collect"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = table_from_sweep(data, cfg.table)
    for render in (table.to_markdown, table.to_latex, table.to_html, table.to_csv):
        render()
    t["table"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    figs = build_figures(data.history, cfg)
    html = [_fig_html(f, f"fig-{i}") for i, (_, f) in enumerate(figs)]
    t["curves"] = time.perf_counter() - t0
    t["total"] = t["collect"] + t["table"] + t["curves"]
    print(f"  {name}: {len(data.trials)} trials, {len(data.history):,} points, {len(figs)} figures "
          f"({sum(map(len, html)) / 1e6:.1f} MB of figure HTML): "
          + ", ".join(f"{k} {v:.2f}s" for k, v in t.items()), flush=True)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes")
    ap.add_argument("--keep", action="store_true", help="keep (and reuse) the store in ./.report_scale/")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per size (median reported)")
    args = ap.parse_args()
    root = Path.cwd() / (".report_scale-smoke" if args.smoke else ".report_scale")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    steps = 10 if args.smoke else args.steps
    sizes = {"scale-small": (METHODS[:5], 2, (0, 1, 2, 3, 4)), "scale-large": (METHODS, 5, (0, 1, 2, 3, 4))}
    if args.smoke:
        sizes = {"scale-small": (METHODS[:2], 1, (0, 1)), "scale-large": (METHODS[:4], 2, (0, 1))}
    try:
        root.mkdir(exist_ok=True)
        from mlflow import MlflowClient
        client = MlflowClient(uri)
        for name, (methods, configs, seeds) in sizes.items():
            if client.get_experiment_by_name(name) is None:
                _fill(uri, root, name, methods, configs, seeds, steps)
            else:
                print(f"reusing {name} from {root}")
        print(f"timing (one warm-up run, then the median of {args.repeat} runs per size):")
        _time("scale-small", uri)
        res = {}
        for name in sizes:
            runs = [_time(name, uri) for _ in range(args.repeat)]
            res[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        small, large = (len(m) * c * len(s) for m, c, s in sizes.values())
        lin = large / small
        print(f"\n{'':8}{small:>8} trials{large:>8} trials   ratio (linear = {lin:.0f}x)")
        for k in ("collect", "table", "curves", "total"):
            a, b = res["scale-small"][k], res["scale-large"][k]
            print(f"{k:8}{a:>14.2f}s{b:>14.2f}s   {b / a:5.2f}x")
        verdict = "OK" if res["scale-large"]["total"] < 10 else "SLOW"
        print(f"target < 10 s at {large} trials: {res['scale-large']['total']:.2f}s {verdict}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
