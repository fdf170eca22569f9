"""Read a Parquet dataset (layout.py) as a store: `open_dataset(root)` yields an in-memory
DuckDB connection whose canonical tables are views over the shards' files, so every named
query and the whole report run on it unchanged.

Each view reads its table's files (hive partitions `shard`, and `day` for sample tables),
keeps only shards whose manifest is written, and offsets each shard's file ids by the ids
of the shards before it (layout.file_bases), so `file_id` joins `ingested_files` as in one
store. Shards must not overlap: a job, or a file (path and content), in two shards would be
counted twice, and opening such a dataset is an InputError naming both shards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from gpucluster_analysis.dataset import layout
from gpucluster_analysis.db.connect import open_memory
from gpucluster_analysis.errors import InputError
from gpucluster_analysis.sqlfiles import load_sql

# Internal schema of the reader: the raw per-shard views and the shard table.
RAW = "gca_dataset"
# Characters a path in a glob pattern cannot hold without meaning something else.
_GLOB_CHARACTERS = set("*?[]{}")


@contextmanager
def open_dataset(root: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The dataset at `root` as a read-only store (views of the canonical tables)."""
    root = Path(root).resolve()
    shards = layout.read_dataset(root)
    if _GLOB_CHARACTERS & set(str(root)) or "'" in str(root):
        raise InputError(
            f"{root}: a dataset path with glob characters or quotes cannot be read",
            hint="move or link the dataset to a plain path",
        )
    with open_memory() as con:
        define_views(con, root, shards)
        check_overlaps(con)
        yield con


def define_views(con: duckdb.DuckDBPyConnection, root: Path, shards: list[layout.Shard]) -> None:
    con.execute(f"CREATE SCHEMA {RAW}")
    con.execute(f"CREATE TABLE {RAW}.shards (shard VARCHAR PRIMARY KEY, file_base INTEGER NOT NULL)")
    con.executemany(f"INSERT INTO {RAW}.shards VALUES (?, ?)", sorted(layout.file_bases(shards).items()))
    held = {table for shard in shards for table in shard.tables}
    for table, columns in layout.canonical_tables().items():
        names = [c.name for c in columns]
        if table not in held:
            # no shard has a row of it: an empty table of the canonical columns
            con.execute(
                f"CREATE TABLE {RAW}.{table} AS SELECT "
                + ", ".join(f'CAST(NULL AS {c.type}) AS "{c.name}"' for c in columns)
                + ", CAST(NULL AS VARCHAR) AS shard LIMIT 0"
            )
        else:
            keys = "{'day': DATE, 'shard': VARCHAR}" if table in layout.SAMPLE_TABLES else "{'shard': VARCHAR}"
            con.execute(
                f"CREATE VIEW {RAW}.{table} AS SELECT * FROM read_parquet("
                f"'{root}/{layout.table_glob(table)}', hive_partitioning = true, hive_types = {keys})"
            )
        select = ", ".join("t.file_id + s.file_base AS file_id" if n == "file_id" else f't."{n}"' for n in names)
        # the join keeps out shards without a manifest (being written, or left by a dead process)
        con.execute(
            f"CREATE VIEW main.{table} AS SELECT {select} FROM {RAW}.{table} t JOIN {RAW}.shards s USING (shard)"
        )
    for _name, sql in layout.canonical_views():
        con.execute(sql)


def check_overlaps(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a dataset whose shards overlap (sql/dataset/shard_overlaps.sql)."""
    rows = con.execute(load_sql("dataset", "shard_overlaps")).fetchall()
    if rows:
        what, key, first, second, count = rows[0]
        raise InputError(
            f"shards {first} and {second} both hold {what} {key}"
            + (f" ({count - 1:,} more overlaps)" if count > 1 else ""),
            hint="ingest each scheduler dump into one shard only, and each file once; remove a shard's manifest"
            " in _shards/ to leave it out",
        )
