"""Independent pure-Python reference for the objective zoo (plain loops, ``math`` only, no torch).

Written from the paper equations, not from trainers/objectives: DHPO eq. 1-12 and SSPO eq. 1-22.
Each ``ref_<name>`` returns ``(loss, grad, metrics)`` where loss = -J (the surrogate objective),
grad[i][t] = d loss / d log_probs[i][t] (0 on padding) and metrics the logged fractions/means.
Gradients are derived by hand: d r / d log pi = r, d s_{i,t} / d log pi_{i,t} = s_i (DHPO eq. 5),
so a token's gradient is its (modulated) ratio times A times the aggregation weight.
For the objectives with a stop-gradient (STOP_GRADIENT) ``reference(..., frozen=batch)`` evaluates
the stop-gradient parts at ``batch``: the surrogate whose slope is the gradient (finite-difference
checks in test_objectives_golden.py and test_objectives_gradcheck.py).

The golden case (``GOLDEN_INPUTS``, B=3, T=4, right-padded) and the option grid
(``GOLDEN_CASES``) are shared by make_golden.py and test_objectives_golden.py.
"""

from __future__ import annotations

import math

AGGS = ("seq-mean-token-mean", "token-mean")

# ---- the golden case: hand-chosen numbers; None marks padding (the tests fill it with garbage) ----
_OLD = [[-1.2, -0.7, -2.5, -0.3], [-0.9, -1.6, -0.4, None], [-2.0, -0.5, None, None]]
_LOG_RATIO = [[0.1, -0.05, 0.3, 0.0], [-0.3, -0.155, 0.15, None], [-0.4, 0.24, None, None]]
GOLDEN_INPUTS = {
    "old_log_probs": _OLD,
    "log_probs": [[None if o is None else o + d for o, d in zip(ro, rd)] for ro, rd in zip(_OLD, _LOG_RATIO)],
    "advantages": [1.0, -0.5, 0.7],
    "response_mask": [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]],
    "entropy": [[0.2, 1.5, 0.9, 2.4], [0.05, 0.6, 3.0, None], [1.1, 0.4, None, None]],
}


def _cases() -> list[tuple[str, str, dict]]:
    cases = []
    for agg in AGGS:
        a = {"agg": agg}
        cases += [
            (f"grpo/default/{agg}", "grpo", {**a}),
            (f"grpo/clip-higher/{agg}", "grpo", {**a, "eps_high": 0.28}),
            (f"gspo/default/{agg}", "gspo", {**a}),
            (f"gspo/asym/{agg}", "gspo", {**a, "eps_low": 0.2, "eps_high": 0.05}),
            (f"gmpo/default/{agg}", "gmpo", {**a}),
            (f"gmpo/default-logspace/{agg}", "gmpo", {**a, "clip_in_log_space": True}),
            (f"gmpo/tight/{agg}", "gmpo", {**a, "eps_low": 0.15, "eps_high": 0.25}),
            (f"gmpo/tight-logspace/{agg}", "gmpo", {**a, "eps_low": 0.15, "eps_high": 0.25, "clip_in_log_space": True}),
            (f"cispo/default/{agg}", "cispo", {**a}),
            (f"cispo/low0.2/{agg}", "cispo", {**a, "eps_low": 0.2}),
            (f"sapo/default/{agg}", "sapo", {**a}),
            (f"sapo/tau3-4/{agg}", "sapo", {**a, "tau_pos": 4.0, "tau_neg": 3.0}),
        ]
        for gate in ("atanlog", "siglog", "expatan", "expsig", "gumbel"):
            cases.append((f"sspo/{gate}/{agg}", "sspo", {**a, "gate": gate}))
        cases.append((f"sspo/atanlog-tau0.2-0.3/{agg}", "sspo", {**a, "tau_pos": 0.2, "tau_neg": 0.3}))
        for mixing in ("averaged", "entropy"):
            for clip_mode in ("branch", "unified"):
                for norm in ("batch", "sequence"):
                    cases.append((f"dhpo/{mixing}-{clip_mode}-{norm}/{agg}", "dhpo",
                                  {**a, "mixing": mixing, "clip_mode": clip_mode, "entropy_norm": norm}))
        cases.append((f"dhpo/entropy-branch-tightseq/{agg}", "dhpo",
                      {**a, "mixing": "entropy", "eps_low_seq": 0.05, "eps_high_seq": 0.05}))
        cases.append((f"dhpo/averaged-unified-tight/{agg}", "dhpo",
                      {**a, "clip_mode": "unified", "eps_low": 0.05, "eps_high": 0.1}))
    return cases


