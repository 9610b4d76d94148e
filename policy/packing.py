"""Packing a scored mini-batch into real tokens only, each distinct prompt once.

Scoring a group-sampled batch wastes work twice on a padded [N, P + L] layout: on padding, and
on the prompt, which is identical for every response of a group and (causal attention) has
identical hidden states in each of them. ``pack(...)`` lists every distinct prompt's tokens
once, then every row's real response tokens, and gives the index maps to move between that
packed list [R] and a right-aligned per-row layout [N, W] (W = longest prompt + response) in
which attention runs with a plain causal mask. Gradients stay exact: a shared prompt token
receives the gradient of every row that attends to it (index backward accumulates).

Used by fast_qwen3.LeanQwen3.response_logits; tests/policy/test_fast_qwen3.py checks
the result against the unpacked Hugging Face forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Packed:
    ids: torch.Tensor  # [R] token ids: distinct prompts, then responses
    positions: torch.Tensor  # [R] position of each token in its sequence (RoPE)
    grid: torch.Tensor  # [N, W] packed index of each right-aligned slot; R (a zero row) past a row's end
    owner: torch.Tensor  # [R] the flat [N * W] slot whose attention output each packed token takes
    predictor: torch.Tensor  # [N, L] packed index of the token whose logits predict response token j
    rows: int
    width: int


def first_rows(keys: list, device) -> torch.Tensor:
    """For each row, the index of the first row with the same key (a prompt's token tuple)."""
    first: dict = {}
    return torch.tensor([first.setdefault(key, i) for i, key in enumerate(keys)], device=device)


def pack(prompt_ids, prompt_mask, response_ids, response_mask) -> Packed:
    """Left-padded prompts [N, P] + right-padded responses [N, L] -> ``Packed``."""
    n, p = prompt_ids.shape
    device = prompt_ids.device
    plen, rlen = prompt_mask.sum(1), response_mask.sum(1)
    length = plen + rlen
    width = int(length.max())
    rep = first_rows([tuple(row[p - k:]) for row, k in zip(prompt_ids.tolist(), plen.tolist())], device)
    owns_prompt = rep == torch.arange(n, device=device)  # the first row of each distinct prompt
    # packed order: distinct prompts (in row order), then every row's response
    prompt_len_owned = torch.where(owns_prompt, plen, 0)
    prompt_start = prompt_len_owned.cumsum(0) - prompt_len_owned  # for owner rows
    total_prompt = int(prompt_len_owned.sum())
    response_start = total_prompt + rlen.cumsum(0) - rlen
    total = total_prompt + int(rlen.sum())

    col = torch.arange(width, device=device)[None]  # [1, W]
    in_prompt = col < plen[:, None]
    valid = col < length[:, None]
    grid = torch.where(in_prompt, prompt_start[rep][:, None] + col, response_start[:, None] + col - plen[:, None])
    grid = torch.where(valid, grid, torch.full_like(grid, total))
    owner_mask = valid & (~in_prompt | owns_prompt[:, None])  # each packed token has exactly one owner slot
    flat_slot = (torch.arange(n, device=device)[:, None] * width + col).expand(n, width)
    owner = torch.empty(total, dtype=torch.long, device=device)
    owner[grid[owner_mask]] = flat_slot[owner_mask]
    positions = torch.empty(total, dtype=torch.long, device=device)
    positions[grid[owner_mask]] = col.expand(n, width)[owner_mask]
    src = torch.where(in_prompt, p - plen[:, None] + col, p + col - plen[:, None]).clamp(max=p + response_ids.shape[1] - 1)
    right_aligned = torch.cat([prompt_ids, response_ids], 1).gather(1, src)
    ids = torch.empty(total, dtype=prompt_ids.dtype, device=device)
    ids[grid[owner_mask]] = right_aligned[owner_mask]
    # response token j of row i is predicted at position plen_i - 1 + j (past the end: any real token)
    at = torch.minimum(plen[:, None] - 1 + torch.arange(response_ids.shape[1], device=device), length[:, None] - 1)
    predictor = grid.gather(1, at)
    return Packed(ids, positions, grid, owner, predictor, n, width)
