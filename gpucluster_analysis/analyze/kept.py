"""The report's heaviest results, kept in the store from ingest (issue 11, part 2).

The named queries whose header says `kept` (analyze/catalog.py) read every sample of the
store: `gpu_samples_by_machine` (one scan of gpu_samples), `attributed_util` (the samples
joined to the jobs' windows) and `host_util_cdf_by_activity` (the host samples joined to the
machines' busy windows). At full Philly scale they are most of a report's time. `keep(con)`
runs them once `gca ingest` has stored its files, exactly as an unfiltered report runs them
(the same temp tables before them), into tables `kept_<query>`, and records in `kept_results`
the digest of what they were computed from (`inputs_digest`): the store's `ingested_files`
(every row a file puts in the store is under its file_id, and a file ingested, taken back or
replaced adds, removes or changes its row there), the schema version, and the text of gca's SQL.

`usable(con, selection)` names the kept results whose digest is the store's current one;
the report reads those instead of running the query and runs every other as before (a stale
one, a store without them, a Parquet dataset). A selection of jobs (analyze/selection.py)
changes `attributed_util` and `host_util_cdf_by_activity`, not `gpu_samples_by_machine`
(every machine, before the selection): a filtered report uses only that one.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

import duckdb

from gpucluster_analysis.analyze import catalog
from gpucluster_analysis.analyze import selection as selected
from gpucluster_analysis.analyze.selection import EVERY_JOB, Selection
from gpucluster_analysis.db.fact_macros import fact_macros_sql
from gpucluster_analysis.db.queries import create_temp_tables
from gpucluster_analysis.sqlfiles import list_sql, load_sql

# Below this many samples (GPU and host rows) a report computes the kept queries in about a
# second: ingest then keeps nothing, and costs nothing more.
KEEP_MIN_SAMPLES = 5_000_000


def inputs_digest(con: duckdb.DuckDBPyConnection) -> str:
    """What the store's kept results must have been computed from to be used: a sha256 of
    its ingested files (all their columns but the seconds they took), its schema version
    and the text of gca's queries and session macros."""
    database = _database(con)
    files, version = con.execute(
        "SELECT (SELECT coalesce(md5(string_agg(concat_ws(' ', file_id, path, size_bytes, content_hash, format,"
        "                                                 coalesce(time_zone, '-'), rows_loaded, rejects, ingested_at),"
        "                                       chr(10) ORDER BY file_id)), '')"
        f'         FROM "{database}".main.ingested_files),'
        f'       (SELECT max(version) FROM "{database}".main.schema_version)'
    ).fetchall()[0]
    digest = hashlib.sha256(f"schema {version}\nfiles {files}\n".encode())
    for group in ("queries", "session"):
        for name in list_sql(group):
            digest.update(f"{group}/{name}\n".encode())
            digest.update(load_sql(group, name).encode())
    for statement in fact_macros_sql():  # the macros of the facts defined in Python
        digest.update(statement.encode())
    return digest.hexdigest()


def usable(con: duckdb.DuckDBPyConnection, selection: Selection, digest: str | None = None) -> frozenset[str]:
    """The kept results a report of `selection` may read instead of running their query.
    `digest`: inputs_digest(con), where the caller has it already."""
    database = _database(con)
    tables = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main'", [database]
        ).fetchall()
    }
    if "kept_results" not in tables:
        return frozenset()
    current = {
        r[0]
        for r in con.execute(
            f'SELECT query FROM "{database}".main.kept_results WHERE inputs = ?', [digest or inputs_digest(con)]
        ).fetchall()
    }
    names = frozenset(q for q in catalog.kept_queries() if q in current and f"kept_{q}" in tables)
    return names if selection.everything else names & catalog.kept_for_every_selection()


def read_kept(con: duckdb.DuckDBPyConnection, query: str) -> str:
    """SELECT text of a kept result (its rows in the order the query gave them)."""
    return f'SELECT * FROM "{_database(con)}".main.kept_{query}'


def keep(con: duckdb.DuckDBPyConnection, log: Callable[[str], None] = lambda _msg: None) -> float | None:
    """Compute the kept results of a writable store whose kept ones are not current (after
    `gca ingest`), in one transaction; the seconds it took, or None when there was nothing
    to do. A store with fewer than KEEP_MIN_SAMPLES samples, or no jobs, keeps nothing."""
    kept = catalog.kept_queries()
    digest = inputs_digest(con)
    if usable(con, EVERY_JOB, digest) == frozenset(kept):
        return None
    started = time.perf_counter()
    samples, jobs = con.execute(
        "SELECT (SELECT count(*) FROM gpu_samples) + (SELECT count(*) FROM host_samples), (SELECT count(*) FROM jobs)"
    ).fetchall()[0]
    stale = con.execute("SELECT count(*) FROM kept_results").fetchall()[0][0]
    worth = samples >= KEEP_MIN_SAMPLES and jobs > 0
    if not worth and not stale:
        return None
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM kept_results")
        for query in kept:
            con.execute(f"DROP TABLE IF EXISTS main.kept_{query}")
        if worth:
            _compute(con, digest, log)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        selected.reset(con)
        for name in (*catalog.before_selection_tables(), *catalog.temp_tables_for(kept)):
            con.execute(f"DROP TABLE IF EXISTS temp.main.{name}")
        for table in catalog.period_tables():
            con.execute(f"DROP VIEW IF EXISTS temp.main.period_{table}")
    return time.perf_counter() - started if worth else None


def _compute(con: duckdb.DuckDBPyConnection, digest: str, log: Callable[[str], None]) -> None:
    seconds: dict[str, float] = {}

    def on_table(name: str, took: float) -> None:
        seconds[name] = took

    # the report's own steps up to these queries, for every job (analyze/prepare.py)
    kept = catalog.kept_queries()
    selected.reset(con)
    create_temp_tables(con, [(name, name) for name in catalog.before_selection_tables()], on_table)
    selected.apply(con, EVERY_JOB)
    create_temp_tables(con, [(name, name) for name in catalog.temp_tables_for(kept)], on_table)
    for query in kept:
        started = time.perf_counter()
        if query in seconds:  # a temp table already
            con.execute(f"CREATE TABLE main.kept_{query} AS SELECT * FROM temp.main.{query}")
        else:
            con.execute(f"CREATE TABLE main.kept_{query} AS {load_sql('queries', query)}")
        took = seconds.get(query, 0.0) + time.perf_counter() - started
        con.execute("INSERT INTO kept_results VALUES (?, ?, ?, now()::TIMESTAMP)", [query, digest, took])
        log(f"  kept {query}: {took:.1f} s")


def _database(con: duckdb.DuckDBPyConnection) -> str:
    return str(con.execute("SELECT current_database()").fetchall()[0][0])
