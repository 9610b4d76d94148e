"""The base policy: a short supervised warm start on reference solutions, cached on disk.

Like the papers' base models, the base policy solves some but not all problems. It is built
once per configuration and cached under ``local.warm_start.cache_dir/<hash>/`` (a normal Hugging
Face directory: ``save_pretrained`` model + tokenizer), keyed by a hash of everything that
determines it, so every trial of a sweep starts from the identical base. A file lock makes
concurrent trials wait for the first builder instead of building it twice.

    python -m trainers.local.warmstart [CONFIG.yaml] [key=value ...]   # build (or find) the base
    python -m trainers.local.warmstart --smoke      # a 20-step base in ./.warmstart-smoke-*/ (removed), seconds

torch is imported by the functions that build (not at import), so the command's --help and its argument
errors come without it, and the numeric mode's kernel variables are set before it loads.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from evaluators.tasks import Problem
from trainers.config import ConfigError, TrialConfig, load_trial_config, split_args
from trainers.local.numerics import apply_numerics, set_kernel_env

if TYPE_CHECKING:
    import torch

FORMAT_VERSION = 2  # bump when the warm-start procedure changes
BASE_INIT_SEED = 0  # the base is independent of the trial seed: same base for every trial


def base_key(cfg: TrialConfig) -> str:
    """Hash of what determines the base checkpoint (not the trial seed, device or cache dir)."""
    # the same keys as before the local: section existed, so cached bases stay valid
    local = cfg.local
    model = {"path": cfg.model.path, **{k: getattr(local, k) for k in (
        "hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size", "device", "dtype")}}
    if local.tokenizer != "char":  # added later: the default is left out, so older bases stay valid
        model["tokenizer"] = local.tokenizer
    if local.numerics != "native":  # added later: a base built with the CPU's own kernels keeps its key
        model["numerics"] = local.numerics
    warm = {k: v for k, v in local.warm_start.__dict__.items() if k != "cache_dir"}
    data = {k: cfg.data.__dict__[k] for k in ("train_size", "seed", "train_file")}
    if cfg.data.train_file:
        data["train_file_sha1"] = hashlib.sha1(Path(cfg.data.train_file).read_bytes()).hexdigest()
    blob = json.dumps({"v": FORMAT_VERSION, "model": model, "warm": warm, "data": data}, sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def noisy_solution(problem: Problem, rng: random.Random) -> str:
    """The reference reasoning with a wrong final answer (off by 1-9), same response format."""
    answer = int(problem.answer)
    wrong = answer + rng.choice([d for d in range(-9, 10) if d and answer + d >= 0])
    return problem.solution.replace(f"<answer>{problem.answer}</answer>", f"<answer>{wrong}</answer>")


def supervised_batch(tokenizer, problems: list[Problem], device: torch.device, targets: list[str] | None = None):
    """Token ids of prompt + target + <eos>, with loss only on the target (default: the solution)."""
    import torch

    from policy.rollout import left_pad

    seqs, starts = [], []
    for i, p in enumerate(problems):
        prompt = tokenizer(p.prompt, add_special_tokens=False).input_ids
        target = targets[i] if targets else p.solution
        answer = tokenizer(target, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
        seqs.append(prompt + answer)
        starts.append(len(prompt))
    ids, mask = left_pad(seqs, tokenizer.pad_token_id, device)
    width = ids.shape[1]
    loss_mask = torch.zeros_like(mask)
    for i, (s, start) in enumerate(zip(seqs, starts)):
        loss_mask[i, width - len(s) + start:] = 1
    return ids, mask, loss_mask


def warm_start(model, tokenizer, problems: list[Problem], cfg: TrialConfig, log=print,
               stop_after: int | None = None) -> None:
    """Supervised fine-tuning of ``model`` in place on the problems' reference solutions.

    An ``answer_noise`` share of the targets (drawn independently of the prompt) keeps the correct
    reasoning but reports a wrong final answer, so the base policy often fails to report what it
    computed, on any problem: a prompt-independent flaw that RL with a verifier can remove, like
    the formatting and consistency habits RLVR fixes in real base models. ``stop_after`` ends it after that
    many of its ``local.warm_start.steps`` steps (the same schedule): the recipe's prefix that
    ``trainers/local/shipped_bases.py`` checks a shipped base against.
    """
    import torch
    import torch.nn.functional as F

    w = cfg.local.warm_start
    device = next(model.parameters()).device
    rng = random.Random(BASE_INIT_SEED)
    opt = torch.optim.AdamW(model.parameters(), lr=w.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20) * max(0.1, 1 - s / max(w.steps, 1)))
    model.train()
    for step in range(w.steps if stop_after is None else min(stop_after, w.steps)):
        batch = rng.sample(problems, min(w.batch_size, len(problems)))
        targets = [noisy_solution(p, rng) if p.answer.isdigit() and rng.random() < w.answer_noise else p.solution
                   for p in batch]
        ids, mask, loss_mask = supervised_batch(tokenizer, batch, device, targets)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, :-1].float()
        nll = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
        target_mask = loss_mask[:, 1:].float()
        loss = (nll * target_mask).sum() / target_mask.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if (step + 1) % max(1, w.steps // 10) == 0 or step + 1 == w.steps:  # ~10 progress lines
            log(f"warm start {step + 1}/{w.steps}: nll={loss.item():.3f}")
    model.eval()


def build_base(cfg: TrialConfig, train_problems: list[Problem], log=print, stop_after: int | None = None):
    """The base policy of ``cfg`` built in memory: (model, tokenizer). Nothing is cached or read from the cache."""
    import torch

    from policy.model import resolve_device
    from trainers.local.model import build_char_tokenizer, build_tiny_model

    device = resolve_device(cfg.local.device)
    apply_numerics(cfg.local)  # NumericsError when the mode does not hold in this process
    # The base is a function of its config only: the warm start's float sums depend on torch's
    # thread count, so it runs on local.threads whoever calls (a trainer, `sweep eval`, a test).
    caller_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.local.threads)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(BASE_INIT_SEED)
            if cfg.model.path:
                from policy.model import load_policy

                model, tokenizer = load_policy(cfg.model.path, device, cfg.local.dtype, lean=False)  # HF forward + save
            else:
                tokenizer = build_char_tokenizer(cfg.local.tokenizer)
                model = build_tiny_model(cfg.local, tokenizer, seed=BASE_INIT_SEED).to(device)
            if cfg.local.warm_start.steps:
                warm_start(model, tokenizer, train_problems, cfg, log, stop_after=stop_after)
    finally:
        torch.set_num_threads(caller_threads)
    return model, tokenizer


def save_base(model, tokenizer, target: Path, key: str, seconds: float, numerics: str) -> None:
    """Write a built base to ``target`` whole or not at all (via ``<target>.tmp``), its READY file last."""
    tmp = target.with_name(f"{target.name}.tmp")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "READY").write_text(json.dumps({"key": key, "seconds": round(seconds, 1), "sha1": weights_sha1(tmp),
                                           "numerics": numerics}))
    if target.exists():  # a half-written directory from a killed builder
        import shutil

        shutil.rmtree(target)
    tmp.rename(target)


def ensure_base_checkpoint(cfg: TrialConfig, train_problems: list[Problem], log=print) -> Path:
    """Return the base directory for ``cfg``: the shipped one when the repository carries it
    (trainers/local/shipped_bases.py), else the cached one, built (once, under a lock) if missing."""
    from trainers.local.shipped_bases import shipped_base

    key = base_key(cfg)
    shipped = shipped_base(key)
    if shipped is not None:
        return shipped
    root = Path(cfg.local.warm_start.cache_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    target = root / key
    with FileLock(str(root / f"{key}.lock")):
        if (target / "READY").exists():
            return target
        started = time.time()
        log(f"building base policy {key} ({cfg.local.warm_start.steps} warm-start steps) ...")
        model, tokenizer = build_base(cfg, train_problems, log)
        save_base(model, tokenizer, target, key, time.time() - started, cfg.local.numerics)
        log(f"base policy {key} ready in {time.time() - started:.1f}s at {target} "
            f"(weights sha1 {weights_sha1(target)[:8]}, local.numerics: {cfg.local.numerics})")
        return target


def base_fingerprint(cfg: TrialConfig) -> str | None:
    """The backend hook: one line naming the base policy of ``cfg`` by its weights' sha1 (None if not built)."""
    from trainers.local.shipped_bases import shipped_base

    key = base_key(cfg)
    target = shipped_base(key) or Path(cfg.local.warm_start.cache_dir).resolve() / key
    if not (target / "READY").exists():
        return None
    return f"base policy {target.name}: weights sha1 {weights_sha1(target)[:8]} (local.numerics: {cfg.local.numerics})"


