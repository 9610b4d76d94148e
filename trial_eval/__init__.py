"""Evaluating a trial's checkpoints: above the trainers (it needs their checkpoints), below the sweeps.

    trial_eval.checkpoints  any checkpoint (Hugging Face, or a trainer backend's through its
                            ``is_checkpoint`` / ``export_hf`` hooks) -> a Hugging Face directory
    trial_eval.eval_run     one checkpoint on a protocol's benchmarks, resumable per benchmark;
                            a trial's base policy as a target (the backend's ``base_model`` hook)

    from evaluators.eval_config import EvalConfig
    from trial_eval.eval_run import EvalTarget, evaluate_checkpoint
    metrics, files = evaluate_checkpoint(EvalTarget("grpo.s0", ckpt, step=200, eval_dir=out),
                                         EvalConfig(benchmarks=["math500"]))

It imports contract, policy, evaluators and trainers, and names no trainer backend; sweeps import it
(`sweep eval`, a trial's final evaluation). tests/test_import_floors.py keeps it so.
"""
