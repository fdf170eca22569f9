"""The Parquet layout of a gca dataset (docs/parquet-layout.md): names, manifests, shards.

A dataset is a directory of *shards*. Each shard holds the canonical tables of one gca
store (`gca export`, or `gca ingest --to` on one node's files) and is written by one
process without talking to the others:

    DIR/gca-dataset.json                                  what the directory is (layout, schema version)
    DIR/_shards/<shard>.json                              one shard's manifest, written last
    DIR/<table>/shard=<shard>/data.parquet                every table but the sample tables
    DIR/<sample table>/day=<YYYY-MM-DD>/shard=<shard>/data.parquet   by UTC day of sample_at

A shard is part of the dataset once its manifest is there: files of a shard still being
written (or of a process that died) are never read. File ids are the shard's own; a
reader numbers them across shards (`file_bases`), since rows join their file only within
their shard.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gpucluster_analysis import __version__
from gpucluster_analysis.db.connect import open_memory
from gpucluster_analysis.db.schema import SCHEMA_VERSION, apply_schema
from gpucluster_analysis.errors import InputError

LAYOUT = "gca-parquet"
LAYOUT_VERSION = 1
DATASET_MANIFEST = "gca-dataset.json"
SHARDS_DIR = "_shards"
DATA_FILE = "data.parquet"
# Tables that grow with the cluster's size and time: partitioned by the UTC day of this column.
SAMPLE_TABLES = {"gpu_samples": "sample_at", "gpu_sample_details": "sample_at", "host_samples": "sample_at"}
# Not data: the manifests carry the schema version; kept results (analyze/kept.py) hold only
# for the store they were computed in; so do the spans and the duplicates set aside that the
# store's ingest compares new telemetry with (ingest/samples.py): a report never reads them.
NOT_EXPORTED = (
    "schema_version",
    "kept_results",
    "sample_spans",
    "gpu_samples_duplicates",
    "gpu_sample_details_duplicates",
    "host_samples_duplicates",
)
_SHARD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # DuckDB's type name, e.g. TIMESTAMP, VARCHAR[]


@cache
def canonical_tables() -> dict[str, tuple[Column, ...]]:
    """Every table of the current schema with its columns in order, from the DDL itself
    (sql/schema/), so that the layout never lists tables by hand."""
    with open_memory() as con:
        apply_schema(con)
        rows = con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns()"
            " WHERE database_name = current_database() AND schema_name = 'main'"
            " AND table_name IN (SELECT table_name FROM duckdb_tables())"
            " ORDER BY table_name, column_index"
        ).fetchall()
    tables: dict[str, list[Column]] = {}
    for table, column, data_type in rows:
        if table not in NOT_EXPORTED:
            tables.setdefault(table, []).append(Column(column, data_type))
    return {name: tuple(columns) for name, columns in tables.items()}


@cache
def canonical_views() -> tuple[tuple[str, str], ...]:
    """The store's views (machine_capacity, log_attempts, ...) as (name, CREATE VIEW text), in
    the order they were created, so a dataset's reader defines them over its own tables."""
    with open_memory() as con:
        apply_schema(con)
        rows = con.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal"
            " AND database_name = current_database() ORDER BY view_oid"
        ).fetchall()
    return tuple((name, sql) for name, sql in rows)


def check_shard_name(name: str) -> str:
    """A shard name is a path segment on any file system or object store."""
    if not _SHARD_NAME.fullmatch(name):
        raise InputError(
            f"--shard {name!r}: not a usable shard name",
            hint="use letters, digits, '.', '_' and '-' (at most 200, not starting with '.', '_' or '-')",
        )
    return name


def default_shard_name() -> str:
    """A name no other process picks: UTC time, host and process id. Names sort by the time
    they were taken, so shards numbered in name order are numbered in ingest order."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname().split(".")[0]) or "host"
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{host}-{os.getpid()}"


def table_file(table: str, shard: str, day: str | None = None) -> str:
    """Path of one shard's file of `table` (of `day`, for a sample table), relative to the dataset."""
    if day is None:
        return f"{table}/shard={shard}/{DATA_FILE}"
    return f"{table}/day={day}/shard={shard}/{DATA_FILE}"


def table_glob(table: str) -> str:
    """Every shard's files of `table`, relative to the dataset."""
    return f"{table}/day=*/shard=*/{DATA_FILE}" if table in SAMPLE_TABLES else f"{table}/shard=*/{DATA_FILE}"


