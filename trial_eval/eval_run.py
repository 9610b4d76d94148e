"""Evaluate one checkpoint on a protocol's benchmarks, resumably: one result file per benchmark.

    from trial_eval.eval_run import EvalTarget, evaluate_checkpoint
    metrics, files = evaluate_checkpoint(EvalTarget("grpo.s0", Path(ckpt), step=200, eval_dir=out),
                                         EvalConfig(benchmarks=["aime24", "math500"]))

Results go to ``<eval_dir>/<protocol hash>/`` (evaluators/eval_config.py: a changed protocol never
reuses them) and the materialized model to ``<eval_dir>/model``. For each benchmark,
``<benchmark>.jsonl`` holds one line per problem (id, prompt,
answer, samples, extracted answers, verdicts, token counts) and ``<benchmark>.json`` its metrics;
``verdicts.json`` holds every benchmark's per-problem verdicts in the compact form of evaluators/verdicts.py;
both are written atomically when the benchmark is complete, so a re-run skips finished benchmarks
and redoes an interrupted one. Every benchmark is loaded before anything is generated: a missing
file fails before the model is even loaded. The checkpoint is materialized as a Hugging Face
directory (trial_eval/checkpoints.py) only if some benchmark still has to run.

Metric names: ``eval/<benchmark>/<m>`` for m in evaluators.scoring.METRICS, and
``eval/avg/avg_at_k``, the mean over the protocol's benchmarks (DHPO Table 1's AVG).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evaluators.eval_config import EvalConfig
from evaluators.generators import build_generator
from evaluators.tasks import Problem
from contract.metrics import EVAL_AVG as AVG_KEY, eval_key


@dataclass
class EvalTarget:
    label: str
    """What is evaluated, for messages (a trial id or a directory name)."""
    checkpoint: Path
    """The checkpoint directory (any kind trial_eval/checkpoints.py accepts)."""
    step: int
    """Training step of the checkpoint (the MLflow step the metrics are logged at)."""
    eval_dir: Path
    """This checkpoint's evaluation directory: <protocol hash>/ result files, model/ when materialized."""
    trial_config: object | None = None
    """The trial's TrialConfig (needed for a local-trainer checkpoint without trial.json)."""
    run_id: str | None = None
    """MLflow run the metrics belong to (None: a new evaluation run)."""


def load_problems(cfg: EvalConfig, log: Callable[[str], None] | None = None) -> dict[str, tuple[list[Problem], int]]:
    """{benchmark: (problems, samples per problem)}; raises on any missing or malformed file. A file
    whose size differs from the benchmark's known one is reported to `log` (a note, not an error)."""
    import warnings

    from evaluators.benchmarks import BENCHMARKS, load_benchmark

    out = {}
    for name in cfg.benchmarks:
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always")
            problems = load_benchmark(name, data_dir=Path(cfg.data_dir), files=cfg.files, size=cfg.size,
                                      seed=cfg.data_seed)
        for note in notes:
            (log or print)(f"note: {note.message}")
        if cfg.limit is not None:
            problems = problems[:cfg.limit]
        default = BENCHMARKS[name].samples if name in BENCHMARKS else 1
        out[name] = (problems, cfg.samples_for(default))
    return out


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def finished_benchmarks(results_dir: Path, names: list[str]) -> dict[str, dict[str, float]]:
    """{benchmark: metrics} of the benchmarks whose result files are complete."""
    done = {}
    for name in names:
        metrics, records = results_dir / f"{name}.json", results_dir / f"{name}.jsonl"
        if metrics.is_file() and records.is_file():
            try:
                done[name] = json.loads(metrics.read_text())
            except (OSError, ValueError):
                continue  # unreadable: evaluate it again
    return done


def max_positions(model_dir: Path) -> int | None:
    config = Path(model_dir) / "config.json"
    return json.loads(config.read_text()).get("max_position_embeddings") if config.is_file() else None


