"""scripts/pip_sources.py: set-up's uv installs from the sources pip is configured with (uv reads no pip.conf)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pip_sources.py"
_spec = importlib.util.spec_from_file_location("pip_sources", SCRIPT)
pip_sources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pip_sources)

LISTING = """\
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
global.index-url='https://mirror.example/simple'
install.index-url='https://install-mirror.example/simple'
:env:.find-links='/srv/wheels /srv/more-wheels'
:env:.default-timeout='180'
"""


def test_environment_wins_over_install_over_global_and_lists_are_split():
    args = pip_sources.uv_arguments(pip_sources.pip_settings(LISTING))
    assert args == ["--index-url", "https://install-mirror.example/simple",
                    "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
                    "--find-links", "/srv/wheels", "--find-links", "/srv/more-wheels",
                    "--constraint", "/etc/xdg/pip/constraints.txt"]


def test_no_index_and_an_empty_configuration():
    assert pip_sources.uv_arguments(pip_sources.pip_settings(":env:.no-index='true'\n")) == ["--no-index"]
    assert pip_sources.uv_arguments(pip_sources.pip_settings("")) == []


def test_the_script_reads_pips_own_configuration(tmp_path):
    """Run as set-up runs it: PIP_* variables and a PIP_CONFIG_FILE reach uv's arguments, NUL-separated."""
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nextra-index-url = file:///x/simple\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=str(conf), PIP_FIND_LINKS="/w", PIP_CONSTRAINT=str(tmp_path / "c.txt"))
    out = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, check=True).stdout
    args = out.split("\0")
    assert args[-1] == "" and args[:-1].count("--find-links") == 1
    assert ["--find-links", "/w"] == args[args.index("--find-links"):args.index("--find-links") + 2]
    assert ["--constraint", str(tmp_path / "c.txt")] == args[args.index("--constraint"):args.index("--constraint") + 2]
    assert "file:///x/simple" in args
