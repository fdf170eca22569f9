"""Helpers the ingest tests share: write an input, ingest it, read the store back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from gpucluster_analysis.analyze.prepare import format_for_csv, jobs_table, prepare
from gpucluster_analysis.db import open_store
from gpucluster_analysis.ingest import IngestOptions, ingest_paths


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def ingest(db: Path, *paths: Path, format_name: str | None = None, **options: object):
    with open_store(db) as con:
        return ingest_paths(con, list(paths), IngestOptions(**options), format_name=format_name)


def assert_loaded(report, rows_: int, rejects_: int) -> None:
    """Loaded with these counts; or, for 0 rows and some rejects, failed as a file that
    stores nothing (every row rejected), saying so."""
    if rows_ == 0 and rejects_:
        assert report.status == "failed", report.message
        assert f"every row was rejected, nothing stored ({rejects_:,} rows)" in report.message, report.message
        return
    assert (report.status, report.rows, report.rejects) == ("loaded", rows_, rejects_), report.message


def rows(db: Path, sql: str, *params: object) -> list[tuple]:
    with open_store(db, read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


@contextmanager
def prepared_store(db: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The store read-only, with what the report reads prepared (its views and temp tables)."""
    with open_store(db, read_only=True) as con:
        prepare(con)
        yield con


def jobs_csv(db: Path) -> dict[str, dict[str, object]]:
    """jobs.csv rows by job_id, formatted as the report writes them."""
    with prepared_store(db) as con:
        table = format_for_csv(jobs_table(con))
    return {row["job_id"]: row for row in table.to_dicts()}


# Every table a GPU telemetry file fills, as the fast-way tests compare them (file ids apart).
TELEMETRY_TABLES = {
    "gpu_samples": "SELECT sample_at, machine_id, gpu_index, util_pct FROM gpu_samples",
    "gpu_sample_details": "SELECT * EXCLUDE (file_id) FROM gpu_sample_details",
    "gpu_devices": "SELECT * EXCLUDE (file_id) FROM gpu_devices",
    "rejects": "SELECT line, reason, text FROM rejects",
    "gpu_events": "SELECT * EXCLUDE (file_id) FROM gpu_events",
    "gpu_workload_labels": "SELECT * EXCLUDE (file_id) FROM gpu_workload_labels",
    "ingested_files": "SELECT format, rows_loaded, rejects FROM ingested_files",
}


def telemetry_stored(db: Path, path: Path, format_name: str, **options: object) -> dict[str, list[tuple]]:
    """Ingest one telemetry file into a new store; every TELEMETRY_TABLES table (rows sorted)
    and the file's status and message."""
    (report,) = ingest(db, path, format_name=format_name, **options)
    with open_store(db, read_only=True) as con:
        out = {name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in TELEMETRY_TABLES.items()}
    out["report"] = [(report.status, report.message.replace(str(path), "<file>"))]
    return out


def headline(db: Path, out: Path) -> dict:
    """The headline numbers (`gca report --json`) of a report on the store at `db`."""
    from gpucluster_analysis.report.build import build_report

    return build_report(db, out).summary
