"""Options declared once: dataclasses of typer options that a command takes as one parameter each.

    @dataclass
    class StoreOptions:
        panel: ClassVar[str] = "Store"
        run_dir: RunDir = Path("runs")
        tracking_uri: TrackingUri = None

    @grouped
    def status(sweep: Annotated[str, typer.Argument()], store: StoreOptions) -> None:
        uri = resolve_uri(store.tracking_uri, store.run_dir)

`grouped` gives typer a signature where each dataclass-typed parameter is replaced by its fields (their
`Annotated[type, typer.Option(...)]` annotations and defaults, shown under the dataclass' help panel),
and calls the command with one instance per group. Two groups naming the same option are refused when
the command is defined. The store options every store-reading command shares are here too, and what every
command shares: ``fail``/``warn`` (one whole line on stderr), ``warnings_as_notes`` (Python warnings as such
lines) and ``FlagCommand``/``FlagGroup`` (sweeps/cli.py: a flag's --help row shows no type).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import warnings
from copy import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, ClassVar, Optional, get_args, get_origin, get_type_hints

import typer
from rich.console import Console
from typer.core import TyperCommand, TyperGroup

err_console = Console(stderr=True)  # errors and notes go to stderr; tables and results to stdout

RunDir = Annotated[Path, typer.Option("--run-dir", help="Run directory: MLflow store, Ray temp dir, results, reports.")]
TrackingUri = Annotated[Optional[str], typer.Option(
    "--tracking-uri", help="MLflow URI (a server's http://HOST:PORT or a database); default "
    "$MLFLOW_TRACKING_URI, else the run dir's mlflow.db (sqlite).")]

Direct = Annotated[bool, typer.Option(
    "--direct", help="Read every run from the store itself, not the sweep's read copy (a server's store: "
    "tracking_store/read_copy.py).")]


@dataclass
class StoreOptions:
    """Where the sweep's MLflow store is (tracking_store/uri.py resolve_uri: one rule for every command)."""

    panel: ClassVar[str] = "Store"
    run_dir: RunDir = Path("runs")
    tracking_uri: TrackingUri = None


class _PlainFlags:
    """typer shows every option's type in --help, a flag's too (``--dry-run <bool>``); a flag takes no value, so
    its row shows none: its metavar is empty (typer shows a metavar as given)."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for param in params:  # the command's own options and --help (and the app's completion options)
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        return params


class FlagCommand(_PlainFlags, TyperCommand):
    """A command whose --help shows flags as plain flags: ``app.command(name, cls=FlagCommand)``."""


class FlagGroup(_PlainFlags, TyperGroup):
    """The app's group, the same for its own options: ``typer.Typer(cls=FlagGroup)``."""


def warn(message: str) -> None:
    """Print ``message`` whole on stderr (never read as markup, never cut: paths stay copyable)."""
    err_console.print(message, markup=False, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """warn(message) and return the exit to raise: ``raise fail("error: ...")``."""
    warn(message)
    return typer.Exit(code)


@contextlib.contextmanager
def warnings_as_notes():
    """Python warnings raised inside, each said once as one ``note:`` line on stderr when the block ends (an error
    or not), never as Python's own ``file:line: UserWarning: ...`` print with its source line: the product's own
    as written, a library's with its category and origin. The warning filters stay as they are (-W, PYTHONWARNINGS)."""
    with warnings.catch_warnings(record=True) as caught:
        try:
            yield
        finally:
            for line in dict.fromkeys(_note_of(w) for w in caught):
                warn(line)


def _note_of(w: warnings.WarningMessage) -> str:
    message = " ".join(str(w.message).split())
    parts = Path(w.filename).parts
    library = next((parts[i + 1] for i, p in enumerate(parts[:-1]) if p in ("site-packages", "dist-packages")), None)
    if library is None and issubclass(w.category, UserWarning):  # ours: a message written for the user
        return f"note: {message}"
    origin = library.removesuffix(".py") if library else f"{Path(w.filename).name}:{w.lineno}"
    return f"note: {w.category.__name__} from {origin}: {message}"


def split_list(text: Optional[str]) -> Optional[list[str]]:
    """A comma-separated option as a list (blank items dropped); None stays None."""
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


def _with_panel(annotation: Any, panel: str | None) -> Any:
    """``Annotated[T, typer.Option(...)]`` with the option shown under ``panel`` (a copy; the class' own
    declaration is left as it is)."""
    if panel is None or get_origin(annotation) is not Annotated:
        return annotation
    base, *extras = get_args(annotation)
    extras = [copy(x) if isinstance(x, typer.models.ParameterInfo) else x for x in extras]
    for x in extras:
        if isinstance(x, typer.models.OptionInfo) and x.rich_help_panel is None:
            x.rich_help_panel = panel
    return Annotated[(base, *extras)]


def _fields(group: type) -> list[inspect.Parameter]:
    hints = get_type_hints(group, include_extras=True)
    panel = getattr(group, "panel", None)
    params = []
    for f in dataclasses.fields(group):
        default = f.default if f.default is not dataclasses.MISSING else inspect.Parameter.empty
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=_with_panel(hints[f.name], panel)))
    return params


def grouped(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` as typer should see it: its dataclass-typed parameters expanded into their fields."""
    hints = get_type_hints(command, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for p in inspect.signature(command).parameters.values():
        hint = hints.get(p.name, p.annotation)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            fields = _fields(hint)
            groups[p.name] = (hint, [f.name for f in fields])
            params += fields
        else:
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hint))
    names = [p.name for p in params]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise TypeError(f"{command.__qualname__}: option(s) {clashes} declared by more than one group")

    @functools.wraps(command)
    def typer_command(**given: Any) -> Any:
        for name, (group, fields) in groups.items():
            given[name] = group(**{f: given.pop(f) for f in fields})
        return command(**given)

    typer_command.__signature__ = inspect.Signature(params)
    typer_command.__annotations__ = {p.name: p.annotation for p in params}
    return typer_command


def cells_text(text: Optional[str]) -> Optional[str]:
    """--cells as typed: 'mean +- ci' (ASCII) is 'mean ± ci'."""
    return None if text is None else " ".join(text.replace("+-", "±").replace("±", " ± ").split())
