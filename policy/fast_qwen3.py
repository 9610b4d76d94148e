"""A lean forward pass over a Hugging Face ``Qwen3ForCausalLM``'s own parameters.

The built-in trainer spends almost all of its time in forwards of a model so small that
per-operator overhead, not arithmetic, dominates. ``LeanQwen3`` computes the same function
as the Hugging Face module (RMSNorm, q/k head norms, RoPE, grouped-query attention, SwiGLU,
tied or untied head) with far fewer operators:

* q/k/v and gate/up projections fused into one matmul each, q and k head norms and RoPE
  applied to q and k together, RoPE tables precomputed for every position;
* attention over a preallocated KV cache with an additive padding bias (decode; finished
  rows can leave the batch), one ``scaled_dot_product_attention`` with a causal + padding
  bias (prefill), or, for scoring, token-wise layers on packed real tokens (each distinct
  prompt once, packing.py) and causal attention on a right-aligned layout;
* the language-model head applied only where logits are needed.

It reads the module's parameters on every call (never copies them), so gradients flow to the
module's parameters, the optimizer and checkpoints are unchanged, and the module stays the
source of truth. The module is a Hugging Face ``Qwen3ForCausalLM`` or, in trials that load a
checkpoint without transformers, a lean_checkpoint.Qwen3Weights (same parameter names).
``LeanQwen3.supports(model)`` says whether a model can use it (Qwen3 architecture, default RoPE,
no biases, no attention dropout, no sliding window); other models run through the Hugging Face
forward. tests/policy/test_fast_qwen3.py checks logits, cached
decoding, sampling and gradients against the Hugging Face forward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from policy.packing import pack

NEG_INF = float("-inf")


class LeanQwen3:
    """Functional Qwen3 forward; ``model`` keeps owning every parameter."""

    @staticmethod
    def supports(model) -> bool:
        return LeanQwen3.supports_config(getattr(model, "config", None))

    @staticmethod
    def supports_config(c) -> bool:
        """``c``: a Hugging Face Qwen3Config or a lean_checkpoint.Qwen3Settings."""
        if c is None or getattr(c, "model_type", None) != "qwen3":
            return False
        rope = getattr(c, "rope_parameters", None) or {"rope_type": "default"}
        return (rope.get("rope_type", "default") == "default" and not c.attention_bias
                and not getattr(c, "attention_dropout", 0.0) and not getattr(c, "use_sliding_window", False)
                and c.hidden_act == "silu"
                and all(t == "full_attention" for t in (getattr(c, "layer_types", None) or ["full_attention"])))

    def __init__(self, model, max_positions: int | None = None):
        if not self.supports(model):
            raise ValueError(f"LeanQwen3 does not support {type(model).__name__} with this config")
        c = model.config
        self.model = model
        self.heads, self.kv_heads = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.eps = c.rms_norm_eps
        self.scale = self.head_dim ** -0.5
        theta = (getattr(c, "rope_parameters", None) or {}).get("rope_theta", getattr(c, "rope_theta", 10000.0))
        positions = max_positions or c.max_position_embeddings
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float) / self.head_dim))
        freqs = torch.arange(positions, dtype=torch.float)[:, None] * inv_freq[None]  # [P, D/2]
        device = next(model.parameters()).device
        dtype = next(model.parameters()).dtype
        # x*cos + rotate_half(x)*sin, with rotate_half(x) = (-x2, x1) = (x2, x1) * (-1, +1): sign folded into sin
        self.cos = torch.cat([freqs, freqs], -1).cos().to(device, dtype)
        self.sin = torch.cat([-freqs, freqs], -1).sin().to(device, dtype)

    # ---- weights (views or cheap concatenations of the module's parameters) ----------------
    def _layer_weights(self, layer):
        a, m = layer.self_attn, layer.mlp
        qk_norm = torch.cat([a.q_norm.weight.expand(self.heads, -1), a.k_norm.weight.expand(self.kv_heads, -1)])
        return {
            "ln1": layer.input_layernorm.weight, "ln2": layer.post_attention_layernorm.weight,
            "qkv": torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]), "qk_norm": qk_norm,
            "o": a.o_proj.weight, "gate_up": torch.cat([m.gate_proj.weight, m.up_proj.weight]),
            "down": m.down_proj.weight,
        }

    def weights(self) -> list[dict]:
        """Fused per-layer weights; build once per no-grad decode, or per training forward."""
        return [self._layer_weights(layer) for layer in self.model.model.layers]

    # ---- building blocks -----------------------------------------------------------------
    def rope(self, positions):
        """cos, sin tables [N, T, 1, D] for positions [N, T]."""
        return self.cos[positions][:, :, None], self.sin[positions][:, :, None]

    def _qkv(self, w, h, cos, sin):
        """h [N, T, C] -> q [N, T, H, D], k and v [N, T, KV, D], normed and rotated."""
        n, t, _ = h.shape
        qkv = F.linear(h, w["qkv"]).view(n, t, self.heads + 2 * self.kv_heads, self.head_dim)
        qk = F.rms_norm(qkv[:, :, :self.heads + self.kv_heads], (self.head_dim,), eps=self.eps) * w["qk_norm"]
        half = self.head_dim // 2
        qk = qk * cos + torch.cat([qk[..., half:], qk[..., :half]], -1) * sin
        return qk[:, :, :self.heads], qk[:, :, self.heads:], qkv[:, :, self.heads + self.kv_heads:]

    def _embed(self, ids):
        embed = self.model.model.embed_tokens  # padding_idx (if any) gets no gradient, as in the module
        return F.embedding(ids, embed.weight, embed.padding_idx)

    def _norm(self, x, weight):
        return F.rms_norm(x, (x.shape[-1],), weight, self.eps)

    def _mlp(self, w, x):
        gate, up = F.linear(self._norm(x, w["ln2"]), w["gate_up"]).chunk(2, -1)
        return x + F.linear(F.silu(gate) * up, w["down"])

    def head(self, h):
        """Final norm + language-model head: hidden [..., C] -> logits [..., V]."""
        h = self._norm(h, self.model.model.norm.weight)
        return F.linear(h, self.model.lm_head.weight)

    # ---- full sequences (prefill, scoring) -------------------------------------------------
    @staticmethod
    def sequence_bias(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Additive [N, 1, T, T] bias: causal, padding keys masked, each position sees itself."""
        t = mask.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool, device=mask.device).tril()
        allowed = (causal & mask[:, None, :].bool()) | torch.eye(t, dtype=torch.bool, device=mask.device)
        return torch.zeros(allowed.shape, dtype=dtype, device=mask.device).masked_fill(~allowed, NEG_INF)[:, None]

    def hidden(self, ids, mask, positions, cache: "KVCache | None" = None, weights: list[dict] | None = None,
               cache_rows: torch.Tensor | None = None):
        """Final hidden states [N, T, C] of whole sequences.

        With ``cache``, keys/values go to its prefix; cache row i takes sequence ``cache_rows[i]``
        (several cache rows may share one prefilled prompt).
        """
        weights = weights or self.weights()
        x = self._embed(ids)
        bias = self.sequence_bias(mask, x.dtype)
        groups = self.heads // self.kv_heads
        cos, sin = self.rope(positions)
        for i, w in enumerate(weights):
            q, k, v = self._qkv(w, self._norm(x, w["ln1"]), cos, sin)
            if cache is not None:
                cache.write_prefix(i, k, v, cache_rows)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=self.scale, enable_gqa=groups > 1)
            x = x + F.linear(att.transpose(1, 2).flatten(2), w["o"])
            x = self._mlp(w, x)
        return x

    # ---- scoring without padding, each distinct prompt once (packing.py) --------------------
    def response_logits(self, prompt_ids, prompt_mask, response_ids, response_mask):
        """Logits [N, L, V] predicting each response token, computed on real tokens only.

        Token-wise layers (norms, projections, MLP) run on the packed tokens (distinct prompts
        once, then every response); attention runs per row on a right-aligned layout with a
        plain causal mask, so padding never costs a matmul and the causal kernel skips the
        masked half.
        """
        packed = pack(prompt_ids, prompt_mask, response_ids, response_mask)
        n, width = packed.rows, packed.width
        cos, sin = self.cos[packed.positions][None, :, None], self.sin[packed.positions][None, :, None]
        x = self._embed(packed.ids)  # [R, C]
        groups = self.heads // self.kv_heads
        for w in self.weights():
            q, k, v = self._qkv(w, self._norm(x, w["ln1"])[None], cos, sin)
            qkv = torch.cat([q, k, v], 2)[0]  # [R, H + 2KV, D]
            qkv = torch.cat([qkv, qkv.new_zeros(1, *qkv.shape[1:])])  # row R: the zero slot past a row's end
            q, k, v = qkv[packed.grid].transpose(1, 2).split([self.heads, self.kv_heads, self.kv_heads], 1)
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale, enable_gqa=groups > 1)
            x = x + F.linear(att.transpose(1, 2).reshape(n * width, -1)[packed.owner], w["o"])
            x = self._mlp(w, x)
        return self.head(x[packed.predictor])

    # ---- one decoding step over the cache --------------------------------------------------
    def decode(self, weights, token, positions, cache: "KVCache"):
        """Logits [N, V] for one new token per row; its k/v go to cache slot ``cache.length``."""
        n = token.shape[0]
        x = self._embed(token[:, None])  # [N, 1, C]
        groups = self.heads // self.kv_heads
        slot = cache.length
        bias = cache.bias[:, :, :slot + 1]  # [N * KV, 1, S]
        cos, sin = self.rope(positions[:, None])
        for i, w in enumerate(weights):
            q, k, v = self._qkv(w, self._norm(x, w["ln1"]), cos, sin)
            keys, values = cache.append(i, slot, k, v)  # [N * KV, S, D]
            q = q.reshape(n * self.kv_heads, groups, self.head_dim)  # head h uses kv head h // groups
            scores = torch.baddbmm(bias, q, keys.transpose(1, 2), alpha=self.scale)  # [N * KV, G, S]
            att = torch.bmm(scores.softmax(-1), values)
            x = x + F.linear(att.view(n, 1, -1), w["o"])
            x = self._mlp(w, x)
        cache.length = slot + 1
        return self.head(x[:, 0])


