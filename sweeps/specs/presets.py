"""Hydra presets of a sweep spec: ``defaults: [{trainer: local_tiny}, {model: tiny_qwen3}, ...]``.

A group is a directory of configs/ (not sweeps/), an option the stem of a YAML file directly in
it: names are checked against a safe pattern and must resolve to a file under configs/<group>/,
so a spec cannot reach outside configs/ (``{model: ../../x}``, ``{model: /abs/x}``, ``{model: a/b}``).
The command-line override ``model=qwen3_0.6b_local`` (``base.model=...`` from `sweep run`)
switches a group's preset; ``+model=...`` adds one, ``~model`` removes it (sweeps/specs/load.py).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from sweeps.specs.errors import SpecError, unknown_key

CONFIGS_DIR = Path(__file__).resolve().parents[2] / "configs"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def preset_groups() -> list[str]:
    """The Hydra groups: directories of configs/ other than sweeps/."""
    return sorted(d.name for d in CONFIGS_DIR.iterdir() if d.is_dir() and d.name != "sweeps")


def preset_options(group: str) -> list[str]:
    return sorted(x.stem for x in (CONFIGS_DIR / group).glob("*.yaml"))


def check_preset(group: Any, option: Any, where: str) -> None:
    """SpecError unless ``group`` is a configs/ group and ``option`` a preset file directly inside it."""
    groups = preset_groups()
    if not isinstance(group, str) or group not in groups:
        raise unknown_key(where, group, groups)
    options = preset_options(group)
    if not isinstance(option, str) or not _NAME.fullmatch(option) or ".." in option:
        raise SpecError(f"{where}.{group}: expected a preset name (letters, digits, '_', '.', '-'; no '/', '..' or "
                        f"absolute path) of a file in configs/{group}/, got {option!r}; expected one of {options}")
    file = CONFIGS_DIR / group / f"{option}.yaml"
    if not file.is_file() or file.resolve().parent != (CONFIGS_DIR / group).resolve():
        raise SpecError(f"{where}.{group}: no preset {option!r}; expected one of {options}")


def switch_preset(raw: dict, group: str, option: str, where: str) -> None:
    """Replace the ``group`` entry of raw['defaults'] by ``option`` (append one if there is none)."""
    check_preset(group, option, where)
    defaults = raw.get("defaults") or []
    if not isinstance(defaults, list):
        raise SpecError(f"{where}: defaults: expected a list like [{{trainer: local_tiny}}], got {defaults!r}")
    mine = [isinstance(d, dict) and list(d) == [group] for d in defaults]
    raw["defaults"] = ([{group: option} if m else d for d, m in zip(defaults, mine)] if any(mine)
                       else [*defaults, {group: option}])


def compose_base(defaults: Any, source: str) -> dict[str, Any]:
    """Compose configs/<group>/<name>.yaml for each default with Hydra's compose API."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    if defaults is not None and not isinstance(defaults, list):
        raise SpecError(f"{source}: defaults: expected a list like [{{trainer: local_tiny}}], got {defaults!r}")
    overrides, first = [], {}
    for i, item in enumerate(defaults or []):
        if not isinstance(item, dict) or len(item) != 1:
            raise SpecError(f"{source}: defaults[{i}]: expected a one-key mapping like {{trainer: local_tiny}}, got {item!r}")
        (group, option), = item.items()
        check_preset(group, option, f"{source}: defaults[{i}]")
        if group in first:
            raise SpecError(f"{source}: defaults[{i}].{group}: group {group!r} already set by defaults[{first[group]}]; "
                            "expected one preset per group")
        first[group] = i
        overrides.append((f"+{group}={option}", (CONFIGS_DIR / group / f"{option}.yaml").stat().st_mtime_ns))
    key = tuple(overrides)
    if key not in _COMPOSED:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONFIGS_DIR), version_base=None):
            cfg = compose(overrides=[override for override, _ in overrides])
        _COMPOSED[key] = OmegaConf.to_container(cfg, resolve=True)
    return copy.deepcopy(_COMPOSED[key])


_COMPOSED: dict[tuple, dict[str, Any]] = {}
"""The presets composed in this process, by (override, its file's mtime): a spec loaded again (the suite, a
report after a run) does not compose them again (about 0.1 s each); an edited preset file is read anew."""
