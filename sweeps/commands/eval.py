"""`sweep eval TARGET`: evaluate checkpoints on the papers' benchmarks and log into their MLflow runs.

    sweep eval dhpo_vs_baselines --benchmarks aime24,math500            # every trial of a sweep
    sweep eval grpo-clip0.2-0.28.s0 --samples 32 --backend vllm         # one trial (its newest checkpoint)
    sweep eval /models/qwen3-1.7b-base --benchmarks gsm8k --greedy      # a bare checkpoint -> experiment 'eval'
    sweep eval dhpo_vs_baselines --smoke                                # first 4 problems, 1 sample, 64 tokens
    sweep eval sspo_temperature_grid --benchmarks gsm8k,math500,aime25 --greedy --base   # + the base row
    sweep eval dhpo_vs_baselines --benchmarks math500 --verifier-report  # + where our verdict and math-verify's differ

TARGET forms and where results go: sweeps/tracking/eval_targets.py. The protocol (evaluators/eval_config.py)
starts from the spec's `eval:` section when TARGET is a spec that has one; options override it.
Every benchmark file is loaded before anything runs (a missing one exits 2 naming it, where it was
looked for and the schemas accepted). Finished benchmarks are skipped on a re-run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from contract.metrics import EVAL_AVG, eval_key
from contract.run_layout import RunLayout
from evaluators.eval_config import EvalConfig, EvalConfigError
from sweeps.commands.options import StoreOptions, fail, grouped, split_list, warn

console = Console()
SMOKE = {"limit": 4, "samples": 1, "max_new_tokens": 64}


@dataclass
class ProtocolOptions:
    """The evaluation protocol (evaluators.eval_config.EvalConfig); None keeps the spec's eval: value."""

    panel: ClassVar[str] = "Protocol"
    benchmarks: Annotated[Optional[str], typer.Option("--benchmarks", help="Comma-separated, e.g. aime24,math500 (default: the spec's eval.benchmarks, else DHPO's seven).")] = None
    samples: Annotated[Optional[int], typer.Option("--samples", help="Samples per problem for every benchmark (default: AIME 32, AMC 4, others 1).")] = None
    greedy: Annotated[Optional[bool], typer.Option("--greedy/--sample", help="Greedy decoding, one sample (SSPO) / sampling (DHPO, default).")] = None
    max_new_tokens: Annotated[Optional[int], typer.Option("--max-new-tokens", help="Response cap (default 16384).")] = None
    temperature: Annotated[Optional[float], typer.Option("--temperature", help="Sampling temperature (default 1.0).")] = None
    top_p: Annotated[Optional[float], typer.Option("--top-p", help="Nucleus sampling (default 1.0).")] = None
    prompt_format: Annotated[Optional[str], typer.Option("--prompt-format", help="auto | chat | raw.")] = None
    data_dir: Annotated[Optional[str], typer.Option("--data-dir", help="Where <benchmark>.parquet/.jsonl files are (default data/benchmarks).")] = None
    files: Annotated[Optional[list[str]], typer.Option("--file", help="NAME=PATH for one benchmark's file (repeatable).")] = None
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N problems of each benchmark.")] = None
    seed: Annotated[Optional[int], typer.Option("--seed", help="Sampling seed (default 0).")] = None
    base: Annotated[Optional[bool], typer.Option("--base/--no-base", help="Also evaluate each trial's base model (logged at step 0: the table's base row).")] = None
    unmarked: Annotated[Optional[str], typer.Option("--unmarked", help="A response with no answer marker: auto (default: field for the papers' benchmarks and your files, no_credit for the synthetic tasks), field (math-verify's verdict) or no_credit (as training rewards).")] = None


@dataclass
class GeneratorOptions:
    """How the responses are generated (evaluators/generators.py: a registered backend)."""

    panel: ClassVar[str] = "Generation"
    backend: Annotated[Optional[str], typer.Option("--backend", help="hf (CPU or GPU) or vllm (GPU, the gpu extra).")] = None
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", help="Sequences per hf generation batch (default 256).")] = None
    device: Annotated[Optional[str], typer.Option("--device", help="auto | cpu | cuda (hf backend).")] = None
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="auto | float32 | bfloat16.")] = None
    tp: Annotated[Optional[int], typer.Option("--tp", help="Tensor-parallel GPUs (vllm).")] = None


def given_options(protocol: ProtocolOptions, generator: GeneratorOptions) -> dict:
    """The options given, as EvalConfig keys (--file NAME=PATH pairs as files:, --tp as tensor_parallel_size)."""
    given = {**vars(protocol), **vars(generator), "tensor_parallel_size": generator.tp,
             "benchmarks": split_list(protocol.benchmarks) or None, "files": None}
    del given["tp"]
    out = {k: v for k, v in given.items() if v is not None}
    if protocol.files:
        pairs = {}
        for item in protocol.files:
            name, sep, path = item.partition("=")
            if not sep or not name or not path:
                raise fail(f"error: --file {item!r}: expected NAME=PATH, e.g. --file aime24=data/aime24.parquet")
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


