"""A Spark session over a Parquet dataset, running the report's heavy named queries.

The report still runs in DuckDB over the dataset's views (dataset/read.py); the heavy named
queries, those that scan the sample tables (their header says `heavy`: analyze/catalog.py),
run in Spark instead (analyze/prepare.py's Engine). Each is the same named query translated
(spark/translate.py). What it reads is found in its SQL: a sample table is the dataset's, read
by Spark; `period_<sample table>` is its rows in the report's period (`period()`, as
analyze/selection.py's views); any other name is DuckDB's temp table or view of that name,
built by DuckDB just before and shipped to Spark (they are per job or per machine: small
beside the samples). The result comes back typed as DuckDB types the same query, as a
temp table of the query's name (`table`) or a polars frame (`frame`), so what follows
reads it unchanged.

Spark reads each sample table from `DIR/<table>` with partition discovery, keeps the
shards that have a manifest and offsets file ids as the DuckDB reader does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from gpucluster_analysis.analyze import catalog
from gpucluster_analysis.analyze.selection import Selection
from gpucluster_analysis.dataset import layout
from gpucluster_analysis.errors import QueryError
from gpucluster_analysis.spark.translate import named_query, tables_read
from gpucluster_analysis.sqlfiles import load_sql


class SparkEngine:
    """One SparkSession for one report (`with SparkEngine(root, shards, master) as engine`)."""

    name = "Spark"

    def __init__(
        self,
        root: Path,
        shards: list[layout.Shard],
        master: str | None = None,
        log: Callable[[str], None] = lambda _msg: None,
        session: Any = None,
    ) -> None:
        # every query that scans a sample table, but gpu_sample_interval: that one reads only the
        # telemetry's first day (a probe, not a scan), and stays in DuckDB
        self.queries = catalog.heavy_queries()
        self.root = Path(root).resolve()
        self.shards = shards
        self.master = master
        self.log = log
        # a session given is the caller's: used, never stopped
        self.spark: Any = session

    def __enter__(self) -> SparkEngine:
        from pyspark.sql import SparkSession

        started = time.perf_counter()
        # one already active in this process is the caller's too (a notebook, a test module's)
        self.spark = self.spark or SparkSession.getActiveSession()
        self._owned = self.spark is None
        if self._owned:
            builder = SparkSession.builder.appName("gca report")
            if self.master:
                builder = builder.master(self.master)
            # no web UI for a batch report
            builder = builder.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            if not self.master or self.master.startswith("local"):
                # a local run's data is small enough that Spark's default 200 shuffle partitions only cost
                builder = builder.config("spark.sql.shuffle.partitions", "8")
            self.spark = builder.getOrCreate()
            self.spark.sparkContext.setLogLevel("ERROR")
        # Times are naive UTC, as in the store: DuckDB's TIMESTAMP is Spark's TIMESTAMP_NTZ.
        self.spark.conf.set("spark.sql.session.timeZone", "UTC")
        self.spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
        self._register_tables()
        self.period(Selection())
        if self._owned:
            self.log(f"Spark session ({self.spark.sparkContext.master}): {time.perf_counter() - started:.1f} s")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.spark is not None and self._owned:
            self.spark.stop()
            self.spark = None

    def _register_tables(self) -> None:
        from pyspark.sql import functions as F

        bases = layout.file_bases(self.shards)
        shards = self.spark.createDataFrame(sorted(bases.items()), "shard STRING, file_base INT")
        held = {table for shard in self.shards for table in shard.tables}
        read = {
            name.removeprefix("period_") for query in self.queries for name in tables_read(load_sql("queries", query))
        }
        for table, columns in layout.canonical_tables().items():
            if table not in read:
                continue  # listing a table's files costs a Spark job: only what the heavy queries read
            if table not in held:
                # no shard has a row of it: empty, with the canonical columns
                self.spark.createDataFrame(
                    [], ", ".join(f"{c.name} {_spark_type(c.type)}" for c in columns)
                ).createOrReplaceTempView(table)
                continue
            raw = (
                self.spark.read.option("basePath", str(self.root / table))
                .parquet(str(self.root / table))
                .where(F.col("shard").isin(list(bases)))
            )
            joined = raw.join(F.broadcast(shards), "shard")
            view = joined.select(
                *[
                    (F.col("file_id") + F.col("file_base")).alias("file_id") if c.name == "file_id" else F.col(c.name)
                    for c in columns
                ]
            )
            view.createOrReplaceTempView(table)
        self._dataset_tables = read & set(layout.canonical_tables())

    def period(self, selection: Selection) -> None:
        """The views period_<sample table> over the samples of `selection`'s period."""
        from pyspark.sql import functions as F

        for table in catalog.period_tables():
            if table not in self._dataset_tables:
                continue
            view = self.spark.table(table)
            if selection.since is not None or selection.until is not None:
                # the bounds as text cast in Spark: a Python datetime would be read in the local zone
                since = F.lit(_text(selection.since or datetime(1, 1, 1))).cast("timestamp_ntz")
                until = F.lit(_text(selection.until or datetime(9999, 12, 31))).cast("timestamp_ntz")
                view = view.where((F.col("sample_at") >= since) & (F.col("sample_at") < until))
            view.createOrReplaceTempView(f"period_{table}")

    def table(self, con: duckdb.DuckDBPyConnection, query: str) -> None:
        """CREATE TEMP TABLE <query> in DuckDB from the named query run by Spark."""
        with self._result(con, query) as select:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {query} AS {select}")

    def frame(self, con: duckdb.DuckDBPyConnection, query: str) -> pl.DataFrame:
        """The named query run by Spark, as run_query gives it from DuckDB."""
        with self._result(con, query) as select:
            return con.sql(select).pl()

    @contextmanager
    def _result(self, con: duckdb.DuckDBPyConnection, query: str) -> Iterator[str]:
        """A DuckDB SELECT of the query's result from Spark, with DuckDB's names and types."""
        sql = load_sql("queries", query)
        shape = con.sql(sql)  # bound, not run: the names and types DuckDB gives the result
        names, types = shape.columns, [str(t) for t in shape.types]
        result = self._run(con, query, sql)
        if result.num_columns != len(names):
            raise QueryError(
                f"query {query} gave {result.num_columns} columns in Spark, {len(names)} in DuckDB",
                hint="report it: the translation (spark/translate.py) lost or added a column",
            )
        con.register("spark_result", result.rename_columns([f"c{i}" for i in range(len(names))]))
        try:
            yield (
                "SELECT "
                + ", ".join(f'CAST(c{i} AS {t}) AS "{n}"' for i, (n, t) in enumerate(zip(names, types, strict=True)))
                + " FROM spark_result"
            )
        finally:
            con.unregister("spark_result")

    def _run(self, con: duckdb.DuckDBPyConnection, query: str, sql: str) -> pa.Table:
        from pyspark.errors import PySparkException

        temp = {
            r[0]
            for r in con.sql(
                "SELECT table_name FROM duckdb_tables() WHERE temporary"
                " UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary"
            ).fetchall()
        }
        for name in sorted(tables_read(sql)):
            if name in self._dataset_tables or name.removeprefix("period_") in self._dataset_tables:
                continue  # Spark's own: the dataset's samples, or their period
            if name not in temp:
                raise QueryError(
                    f"query {query}: Spark has no table {name}",
                    hint="report it: DuckDB must build it before the query runs in Spark",
                )
            self.spark.createDataFrame(con.sql(f"SELECT * FROM {name}").to_arrow_table()).createOrReplaceTempView(name)
        try:
            return self.spark.sql(named_query(query)).toArrow()
        except PySparkException as e:
            first_line = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise QueryError(
                f"query {query} failed in Spark: {first_line}",
                hint="check the dataset and the Spark master; if it persists, report it",
            ) from e


def _text(at: datetime) -> str:
    return at.isoformat(" ")


def _spark_type(duckdb_type: str) -> str:
    """Spark's name of a canonical column's DuckDB type (the types sql/schema uses)."""
    names = {"VARCHAR": "STRING", "TIMESTAMP": "TIMESTAMP_NTZ", "REAL": "FLOAT", "VARCHAR[]": "ARRAY<STRING>"}
    return names.get(duckdb_type, duckdb_type)
