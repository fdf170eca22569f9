"""A Spark session over a Parquet dataset, running the report's heavy named queries.

The report still runs in DuckDB over the dataset's views (dataset/read.py); the temp
tables named in `HEAVY_TABLES` are computed by Spark instead: the small tables they join
(built by DuckDB just before) are shipped to Spark as temp views, the query is the same
named query translated (spark/translate.py), and its result comes back as a DuckDB temp
table of the same name, so the queries after it read it unchanged.

Spark reads each canonical table from `DIR/<table>` with partition discovery, keeps the
shards that have a manifest and offsets file ids as the DuckDB reader does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from gpucluster_analysis.dataset import layout
from gpucluster_analysis.errors import QueryError
from gpucluster_analysis.spark.translate import named_query

# Temp table -> (the dataset's tables it reads, the DuckDB temp tables it joins).
HEAVY_TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "attributed_util": (("gpu_samples",), ("attempt_windows", "job_keys")),
}


class SparkEngine:
    """One SparkSession for one report (`with SparkEngine(root, shards, master) as engine`)."""

    def __init__(self, root: Path, shards: list[layout.Shard], master: str | None = None,
                 log: Callable[[str], None] = lambda _msg: None, session: Any = None) -> None:
        self.root = Path(root).resolve()
        self.shards = shards
        self.master = master
        self.log = log
        # a session given is the caller's (tests share one): used, never stopped
        self.spark: Any = session
        self._owned = session is None

    def __enter__(self) -> SparkEngine:
        from pyspark.sql import SparkSession

        if not self._owned:
            self._register_tables()
            return self
        started = time.perf_counter()
        builder = SparkSession.builder.appName("gca report")
        if self.master:
            builder = builder.master(self.master)
        # Times are naive UTC, as in the store; no web UI for a batch report.
        builder = (builder.config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false"))
        if not self.master or self.master.startswith("local"):
            # a local run's data is small enough that Spark's default 200 shuffle partitions only cost
            builder = builder.config("spark.sql.shuffle.partitions", "8")
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        self._register_tables()
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
        read = {table for tables, _ in HEAVY_TABLES.values() for table in tables}
        for table, columns in layout.canonical_tables().items():
            if table not in read:
                continue  # listing a table's files costs a Spark job: only what the heavy queries read
            if table not in held:
                # no shard has a row of it: empty, with the canonical columns
                self.spark.createDataFrame([], ", ".join(f"{c.name} {_spark_type(c.type)}" for c in columns)
                                           ).createOrReplaceTempView(table)
                continue
            raw = (self.spark.read.option("basePath", str(self.root / table))
                   .parquet(str(self.root / table)).where(F.col("shard").isin(list(bases))))
            joined = raw.join(F.broadcast(shards), "shard")
            view = joined.select(*[(F.col("file_id") + F.col("file_base")).alias("file_id") if c.name == "file_id"
                                   else F.col(c.name) for c in columns])
            view.createOrReplaceTempView(table)

    def heavy_tables(self) -> dict[str, Callable[[duckdb.DuckDBPyConnection], None]]:
        """Temp table -> what creates it in DuckDB by running its query in Spark."""
        return {name: (lambda con, name=name: self.create_temp_table(con, name)) for name in HEAVY_TABLES}

    def create_temp_table(self, con: duckdb.DuckDBPyConnection, name: str) -> None:
        """CREATE TEMP TABLE <name> in DuckDB from its named query run by Spark."""
        for inputs in HEAVY_TABLES[name][1]:
            arrow = con.sql(f"SELECT * FROM {inputs}").to_arrow_table()
            self.spark.createDataFrame(arrow).createOrReplaceTempView(inputs)
        from pyspark.errors import PySparkException

        try:
            result = self.spark.sql(named_query(name)).toArrow()
        except PySparkException as e:
            first_line = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise QueryError(f"query {name} failed in Spark: {first_line}",
                             hint="check the dataset and the Spark master; if it persists, report it") from e
        con.register("spark_result", result)
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM spark_result")
        finally:
            con.unregister("spark_result")


def _spark_type(duckdb_type: str) -> str:
    """Spark's name of a canonical column's DuckDB type (the types sql/schema uses)."""
    names = {"VARCHAR": "STRING", "TIMESTAMP": "TIMESTAMP_NTZ", "REAL": "FLOAT", "VARCHAR[]": "ARRAY<STRING>"}
    return names.get(duckdb_type, duckdb_type)
