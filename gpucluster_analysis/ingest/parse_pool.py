"""Parsing in worker processes: files of parse-only formats (job logs) read, hashed and parsed
whole batches ahead of the store, by `parse_file`, which touches no database and so runs in
any process."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpucluster_analysis.cores import cores
from gpucluster_analysis.errors import GcaError, InputError
from gpucluster_analysis.ingest.base import FileFormat, IngestOptions
from gpucluster_analysis.ingest.files import DAMAGED_GZIP, damaged_gzip, sha256_of
from gpucluster_analysis.ingest.registry import format_named

if TYPE_CHECKING:  # multiprocessing is imported only where worker processes start
    from concurrent.futures import Future
    from multiprocessing.connection import Connection

# Reading, hashing and classifying job logs is most of their ingest (100k logs: ~30 s on
# one core); worker processes do it for big runs while this one stores the batches.
PARALLEL_PARSE_MIN_FILES = 2_000
_WORKERS = min(cores(), 8)
_CHUNK_FILES = 100
_worker_options: IngestOptions | None = None


def _init_worker(options: IngestOptions, parent_alive: Connection) -> None:
    global _worker_options
    _worker_options = options
    # Ctrl-C reaches every process of the terminal's group: the parent stops the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_end_with_parent, args=(parent_alive,), name="gca-parent", daemon=True).start()


def _end_with_parent(parent_alive: Connection) -> None:
    """End this worker when its parent ends, even by SIGKILL: the parent holds the only
    writing end of the pipe, which the system closes then (nothing is ever written)."""
    try:
        parent_alive.recv_bytes()
    except (EOFError, OSError):
        pass
    os._exit(1)


def _parse_chunk(items: list[tuple[str, str]]) -> list[ParseOutcome]:
    assert _worker_options is not None
    return [parse_file(Path(path), name, _worker_options) for path, name in items]


class ParsePool:
    """Worker processes (forkserver: a fresh process, never a fork of this one with its
    DuckDB threads) parsing whole batches ahead of the store.

    The workers end with this process, however it ends (_end_with_parent). The forkserver and
    the resource tracker end when the last process holding their pipes does, and the workers
    hold them: before, a killed ingest left all of them running, holding its stdout and
    stderr (`gca ingest ... | tee log` never returned)."""

    def __init__(self, options: IngestOptions) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("forkserver")
        # each worker gets a copy of the reading end as it starts; the writing end stays here
        reading, self._alive = context.Pipe(duplex=False)
        self._pool = ProcessPoolExecutor(
            max_workers=_WORKERS, mp_context=context, initializer=_init_worker, initargs=(options, reading)
        )
        self._futures: dict[int, list[Future[list[ParseOutcome]]]] = {}

    def submit(self, key: int, batch: list[tuple[Path, FileFormat]]) -> None:
        if key in self._futures:
            return
        items = [(str(path), fmt.name) for path, fmt in batch]
        self._futures[key] = [
            self._pool.submit(_parse_chunk, items[c : c + _CHUNK_FILES]) for c in range(0, len(items), _CHUNK_FILES)
        ]

    def results(self, key: int) -> list[ParseOutcome] | None:
        """The batch's outcomes in order; None when the pool broke (a worker could not
        start, e.g. when the main module cannot be imported again, or was killed)."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return [outcome for future in self._futures.pop(key) for outcome in future.result()]
        except (BrokenProcessPool, OSError, EOFError):
            return None

    def close(self, abandon: bool = False) -> None:
        """Stop the workers once their chunk is parsed; with `abandon` (an interrupted ingest),
        at once."""
        if abandon:
            self._alive.close()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._alive.close()


def parse_pool_for(options: IngestOptions, files: int) -> ParsePool | None:
    """Worker processes for `files` files to parse, when there are enough of them (and cores)."""
    return ParsePool(options) if files >= PARALLEL_PARSE_MIN_FILES and _WORKERS > 1 else None


@dataclass(frozen=True)
class ParseFailure:
    """Why a file could not be parsed, in a form that crosses process boundaries."""

    kind: str  # the GcaError subclass's name
    message: str
    hint: str | None

    def error(self) -> GcaError:
        import gpucluster_analysis.errors as errors

        cls = getattr(errors, self.kind, InputError)
        return cls(self.message, self.hint)


# size, content hash, rows by table, seconds; or why not
ParseOutcome = tuple[int, str, dict[str, list[dict[str, object]]], float] | ParseFailure


def parse_file(path: Path, format_name: str, options: IngestOptions) -> ParseOutcome:
    """Read, hash and parse one file of a parse-only format: no database I/O, so worker
    processes can run it."""
    started = time.perf_counter()
    fmt = format_named(format_name)
    try:
        size = path.stat().st_size
        if fmt.parse_hashed is not None:
            digest, rows = fmt.parse_hashed(path, options)
        else:
            digest = sha256_of(path)
            assert fmt.parse is not None  # a parse-only format: plan_segments sends only those here
            rows = fmt.parse(path, options)
    except GcaError as e:
        return ParseFailure(type(e).__name__, e.message, e.hint)
    except DAMAGED_GZIP as e:
        error = damaged_gzip(path, e)
        return ParseFailure(type(error).__name__, error.message, error.hint)
    except OSError as e:
        return ParseFailure(
            "InputError", f"{path}: cannot read: {e.strerror or e}", "check the path and its permissions"
        )
    return size, digest, rows, time.perf_counter() - started
