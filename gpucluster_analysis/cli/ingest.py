"""`gca ingest`: load raw logs into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster_analysis.cli._options import DEFAULT_DB, DbOption
from gpucluster_analysis.cli._output import guarded, stderr
from gpucluster_analysis.errors import ExitCode, GcaError

# Files smaller than this finish before a progress bar would be worth drawing.
_PROGRESS_MIN_BYTES = 32 << 20
_SKIPPED_SHOWN = 3


@guarded
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories (walked) to ingest.", show_default=False)],
    db: DbOption = DEFAULT_DB,
    format_name: Annotated[
        str | None,
        typer.Option("--format", help="Read every file as this format instead of detecting it (see below)."),
    ] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Reload files ingested before, replacing what they contributed.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Fail a file (store nothing from it) if any row is rejected.")] = False,
    tz: Annotated[
        str | None,
        typer.Option("--tz", help="Zone of zone-less times in the input (default: the format's own, e.g. America/Los_Angeles for Philly)."),
    ] = None,
) -> None:
    """Read raw cluster logs into the store.

    The format of each file is detected from its content (and name). Formats:
    philly_job_log, philly_gpu_util, philly_cpu_util, philly_mem_util,
    philly_machine_list. Re-ingesting a file with the same content does nothing.

    Example: gca ingest ../philly-traces/trace-data/ --db philly.duckdb
    """
    from gpucluster_analysis.db import open_store
    from gpucluster_analysis.ingest import IngestOptions, ingest_paths
    from gpucluster_analysis.timezones import check_zone

    if tz:
        check_zone(tz)
    options = IngestOptions(zone=tz, replace=replace, strict=strict)
    listener = _RichListener()
    with open_store(db) as con, listener:
        reports = ingest_paths(con, paths, options, format_name=format_name, listener=listener)
    _print_summary(reports, db)
    failed = [r for r in reports if r.status == "failed"]
    if failed:
        for r in failed:
            stderr.print(f"gca: error: {r.message}", markup=False)
        raise typer.Exit(code=int(max(r.error.exit_code if isinstance(r.error, GcaError) else ExitCode.DATA for r in failed)))


class _RichListener:
    """Progress bars on stderr for big files; a line per skipped file."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(), console=stderr, transient=True,
        )
        self._task = None
        self._skipped: list[Path] = []

    def __enter__(self) -> _RichListener:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
        # A directory can hold thousands of files gca does not read (job logs, notes): one line.
        if len(self._skipped) == 1:
            stderr.print(f"gca: warning: skipped {self._skipped[0]}: not a format gca reads", markup=False)
        elif self._skipped:
            examples = ", ".join(str(p) for p in self._skipped[:_SKIPPED_SHOWN])
            more = ", ..." if len(self._skipped) > _SKIPPED_SHOWN else ""
            stderr.print(
                f"gca: warning: skipped {len(self._skipped)} files that are not a format gca reads: {examples}{more}",
                markup=False,
            )

    def skipped(self, path: Path, reason: str) -> None:
        self._skipped.append(path)

    def file_started(self, path: Path, format_name: str, size: int) -> None:
        if size >= _PROGRESS_MIN_BYTES:
            self._task = self._progress.add_task(f"{path.name} ({format_name})", total=1.0)

    def file_progress(self, fraction: float) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=fraction)

    def file_finished(self, report: object) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None


def _short(path: Path) -> str:
    # The summary is for reading: the file and its folder say enough; messages give full paths.
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def _print_summary(reports: list, db: Path) -> None:  # type: ignore[type-arg]
    from rich.table import Table

    table = Table(title=f"ingested into {db}", title_justify="left", show_edge=False)
    for column, justify in (("file", "left"), ("format", "left"), ("status", "left"), ("rows", "right"), ("rejects", "right"), ("seconds", "right")):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in reports:
        table.add_row(_short(r.path), r.format or "", r.status, f"{r.rows:,}", f"{r.rejects:,}", f"{r.seconds:.1f}")
    if not reports:
        stderr.print("gca: nothing to ingest (no recognized files)", markup=False)
        return
    stderr.print(table)
    for r in reports:
        if r.status == "unchanged":
            stderr.print(f"gca: {r.path}: {r.message}", markup=False)
        for line, reason in r.reject_samples:
            where = f"{r.path}:{line}" if line else str(r.path)
            stderr.print(f"gca: rejected {where}: {reason}", markup=False)
        if r.rejects > len(r.reject_samples):
            stderr.print(f"gca: ... {r.rejects - len(r.reject_samples)} more rejects from {r.path.name} in the rejects table", markup=False)
