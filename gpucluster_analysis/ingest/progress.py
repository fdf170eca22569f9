"""Progress of an ingest: the listener the CLI draws (tests may ignore it), a file's hashing as
its first tenth, and DuckDB's progress of the running statement polled from a side thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import duckdb

from gpucluster_analysis.ingest.base import FileReport


class IngestListener(Protocol):
    """Receives progress; the CLI draws it, tests may ignore it."""

    def skipped(self, path: Path, reason: str) -> None: ...
    def planned(self, files: int) -> None: ...
    def file_started(self, path: Path, format_name: str, size: int) -> None: ...
    def file_progress(self, fraction: float) -> None: ...
    def file_finished(self, report: FileReport) -> None: ...


class Silent:
    def skipped(self, path: Path, reason: str) -> None: ...
    def planned(self, files: int) -> None: ...
    def file_started(self, path: Path, format_name: str, size: int) -> None: ...
    def file_progress(self, fraction: float) -> None: ...
    def file_finished(self, report: FileReport) -> None: ...


def byte_progress(listener: IngestListener, size: int) -> Callable[[int], None]:
    # Hashing is the first ~10% of a file's work; loading the rest.
    done = 0

    def on_bytes(n: int) -> None:
        nonlocal done
        done += n
        listener.file_progress(0.1 * done / max(size, 1))

    return on_bytes


@contextmanager
def watch_progress(
    con: duckdb.DuckDBPyConnection, listener: IngestListener, poll: bool = True
) -> Iterator[Callable[[int, int], None]]:
    """Poll DuckDB's progress of the running statement from a side thread.

    Yields the callback a format's script calls before each statement, so that
    statement i of n fills its own share of the bar and the bar never runs back.
    Without `poll` (small files, done before a bar would show) no thread is started.
    """
    stop = threading.Event()
    share = {"done": 0.0, "size": 1.0}
    shown = {"fraction": 0.1}

    def on_statement(i: int, n: int) -> None:
        share["done"], share["size"] = i / n, 1 / n

    def poll_progress() -> None:
        while not stop.wait(0.25):
            try:
                pct = con.query_progress()
            except Exception:  # no statement running right now, or the call is unsupported
                continue
            if pct is None or pct < 0:
                continue
            fraction = 0.1 + 0.9 * (share["done"] + share["size"] * min(pct, 100.0) / 100.0)
            if fraction > shown["fraction"]:
                shown["fraction"] = fraction
                listener.file_progress(fraction)

    if not poll:
        yield on_statement
        return
    thread = threading.Thread(target=poll_progress, daemon=True)
    thread.start()
    try:
        yield on_statement
    finally:
        stop.set()
        thread.join()
