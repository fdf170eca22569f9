"""What `gca ingest` shows on stderr while it works: a bar per big file, one for thousands of small
files, one over the sample times of a Prometheus pull; a line per kind of file skipped."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpucluster_analysis.cli._output import stderr
from gpucluster_analysis.printable import printable

if TYPE_CHECKING:
    from rich.progress import Progress

# Files smaller than this finish before a progress bar would be worth drawing.
_PROGRESS_MIN_BYTES = 32 << 20
SKIPPED_SHOWN = 3  # files named where many are skipped or unchanged; the rest counted
_OVERALL_MIN_FILES = 50


def _bars() -> Progress:
    """Bars on stderr that vanish when done (rich is imported here, where bars are drawn)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    )


class PullProgress:
    """A progress bar on stderr over the sample times a pull has to fetch."""

    def __init__(self, server: str) -> None:
        from rich.progress import TaskID

        self.server = server
        self.stored = 0
        self.last_ms = 0
        self._progress = _bars()
        self._task: TaskID | None = None

    def __enter__(self) -> PullProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._task is not None:
            self._progress.stop()

    def covered(self, start_ms: int, end_ms: int, chunks: int) -> None: ...

    def planned(self, points: int) -> None:
        if points and stderr.is_terminal:  # a log or a capture gets the summary line only
            self._progress.start()
            self._task = self._progress.add_task(printable(f"pulling from {self.server}"), total=points)

    def chunk_stored(self, chunk: object, points: int) -> None:
        self.stored += 1
        self.last_ms = chunk.end_ms  # type: ignore[attr-defined]  # a prometheus Chunk, typed object here
        if self._task is not None:
            self._progress.advance(self._task, points)


class IngestProgress:
    """Progress bars on stderr for big files; a line per skipped file."""

    def __init__(self) -> None:
        from rich.progress import TaskID

        self._progress = _bars()
        self._task: TaskID | None = None
        self._overall: TaskID | None = None
        self._skipped: dict[str, list[Path]] = {}

    def __enter__(self) -> IngestProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
        # A directory can hold thousands of files gca does not read (notes, unplaced logs): one line per reason.
        for reason, paths in self._skipped.items():
            if len(paths) == 1:
                stderr.print(f"gca: warning: skipped {paths[0]}: {reason}", markup=False)
                continue
            examples = ", ".join(str(p) for p in paths[:SKIPPED_SHOWN])
            more = ", ..." if len(paths) > SKIPPED_SHOWN else ""
            stderr.print(f"gca: warning: skipped {len(paths)} files, each {reason}: {examples}{more}", markup=False)

    def skipped(self, path: Path, reason: str) -> None:
        self._skipped.setdefault(reason, []).append(path)

    def planned(self, files: int) -> None:
        # Thousands of small files (job logs) need a bar of their own: each is too quick for one.
        if files >= _OVERALL_MIN_FILES:
            self._overall = self._progress.add_task(f"{files:,} files", total=files)

    def file_started(self, path: Path, format_name: str, size: int) -> None:
        if size >= _PROGRESS_MIN_BYTES:
            self._task = self._progress.add_task(printable(f"{path.name} ({format_name})"), total=1.0)

    def file_progress(self, fraction: float) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=fraction)

    def file_finished(self, report: object) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None
        if self._overall is not None:
            self._progress.advance(self._overall)