GOLDEN_CASES = _cases()

# ---- helpers ----


def _valid(mask):
    return [[t for t, v in enumerate(row) if v] for row in mask]


def _token_weights(mask, agg):
    """c[i][t] with loss = sum_{i,t} c * token_loss (DHPO eq. 3 for seq-mean-token-mean)."""
    idx = _valid(mask)
    n_tokens = sum(len(r) for r in idx)
    n_seq = sum(1 for r in idx if r)
    c = [[0.0] * len(row) for row in mask]
    for i, ts in enumerate(idx):
        for t in ts:
            c[i][t] = 1.0 / (n_seq * len(ts)) if agg == "seq-mean-token-mean" else 1.0 / n_tokens
    return c


def _seq_weights(mask, agg):
    """d[i] with loss = sum_i d_i * seq_loss_i: 1/G (paper) or |o_i| / sum |o| (J_i broadcast to tokens)."""
    idx = _valid(mask)
    n_tokens = sum(len(r) for r in idx)
    n_seq = sum(1 for r in idx if r)
    return [0.0 if not ts else (1.0 / n_seq if agg == "seq-mean-token-mean" else len(ts) / n_tokens) for ts in idx]


def _clip(x, lo, hi):
    return min(max(x, lo), hi)


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def _common(inp):
    mask, lp, old = inp["response_mask"], inp["log_probs"], inp["old_log_probs"]
    idx = _valid(mask)
    u = [[lp[i][t] - old[i][t] if mask[i][t] else None for t in range(len(mask[i]))] for i in range(len(mask))]
    n = sum(len(r) for r in idx)
    metrics = {
        "actor/ratio_mean": sum(math.exp(u[i][t]) for i, ts in enumerate(idx) for t in ts) / n,
        "actor/ppo_kl": sum(-u[i][t] for i, ts in enumerate(idx) for t in ts) / n,
    }
    return idx, u, n, metrics


def _zeros(mask):
    return [[0.0] * len(row) for row in mask]


# ---- the objectives ----


def ref_grpo(inp, eps_low=0.2, eps_high=0.2, agg="seq-mean-token-mean"):
    """DHPO eq. 3: min(r A, clip(r, 1-eps_low, 1+eps_high) A); the clipped branch has no gradient."""
    idx, u, n, m = _common(inp)
    c, adv = _token_weights(inp["response_mask"], agg), inp["advantages"]
    lo, hi = 1 - eps_low, 1 + eps_high
    loss, grad, k_hi, k_lo = 0.0, _zeros(inp["response_mask"]), 0, 0
    for i, ts in enumerate(idx):
        A = adv[i]
        for t in ts:
            r = math.exp(u[i][t])
            unclipped, clipped = r * A, _clip(r, lo, hi) * A
            loss -= c[i][t] * min(unclipped, clipped)
            grad[i][t] = -c[i][t] * (0.0 if clipped < unclipped else r * A)
            k_hi += A > 0 and r > hi
            k_lo += A < 0 and r < lo
    m.update({"actor/pg_clipfrac": (k_hi + k_lo) / n, "actor/pg_clipfrac_high": k_hi / n, "actor/pg_clipfrac_low": k_lo / n})
    return loss, grad, m


def _seq_ratios(inp, frozen):
    """s_{i,t} of DHPO eq. 5, sg[s_i] * pi(o_{i,t}) / sg[pi(o_{i,t})], with the stop-gradient
    parts evaluated at ``frozen`` (default ``inp``: then every s_{i,t} is exactly s_i of eq. 4)."""
    base = inp if frozen is None else frozen
    idx, u_sg, lp, lp_sg = _valid(inp["response_mask"]), _common(base)[1], inp["log_probs"], base["log_probs"]
    out = _zeros(inp["response_mask"])
    for i, ts in enumerate(idx):
        if ts:
            s_sg = math.exp(sum(u_sg[i][t] for t in ts) / len(ts))  # sg[s_i], eq. 4
            for t in ts:
                out[i][t] = s_sg * math.exp(lp[i][t] - lp_sg[i][t])
    return out


