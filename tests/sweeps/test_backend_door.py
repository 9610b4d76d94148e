"""Backends behind one door: the generic packages name no trainer backend, they ask trainers/backends.py.

* no module of sweeps/, evaluators/, trial_eval/ or dashboards/ imports a backend's package
  (trainers.local, trainers.verl_backend) or compares a config's backend to a backend's name
  (``cfg.backend == "verl"``, ``data.get("backend") in ("local", ...)``): read with ``ast``;
* the sweep hooks give their real values: the verl placement hook's nnodes x n_gpus_per_node GPUs,
  ``--smoke`` of a verl spec (one node x one GPU), resources resolved and checked, paths made absolute,
  the worker environment, and the local backend's (its slot holds its GPUs, no smoke additions);
* a backend the registry does not ship gets the same treatment from one entry.

    .venv/bin/python -m pytest -q tests/sweeps/test_backend_door.py
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from contract.errors import ConfigError
from trainers import backends
from trainers.backends import BACKENDS, Backend, backend_names, get_backend
from sweep_testlib import placement_spec_file

REPO = Path(__file__).resolve().parents[2]
GENERIC = ("sweeps", "evaluators", "trial_eval", "dashboards")
PACKAGES = tuple(b.train.__module__.rsplit(".", 1)[0] for b in BACKENDS.values())  # trainers.local, ...


def _mentions_backend(node: ast.AST) -> bool:
    """``x.backend``, ``x["backend"]`` or ``x.get("backend", ...)`` inside ``node``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr == "backend":
            return True
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) and sub.slice.value == "backend":
            return True
        if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "get" and sub.args
                and isinstance(sub.args[0], ast.Constant) and sub.args[0].value == "backend"):
            return True
    return False


def _names_a_backend(node: ast.AST) -> bool:
    return any(isinstance(s, ast.Constant) and s.value in backend_names() for s in ast.walk(node))


def _leaks(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            targets = [f"{node.module}.{a.name}" for a in node.names] if node.module else []
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_mentions_backend(o) for o in operands) and any(_names_a_backend(o) for o in operands):
                found.append(f"{where}:{node.lineno} compares a backend to a name: "
                             f"{ast.unparse(node)}")
            continue
        else:
            continue
        for target in targets:
            if any(target == p or target.startswith(p + ".") for p in PACKAGES):
                found.append(f"{where}:{node.lineno} imports {target}")
    return found


def test_generic_packages_name_no_backend():
    assert PACKAGES == ("trainers.local", "trainers.verl_backend", "trainers.synthetic")
    leaks = [leak for package in GENERIC for path in sorted((REPO / package).rglob("*.py")) for leak in _leaks(path)]
    assert not leaks, "ask trainers/backends.py instead (a hook):\n" + "\n".join(leaks)


def test_the_check_sees_lazy_imports_and_comparisons(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(cfg, data):\n    from trainers.verl_backend.launch import inherited_env\n"
                   "    import trainers.local.trainer\n    if cfg.backend == 'verl' or data.get('backend') in ('local',):\n"
                   "        return data['backend'] != 'verl'\n    return cfg.eval.backend == 'vllm'\n")
    leaks = _leaks(bad)
    assert [int(leak.split(":")[1].split(" ")[0]) for leak in leaks] == [2, 3, 4, 4, 5], leaks


# ---------------------------------------------------------------- the hooks' real values

def _spec(tmp_path: Path, backend="verl", gpus=0, nnodes=1, per_node=1, extra=""):
    return placement_spec_file(tmp_path, "door", backend=backend, gpus=gpus, max_concurrent=4, nnodes=nnodes,
                               per_node=per_node, extra=extra)


CLUSTER = SimpleNamespace(cpus=64, gpus=16, node_cpus=32, node_gpus=8, where="the Ray cluster at x")


def test_verl_placement_hook_takes_nnodes_times_gpus_per_node(tmp_path):
    from sweeps.specs.load import load_spec

    spec = load_spec(_spec(tmp_path, gpus=8, nnodes=2, per_node=4), cwd=tmp_path)
    place = get_backend("verl").placement
    p = place([t.config for t in spec.trials], spec.resources, spec.max_concurrent, CLUSTER, False, "door.yaml")
    assert p.gpus_per_trial == 8 and p.tune_resources == {"cpu": 1, "gpu": 0} and p.max_concurrent == 2
    assert not backends.slot_holds_gpus("verl") and backends.slot_holds_gpus("local")
    with pytest.raises(ConfigError, match=r"door.yaml: verl.nnodes x verl.n_gpus_per_node: each trial needs 8 GPUs"):
        place([t.config for t in spec.trials], spec.resources, 4, SimpleNamespace(**{**vars(CLUSTER), "gpus": 4}),
              False, "door.yaml")


