"""Reading ahead in threads: the next files' formats `prepare` them (hash and read, no database
I/O) while the current one is stored, so that on two cores reading and storing overlap."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gpucluster_analysis.ingest.base import FileFormat, IngestOptions
from gpucluster_analysis.ingest.files import sha256_of

# A file read ahead is held in memory whole until its turn: only files up to this size
# (a day of one node's nvidia-smi log at 1 s is ~90 MB, of its dcgm-exporter scrapes at 10 s
# ~160 MB); bigger ones stream as they load.
READ_AHEAD_MAX_BYTES = 256 << 20
# Files read ahead at once, each in its own thread: with the one being stored, two cores stay
# busy even where reading a file takes longer than storing it (DCGM's query_range answers).
READ_AHEAD_FILES = 2


class ReadAhead:
    """Reads the next file (its format's `prepare`, no database I/O) in a thread while the
    current one is stored: on two cores, reading and storing then overlap."""

    def __init__(self, options: IngestOptions) -> None:
        self._options = options
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[int, Future[Prepared]] = {}

    def submit(self, index: int, path: Path, fmt: FileFormat) -> None:
        if index in self._futures or fmt.prepare is None:
            return
        try:
            size = path.stat().st_size
        except OSError:
            return  # reported when its turn comes
        if size > READ_AHEAD_MAX_BYTES // (8 if path.suffix.lower() == ".gz" else 1):
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=READ_AHEAD_FILES, thread_name_prefix="gca-read-ahead")
        self._futures[index] = self._pool.submit(_read_ahead, fmt.prepare, path, self._options)

    def take(self, index: int) -> Future[Prepared] | None:
        return self._futures.pop(index, None)

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class Prepared:
    digest: str
    result: object  # what the format's `prepare` returned
    error: Exception | None  # or what it raised: the file's error, raised when its turn comes


def _read_ahead(prepare: Callable[[Path, IngestOptions], object], path: Path, options: IngestOptions) -> Prepared:
    digest = sha256_of(path)
    try:
        return Prepared(digest, prepare(path, options), None)
    except Exception as e:
        return Prepared(digest, None, e)
