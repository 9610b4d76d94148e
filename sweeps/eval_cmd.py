"""`sweep eval TARGET`: evaluate checkpoints on the papers' benchmarks and log into their MLflow runs.

    sweep eval dhpo_vs_baselines --benchmarks aime24,math500            # every trial of a sweep
    sweep eval grpo-clip0.2-0.28.s0 --samples 32 --backend vllm         # one trial (its newest checkpoint)
    sweep eval /models/qwen3-1.7b-base --benchmarks gsm8k --greedy      # a bare checkpoint -> experiment 'eval'
    sweep eval dhpo_vs_baselines --smoke                                # first 4 problems, 1 sample, 64 tokens
    sweep eval sspo_temperature_grid --benchmarks gsm8k,math500,aime25 --greedy --base   # + the base row
    sweep eval dhpo_vs_baselines --benchmarks math500 --verifier-report  # + where our verdict and math-verify's differ

TARGET forms and where results go: sweeps/eval_targets.py. The protocol (evaluators/eval_config.py)
starts from the spec's `eval:` section when TARGET is a spec that has one; options override it.
Every benchmark file is loaded before anything runs (a missing one exits 2 naming it, where it was
looked for and the schemas accepted). Finished benchmarks are skipped on a re-run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from contract.metrics import EVAL_AVG, eval_key
from contract.run_layout import RunLayout
from dashboards.cli_options import RunDir, TrackingUri
from evaluators.eval_config import EvalConfig, EvalConfigError

console = Console()
err_console = Console(stderr=True)
SMOKE = {"limit": 4, "samples": 1, "max_new_tokens": 64}


def _fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _options(benchmarks, samples, greedy, backend, max_new_tokens, temperature, top_p, prompt_format, data_dir,
             files, limit, seed, batch_size, device, dtype, tp, base, unmarked=None) -> dict:
    given = {"unmarked": unmarked,
             "samples": samples, "greedy": greedy, "base": base, "backend": backend, "max_new_tokens": max_new_tokens,
             "temperature": temperature, "top_p": top_p, "prompt_format": prompt_format, "data_dir": data_dir,
             "limit": limit, "seed": seed, "batch_size": batch_size, "device": device, "dtype": dtype,
             "tensor_parallel_size": tp}
    out = {k: v for k, v in given.items() if v is not None}
    if benchmarks:
        out["benchmarks"] = [b.strip() for b in benchmarks.split(",") if b.strip()]
    if files:
        pairs = {}
        for item in files:
            name, sep, path = item.partition("=")
            if not sep or not name or not path:
                raise _fail(f"--file {item!r}: expected NAME=PATH, e.g. --file aime24=data/aime24.parquet")
            pairs[name] = path
        out["files"] = pairs
    return out


def effective_config(spec_eval: EvalConfig | None, options: dict, smoke: bool) -> EvalConfig:
    base = spec_eval.to_dict() if spec_eval else {}
    if smoke:
        base.update(SMOKE)
    if "files" in options:
        options = {**options, "files": {**base.get("files", {}), **options["files"]}}
    base.update(options)
    return EvalConfig.from_dict(base, where="sweep eval")


def _verifier_report(results_dir: Path, cfg: EvalConfig) -> None:
    """verifier_report.md beside an evaluation's results (evaluators/verifier_report.py)."""
    import json

    from evaluators.verifier_report import disagreements, write_report

    by_benchmark = {}
    for name in cfg.benchmarks:
        path = results_dir / f"{name}.jsonl"
        if path.is_file():
            records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            by_benchmark[name] = disagreements(records)
    report = write_report(by_benchmark, results_dir / "verifier_report.md")
    counts = ", ".join(f"{name} {len(rows)}/{total}" for name, (rows, total) in by_benchmark.items())
    console.print(f"verifier report (responses where verify_answer and math-verify disagree: {counts}): {report}",
                  markup=False, highlight=False)


def _progress(no_progress: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console, disable=no_progress)


def _summary(label: str, metrics: dict[str, float], cfg: EvalConfig) -> Table:
    table = Table(title=f"{label}")
    for col in ("benchmark", "k", "avg@k", "pass@k", "maj@k", "mean tokens"):
        table.add_column(col)
    for b in cfg.benchmarks:
        m = {k.split("/")[2]: v for k, v in metrics.items() if k.startswith(eval_key(b, ""))}
        table.add_row(b, f"{m['k']:.0f}", f"{100 * m['avg_at_k']:.1f}", f"{100 * m['pass_at_k']:.1f}",
                      f"{100 * m['maj_at_k']:.1f}", f"{m['mean_tokens']:.0f}")
    table.add_row("AVG", "", f"{100 * metrics[EVAL_AVG]:.1f}", "", "", "")
    return table


