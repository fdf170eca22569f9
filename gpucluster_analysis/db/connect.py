"""Open the store (or an in-memory database). This is the one place that calls `duckdb.connect`
(ingest/memory.py asks a bare one for DuckDB's default memory limit)."""

from __future__ import annotations

import itertools
import os
import re
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb

from gpucluster_analysis.cores import threads_asked
from gpucluster_analysis.db.fact_macros import fact_macros_sql
from gpucluster_analysis.db.schema import SCHEMA_VERSION, apply_schema, stored_version
from gpucluster_analysis.errors import NotAStoreError, StoreError
from gpucluster_analysis.sqlfiles import load_sql, split_statements

# A DuckDB database file starts with an 8-byte checksum and then these magic bytes. DuckDB
# itself opens other files too (a CSV as an empty database that lives in memory only), so
# gca reads them first.
_DUCKDB_MAGIC = b"DUCK"
_DUCKDB_MAGIC_AT = 8
# The tables that make a DuckDB file a gca store: every gca since the first wrote both (001_core.sql).
_STORE_TABLES = frozenset({"schema_version", "ingested_files"})
_NOT_A_STORE_HINT = "pass --db the store gca ingest wrote, or a path that does not exist yet to create one"


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

    A store is a store: an existing file is opened only when it is a DuckDB database
    holding gca's tables, or one holding nothing at all (which becomes a store). Any
    other file (a CSV, Parquet, another application's DuckDB database, an empty file)
    is a NotAStoreError, raised before anything is written to it. A read-only open of a
    file that does not exist is an error rather than a silently created empty database.
    """
    path = Path(path)
    if path.exists():
        _check_header(path)
        if not read_only and _wal_of(path).exists():
            # Look before opening it for writing: a writable open replays a leftover
            # write-ahead log into the file even if gca then refuses it. (Without one, a
            # writable open that changes nothing leaves the file's bytes as they were, so
            # the check below, on the writable connection, comes in time.)
            probe = _connect(path, read_only=True)
            try:
                _check_store_catalog(probe, path)
            finally:
                _release(probe, path)
    elif read_only:
        raise StoreError(
            f"{path}: no gca store here",
            hint="run `gca ingest PATH... --db " + str(path) + "` first",
        )
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        _create_store(path)
    con = _connect(path, read_only)
    _open_connections.add(con)
    try:
        _check_store_catalog(con, path)
        if not read_only:
            apply_schema(con)
        yield con
    finally:
        _open_connections.discard(con)
        _release(con, path)


def _create_store(path: Path) -> None:
    """A new store at `path` (which did not exist): the bytes of an empty store of the current
    schema, made once per process (running every migration costs a new store ~60 ms; a copy
    well under 1). Placed whole: a store made meanwhile by another process is left as it is."""
    new = path.with_name(f".{path.name}.new-{os.getpid()}")
    try:
        new.write_bytes(_empty_store_bytes())
        os.link(new, path)
    except FileExistsError:
        pass
    except OSError as e:
        raise StoreError(
            f"{path}: cannot create the store: {e.strerror or e}", hint="check that the folder is writable"
        ) from e
    finally:
        new.unlink(missing_ok=True)


@cache
def _empty_store_bytes() -> bytes:
    """An empty store of the current schema (checkpointed, no write-ahead log), as bytes."""
    from gpucluster_analysis.tempdirs import OwnedTempDir

    scratch = OwnedTempDir("gca-store-")
    try:
        made = scratch.path / "empty.duckdb"
        con = _connect(made, read_only=False)
        try:
            configure_session(con)
            apply_schema(con)
        finally:
            _release(con, made)
        return made.read_bytes()
    finally:
        scratch.remove()


def _wal_of(path: Path) -> Path:
    """The write-ahead log DuckDB keeps beside a database file."""
    return path.with_name(path.name + ".wal")


def _check_header(path: Path) -> None:
    """Refuse an existing `path` that is not a DuckDB database file, from its first bytes."""
    if path.is_dir():
        raise NotAStoreError(f"{path}: a directory, not a gca store", hint=_NOT_A_STORE_HINT)
    try:
        with path.open("rb") as f:
            head = f.read(_DUCKDB_MAGIC_AT + len(_DUCKDB_MAGIC))
    except OSError as e:
        raise StoreError(
            f"{path}: cannot read the store: {e.strerror or e}", hint="check the file's permissions"
        ) from e
    if not head:
        raise NotAStoreError(
            f"{path}: an empty file (0 bytes), not a gca store",
            hint="remove it and gca creates the store there, or pass --db another path",
        )
    if head[_DUCKDB_MAGIC_AT:] != _DUCKDB_MAGIC:
        raise NotAStoreError(
            f"{path}: not a gca store (not a DuckDB database file); nothing was written to it", hint=_NOT_A_STORE_HINT
        )


def _check_store_catalog(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a DuckDB database that holds objects but not gca's tables (another application's)."""
    names = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            " UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name = current_database() AND NOT internal"
            " UNION ALL SELECT sequence_name FROM duckdb_sequences() WHERE database_name = current_database()"
            " ORDER BY 1"
        ).fetchall()
    ]
    if not names or _STORE_TABLES <= set(names):
        return
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3:,} more" if len(names) > 3 else "")
    raise NotAStoreError(
        f"{path}: not a gca store (a DuckDB database of another application, holding {shown}); nothing was "
        "written to it",
        hint=_NOT_A_STORE_HINT,
    )


