"""`sweep run SPEC [KEY=VALUE ...]` and `sweep resume SPEC`: every trial of a sweep, then its report.

    sweep run dhpo_vs_baselines.yaml                     # the whole study, then the report
    sweep run dhpo_vs_baselines.yaml trainer.steps=50 seeds=[0]
    sweep run sspo_temperature_grid.yaml --dry-run       # expanded trial table + resources
    sweep run dhpo_vs_baselines.yaml --smoke             # one seed, a few steps per trial: dhpo_vs_baselines_smoke
    sweep resume dhpo_vs_baselines.yaml                  # = run again: finished trials are skipped
    sweep run my.yaml --address HEAD:6379 --tracking-uri http://mlflow:5000   # a Ray cluster, a shared server

Exit codes: 0 done, 1 a trial failed, 2 bad input, 3 the sweep runs elsewhere, 4 no Ray cluster,
75 interrupted or the store stayed unreachable (resume it).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Optional

import typer
from rich.console import Console

from sweeps.commands.options import RunDir, TrackingUri, fail, grouped, warn, warnings_as_notes
from sweeps.commands.spec_input import load_user_spec, smoke_note
from sweeps.commands.trial_table import print_commands, print_trials

if TYPE_CHECKING:
    from sweeps.driver.runner import RunOptions
    from sweeps.specs.load import SweepSpec

console = Console()
SpecArg = Annotated[str, typer.Argument(help="Sweep YAML path, or a name in configs/sweeps/.")]
Overrides = Annotated[Optional[list[str]], typer.Argument(help="key=value overrides, e.g. trainer.steps=50 seeds=[0]")]
Smoke = Annotated[bool, typer.Option("--smoke", help="One seed, 4 steps per trial: a quick real end-to-end check, as its own sweep NAME_smoke (sweep status NAME_smoke).")]


@dataclass
class LaunchOptions:
    """Where the trials run and where they are recorded (sweeps.driver.runner.RunOptions)."""

    panel: ClassVar[str] = "Where it runs"
    run_dir: RunDir = Path("runs")
    tracking_uri: TrackingUri = None
    address: Annotated[Optional[str], typer.Option("--address", help="Join an existing Ray cluster by its GCS address, from a node of it: HEAD_HOST:6379 or auto (ray:// is refused: see docs/clusters.md).")] = None
    tracking_outage_limit: Annotated[float, typer.Option("--tracking-outage-limit", help="Seconds the tracking store may stay unreachable (trials go on, steps are journaled) before the sweep stops as interrupted (exit 75).")] = 3600.0
    ray_temp_dir: Annotated[Optional[Path], typer.Option("--ray-temp-dir", help="Local Ray temp dir (default <run-dir>/.ray; keep it short).")] = None


@dataclass
class OutputOptions:
    """What the run prints and writes besides its MLflow runs."""

    panel: ClassVar[str] = "Output"
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the report at the end.")] = False
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live table (e.g. in CI logs).")] = False
    status_every: Annotated[Optional[float], typer.Option("--status-every", help="Seconds between status lines when stdout is not a terminal (default 60, env SWEEP_STATUS_EVERY; 0: none).")] = None
    quiet: Annotated[bool, typer.Option("--quiet", help="No status lines when stdout is not a terminal: the table once, at the end.")] = False

    def seconds_between_status_lines(self) -> float:
        """0 with --quiet, else --status-every, else SWEEP_STATUS_EVERY, else 60; a bad value is a usage error."""
        from contract.env import STATUS_EVERY

        return 0.0 if self.quiet else _seconds(STATUS_EVERY, self.status_every, "--status-every / ")

    def seconds_before_the_wait_note(self) -> float:
        """SWEEP_WAIT_NOTE_AFTER, else 30; a bad value is a usage error."""
        from contract.env import WAIT_NOTE_AFTER

        return _seconds(WAIT_NOTE_AFTER, None)


def _seconds(var, given: float | None, option: str = "") -> float:
    """``given`` (an option's value), else the environment variable ``var``, else its default: seconds >= 0, or a
    usage error naming the option and the variable."""
    try:
        value = var.get() if given is None else given
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if value < 0:
        raise typer.BadParameter(f"{option}{var.name}: expected seconds >= 0, got {value:g}")
    return value


@grouped
def run(spec: SpecArg, overrides: Overrides = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the expanded trial table and resources, then exit.")] = False,
        smoke: Smoke = False, launch: LaunchOptions = LaunchOptions(), output: OutputOptions = OutputOptions()) -> None:
    """Run (or resume) every trial of a sweep, then write the tables and the HTML report.

    Examples: sweep run dhpo_vs_baselines.yaml | sweep run my.yaml trainer.steps=50 seeds=[0] --dry-run
    """
    every, wait_note = output.seconds_between_status_lines(), output.seconds_before_the_wait_note()
    loaded = load_user_spec(spec, overrides or [], smoke)
    if smoke:  # the sweep is NAME_smoke: said before anything runs, and again at the end
        warn(smoke_note(loaded.name))
    print_trials(console, loaded)
    if dry_run:
        print_commands(console, loaded)
        return
    from sweeps.driver.runner import RunOptions

    _run_and_report(loaded, RunOptions(
        run_dir=launch.run_dir, tracking_uri=launch.tracking_uri, address=launch.address,
        show_progress=not output.no_progress, ray_temp_dir=launch.ray_temp_dir, status_every=every,
        wait_note_after_s=wait_note, tracking_outage_limit_s=launch.tracking_outage_limit), report=not output.no_report, smoke=smoke)


@grouped
def resume(spec: Annotated[str, typer.Argument(help="The same sweep YAML that was interrupted.")],
           overrides: Annotated[Optional[list[str]], typer.Argument(help="The same overrides as the first run.")] = None,
           smoke: Annotated[bool, typer.Option("--smoke", help="Resume the smoke-size sweep (NAME_smoke).")] = False,
           launch: LaunchOptions = LaunchOptions(), output: OutputOptions = OutputOptions()) -> None:
    """Resume an interrupted sweep: identical to running it again (finished trials are skipped)."""
    run.__wrapped__(spec, overrides, dry_run=False, smoke=smoke, launch=launch, output=output)


def _run_and_report(spec: SweepSpec, options: RunOptions, report: bool, smoke: bool = False) -> None:
    """run_sweep with its failures as exit codes, the one-line result, the report, how to look at a smoke sweep,
    exit 1 if a trial failed."""
    from sweeps.driver.interrupts import SweepInterrupted
    from sweeps.driver.ray_cluster import ClusterUnavailable
    from sweeps.driver.runner import run_sweep  # Ray and MLflow: not needed to check or list a spec
    from sweeps.specs.errors import SpecError
    from sweeps.tracking.writer import TrackingOutage
    from tracking_store.lease import SweepAlreadyRunning
    from tracking_store.uri import mask_uri

    try:
        result = run_sweep(spec, options)
    except (SpecError, SweepAlreadyRunning, ClusterUnavailable) as err:
        code = 2 if isinstance(err, SpecError) else 3 if isinstance(err, SweepAlreadyRunning) else 4
        raise fail(mask_uri(f"error: {err}"), code) from None
    except (TrackingOutage, SweepInterrupted) as err:
        message = mask_uri(f"sweep {spec.name}: {err}")
        if options.address:  # the runs are closed; Ray's and Tune's exit handlers would wait on a cluster that may be
            # gone (a Slurm job ending stops its Ray nodes with the driver) until SIGKILL: exit now
            warn(message)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(err.exit_code)
        raise fail(message, err.exit_code) from None
    counts = {s: list(result.statuses.values()).count(s) for s in set(result.statuses.values())}
    console.print(f"sweep {spec.name} done in {result.seconds:.0f}s: {counts}; MLflow {mask_uri(result.tracking_uri)} "
                  f"(parent run {result.parent_run_id})", markup=False, highlight=False, soft_wrap=True)
    from trainers.backends import base_fingerprints

    for line in base_fingerprints([t.config for t in spec.trials]):  # the bytes every trial started from
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if report:
        from sweeps.driver.end_report import write_sweep_report

        with warnings_as_notes():  # as sweep report: a warning is a note line
            write_sweep_report(spec, result, options.run_dir, console)
    if smoke:
        console.print(smoke_note(spec.name, done=True), markup=False, highlight=False, soft_wrap=True)
    failed = [tid for tid, s in result.statuses.items() if s == "FAILED"]
    if failed:
        raise fail(f"{len(failed)} trial(s) FAILED: {', '.join(failed)} (reasons: sweep status, or the "
                   "failure_reason tag of each MLflow run)", 1)
