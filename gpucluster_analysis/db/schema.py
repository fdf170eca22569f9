"""Create or upgrade the store's tables from the DDL files in `sql/schema/`.

The schema's version is written once, in the first line of the file that brings it
(`-- Schema version 9: ...`); a file without one (009_kept_results) changes no version.
`SCHEMA_VERSION` is the highest. A file's statements read its own version as the variable
`migration_version` (`UPDATE schema_version SET version = getvariable('migration_version') ...`).
"""

from __future__ import annotations

import re

import duckdb

from gpucluster_analysis.errors import StoreError
from gpucluster_analysis.sqlfiles import list_sql, load_sql

_VERSION_LINE = re.compile(r"-- Schema version (\d+):")


def migration_versions() -> dict[str, int | None]:
    """Each `sql/schema/` file (by name, in the order applied) -> the version its first line declares, or None."""
    versions: dict[str, int | None] = {}
    for name in list_sql("schema"):
        found = _VERSION_LINE.match(load_sql("schema", name))
        versions[name] = int(found.group(1)) if found else None
    return versions


SCHEMA_VERSION = max(v for v in migration_versions().values() if v is not None)


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
    for name, version in migration_versions().items():
        con.execute("SET VARIABLE migration_version = ?", [version])
        con.execute(load_sql("schema", name)).fetchall()
    con.execute("RESET VARIABLE migration_version")
    # Each failed attempt's root cause, kept in the store as a view over job_logs so that
    # it is never stale: the same named queries the report uses (which materializes
    # log_attempts as a temp table of that name, shadowing the view).
    con.execute(f"CREATE OR REPLACE VIEW log_attempts AS {load_sql('queries', 'log_attempts')}").fetchall()
    con.execute(f"CREATE OR REPLACE VIEW attempt_root_causes AS {load_sql('queries', 'attempt_failures')}").fetchall()
    if not con.execute("SELECT count(*) FROM schema_version").fetchall()[0][0]:
        con.execute("INSERT INTO schema_version VALUES (?)", [SCHEMA_VERSION]).fetchall()
