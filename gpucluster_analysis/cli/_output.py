"""Where output goes: data to stdout, everything else (progress, summaries, errors) to stderr."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

from gpucluster_analysis.errors import ExitCode, GcaError

stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(error: GcaError) -> NoReturn:
    """Print one line for the user and exit with the error's code."""
    stderr.print(f"gca: error: {error}", markup=False)
    raise typer.Exit(code=int(error.exit_code))


def interrupted() -> NoReturn:
    stderr.print("gca: interrupted", markup=False)
    raise typer.Exit(code=int(ExitCode.INTERRUPTED))
