"""Where output goes: data to stdout, everything else (progress, summaries, errors) to stderr."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console

from gpucluster_analysis.cli import _signals
from gpucluster_analysis.errors import ExitCode, GcaError

# Logs and CI captures are not 80 columns wide; don't fold the summary table there.
stderr = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)

P = ParamSpec("P")
R = TypeVar("R")


def print_json(data: dict[str, Any]) -> None:
    """One JSON object on stdout, keys in the order given (for scripts)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def print_rows(title: str, rows: list[tuple[str, str]], plain: str) -> None:
    """(section, line) rows on stdout: a table on a terminal, else `plain` as it is (no ANSI codes)."""
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
    Console(highlight=False).print(table)


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
