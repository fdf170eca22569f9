"""Write a store's canonical tables as one shard of a Parquet dataset (layout.py).

`export_store(db, root, shard)` is `gca export`; `write_shard(con, root, shard)` writes
whatever store `con` holds (`gca ingest --to` ingests into a temporary store first).
Rows are sorted by every column in order, and files are written with fixed settings, so
the same store gives the same bytes. The shard's files are written under a temporary
directory in `root`, moved into place, and its manifest is written last: a reader never
sees half a shard.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from gpucluster_analysis.dataset import layout
from gpucluster_analysis.db import open_store, upgrade_older_store
from gpucluster_analysis.errors import InputError, StoreError
from gpucluster_analysis.textfiles import write_atomic

# Rows per record batch fetched from DuckDB and per Parquet row group: a row group is the
# unit Spark and DuckDB read in parallel and skip by its statistics.
ROW_GROUP_ROWS = 1 << 20
COMPRESSION = "zstd"
# the temporary store of `gca ingest --to`, in TMPDIR
SHARD_TEMP_PREFIX = "gca-shard-"


@dataclass(frozen=True)
class Written:
    root: Path
    shard: layout.Shard
    files: int
    replaced: bool


def export_store(
    db: Path,
    root: Path,
    shard: str | None = None,
    overwrite: bool = False,
    log: Callable[[str], None] = lambda _msg: None,
) -> Written:
    """Write the store at `db` as shard `shard` (default: the store's file name without its
    suffix) of the dataset at `root`, creating the dataset when `root` is absent or empty."""
    db, root = Path(db), Path(root)
    name = layout.check_shard_name(shard if shard is not None else _name_from(db))
    if not db.is_file():
        raise StoreError(
            f"{db}: no gca store here", hint=f"run `gca ingest PATH... --db {db}` first, or pass --db the store"
        )
    if upgrade_older_store(db):
        log(f"upgraded {db} to the current schema (it came from an older gca)")
    with open_store(db, read_only=True) as con:
        tables = {
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
        }
        if "jobs" not in tables or "ingested_files" not in tables:
            raise StoreError(f"{db}: not a gca store (it has no jobs table)", hint="pass --db a store gca ingest wrote")
        return write_shard(con, root, name, overwrite=overwrite, log=log)


class ShardTarget:
    """`gca ingest --to`: a temporary store to ingest into, published as a shard of `root`.

    Everything that can refuse the target (not a dataset, the shard already there) is
    checked before anything is ingested; `publish` writes the shard, `discard` removes the
    temporary store either way. The store's directory (gca-shard-* in TMPDIR) of a process
    that was killed is removed by the next ShardTarget (tempdirs.py).
    """

    def __init__(self, root: Path, shard: str | None, overwrite: bool) -> None:
        from gpucluster_analysis.tempdirs import OwnedTempDir

        self.root = Path(root)
        self.shard = layout.check_shard_name(shard) if shard is not None else layout.default_shard_name()
        self.overwrite = overwrite
        prepare_root(self.root)
        if (self.root / layout.SHARDS_DIR / f"{self.shard}.json").exists() and not overwrite:
            raise InputError(
                f"{self.root}: already holds shard {self.shard}",
                hint="pass --overwrite to replace it, or --shard another name",
            )
        # on local disk, not the (maybe shared) dataset: the store is written row by row
        self._tmp = OwnedTempDir(SHARD_TEMP_PREFIX)
        self.store = self._tmp.path / "shard.duckdb"

    def publish(self, log: Callable[[str], None] = lambda _msg: None) -> Written:
        with open_store(self.store, read_only=True) as con:
            return write_shard(con, self.root, self.shard, overwrite=self.overwrite, log=log)

    def discard(self) -> None:
        self._tmp.remove()


def _name_from(db: Path) -> str:
    stem = "".join(c if c.isalnum() or c in "._-" else "-" for c in db.stem).lstrip("._-")
    return stem or "store"


def write_shard(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    shard: str,
    overwrite: bool = False,
    log: Callable[[str], None] = lambda _msg: None,
) -> Written:
    """Write every canonical table of the store `con` holds as shard `shard` of `root`."""
    import pyarrow.parquet  # noqa: F401  -- fail here, not halfway, if pyarrow is broken

    root = Path(root)
    prepare_root(root)
    manifest_path = root / layout.SHARDS_DIR / f"{shard}.json"
    previous = layout.read_shard(manifest_path) if manifest_path.exists() else None
    if previous is not None and not overwrite:
        raise InputError(
            f"{root}: already holds shard {shard}", hint="pass --overwrite to replace it, or --shard another name"
        )
    staging = root / f".tmp-{shard}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        tables = _write_tables(con, staging, shard, log)
        max_file_id = con.execute("SELECT coalesce(max(file_id), 0) FROM ingested_files").fetchall()[0][0]
        manifest = layout.new_shard(shard, int(max_file_id), tables)
        _publish(root, staging, manifest, previous)
    except OSError as e:
        raise InputError(
            f"{root}: cannot write shard {shard}: {e.strerror or e}",
            hint="check that the directory is writable and the disk is not full",
        ) from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    files = sum(len(t["files"]) for t in manifest.tables.values())
    return Written(root=root, shard=manifest, files=files, replaced=previous is not None)


def prepare_root(root: Path) -> None:
    """Make `root` a dataset: create it (and its gca-dataset.json) when absent or empty;
    check an existing dataset is one this gca writes; refuse anything else."""
    manifest = root / layout.DATASET_MANIFEST
    if root.exists() and not root.is_dir():
        raise InputError(f"{root}: exists and is not a directory", hint="pass --to a directory")
    if manifest.is_file():
        import json

        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except ValueError as e:
            raise InputError(f"{manifest}: unreadable ({e})", hint="pass --to a new directory") from e
        layout.check_dataset_manifest(manifest, data)
        return
    if root.is_dir() and any(p.name != layout.SHARDS_DIR and not p.name.startswith(".tmp-") for p in root.iterdir()):
        raise InputError(
            f"{root}: not empty and not a gca dataset (no {layout.DATASET_MANIFEST})",
            hint="pass --to a new or empty directory, or one gca export wrote",
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / layout.SHARDS_DIR).mkdir(exist_ok=True)
        write_atomic(manifest, layout.manifest_text(layout.dataset_manifest()))
    except OSError as e:
        raise InputError(
            f"{root}: cannot create the dataset: {e.strerror or e}", hint="check that the directory is writable"
        ) from e


def _write_tables(
    con: duckdb.DuckDBPyConnection, staging: Path, shard: str, log: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    tables: dict[str, dict[str, Any]] = {}
    for table, columns in sorted(layout.canonical_tables().items()):
        select = ", ".join(f'"{c.name}"' for c in columns)
        # Sorted by every column in order: the same rows give the same file, whatever order
        # they were stored in (sample tables: by time first, so row groups cover time ranges).
        query = f"SELECT {select} FROM {table} {{where}} ORDER BY ALL"
        files, rows = [], 0
        if table in layout.SAMPLE_TABLES:
            at = layout.SAMPLE_TABLES[table]
            days = [d for (d,) in con.execute(f"SELECT DISTINCT CAST({at} AS DATE) FROM {table} ORDER BY 1").fetchall()]
            for day in days:
                relative = layout.table_file(table, shard, day.isoformat())
                rows += _write_parquet(
                    con,
                    query.format(where=f"WHERE {at} >= $day AND {at} < $day + INTERVAL 1 DAY"),
                    {"day": day},
                    staging / relative,
                )
                files.append(relative)
        else:
            (count,) = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0]
            if count:
                relative = layout.table_file(table, shard)
                rows = _write_parquet(con, query.format(where=""), {}, staging / relative)
                files.append(relative)
        if rows:
            tables[table] = {"rows": rows, "files": files}
            log(f"{table}: {rows:,} rows in {len(files)} file{'s' if len(files) > 1 else ''}")
    return tables


def _write_parquet(con: duckdb.DuckDBPyConnection, query: str, params: dict[str, Any], path: Path) -> int:
    """Stream a query's rows into one Parquet file; how many rows it holds."""
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    reader = con.sql(query, params=params or None).to_arrow_reader(ROW_GROUP_ROWS)
    rows = 0
    with pq.ParquetWriter(path, reader.schema, compression=COMPRESSION, write_statistics=True) as writer:
        for batch in reader:
            writer.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
            rows += batch.num_rows
    return rows


def _publish(root: Path, staging: Path, manifest: layout.Shard, previous: layout.Shard | None) -> None:
    """Take the old shard out (its manifest first, so readers stop seeing it), move the new
    files into place, then write the manifest that makes the shard part of the dataset."""
    manifest_path = root / layout.SHARDS_DIR / f"{manifest.name}.json"
    if previous is not None:
        manifest_path.unlink()
        for table in previous.tables.values():
            for relative in table["files"]:
                (root / relative).unlink(missing_ok=True)
                _remove_empty_parents(root / relative, root)
    for table in manifest.tables.values():
        for relative in table["files"]:
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, target)
    write_atomic(manifest_path, layout.manifest_text(manifest.to_json()))


def _remove_empty_parents(path: Path, root: Path) -> None:
    parent = path.parent
    while parent != root and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent
