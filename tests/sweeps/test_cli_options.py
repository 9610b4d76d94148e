"""The `sweep` CLI's shape: options declared once as dataclasses (sweeps/commands/options.py `grouped`), one
module per subcommand, small command functions, a dispatcher that defines none."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Optional

import pytest
import typer
from typer.testing import CliRunner

from sweeps.commands.options import StoreOptions, grouped

REPO = Path(__file__).resolve().parents[2]
COMMANDS = REPO / "sweeps" / "commands"
MAX_PARAMS, MAX_LINES = 12, 60


@dataclass
class Knobs:
    panel: ClassVar[str] = "Knobs"
    level: Annotated[int, typer.Option(help="How far.")] = 3
    name: Annotated[Optional[str], typer.Option("--name", help="What.")] = None
    flags: Annotated[Optional[list[str]], typer.Option("--flag", help="Repeatable.")] = None


def _app(seen: list) -> typer.Typer:
    @grouped
    def show(target: Annotated[str, typer.Argument()], store: StoreOptions = StoreOptions(),
             knobs: Knobs = Knobs(), loud: Annotated[bool, typer.Option("--loud")] = False) -> None:
        seen.append((target, store, knobs, loud))

    app = typer.Typer()
    app.command("show")(show)
    app.command("other")(lambda: None)  # two commands: typer keeps the subcommand name
    return app


def test_groups_become_options_and_come_back_as_dataclasses(tmp_path):
    seen: list = []
    app = _app(seen)
    result = CliRunner().invoke(app, ["show", "x", "--level", "7", "--flag", "a", "--flag", "b", "--loud",
                                      "--run-dir", str(tmp_path), "--tracking-uri", "sqlite:///y.db"])
    assert result.exit_code == 0, result.output
    target, store, knobs, loud = seen[-1]
    assert (target, loud) == ("x", True)
    assert store == StoreOptions(run_dir=tmp_path, tracking_uri="sqlite:///y.db")
    assert knobs == Knobs(level=7, name=None, flags=["a", "b"])

    assert CliRunner().invoke(app, ["show", "y"]).exit_code == 0  # every default, as the dataclasses declare them
    assert seen[-1][1:] == (StoreOptions(), Knobs(), False)

    bad = CliRunner().invoke(app, ["show", "x", "--level", "many"])
    assert bad.exit_code == 2 and "--level" in bad.output


def test_help_shows_each_group_under_its_panel():
    result = CliRunner().invoke(_app([]), ["show", "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    text = result.output
    for panel, option in (("Store", "--tracking-uri"), ("Knobs", "--level")):
        assert panel in text and option in text
        assert text.index(panel) < text.index(option), (panel, option)


@dataclass
class Clashing:
    level: Annotated[int, typer.Option()] = 1


def test_two_groups_declaring_one_option_are_refused():
    def clash(knobs: Knobs = Knobs(), other: Clashing = Clashing()) -> None: ...

    with pytest.raises(TypeError, match=r"clash: option\(s\) \['level'\]"):
        grouped(clash)


def _functions(path: Path) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]


def test_every_command_module_is_small_and_the_dispatcher_defines_no_command():
    from sweeps.cli import app

    registered = {c.name: c.callback for c in app.registered_commands}
    assert set(registered) == {"run", "resume", "status", "ui", "ls-objectives", "report", "table", "plan", "eval", "fit",
                               "slurm"}
    for name, callback in registered.items():
        module = getattr(callback, "__wrapped__", callback).__module__
        assert module.startswith("sweeps.commands."), (name, module)
        command = next(f for f in _functions(REPO / (module.replace(".", "/") + ".py"))
                       if f.name == getattr(callback, "__wrapped__", callback).__name__)
        params = len(command.args.args) + len(command.args.kwonlyargs)
        lines = command.end_lineno - command.lineno + 1
        assert params <= MAX_PARAMS and lines <= MAX_LINES, f"sweep {name}: {params} parameters, {lines} lines"
    assert [f.name for f in _functions(REPO / "sweeps" / "cli.py")] == ["main"]


def _walk(command, path: tuple[str, ...] = ()):
    """(the words that reach it, command) for the app and every command under it."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _walk(sub, (*path, name))


def test_every_boolean_flag_shows_as_a_plain_flag_in_every_help():
    """A flag takes no value: its --help row shows no type (typer's own is `--dry-run <bool>`), in every command
    and in the app's own help (--help, --install-completion)."""
    from sweeps.cli import app

    walked = list(_walk(typer.main.get_command(app)))
    assert {" ".join(path) for path, _ in walked} >= {"", "run", "resume", "status", "ui", "report", "table", "eval", "fit"}
    for path, command in walked:
        text = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).output
        assert not re.search(r"[<\[{(]bool[>\]})]", text, re.I), (path, text)
        flags = [p for p in command.params if getattr(p, "is_flag", False)] + [None]  # None: --help
        for flag in flags:
            names = flag.opts + flag.secondary_opts if flag else ["--help"]
            row = next((ln for ln in text.splitlines() if ln.lstrip()[:1] in ("│", "|") and names[0] in ln.split()), None)  # the options
            # panel's row, not the description's examples (`sweep table ... --delta-avg`, wrapped at any width)
            assert row is not None, (path, names)
            rest = [t for t in row.replace("│", " ").replace("|", " ").split() if t not in names]  # after its names: its help
            assert rest and not rest[0].startswith(("<", "[", "{")), (path, row)
