"""Print pip's package sources as uv arguments, NUL-separated, for scripts/setup.sh.

Set-up installs with uv (about 10x faster than pip here), and uv does not read pip's configuration
(pip.conf files, PIP_* variables). So that uv installs from exactly the sources pip would, this reads
`pip config list` (run with this interpreter's pip) and turns index-url, extra-index-url, find-links,
no-index and constraint into uv's options; the environment wins over the files, [install] over
[global], as in pip.

    mapfile -d '' SOURCES < <(.venv/bin/python scripts/pip_sources.py)
    uv pip install "${SOURCES[@]}" ...

Exit status 0 always when pip answers (no configuration prints nothing); 1 when `pip config list` fails.
"""

from __future__ import annotations

import ast
import subprocess
import sys

# pip option -> (uv option, takes a whitespace-separated list)
OPTIONS = {
    "index-url": ("--index-url", False),
    "extra-index-url": ("--extra-index-url", True),
    "find-links": ("--find-links", True),
    "constraint": ("--constraint", True),
}
TRUE = {"1", "true", "yes", "on"}


def pip_settings(listing: str) -> dict[str, str]:
    """``{option: value}`` from `pip config list` lines such as ``global.find-links='/opt/wheels'``."""
    by_scope: dict[str, dict[str, str]] = {}
    for line in listing.splitlines():
        name, sep, raw = line.partition("=")
        if not sep or "." not in name:
            continue
        scope, option = name.rsplit(".", 1)
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw.strip("'\"")
        by_scope.setdefault(scope, {})[option] = str(value)
    settings: dict[str, str] = {}
    for scope in ("global", "install", ":env:"):  # later wins
        settings.update(by_scope.get(scope, {}))
    return settings


def uv_arguments(settings: dict[str, str]) -> list[str]:
    """uv's options for pip's ``settings``."""
    args: list[str] = []
    if settings.get("no-index", "").lower() in TRUE:
        args.append("--no-index")
    for option, (flag, many) in OPTIONS.items():
        value = settings.get(option, "").strip()
        for item in value.split() if many else [value] if value else []:
            args += [flag, item]
    return args


def main() -> int:
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    if listing.returncode:
        print(f"scripts/pip_sources.py: `pip config list` failed:\n{listing.stderr}", file=sys.stderr)
        return 1
    sys.stdout.write("".join(arg + "\0" for arg in uv_arguments(pip_settings(listing.stdout))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
