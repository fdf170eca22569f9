"""Where output goes: data to stdout, everything else (progress, summaries, errors) to stderr."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console

from gpucluster_analysis.errors import ExitCode, GcaError

# Logs and CI captures are not 80 columns wide; don't fold the summary table there.
stderr = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)

P = ParamSpec("P")
R = TypeVar("R")


def fail(error: GcaError) -> NoReturn:
    """Print one line for the user and exit with the error's code."""
    stderr.print(f"gca: error: {error}", markup=False)
    raise typer.Exit(code=int(error.exit_code))


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """Turn errors into one line on stderr and an exit code; the only place commands exit.

    A GcaError is the user's to fix and says how. Anything else is a bug in gca:
    still one line, with GCA_DEBUG=1 to see the traceback.
    """

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except GcaError as e:
            fail(e)
        except KeyboardInterrupt:
            stderr.print("gca: interrupted", markup=False)
            raise typer.Exit(code=int(ExitCode.INTERRUPTED)) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except Exception as e:
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