def dataset_manifest() -> dict[str, Any]:
    """What gca-dataset.json says: the same bytes whoever writes it, so concurrent writers agree."""
    return {
        "layout": LAYOUT,
        "layout_version": LAYOUT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "tables": sorted(canonical_tables()),
        "partitioned_by_day": {table: column for table, column in sorted(SAMPLE_TABLES.items())},
    }


def manifest_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


@dataclass(frozen=True)
class Shard:
    """One shard's manifest."""

    name: str
    schema_version: int
    gca_version: str
    max_file_id: int
    tables: dict[str, dict[str, Any]]  # table -> {"rows": n, "files": [relative paths]}

    def to_json(self) -> dict[str, Any]:
        return {
            "layout": LAYOUT,
            "layout_version": LAYOUT_VERSION,
            "shard": self.name,
            "schema_version": self.schema_version,
            "gca_version": self.gca_version,
            "max_file_id": self.max_file_id,
            "tables": self.tables,
        }


def new_shard(name: str, max_file_id: int, tables: dict[str, dict[str, Any]]) -> Shard:
    return Shard(name, SCHEMA_VERSION, __version__, max_file_id, tables)


def read_shard(path: Path) -> Shard:
    """A shard manifest; one that this gca cannot read is an InputError naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        shard = Shard(
            data["shard"],
            int(data["schema_version"]),
            str(data["gca_version"]),
            int(data["max_file_id"]),
            dict(data["tables"]),
        )
        layout, version = data["layout"], data["layout_version"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(
            f"{path}: not a readable gca shard manifest ({type(e).__name__}: {e})",
            hint="remove the shard's manifest to leave it out, or write the shard again",
        ) from e
    if layout != LAYOUT or version != LAYOUT_VERSION or shard.name != path.stem:
        raise InputError(
            f"{path}: a manifest of layout {layout} {version} for shard {shard.name!r}",
            hint=f"this gca reads {LAYOUT} {LAYOUT_VERSION}; write the shard again with it",
        )
    if shard.schema_version != SCHEMA_VERSION:
        newer = shard.schema_version > SCHEMA_VERSION
        raise InputError(
            f"{path}: shard {shard.name} has schema version {shard.schema_version}, this gca {SCHEMA_VERSION}",
            hint="upgrade gca"
            if newer
            else "export it again with this gca (gca export --db STORE --to DIR --shard NAME --overwrite)",
        )
    return shard


def read_dataset(root: Path) -> list[Shard]:
    """The shards of the dataset at `root`, in name order; an InputError when it is not one."""
    manifest = root / DATASET_MANIFEST
    if not root.is_dir():
        raise InputError(
            f"{root}: no such directory", hint="pass --from the directory gca export or gca ingest --to wrote"
        )
    if not manifest.is_file():
        raise InputError(
            f"{root}: not a gca dataset (no {DATASET_MANIFEST})",
            hint="pass --from the directory gca export or gca ingest --to wrote",
        )
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{manifest}: unreadable ({e})", hint="write the dataset again with gca export") from e
    check_dataset_manifest(manifest, data)
    shards = [read_shard(p) for p in sorted((root / SHARDS_DIR).glob("*.json"))]
    if not shards:
        raise InputError(
            f"{root}: the dataset has no complete shard yet",
            hint="wait for gca ingest --to / gca export to finish, or check the directory",
        )
    return shards


def check_dataset_manifest(path: Path, data: dict[str, Any]) -> None:
    expected = dataset_manifest()
    for key in ("layout", "layout_version", "schema_version"):
        if data.get(key) != expected[key]:
            raise InputError(
                f"{path}: a dataset of {data.get('layout')} {data.get('layout_version')}, schema version"
                f" {data.get('schema_version')}; this gca writes and reads {LAYOUT} {LAYOUT_VERSION}, schema "
                f"{SCHEMA_VERSION}",
                hint="write it again with this gca into a new directory",
            )


def file_bases(shards: list[Shard]) -> dict[str, int]:
    """What each shard's file ids are offset by, so that ids are unique across the dataset:
    shards in name order, each after the ids of the ones before."""
    bases, base = {}, 0
    for shard in sorted(shards, key=lambda s: s.name):
        bases[shard.name] = base
        base += shard.max_file_id
    return bases
