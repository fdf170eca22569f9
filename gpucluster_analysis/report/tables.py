"""Tables computed from the store with the named queries in `sql/queries/`.

`prepare(con)` builds the temp tables other queries join against (attempt
windows, the one attributed pass over gpu_samples, per-job utilization);
`jobs_table(con)` returns the jobs.csv contract. `prepare_report(con)` adds the
job-level tables the report's figure queries read (after `prepare`).
"""

from __future__ import annotations

import duckdb
import polars as pl

from gpucluster_analysis.sqlfiles import load_sql

# Temp tables built once per report, in this order; later queries refer to them by name.
# attributed_util is the only query that reads gpu_samples row by row (one pass).
PREPARED_TABLES = ("attempt_windows", "attributed_util", "job_gpu_util")

# Built by prepare_report() after prepare(): (temp table, named query it holds).
REPORT_TABLES = (
    ("report_jobs", "jobs"),  # the jobs.csv rows, once, for the figure queries to join
    ("job_machine_windows", "job_machine_windows"),
    ("job_colocation", "job_colocation"),
    ("job_facts", "job_facts"),
    ("machine_capacity_snapshot", "machine_capacity_snapshot"),
)

JOBS_COLUMNS = [
    "job_id", "source", "user", "vc", "status", "submit_time", "first_start_time", "end_time",
    "attempts", "num_gpus", "num_servers", "queue_delay_s", "run_time_s", "gpu_time_s",
    "mean_gpu_util_pct", "util_samples", "failure_reason", "failure_category",
]


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """Create the report's temp tables (idempotent within a connection)."""
    for name in PREPARED_TABLES:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {load_sql('queries', name)}")


def prepare_report(con: duckdb.DuckDBPyConnection) -> None:
    """Create the job-level temp tables of the report's figure queries; call `prepare(con)` first."""
    for table, query in REPORT_TABLES:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {load_sql('queries', query)}")


def run_query(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pl.DataFrame:
    """Run `sql/queries/<name>.sql` with named parameters and return a polars DataFrame."""
    from gpucluster_analysis.sqlfiles import bind

    sql = load_sql("queries", name)
    return con.sql(sql, params=bind(sql, params) or None).pl()


def jobs_table(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per job with the jobs.csv columns; times as naive UTC datetimes.

    Call `prepare(con)` first.
    """
    return run_query(con, "jobs").select(JOBS_COLUMNS)


def format_for_csv(df: pl.DataFrame) -> pl.DataFrame:
    """Datetimes as ISO 8601 UTC with a Z (domain.md); everything else as is."""
    return df.with_columns(
        pl.col(c).dt.strftime("%Y-%m-%dT%H:%M:%SZ") for c, t in df.schema.items() if isinstance(t, pl.Datetime)
    )
