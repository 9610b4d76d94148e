"""Verifier, benchmarks, generation and scoring for the RLVR trainers and their evaluation.

    evaluators.tasks          synthetic arithmetic splits (train / easy / medium / hard), Problem,
                              VOCAB_CHARS for the character-level tokenizer
    evaluators.answer_extraction  extract_final_answer (<answer>, \\boxed{}, '#### n', "the answer is X"),
                              answer normalisation and exact plain-number parsing
    evaluators.verifier       the answer verifier: answers_equivalent (exact numbers in-process,
                              math-verify in a child process under a hard per-comparison time
                              bound, any thread), verify_answer, answer_key (for majority votes);
                              re-exports extract_final_answer
    evaluators.verify_worker  that child process (JSON lines over pipes)
    evaluators.rewards        answer reward (= verify_answer) + SSPO format reward
    evaluators.metrics        Avg@k, unbiased pass@k, maj@k, summarize
    evaluators.loaders        benchmark files: verl RL parquet, plain JSONL/JSON/parquet, GSM8K (reading;
                              the writer of verl's parquet is the verl backend's, trainers/verl_backend/parquet.py)
    evaluators.benchmarks     the registry: aime24 ... gsm8k (files) + easy/medium/hard (synthetic)
    evaluators.generation     HF (policy/: lean forward) and vLLM generation behind one interface
    evaluators.scoring        generate + verify + summarize one benchmark (the one evaluation path)
    evaluators.eval_config    the evaluation protocol (a spec's eval: section, `sweep eval` options)

A trial's checkpoints are evaluated one floor up, in trial_eval (checkpoints, eval_run): that needs
the trainers, which this package sits below (it imports contract and policy only).

The verifier's public names are re-exported here:

    from evaluators import verify_answer, extract_final_answer, answers_equivalent, answer_key

The verifier imports only the standard library (math-verify / sympy are imported only in its child
process), so `import evaluators.tasks` stays free of torch and sympy.
"""

from evaluators.verifier import DEFAULT_TIMEOUT_S, answer_key, answers_equivalent, extract_final_answer, verify_answer

__all__ = ["verify_answer", "extract_final_answer", "answers_equivalent", "answer_key", "DEFAULT_TIMEOUT_S"]
