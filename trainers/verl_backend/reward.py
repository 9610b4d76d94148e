"""verl custom reward function scoring responses with evaluators.rewards (answer + SSPO format reward).

Selected in a verl run with (``pkg://`` makes verl import it as a module, no file path needed):

    reward.custom_reward_function.path=pkg://trainers.verl_backend.reward
    reward.custom_reward_function.name=compute_score
    # optional, our RewardConfig fields (verl 0.9.1 reads custom_reward_function.reward_kwargs,
    # verl/trainer/ppo/reward.py:get_custom_reward_fn, and passes them as keyword arguments,
    # taking precedence over the call's own):
    +reward.custom_reward_function.reward_kwargs.answer=true
    +reward.custom_reward_function.reward_kwargs.format=false

verl's reward manager (verl/experimental/reward_loop/reward_manager/naive.py) calls it with the
response decoded with ``skip_special_tokens=True`` and puts every key of the returned dict into
``reward_extra_info``: "score" is the reward, "acc" (our answer reward) is what verl reports as
``val-core/<data_source>/acc/mean@N``; "format" is logged as ``val-aux/<data_source>/format/...``.
"""

from __future__ import annotations

from typing import Any

from evaluators.rewards import RewardConfig, compute_reward

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"reward_kwargs.{name}: expected a boolean, got {value!r}")


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  answer: Any = RewardConfig.answer, format: Any = RewardConfig.format,  # noqa: A002 (RewardConfig's name)
                  **kwargs: Any) -> dict[str, float]:
    """{'score': reward, 'acc': answer reward (0/1), 'format': format reward} for one response.

    ``answer`` / ``format`` are RewardConfig's switches (defaults: both on); other keyword
    arguments verl may pass (reward_router_address, ...) are ignored.
    """
    cfg = RewardConfig(answer=_flag("answer", answer), format=_flag("format", format))
    parts = compute_reward(solution_str, str(ground_truth), cfg)
    return {"score": float(parts["reward"]), "acc": float(parts["answer"]), "format": float(parts["format"])}
