"""The `sweep` command line: run | resume | status | ui | ls-objectives | report | table | eval.

    sweep run dhpo_vs_baselines.yaml                     # the whole study, then the report
    sweep run dhpo_vs_baselines.yaml trainer.steps=50 seeds=[0]
    sweep run sspo_temperature_grid.yaml --dry-run       # expanded trial table + resources
    sweep run dhpo_vs_baselines.yaml --smoke             # one seed, a few steps per trial
    sweep resume dhpo_vs_baselines.yaml                  # = run again: finished trials are skipped
    sweep status dhpo_vs_baselines                       # trials and their MLflow state (by the sweep's name)
    sweep ui                                             # MLflow UI on 127.0.0.1 for runs/mlflow.db
    sweep run my.yaml --address HEAD:6379 --tracking-uri http://mlflow:5000   # a Ray cluster, a shared server
    sweep ui dhpo_vs_baselines --open                    # ... and the sweep's curves, grouped by method
    sweep ls-objectives
    sweep eval dhpo_vs_baselines --benchmarks aime24,math500   # checkpoints on the papers' benchmarks (eval_cmd.py)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dashboards.cli import report_cmd, table_cmd
from sweeps.eval_cmd import eval_cmd
from dashboards.cli_options import RunDir, TrackingUri
from sweeps.spec_errors import SpecError

if TYPE_CHECKING:
    from sweeps.spec import SweepSpec

app = typer.Typer(help="Turn one YAML into a whole RLVR objective study: Ray Tune trials, MLflow runs, paper tables.",
                  no_args_is_help=True)  # --install-completion / --show-completion for bash, zsh, fish
console = Console()
err_console = Console(stderr=True)  # errors and interrupts go to stderr; tables and results to stdout
SMOKE_OVERRIDES = ["base.trainer.steps=4", "base.trainer.eval_every=2", "base.trainer.checkpoint_every=2",
                   "base.data.eval_size=8", "base.trainer.eval_k=1", "base.trainer.prompts_per_step=4",
                   "base.trainer.group_size=4", "seeds=[0]"]
SMOKE_RESPONSES = 16  # responses per smoke step (4 prompts x 4): updates_per_rollout must divide it

Address = Annotated[Optional[str], typer.Option("--address", help="Join an existing Ray cluster by its GCS address, from a node of it: HEAD_HOST:6379 or auto (ray:// is refused: see docs/clusters.md).")]
OutageLimit = Annotated[float, typer.Option("--tracking-outage-limit", help="Seconds the tracking store may stay unreachable (trials go on, steps are journaled) before the sweep stops as interrupted (exit 75).")]


def _load(spec: str, overrides: list[str], smoke: bool) -> SweepSpec:
    from sweeps.spec import SPEC_KEYS, load_spec  # Hydra and the trial configs (no torch: test_spec_light_imports.py)

    spec_overrides, base_overrides = [], []
    for o in overrides:  # Hydra's forms: key=value, +key=value, ++key=value, ~key[=value]
        op = "++" if o.startswith("++") else o[:1] if o.startswith(("+", "~")) else ""
        key = o[len(op):].split("=", 1)[0].strip()
        if key.split(".")[0] in SPEC_KEYS:  # seeds, search.num_samples, ...
            spec_overrides.append(o)
        else:  # trainer.steps=50 is shorthand for base.trainer.steps=50 (+trainer.x=1: +base.trainer.x=1)
            base_overrides.append(f"{op}base.{o[len(op):]}")
    all_overrides = (SMOKE_OVERRIDES if smoke else []) + spec_overrides + base_overrides
    try:
        if smoke:  # its backends may add more (verl: one node x one GPU): what its trials look like decides
            from trainers.backends import smoke_overrides

            full = load_spec(spec, spec_overrides + base_overrides)
            extra = smoke_overrides([t.config for t in full.trials], full.resources)
            if extra:
                all_overrides = SMOKE_OVERRIDES + extra + spec_overrides + base_overrides
            if any(SMOKE_RESPONSES % t.config.trainer.updates_per_rollout for t in full.trials):
                # a stale-policy spec (objective_dynamics: 32 updates per rollout): as stale as 16 responses allow
                all_overrides = all_overrides[:len(SMOKE_OVERRIDES)] + [
                    f"base.trainer.updates_per_rollout={SMOKE_RESPONSES}"] + all_overrides[len(SMOKE_OVERRIDES):]
        loaded = load_spec(spec, all_overrides)
        if smoke:  # its own experiment: smoke trials never mix with the real ones
            loaded.name = f"{loaded.name}_smoke"
        return loaded
    except SpecError as err:
        err_console.print(f"[red]error:[/] {escape(str(err))}", soft_wrap=True)  # paths stay whole for copy-paste
        raise typer.Exit(2)


def print_trials(spec: SweepSpec) -> None:
    table = Table(title=f"{spec.name}: {len(spec.trials)} trials")
    # the id column is never cut: ids are what `sweep status` and MLflow run names show
    table.add_column("trial id", no_wrap=True, min_width=max(len(t.trial_id) for t in spec.trials))
    params_of = {t.trial_id: [f"{k}={v}" for k, v in t.config.algorithm.params.items()] for t in spec.trials}
    widest = max((len(p) for ps in params_of.values() for p in ps), default=6)
    for col in ("method", "params", "seed", "steps"):  # folded, never cut with "…"
        table.add_column(col, overflow="fold", min_width=widest if col == "params" else None)
    for t in spec.trials:
        params = "\n".join(params_of[t.trial_id])
        table.add_row(*(Text(str(x)) for x in (t.trial_id, t.method, params, t.config.seed,
                                              t.config.trainer.steps)))  # shown verbatim, never read as markup
    console.print(table)
    r = spec.resources
    console.print(f"resources per trial: {r.cpus:g} CPU, {r.gpus:g} GPU; max concurrent: {spec.max_concurrent}; "
                  f"total ask at full concurrency: {r.cpus * spec.max_concurrent:g} CPU, {r.gpus * spec.max_concurrent:g} GPU; "
                  f"retries per trial: {spec.max_failures}")
    if 0 < r.gpus < 1:  # packing (verl: the commands below cap each process's CUDA memory to the share)
        per_gpu = round(1 / r.gpus)
        console.print(f"packing: {per_gpu} trials share each GPU (resources.gpus {r.gpus:g}); "
                      f"{min(per_gpu, spec.max_concurrent)} at once on a one-GPU machine")


def _status_every(flag: float | None) -> float:
    """--status-every, else SWEEP_STATUS_EVERY, else 60 s; a clear error for a negative or bad value."""
    from contract.env import STATUS_EVERY

    try:
        value = STATUS_EVERY.get() if flag is None else flag
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if value < 0:
        raise typer.BadParameter(f"--status-every / {STATUS_EVERY.name}: expected seconds >= 0, got {value:g}")
    return value


def print_commands(spec: SweepSpec) -> None:
    """--dry-run: the exact command each trial runs, for backends that launch one (verl main_ppo)."""
    from trainers.backends import describe

    for t in spec.trials:
        command = describe(t.config)
        if command is not None:
            console.print(f"# {t.trial_id}", markup=False, highlight=False)
            print(command)  # plain print: never wrapped, so it can be copied into a shell


@app.command()
def run(
    spec: Annotated[str, typer.Argument(help="Sweep YAML path, or a name in configs/sweeps/.")],
    overrides: Annotated[Optional[list[str]], typer.Argument(help="key=value overrides, e.g. trainer.steps=50 seeds=[0]")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the expanded trial table and resources, then exit.")] = False,
    smoke: Annotated[bool, typer.Option("--smoke", help="One seed, 4 steps per trial: a quick real end-to-end check.")] = False,
    run_dir: RunDir = Path("runs"),
    tracking_uri: TrackingUri = None,
    address: Address = None,
    tracking_outage_limit: OutageLimit = 3600.0,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the report at the end.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live table (e.g. in CI logs).")] = False,
    status_every: Annotated[Optional[float], typer.Option("--status-every", help="Seconds between status lines when stdout is not a terminal (default 60, env SWEEP_STATUS_EVERY; 0: none).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No status lines when stdout is not a terminal: the table once, at the end.")] = False,
    ray_temp_dir: Annotated[Optional[Path], typer.Option("--ray-temp-dir", help="Local Ray temp dir (default <run-dir>/.ray; keep it short).")] = None,
) -> None:
    """Run (or resume) every trial of a sweep, then write the tables and the HTML report.

    Examples: sweep run dhpo_vs_baselines.yaml | sweep run my.yaml trainer.steps=50 seeds=[0] --dry-run
    """
    every = 0.0 if quiet else _status_every(status_every)
    loaded = _load(spec, overrides or [], smoke)
    print_trials(loaded)
    if dry_run:
        print_commands(loaded)
        return
    from sweeps.interrupts import SweepInterrupted
    from sweeps.ray_cluster import ClusterUnavailable
    from sweeps.runner import RunOptions, run_sweep  # Ray and MLflow: not needed to check or list a spec
    from tracking_store.lease import SweepAlreadyRunning
    from tracking_store.uri import mask_uri
    from sweeps.tracking_writer import TrackingOutage

    def fail(message: str, code: int):
        err_console.print(mask_uri(message), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(code)

    try:
        result = run_sweep(loaded, RunOptions(run_dir=run_dir, tracking_uri=tracking_uri, address=address,
                                              show_progress=not no_progress, ray_temp_dir=ray_temp_dir,
                                              status_every=every,
                                              tracking_outage_limit_s=tracking_outage_limit))
    except SpecError as err:
        fail(f"error: {err}", 2)
    except SweepAlreadyRunning as err:
        fail(f"error: {err}", 3)
    except ClusterUnavailable as err:
        fail(f"error: {err}", 4)
    except TrackingOutage as err:
        fail(f"sweep {loaded.name}: {err}", TrackingOutage.exit_code)
    except SweepInterrupted as err:
        fail(f"sweep {loaded.name}: {err}", err.exit_code)
    counts = {s: list(result.statuses.values()).count(s) for s in set(result.statuses.values())}
    console.print(f"sweep {loaded.name} done in {result.seconds:.0f}s: {counts}; MLflow {mask_uri(result.tracking_uri)} "
                  f"(parent run {result.parent_run_id})", markup=False, highlight=False, soft_wrap=True)
    if not no_report:
        from sweeps.reporting import write_sweep_report

        write_sweep_report(loaded, result, run_dir, console)
    failed = [tid for tid, s in result.statuses.items() if s == "FAILED"]
    if failed:
        err_console.print(f"{len(failed)} trial(s) FAILED: {', '.join(failed)} (reasons: sweep status, or the "
                          "failure_reason tag of each MLflow run)", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1)


@app.command()
def resume(
    spec: Annotated[str, typer.Argument(help="The same sweep YAML that was interrupted.")],
    overrides: Annotated[Optional[list[str]], typer.Argument(help="The same overrides as the first run.")] = None,
    run_dir: RunDir = Path("runs"),
    tracking_uri: TrackingUri = None,
    address: Address = None,
    tracking_outage_limit: OutageLimit = 3600.0,
    smoke: Annotated[bool, typer.Option("--smoke", help="Resume the smoke-size sweep.")] = False,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the report at the end.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live table (e.g. in CI logs).")] = False,
    ray_temp_dir: Annotated[Optional[Path], typer.Option("--ray-temp-dir", help="Local Ray temp dir.")] = None,
) -> None:
    """Resume an interrupted sweep: identical to running it again (finished trials are skipped)."""
    run(spec, overrides, dry_run=False, smoke=smoke, run_dir=run_dir, tracking_uri=tracking_uri, address=address,
        tracking_outage_limit=tracking_outage_limit, no_report=no_report, no_progress=no_progress,
        ray_temp_dir=ray_temp_dir)


@app.command()
def status(
    sweep: Annotated[str, typer.Argument(help="Sweep name (its MLflow experiment), or its YAML path or name in configs/sweeps/.")],
    overrides: Annotated[Optional[list[str]], typer.Argument(help="With a YAML: the overrides the sweep was run with.")] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="With a YAML: the smoke-size sweep.")] = False,
    run_dir: RunDir = Path("runs"),
    tracking_uri: TrackingUri = None,
) -> None:
    """Show each trial of a sweep with its method, MLflow state, last logged step and val/avg/acc.

    SWEEP is a name looked up in the store (trials not started yet come from the last run's spec), or a YAML.

    The store is never created: a missing one is an error naming where it was looked for.
    """
    from sweeps.status import PLAIN_ROWS, StatusRow, plain_table, planned_from_store, recorded_trials
    from tracking_store.client import StoreMissing
    from tracking_store.uri import mask_uri, resolve_uri
    from contract.metrics import TRIAL_STEP, VAL_AVG

    is_spec = sweep.endswith((".yaml", ".yml")) or Path(sweep).is_file() or bool(overrides) or smoke
    loaded = _load(sweep, overrides or [], smoke) if is_spec else None
    name = loaded.name if loaded else sweep
    uri = resolve_uri(tracking_uri, run_dir)
    try:
        runs, _, resolved = recorded_trials(uri, name)
        planned = ([StatusRow(t.trial_id, t.method, t.config.trainer.steps) for t in loaded.trials] if loaded
                   else planned_from_store(resolved, runs))
    except StoreMissing as err:
        err_console.print(f"error: {err}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    except (RuntimeError, ValueError) as err:  # several runs of one trial; a file that is not a store
        err_console.print(f"error: {mask_uri(str(err))}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    header, rows = ("trial id", "method", "state", "step", VAL_AVG), []
    for row in planned:
        r = runs.get(row.trial_id)
        state = r.status if r else "NOT STARTED"
        step = int(r.metrics.get(TRIAL_STEP, 0)) if r else 0
        acc = f"{r.metrics[VAL_AVG]:.3f}" if r and VAL_AVG in r.metrics else ""
        rows.append((row.trial_id, row.method, state, f"{step}/{row.steps}" if row.steps else str(step), acc))
    title = f"{name} ({mask_uri(uri)})"
    if len(rows) > PLAIN_ROWS:
        print(plain_table(title, header, rows))
        return
    table = Table(title=title)
    for col in header:
        table.add_column(col, no_wrap=col == "trial id")
    for cells in rows:
        table.add_row(*map(Text, cells))
    console.print(table)


@app.command()
def ui(
    sweep: Annotated[Optional[str], typer.Argument(help="Sweep (= MLflow experiment) name: print (and --open) its curves page.")] = None,
    run_dir: RunDir = Path("runs"),
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 5000,
    tracking_uri: TrackingUri = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the curves page in a web browser once the server answers.")] = False,
) -> None:
    """Start the MLflow UI on 127.0.0.1 for the sweep store (Ctrl-C to stop); an http store's own pages.

    With SWEEP: the URL of the sweep's curves (the experiment's "Sweep curves" view: the papers' metrics,
    one mean line and min-max band per method), of its trial runs (the "Sweep trials" table: method, seed
    and the key metrics as columns) and of its parent run (description: the paper table).

    The URLs are printed once the server answers; its own output goes to <run-dir>/logs/mlflow-ui.log.
    A taken port exits 2 before anything starts. An http store (an `mlflow server`): its pages are
    printed, nothing is started.
    """
    from tracking_store.client import StoreMissing, require_store
    from tracking_store.uri import is_server, mask_uri, resolve_uri
    from sweeps.ui_server import open_page, port_taken, print_pages, serve, sweep_pages

    uri = resolve_uri(tracking_uri, run_dir)
    server = uri.rstrip("/") if is_server(uri) else f"http://127.0.0.1:{port}"
    try:
        if not is_server(uri):
            require_store(uri)
        pages = sweep_pages(uri, sweep, server) if sweep else {}
    except StoreMissing as err:
        err_console.print(f"error: {err}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    if is_server(uri):
        typer.echo(f"MLflow UI of the tracking server {mask_uri(server)}")
        print_pages(pages)
        if open_browser:
            open_page(next(iter(pages.values()), server))
        return
    if port_taken(port):
        err_console.print(f"error: port {port} on 127.0.0.1 is taken (another UI?); pass --port N",
                          markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    raise typer.Exit(serve(uri, run_dir, port, pages, open_browser))


@app.command("ls-objectives")
def ls_objectives() -> None:
    """List the objective registry: names, summaries and parameters with paper defaults."""
    from trainers.objectives import OBJECTIVES

    for name, spec in OBJECTIVES.items():
        table = Table(title=f"{name}: {spec.summary}", show_header=True)
        for col in ("parameter", "default", "meaning"):
            table.add_column(col)
        for param, (default, doc) in spec.param_docs().items():
            table.add_row(param, repr(default), doc)
        console.print(table)


app.command("report")(report_cmd)
app.command("table")(table_cmd)
app.command("eval")(eval_cmd)


def main() -> None:
    """The `sweep` command: the app, with a bad input found outside a command's own checks (a plug-in module
    of SWEEP_PLUGINS that does not import) said in one line, exit 2."""
    from contract.errors import InputError

    try:
        app()
    except InputError as err:
        err_console.print(f"error: {err}", markup=False, highlight=False, soft_wrap=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
