"""The `sweep` command line: run | resume | status | ui | ls-objectives | report | table | eval.

    sweep run dhpo_vs_baselines.yaml                     # the whole study, then the report
    sweep run dhpo_vs_baselines.yaml trainer.steps=50 seeds=[0]
    sweep run sspo_temperature_grid.yaml --dry-run       # expanded trial table + resources
    sweep run dhpo_vs_baselines.yaml --smoke             # one seed, a few steps per trial
    sweep resume dhpo_vs_baselines.yaml                  # = run again: finished trials are skipped
    sweep status dhpo_vs_baselines                       # trials and their MLflow state
    sweep ui                                             # MLflow UI on 127.0.0.1 for runs/mlflow.db
    sweep ui dhpo_vs_baselines --open                    # ... and the sweep's runs, ready to compare
    sweep ls-objectives
    sweep eval dhpo_vs_baselines --benchmarks aime24,math500   # checkpoints on the papers' benchmarks (eval_cmd.py)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dashboards.cli import report_cmd, table_cmd
from sweeps.eval_cmd import eval_cmd
from sweeps.spec import SPEC_KEYS, SpecError, SweepSpec, load_spec

app = typer.Typer(help="Turn one YAML into a whole RLVR objective study: Ray Tune trials, MLflow runs, paper tables.",
                  no_args_is_help=True)  # --install-completion / --show-completion for bash, zsh, fish
console = Console()
err_console = Console(stderr=True)  # errors and interrupts go to stderr; tables and results to stdout
SMOKE_OVERRIDES = ["base.trainer.steps=4", "base.trainer.eval_every=2", "base.trainer.checkpoint_every=2",
                   "base.data.eval_size=8", "base.trainer.eval_k=1", "base.trainer.prompts_per_step=4",
                   "base.trainer.group_size=4", "seeds=[0]"]
SMOKE_RESPONSES = 16  # responses per smoke step (4 prompts x 4): updates_per_rollout must divide it
# --smoke of a verl spec also shrinks each trial to one node x one GPU (logical on the CPU platform),
# micro-batches to the whole per-GPU mini-batch, and responses to 64 tokens
VERL_SMOKE_OVERRIDES = ["base.verl.nnodes=1", "base.verl.n_gpus_per_node=1", "base.verl.micro_batch_size_per_gpu=null",
                        "base.verl.log_prob_micro_batch_size_per_gpu=null", "base.trainer.max_new_tokens=64"]

RunDir = Annotated[Path, typer.Option("--run-dir", help="Run directory: MLflow store, Ray temp dir, results, reports.")]
TrackingUri = Annotated[Optional[str], typer.Option("--tracking-uri", help="MLflow URI (e.g. http://127.0.0.1:5000); default $MLFLOW_TRACKING_URI, else sqlite:///<run-dir>/mlflow.db.")]


def _load(spec: str, overrides: list[str], smoke: bool) -> SweepSpec:
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
        if smoke:  # a verl spec gets more: what its trials look like decides
            full = load_spec(spec, spec_overrides + base_overrides)
            if any(t.config.backend == "verl" for t in full.trials):
                gpus = ["resources.gpus=1"] if full.resources.gpus else []
                all_overrides = SMOKE_OVERRIDES + VERL_SMOKE_OVERRIDES + gpus + spec_overrides + base_overrides
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
    for col in ("method", "algorithm", "params", "seed", "steps"):
        table.add_column(col)
    for t in spec.trials:
        params = ", ".join(f"{k}={v}" for k, v in t.config.algorithm.params.items())
        table.add_row(*(Text(str(x)) for x in (t.trial_id, t.method, t.config.algorithm.name, params, t.config.seed,
                                              t.config.trainer.steps)))  # shown verbatim, never read as markup
    console.print(table)
    r = spec.resources
    console.print(f"resources per trial: {r.cpus:g} CPU, {r.gpus:g} GPU; max concurrent: {spec.max_concurrent}; "
                  f"total ask at full concurrency: {r.cpus * spec.max_concurrent:g} CPU, {r.gpus * spec.max_concurrent:g} GPU; "
                  f"retries per trial: {spec.max_failures}")


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
    address: Annotated[Optional[str], typer.Option("--address", help="Join an existing Ray cluster (e.g. auto or ray://head:10001).")] = None,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the report at the end.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live table (e.g. in CI logs).")] = False,
    ray_temp_dir: Annotated[Optional[Path], typer.Option("--ray-temp-dir", help="Local Ray temp dir (default <run-dir>/.ray; keep it short).")] = None,
) -> None:
    """Run (or resume) every trial of a sweep, then write the tables and the HTML report.

    Examples: sweep run dhpo_vs_baselines.yaml | sweep run my.yaml trainer.steps=50 seeds=[0] --dry-run
    """
    loaded = _load(spec, overrides or [], smoke)
    print_trials(loaded)
    if dry_run:
        print_commands(loaded)
        return
    from sweeps.interrupts import SweepInterrupted
    from sweeps.runner import RunOptions, run_sweep  # Ray and MLflow: not needed to check or list a spec
    from sweeps.sweep_lock import SweepAlreadyRunning

    try:
        result = run_sweep(loaded, RunOptions(run_dir=run_dir, tracking_uri=tracking_uri, address=address,
                                              show_progress=not no_progress, ray_temp_dir=ray_temp_dir))
    except SpecError as err:
        err_console.print(f"error: {err}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    except SweepAlreadyRunning as err:
        err_console.print(f"error: {err}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(3)
    except SweepInterrupted as err:
        err_console.print(f"sweep {loaded.name}: {err}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(err.exit_code)
    counts = {s: list(result.statuses.values()).count(s) for s in set(result.statuses.values())}
    console.print(f"sweep {loaded.name} done in {result.seconds:.0f}s: {counts}; MLflow {result.tracking_uri} "
                  f"(parent run {result.parent_run_id})")
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
    address: Annotated[Optional[str], typer.Option("--address", help="Join an existing Ray cluster.")] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="Resume the smoke-size sweep.")] = False,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the report at the end.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No live table (e.g. in CI logs).")] = False,
    ray_temp_dir: Annotated[Optional[Path], typer.Option("--ray-temp-dir", help="Local Ray temp dir.")] = None,
) -> None:
    """Resume an interrupted sweep: identical to running it again (finished trials are skipped)."""
    run(spec, overrides, dry_run=False, smoke=smoke, run_dir=run_dir, tracking_uri=tracking_uri, address=address,
        no_report=no_report, no_progress=no_progress, ray_temp_dir=ray_temp_dir)


@app.command()
def status(
    spec: Annotated[str, typer.Argument(help="Sweep YAML path or name.")],
    overrides: Annotated[Optional[list[str]], typer.Argument(help="The overrides the sweep was run with.")] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="The smoke-size sweep.")] = False,
    run_dir: RunDir = Path("runs"),
    tracking_uri: TrackingUri = None,
) -> None:
    """Show each trial of a sweep with its MLflow state and last logged step."""
    from dashboards.collect import resolve_tracking_uri
    from sweeps.sweep_lock import open_client
    from trainers.metrics import TRIAL_STEP, VAL_AVG

    loaded = _load(spec, overrides or [], smoke)
    client = open_client(resolve_tracking_uri(tracking_uri, run_dir))
    exp = client.get_experiment_by_name(loaded.name)
    runs = {} if exp is None else {r.data.tags.get("trial_id"): r for r in client.search_runs([exp.experiment_id], "tags.role = 'trial'", max_results=50_000)}
    table = Table(title=f"{loaded.name}")
    for col in ("trial id", "state", "step", "val/avg/acc"):
        table.add_column(col)
    for t in loaded.trials:
        r = runs.get(t.trial_id)
        state = r.info.status if r else "NOT STARTED"
        step = f"{int(r.data.metrics.get(TRIAL_STEP, 0))}/{t.config.trainer.steps}" if r else f"0/{t.config.trainer.steps}"
        acc = f"{r.data.metrics[VAL_AVG]:.3f}" if r and VAL_AVG in r.data.metrics else ""
        table.add_row(Text(t.trial_id), state, step, acc)
    console.print(table)


@app.command()
def ui(
    sweep: Annotated[Optional[str], typer.Argument(help="Sweep (= MLflow experiment) name: print (and --open) its runs page.")] = None,
    run_dir: RunDir = Path("runs"),
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 5000,
    tracking_uri: TrackingUri = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in a web browser once the server answers.")] = False,
) -> None:
    """Start the MLflow UI on 127.0.0.1 for the sweep store (Ctrl-C to stop).

    With SWEEP: the URL of the sweep's trial runs, flat, with method, seed and the key metrics as
    columns (the experiment's "Sweep trials" view), and of its parent run (description: the paper table).
    """
    import signal

    from dashboards.collect import resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri, run_dir)
    server = url = f"http://127.0.0.1:{port}"
    parent = None
    if sweep:
        url, parent = _sweep_urls(uri, sweep, server)
    artifacts = (run_dir / "mlartifacts").resolve()
    typer.echo(f"MLflow UI for {uri} at {server}")
    if sweep:
        typer.echo(f"runs of {sweep}: {url}")
        if parent:
            typer.echo(f"parent run (report): {parent}")
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", "127.0.0.1",
           "--port", str(port), "--workers", "1", "--artifacts-destination", str(artifacts)]
    with subprocess.Popen(cmd) as proc:
        signal.signal(signal.SIGTERM, lambda *_: proc.terminate())  # `kill` of sweep ui stops the server too
        try:
            if open_browser:
                import threading
                threading.Thread(target=_open_when_up, args=(proc, server, url), daemon=True).start()
            proc.wait()
        except KeyboardInterrupt:  # the server got the Ctrl-C too
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.terminate()


def _sweep_urls(uri: str, sweep: str, server: str) -> tuple[str, str | None]:
    """The pages of the sweep's trial runs and of its parent run; unknown name: exit 2 with the known ones."""
    from sweeps.sweep_lock import open_client
    from sweeps.tracking import run_page_url, runs_page_url

    client = open_client(uri)
    exp = client.get_experiment_by_name(sweep)
    if exp is None or exp.lifecycle_stage != "active":
        known = sorted(e.name for e in client.search_experiments() if e.experiment_id != "0")
        err_console.print(f"error: no sweep {sweep!r} in {uri}; known: {', '.join(known) or 'none'}", markup=False,
                          highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    parents = client.search_runs([exp.experiment_id], "tags.role = 'parent'", max_results=1,
                                 order_by=["attributes.start_time DESC"])
    parent = run_page_url(server, exp.experiment_id, parents[0].info.run_id) if parents else None
    return runs_page_url(server, exp.experiment_id, exp.tags), parent


def _open_when_up(proc: subprocess.Popen, server: str, url: str, timeout: float = 300.0) -> None:
    import time
    import urllib.request
    import webbrowser

    end = time.time() + timeout
    while proc.poll() is None and time.time() < end:
        try:
            with urllib.request.urlopen(f"{server}/health", timeout=5):
                webbrowser.open(url)
                return
        except OSError:
            time.sleep(0.5)


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


if __name__ == "__main__":
    app()
