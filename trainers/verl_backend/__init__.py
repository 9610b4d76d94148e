"""The verl trainer backend: each trial runs verl's ``main_ppo`` as its own Ray driver.

Not to be confused with ``trainers/verl_plugin`` (the registration of our objectives as verl
policy losses, which this backend loads into every verl process).

    config.py     the ``verl:`` section of a trial config (VerlConfig)
    translate.py  trial config -> verl ``main_ppo`` Hydra overrides, validated against verl's schema
    assets.py     the tiny local Qwen3 and the RL parquet files built without downloads
    reward.py     the verl reward function scoring with evaluators.rewards
    cpu/          the CPU platform (platform, gloo, transformers-generate rollout) for 0-GPU trials
    train.py      the backend's train function (launch, metrics, checkpoints, resume)
"""
