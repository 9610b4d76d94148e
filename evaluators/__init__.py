"""Verifiers and benchmarks for the RLVR trainers.

    evaluators.tasks    synthetic arithmetic splits (train / easy / medium / hard), JSONL loader,
                        VOCAB_CHARS for the character-level tokenizer
    evaluators.rewards  answer + SSPO format rewards (thread-safe math-verify use)
    evaluators.metrics  Avg@k, unbiased pass@k

Nothing is imported here, so `import evaluators.tasks` stays free of torch and sympy.
"""
