"""Sampling with a KV cache, and per-token log-probs/entropy of given responses.

``sample(...)`` generates responses for a batch of tokenised prompts token by token with a
KV cache (left-padded prompts, temperature / top-p / greedy), recording the behaviour
log-prob of every sampled token at sampling time. ``score(...)`` recomputes log-probs (with
gradient) and the detached entropy of the same tokens under the current policy for the
update. Both use log_softmax(logits / temperature), so on-policy ratios are 1.

Qwen3-architecture policies (the tiny preset and real Qwen3 checkpoints) run through the lean
forward of fast_qwen3.py: repeated prompts (a group) are prefilled once, and rows that have
emitted <eos> leave the decode batch. Any other causal LM runs through its Hugging Face
forward and cache (``lean=False`` forces that path for any model).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from policy.fast_qwen3 import KVCache, LeanQwen3
from policy.packing import first_rows

COMPACT_FRACTION = 0.2  # drop finished rows from the decode batch once this share of it is done


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
        # inverse-CDF draw: one uniform per row (u scaled by the row's total, so rounding can never pick
        # past the last token with mass); the first token whose cumulative mass exceeds u
        cdf = probs.cumsum(-1)
        u = torch.rand(probs.shape[0], 1, generator=generator).to(logits.device) * cdf[:, -1:]
        token = torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp(max=probs.shape[-1] - 1)
    return token, logp.gather(-1, token[:, None]).squeeze(-1)


def _use_lean(model, lean: bool | None) -> bool:
    return LeanQwen3.supports(model) if lean is None else lean


def _response_mask(response_ids: torch.Tensor, eos_id: int) -> torch.Tensor:
    """1 on tokens up to and including the first <eos> (or all, if truncated)."""
    is_eos = (response_ids == eos_id).long()
    return ((is_eos.cumsum(1) - is_eos) == 0).long()


@torch.no_grad()
def sample(model, prompts: list[list[int]], *, max_new_tokens: int, eos_id: int, pad_id: int,
           temperature: float = 1.0, top_p: float = 1.0, greedy: bool = False,
           generator: torch.Generator | None = None, lean: bool | None = None) -> Rollout:
    """Generate one response per prompt (repeat a prompt in ``prompts`` for a group)."""
    device = next(model.parameters()).device
    prompt_ids, prompt_mask = left_pad(prompts, pad_id, device)
    pick = dict(temperature=temperature, top_p=top_p, greedy=greedy, generator=generator)
    if _use_lean(model, lean):
        response_ids, logps = _decode_lean(model, prompts, prompt_ids, prompt_mask, max_new_tokens, eos_id, pad_id, pick)
    else:
        response_ids, logps = _decode_hf(model, prompt_ids, prompt_mask, max_new_tokens, eos_id, pad_id, pick)
    response_mask = _response_mask(response_ids, eos_id)
    response_ids = torch.where(response_mask.bool(), response_ids, torch.full_like(response_ids, pad_id))
    return Rollout(prompt_ids, prompt_mask, response_ids, response_mask, logps * response_mask)


def _decode_hf(model, prompt_ids, prompt_mask, max_new_tokens, eos_id, pad_id, pick):
    """Token-by-token decoding with the model's own forward and cache."""
    n = prompt_ids.shape[0]
    out = model(input_ids=prompt_ids, attention_mask=prompt_mask, position_ids=_positions(prompt_mask), use_cache=True)
    cache, logits = out.past_key_values, out.logits[:, -1]
    attention = prompt_mask
    position = _positions(prompt_mask)[:, -1]
    tokens, logps = [], []
    finished = torch.zeros(n, dtype=torch.bool, device=prompt_ids.device)
    for _ in range(max_new_tokens):
        token, logp = _pick(logits, **pick)
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
    return torch.stack(tokens, dim=1), torch.stack(logps, dim=1)


def _decode_lean(model, prompts, prompt_ids, prompt_mask, max_new_tokens, eos_id, pad_id, pick):
    """Lean decoding: each distinct prompt prefilled once, finished rows compacted away."""
    n, width = prompt_ids.shape
    device, dtype = prompt_ids.device, next(model.parameters()).dtype
    fast = LeanQwen3(model, max_positions=width + max_new_tokens)
    weights = fast.weights()
    # row i of the batch uses prefilled row row_of[i]: each distinct prompt is prefilled once
    unique_rows, row_of = first_rows([tuple(p) for p in prompts], device).unique(return_inverse=True)
    cache = KVCache(fast, n, width + max_new_tokens, prompt_mask, dtype, device)
    positions = _positions(prompt_mask)
    hidden = fast.hidden(prompt_ids[unique_rows], prompt_mask[unique_rows], positions[unique_rows],
                         cache=cache, weights=weights, cache_rows=row_of)
    logits = fast.head(hidden[:, -1])[row_of]
    position = positions[:, -1]
    tokens = torch.full((n, max_new_tokens), pad_id, dtype=torch.long, device=device)
    logps = torch.zeros((n, max_new_tokens), dtype=torch.float32, device=device)
    active = torch.arange(n, device=device)  # original row of each row still in the batch
    done = torch.zeros(n, dtype=torch.bool, device=device)  # per batch row: has emitted <eos>
    for step in range(max_new_tokens):
        token, logp = _pick(logits, **pick)
        tokens[active, step] = token  # rows already done write past their <eos>: masked below
        logps[active, step] = logp
        done = done | (token == eos_id)
        left = len(active) - int(done.sum())
        if left == 0 or step == max_new_tokens - 1:
            break
        if left <= (1 - COMPACT_FRACTION) * len(active):
            keep = (~done).nonzero().squeeze(1)
            active, token, position, done = active[keep], token[keep], position[keep], done[keep]
            cache.keep_rows(keep)
        position = position + 1
        logits = fast.decode(weights, token, position, cache)
    return tokens[:, :step + 1], logps[:, :step + 1]


def score(model, rollout: Rollout, temperature: float = 1.0, with_entropy: bool = True, lean: bool | None = None):
    """Log-probs [N, L] (with grad) and detached entropy [N, L] of the rollout's response tokens."""
    if _use_lean(model, lean):  # real tokens only, logits only where they are needed
        fast = LeanQwen3(model, max_positions=rollout.prompt_ids.shape[1] + rollout.response_ids.shape[1])
        logits = fast.response_logits(rollout.prompt_ids, rollout.prompt_mask, rollout.response_ids,
                                      rollout.response_mask)
    else:  # position t predicts token t+1
        ids = torch.cat([rollout.prompt_ids, rollout.response_ids], dim=1)
        mask = torch.cat([rollout.prompt_mask, rollout.response_mask], dim=1)
        p = rollout.prompt_ids.shape[1]
        logits = model(input_ids=ids, attention_mask=mask, position_ids=_positions(mask)).logits[:, p - 1:-1]
    logits = logits.float() / temperature
    logp_all = F.log_softmax(logits, dim=-1)
    log_probs = logp_all.gather(-1, rollout.response_ids[..., None]).squeeze(-1)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = -(logp_all.exp() * logp_all).sum(-1)  # DHPO eq. 9
    return log_probs, entropy
