"""Where output goes: data to stdout, everything else (progress, summaries, errors) to stderr.

Names in what gca prints (files, jobs, users, VCs, machines) come from the input: every string
a console here renders is made printable first (gpucluster_analysis.printable: control
characters as escapes), and never read as Rich markup or emoji codes.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from gpucluster_analysis.cli import _signals
from gpucluster_analysis.errors import ExitCode, GcaError
from gpucluster_analysis.printable import printable, printable_json


class PrintableConsole(Console):
    """A Rich console that shows every string it renders as printable text: messages, table
    cells and titles alike (an escape sequence in a file name cannot restyle the terminal,
    a tab or newline cannot forge a line). Markup and emoji codes are off: `[red]` and
    `:smile:` in a name stay as they are."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text), **kwargs)


# Logs and CI captures are not 80 columns wide; don't fold the summary table there.
stderr = PrintableConsole(stderr=True, soft_wrap=True, width=None if sys.stderr.isatty() else 160)

P = ParamSpec("P")
R = TypeVar("R")


def json_text(data: dict[str, Any], indent: int | None = None) -> str:
    """`data` as JSON: non-ASCII text as is, no control character raw."""
    return printable_json(json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False))


def print_json(data: dict[str, Any]) -> None:
    """One JSON object on stdout, keys in the order given (for scripts)."""
    sys.stdout.write(json_text(data, indent=2) + "\n")


def print_rows(title: str, rows: list[tuple[str, str]], plain: str) -> None:
    """(section, line) rows on stdout: a table on a terminal, else `plain` as it is (no ANSI codes).

    Both come printable from report/summary.py; the table's strings are made so again here."""
    if not sys.stdout.isatty():
        sys.stdout.write(plain)
        return
    from rich.table import Table

    table = Table(title=title, show_header=False, box=None, title_justify="left", padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    previous = None
    for section, line in rows:
        table.add_row(section if section != previous else "", line)
        previous = section
    PrintableConsole().print(table)


def fail(error: GcaError) -> NoReturn:
    """Print one line for the user and exit with the error's code."""
    stderr.print(f"gca: error: {error}", markup=False)
    raise typer.Exit(code=int(error.exit_code))


def interrupted() -> NoReturn:
    """What an interrupted command ends with: one line, exit 130."""
    by = _signals.interrupted_by()
    stderr.print(f"gca: interrupted{f' ({by})' if by and by != 'SIGINT' else ''}", markup=False)
    raise typer.Exit(code=int(ExitCode.INTERRUPTED)) from None


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """Turn errors into one line on stderr and an exit code; the only place commands exit.

    A GcaError is the user's to fix and says how. Anything else is a bug in gca:
    still one line, with GCA_DEBUG=1 to see the traceback. Once gca was interrupted (Ctrl-C,
    SIGTERM, SIGHUP: cli/_signals.py), whatever the command raised is the interrupt: DuckDB
    turns it into its own error when it stops a running query.
    """

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            interrupted()
        except Exception as e:
            if _signals.interrupted_by():
                interrupted()
            if isinstance(e, GcaError):
                fail(e)
            if os.environ.get("GCA_DEBUG"):
                raise
            first = str(e).splitlines()[0] if str(e) else ""
            stderr.print(
                f"gca: error: internal error {type(e).__name__}: {first} "
                "(a bug in gca; rerun with GCA_DEBUG=1 for the traceback and please report it)",
                markup=False,
            )
            raise typer.Exit(code=int(ExitCode.DATA)) from None

    return wrapper
