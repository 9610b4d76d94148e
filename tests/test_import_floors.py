"""Imports run one way: every package imports only packages on lower floors, and no modules import
each other in a loop.

The floors, low to high (a package may import any package below it, never one above):

    contract     metric names, errors, did-you-mean, environment variables (imports no package of the platform)
    tracking_store  the MLflow store: URIs, clients, the driver lease, a sqlite store's tables
    policy       loading and sampling a policy (the lean Qwen3 forward, lean checkpoints)
    evaluators   tasks, verifier, rewards, benchmarks, generation, scoring, the eval protocol
    trainers     the trainer backends (local, verl) and the objectives
    trial_eval   a trial's checkpoint evaluated on a protocol (checkpoint -> Hugging Face dir)
    dashboards   MLflow -> tables, curves, the report
    sweeps       specs, the Ray Tune runner, tracking, the `sweep` CLI

Inside dashboards/ and sweeps/ the rooms (subpackages) have floors of their own, low to high (ROOMS); a
module at the top of the package (``sweeps/cli.py``, ``dashboards/__main__.py``) is above every room, and
nothing else lives there.

Every ``import`` and ``from ... import`` of every .py file under these packages is read with ``ast``
(those inside functions and under ``if TYPE_CHECKING:`` too: a lazy import still runs one way).
Modules are files; ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else
to ``pkg`` (its ``__init__``). The cycle check is a depth-first search over that module graph.

    .venv/bin/python -m pytest -q tests/test_import_floors.py
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLOORS = ["contract", "tracking_store", "policy", "evaluators", "trainers", "trial_eval", "dashboards", "sweeps"]
LEVEL = {package: i for i, package in enumerate(FLOORS)}
ROOMS = {
    "dashboards": ["model", "collect", "stats", "tables", "figures", "report"],
    "sweeps": ["specs", "ui", "tracking", "driver", "slurm", "commands"],
}
TOP_OF_ROOMS = {"dashboards": {"__init__", "__main__"}, "sweeps": {"__init__", "cli"}}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in FLOORS for p in sorted((REPO / package).rglob("*.py"))}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported module of the platform, line) for every import statement of module `name`."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package upwards
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a name inside a module
                target = target.rpartition(".")[0]
            if target and target.split(".")[0] in LEVEL:
                found.append((target, node.lineno))
    return found


def _graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[str, int]]]]:
    modules = _modules()
    edges = {name: _imports(name, path, modules) for name, path in modules.items()}
    return {name: {t for t, _ in found if t != name} for name, found in edges.items()}, edges


def test_every_package_imports_only_lower_floors():
    modules = _modules()
    assert set(name.split(".")[0] for name in modules) == set(FLOORS), "a floor package is missing"
    _, edges = _graph()
    upward = []
    for name, found in edges.items():
        own = LEVEL[name.split(".")[0]]
        for target, line in found:
            if LEVEL[target.split(".")[0]] > own:
                upward.append(f"{modules[name].relative_to(REPO)}:{line} imports {target} "
                              f"({name.split('.')[0]} is below {target.split('.')[0]})")
    assert not upward, "imports that run up a floor (order: " + " < ".join(FLOORS) + "):\n" + "\n".join(upward)


def _room(module: str) -> tuple[str, int] | None:
    """(package, floor of the module's room) inside a package with rooms; the top of the package is above them."""
    parts = module.split(".")
    if parts[0] not in ROOMS:
        return None
    rooms = ROOMS[parts[0]]
    return parts[0], rooms.index(parts[1]) if len(parts) > 2 or (len(parts) == 2 and parts[1] in rooms) else len(rooms)


def test_the_rooms_of_dashboards_and_sweeps_import_only_rooms_below():
    modules = _modules()
    for package, rooms in ROOMS.items():
        found = {p.name for p in (REPO / package).iterdir() if p.is_dir() and (p / "__init__.py").exists()}
        assert found == set(rooms), f"{package}/: rooms {sorted(found)}, ROOMS lists {rooms}"
        loose = {p.stem for p in (REPO / package).glob("*.py")} - TOP_OF_ROOMS[package]
        assert not loose, f"{package}/: modules {sorted(loose)} outside every room"
    _, edges = _graph()
    upward = []
    for name, found in edges.items():
        own = _room(name)
        for target, line in found:
            there = _room(target)
            if own and there and own[0] == there[0] and there[1] > own[1]:
                upward.append(f"{modules[name].relative_to(REPO)}:{line} imports {target}")
    order = "; ".join(f"{p}: " + " < ".join(r) for p, r in ROOMS.items())
    assert not upward, f"imports that run up a room ({order}):\n" + "\n".join(upward)


def test_no_import_cycles_between_modules():
    graph, _ = _graph()
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_check_sees_lazy_and_relative_imports(tmp_path):
    """The reader finds an import inside a function and resolves `from . import x` to its module."""
    modules = {"evaluators": Path(), "evaluators.a": Path(), "evaluators.b": Path(), "trainers.config": Path()}
    source = tmp_path / "a.py"
    source.write_text("def f():\n    from trainers.config import TrialConfig\nfrom . import b\nimport os\n")
    assert sorted(_imports("evaluators.a", source, modules)) == [("evaluators.b", 3), ("trainers.config", 2)]