def evaluate_checkpoint(target: EvalTarget, cfg: EvalConfig, *, log: Callable[[str], None] = print,
                        progress: Callable[[str, int, int], Callable[[int], None]] | None = None,
                        problems: dict[str, tuple[list[Problem], int]] | None = None
                        ) -> tuple[dict[str, float], list[Path]]:
    """Evaluate `target` on every benchmark of `cfg` not already finished in its results dir.

    Returns (metrics of every benchmark of cfg, result files); `progress(benchmark, problems, k)`
    returns the per-benchmark callback the generator advances by finished problems. `problems`:
    load_problems(cfg) already done by the caller (one read for many targets), else read here.
    """
    from evaluators.generation import SamplingParams, dir_has_chat_template
    from evaluators.scoring import evaluate_benchmark
    from trial_eval.checkpoints import materialize

    problems = problems if problems is not None else load_problems(cfg, log)
    results_dir = Path(target.eval_dir) / cfg.protocol_hash()
    results_dir.mkdir(parents=True, exist_ok=True)
    _write_atomic(results_dir / "protocol.json", json.dumps(cfg.to_dict(), indent=1, sort_keys=True))
    done = finished_benchmarks(results_dir, cfg.benchmarks)
    pending = [b for b in cfg.benchmarks if b not in done]
    if pending:
        model_dir = materialize(target.checkpoint, target.eval_dir, target.trial_config, log)
        chat = cfg.prompt_format == "chat" or (cfg.prompt_format == "auto" and dir_has_chat_template(model_dir))
        generator = build_generator(model_dir, cfg, chat)
        limit = max_positions(model_dir)
        try:
            for name in pending:
                items, k = problems[name]
                max_new = cfg.max_new_tokens
                if limit is not None and max_new >= limit:  # tiny models: 512 positions in all
                    max_new = max(limit // 2, 1)
                    log(f"{name}: max_new_tokens {cfg.max_new_tokens} > the model's {limit} positions; using {max_new}")
                params = SamplingParams(n=k, temperature=cfg.temperature, top_p=cfg.top_p, max_new_tokens=max_new,
                                        greedy=cfg.greedy, seed=cfg.seed)
                log(f"{target.label}: {name}: {len(items)} problems x {k} samples")
                callback = progress(name, len(items), k) if progress else None
                result = evaluate_benchmark(generator, name, items, params, instruction=cfg.instruction_for(name),
                                            progress=callback, unmarked=cfg.unmarked_for(name))
                lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result.records)
                _write_atomic(results_dir / f"{name}.jsonl", lines)
                _write_atomic(results_dir / f"{name}.json", json.dumps(result.metrics, sort_keys=True))
                done[name] = result.metrics
                log(f"{target.label}: {name}: avg@{k} {result.metrics['avg_at_k']:.4f}  pass@{k} "
                    f"{result.metrics['pass_at_k']:.4f}  maj@{k} {result.metrics['maj_at_k']:.4f}")
        finally:
            generator.close()
    metrics = {eval_key(b, m): float(v) for b in cfg.benchmarks for m, v in done[b].items()}
    metrics[AVG_KEY] = sum(done[b]["avg_at_k"] for b in cfg.benchmarks) / len(cfg.benchmarks)
    verdicts = results_dir / VERDICTS_FILE
    _write_atomic(verdicts, verdicts_of(results_dir, cfg.benchmarks, target.step))
    files = [results_dir / f"{b}.jsonl" for b in cfg.benchmarks] + [results_dir / "protocol.json", verdicts]
    return metrics, files


VERDICTS_FILE = "verdicts.json"
"""The evaluation's per-problem verdicts (evaluators/verdicts.py), beside its per-benchmark records."""


def verdicts_of(results_dir: Path, benchmarks: list[str], step: int) -> str:
    """The verdicts document of the benchmarks' records in ``results_dir`` (``<benchmark>.jsonl``)."""
    from evaluators.verdicts import dumps

    records = {}
    for name in benchmarks:
        with open(results_dir / f"{name}.jsonl", encoding="utf-8") as f:
            records[name] = [json.loads(line) for line in f if line.strip()]
    return dumps(step, records)


def base_target(cfg, eval_root: Path, run_id: str | None = None, log: Callable[[str], None] = print) -> EvalTarget:
    """The base policy of trial config `cfg` as an evaluation target at step 0. Its results live in
    ``<eval_root>/<hash of the base directory>``, shared by every trial of that base (evaluated once:
    `evaluate_base` serialises on a lock there)."""
    import hashlib

    from trainers.backends import get_backend

    base = Path(get_backend(cfg.backend).base_model(cfg, log)).resolve()
    digest = hashlib.sha256(str(base).encode()).hexdigest()[:12]
    return EvalTarget(f"base {cfg.model.name}", base, 0, Path(eval_root) / digest, cfg, run_id)


def evaluate_base(target: EvalTarget, cfg: EvalConfig, **kwargs) -> tuple[dict[str, float], list[Path]]:
    """evaluate_checkpoint of a shared base target, one process at a time (the others then reuse its files)."""
    from filelock import FileLock

    Path(target.eval_dir).mkdir(parents=True, exist_ok=True)
    with FileLock(str(Path(target.eval_dir) / ".lock")):
        return evaluate_checkpoint(target, cfg, **kwargs)
