"""Ingest files into the store: find them, recognize them, load each in one transaction.

This is the only ingest module that writes to the database. The flow per file:
hash it; skip it if the same bytes were ingested before (unless --replace);
open a transaction; register the file; let its format load it; record counts;
commit. Any error rolls the transaction back, so a failed file leaves the
store exactly as it was.

Small files that come by the thousand (job logs) take another path: their format
only parses them into rows, each file whole before anything is written, and the
rows of up to PARSED_BATCH_FILES files are stored in one transaction. A file that
cannot be parsed fails alone; a failing write stores none of its batch. A commit
per file would cost more than classifying the file (~5 ms against ~1.5 ms).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import duckdb

from gpucluster_analysis.errors import (
    GcaError,
    InputError,
    LfsPointerError,
    NothingToIngestError,
    ParseError,
    StoreError,
    StrictRejectsError,
)
from gpucluster_analysis.ingest.base import (
    FileFormat,
    FileReport,
    IngestOptions,
    LoadContext,
)
from gpucluster_analysis.ingest.files import (
    DAMAGED_GZIP,
    LFS_POINTER,
    damaged_gzip,
    not_lfs_pointer,
    read_head,
    sha256_of,
)
from gpucluster_analysis.ingest.logs.joblogs import LOG_LIKE_SUFFIXES
from gpucluster_analysis.ingest.registry import (
    FORMATS,
    claim_by_path,
    detect_format,
    format_named,
    sample_kinds,
)
from gpucluster_analysis.ingest.samples import Duplicates, compare_new, hand_over
from gpucluster_analysis.sqlfiles import run_script

if TYPE_CHECKING:  # multiprocessing is imported only where worker processes start
    from multiprocessing.connection import Connection

# Tables whose rows carry the file_id of the file they came from.
_CONTRIBUTING_TABLES = (
    "rejects",
    "jobs",
    "attempts",
    "allocations",
    "machines",
    "gpu_samples",
    "gpu_sample_details",
    "host_samples",
    "attempt_hosts",
    "gpu_bindings",
    "gpu_devices",
    "gpu_events",
    "job_logs",
    "pending_reasons",
    "quotas",
    "sacct_records",
    "sample_spans",
    "gpu_samples_duplicates",
    "gpu_sample_details_duplicates",
    "host_samples_duplicates",
)
_TEMP_PREFIXES = ("stage_",)
# Parse-only formats (job logs) are stored this many files per transaction.
PARSED_BATCH_FILES = 2000
# Below this size a file loads before progress polling would show anything.
_POLL_MIN_BYTES = 8 << 20
# files at least this big are hashed beside their load when their path is new (ingest_file)
_HASH_BESIDE_MIN_BYTES = 64 << 20
# Why a log-like file in a walked directory was not ingested.
UNPLACED_LOG = "a job log whose job gca cannot tell from its path (see --log-pattern)"
DANGLING_LINK = "a symbolic link whose target does not exist"
# The public Philly trace ships as trace-data.tar.gz.
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".tar.bz2", ".tar.xz", ".7z")


class IngestListener(Protocol):
    """Receives progress; the CLI draws it, tests may ignore it."""

    def skipped(self, path: Path, reason: str) -> None: ...
    def planned(self, files: int) -> None: ...
    def file_started(self, path: Path, format_name: str, size: int) -> None: ...
    def file_progress(self, fraction: float) -> None: ...
    def file_finished(self, report: FileReport) -> None: ...


class _Silent:
    def skipped(self, path: Path, reason: str) -> None: ...
    def planned(self, files: int) -> None: ...
    def file_started(self, path: Path, format_name: str, size: int) -> None: ...
    def file_progress(self, fraction: float) -> None: ...
    def file_finished(self, report: FileReport) -> None: ...


def plan_files(
    paths: list[Path], format_name: str | None, listener: IngestListener, options: IngestOptions | None = None
) -> list[tuple[Path, FileFormat]]:
    """Resolve PATHs to (file, format) pairs before anything is stored.

    A file named explicitly must exist, be readable and be recognized (else
    InputError). Inside a directory, unrecognized files and symbolic links to nothing
    are reported as skipped, job logs whose job gca cannot tell from their path
    separately. Directories holding no file gca reads are a NothingToIngestError.
    """
    options = options or IngestOptions()
    forced = format_named(format_name) if format_name else None
    plan: list[tuple[Path, FileFormat]] = []
    found = 0  # files inside the directories
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or directory")
        if path.is_dir():
            for child in _walk(path):
                found += 1
                if child.is_symlink() and not child.exists():
                    listener.skipped(child, DANGLING_LINK)
                    continue
                try:
                    fmt = _recognize(child, forced, options)
                except LfsPointerError as e:  # a clone without git-lfs: say so, ingest the rest
                    listener.skipped(child, f"{e.message.split(': ', 1)[1]} ({e.hint})")
                    continue
                if fmt is None and child.name.endswith(LOG_LIKE_SUFFIXES):
                    listener.skipped(child, UNPLACED_LOG)
                elif fmt is None:
                    listener.skipped(child, "not a format gca reads")
                else:
                    plan.append((child, fmt))
            continue
        fmt = _recognize(path, forced, options)
        if fmt is None and path.name.endswith(_ARCHIVE_SUFFIXES):
            raise InputError(
                f"{path}: an archive; gca reads the files inside it",
                hint=f"extract it first (e.g. tar xzf {path.name}) and ingest the folder",
            )
        if fmt is None and path.name.endswith(LOG_LIKE_SUFFIXES):
            raise InputError(
                f"{path}: looks like a job log, but its path does not say which job it belongs to",
                hint="name the layout with --log-pattern, e.g. --log-pattern '{job_id}/{attempt}/stderr.txt'",
            )
        if fmt is None:
            raise InputError(
                f"{path}: not a format gca recognizes",
                hint="pass --format NAME if it is one; `gca ingest --help` lists the formats",
            )
        plan.append((path, fmt))
    if paths and not plan:
        raise _nothing_to_ingest(paths, found)
    return plan


def _nothing_to_ingest(folders: list[Path], found: int) -> NothingToIngestError:
    """Only folders get here: a file named explicitly that gca cannot read is an InputError."""
    shown = ", ".join(str(p) for p in folders[:3]) + (f" and {len(folders) - 3:,} more" if len(folders) > 3 else "")
    one = len(folders) == 1
    if not found:
        return NothingToIngestError(
            f"{shown}: nothing to ingest, {'an empty folder' if one else 'empty folders'}",
            hint="check the path: is its disk mounted, are the files there yet?",
        )
    which = (
        f"{'its' if one else 'their'} only file is not"
        if found == 1
        else f"none of {'its' if one else 'their'} {found:,} files is"
    )
    return NothingToIngestError(
        f"{shown}: nothing to ingest, {which} one gca reads (listed as skipped)",
        hint="pass --format NAME if they are one; `gca ingest --help` lists the formats",
    )


def _walk(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(root) / name


def _recognize(path: Path, forced: FileFormat | None, options: IngestOptions) -> FileFormat | None:
    if forced is None and (by_path := claim_by_path(path, options)) is not None:
        return by_path
    try:
        head = read_head(path)
    except InputError:  # a damaged gzip, or a Git LFS pointer named *.gz
        not_lfs_pointer(path)
        raise
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from e
    if head.startswith(LFS_POINTER.decode()):
        not_lfs_pointer(path)
    return forced if forced else detect_format(path, head)


def ingest_paths(
    con: duckdb.DuckDBPyConnection,
    paths: list[Path],
    options: IngestOptions,
    *,
    format_name: str | None = None,
    listener: IngestListener | None = None,
) -> list[FileReport]:
    """Ingest every file under `paths`; one FileReport per file, in order."""
    listener = listener or _Silent()
    plan = plan_files(paths, format_name, listener, options)
    listener.planned(len(plan))
    run_script(con, "ingest", "macros", {})
    segments = _segments(plan)
    batches = [k for k, (i, j, parsed) in enumerate(segments) if parsed]
    parse_files = sum(segments[k][1] - segments[k][0] for k in batches)
    pool = _ParsePool(options) if parse_files >= PARALLEL_PARSE_MIN_FILES and _WORKERS > 1 else None
    reports: list[FileReport] = []
    reader = _ReadAhead(options)
    # DuckDB checkpoints the store every 16 MB of log by default: a day of one node's telemetry
    # is that much, and a checkpoint rewrites the table's last row groups. Checkpoint once, at
    # the end, instead (the log keeps every committed file safe meanwhile).
    threshold = con.execute("SELECT current_setting('checkpoint_threshold')").fetchall()[0][0]
    con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_BYTES}B'")
    try:
        for k, (i, j, parsed) in enumerate(segments):
            if parsed:
                done = None
                if pool is not None:
                    # keep the workers busy with the next batches while this one is stored
                    for ahead in batches[batches.index(k) : batches.index(k) + 3]:
                        pool.submit(ahead, plan[segments[ahead][0] : segments[ahead][1]])
                    done = pool.results(k)
                    if done is None:  # the workers could not start or died: parse here from now on
                        pool.close()
                        pool = None
                for report in ingest_parsed(con, plan[i:j], options, done):
                    listener.file_finished(report)
                    reports.append(report)
                continue
            path, fmt = plan[i]
            reader.submit(i, path, fmt)
            for ahead in segments[k + 1 : k + 1 + READ_AHEAD_FILES]:  # read the next files while this one is stored
                if not ahead[2]:
                    reader.submit(ahead[0], *plan[ahead[0]])
            try:
                report = ingest_file(con, path, fmt, options, listener, prepared=reader.take(i))
            except GcaError as e:
                report = FileReport(path, fmt.name, "failed", message=str(e), error=e)
            except OSError as e:  # vanished or unreadable between planning and loading; the store is unchanged
                report = _unreadable(path, fmt, e)
            listener.file_finished(report)
            reports.append(report)
        _count_duplicates(reports, compare_new(con, sample_kinds()))
    except BaseException:
        if pool is not None:
            pool.close(abandon=True)
            pool = None
        raise
    finally:
        reader.close()
        if pool is not None:
            pool.close()
        con.execute(f"SET checkpoint_threshold = '{threshold}'")
    return reports


def _count_duplicates(reports: list[FileReport], found: dict[int, Duplicates]) -> None:
    """The telemetry samples each file stored that files before it had (ingest/samples.py):
    counted as duplicates, not as its rows."""
    for report in reports:
        if report.file_id in found:
            duplicates = found[report.file_id]
            report.rows = max(report.rows - duplicates.samples, 0)
            report.duplicates, report.differing = duplicates.samples, duplicates.differing


CHECKPOINT_BYTES = 256 << 20


# A file read ahead is held in memory whole until its turn: only files up to this size
# (a day of one node's nvidia-smi log at 1 s is ~90 MB, of its dcgm-exporter scrapes at 10 s
# ~160 MB); bigger ones stream as they load.
READ_AHEAD_MAX_BYTES = 256 << 20
# Files read ahead at once, each in its own thread: with the one being stored, two cores stay
# busy even where reading a file takes longer than storing it (DCGM's query_range answers).
READ_AHEAD_FILES = 2


class _ReadAhead:
    """Reads the next file (its format's `prepare`, no database I/O) in a thread while the
    current one is stored: on two cores, reading and storing then overlap."""

    def __init__(self, options: IngestOptions) -> None:
        self._options = options
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[int, Future[_Prepared]] = {}

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

    def take(self, index: int) -> Future[_Prepared] | None:
        return self._futures.pop(index, None)

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class _Prepared:
    digest: str
    result: object  # what the format's `prepare` returned
    error: Exception | None  # or what it raised: the file's error, raised when its turn comes


def _read_ahead(prepare: Callable[[Path, IngestOptions], object], path: Path, options: IngestOptions) -> _Prepared:
    digest = sha256_of(path)
    try:
        return _Prepared(digest, prepare(path, options), None)
    except Exception as e:  # noqa: BLE001 (handed to the main thread, which raises it)
        return _Prepared(digest, None, e)


def _segments(plan: list[tuple[Path, FileFormat]]) -> list[tuple[int, int, bool]]:
    """plan[i:j] pieces in order: a batch of up to PARSED_BATCH_FILES files of one
    parse-only format (True), or one file loaded on its own (False)."""
    out, i = [], 0
    while i < len(plan):
        fmt = plan[i][1]
        if fmt.parse is None:
            out.append((i, i + 1, False))
            i += 1
            continue
        j = i
        while j < len(plan) and plan[j][1] is fmt and j - i < PARSED_BATCH_FILES:
            j += 1
        out.append((i, j, True))
        i = j
    return out


# Reading, hashing and classifying job logs is most of their ingest (100k logs: ~30 s on
# one core); worker processes do it for big runs while this one stores the batches.
PARALLEL_PARSE_MIN_FILES = 2_000
_WORKERS = min(os.cpu_count() or 1, 8)
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


def _parse_chunk(items: list[tuple[str, str]]) -> list[_Outcome]:
    assert _worker_options is not None
    return [parse_file(Path(path), name, _worker_options) for path, name in items]


class _ParsePool:
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
        self._futures: dict[int, list] = {}  # type: ignore[type-arg]

    def submit(self, key: int, batch: list[tuple[Path, FileFormat]]) -> None:
        if key in self._futures:
            return
        items = [(str(path), fmt.name) for path, fmt in batch]
        self._futures[key] = [
            self._pool.submit(_parse_chunk, items[c : c + _CHUNK_FILES]) for c in range(0, len(items), _CHUNK_FILES)
        ]

    def results(self, key: int) -> list[_Outcome] | None:
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


def _unreadable(path: Path, fmt: FileFormat, e: OSError) -> FileReport:
    error = InputError(f"{path}: cannot read: {e.strerror or e}", hint="check the path and its permissions")
    return FileReport(path, fmt.name, "failed", message=str(error), error=error)


@dataclass
class _ParsedFile:
    """A file of a parse-only format, read and parsed, waiting for its batch to be stored."""

    path: Path
    fmt: FileFormat
    key: str  # resolved path, as ingested_files records it
    size: int
    digest: str
    replaces: list[int]  # file_ids of earlier ingests of this path (--replace)
    rows: dict[str, list[dict[str, object]]]  # by table, without file_id
    seconds: float

    @property
    def main_rows(self) -> int:
        return len(self.rows.get(self.fmt.main_table or "", []))


def ingest_parsed(
    con: duckdb.DuckDBPyConnection,
    batch: list[tuple[Path, FileFormat]],
    options: IngestOptions,
    parsed_files: list[_Outcome] | None = None,
) -> list[FileReport]:
    """Store files of parse-only formats (job logs) many per transaction.

    Each file is parsed whole before anything is written, so a file that cannot be read
    fails alone; the batch's rows are then written in one transaction, so a failing write
    stores none of them and leaves the store as it was. A file is identified by its path
    (two jobs can leave identical logs): the same path with the same bytes is unchanged,
    with other bytes it needs --replace. `parsed_files`: the batch already read and
    parsed (`parse_file`, by worker processes); else it is parsed here.
    """
    resolved = _resolve_all([path for path, _ in batch])
    previous: dict[str, list[tuple[int, str]]] = {}
    for file_id, path_text, digest in con.execute(
        "SELECT file_id, path, content_hash FROM ingested_files WHERE path IN (SELECT unnest(?))", [resolved]
    ).fetchall():
        previous.setdefault(path_text, []).append((file_id, digest))
    if parsed_files is None:
        parsed_files = [parse_file(path, fmt.name, options) for path, fmt in batch]
    outcomes: list[FileReport | _ParsedFile] = []
    for (path, fmt), key, done in zip(batch, resolved, parsed_files, strict=True):
        if isinstance(done, _Failure):
            error = done.error()
            outcomes.append(FileReport(path, fmt.name, "failed", message=str(error), error=error))
            continue
        size, digest, rows, seconds = done
        before = previous.get(key, [])
        if any(d == digest for _, d in before) and not options.replace:
            outcomes.append(
                FileReport(
                    path,
                    fmt.name,
                    "unchanged",
                    message="ingested before with the same content; nothing to do (--replace reloads it)",
                )
            )
            continue
        if before and not options.replace:
            error = InputError(
                f"{path}: ingested before with different content", hint="pass --replace to replace what it contributed"
            )
            outcomes.append(FileReport(path, fmt.name, "failed", message=str(error), error=error))
            continue
        outcomes.append(_ParsedFile(path, fmt, key, size, digest, [fid for fid, _ in before], rows, seconds))
    parsed = [o for o in outcomes if isinstance(o, _ParsedFile)]
    failure: GcaError | None = None
    if parsed:
        try:
            _store_parsed(con, parsed)
        except GcaError as e:  # nothing of the batch was stored: each of its files failed
            failure = e
    return [
        o
        if isinstance(o, FileReport)
        else FileReport(o.path, o.fmt.name, "failed", message=str(failure), error=failure)
        if failure
        else FileReport(o.path, o.fmt.name, "replaced" if o.replaces else "loaded", rows=o.main_rows, seconds=o.seconds)
        for o in outcomes
    ]


@dataclass(frozen=True)
class _Failure:
    """Why a file could not be parsed, in a form that crosses process boundaries."""

    kind: str  # the GcaError subclass's name
    message: str
    hint: str | None

    def error(self) -> GcaError:
        import gpucluster_analysis.errors as errors

        cls = getattr(errors, self.kind, InputError)
        return cls(self.message, self.hint)


# size, content hash, rows by table, seconds; or why not
_Outcome = tuple[int, str, dict[str, list[dict[str, object]]], float] | _Failure


def parse_file(path: Path, format_name: str, options: IngestOptions) -> _Outcome:
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
            rows = fmt.parse(path, options)  # type: ignore[misc]
    except GcaError as e:
        return _Failure(type(e).__name__, e.message, e.hint)
    except DAMAGED_GZIP as e:
        error = damaged_gzip(path, e)
        return _Failure(type(error).__name__, error.message, error.hint)  # type: ignore[attr-defined]
    except OSError as e:
        return _Failure("InputError", f"{path}: cannot read: {e.strerror or e}", "check the path and its permissions")
    return size, digest, rows, time.perf_counter() - started


def _resolve_all(paths: list[Path]) -> list[str]:
    """Absolute, symlink-free paths, as Path.resolve gives them, with each folder resolved
    once from its parent's resolution (resolving each file stats every folder on its path:
    for 100k job logs, one folder each, that was the main cost after parsing)."""
    folders: dict[Path, Path] = {}

    def folder_of(d: Path) -> Path:
        known = folders.get(d)
        if known is None:
            if d.parent == d or d.name in ("", ".", "..") or d.is_symlink():
                known = d.resolve()
            else:
                known = folder_of(d.parent) / d.name
            folders[d] = known
        return known

    out = []
    for path in paths:
        if ".." in path.parts or path.is_symlink():
            out.append(str(path.resolve()))
        else:
            out.append(str(folder_of(path.parent) / path.name))
    return out


def _store_parsed(con: duckdb.DuckDBPyConnection, parsed: list[_ParsedFile]) -> None:
    import pyarrow as pa

    con.execute("BEGIN TRANSACTION")
    try:
        for old_file_id in (fid for p in parsed for fid in p.replaces):
            _forget_file(con, old_file_id)
        (next_id,) = con.execute("SELECT coalesce(max(file_id), 0) + 1 FROM ingested_files").fetchall()[0]
        now = datetime.now(UTC).replace(tzinfo=None)
        files, by_table = [], {}  # type: ignore[var-annotated]
        for file_id, p in enumerate(parsed, start=next_id):
            files.append(
                {
                    "file_id": file_id,
                    "path": p.key,
                    "size_bytes": p.size,
                    "content_hash": p.digest,
                    "format": p.fmt.name,
                    "time_zone": None,
                    "rows_loaded": p.main_rows,
                    "rejects": 0,
                    "seconds": p.seconds,
                    "ingested_at": now,
                }
            )
            for table, table_rows in p.rows.items():
                by_table.setdefault(table, []).extend({**r, "file_id": file_id} for r in table_rows)
        for table, table_rows in [("ingested_files", files), *by_table.items()]:
            if table_rows:
                arrow_rows = pa.Table.from_pylist(table_rows)  # noqa: F841 (read by DuckDB by name)
                con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM arrow_rows")
        con.execute("COMMIT")
    except BaseException as e:
        con.execute("ROLLBACK")
        if isinstance(e, duckdb.InterruptException):  # gca was interrupted (db/connect.py, interrupt_queries)
            raise KeyboardInterrupt from e
        if isinstance(e, duckdb.Error):
            raise StoreError(
                f"{parsed[0].path} and {len(parsed) - 1} more files: storing failed: {str(e).splitlines()[0]}"
            ) from e
        raise


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    fmt: FileFormat,
    options: IngestOptions,
    listener: IngestListener,
    *,
    prepared: Future[_Prepared] | None = None,
) -> FileReport:
    """Load one file in its own transaction. `prepared`: the file hashed and read ahead by
    its format's `prepare` (in a thread); its errors are the file's, raised where loading starts."""
    started = time.perf_counter()
    size = path.stat().st_size
    listener.file_started(path, fmt.name, size)
    ahead = prepared.result() if prepared is not None else None
    resolved = str(path.resolve())
    hashing: Future[str] | None = None
    if ahead is not None:
        digest = ahead.digest
    elif (
        size >= _HASH_BESIDE_MIN_BYTES
        and not options.replace
        and not con.execute("SELECT 1 FROM ingested_files WHERE path = ?", [resolved]).fetchall()
    ):
        # A path never ingested: its bytes are hashed beside the load, on another core, not
        # before it. The same bytes under another name are found when the load is done, and
        # the file is then taken back as unchanged (a re-run of the same path hashes first).
        hashing = _hash_beside(path)
        digest = ""
    else:
        digest = sha256_of(path, _byte_progress(listener, size))
    previous = (
        con.execute(
            "SELECT file_id, path, content_hash FROM ingested_files WHERE content_hash = ? OR path = ? ORDER BY file_id",
            [digest, resolved],
        ).fetchall()
        if hashing is None
        else []
    )
    same_bytes = [row for row in previous if row[2] == digest]
    if same_bytes and not options.replace:
        return _unchanged(path, fmt, same_bytes[0][1])
    if previous and not options.replace:
        raise InputError(
            f"{path}: ingested before with different content",
            hint="pass --replace to replace what it contributed",
        )
    head = read_head(path)
    con.execute("BEGIN TRANSACTION")
    try:
        for old_file_id, _, _ in previous:
            _forget_file(con, old_file_id)
        file_id = _register(con, path, size, digest, fmt, options)
        with _watch_progress(con, listener, poll=size >= _POLL_MIN_BYTES) as on_statement:
            ctx = LoadContext(
                con=con,
                path=path,
                file_id=file_id,
                options=options,
                head=head,
                on_statement=on_statement,
                prepared=ahead.result if ahead is not None else None,
            )
            if ahead is not None and ahead.error is not None:
                raise ahead.error
            counts = fmt.load(ctx)
        if hashing is not None:
            digest = hashing.result()
            if earlier := con.execute(
                "SELECT path FROM ingested_files WHERE content_hash = ? ORDER BY file_id LIMIT 1", [digest]
            ).fetchall():
                raise _SameBytes(earlier[0][0])
            con.execute("UPDATE ingested_files SET content_hash = ? WHERE file_id = ?", [digest, file_id])
        seconds = time.perf_counter() - started
        con.execute(
            "UPDATE ingested_files SET rows_loaded = ?, rejects = ?, seconds = ?, time_zone = coalesce(?, time_zone)"
            " WHERE file_id = ?",
            [counts.rows, counts.rejects, seconds, counts.time_zone, file_id],
        )
        samples = (
            con.execute(
                "SELECT line, reason FROM rejects WHERE file_id = ? ORDER BY line NULLS LAST LIMIT 3", [file_id]
            ).fetchall()
            if counts.rejects
            else []
        )
        if counts.rejects and not counts.rows:
            raise _all_rejected(con, path, file_id, counts.rejects)
        if options.strict and counts.rejects:
            line, reason = samples[0]
            where = f"{path}:{line}" if line else str(path)
            raise StrictRejectsError(
                f"{where}: {reason} ({counts.rejects} rejected rows in all; nothing stored from this file)",
                hint="fix the rows, or drop --strict to store the file with its rejects recorded",
            )
        con.execute("COMMIT")
    except BaseException as e:
        con.execute("ROLLBACK")
        _drop_staging(con)
        if isinstance(e, _SameBytes):
            return _unchanged(path, fmt, e.other)
        if isinstance(e, duckdb.InterruptException):  # gca was interrupted (db/connect.py, interrupt_queries)
            raise KeyboardInterrupt from e
        if isinstance(e, duckdb.Error):
            raise StoreError(f"{path}: loading failed: {str(e).splitlines()[0]}") from e
        if isinstance(e, DAMAGED_GZIP):  # a .gz cut short, found only when read to its end
            raise damaged_gzip(path, e) from None
        raise
    _drop_staging(con)
    return FileReport(
        path,
        fmt.name,
        "replaced" if previous else "loaded",
        rows=counts.rows,
        rejects=counts.rejects,
        seconds=time.perf_counter() - started,
        superseded=counts.superseded,
        unchanged=counts.unchanged,
        file_id=file_id,
        reject_samples=[(line, reason) for line, reason in samples],
        warnings=counts.warnings,
    )


def _unchanged(path: Path, fmt: FileFormat, other: str) -> FileReport:
    """A file with the bytes of one ingested before (`other`, its path): nothing to do."""
    return FileReport(
        path,
        fmt.name,
        "unchanged",
        message=f"same content as {other}, ingested before; nothing to do (--replace reloads it)",
    )


class _SameBytes(Exception):
    """A file hashed beside its load holds the bytes of one ingested before (`other`, its path)."""

    def __init__(self, other: str) -> None:
        super().__init__(other)
        self.other = other


def _hash_beside(path: Path) -> Future[str]:
    """sha256_of(path) in a thread of its own (hashlib lets go of the GIL on big reads)."""
    future: Future[str] = Future()

    def run() -> None:
        try:
            future.set_result(sha256_of(path))
        except BaseException as e:  # e.g. the file became unreadable: the load says so too
            future.set_exception(e)

    threading.Thread(target=run, name="gca-hash", daemon=True).start()
    return future


def _all_rejected(con: duckdb.DuckDBPyConnection, path: Path, file_id: int, rejects: int) -> ParseError:
    """A file that stored nothing and rejected rows failed: its most common reason is the likely cause."""
    kind, count, line, example = con.execute(
        "SELECT reason_kind(reason, text) AS kind, count(*), min(line), arg_min(reason, line) FROM rejects"
        " WHERE file_id = ? GROUP BY kind ORDER BY count(*) DESC, kind LIMIT 1",
        [file_id],
    ).fetchall()[0]
    where = f"{path}:{line}" if line else str(path)
    share = "all" if count == rejects else f"{count:,} of the {rejects:,}"
    return ParseError(
        f"{where}: every row was rejected, nothing stored ({rejects:,} rows); the likely cause, in {share}: {example}",
        hint="check that this is the file (and --format) you meant; `gca ingest --help` lists the formats",
    )


def _register(
    con: duckdb.DuckDBPyConnection, path: Path, size: int, digest: str, fmt: FileFormat, options: IngestOptions
) -> int:
    zone = (options.zone or fmt.default_zone) if fmt.default_zone else None
    (file_id,) = con.execute(
        "INSERT INTO ingested_files SELECT coalesce(max(file_id), 0) + 1, ?, ?, ?, ?, ?, 0, 0, 0, ? FROM ingested_files"
        " RETURNING file_id",
        [str(path.resolve()), size, digest, fmt.name, zone, datetime.now(UTC).replace(tzinfo=None)],
    ).fetchall()[0]
    return int(file_id)


def _forget_file(con: duckdb.DuckDBPyConnection, file_id: int) -> None:
    (format_name,) = con.execute("SELECT format FROM ingested_files WHERE file_id = ?", [file_id]).fetchall()[0]
    fmt = next((f for f in FORMATS if f.name == format_name), None)
    if fmt is not None and fmt.forget is not None:
        fmt.forget(con, file_id)
    if fmt is not None and fmt.sample_kind:
        hand_over(con, file_id, sample_kinds()[fmt.sample_kind])
    for table in _CONTRIBUTING_TABLES:
        con.execute(f"DELETE FROM {table} WHERE file_id = ?", [file_id])
    con.execute("DELETE FROM ingested_files WHERE file_id = ?", [file_id])


def _drop_staging(con: duckdb.DuckDBPyConnection) -> None:
    temps = con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    for (name,) in temps:
        if name.startswith(_TEMP_PREFIXES):
            con.execute(f"DROP TABLE IF EXISTS {name}")
    # data a reader handed to DuckDB in place (con.register: Arrow tables in memory)
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal").fetchall()
    for (name,) in views:
        if name.startswith(_TEMP_PREFIXES):
            con.unregister(name)


def _byte_progress(listener: IngestListener, size: int):  # type: ignore[no-untyped-def]
    # Hashing is the first ~10% of a file's work; loading the rest.
    done = 0

    def on_bytes(n: int) -> None:
        nonlocal done
        done += n
        listener.file_progress(0.1 * done / max(size, 1))

    return on_bytes


@contextmanager
def _watch_progress(
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


def logs_without_jobs(con: duckdb.DuckDBPyConnection, limit: int = 3) -> tuple[int, list[str]]:
    """Job logs in the store whose job is not (yet) in it: their count and a few job ids."""
    rows = con.execute(
        "SELECT DISTINCT l.job_id FROM job_logs l WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = l.job_id)"
        " ORDER BY l.job_id"
    ).fetchall()
    return len(rows), [r[0] for r in rows[:limit]]
