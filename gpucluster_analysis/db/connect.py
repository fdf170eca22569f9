"""Open the store (or an in-memory database). This is the one place that calls `duckdb.connect`."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from gpucluster_analysis.db.schema import SCHEMA_VERSION, apply_schema
from gpucluster_analysis.errors import StoreError
from gpucluster_analysis.sqlfiles import run_script


# The connections open_store and open_memory have open, for interrupt_queries.
_open_connections: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def interrupt_queries() -> None:
    """Stop the query running on each open connection, if any: it raises
    duckdb.InterruptException where it runs. Called from another thread (an interrupted gca:
    DuckDB checks Python's signals only between parts of a query, which can take minutes)."""
    for con in list(_open_connections):
        try:
            con.interrupt()
        except duckdb.Error:  # closed meanwhile
            pass


@contextmanager
def open_store(path: Path, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open (creating if needed and writable) the DuckDB store at `path`.

    A read-only open of a file that does not exist is an error rather than a
    silently created empty database.
    """
    path = Path(path)
    if read_only and not path.exists():
        raise StoreError(
            f"{path}: no gca store here",
            hint="run `gca ingest PATH... --db " + str(path) + "` first",
        )
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as e:
        first_line = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise StoreError(
            f"{path}: cannot open the store: {first_line}",
            hint="check that it is a gca DuckDB file and that no other gca process holds it",
        ) from e
    _open_connections.add(con)
    try:
        configure_session(con)
        if not read_only:
            apply_schema(con)
        yield con
    finally:
        _open_connections.discard(con)
        con.close()


@contextmanager
def open_memory() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory database set up as a store's connection, spilling to a temporary
    directory of its own (not the working directory's .tmp) when a query outgrows memory;
    one a killed process left is removed by the next (tempdirs.py)."""
    from gpucluster_analysis.tempdirs import OwnedTempDir

    spill = OwnedTempDir("gca-duckdb-")
    try:
        con = duckdb.connect(":memory:", config={"temp_directory": str(spill.path)})
        _open_connections.add(con)
        try:
            configure_session(con)
            yield con
        finally:
            _open_connections.discard(con)
            con.close()
    finally:
        spill.remove()


def configure_session(con: duckdb.DuckDBPyConnection) -> None:
    """What every gca connection needs before the named queries run (a store or a dataset's views)."""
    # Times are stored as naive UTC; make sure nothing converts them on the way.
    con.execute("SET TimeZone = 'UTC'")
    # Keep progress tracking (gca draws its own bar on stderr) but never let DuckDB print one.
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    run_script(con, "session", "macros", {})


def upgrade_older_store(path: Path) -> bool:
    """Bring a store written by an older gca to the current schema (every schema step only
    adds tables and columns), so that a read-only reader finds what it queries. True when
    it was upgraded; a store that is missing, not gca's, or current is left alone."""
    path = Path(path)
    if not path.exists():
        return False
    with open_store(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "schema_version" not in tables:
            return False
        version = con.execute("SELECT max(version) FROM schema_version").fetchall()[0][0]
    if version is None or version >= SCHEMA_VERSION:
        return False
    try:
        with open_store(path):
            pass
    except StoreError as e:
        raise StoreError(f"{path}: the store has schema version {version} and this gca needs {SCHEMA_VERSION};"
                         f" upgrading it failed: {e.message}",
                         hint="make the file writable once, or ingest into a new --db file") from e
    return True


def store_is_empty(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the store has no ingested files (or no schema at all)."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if "ingested_files" not in tables:
        return True
    return con.execute("SELECT count(*) FROM ingested_files").fetchone()[0] == 0
