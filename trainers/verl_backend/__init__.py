"""The verl trainer backend: each trial runs verl's ``main_ppo`` as its own Ray driver.

Not to be confused with ``trainers/verl_plugin`` (the registration of our objectives as verl
policy losses, which this backend loads into every verl process).

    config.py       the ``verl:`` section of a trial config (VerlConfig) and its checks
    translate.py    trial config -> verl ``main_ppo`` Hydra overrides and environment
    verl_checks.py  composing verl's own Hydra config and converting it with verl's dataclasses
    preflight.py    the backend's checks of a whole sweep before any trial starts; --dry-run text
    launch.py       a trial's exact argv + environment, and its inputs (model dir, parquet files)
    placement.py    where its trials run on the sweep's Ray cluster (own GPUs, concurrency), --smoke
    assets.py       the tiny local Qwen3 built without downloads
    parquet.py      the verl RL parquet writer (problems / any schema -> verl's RLHFDataset format)
    reward.py       the verl reward function scoring with evaluators.rewards
    cpu/            the CPU platform (platform, gloo, FSDP engine, transformers-generate rollout)
    cpu_runtime.py  the env + overrides selecting the CPU platform (imports no verl)
    train.py        the backend's train function (launch, metrics, checkpoints, resume)
    export.py       its checkpoints recognised and merged into a Hugging Face directory (eval)
    metrics.py      verl's file-logger lines -> the metric contract

    sweep run verl_cpu_smoke.yaml                            # two verl trials on this CPU
    python -m trainers.verl_backend.launch TRIAL.yaml ...    # print one trial's main_ppo command
"""