def weights_sha1(model_dir: Path) -> str:
    """sha1 of a base policy's weights (its *.safetensors files, in name order): equal bytes, equal base."""
    digest = hashlib.sha1()
    for path in sorted(Path(model_dir).glob("*.safetensors")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def base_model_dir(cfg: TrialConfig, log=print) -> Path:
    """The base policy a trial of ``cfg`` starts from (a Hugging Face directory; built once if missing)."""
    from trainers.local.data import load_data

    return ensure_base_checkpoint(cfg, load_data(cfg)[0], log)


def ship(cfg: TrialConfig, args: list[str], log=print) -> Path:
    """Build the base of ``cfg`` from scratch into the repository's shipped bases (trainers/local/shipped_bases.py)
    with its RECIPE.json: ``args`` (the command's overrides), the weights' sha1 and the recipe's probe."""
    from datetime import date

    from trainers.local.data import load_data
    from trainers.local.shipped_bases import PROBE_STEPS, RECIPE_FILE, SHIPPED_DIR, state_sha1

    if cfg.model.path:
        raise ConfigError(f"--ship: model.path={cfg.model.path!r}: only the built-in tiny Qwen3 is shipped; a "
                          "user's model is built into local.warm_start.cache_dir")
    key, problems = base_key(cfg), load_data(cfg)[0]
    probe = state_sha1(build_base(cfg, problems, log=lambda line: None, stop_after=PROBE_STEPS)[0])
    started = time.time()
    log(f"building base policy {key} ({cfg.local.warm_start.steps} warm-start steps) to ship ...")
    model, tokenizer = build_base(cfg, problems, log)
    SHIPPED_DIR.mkdir(parents=True, exist_ok=True)
    target = SHIPPED_DIR / key
    save_base(model, tokenizer, target, key, time.time() - started, cfg.local.numerics)
    sha1 = weights_sha1(target)
    (target / "READY").write_text(json.dumps({"key": key, "sha1": sha1, "numerics": cfg.local.numerics}))  # no timing
    (target / RECIPE_FILE).write_text(json.dumps({
        "key": key, "args": list(args), "command": " ".join(["python -m trainers.local.warmstart --ship", *args]),
        "weights_sha1": sha1, "probe_steps": PROBE_STEPS, "probe_sha1": probe, "numerics": cfg.local.numerics,
        "warm_start_steps": cfg.local.warm_start.steps, "build_seconds": round(time.time() - started, 1),
        "built": date.today().isoformat()}, indent=1) + "\n")
    log(f"shipped base policy {key} written to {target} (weights sha1 {sha1[:8]}, probe {probe[:8]})")
    return target


def check_shipped(key: str) -> list[str]:
    """What is wrong with a shipped base (empty: nothing): its bytes against its RECIPE.json, its recipe's
    key, and the recipe's first ``probe_steps`` warm-start steps rebuilt against the recorded probe."""
    from trainers.local.data import load_data
    from trainers.local.shipped_bases import recipe, shipped_base, state_sha1

    made = recipe(key)
    rebuild = f"rebuild it: {made['command']}"
    problems = []
    if weights_sha1(shipped_base(key)) != made["weights_sha1"]:
        problems.append(f"{key}: the weights' sha1 is not RECIPE.json's {made['weights_sha1'][:8]} (changed files)")
    cfg = load_trial_config(None, made["args"])
    if base_key(cfg) != key:
        problems.append(f"{key}: its recipe ({made['args']}) now has base key {base_key(cfg)} (the warm start's "
                        f"config or FORMAT_VERSION changed); {rebuild}")
        return problems
    probe = state_sha1(build_base(cfg, load_data(cfg)[0], log=lambda line: None, stop_after=made["probe_steps"])[0])
    if probe != made["probe_sha1"]:
        problems.append(f"{key}: the recipe's first {made['probe_steps']} warm-start steps give weights sha1 "
                        f"{probe[:8]}, not the recorded {made['probe_sha1'][:8]} (the warm start changed); {rebuild}")
    return problems


SMOKE_OVERRIDES = ["local.warm_start.steps=20"]
"""What --smoke applies before the command line's overrides; its cache_dir is a fresh folder under the cwd."""


def smoke(cfg: TrialConfig, keep: bool = False) -> Path:
    """Build the base of ``cfg`` in a fresh ./.warmstart-smoke-*/ cache, find it again there, remove the folder
    (unless ``keep``). Returns the base's directory."""
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix=".warmstart-smoke-", dir=Path.cwd()))
    data = cfg.to_dict()
    data["local"]["warm_start"]["cache_dir"] = str(root)
    cfg = TrialConfig.from_dict(data, source="--smoke")
    try:
        started = time.perf_counter()
        built = base_model_dir(cfg)
        seconds = time.perf_counter() - started
        rebuilt: list[str] = []
        found = base_model_dir(cfg, log=rebuilt.append)
        if rebuilt or found != built or not (built / "READY").is_file():
            raise RuntimeError(f"smoke: the cache did not give back {built} (got {found}; {rebuilt})")
        print(f"smoke ok: base policy {built.name} built in {seconds:.1f}s ({cfg.local.warm_start.steps} warm-start "
              f"steps) and found again in its cache (weights sha1 {weights_sha1(built)[:8]})"
              + (f"; kept in {root}" if keep else " [removed; pass --keep to keep it]"))
        return built
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m trainers.local.warmstart``: build (or find) a trial config's base policy, print its directory."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m trainers.local.warmstart",
        description="Build (or find in its cache, local.warm_start.cache_dir) the base policy a trial of the "
                    "built-in trainer starts from, and print its directory.")
    parser.add_argument("args", nargs="*", help="[CONFIG.yaml] then overrides: key=value, +key=value, "
                                                "++key=value, ~key")
    parser.add_argument("--smoke", action="store_true",
                        help=f"build a small base ({' '.join(SMOKE_OVERRIDES)}) in a fresh ./.warmstart-smoke-*/ "
                             "cache, find it again, remove the folder (seconds)")
    parser.add_argument("--keep", action="store_true", help="with --smoke: keep that folder")
    parser.add_argument("--ship", action="store_true",
                        help="build the base from scratch into the repository's shipped bases (trainers/local/bases/, "
                             "with its RECIPE.json), the base `sweep run` then uses without building (minutes)")
    parser.add_argument("--check-shipped", action="store_true",
                        help="check every shipped base: its bytes, its key, and its recipe's first warm-start steps "
                             "rebuilt against the recorded sha1 (seconds each); exit 1 naming what differs")
    ns = parser.parse_intermixed_args(argv)
    if ns.keep and not ns.smoke:
        parser.error("--keep goes with --smoke")
    if sum((ns.smoke, ns.ship, ns.check_shipped)) > 1:
        parser.error("--smoke, --ship and --check-shipped are separate modes: give one")
    if ns.check_shipped:
        if ns.args:
            parser.error("--check-shipped takes no config: each shipped base's RECIPE.json gives its own")
        from trainers.local.shipped_bases import shipped_keys

        set_kernel_env("reproducible")  # the shipped bases' mode; a recipe in another mode is refused by build_base
        wrong = [line for key in shipped_keys() for line in check_shipped(key)]
        print("\n".join(wrong) if wrong else f"shipped bases ok: {', '.join(shipped_keys())}")
        return 1 if wrong else 0
    try:
        path, overrides = split_args(ns.args)
        cfg = load_trial_config(path, (SMOKE_OVERRIDES if ns.smoke else []) + overrides)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    set_kernel_env(cfg.local.numerics)  # before torch loads: its kernels are chosen at its first operation
    if ns.smoke:
        smoke(cfg, keep=ns.keep)
    elif ns.ship:
        try:
            ship(cfg, overrides)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    else:
        print(base_model_dir(cfg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
