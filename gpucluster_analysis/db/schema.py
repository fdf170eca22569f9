"""Create or upgrade the store's tables from the DDL files in `sql/schema/`.

The schema's version is written once, in the first line of the file that brings it
(`-- Schema version 9: ...`); a file without one (009_kept_results) changes no version.
`SCHEMA_VERSION` is the highest. A file's statements read its own version as the variable
`migration_version` (`UPDATE schema_version SET version = getvariable('migration_version') ...`).
"""

from __future__ import annotations

import hashlib
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


@cache
def store_views() -> dict[str, tuple[str, str]]:
    """The views a store keeps, by name: (their SQL, the mark of that SQL written as the view's
    comment). Each failed attempt's root cause is kept as a view over job_logs so that it is
    never stale: the same named queries the report uses (which materializes log_attempts as a
    temp table of that name, shadowing the view). A view whose mark is not this gca's SQL is
    made again as the store opens for writing."""
    views = {
        "log_attempts": load_sql("queries", "log_attempts"),
        "attempt_causes": load_sql("queries", "attempt_causes"),
        "attempt_root_causes": load_sql("queries", "attempt_failures"),
    }
    return {name: (sql, "gca " + hashlib.sha256(sql.encode()).hexdigest()[:16]) for name, sql in views.items()}


def _views_current(con: duckdb.DuckDBPyConnection) -> bool:
    marks = dict(
        con.execute(
            "SELECT view_name, comment FROM duckdb_views() WHERE database_name = current_database() AND NOT internal"
        ).fetchall()
    )
    return all(marks.get(view) == mark for view, (_, mark) in store_views().items())


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Bring the store to the current schema in one transaction (a failed step leaves it as it
    was): every `sql/schema/*.sql` file in name order, each idempotent, unless the store is at
    SCHEMA_VERSION already (a store reaches it only through every file before); then the views,
    unless they are this gca's already."""
    version = stored_version(con)
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"the store has schema version {version}, newer than this gca ({SCHEMA_VERSION})",
            hint="upgrade gca, or ingest into a new --db file",
        )
    if version == SCHEMA_VERSION and _views_current(con):
        return
    con.execute("BEGIN TRANSACTION")
    try:
        if version != SCHEMA_VERSION:
            for name, declared in migration_versions().items():
                con.execute("SET VARIABLE migration_version = ?", [declared])
                con.execute(load_sql("schema", name)).fetchall()
            con.execute("RESET VARIABLE migration_version")
        for view, (sql, mark) in store_views().items():
            con.execute(f"CREATE OR REPLACE VIEW {view} AS {sql}").fetchall()
            con.execute(f"COMMENT ON VIEW {view} IS '{mark}'").fetchall()
        if not con.execute("SELECT count(*) FROM schema_version").fetchall()[0][0]:
            con.execute("INSERT INTO schema_version VALUES (?)", [SCHEMA_VERSION]).fetchall()
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