def test_resources_resolved_and_checked_by_the_trials_backend():
    on_cpu, on_gpus = SimpleNamespace(cpus=1, gpus=0), SimpleNamespace(cpus=1, gpus=2)
    for resources, device in ((on_cpu, "cpu"), (on_gpus, "cuda")):
        data = {"backend": "verl"}
        backends.resolve_resources(data, resources)
        assert data["verl"] == {"device": device}
    explicit, local = {"backend": "verl", "verl": {"device": "cpu"}}, {"backend": "local"}
    backends.resolve_resources(explicit, on_gpus)
    backends.resolve_resources(local, on_gpus)
    assert explicit["verl"] == {"device": "cpu"} and local == {"backend": "local"}

    from trainers.config import TrialConfig

    cfg = TrialConfig.from_dict({"backend": "verl", "verl": {"device": "cuda", "nnodes": 2, "n_gpus_per_node": 2},
                                 "trainer": {"prompts_per_step": 8, "group_size": 2, "updates_per_rollout": 1},
                                 "model": {"path": str(REPO)}})
    backends.check_resources(cfg, SimpleNamespace(cpus=1, gpus=4), "spec.yaml")
    with pytest.raises(ConfigError, match=r"^spec.yaml: resources.gpus: a verl trial takes verl.nnodes x "
                                          r"verl.n_gpus_per_node = 4 GPUs \(placed by verl itself"):
        backends.check_resources(cfg, on_gpus, "spec.yaml")
    backends.check_resources(TrialConfig(), on_gpus, "spec.yaml")  # local: no check


def test_paths_are_made_absolute_in_their_backends_trials(tmp_path):
    local, verl = {"backend": "local"}, {"backend": "verl", "verl": {"cache_dir": "c"}}
    backends.absolute_paths(local, tmp_path)
    backends.absolute_paths(verl, tmp_path)
    assert local == {"backend": "local", "local": {"warm_start": {"cache_dir": str(tmp_path / ".cache/base_models")}}}
    assert verl["verl"] == {"cache_dir": str(tmp_path / "c")}  # and the local section's, as before the hooks:
    assert verl["local"] == {"warm_start": {"cache_dir": str(tmp_path / ".cache/base_models")}}
    wrong = {"backend": "verl", "verl": {"cache_dir": 3}, "local": []}
    backends.absolute_paths(wrong, tmp_path)
    assert wrong == {"backend": "verl", "verl": {"cache_dir": 3}, "local": []}  # for TrialConfig to name


@pytest.mark.slow
def test_smoke_of_a_verl_spec_is_one_node_and_one_gpu(tmp_path, monkeypatch):
    from sweeps.commands.spec_input import load_user_spec

    monkeypatch.chdir(tmp_path)
    on_gpus = load_user_spec(str(_spec(tmp_path, gpus=8, nnodes=2, per_node=4)), [], smoke=True)
    assert on_gpus.resources.gpus == 1 and on_gpus.name == "door_smoke"
    on_cpu = load_user_spec(str(_spec(tmp_path, gpus=0, nnodes=2, per_node=2)), [], smoke=True)
    assert on_cpu.resources.gpus == 0
    for spec in (on_gpus, on_cpu):
        v = spec.trials[0].config.verl
        assert (v.nnodes, v.n_gpus_per_node, v.micro_batch_size_per_gpu) == (1, 1, None)
        assert spec.trials[0].config.trainer.max_new_tokens == 64 and spec.trials[0].config.trainer.steps == 4


def test_the_local_backends_hooks(tmp_path):
    from sweeps.driver.placement import plan
    from sweeps.specs.load import load_spec

    spec = load_spec(_spec(tmp_path, backend="local", gpus=0.5), cwd=tmp_path)
    cfg = spec.trials[0].config
    assert cfg.local.warm_start.cache_dir == str(tmp_path / ".cache/base_models")
    assert cfg.verl.cache_dir == ".cache/verl"  # a local trial's verl section is not its own: left as it is
    assert backends.smoke_overrides([cfg], spec.resources) == []
    p = plan(spec, CLUSTER, local=True)
    assert p.tune_resources == {"cpu": 1, "gpu": 0.5} and p.max_concurrent == 4 and p.gpus_per_trial == 0
    assert get_backend("local").placement is None and get_backend("local").worker_env is None


def test_worker_env_carries_the_backends_switches_only(monkeypatch):
    monkeypatch.setenv("ZOO_VERL_RECORD_PARAMS", "1")
    monkeypatch.setenv("HF_TOKEN", "secret")
    env = backends.worker_env()
    assert env["ZOO_VERL_RECORD_PARAMS"] == "1" and "HF_TOKEN" not in env
    from sweeps.tracking.provenance import PACKAGES

    assert "verl" in PACKAGES and backends.packages() == ("verl",)


def test_a_new_backend_needs_one_registry_entry(tmp_path, monkeypatch):
    from trainers.verl_backend import hooks as verl

    from trainers.sections import SECTIONS, Section

    toy = Backend("toy", verl.train, "a toy", smoke_overrides=verl.smoke_overrides)
    monkeypatch.setitem(BACKENDS, "toy", toy)
    monkeypatch.setitem(SECTIONS, "toy", Section("toy", paths=dict(SECTIONS["verl"].paths)))
    data = {"backend": "toy"}
    backends.absolute_paths(data, tmp_path)
    assert data["toy"] == {"cache_dir": str(tmp_path / ".cache/verl")}
    assert backends.slot_holds_gpus("toy")
    cfg = SimpleNamespace(backend="toy")
    assert backends.smoke_overrides([cfg], SimpleNamespace(gpus=0))[0] == "base.verl.nnodes=1"
