"""Evaluation throughput: generation (HFGenerator vs transformers' generate) and answer verification
(evaluators.verifier.verify_answer vs plain math-verify), side by side.

    python benchmarks/eval_throughput.py              # 16 prompts x 8 samples x 64 tokens, 10 reps; 3 x 2,000 answers (~30 s)
    python benchmarks/eval_throughput.py --smoke      # 2 prompts x 2 samples x 8 tokens; 80 answers + 16 distinct,
                                                      # 10 + 10 warm-up rows; 1 rep each (~15 s, mostly imports)
    python benchmarks/eval_throughput.py --threads 2  # torch threads of part 1 (default 1)
    python benchmarks/eval_throughput.py --part gen   # only part 1 (or --part verify: only part 2)
    python benchmarks/eval_throughput.py --model-dir DIR --device cuda   # a local HF checkpoint instead of the tiny model

1. Generation, generated tokens/s on the SAME model, prompts and batch (default: the local trainer's
   tiny Qwen3, random init: build_char_tokenizer + build_tiny_model(LocalConfig()), float32, CPU;
   16 prompts from the easy split x 8 samples = 128 sequences, at most 64 new tokens, temperature 1,
   top-p 1, full vocabulary):
     ours           evaluators.generation.HFGenerator.generate (one policy.rollout.sample call:
                    lean Qwen3 forward, each prompt prefilled once, finished rows dropped)
     ours, HF fwd   the same with lean=False (the model's own transformers forward and cache)
     transformers   model.generate(input_ids, attention_mask (left padding), do_sample=True,
                    num_return_sequences=8, max_new_tokens=64, temperature=1, top_p=1, top_k=0,
                    pad/eos token ids set)
   Tokens: response tokens up to and including <eos> (padding after it not counted), in all three.
   Each is warmed up once; then the reps run interleaved (ours, ours HF fwd, transformers, ...) so
   load from other processes hits all alike; the table shows the median tokens/s over the reps.
   torch.set_num_threads(--threads) (1 by default). Target (issue #16): ours >= 1.5x transformers.

2. Verification, answers/s of ``verify_answer(response, gold)`` vs plain math-verify
   ``verify(parse(gold), parse(response))`` (default configs), single thread, on the same inputs:
     the mix   80% plain numeric answers (integers, negatives, decimals) and 20% LaTeX (``\\frac{a}{b}``,
               ``c\\sqrt{n}``, ``\\frac{k\\pi}{m}``, drawn from thousands of values), 4 responses per gold as
               in Avg@4 (a gold repeats 4 times in a row, and two of its responses may box the same
               answer, as in a real Avg@k run), each response a few sentences of reasoning ending in
               ``\\boxed{...}`` (half of them inside $...$); ~60% correct, some in an equivalent form
               (``3/4`` for ``\\frac{3}{4}``, ``\\sqrt{72}`` for ``6\\sqrt{2}``, ``2.0`` for ``2``);
     distinct  LaTeX only, one response per gold, no (boxed answer, gold) pair seen anywhere else in the
               run: nothing any cache holds can answer it (verify_answer's worst case).
   Both are warmed up on a separate mix first; each rep is a fresh mix and a fresh distinct set (the
   distinct set runs first), each call timed alone; per-category rates are answers / summed call time.
   "verdict = label" is the share of verdicts equal to the constructed truth (plain math-verify's
   ``parse`` of a bare LaTeX gold such as ``\\sqrt{2}`` or ``2\\pi``, without $ delimiters, finds no or a
   wrong expression, so such rows come out False).
   Target: >= 2,000 answers/s on typical numeric answers and never slower than plain math-verify.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import random
import statistics
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere: `evaluators` lives at the repo root
    sys.path.insert(0, str(REPO))
for _key, _value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                     "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}.items():
    os.environ.setdefault(_key, _value)

import torch  # noqa: E402

from evaluators.generation import HFGenerator, SamplingParams  # noqa: E402
from evaluators.tasks import make_split  # noqa: E402

logging.getLogger("math_verify").setLevel(logging.ERROR)
warnings.filterwarnings("ignore")


# ---- 1. generation ------------------------------------------------------------------------------
def _model(args):
    from policy.model import load_policy, resolve_device

    device = resolve_device(args.device)
    if args.model_dir:
        model, tok = load_policy(args.model_dir, device, args.dtype, lean=False)  # transformers needs the HF module
        return model.eval(), tok, f"{args.model_dir} ({args.dtype})"
    from trainers.local.config import LocalConfig
    from trainers.local.model import build_char_tokenizer, build_tiny_model

    tok = build_char_tokenizer()
    cfg = LocalConfig()
    model = build_tiny_model(cfg, tok, seed=0).to(device=device, dtype=getattr(torch, args.dtype)).eval()
    return model, tok, (f"tiny Qwen3, random init (hidden {cfg.hidden_size}, {cfg.num_layers} layers, "
                        f"vocab {len(tok)}, {sum(p.numel() for p in model.parameters()):,} params, {args.dtype})")


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_ours(model, tok, prompts, n, max_new, seed, lean):
    gen = HFGenerator(model, tok, batch_size=len(prompts) * n, lean=lean)
    out = gen.generate(prompts, SamplingParams(n=n, max_new_tokens=max_new, seed=seed))
    return sum(s.num_tokens for group in out for s in group)


def run_transformers(model, tok, prompts, n, max_new, seed):
    device = next(model.parameters()).device
    rows = [tok.encode(p, add_special_tokens=False) for p in prompts]  # the tokens ours gets
    width = max(map(len, rows))
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=device)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
    torch.manual_seed(seed)
    out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, num_return_sequences=n,
                         max_new_tokens=max_new, temperature=1.0, top_p=1.0, top_k=0,
                         pad_token_id=pad, eos_token_id=tok.eos_token_id)
    completion = out[:, width:]
    is_eos = (completion == tok.eos_token_id).long()
    return int(((is_eos.cumsum(1) - is_eos) == 0).sum())  # up to and including <eos>


def bench_generation(args) -> None:
    torch.set_num_threads(args.threads)
    model, tok, desc = _model(args)
    device = next(model.parameters()).device
    prompts = [p.prompt for p in make_split("easy", args.prompts, 0)]
    n, max_new = args.samples, args.max_new_tokens
    runners = {
        "ours (HFGenerator)": lambda seed: run_ours(model, tok, prompts, n, max_new, seed, None),
        "ours, HF forward (lean=False)": lambda seed: run_ours(model, tok, prompts, n, max_new, seed, False),
        "transformers generate": lambda seed: run_transformers(model, tok, prompts, n, max_new, seed),
    }
    rates: dict[str, list[float]] = {k: [] for k in runners}
    tokens: dict[str, list[int]] = {k: [] for k in runners}
    for name, fn in runners.items():  # warm-up
        fn(10_000)
    for rep in range(args.reps):
        for name, fn in runners.items():
            _sync(device)
            t0 = time.perf_counter()
            count = fn(rep)
            _sync(device)
            rates[name].append(count / (time.perf_counter() - t0))
            tokens[name].append(count)
    ref = statistics.median(rates["transformers generate"])
    print(f"\n1. Generation: {desc}, {device}, {torch.get_num_threads()} thread(s)")
    print(f"   {len(prompts)} prompts x {n} samples = {len(prompts) * n} sequences, <= {max_new} new tokens, "
          f"temperature 1, top-p 1; median of {args.reps} rep(s) after 1 warm-up")
    print(f"   {'':32s} {'tokens/rep':>10s} {'s/rep':>8s} {'tokens/s':>10s} {'vs transformers':>16s}")
    for name in runners:
        rate, toks = statistics.median(rates[name]), statistics.mean(tokens[name])
        print(f"   {name:32s} {toks:10.0f} {toks / rate:8.3f} {rate:10,.0f} {rate / ref:15.2f}x")
    ratio = statistics.median(rates["ours (HFGenerator)"]) / ref
    print(f"   ours / transformers generate: {ratio:.2f}x (target >= 1.5x: {'met' if ratio >= 1.5 else 'NOT met'})")


# ---- 2. verification ----------------------------------------------------------------------------
FILLER = ["First we rewrite the expression.", "We compute {a} + {b} = {c}.", "Multiplying both sides by {a} gives {c}.",
          "Subtracting {b} from {c} leaves {d}.", "Let x = {a}; then 2x = {e}.", "Checking the case n = {b} works.",
          "So the remaining term is {c}/{b}."]


def _reasoning(rng: random.Random) -> str:
    a, b = rng.randint(2, 99), rng.randint(1, 99)
    values = dict(a=a, b=b, c=a + b, d=a + b - b, e=2 * a)
    return " ".join(rng.choice(FILLER).format(**values) for _ in range(rng.randint(2, 5)))


def _gold_and_forms(rng: random.Random, latex_share: float) -> tuple[str, str, list[str], list[str]]:
    """(kind, gold, equivalent predictions, wrong predictions)."""
    if rng.random() >= latex_share:
        form = rng.random()
        if form < 0.6:
            v = rng.randint(0, 2000)
            return "numeric", str(v), [str(v), str(v), f"{v}.0"], [str(v + rng.choice([1, -1, 2, 10])), str(v * 2 + 1)]
        if form < 0.8:
            v = -rng.randint(1, 500)
            return "numeric", str(v), [str(v)], [str(-v), str(v - 1)]
        whole, frac = rng.randint(0, 99), rng.choice([25, 5, 75, 125, 4])
        v = f"{whole}.{frac}"
        return "numeric", v, [v, v], [f"{whole + 1}.{frac}", f"{whole}"]
    kind = rng.choice(["frac", "sqrt", "pi"])
    if kind == "frac":  # a/b in lowest terms, b in 2..60
        b = rng.randint(2, 60)
        a = rng.choice([k for k in range(1, 3 * b) if math.gcd(k, b) == 1])
        gold = rf"\frac{{{a}}}{{{b}}}"
        return "latex", gold, [gold, gold, f"{a}/{b}"], [rf"\frac{{{a + 1}}}{{{b}}}", rf"\frac{{{b}}}{{{a}}}"]
    if kind == "sqrt":  # c sqrt(n), n square-free in 2..200, c in 1..9
        n = rng.choice([m for m in range(2, 201) if all(m % (q * q) for q in range(2, 15))])
        c = rng.choice([1, 1, 1] + list(range(2, 10)))
        gold = rf"\sqrt{{{n}}}" if c == 1 else rf"{c}\sqrt{{{n}}}"
        return "latex", gold, [gold, gold, rf"\sqrt{{{c * c * n}}}"], [rf"{c}\sqrt{{{n + 1}}}", rf"{c + 1}\sqrt{{{n}}}"]
    k, m = rng.randint(1, 20), rng.randint(1, 12)
    g = math.gcd(k, m)
    k, m = k // g, m // g
    top = r"\pi" if k == 1 else rf"{k}\pi"
    gold = top if m == 1 else rf"\frac{{{top}}}{{{m}}}"
    equivalent = rf"{k} \pi" if m == 1 else rf"\frac{{{k}}}{{{m}}}\pi"
    return "latex", gold, [gold, equivalent], [rf"\frac{{{k + 1}\pi}}{{{m}}}", rf"\frac{{{k}}}{{{m}}}"]


def answer_mix(count: int, seed: int, per_gold: int = 4, latex_share: float = 0.2,
               seen: set | None = None) -> list[tuple[str, str, bool, str, str]]:
    """``count`` (response, gold, is_correct, kind, boxed answer) rows, ``per_gold`` responses per gold.
    With ``seen``: no (boxed answer, gold) pair in it, and the new pairs are added to it."""
    rng = random.Random(seed)
    rows = []
    while len(rows) < count:
        kind, gold, good, bad = _gold_and_forms(rng, latex_share)
        for _ in range(per_gold):
            correct = rng.random() < 0.6
            pred = rng.choice(good if correct else bad)
            if seen is not None:
                if (pred, gold) in seen:
                    continue
                seen.add((pred, gold))
            boxed = f"\\boxed{{{pred}}}" if rng.random() < 0.5 else f"$\\boxed{{{pred}}}$"
            rows.append((f"{_reasoning(rng)} Therefore the answer is {boxed}.", gold, correct, kind, pred))
    return rows[:count]


def _timed(fn, rows) -> list[tuple[float, bool]]:
    out = []
    for response, gold, *_ in rows:
        t0 = time.perf_counter()
        verdict = bool(fn(response, gold))
        out.append((time.perf_counter() - t0, verdict))
    return out


def bench_verification(args) -> None:
    try:
        from evaluators.verifier import verify_answer
    except ImportError as exc:
        print(f"\n2. Verification: skipped, evaluators.verifier.verify_answer is not importable ({exc})")
        return
    from math_verify import parse, verify

    def plain(response: str, gold: str) -> bool:
        return verify(parse(gold), parse(response))

    impls = {"verify_answer": verify_answer, "math-verify": plain}
    for fn in impls.values():  # warm-up: imports, sympy, regex compilation, verify_answer's worker process
        _timed(fn, answer_mix(args.warmup, seed=10_000) + answer_mix(args.warmup, seed=10_001, per_gold=1,
                                                                     latex_share=1.0))
    mixes = [answer_mix(args.answers, seed=rep) for rep in range(args.reps)]
    seen = {(row[4], row[1]) for mix in mixes for row in mix}  # distinct set: no pair the mixes use
    distinct = [answer_mix(args.answers // 5, seed=20_000 + rep, per_gold=1, latex_share=1.0, seen=seen)
                for rep in range(args.reps)]
    kinds = ("numeric", "latex", "mix", "distinct")
    times = {name: {kind: [] for kind in kinds} for name in impls}
    agree = {name: [] for name in impls}
    for rows, cold in zip(mixes, distinct):
        for name, fn in impls.items():
            result = _timed(fn, cold)  # first: none of these pairs can be in a cache
            times[name]["distinct"].append(len(cold) / sum(dt for dt, _ in result))
            agree[name] += [verdict == row[2] for (_, verdict), row in zip(result, cold)]
            result = _timed(fn, rows)
            for kind in ("numeric", "latex"):
                picked = [dt for (dt, _), row in zip(result, rows) if row[3] == kind]
                times[name][kind].append(len(picked) / sum(picked))
            times[name]["mix"].append(len(rows) / sum(dt for dt, _ in result))
            agree[name] += [verdict == row[2] for (_, verdict), row in zip(result, rows)]
    rows = mixes[0]
    numeric = sum(r[3] == "numeric" for r in rows)
    print(f"\n2. Verification: {args.answers} answers per rep ({numeric} numeric, {len(rows) - numeric} LaTeX; "
          f"4 responses per gold, {sum(r[2] for r in rows)} correct) + {len(distinct[0])} LaTeX answers whose "
          f"(answer, gold) pairs are all distinct; single thread, median of {args.reps} rep(s)")
    print(f"   {'answers/s':34s} {'verify_answer':>14s} {'math-verify':>12s} {'ratio':>7s}")
    for kind, label in (("numeric", "numeric answers (80% of the mix)"), ("latex", "LaTeX answers (20% of the mix)"),
                        ("mix", "the mix"), ("distinct", "LaTeX, all pairs distinct")):
        ours, theirs = (statistics.median(times[n][kind]) for n in impls)
        print(f"   {label:34s} {ours:14,.0f} {theirs:12,.0f} {ours / theirs:6.2f}x")
    ours_acc, theirs_acc = (100 * sum(agree[n]) / len(agree[n]) for n in impls)
    print(f"   {'verdict = label, % (all rows)':34s} {ours_acc:14.1f} {theirs_acc:12.1f}")
    num = statistics.median(times["verify_answer"]["numeric"])
    slower = [kind for kind in kinds
              if statistics.median(times["verify_answer"][kind]) < statistics.median(times["math-verify"][kind])]
    print(f"   targets: >= 2,000 numeric answers/s: {'met' if num >= 2000 else 'NOT met'} ({num:,.0f}); "
          f"never slower than math-verify: {'met' if not slower else 'NOT met (' + ', '.join(slower) + ')'}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("all", "gen", "verify"), default="all")
    ap.add_argument("--smoke", action="store_true", help="2 prompts x 2 samples x 8 tokens, 80 answers, 10 + 10 "
                    "warm-up rows, 1 rep: ~15 s")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (part 1)")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions (default 10 for part 1, 3 for part 2)")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--samples", type=int, default=8, help="samples per prompt")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--answers", type=int, default=2000, help="answers per verification rep")
    ap.add_argument("--warmup", type=int, default=40, help="warm-up rows of each kind (mix, distinct) per verifier")
    ap.add_argument("--model-dir", default=None, help="a local HF checkpoint instead of the tiny random model")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args(argv)
    if args.smoke:
        # 80 answers: the first mix (seed 0) has LaTeX golds too, which its per-kind rates need
        args.prompts, args.samples, args.max_new_tokens, args.answers, args.warmup = 2, 2, 8, 80, 10
    reps = args.reps
    print(f"torch {torch.__version__}, load avg {os.getloadavg()[0]:.2f}")
    if args.part in ("all", "gen"):
        args.reps = reps or (1 if args.smoke else 10)
        bench_generation(args)
    if args.part in ("all", "verify"):
        args.reps = reps or (1 if args.smoke else 3)
        bench_verification(args)


if __name__ == "__main__":
    main()
