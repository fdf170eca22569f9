"""Create or upgrade the store's tables from the DDL files in `sql/schema/`.

The schema's version is written once, in the first line of the file that brings it
(`-- Schema version 9: ...`); a file without one (009_kept_results) changes no version.
`SCHEMA_VERSION` is the highest. A file's statements read its own version as the variable
`migration_version` (`UPDATE schema_version SET version = getvariable('migration_version') ...`).
"""

from __future__ import annotations

import re
from functools import cache

import duckdb

from gpucluster_analysis.errors import StoreError
from gpucluster_analysis.sqlfiles import list_sql, load_sql

_VERSION_LINE = re.compile(r"-- Schema version (\d+):")


@cache
def migration_versions() -> dict[str, int | None]:
    """Each `sql/schema/` file (by name, in the order applied) -> the version its first line declares, or None."""
    versions: dict[str, int | None] = {}
    for name in list_sql("schema"):
        found = _VERSION_LINE.match(load_sql("schema", name))
        versions[name] = int(found.group(1)) if found else None
    return versions


SCHEMA_VERSION = max(v for v in migration_versions().values() if v is not None)


def stored_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The schema version the store on `con` is at; None for a database without gca's schema."""
    try:
        version = con.execute("SELECT max(version) FROM schema_version").fetchall()[0][0]
    except duckdb.CatalogException:  # no such table
        return None
    return int(version) if version is not None else None


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Bring the store to the current schema in one transaction (a failed step leaves it as it
    was): every `sql/schema/*.sql` file in name order, each idempotent, unless the store is at
    SCHEMA_VERSION already (a store reaches it only through every file before); then the views."""
    version = stored_version(con)
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"the store has schema version {version}, newer than this gca ({SCHEMA_VERSION})",
            hint="upgrade gca, or ingest into a new --db file",
        )
    con.execute("BEGIN TRANSACTION")
    try:
        if version != SCHEMA_VERSION:
            for name, declared in migration_versions().items():
                con.execute("SET VARIABLE migration_version = ?", [declared])
                con.execute(load_sql("schema", name)).fetchall()
            con.execute("RESET VARIABLE migration_version")
        # Each failed attempt's root cause, kept in the store as a view over job_logs so that
        # it is never stale (made again at each open, by this gca's SQL): the same named queries
        # the report uses (which materializes log_attempts as a temp table of that name,
        # shadowing the view).
        con.execute(f"CREATE OR REPLACE VIEW log_attempts AS {load_sql('queries', 'log_attempts')}").fetchall()
        con.execute(
            f"CREATE OR REPLACE VIEW attempt_root_causes AS {load_sql('queries', 'attempt_failures')}"
        ).fetchall()
        if not con.execute("SELECT count(*) FROM schema_version").fetchall()[0][0]:
            con.execute("INSERT INTO schema_version VALUES (?)", [SCHEMA_VERSION]).fetchall()
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