class KVCache:
    """Preallocated keys/values [layers][N * KV, capacity, D] and the additive key-padding bias."""

    def __init__(self, lean: LeanQwen3, n: int, capacity: int, prompt_mask: torch.Tensor, dtype, device):
        self.n, self.kv_heads = n, lean.kv_heads
        shape = (n * lean.kv_heads, capacity, lean.head_dim)
        layers = len(lean.model.model.layers)
        self.keys = [torch.empty(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.values = [torch.empty(shape, dtype=dtype, device=device) for _ in range(layers)]
        bias = torch.zeros((n, capacity), dtype=dtype, device=device)
        bias[:, :prompt_mask.shape[1]].masked_fill_(~prompt_mask.bool(), NEG_INF)
        self.bias = bias.repeat_interleave(lean.kv_heads, 0)[:, None]  # [N * KV, 1, capacity]
        self.length = prompt_mask.shape[1]

    def _rows(self, t):
        """[N, T, KV, D] -> [N * KV, T, D]"""
        return t.transpose(1, 2).reshape(self.n * self.kv_heads, t.shape[1], t.shape[3])

    def write_prefix(self, layer: int, k, v, rows: torch.Tensor | None = None) -> None:
        """k, v [M, T, KV, D] of prefilled sequences; cache row i gets sequence rows[i] (default i)."""
        if rows is not None:
            k, v = k[rows], v[rows]
        t = k.shape[1]
        self.keys[layer][:, :t] = self._rows(k)
        self.values[layer][:, :t] = self._rows(v)

    def keep_rows(self, rows: torch.Tensor) -> None:
        """Keep only the batch rows ``rows`` (finished sequences leave the decode batch)."""
        kv_rows = (rows[:, None] * self.kv_heads + torch.arange(self.kv_heads, device=rows.device)).flatten()
        used = self.length
        for layer in range(len(self.keys)):
            for store in (self.keys, self.values):
                old = store[layer]
                new = old.new_empty((len(kv_rows), *old.shape[1:]))
                new[:, :used] = old[kv_rows, :used]
                store[layer] = new
        self.bias = self.bias[kv_rows]
        self.n = len(rows)

    def append(self, layer: int, slot: int, k, v):
        self.keys[layer][:, slot] = k.reshape(-1, k.shape[-1])
        self.values[layer][:, slot] = v.reshape(-1, v.shape[-1])
        return self.keys[layer][:, :slot + 1], self.values[layer][:, :slot + 1]