def eval_cmd(
    target: Annotated[str, typer.Argument(help="Checkpoint directory, sweep spec or name, or trial id.")],
    benchmarks: Annotated[Optional[str], typer.Option("--benchmarks", help="Comma-separated, e.g. aime24,math500 (default: the spec's eval.benchmarks, else DHPO's seven).")] = None,
    samples: Annotated[Optional[int], typer.Option("--samples", help="Samples per problem for every benchmark (default: AIME 32, AMC 4, others 1).")] = None,
    greedy: Annotated[Optional[bool], typer.Option("--greedy/--sample", help="Greedy decoding, one sample (SSPO) / sampling (DHPO, default).")] = None,
    backend: Annotated[Optional[str], typer.Option("--backend", help="hf (CPU or GPU) or vllm (GPU, the gpu extra).")] = None,
    max_new_tokens: Annotated[Optional[int], typer.Option("--max-new-tokens", help="Response cap (default 16384).")] = None,
    temperature: Annotated[Optional[float], typer.Option("--temperature", help="Sampling temperature (default 1.0).")] = None,
    top_p: Annotated[Optional[float], typer.Option("--top-p", help="Nucleus sampling (default 1.0).")] = None,
    prompt_format: Annotated[Optional[str], typer.Option("--prompt-format", help="auto | chat | raw.")] = None,
    data_dir: Annotated[Optional[str], typer.Option("--data-dir", help="Where <benchmark>.parquet/.jsonl files are (default data/benchmarks).")] = None,
    files: Annotated[Optional[list[str]], typer.Option("--file", help="NAME=PATH for one benchmark's file (repeatable).")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N problems of each benchmark.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Sampling seed (default 0).")] = None,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", help="Sequences per hf generation batch (default 256).")] = None,
    device: Annotated[Optional[str], typer.Option("--device", help="auto | cpu | cuda (hf backend).")] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="auto | float32 | bfloat16.")] = None,
    tp: Annotated[Optional[int], typer.Option("--tp", help="Tensor-parallel GPUs (vllm).")] = None,
    base: Annotated[Optional[bool], typer.Option("--base/--no-base", help="Also evaluate each trial's base model (logged at step 0: the table's base row).")] = None,
    sweep: Annotated[Optional[str], typer.Option("--sweep", help="The sweep of a trial id found in several sweeps.")] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="First 4 problems, 1 sample, 64 new tokens: a quick end-to-end check.")] = False,
    run_dir: RunDir = Path("runs"),
    tracking_uri: TrackingUri = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bars (e.g. in CI logs).")] = False,
    unmarked: Annotated[Optional[str], typer.Option("--unmarked", help="A response with no answer marker: auto (default: field for the papers' benchmarks and your files, no_credit for the synthetic tasks), field (math-verify's verdict) or no_credit (as training rewards).")] = None,
    verifier_report: Annotated[bool, typer.Option("--verifier-report", help="Also write verifier_report.md beside the results: every response where verify_answer and plain math-verify disagree, with both answers.")] = False,
) -> None:
    """Evaluate checkpoints (a directory, a trial, a whole sweep) with Avg@k / pass@k / maj@k and log them to MLflow."""
    import contextlib

    from tracking_store.uri import resolve_uri
    from trial_eval.eval_run import evaluate_checkpoint, load_problems
    from sweeps.eval_targets import TargetError, eval_run_for, log_eval, resolve
    from sweeps.spec import SpecError
    from tracking_store.client import StoreMissing, open_client, require_store
    from tracking_store.lease import SweepAlreadyRunning
    from tracking_store.uri import mask_uri
    from sweeps.sweep_lock import SweepLock

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False)

    options = _options(benchmarks, samples, greedy, backend, max_new_tokens, temperature, top_p, prompt_format,
                       data_dir, files, limit, seed, batch_size, device, dtype, tp, base, unmarked)
    run_dir = run_dir.resolve()
    uri = resolve_uri(tracking_uri, run_dir)
    try:
        if not Path(target).is_dir():  # a sweep or a trial is looked up in a store that must exist
            require_store(uri)
    except StoreMissing as err:
        raise _fail(str(err))
    client = open_client(uri)  # a bare checkpoint's run goes into experiment 'eval', made if need be
    try:
        resolved = resolve(target, client, run_dir, sweep=sweep)
        cfg = effective_config(resolved.spec_eval, options, smoke)
        problems = load_problems(cfg, say)  # every file once, now: a missing one fails before any model is loaded
    except (TargetError, SpecError, EvalConfigError, FileNotFoundError, ValueError) as err:
        raise _fail(mask_uri(str(err)))
    for reason in resolved.skipped or []:
        err_console.print(f"skipped: {reason}", markup=False, highlight=False)

    jobs = [(t, evaluate_checkpoint) for t in resolved.targets]
    if cfg.base and resolved.sweep:  # each trial's base policy, shared by the trials of that base
        from trial_eval.checkpoints import read_trial_config
        from trial_eval.eval_run import base_target, evaluate_base

        bases = []
        for t in resolved.targets:
            trial_config = t.trial_config or read_trial_config(t.checkpoint)
            if trial_config is None:
                err_console.print(f"skipped the base of {t.label}: its trial config is unknown", markup=False)
                continue
            bases.append((base_target(trial_config, RunLayout(run_dir).sweep(resolved.sweep).base_eval, t.run_id, say),
                          evaluate_base))
        jobs = bases + jobs
    lock = SweepLock(RunLayout(run_dir).sweep(resolved.sweep).lock, resolved.sweep) if resolved.sweep \
        else contextlib.nullcontext()
    try:
        with lock:
            for t, evaluate in jobs:
                with _progress(no_progress) as bars:
                    def progress(name: str, n: int, k: int, _bars=bars, _label=t.label):
                        task = _bars.add_task(f"{_label} {name} (x{k})", total=n)
                        return lambda done: _bars.advance(task, done)

                    metrics, result_files = evaluate(t, cfg, progress=progress, log=say, problems=problems)
                run_id = t.run_id or eval_run_for(client, t)
                logged = log_eval(client, run_id, t.step, metrics, result_files, cfg.protocol_hash())
                console.print(_summary(f"{t.label} (step {t.step})", metrics, cfg))
                note = f"logged {', '.join(logged)}" if logged else "already logged"
                console.print(f"MLflow run {run_id} at step {t.step}: {note}; files in {result_files[0].parent}",
                              markup=False, highlight=False)
                if verifier_report:
                    _verifier_report(result_files[0].parent, cfg)
    except SweepAlreadyRunning as err:
        raise _fail(str(err), 3)
