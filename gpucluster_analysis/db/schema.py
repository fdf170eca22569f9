"""Create or upgrade the store's tables from the DDL files in `sql/schema/`."""

from __future__ import annotations

import duckdb

from gpucluster_analysis.errors import StoreError
from gpucluster_analysis.sqlfiles import list_sql, load_sql

SCHEMA_VERSION = 9


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply every `sql/schema/*.sql` file in name order; each is idempotent."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if "schema_version" in tables:
        row = con.execute("SELECT max(version) FROM schema_version").fetchall()[0]
        if row and row[0] is not None and row[0] > SCHEMA_VERSION:
            raise StoreError(
                f"the store has schema version {row[0]}, newer than this gca ({SCHEMA_VERSION})",
                hint="upgrade gca, or ingest into a new --db file",
            )
    for name in list_sql("schema"):
        con.execute(load_sql("schema", name)).fetchall()
    # Each failed attempt's root cause, kept in the store as a view over job_logs so that
    # it is never stale: the same named queries the report uses (which materializes
    # log_attempts as a temp table of that name, shadowing the view).
    con.execute(f"CREATE OR REPLACE VIEW log_attempts AS {load_sql('queries', 'log_attempts')}").fetchall()
    con.execute(f"CREATE OR REPLACE VIEW attempt_root_causes AS {load_sql('queries', 'attempt_failures')}").fetchall()
    if not con.execute("SELECT count(*) FROM schema_version").fetchall()[0][0]:
        con.execute("INSERT INTO schema_version VALUES (?)", [SCHEMA_VERSION]).fetchall()
