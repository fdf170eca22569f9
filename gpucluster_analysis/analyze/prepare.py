"""The temp tables the named queries of `sql/queries/` join, and the replay of the queue beside them.

`prepare(con)` builds the temp tables other queries join against (attempt windows, the one
attributed pass over gpu_samples, per-job utilization, the replay's per-job waits), in the
stages of analyze/catalog.py; `prepare_report(con)` adds the job-level tables that read the
replay's waits (after `prepare`). `jobs_table(con)` returns the jobs.csv contract.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import duckdb
import polars as pl

from gpucluster_analysis import wait_causes
from gpucluster_analysis.analyze import catalog
from gpucluster_analysis.analyze import selection as selected
from gpucluster_analysis.analyze.catalog import REPLAY_JOBS_TABLE
from gpucluster_analysis.analyze.kept import read_kept
from gpucluster_analysis.analyze.selection import EVERY_JOB, Selection
from gpucluster_analysis.db.queries import create_temp_tables, run_query
from gpucluster_analysis.errors import ReportError
from gpucluster_analysis.replay import Replay, read_inputs, replay_inputs
from gpucluster_analysis.replay.rules import DEFAULT_LOCALITY, LocalityRule, Quotas

JOBS_COLUMNS = [
    "job_id",
    "source",
    "user",
    "vc",
    "status",
    "submit_time",
    "first_start_time",
    "end_time",
    "attempts",
    "num_gpus",
    "num_servers",
    "queue_delay_s",
    "run_time_s",
    "gpu_time_s",
    "mean_gpu_util_pct",
    "util_samples",
    "failure_reason",
    "failure_category",
    # Beyond domain.md's contract (docs/jobs-csv.md): what the queueing delay was measured
    # from, and how the job's samples were found.
    "eligible_time",
    "queue_basis",
    "attribution",
    # Why the job waited (the replay, docs/jobs-csv.md): its first wait split by cause, and its retry waits.
    *wait_causes.COLUMNS,
    "wait_retry_s",
    # How much of its GPUs really worked (DCGM profiling), beside mean_gpu_util_pct.
    "mean_sm_active_pct",
    "mean_tensor_active_pct",
    # The training speed its logs print (its last attempt that printed one; docs/jobs-csv.md).
    "speed_metric",
    "speed_median",
    "speed_unit",
    # What the scheduler said of how it ended, and what failure_reason rests on (issue #28).
    "exit_code",
    "exit_signal",
    "failure_evidence",
]


class Engine(Protocol):
    """Another engine that runs some named queries in DuckDB's stead (spark/engine.py)."""

    name: str
    queries: frozenset[str]  # the named queries it runs (none takes parameters)

    def period(self, selection: Selection) -> None:
        """Take the period of `selection` for the period_<samples> views its queries read."""

    def table(self, con: duckdb.DuckDBPyConnection, query: str) -> None:
        """CREATE TEMP TABLE <query> in DuckDB from the named query it ran."""

    def frame(self, con: duckdb.DuckDBPyConnection, query: str) -> pl.DataFrame:
        """The named query's result, as run_query would give it."""


def run_named(
    con: duckdb.DuckDBPyConnection, name: str, engine: Engine | None = None, **params: object
) -> pl.DataFrame:
    """run_query, or the other `engine` when it runs that query."""
    if engine is not None and name in engine.queries:
        return engine.frame(con, name)
    return run_query(con, name, **params)