def _duckdb_config() -> dict[str, str | bool | int | float | list[str]]:
    """DuckDB's settings at connect: its threads where GCA_THREADS names them (cores.py)."""
    threads = threads_asked()
    return {} if threads is None else {"threads": threads}


# One DuckDB database per process, in memory, with each open store attached to it: a new
# DuckDB database costs ~20 ms (its catalog of functions, its threads), an ATTACH ~1 ms, and a
# test run opens thousands of stores. Each open is a connection of its own (`cursor()`: its own
# temporary tables and macros) that USEs its store. A store opened twice at once (in the same
# mode) is attached once, and detached when the last of them closes. The session's settings and
# macros are the process database's, made once (setting them on each connection cost a third of
# an open): settings global, macros in the in-memory database's own schema, which each
# connection's search path names after its store.
@dataclass
class _Attached:
    alias: str
    read_only: bool
    users: int = 0


_process_lock = threading.Lock()
_process_db: duckdb.DuckDBPyConnection | None = None
_attached: dict[str, _Attached] = {}  # by resolved path
_aliases = itertools.count()


_PROCESS_SCHEMA = "memory.main"


def _process_database() -> duckdb.DuckDBPyConnection:
    global _process_db
    if _process_db is None:
        base = duckdb.connect(":memory:")
        for setting in _GLOBAL_SETTINGS:
            base.execute(f"SET GLOBAL {setting}")
        for statement in _session_macros():
            base.execute(_TEMP_MACRO.sub(rf"CREATE OR REPLACE MACRO {_PROCESS_SCHEMA}.\1", statement, count=1))
        _process_db = base
    return _process_db


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to the store at `path` (attached for it if need be); close it with _release."""
    try:
        with _process_lock:
            base = _process_database()
            key = str(path.resolve())
            store = _attached.get(key)
            if store is not None and store.read_only != read_only:
                raise duckdb.ConnectionException("it is open in this process in the other mode")
            if store is None:
                store = _attach(base, path, read_only)
                _attached[key] = store
            con = base.cursor()
            store.users += 1
            try:
                con.execute(
                    f"USE {store.alias}; SET search_path = '{store.alias}.main,{_PROCESS_SCHEMA}';"
                    + "".join(f" SET {setting};" for setting in _CONNECTION_SETTINGS)
                )
            except duckdb.Error:
                _release_locked(con, key)
                raise
            return con
    except duckdb.Error as e:
        first_line = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise StoreError(
            f"{path}: cannot open the store: {first_line}",
            hint="check that it is a gca DuckDB file and that no other gca process holds it",
        ) from e


def _attach(base: duckdb.DuckDBPyConnection, path: Path, read_only: bool) -> _Attached:
    threads = threads_asked()
    base.execute(f"SET threads = {threads}" if threads else "RESET threads")
    try:  # spill beside the store, as DuckDB does for a database file opened on its own
        base.execute("SET temp_directory = ?", [str(path.with_name(path.name + ".tmp"))])
    except duckdb.Error:
        pass  # an earlier store's spill files are in use: spill beside that one
    store = _Attached(f"gca_store_{next(_aliases)}", read_only)
    quoted = str(path).replace("'", "''")
    base.execute(f"ATTACH '{quoted}' AS {store.alias}" + (" (READ_ONLY)" if read_only else ""))
    return store


def _release(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Close `con`, and detach its store when no other connection of this process uses it."""
    with _process_lock:
        _release_locked(con, str(path.resolve()))


