"""Forgetting what an ingested file contributed (--replace): its format's own forget, its
telemetry samples handed over to the files that also hold them, its rows in every table."""

from __future__ import annotations

import duckdb

from gpucluster_analysis.ingest.registry import FORMATS, sample_kinds
from gpucluster_analysis.ingest.samples import hand_over


def forget_file(con: duckdb.DuckDBPyConnection, file_id: int) -> None:
    (format_name,) = con.execute("SELECT format FROM ingested_files WHERE file_id = ?", [file_id]).fetchall()[0]
    fmt = next((f for f in FORMATS if f.name == format_name), None)
    if fmt is not None and fmt.forget is not None:
        fmt.forget(con, file_id)
    if fmt is not None and fmt.sample_kind:
        hand_over(con, file_id, sample_kinds()[fmt.sample_kind])
    for table in contributing_tables(con):
        con.execute(f'DELETE FROM "{table}" WHERE file_id = ?', [file_id])
    con.execute("DELETE FROM ingested_files WHERE file_id = ?", [file_id])


def contributing_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The store's tables whose rows carry the file_id of the file they came from, read from its
    catalog: a table a new format adds is forgotten with its file without being listed here."""
    return [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_columns() WHERE database_name = current_database()"
            " AND schema_name = 'main' AND column_name = 'file_id' AND table_name <> 'ingested_files'"
            " AND table_name IN (SELECT table_name FROM duckdb_tables() WHERE database_name = current_database())"
            " ORDER BY table_name"
        ).fetchall()
    ]