def prepare(
    con: duckdb.DuckDBPyConnection,
    on_table: Callable[[str, float], None] | None = None,
    quotas: Quotas | None = None,
    locality: LocalityRule = DEFAULT_LOCALITY,
    selection: Selection = EVERY_JOB,
    heavy: Engine | None = None,
    kept: frozenset[str] = frozenset(),
    beside_replay: Callable[[], None] | None = None,
) -> Replay:
    """Create the report's temp tables (idempotent within a connection) and replay the queueing.

    The tables come in the stages of analyze/catalog.py: over every job first (those the replay
    reads, then the others while it computes), then, still beside the replay, over the
    selected jobs. `on_table(name, seconds)`, when given, hears how long each table took. The
    replay runs under `quotas` (else inferred) and `locality` over every job; its per-job waits become
    the temp table replay_job_waits, and the whole replay is returned for the report's
    Queueing section. Then the tables narrow to `selection`; an empty one is a ReportError.
    The temp tables whose query `heavy` runs come from it (spark/engine.py), those named in
    `kept` from the store's kept results (analyze/kept.py: `usable`), the rest from DuckDB.
    `beside_replay`, when given, runs after those tables while the replay still computes (work
    on the connection that reads none of the replay's results), unless the selection is empty.
    """
    selected.reset(con)  # the store's own tables, whole, for the replay
    _create(con, catalog.replay_tables(), on_table, heavy, kept)
    started = time.perf_counter()
    inputs = read_inputs(con)
    # The replay's numpy runs in a thread (it holds the GIL little) while DuckDB builds the
    # tables that do not depend on it; its per-job waits are stored after.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="replay") as pool:
        computing = pool.submit(replay_inputs, inputs, quotas, locality, period=(selection.since, selection.until))
        del inputs
        _create(con, catalog.beside_replay_tables(), on_table, heavy, kept)
        found = selected.apply(con, selection)
        if found or selection.everything:
            if heavy is not None:
                heavy.period(selection)
            _create(con, catalog.selected_tables(), on_table, heavy, kept)
            if beside_replay is not None:
                beside_replay()
        replay = computing.result()
    _store_replay_jobs(con, replay, selection)
    if on_table is not None:
        on_table("replay (why jobs wait, beside the tables above)", time.perf_counter() - started)
    if not found and not selection.everything:
        raise ReportError(
            f"no job in the selection ({selection.describe()})",
            hint="widen --since/--until or check the --vc/--user/--source names (jobs.csv of an "
            "unfiltered report lists them)",
        )
    return replay


def _create(
    con: duckdb.DuckDBPyConnection,
    names: tuple[str, ...],
    on_table: Callable[[str, float], None] | None,
    heavy: Engine | None,
    kept: frozenset[str] = frozenset(),
) -> None:
    for name in names:
        if name in kept:
            started = time.perf_counter()
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {read_kept(con, name)}")
            if on_table is not None:
                on_table(f"{name} (kept from ingest)", time.perf_counter() - started)
        elif heavy is not None and name in heavy.queries:
            started = time.perf_counter()
            heavy.table(con, name)
            if on_table is not None:
                on_table(f"{name} ({heavy.name})", time.perf_counter() - started)
        else:
            create_temp_tables(con, [(name, name)], on_table)


def _store_replay_jobs(con: duckdb.DuckDBPyConnection, replay: Replay, selection: Selection) -> None:
    """The replay's per-job waits as the temp table replay_job_waits, of the selected jobs."""
    con.register("replay_jobs_frame", replay.jobs.to_arrow())
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {REPLAY_JOBS_TABLE} AS SELECT * FROM replay_jobs_frame")
    finally:
        con.unregister("replay_jobs_frame")
    selected.narrow(con, selection, REPLAY_JOBS_TABLE)


def prepare_report(con: duckdb.DuckDBPyConnection, on_table: Callable[[str, float], None] | None = None) -> None:
    """Create the job-level temp tables of the report's figure queries; call `prepare(con)` first."""
    create_temp_tables(con, catalog.after_replay_tables(), on_table)


def jobs_table(con: duckdb.DuckDBPyConnection, prepared: bool = False) -> pl.DataFrame:
    """One row per job with the jobs.csv columns; times as naive UTC datetimes.

    Call `prepare(con)` first. With `prepared`, the rows come from the temp table
    job_facts that `prepare_report(con)` just built (the same query, not run twice).
    """
    if prepared:
        # in jobs.sql's order (total: (source, job_id) is unique), as CREATE TABLE AS stored
        # it: DuckDB keeps insertion order (preserve_insertion_order, on by default), so a
        # million rows are not sorted a second time
        columns = ", ".join(f'"{c}"' for c in JOBS_COLUMNS)
        jobs = con.sql(f"SELECT {columns} FROM job_facts").pl()
    else:
        jobs = run_query(con, "jobs").select(JOBS_COLUMNS)
    # GPU counts are whole numbers except for fractional sharing (Alibaba's gpu_milli):
    # print 4, not 4.0, unless some job really has a fraction.
    gpus = jobs["num_gpus"].drop_nulls()
    if gpus.dtype.is_float() and (gpus == gpus.floor()).all():
        jobs = jobs.with_columns(pl.col("num_gpus").cast(pl.Int64))
    return jobs


def format_for_csv(df: pl.DataFrame) -> pl.DataFrame:
    """Datetimes as ISO 8601 UTC with a Z (domain.md); everything else as is."""
    return df.with_columns(
        pl.col(c).dt.strftime("%Y-%m-%dT%H:%M:%SZ") for c, t in df.schema.items() if isinstance(t, pl.Datetime)
    )
