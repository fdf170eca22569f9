"""Storing one file in its own transaction: hash it; skip it if the same bytes were ingested
before (unless --replace); register the file; let its format load it; record counts; commit.
Any error rolls the transaction back, so a failed file leaves the store exactly as it was."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from gpucluster_analysis.errors import InputError, ParseError, StoreError, StrictRejectsError
from gpucluster_analysis.ingest.base import FileFormat, FileReport, IngestOptions, LoadContext
from gpucluster_analysis.ingest.files import DAMAGED_GZIP, damaged_gzip, read_head, sha256_of
from gpucluster_analysis.ingest.forget import forget_file
from gpucluster_analysis.ingest.progress import IngestListener, byte_progress, watch_progress
from gpucluster_analysis.ingest.read_ahead import Prepared

_TEMP_PREFIXES = ("stage_",)
# Below this size a file loads before progress polling would show anything.
_POLL_MIN_BYTES = 8 << 20
# files at least this big are hashed beside their load when their path is new (ingest_file)
_HASH_BESIDE_MIN_BYTES = 64 << 20


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    fmt: FileFormat,
    options: IngestOptions,
    listener: IngestListener,
    *,
    prepared: Future[Prepared] | None = None,
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
        digest = sha256_of(path, byte_progress(listener, size))
    previous = (
        con.execute(
            "SELECT file_id, path, content_hash FROM ingested_files WHERE content_hash = ? OR path = ? "
            "ORDER BY file_id",
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
            forget_file(con, old_file_id)
        file_id = _register(con, path, size, digest, fmt, options)
        with watch_progress(con, listener, poll=size >= _POLL_MIN_BYTES) as on_statement:
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
            assert fmt.load is not None  # a format that loads: plan_segments sends the parse-only ones elsewhere
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
