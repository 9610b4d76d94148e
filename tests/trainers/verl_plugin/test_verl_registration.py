"""The verl plug-in: zoo_* losses in verl's registry, loadable via VERL_USE_EXTERNAL_MODULES, equal to
verl's own losses where verl has one (values and gradients), and to our objectives called directly.

    python -m pytest tests/trainers/verl_plugin -q

verl 0.9.1 must be installed (CI does): pip install -c constraints.txt verl==0.9.1 --no-deps and
"tensordict>=0.8.0,<=0.10.0,!=0.9.0" codetiming datasets.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import verl  # noqa: F401  (no importorskip: CI installs verl, a missing verl must fail)
from omegaconf import OmegaConf
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, get_policy_loss_fn
from verl.workers.config import FSDPActorConfig

import trainers.verl_plugin as plugin
from trainers.objectives import OBJECTIVES, PolicyBatch, get_objective

REPO = Path(__file__).resolve().parents[3]
AGGS = ("token-mean", "seq-mean-token-mean")
B, T = 8, 32


# ---------------------------------------------------------------- helpers


def make_inputs(seed=0, sigma=0.3, empty_row=False, garbage_padding=True):
    """float64 [B, T] verl-style inputs: right padding, per-token advantages (A_i broadcast, 0 on padding)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(4, T + 1, (B,), generator=g)
    lengths[0] = T  # one full row, the others padded
    if empty_row:
        lengths[1] = 0
    mask = torch.arange(T)[None, :] < lengths[:, None]
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3.0 - 0.05
    lp = old + (sigma * torch.randn(B, T, generator=g, dtype=torch.float64)).clamp(-1.0, 1.0)
    if garbage_padding:  # finite garbage: verl multiplies by the mask, so nan would leak there
        lp = torch.where(mask, lp, torch.full_like(lp, -7.0))
    adv = torch.randn(B, 1, generator=g, dtype=torch.float64).expand(B, T) * mask
    entropy = torch.rand(B, T, generator=g, dtype=torch.float64) * 2.0
    weights = torch.rand(B, T, generator=g, dtype=torch.float64) * 1.5 + 0.1
    return dict(lp=lp, old=old, adv=adv, mask=mask, entropy=entropy, weights=weights)


def actor_config(**kwargs):
    kwargs.setdefault("rollout_n", 4)
    kwargs.setdefault("ppo_micro_batch_size_per_gpu", B)
    return FSDPActorConfig(**kwargs)


def call(loss_name, x, agg, config, weights=None, **extra):
    """(loss, grad wrt log_prob, metrics) of a registered loss on a fresh leaf."""
    lp = x["lp"].clone().requires_grad_(True)
    loss, metrics = get_policy_loss_fn(loss_name)(
        old_log_prob=x["old"], log_prob=lp, advantages=x["adv"], response_mask=x["mask"],
        loss_agg_mode=agg, config=config, rollout_is_weights=weights, **extra,
    )
    (grad,) = torch.autograd.grad(loss, lp)
    return loss.detach(), grad, metrics


def assert_same(a, b):
    torch.testing.assert_close(a[0], b[0])  # loss
    torch.testing.assert_close(a[1], b[1])  # gradient wrt log_prob


# ---------------------------------------------------------------- (a) registration


def test_all_zoo_keys_registered_and_callable():
    expected = {f"zoo_{name}" for name in OBJECTIVES}
    assert expected >= {"zoo_grpo", "zoo_gspo", "zoo_gmpo", "zoo_cispo", "zoo_sapo", "zoo_sspo", "zoo_dhpo"}
    assert expected <= set(POLICY_LOSS_REGISTRY)
    verl_params = list(inspect.signature(POLICY_LOSS_REGISTRY["vanilla"]).parameters)
    x = make_inputs()
    for key in sorted(expected):
        fn = get_policy_loss_fn(key)
        assert list(inspect.signature(fn).parameters)[:7] == verl_params
        extra = {"entropy": x["entropy"]} if key == "zoo_dhpo" else {}
        loss, grad, metrics = call(key, x, "token-mean", actor_config(), **extra)
        assert loss.dim() == 0 and torch.isfinite(loss) and torch.isfinite(grad).all()
        assert "actor/ppo_kl" in metrics and all(isinstance(v, float) for v in metrics.values())


