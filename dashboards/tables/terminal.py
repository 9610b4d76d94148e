"""The report's paper table drawn for a terminal (rich), from the Markdown file the report wrote.

    from dashboards.tables.terminal import print_table
    print_table(console, {"md": Path("runs/my_sweep/report/table.md")})

Markdown marks (dashboards/tables/render.py) become terminal styles: **best** bold, <u>second</u>
underlined, _strongest baseline_ italic; a model's header row spans the table as a section; the
footnotes follow the table. The file itself is not changed. When the console is not a terminal
(piped, a log file), `print_table` prints the Markdown as it is: styles would be lost, marks not.
"""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

_MARKS = ((re.compile(r"^\*\*(.*)\*\*$"), "bold"), (re.compile(r"^<u>(.*)</u>$"), "underline"),
          (re.compile(r"^_(.*)_$"), "italic"))


def styled_cell(markdown: str) -> Text:
    """One table cell's Markdown (nested marks, outermost first: bold, underline, italic) as styled text."""
    text, styles = markdown.strip(), []
    changed = True
    while changed:
        changed = False
        for pattern, style in _MARKS:
            m = pattern.match(text)
            if m and m.group(1):
                text, changed = m.group(1), True
                styles.append(style)
    return Text(text, style=" ".join(styles))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def rich_table(markdown: str) -> tuple[Table, list[str]]:
    """(table, footnote lines) from the report's table.md text."""
    lines = markdown.splitlines()
    rows = [ln for ln in lines if ln.startswith("|")]
    notes = [ln for ln in lines[len(rows):] if ln.strip()]
    table = Table(show_edge=False, header_style="bold", pad_edge=False)
    if not rows:
        return table, notes
    head = _cells(rows[0])
    for i, name in enumerate(head):
        table.add_column(name, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for line in rows[2:]:  # rows[1] is the alignment line
        cells = _cells(line)
        if all(not c for c in cells[1:]):  # a model's header row: a section
            table.add_section()
            table.add_row(styled_cell(cells[0]), *[""] * (len(head) - 1))
            continue
        table.add_row(*(styled_cell(c) for c in cells))
    return table, notes


LEGEND = Text.assemble(("bold", "bold"), ": best; ", ("underlined", "underline"), ": second; ",
                       ("italic", "italic"), ": strongest baseline")


def print_table(console: Console, paths: dict[str, Path]) -> None:
    """Print the report's table.md (if written): on a terminal as a styled table with a legend and
    the footnotes; elsewhere (piped, a log file) the Markdown text as it is, marks included."""
    md = paths.get("md")
    if md is None:
        return
    text = Path(md).read_text(encoding="utf-8")
    if not console.is_terminal:
        console.print(text.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
        return
    table, notes = rich_table(text)
    console.print(table)
    console.print(LEGEND)
    for note in notes:
        console.print(note, markup=False, highlight=False)
