"""The dashboards' smoke run: a synthetic sweep store, collected and reported end to end, in seconds.

    python -m dashboards --smoke            # in ./.dashboards-smoke-*/ (removed at the end)
    python -m dashboards --smoke --keep     # ... kept, with its report in <dir>/smoke/report/

The report commands themselves are `sweep report` and `sweep table` (sweeps/commands/).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from contract.run_layout import RunLayout


def smoke(keep: bool = False) -> Path:
    """Synthetic store in a throwaway run directory ./.dashboards-smoke-*/ -> collect -> report (logged to the
    parent run; written to <that dir>/smoke/report/). Returns the HTML report's path."""
    from dashboards.report.writer import ReportConfig, report_from_mlflow
    from dashboards.collect.synthetic_store import fill_store

    t0 = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix=".dashboards-smoke-", dir=Path.cwd()))
    run = RunLayout(root)
    uri = f"sqlite:///{run.store}"
    try:
        fill_store(uri, "smoke", artifact_root=str(run.artifacts), seeds=(0, 1), steps=20,
                   eval_every=5, configs_per_method=1)
        cfg = ReportConfig.from_dict({"table": {"base": "Base", "delta_avg": True, "std": True,
                                                "baselines": ["GRPO", "GSPO", "GMPO", "CISPO", "SAPO"]},
                                      "ema_alpha": 0.3})
        paths = report_from_mlflow("smoke", tracking_uri=uri, out_dir=run.sweep("smoke").report, config=cfg)
        print(paths["md"].read_text())
        size = paths["html"].stat().st_size / 1e6
        print(f"smoke ok in {time.perf_counter() - t0:.1f}s: {paths['html']} ({size:.1f} MB)"
              + ("" if keep else " [removed; pass --keep to keep it]"))
        return paths["html"]
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """`python -m dashboards`: the smoke run is its only mode; without --smoke, the usage and exit 2."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m dashboards",
        description="The dashboards' smoke run: a synthetic sweep store in ./.dashboards-smoke-*/, collected and "
                    "reported end to end (the paper table on stdout, the HTML report in that folder).",
        epilog="The report commands are `sweep report NAME` and `sweep table FILE`.")
    parser.add_argument("--smoke", action="store_true", help="run it (seconds)")
    parser.add_argument("--keep", action="store_true", help="keep the folder and its report (default: removed)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not args.smoke:
        parser.error("nothing to do without --smoke (reports: sweep report NAME; tables: sweep table FILE)")
    smoke(keep=args.keep)
    return 0
