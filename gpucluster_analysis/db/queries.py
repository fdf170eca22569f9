"""Running the named queries of `sql/queries/` against a store.

Shared by the report and the replay: `run_query` returns one query's result as a polars
DataFrame, `create_temp_tables` materializes queries as temp tables that later queries
join by name. A failing query becomes a one-line QueryError that names it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import duckdb
import polars as pl

from gpucluster_analysis.errors import QueryError
from gpucluster_analysis.sqlfiles import bind, load_sql


@contextmanager
def query_errors(name: str) -> Iterator[None]:
    """A failing named query becomes a one-line QueryError that names it; Ctrl-C stays an interrupt."""
    try:
        yield
    except duckdb.InterruptException as e:
        raise KeyboardInterrupt from e
    except duckdb.Error as e:
        first_line = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise QueryError(
            f"query {name} failed: {first_line}",
            hint="the store may come from another gca version: ingest into a new store; if it persists, report it",
        ) from e


def run_query(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pl.DataFrame:
    """Run `sql/queries/<name>.sql` with named parameters and return a polars DataFrame."""
    sql = load_sql("queries", name)
    with query_errors(name):
        return con.sql(sql, params=bind(sql, params) or None).pl()


def create_temp_tables(
    con: duckdb.DuckDBPyConnection,
    tables: Iterable[tuple[str, str]],
    on_table: Callable[[str, float], None] | None = None,
) -> None:
    """CREATE OR REPLACE TEMP TABLE <table> AS <named query>, for each (table, query) in order."""
    for table, query in tables:
        started = time.perf_counter()
        with query_errors(query):
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {load_sql('queries', query)}")
        if on_table is not None:
            on_table(table, time.perf_counter() - started)


def temp_table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(
        con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = ?", [name]).fetchall()[0][0]
    )
