"""Storing files of parse-only formats (job logs) many per transaction: each file parsed whole
before anything is written, so one that cannot be read fails alone; the batch's rows written in
one transaction, so a failing write stores none of them. A commit per file would cost more
than classifying the file (~5 ms against ~1.5 ms)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from gpucluster_analysis.errors import GcaError, InputError, StoreError
from gpucluster_analysis.ingest.base import FileFormat, FileReport, IngestOptions
from gpucluster_analysis.ingest.forget import forget_file
from gpucluster_analysis.ingest.parse_pool import ParseFailure, ParseOutcome, parse_file


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
    parsed_files: list[ParseOutcome] | None = None,
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
        if isinstance(done, ParseFailure):
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
            forget_file(con, old_file_id)
        (next_id,) = con.execute("SELECT coalesce(max(file_id), 0) + 1 FROM ingested_files").fetchall()[0]
        now = datetime.now(UTC).replace(tzinfo=None)
        files: list[dict[str, object]] = []
        by_table: dict[str, list[dict[str, object]]] = {}
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
                arrow_rows = pa.Table.from_pylist(table_rows)  # noqa: F841  -- DuckDB reads it by name
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