def ref_gspo(inp, eps_low=3e-4, eps_high=4e-4, agg="seq-mean-token-mean", frozen=None):
    """DHPO eq. 4-6 with the token-wise s_{i,t} of eq. 5 (value s_i, gradient s_i d log pi).

    ``frozen``: the batch at which sg[s_i] and sg[pi] of eq. 5 are evaluated (default ``inp``).
    """
    idx, u, n, m = _common(inp)
    c, adv = _token_weights(inp["response_mask"], agg), inp["advantages"]
    s_tok = _seq_ratios(inp, frozen)
    lo, hi = 1 - eps_low, 1 + eps_high
    loss, grad, k_hi, k_lo = 0.0, _zeros(inp["response_mask"]), 0, 0
    for i, ts in enumerate(idx):
        if not ts:
            continue
        A = adv[i]
        s = math.exp(sum(u[i][t] for t in ts) / len(ts))  # eq. 4 (for the clip fractions)
        for t in ts:
            unclipped, clipped = s_tok[i][t] * A, _clip(s_tok[i][t], lo, hi) * A
            loss -= c[i][t] * min(unclipped, clipped)
            grad[i][t] = -c[i][t] * (0.0 if clipped < unclipped else s_tok[i][t] * A)
        k_hi += len(ts) * (A > 0 and s > hi)
        k_lo += len(ts) * (A < 0 and s < lo)
    m.update({"actor/pg_clipfrac": (k_hi + k_lo) / n, "actor/pg_clipfrac_high": k_hi / n,
              "actor/pg_clipfrac_low": k_lo / n, "actor/clipfrac_seq": (k_hi + k_lo) / n})
    return loss, grad, m


def ref_gmpo(inp, eps_low=0.4, eps_high=0.4, clip_in_log_space=False, agg="seq-mean-token-mean"):
    """SSPO eq. 7: [prod_t f_Clip(r; A)]^(1/|o|) A, f_Clip of SSPO eq. 1, as a plain product."""
    idx, u, n, m = _common(inp)
    d, adv = _seq_weights(inp["response_mask"], agg), inp["advantages"]
    if clip_in_log_space:
        lo, hi = math.exp(-eps_low), math.exp(eps_high)
    else:
        lo, hi = 1 - eps_low, 1 + eps_high
    loss, grad, k_hi, k_lo, geo_sum = 0.0, _zeros(inp["response_mask"]), 0, 0, 0.0
    for i, ts in enumerate(idx):
        if not ts:
            continue
        A, prod, active = adv[i], 1.0, {}
        for t in ts:
            r = math.exp(u[i][t])
            f = min(r, hi) if A > 0 else max(r, lo)  # eq. 1
            active[t] = f == r
            prod *= abs(f)
            k_hi += A > 0 and r > hi
            k_lo += A < 0 and r < lo
        geo = prod ** (1.0 / len(ts))
        geo_sum += geo
        loss -= d[i] * geo * A
        for t in ts:  # d geo / d log pi_t = geo / |o| where f_Clip passes r through
            grad[i][t] = -d[i] * geo * A / len(ts) * active[t]
    n_seq = sum(1 for ts in idx if ts)
    m.update({"actor/pg_clipfrac": (k_hi + k_lo) / n, "actor/pg_clipfrac_high": k_hi / n,
              "actor/pg_clipfrac_low": k_lo / n, "actor/seq_ratio_mean": geo_sum / n_seq})
    return loss, grad, m


def ref_cispo(inp, eps_low=10.0, eps_high=0.2, agg="seq-mean-token-mean", frozen=None):
    """MiniMax-M1: sg[clip(r)] A log pi; every token keeps the gradient clip(r) A.

    ``frozen``: the batch at which the stop-gradient weight sg[clip(r)] is evaluated (default
    ``inp``); with it the loss is the surrogate whose slope in log pi is the gradient above.
    """
    idx, u, n, m = _common(inp)
    u_sg = u if frozen is None else _common(frozen)[1]
    c, adv, lp = _token_weights(inp["response_mask"], agg), inp["advantages"], inp["log_probs"]
    lo, hi = 1 - eps_low, 1 + eps_high
    loss, grad, k_hi, k_lo = 0.0, _zeros(inp["response_mask"]), 0, 0
    for i, ts in enumerate(idx):
        for t in ts:
            r = math.exp(u[i][t])
            weight = _clip(math.exp(u_sg[i][t]), lo, hi)  # sg[clip(r)]
            loss -= c[i][t] * weight * adv[i] * lp[i][t]
            grad[i][t] = -c[i][t] * weight * adv[i]
            k_hi += r > hi
            k_lo += r < lo
    m.update({"actor/pg_clipfrac": (k_hi + k_lo) / n, "actor/pg_clipfrac_high": k_hi / n, "actor/pg_clipfrac_low": k_lo / n})
    return loss, grad, m


