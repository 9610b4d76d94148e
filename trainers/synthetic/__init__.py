"""The synthetic backend: a trial without a model, for scale benchmarks and tests of the driver.

It reports the metric keys of a real trial (contract/metrics.py: ``STEP_METRICS`` every step,
``val/<benchmark>/acc``, ``val/avg/acc`` and, with a selection split, ``select/...`` at evaluations)
at a set pace, writes and resumes from checkpoints, and fails or diverges at a step when told to. The
numbers are made up (a deterministic function of the trial's method, params, seed and step), so no
result of it means anything about an objective. It imports neither torch nor MLflow.

    base: {backend: synthetic, synthetic: {step_seconds: 0.05, fail_at_step: 3}}
    sweep run benchmarks/specs/...   # or: python benchmarks/sweep_scale.py --smoke
"""