def _release_locked(con: duckdb.DuckDBPyConnection, key: str) -> None:
    con.close()
    store = _attached.get(key)
    if store is None:
        return
    store.users -= 1
    if store.users == 0:
        del _attached[key]
        _process_database().execute(f"DETACH {store.alias}")


@contextmanager
def open_memory() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory database set up as a store's connection, spilling to a temporary
    directory of its own (not the working directory's .tmp) when a query outgrows memory;
    one a killed process left is removed by the next (tempdirs.py)."""
    from gpucluster_analysis.tempdirs import OwnedTempDir

    spill = OwnedTempDir("gca-duckdb-")
    try:
        con = duckdb.connect(":memory:", config={"temp_directory": str(spill.path), **_duckdb_config()})
        _open_connections.add(con)
        try:
            configure_session(con)
            yield con
        finally:
            _open_connections.discard(con)
            con.close()
    finally:
        spill.remove()


# What every gca connection needs before the named queries run: times are stored as naive UTC
# (nothing may convert them on the way); progress is tracked (gca draws its own bar on stderr)
# but DuckDB never prints one (settings DuckDB keeps per connection only).
_GLOBAL_SETTINGS = ("TimeZone = 'UTC'",)
_CONNECTION_SETTINGS = ("enable_progress_bar = true", "enable_progress_bar_print = false")
_SESSION_SETTINGS = (*_GLOBAL_SETTINGS, *_CONNECTION_SETTINGS)
_TEMP_MACRO = re.compile(r"CREATE OR REPLACE TEMP MACRO (\w+)")


@cache
def _session_macros() -> tuple[str, ...]:
    """The session's macros (sql/session/macros.sql and the fact macros), each `CREATE OR
    REPLACE TEMP MACRO name ...`."""
    statements = (*split_statements(load_sql("session", "macros")), *fact_macros_sql())
    for statement in statements:
        if not _TEMP_MACRO.search(statement):
            raise AssertionError(f"a session statement that is not a temporary macro: {statement[:80]!r}")
    return statements


def configure_session(con: duckdb.DuckDBPyConnection) -> None:
    """The session's settings and macros on a connection of its own (an in-memory database or a
    dataset's views; a store's connections have the process database's)."""
    for setting in _SESSION_SETTINGS:
        con.execute(f"SET {setting}")
    for statement in _session_macros():
        con.execute(statement)


def upgrade_older_store(path: Path) -> bool:
    """Bring a store written by an older gca to the current schema (every schema step only
    adds tables and columns), so that a read-only reader finds what it queries. True when
    it was upgraded; a store that is missing, not gca's, or current is left alone."""
    path = Path(path)
    if not path.exists():
        return False
    with open_store(path, read_only=True) as con:
        version = stored_version(con)
    if version is None or version >= SCHEMA_VERSION:
        return False
    try:
        with open_store(path):
            pass
    except StoreError as e:
        raise StoreError(
            f"{path}: the store has schema version {version} and this gca needs {SCHEMA_VERSION};"
            f" upgrading it failed: {e.message}",
            hint="make the file writable once, or ingest into a new --db file",
        ) from e
    return True


def store_is_empty(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the store has no ingested files (or no schema at all)."""
    tables = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
        ).fetchall()
    }
    if "ingested_files" not in tables:
        return True
    return con.execute("SELECT count(*) FROM ingested_files").fetchone()[0] == 0  # type: ignore[index]  # count(*): one row