def ref_sapo(inp, tau_pos=1.0, tau_neg=1.05, agg="seq-mean-token-mean"):
    """SSPO eq. 8-10 (f_Soft = sigma(tau (r-1)) 4 / tau) and eq. 12-13 (gradient f_Soft'(r) r)."""
    idx, u, n, m = _common(inp)
    c, adv = _token_weights(inp["response_mask"], agg), inp["advantages"]
    loss, grad, gate_w = 0.0, _zeros(inp["response_mask"]), 0.0
    for i, ts in enumerate(idx):
        A = adv[i]
        tau = tau_pos if A > 0 else tau_neg  # eq. 10
        for t in ts:
            r = math.exp(u[i][t])
            g = _sigmoid(tau * (r - 1))
            loss -= c[i][t] * g * 4 / tau * A
            grad[i][t] = -c[i][t] * 4 * g * (1 - g) * r * A
            gate_w += 4 * g * (1 - g) * r
    m["actor/gate_weight"] = gate_w / n
    return loss, grad, m


def sspo_gate(gate, rho, tau):
    """(f(rho), w(rho) = f'(rho) rho / f(rho)) of SSPO eq. 18-22, written in rho as in the paper."""
    if gate == "expsig":  # eq. 18
        s = _sigmoid((rho - 1) / tau)
        return math.exp(4 * tau * s - 2 * tau), 4 * s * (1 - s) * rho
    if gate == "expatan":  # eq. 19
        return math.exp(tau * math.atan((rho - 1) / tau)), rho / (1 + ((rho - 1) / tau) ** 2)
    if gate == "gumbel":  # eq. 20
        return math.exp(-math.exp(-(rho - 1)) + 1), math.exp(-(rho - 1)) * rho
    if gate == "atanlog":  # eq. 21 (= eq. 15); w is eq. 16
        return math.exp(tau * math.atan(math.log(rho) / tau)), 1 / (1 + (math.log(rho) / tau) ** 2)
    if gate == "siglog":  # eq. 22
        s = _sigmoid(math.log(rho) / tau)
        return math.exp(4 * tau * s - 2 * tau), 4 * s * (1 - s)
    raise ValueError(gate)


def ref_sspo(inp, gate="atanlog", tau_pos=0.5, tau_neg=0.6, agg="seq-mean-token-mean"):
    """SSPO eq. 11/17 as a plain product; gradient of eq. 14: geo * A * 1/|o| * w(rho) per token."""
    idx, u, n, m = _common(inp)
    d, adv = _seq_weights(inp["response_mask"], agg), inp["advantages"]
    loss, grad, w_sum, geo_sum = 0.0, _zeros(inp["response_mask"]), 0.0, 0.0
    for i, ts in enumerate(idx):
        if not ts:
            continue
        A = adv[i]
        tau = tau_pos if A > 0 else tau_neg
        prod, ws = 1.0, {}
        for t in ts:
            f, ws[t] = sspo_gate(gate, math.exp(u[i][t]), tau)
            prod *= f
            w_sum += ws[t]
        geo = prod ** (1.0 / len(ts))
        geo_sum += geo
        loss -= d[i] * geo * A
        for t in ts:
            grad[i][t] = -d[i] * geo * A / len(ts) * ws[t]
    n_seq = sum(1 for ts in idx if ts)
    m.update({"actor/gate_weight": w_sum / n, "actor/seq_ratio_mean": geo_sum / n_seq})
    return loss, grad, m


def dhpo_weights(inp, mixing, entropy_norm):
    """w_{i,t} (DHPO eq. 10): 0.5, or min-max normalised entropy over the batch or each response."""
    idx, ent = _valid(inp["response_mask"]), inp["entropy"]
    w = _zeros(inp["response_mask"])
    if mixing == "averaged":
        scopes = [[(i, t) for i, ts in enumerate(idx) for t in ts]]
    elif entropy_norm == "batch":
        scopes = [[(i, t) for i, ts in enumerate(idx) for t in ts]]
    else:
        scopes = [[(i, t) for t in ts] for i, ts in enumerate(idx)]
    for scope in scopes:
        if not scope:
            continue
        hs = [ent[i][t] for i, t in scope]
        lo, hi = min(hs), max(hs)
        for i, t in scope:
            w[i][t] = 0.5 if mixing == "averaged" or hi - lo <= 1e-12 else (ent[i][t] - lo) / (hi - lo)
    return w


