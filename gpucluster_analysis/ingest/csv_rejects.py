"""Rejects from DuckDB-read CSV files: collect the reader's own, place ours on lines.

Scripts under `sql/ingest/` read CSV with `store_rejects`, so DuckDB records
rows of the wrong width or with uncastable cells in `gca_csv_rejects`, with
their line numbers. Rows that parse but make no sense (a time that is not a
time, a utilization of 130%) are rejected by the script itself without a line
number; `place_rejects` finds those lines with one streaming pass.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from gpucluster_analysis.ingest.files import locate_json_keys, locate_prefixes

READER_REJECTS = "gca_csv_rejects"
READER_SCANS = "gca_csv_scans"
_TEXT_LIMIT = 500
# Past this many unplaced rejects the file is mostly garbage; don't scan it for each.
_MAX_PLACED = 100_000


def reset_reader_rejects(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"DROP TABLE IF EXISTS {READER_REJECTS}")
    con.execute(f"DROP TABLE IF EXISTS {READER_SCANS}")


def collect_reader_rejects(con: duckdb.DuckDBPyConnection, file_id: int) -> int:
    """Move DuckDB's CSV reader rejects into `rejects`, one per bad line; return how many."""
    # DuckDB makes the rejects table a temporary one of this connection
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables()"
        " WHERE table_name = ? AND (temporary OR database_name = current_database())",
        [READER_REJECTS],
    ).fetchall()[0][0]
    if not found:
        return 0
    con.execute(
        f"""
        INSERT INTO rejects (file_id, line, reason, text)
        SELECT ?, line,
               CASE error_type
                   WHEN 'TOO MANY COLUMNS' THEN 'too many fields: ' || error_message
                   WHEN 'MISSING COLUMNS' THEN 'too few fields: ' || error_message
                   WHEN 'CAST' THEN 'unreadable value: ' || error_message
                   ELSE lower(error_type) || ': ' || error_message
               END,
               left(csv_line, {_TEXT_LIMIT})
        FROM (SELECT *, row_number() OVER (PARTITION BY line ORDER BY column_idx) AS n
              FROM {READER_REJECTS})
        WHERE n = 1
        """,
        [file_id],
    )
    row = con.execute(f"SELECT count(DISTINCT line) FROM {READER_REJECTS}").fetchone()
    assert row is not None  # an aggregate without GROUP BY: always one row
    count = row[0]
    reset_reader_rejects(con)
    return int(count)


def place_csv_rejects(con: duckdb.DuckDBPyConnection, file_id: int, path: Path) -> None:
    """Fill in line numbers of script-made rejects whose text is the row's first fields."""
    _place(con, file_id, lambda texts: locate_prefixes(path, texts), lambda text: text)


def place_json_rejects(con: duckdb.DuckDBPyConnection, file_id: int, path: Path, key: str) -> None:
    """Fill in line numbers of rejects whose text ends in '<key> <value>' (a JSON record)."""
    marker = f" {key} "

    def value_of(text: str) -> str:
        return text.rsplit(marker, 1)[-1] if marker in text else ""

    _place(con, file_id, lambda values: locate_json_keys(path, key, values), value_of)


def _place(
    con: duckdb.DuckDBPyConnection,
    file_id: int,
    locate: Callable[[set[str]], dict[str, list[int]]],
    key_of: Callable[[str], str],
) -> None:
    rows = con.execute(
        "SELECT rowid, text FROM rejects WHERE file_id = ? AND line IS NULL ORDER BY rowid LIMIT ?",
        [file_id, _MAX_PLACED],
    ).fetchall()
    if not rows:
        return
    by_key: dict[str, list[int]] = {}
    for rowid, text in rows:
        key = key_of(text) if text else ""
        if key:
            by_key.setdefault(key, []).append(rowid)
    found = locate(set(by_key))
    updates = []
    for key, rowids in by_key.items():
        lines = found.get(key, [])
        # When fewer rows were rejected than the file has with this key, the
        # rejected ones are the later copies (duplicates keep the first).
        for rowid, line in zip(rowids, lines[max(len(lines) - len(rowids), 0) :], strict=False):
            updates.append((line, rowid))
    if updates:
        con.executemany("UPDATE rejects SET line = ? WHERE rowid = ?", updates)