# ---------------------------------------------------------------- (b) VERL_USE_EXTERNAL_MODULES


def _python(code, **env):
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=full_env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_loads_through_verl_use_external_modules():
    code = (
        "import sys, verl\n"
        "from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY\n"
        "assert 'trainers.verl_plugin' in sys.modules\n"
        "print(sorted(k for k in POLICY_LOSS_REGISTRY if k.startswith('zoo_')))\n"
    )
    out = _python(code, VERL_USE_EXTERNAL_MODULES="trainers.verl_plugin")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(sorted(f"zoo_{n}" for n in OBJECTIVES))
    # and without the variable nothing is registered: the keys really come from the plug-in
    out = _python(code.replace("assert 'trainers.verl_plugin' in sys.modules\n", ""), VERL_USE_EXTERNAL_MODULES="")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_import_without_verl_names_the_install_command():
    out = _python("import sys; sys.modules['verl'] = None\nimport trainers.verl_plugin")
    assert out.returncode != 0
    assert "ImportError" in out.stderr and "pip install -c constraints.txt verl==0.9.1 --no-deps" in out.stderr
    assert "tensordict" in out.stderr and "codetiming" in out.stderr


# ---------------------------------------------------------------- (c) parity with verl's own losses


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("eps", [(3e-4, 4e-4), (0.02, 0.03)])
@pytest.mark.parametrize("weighted", [False, True])
def test_gspo_equals_verl_gspo(agg, eps, weighted):
    x = make_inputs(seed=1)
    cfg = actor_config(clip_ratio_low=eps[0], clip_ratio_high=eps[1])
    w = x["weights"] if weighted else None
    assert_same(call("zoo_gspo", x, agg, cfg, w), call("gspo", x, agg, cfg, w))


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("eps_low", [10.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cispo_equals_verl_cispo(agg, eps_low, weighted):
    x = make_inputs(seed=2)
    cfg = actor_config(clip_ratio_low=eps_low, clip_ratio_high=0.2)
    w = x["weights"] if weighted else None
    assert_same(call("zoo_cispo", x, agg, cfg, w), call("cispo", x, agg, cfg, w))


@pytest.mark.parametrize("taus", [(1.0, 1.05), (0.5, 2.0)])
@pytest.mark.parametrize("weighted", [False, True])
def test_sapo_equals_verl_sapo(taus, weighted):
    x = make_inputs(seed=3, sigma=0.6)
    cfg = actor_config(tau_pos=taus[0], tau_neg=taus[1])
    w = x["weights"] if weighted else None
    agg = "seq-mean-token-mean"  # the only mode verl's sapo implements
    assert_same(call("zoo_sapo", x, agg, cfg, w), call("sapo", x, agg, cfg, w))


@pytest.mark.parametrize("eps", [(0.4, 0.4), (0.2, 0.3)])
@pytest.mark.parametrize("weighted", [False, True])
def test_gmpo_log_space_equals_verl_geo_mean(eps, weighted):
    x = make_inputs(seed=4)
    cfg = actor_config(clip_ratio_low=eps[0], clip_ratio_high=eps[1], policy_loss={"clip_in_log_space": True})
    w = x["weights"] if weighted else None
    # verl's geo_mean ignores loss_agg_mode: a mean over responses = our seq-mean-token-mean
    ours = call("zoo_gmpo", x, "seq-mean-token-mean", cfg, w)
    theirs = call("geo_mean", x, "token-mean", cfg, w)
    assert_same(ours, theirs)
    assert (theirs[1] == 0).any() and (theirs[1] != 0).any()  # some tokens clipped, some not


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("eps", [(0.2, 0.2), (0.2, 0.28)])
@pytest.mark.parametrize("weighted", [False, True])
def test_grpo_equals_verl_vanilla_when_dual_clip_inactive(agg, eps, weighted):
    x = make_inputs(seed=5)
    cfg = actor_config(clip_ratio_low=eps[0], clip_ratio_high=eps[1])
    assert ((x["lp"] - x["old"]).exp()[x["mask"]] < cfg.clip_ratio_c).all()  # dual clip cannot bind
    w = x["weights"] if weighted else None
    assert_same(call("zoo_grpo", x, agg, cfg, w), call("vanilla", x, agg, cfg, w))


@pytest.mark.parametrize("loss_name,verl_name,cfg_kwargs,agg", [
    ("zoo_grpo", "vanilla", {}, "token-mean"),
    ("zoo_gspo", "gspo", {"clip_ratio_low": 0.02, "clip_ratio_high": 0.03}, "seq-mean-token-mean"),
    ("zoo_cispo", "cispo", {"clip_ratio_low": 10.0}, "token-mean"),
    ("zoo_sapo", "sapo", {}, "seq-mean-token-mean"),
])
def test_global_batch_info_scaling_matches_verl(loss_name, verl_name, cfg_kwargs, agg):
    """Inside verl's actor the loss is a share of the global mean: sum / global count * dp_size."""
    x = make_inputs(seed=6)
    cfg = actor_config(**cfg_kwargs)
    cfg.global_batch_info.update(dp_size=2, batch_num_tokens=int(x["mask"].sum()) * 3, global_batch_size=B * 3)
    ours, theirs = call(loss_name, x, agg, cfg), call(verl_name, x, agg, cfg)
    assert_same(ours, theirs)
    cfg.global_batch_info.clear()
    torch.testing.assert_close(ours[0], call(loss_name, x, agg, cfg)[0] * 2 / 3)


# ---------------------------------------------------------------- documented differences to verl


def test_grpo_differs_from_vanilla_where_dual_clip_binds():
    """verl's vanilla caps the loss of A < 0 tokens at -A * clip_ratio_c when ratio > clip_ratio_c."""
    x = make_inputs(seed=7)
    x["adv"] = -x["adv"].abs()  # all advantages negative
    x["lp"] = x["lp"].clone()
    x["lp"][2, 0] = x["old"][2, 0] + 2.0  # ratio e^2 = 7.4 > clip_ratio_c = 3
    cfg = actor_config()
    ours, theirs = call("zoo_grpo", x, "token-mean", cfg), call("vanilla", x, "token-mean", cfg)
    assert ours[0] > theirs[0]  # ours keeps -A * r, verl caps it at -A * 3
    assert ours[1][2, 0] != 0 and theirs[1][2, 0] == 0  # verl cuts that token's gradient
    other = torch.ones_like(x["mask"]).bool()
    other[2, 0] = False
    torch.testing.assert_close(ours[1][other], theirs[1][other])
    # with the dual clip out of reach they agree again
    wide = actor_config(clip_ratio_c=1e9)
    assert_same(call("zoo_grpo", x, "token-mean", wide), call("vanilla", x, "token-mean", wide))


def test_geo_mean_counts_fully_masked_rows_ours_does_not():
    x = make_inputs(seed=8, empty_row=True)
    cfg = actor_config(clip_ratio_low=0.4, clip_ratio_high=0.4, policy_loss={"clip_in_log_space": True})
    ours = call("zoo_gmpo", x, "seq-mean-token-mean", cfg)
    theirs = call("geo_mean", x, "token-mean", cfg)
    nonempty = int((x["mask"].sum(-1) > 0).sum())
    assert nonempty == B - 1
    torch.testing.assert_close(theirs[0], ours[0] * nonempty / B)  # verl divides by B, ours by B - 1
    torch.testing.assert_close(theirs[1], ours[1] * nonempty / B)


def test_geo_mean_ignores_loss_agg_mode_ours_honours_it():
    x = make_inputs(seed=9)
    cfg = actor_config(clip_ratio_low=0.4, clip_ratio_high=0.4, policy_loss={"clip_in_log_space": True})
    verl_tok, verl_seq = call("geo_mean", x, "token-mean", cfg), call("geo_mean", x, "seq-mean-token-mean", cfg)
    assert_same(verl_tok, verl_seq)
    ours_tok, ours_seq = call("zoo_gmpo", x, "token-mean", cfg), call("zoo_gmpo", x, "seq-mean-token-mean", cfg)
    assert not torch.allclose(ours_tok[0], ours_seq[0])  # token-mean weights J_i by |o_i|
    # and our default clips the ratio, not the log-ratio (the paper's form)
    default = call("zoo_gmpo", x, "seq-mean-token-mean", actor_config(clip_ratio_low=0.4, clip_ratio_high=0.4))
    assert not torch.allclose(default[1], verl_seq[1])


def test_sapo_verl_always_seq_mean_token_mean():
    x = make_inputs(seed=10, sigma=0.6)
    cfg = actor_config()
    verl_tok = call("sapo", x, "token-mean", cfg)
    assert_same(verl_tok, call("zoo_sapo", x, "seq-mean-token-mean", cfg))
    assert not torch.allclose(verl_tok[0], call("zoo_sapo", x, "token-mean", cfg)[0])


def test_gspo_verl_clamps_log_seq_ratio_at_10_ours_at_20():
    x = make_inputs(seed=11)
    x["adv"] = -x["adv"].abs()  # A < 0: the unclipped branch (value s * |A|) is the max
    x["old"] = x["old"].clone()
    x["old"][3] = x["lp"][3] - 12.0  # log s_3 = 12
    cfg = actor_config(clip_ratio_low=0.2, clip_ratio_high=0.2)
    ours, theirs = call("zoo_gspo", x, "seq-mean-token-mean", cfg), call("gspo", x, "seq-mean-token-mean", cfg)
    # verl's clamp caps the value at e^10 and (torch.clamp) zeroes that response's gradient
    assert (theirs[1][3] == 0).all() and (ours[1][3] != 0).any()
    torch.testing.assert_close(ours[1][:3], theirs[1][:3])
    length, adv = x["mask"][3].sum(), x["adv"][3, 0]
    torch.testing.assert_close(ours[0] - theirs[0], -adv * (torch.exp(torch.tensor(12.0, dtype=torch.float64)) - torch.exp(torch.tensor(10.0, dtype=torch.float64))) / B,
                               rtol=1e-6, atol=0)
    assert length > 0


# ---------------------------------------------------------------- (d) same as calling our objective directly


def _direct_cases():
    # every registered objective with its defaults; these with every discrete option instead
    options = {
        "gmpo": [{}, {"clip_in_log_space": True}],
        "sspo": [{"gate": g} for g in ("atanlog", "siglog", "expatan", "expsig", "gumbel")],
        "dhpo": [{"mixing": m, "clip_mode": c, "entropy_norm": n}
                 for m in ("averaged", "entropy") for c in ("branch", "unified") for n in ("batch", "sequence")],
    }
    cases = [(name, params) for name in OBJECTIVES for params in options.get(name, [{}])]
    return [pytest.param(n, p, agg, id="-".join([n, *map(str, p.values()), agg])) for n, p in cases for agg in AGGS]


@pytest.mark.parametrize("name,extra,agg", _direct_cases())
def test_zoo_loss_equals_get_objective(name, extra, agg):
    x = make_inputs(seed=12, garbage_padding=False)
    cfg = actor_config(clip_ratio_low=0.25, clip_ratio_high=0.3, tau_pos=0.5, tau_neg=0.6,
                       policy_loss=plugin.ZooPolicyLossConfig(loss_mode=f"zoo_{name}", **extra))
    params = {**plugin.objective_params(name, cfg), "agg": agg}
    entropy = x["entropy"] if name == "dhpo" else None
    via_verl = call(f"zoo_{name}", x, agg, cfg, entropy=entropy)
    lp = x["lp"].clone().requires_grad_(True)
    loss, metrics = get_objective(name, **params)(PolicyBatch(lp, x["old"], x["adv"], x["mask"], entropy))
    (grad,) = torch.autograd.grad(loss, lp)
    assert_same(via_verl, (loss.detach(), grad))
    assert via_verl[2] == metrics


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_is_weights_enter_per_response_iff_sequence_term(name):
    """ObjectiveSpec.sequence_term decides: geometric mean of the weights per response, else per token."""
    x = make_inputs(seed=14)
    cfg, agg = actor_config(), "seq-mean-token-mean"
    entropy = x["entropy"] if name == "dhpo" else None
    m = x["mask"].to(x["weights"].dtype)
    geo_mean = torch.exp((torch.log(x["weights"] + 1e-10) * m).sum(-1) / (m.sum(-1) + 1e-8))
    folded = x["adv"] * (geo_mean[:, None] if OBJECTIVES[name].sequence_term else x["weights"])
    weighted = call(f"zoo_{name}", x, agg, cfg, x["weights"], entropy=entropy)
    assert_same(weighted, call(f"zoo_{name}", {**x, "adv": folded}, agg, cfg, entropy=entropy))


# ---------------------------------------------------------------- parameter mapping and errors


def test_parameter_mapping_from_actor_config():
    cfg = actor_config(clip_ratio_low=3e-4, clip_ratio_high=4e-4, tau_pos=0.5, tau_neg=0.6,
                       policy_loss=plugin.ZooPolicyLossConfig(gate="siglog", mixing="entropy", eps_high_token=0.3))
    assert plugin.objective_params("gspo", cfg) == {"eps_low": 3e-4, "eps_high": 4e-4}
    assert plugin.objective_params("sspo", cfg) == {"gate": "siglog", "tau_pos": 0.5, "tau_neg": 0.6}
    assert plugin.objective_params("dhpo", cfg) == {"mixing": "entropy", "eps_high_token": 0.3, "eps_low": 3e-4, "eps_high": 4e-4}
    # policy_loss overrides the actor-level field; clip_ratio is the fallback as in verl
    dict_cfg = OmegaConf.create({"clip_ratio": 0.1, "clip_ratio_low": None, "tau_pos": 1.0,
                                 "policy_loss": {"tau_pos": 0.2, "gate": "gumbel"}})
    assert plugin.objective_params("sspo", dict_cfg) == {"gate": "gumbel", "tau_pos": 0.2}
    assert plugin.objective_params("grpo", dict_cfg) == {"eps_low": 0.1, "eps_high": 0.1}  # clip_ratio_high absent too
    assert plugin.objective_params("grpo", None) == {}


def test_zoo_policy_loss_config_through_verl_hydra_instantiation():
    from verl.utils.config import omega_conf_to_dataclass

    node = OmegaConf.create({
        "_target_": "verl.workers.config.FSDPActorConfig", "rollout_n": 4, "ppo_micro_batch_size_per_gpu": 2,
        "policy_loss": {"_target_": "trainers.verl_plugin.ZooPolicyLossConfig", "loss_mode": "zoo_sspo", "gate": "expsig"},
    })
    cfg = omega_conf_to_dataclass(node)
    assert isinstance(cfg.policy_loss, plugin.ZooPolicyLossConfig) and cfg.policy_loss.get("loss_mode") == "zoo_sspo"
    assert plugin.objective_params("sspo", cfg)["gate"] == "expsig"


def test_unsupported_agg_mode_raises():
    x = make_inputs()
    for mode in ("token-sum", "seq-mean-token-sum", "seq-mean-token-sum-norm"):
        with pytest.raises(ValueError, match="loss_agg_mode"):
            call("zoo_grpo", x, mode, actor_config())


def test_invalid_parameter_raises_named_error():
    x = make_inputs()
    with pytest.raises(ValueError, match="gate"):
        call("zoo_sspo", x, "token-mean", actor_config(policy_loss={"gate": "tanh"}))


def test_dhpo_entropy_without_entropy_raises():
    x = make_inputs()
    cfg = actor_config(policy_loss=plugin.ZooPolicyLossConfig(mixing="entropy"))
    with pytest.raises(ValueError, match="ZOO_VERL_FORWARD_ENTROPY"):
        call("zoo_dhpo", x, "token-mean", cfg)
    call("zoo_dhpo", x, "token-mean", actor_config())  # averaged mixing needs no entropy


def test_dp_size_without_global_counts_raises():
    cfg = actor_config()
    cfg.global_batch_info.update(dp_size=2, batch_num_tokens=None, global_batch_size=None)
    with pytest.raises(ValueError, match="batch_num_tokens"):
        call("zoo_grpo", make_inputs(), "token-mean", cfg)


def test_entropy_forwarded_through_verl_ppo_loss():
    """verl's own actor loss (ppo_loss) on un-padded model output; the wrapper forwards the entropy."""
    from tensordict import TensorDict
    from verl.workers.utils import losses

    plugin.enable_entropy_forwarding()
    plugin.enable_entropy_forwarding()  # idempotent
    x = make_inputs(seed=13, garbage_padding=False)
    P = 3  # prompt length
    lengths = x["mask"].sum(-1)
    lp_leaf = x["lp"].clone().requires_grad_(True)

    def unpad(t):  # [B, T] response values -> verl's flat (total_nnz,) model output, shifted by one
        rows = []
        for i in range(B):
            n = int(lengths[i])
            rows.append(torch.cat([t.new_zeros(P - 1), t[i, :n], t.new_zeros(1)]))
        return torch.cat(rows)

    attention = torch.cat([torch.ones(B, P, dtype=torch.long), x["mask"].long()], dim=1)
    data = TensorDict({
        "prompts": torch.ones(B, P, dtype=torch.long), "responses": torch.ones(B, T, dtype=torch.long),
        "attention_mask": attention, "response_mask": x["mask"].long(),
        "old_log_probs": x["old"], "advantages": x["adv"],
    }, batch_size=[B])
    for key, value in {"dp_size": 1, "batch_num_tokens": None, "global_batch_size": None}.items():
        data.set_non_tensor(key, value)
    cfg = actor_config(loss_agg_mode="seq-mean-token-mean",
                       policy_loss=plugin.ZooPolicyLossConfig(loss_mode="zoo_dhpo", mixing="entropy"))
    model_output = {"log_probs": unpad(lp_leaf), "entropy": unpad(x["entropy"])}
    loss, _ = losses.ppo_loss(cfg, model_output, data)
    expected, _ = get_objective("dhpo", mixing="entropy", eps_low=0.2, eps_high=0.2, agg="seq-mean-token-mean")(
        PolicyBatch(x["lp"], x["old"], x["adv"], x["mask"], x["entropy"]))
    torch.testing.assert_close(loss, expected)
    assert torch.autograd.grad(loss, lp_leaf)[0].abs().sum() > 0
    # outside a ppo_loss call nothing is forwarded
    with pytest.raises(ValueError, match="entropy"):
        call("zoo_dhpo", x, "token-mean", cfg)


# ---------------------------------------------------------------- audit record (ZOO_VERL_RECORD_PARAMS)


def _records(path):
    import json

    return [json.loads(line) for line in Path(path).read_text().splitlines()] if Path(path).exists() else []


def test_record_params_writes_the_resolved_params_once_per_loss_and_params(tmp_path, monkeypatch):
    path = tmp_path / "params.jsonl"
    monkeypatch.setenv("ZOO_VERL_RECORD_PARAMS", str(path))
    x = make_inputs(seed=21)
    gspo_cfg = actor_config(clip_ratio_low=3e-4, clip_ratio_high=4e-4)
    sspo_cfg = actor_config(tau_pos=0.5, tau_neg=0.6,
                            policy_loss=plugin.ZooPolicyLossConfig(loss_mode="zoo_sspo", gate="siglog"))
    dhpo_cfg = actor_config(policy_loss=plugin.ZooPolicyLossConfig(
        loss_mode="zoo_dhpo", mixing="entropy", clip_mode="unified", eps_low_token=0.1, eps_high_token=0.3))
    for _ in range(3):  # verl calls the loss every micro-batch: one line each all the same
        call("zoo_gspo", x, "seq-mean-token-mean", gspo_cfg)
        call("zoo_sspo", x, "seq-mean-token-mean", sspo_cfg)
        call("zoo_dhpo", x, "token-mean", dhpo_cfg, entropy=x["entropy"])
    records = _records(path)
    assert [r["loss"] for r in records] == ["zoo_gspo", "zoo_sspo", "zoo_dhpo"]
    assert all(r["pid"] == os.getpid() and r["dp_group_size"] == 1 for r in records)
    gspo, sspo, dhpo = (r["params"] for r in records)
    assert gspo == {"eps_low": 3e-4, "eps_high": 4e-4, "agg": "seq-mean-token-mean"}
    assert sspo == {"gate": "siglog", "tau_pos": 0.5, "tau_neg": 0.6, "agg": "seq-mean-token-mean"}
    assert dhpo["mixing"] == "entropy" and dhpo["clip_mode"] == "unified" and dhpo["agg"] == "token-mean"
    assert (dhpo["eps_low_token"], dhpo["eps_high_token"]) == (0.1, 0.3)
    assert (dhpo["eps_low_seq"], dhpo["eps_high_seq"], dhpo["entropy_norm"]) == (0.2, 0.28, "batch")  # paper defaults
    assert (dhpo["eps_low"], dhpo["eps_high"]) == (0.2, 0.2)  # verl's clip_ratio default
    assert [r["entropy"] for r in records] == [False, False, True]
    # other params (here: the aggregation) are another combination: one more line
    call("zoo_gspo", x, "token-mean", gspo_cfg)
    call("zoo_gspo", x, "token-mean", gspo_cfg)
    records = _records(path)
    assert len(records) == 4 and records[-1]["loss"] == "zoo_gspo" and records[-1]["params"]["agg"] == "token-mean"


def test_record_params_is_opt_in(tmp_path, monkeypatch):
    from trainers.verl_plugin import registry

    monkeypatch.delenv("ZOO_VERL_RECORD_PARAMS", raising=False)
    before = set(registry._RECORDED)
    call("zoo_grpo", make_inputs(seed=22), "token-mean", actor_config(clip_ratio=0.123))
    assert registry._RECORDED == before
    monkeypatch.setenv("ZOO_VERL_RECORD_PARAMS", "")  # empty: off too
    call("zoo_grpo", make_inputs(seed=22), "token-mean", actor_config(clip_ratio=0.123))
    assert registry._RECORDED == before


def test_record_params_notes_missing_entropy_before_raising(tmp_path, monkeypatch):
    path = tmp_path / "params.jsonl"
    monkeypatch.setenv("ZOO_VERL_RECORD_PARAMS", str(path))
    cfg = actor_config(policy_loss=plugin.ZooPolicyLossConfig(mixing="entropy", entropy_norm="sequence"))
    with pytest.raises(ValueError, match="entropy"):
        call("zoo_dhpo", make_inputs(seed=23), "token-mean", cfg)
    (record,) = _records(path)
    assert record["entropy"] is False and record["params"]["entropy_norm"] == "sequence"


@pytest.mark.slow
def test_record_params_from_concurrent_processes_appends_whole_lines(tmp_path):
    path = tmp_path / "params.jsonl"
    code = (
        "import torch, trainers.verl_plugin\n"
        "from verl.trainer.ppo.core_algos import get_policy_loss_fn\n"
        "from verl.workers.config import FSDPActorConfig\n"
        "cfg = FSDPActorConfig(rollout_n=4, ppo_micro_batch_size_per_gpu=2)\n"
        "x = torch.zeros(2, 4, dtype=torch.float64); m = torch.ones(2, 4, dtype=torch.bool)\n"
        "for _ in range(20):\n"
        "    for name in ('zoo_grpo', 'zoo_gspo', 'zoo_gmpo', 'zoo_cispo', 'zoo_sapo', 'zoo_sspo', 'zoo_dhpo'):\n"
        "        get_policy_loss_fn(name)(x, x, x, m, loss_agg_mode='token-mean', config=cfg)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "ZOO_VERL_RECORD_PARAMS": str(path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    records = _records(path)  # every line parses: no interleaving
    assert len(records) == 3 * 7
    assert sorted(p.pid for p in procs) == sorted({r["pid"] for r in records})
    for pid in {r["pid"] for r in records}:
        assert sorted(r["loss"] for r in records if r["pid"] == pid) == sorted(f"zoo_{n}" for n in (
            "grpo", "gspo", "gmpo", "cispo", "sapo", "sspo", "dhpo"))


def test_the_policy_loss_config_carries_every_objective_parameter_verl_has_no_field_for():
    """ZooPolicyLossConfig's own fields are exactly the objectives' parameters that no verl field carries: a new
    parameter of an objective (or a removed one) fails here until the plug-in's config follows."""
    import dataclasses

    from verl.workers.config.actor import PolicyLossConfig

    from trainers.verl_backend.loss_names import ACTOR_FIELDS, AGG_PARAM
    from trainers.verl_plugin.registry import ZooPolicyLossConfig

    ours = {f.name for o in OBJECTIVES.values() for f in dataclasses.fields(o.params_cls)}
    verl_own = {f.name for f in dataclasses.fields(PolicyLossConfig)}
    added = {f.name for f in dataclasses.fields(ZooPolicyLossConfig)} - verl_own
    assert added == ours - set(ACTOR_FIELDS) - {AGG_PARAM} - verl_own
    assert all(f.default is None for f in dataclasses.fields(ZooPolicyLossConfig) if f.name in added)
