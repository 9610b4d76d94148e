"""Sampling with a KV cache, and per-token log-probs/entropy of given responses.

``sample(...)`` generates responses for a batch of tokenised prompts token by token with the
model's KV cache (left-padded prompts, temperature / top-p / greedy), recording the
behaviour log-prob of every sampled token at sampling time. ``score(...)`` recomputes
log-probs (with gradient) and the detached entropy of the same tokens under the current
policy for the update. Both use log_softmax(logits / temperature), so on-policy ratios are 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class Rollout:
    prompt_ids: torch.Tensor  # [N, P] left-padded
    prompt_mask: torch.Tensor  # [N, P]
    response_ids: torch.Tensor  # [N, L] right-padded with pad
    response_mask: torch.Tensor  # [N, L] 1 up to and including <eos>
    old_log_probs: torch.Tensor  # [N, L] behaviour log-probs (0 on padding)


def left_pad(sequences: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for i, s in enumerate(sequences):
        ids[i, width - len(s):] = torch.tensor(s, dtype=torch.long)
        mask[i, width - len(s):] = 1
    return ids.to(device), mask.to(device)


def _positions(mask: torch.Tensor) -> torch.Tensor:
    return (mask.cumsum(-1) - 1).clamp(min=0)


def _pick(logits: torch.Tensor, temperature: float, top_p: float, greedy: bool, generator: torch.Generator | None):
    """Choose the next token; returns (token [N], its log-prob under softmax(logits / T) [N])."""
    logp = F.log_softmax(logits.float() / temperature, dim=-1)
    if greedy:
        token = logp.argmax(-1)
    else:
        probs = logp.exp()
        if top_p < 1.0:
            sorted_p, order = probs.sort(-1, descending=True)
            keep = sorted_p.cumsum(-1) - sorted_p < top_p  # smallest set with mass >= top_p
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_p * keep)
        token = torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(-1).to(logits.device)
    return token, logp.gather(-1, token[:, None]).squeeze(-1)


@torch.no_grad()
def sample(model, prompts: list[list[int]], *, max_new_tokens: int, eos_id: int, pad_id: int,
           temperature: float = 1.0, top_p: float = 1.0, greedy: bool = False,
           generator: torch.Generator | None = None) -> Rollout:
    """Generate one response per prompt (repeat a prompt in ``prompts`` for a group)."""
    device = next(model.parameters()).device
    prompt_ids, prompt_mask = left_pad(prompts, pad_id, device)
    n = prompt_ids.shape[0]
    out = model(input_ids=prompt_ids, attention_mask=prompt_mask, position_ids=_positions(prompt_mask), use_cache=True)
    cache, logits = out.past_key_values, out.logits[:, -1]
    attention = prompt_mask
    position = _positions(prompt_mask)[:, -1]
    tokens, logps = [], []
    finished = torch.zeros(n, dtype=torch.bool, device=device)
    for _ in range(max_new_tokens):
        token, logp = _pick(logits, temperature, top_p, greedy, generator)
        token = torch.where(finished, torch.full_like(token, pad_id), token)
        tokens.append(token)
        logps.append(torch.where(finished, torch.zeros_like(logp), logp))
        finished = finished | (token == eos_id)
        if bool(finished.all()):
            break
        attention = torch.cat([attention, torch.ones_like(attention[:, :1])], dim=1)
        position = position + 1
        out = model(input_ids=token[:, None], attention_mask=attention, position_ids=position[:, None],
                    past_key_values=cache, use_cache=True)
        cache, logits = out.past_key_values, out.logits[:, -1]
    response_ids = torch.stack(tokens, dim=1)
    # valid = tokens up to and including the first <eos> (or all, if truncated)
    is_eos = (response_ids == eos_id).long()
    after_eos = (is_eos.cumsum(1) - is_eos) > 0
    response_mask = (~after_eos).long()
    old = torch.stack(logps, dim=1) * response_mask
    return Rollout(prompt_ids, prompt_mask, response_ids, response_mask, old)


def score(model, rollout: Rollout, temperature: float = 1.0, with_entropy: bool = True):
    """Log-probs [N, L] (with grad) and detached entropy [N, L] of the rollout's response tokens."""
    ids = torch.cat([rollout.prompt_ids, rollout.response_ids], dim=1)
    mask = torch.cat([rollout.prompt_mask, rollout.response_mask], dim=1)
    p = rollout.prompt_ids.shape[1]
    logits = model(input_ids=ids, attention_mask=mask, position_ids=_positions(mask)).logits
    logits = logits[:, p - 1:-1].float() / temperature  # position t predicts token t+1
    logp_all = F.log_softmax(logits, dim=-1)
    log_probs = logp_all.gather(-1, rollout.response_ids[..., None]).squeeze(-1)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = -(logp_all.exp() * logp_all).sum(-1)  # DHPO eq. 9
    return log_probs, entropy