def ref_dhpo(inp, mixing="averaged", clip_mode="branch", entropy_norm="batch", eps_low_token=0.2,
             eps_high_token=0.28, eps_low_seq=0.2, eps_high_seq=0.28, eps_low=0.2, eps_high=0.28,
             agg="seq-mean-token-mean", frozen=None):
    """DHPO eq. 7-11; gradient eq. 12: m A d log pi where the unclipped term wins the min.

    ``frozen``: the batch at which sg[s_i] and sg[pi] of eq. 5 are evaluated (default ``inp``).
    """
    idx, u, n, m = _common(inp)
    c, adv = _token_weights(inp["response_mask"], agg), inp["advantages"]
    w = dhpo_weights(inp, mixing, entropy_norm)
    s_tok = _seq_ratios(inp, frozen)
    lo_t, hi_t, lo_s, hi_s = 1 - eps_low_token, 1 + eps_high_token, 1 - eps_low_seq, 1 + eps_high_seq
    lo_u, hi_u = 1 - eps_low, 1 + eps_high
    loss, grad = 0.0, _zeros(inp["response_mask"])
    k = {"pg": 0, "tok_hi": 0, "tok_lo": 0, "seq_hi": 0, "seq_lo": 0, "u_hi": 0, "u_lo": 0}
    w_sum = mix_sum = 0.0
    for i, ts in enumerate(idx):
        if not ts:
            continue
        A = adv[i]
        for t in ts:
            r, wt, s = math.exp(u[i][t]), w[i][t], s_tok[i][t]
            mix = wt * r + (1 - wt) * s  # eq. 8
            if clip_mode == "branch":  # eq. 11
                mix_c = wt * _clip(r, lo_t, hi_t) + (1 - wt) * _clip(s, lo_s, hi_s)
                dmix_c = wt * r * (lo_t <= r <= hi_t) + (1 - wt) * s * (lo_s <= s <= hi_s)
            else:
                mix_c = _clip(mix, lo_u, hi_u)
                dmix_c = mix * (lo_u <= mix <= hi_u)
            clipped_wins = mix_c * A < mix * A
            loss -= c[i][t] * min(mix * A, mix_c * A)
            grad[i][t] = -c[i][t] * A * (dmix_c if clipped_wins else mix)
            k["pg"] += clipped_wins
            k["tok_hi"] += A > 0 and r > hi_t
            k["tok_lo"] += A < 0 and r < lo_t
            k["seq_hi"] += A > 0 and s > hi_s
            k["seq_lo"] += A < 0 and s < lo_s
            k["u_hi"] += A > 0 and mix > hi_u
            k["u_lo"] += A < 0 and mix < lo_u
            w_sum += wt
            mix_sum += mix
    m.update({"actor/pg_clipfrac": k["pg"] / n, "actor/mix_weight": w_sum / n, "actor/mixed_ratio_mean": mix_sum / n})
    if clip_mode == "branch":
        for name, key in (("actor/clipfrac_token", "tok"), ("actor/clipfrac_seq", "seq")):
            m[name] = (k[key + "_hi"] + k[key + "_lo"]) / n
            m[name + "_high"], m[name + "_low"] = k[key + "_hi"] / n, k[key + "_lo"] / n
    else:
        m["actor/pg_clipfrac_high"], m["actor/pg_clipfrac_low"] = k["u_hi"] / n, k["u_lo"] / n
    return loss, grad, m


REFERENCES = {"grpo": ref_grpo, "gspo": ref_gspo, "gmpo": ref_gmpo, "cispo": ref_cispo,
              "sapo": ref_sapo, "sspo": ref_sspo, "dhpo": ref_dhpo}


# Objectives with a stop-gradient inside their loss value: their gradient (the one the papers
# define and the library's autograd gives) is not the slope of their loss value, but the slope of
# the value with the stop-gradient parts held at the evaluation point (``frozen=``).
#   cispo: sg[clip(r)] is a constant weight on log pi (MiniMax-M1);
#   gspo, dhpo: s_{i,t} = sg[s_i] pi(o_{i,t}) / sg[pi(o_{i,t})] (DHPO eq. 5) moves only with its own token.
STOP_GRADIENT = ("cispo", "gspo", "dhpo")


def reference(name: str, params: dict, inp: dict = GOLDEN_INPUTS, frozen: dict | None = None):
    """(loss, grad, metrics) of objective ``name`` with ``params`` on the nested-list batch ``inp``.

    ``frozen`` (STOP_GRADIENT objectives only): evaluate the stop-gradient parts at this batch.
    """
    if frozen is None:
        return REFERENCES[name](inp, **params)
    if name not in STOP_GRADIENT:
        raise ValueError(f"{name} has no stop-gradient part to freeze")
    return REFERENCES[name](inp, **params, frozen=frozen)