@grouped
def eval_cmd(
    target: Annotated[str, typer.Argument(help="Checkpoint directory, sweep spec or name, or trial id.")],
    protocol: ProtocolOptions = ProtocolOptions(),
    generator: GeneratorOptions = GeneratorOptions(),
    sweep: Annotated[Optional[str], typer.Option("--sweep", help="The sweep of a trial id found in several sweeps.")] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="First 4 problems, 1 sample, 64 new tokens: a quick end-to-end check.")] = False,
    store: StoreOptions = StoreOptions(),
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bars (e.g. in CI logs).")] = False,
    verifier_report: Annotated[bool, typer.Option("--verifier-report", help="Also write verifier_report.md beside the results: every response where verify_answer and plain math-verify disagree, with both answers.")] = False,
) -> None:
    """Evaluate checkpoints (a directory, a trial, a whole sweep) with Avg@k / pass@k / maj@k and log them to MLflow."""
    from sweeps.tracking.eval_targets import TargetError, resolve, without_store
    from sweeps.specs.load import SpecError
    from trial_eval.eval_run import load_problems
    from tracking_store.client import StoreMissing, open_client, require_store
    from tracking_store.lease import SweepAlreadyRunning
    from tracking_store.uri import mask_uri, resolve_uri, sqlite_path

    options = given_options(protocol, generator)
    run_dir = store.run_dir.resolve()
    uri = resolve_uri(store.tracking_uri, run_dir)
    try:
        if not Path(target).is_dir():  # a sweep or a trial is looked up in a store that must exist
            require_store(uri)
    except StoreMissing as err:  # a path that does not exist is said as such, not as the missing store
        raise fail(f"error: {without_store(target, str(sqlite_path(uri))) or err}") from None
    client = open_client(uri)  # a bare checkpoint's run goes into experiment 'eval', made if need be
    try:
        resolved = resolve(target, client, run_dir, sweep=sweep)
        cfg = effective_config(resolved.spec_eval, options, smoke)
        problems = load_problems(cfg, _say)  # every file once, now: a missing one fails before any model is loaded
    except (TargetError, SpecError, EvalConfigError, FileNotFoundError, ValueError) as err:
        raise fail(f"error: {mask_uri(str(err))}") from None
    for reason in resolved.skipped or []:
        warn(f"skipped: {reason}")
    _numerics(resolved.targets)
    try:
        _evaluate(_jobs(resolved, cfg, run_dir), resolved.sweep, run_dir, cfg, problems, client,
                  no_progress, verifier_report)
    except SweepAlreadyRunning as err:
        raise fail(f"error: {err}", 3) from None


def _numerics(targets: list) -> None:
    """The trials' numeric mode in this process, before torch loads (a checkpoint without a trial config: the
    default trial's): the kernels a CPU evaluation computes with, as its trials' processes did
    (trainers/backends.py ``trial_env`` and ``trial_setup``: for the built-in trainer, local.numerics)."""
    import os

    from trainers.backends import trial_env, trial_setup
    from trainers.config import TrialConfig
    from trial_eval.checkpoints import read_trial_config

    configs = [c for c in (t.trial_config or read_trial_config(t.checkpoint) for t in targets) if c is not None]
    configs = configs or [TrialConfig()]
    os.environ.update(trial_env(configs))  # read by torch at its first operation, by MKL at its first call
    applied = trial_setup(configs[0])
    if "numerics" in applied:
        details = ", ".join(f"{k.removeprefix('numerics.')} {v}" for k, v in applied.items() if k != "numerics")
        console.print(f"numerics: {applied['numerics']} ({details})", markup=False, highlight=False, soft_wrap=True)


def _say(line: str) -> None:
    console.print(line, markup=False, highlight=False)


def _jobs(resolved, cfg: EvalConfig, run_dir: Path) -> list:
    """(target, evaluate function) for each checkpoint, after each trial's base policy with --base (shared
    by the trials of that base; a trial whose config is unknown has its base skipped, said on stderr)."""
    from trial_eval.eval_run import evaluate_checkpoint

    jobs = [(t, evaluate_checkpoint) for t in resolved.targets]
    if not (cfg.base and resolved.sweep):
        return jobs
    from trial_eval.checkpoints import read_trial_config
    from trial_eval.eval_run import base_target, evaluate_base

    bases = []
    for t in resolved.targets:
        trial_config = t.trial_config or read_trial_config(t.checkpoint)
        if trial_config is None:
            warn(f"skipped the base of {t.label}: its trial config is unknown")
            continue
        where = RunLayout(run_dir).sweep(resolved.sweep).base_eval
        bases.append((base_target(trial_config, where, t.run_id, _say), evaluate_base))
    return bases + jobs


def _evaluate(jobs: list, sweep: str | None, run_dir: Path, cfg: EvalConfig, problems, client, no_progress: bool,
              verifier_report: bool) -> None:
    """Each job under the sweep's lock (a sweep's): evaluate, log into its MLflow run, print its summary."""
    import contextlib

    from sweeps.tracking.eval_targets import eval_run_for, log_eval, recopy_runs
    from sweeps.tracking.lock import SweepLock

    lock = SweepLock(RunLayout(run_dir).sweep(sweep).lock, sweep) if sweep else contextlib.nullcontext()
    with lock:
        for t, evaluate in jobs:
            with _progress(no_progress) as bars:
                def progress(name: str, n: int, k: int, _bars=bars, _label=t.label):
                    task = _bars.add_task(f"{_label} {name} (x{k})", total=n)
                    return lambda done: _bars.advance(task, done)

                metrics, result_files = evaluate(t, cfg, progress=progress, log=_say, problems=problems)
            run_id = t.run_id or eval_run_for(client, t)
            logged = log_eval(client, run_id, t.step, metrics, result_files, cfg.protocol_hash())
            if logged and t.run_id:  # a trial run changed after it ended: its sweep's read copy holds it again
                recopy_runs(client, [run_id])
            console.print(_summary(f"{t.label} (step {t.step})", metrics, cfg))
            note = f"logged {', '.join(logged)}" if logged else "already logged"
            _say(f"MLflow run {run_id} at step {t.step}: {note}; files in {result_files[0].parent}")
            if verifier_report:
                _verifier_report(result_files[0].parent, cfg)
