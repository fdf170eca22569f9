"""The `gca` command line: a thin client of the library.

This package is the only one that imports typer and rich, prints, or exits.
Heavy libraries (duckdb, polars, plotly) are imported inside the commands so
that `gca --help` stays fast.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable

import typer

from gpucluster_analysis import __version__
from gpucluster_analysis.cli import _signals
from gpucluster_analysis.cli import classify as _classify
from gpucluster_analysis.cli import export as _export
from gpucluster_analysis.cli import ingest as _ingest
from gpucluster_analysis.cli import report as _report
from gpucluster_analysis.cli import synth as _synth

EXIT_CODES_EPILOG = (
    "Exit codes: 0 ok; 1 the data or a query failed; 2 usage error, unknown or "
    "unreadable input; 3 --strict and rows were rejected; 130 interrupted (Ctrl-C, SIGTERM, SIGHUP)."
)

app = typer.Typer(
    name="gca",
    help="Why jobs wait, how well they use their GPUs, and why they fail: "
    "characterize a shared GPU cluster from the logs it already writes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES_EPILOG,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gca {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Why jobs wait, how well they use their GPUs, and why they fail."""


app.command("ingest", epilog=EXIT_CODES_EPILOG)(_ingest.ingest)
app.command("report", epilog=EXIT_CODES_EPILOG)(_report.report)
app.command("export", epilog=EXIT_CODES_EPILOG)(_export.export)
app.command("synth", epilog=EXIT_CODES_EPILOG)(_synth.synth)
app.command("classify", epilog=EXIT_CODES_EPILOG)(_classify.classify)


def main() -> None:
    """`gca`: run the command, then end the process at once (os._exit), its streams flushed
    and atexit's handlers run, without Python's teardown of the libraries: unloading polars,
    pyarrow, DuckDB and SciPy took ~0.2 s of every command, after its store and files were
    closed. A thread or child process still running gets the ordinary exit, which waits.
    While the command runs, SIGTERM and SIGHUP interrupt it as Ctrl-C does (cli/_signals.py)."""
    _signals.install()
    try:
        app()
        status: str | int | None = 0
    except SystemExit as e:
        status = e.code
    finally:
        _signals.restore()
    children = sys.modules.get("multiprocessing")  # (never imported: no child process)
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's; elsewhere the ordinary exit
    if (
        run_exit_handlers is None
        or (children is not None and children.active_children())
        or any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread())
    ):
        sys.exit(status)
    _exit_now(status, run_exit_handlers)


def _exit_now(status: object, run_exit_handlers: Callable[[], None]) -> None:
    """As Python's own exit would end with SystemExit(status), without the teardown."""
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:  # a message: printed, exit 1
        print(status, file=sys.stderr)
        code = 1
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, a closed stream: Python exits 120 then
            code = code or 120
    os._exit(code)
