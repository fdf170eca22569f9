"""What every GPU telemetry reader shares (nvidia-smi CSV, dmon and XML; DCGM scrapes, exports
and dcgmi dmon): staging batches handed to DuckDB as Arrow, the host and the times of a
per-node file, and the check and store of staged rows (sql/ingest/nvsmi_check.sql,
nvsmi_store.sql). DuckDB's memory bound while a file loads is ingest/memory.py's, reading the
tools' lines (one by one or in chunks) ingest/lines.py's.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from gpucluster_analysis import missing_values
from gpucluster_analysis.errors import InputError
from gpucluster_analysis.ingest.base import LoadContext, LoadCounts
from gpucluster_analysis.ingest.gpu import nvsmi_fast
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import check_zone, install_zone, local_zone, to_utc_python

BATCH_ROWS = 50_000


# stage_raw's columns (see sql/ingest/nvsmi_check.sql): values as the tool printed them.
RAW_COLUMNS = {
    "line": pa.int64(),
    "text": pa.string(),
    "machine_id": pa.string(),
    "local_at": pa.timestamp("us"),
    "utc_at": pa.timestamp("us"),
    "time_text": pa.string(),
    "index_text": pa.string(),
    "instance_text": pa.string(),
    "uuid": pa.string(),
    "pci_text": pa.string(),
    "model": pa.string(),
    "util_text": pa.string(),
    "mem_util_text": pa.string(),
    "mem_used_text": pa.string(),
    "mem_total_text": pa.string(),
    "power_text": pa.string(),
    "temp_text": pa.string(),
    "sm_clock_text": pa.string(),
    "gr_engine_text": pa.string(),
    "throttle_mask_text": pa.string(),
    "throttle_text": pa.string(),
    "problem": pa.string(),
}
EVENT_COLUMNS = {
    "line": pa.int64(),
    "event_at": pa.timestamp("us"),
    "machine_id": pa.string(),
    "gpu_index": pa.int16(),
    "kind": pa.string(),
    "detail": pa.string(),
}
SQL_TYPES = {
    pa.int64(): "BIGINT",
    pa.string(): "VARCHAR",
    pa.timestamp("us"): "TIMESTAMP",
    pa.int16(): "SMALLINT",
    pa.int32(): "INTEGER",
}

# What nvidia-smi (and dmon) print instead of data. Only tested on lines that are not
# well-formed data lines, so a `[Unknown Error]` value inside a row is never an event.
TOOL_ERROR = re.compile(
    r"no devices were found|unable to determine the device handle|nvidia-smi has failed|failed to initialize nvml"
    r"|gpu is lost|unable to query|not supported on the device|failed to process command line"
    r"|driver/library version mismatch|couldn't communicate with the nvidia driver|insufficient permissions"
    r"|nvml library version|couldn't find libnvidia-ml|try adding directory that contains libnvidia-ml"
    r"|unknown error|is not a valid field|invalid combination|error:",
    re.IGNORECASE,
)


class Batches:
    """Rows for one staging table, handed to DuckDB every BATCH_ROWS rows as an Arrow table."""

    def __init__(self, con: Any, table: str, columns: dict[str, pa.DataType]) -> None:
        self.con, self.table, self.columns = con, table, columns
        self.rows: dict[str, list[Any]] = {c: [] for c in columns}
        self.count = 0
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {table} ("
            + ", ".join(f"{c} {SQL_TYPES[t]}" for c, t in columns.items())
            + ")"
        )

    def add(self, **values: Any) -> None:
        for column, items in self.rows.items():
            items.append(values.get(column))
        self.count += 1
        if len(self.rows["line"]) >= BATCH_ROWS:
            self.flush()

    def add_arrow(self, line: pa.Array, block: int, text: pa.Array) -> None:
        """Many stage_lines rows at once, as Arrow arrays (no Python object per row)."""
        self.flush()
        batch = pa.table(  # noqa: F841  -- DuckDB reads it by name
            {
                "line": line,
                "block": pa.array(np.full(len(line), block, dtype=np.int32)),
                "text": text,
            }
        )
        self.con.execute(f"INSERT INTO {self.table} SELECT * FROM batch")
        self.count += len(line)

    def flush(self) -> None:
        if not self.rows["line"]:
            return
        batch = pa.table({c: pa.array(v, type=self.columns[c]) for c, v in self.rows.items()})  # noqa: F841  -- DuckDB reads it by name
        self.con.execute(f"INSERT INTO {self.table} SELECT * FROM batch")
        self.rows = {c: [] for c in self.columns}


_TOOL_NAMES = r"nvidia[-_]?smi|nvsmi|dmon|dcgmi|dcgm(?:[-_]exporter)?|gpus?|metrics|telemetry|query"
# Not stripped from the front: many GPU nodes are named gpu-<...> (gpu-st-ml-1, AWS ParallelCluster).
_LEADING_TOOL_NAMES = r"nvidia[-_]?smi|nvsmi|dmon|dcgmi|dcgm(?:[-_]exporter)?|metrics|telemetry|query"
_GENERIC_NAMES = {
    "nvidia-smi",
    "nvidia_smi",
    "nvidiasmi",
    "nvsmi",
    "dmon",
    "dcgm",
    "dcgmi",
    "dcgm-exporter",
    "dcgm_exporter",
    "gpu",
    "gpus",
    "metrics",
    "telemetry",
    "query",
    "log",
    "logs",
    "output",
    "out",
    "data",
    "scrape",
    "snapshot",
    "smi",
    "nvidia",
    "stdout",
    "result",
    "results",
    "export",
    "query_range",
}
_STAMP = r"\d{4}-?\d{2}-?\d{2}(?:[T_-]?\d{2}:?\d{2}(?::?\d{2})?Z?)?|\d{10}"
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def host_from_name(path: Path) -> str | None:
    """The host a per-node log's file name gives, or None.

    The name without compression and log extensions (`.gz .csv .log .txt .xml .prom
    .json .out`), a date or epoch stamp at its end (`node01_2026-07-14.csv`), a tool
    word at its start or end (`nvidia-smi-node01.csv`, `node01_gpu.log`, `node01.dmon.log`,
    `dcgm-node01.prom`), but not `gpu-` in front, which starts many node names
    (`gpu-st-ml-1.csv` is host gpu-st-ml-1). Names that are only a tool word
    (`nvidia-smi.csv`, `metrics.prom`) or a number give none.
    """
    name = path.name
    for _ in range(3):
        name = re.sub(r"\.(gz|csv|log|txt|xml|prom|json|out|tsv)$", "", name, flags=re.IGNORECASE)
    name = re.sub(rf"[-_.](?:{_STAMP})$", "", name)
    name = re.sub(rf"^(?:{_LEADING_TOOL_NAMES})[-_.]", "", name, flags=re.IGNORECASE)
    name = re.sub(rf"[-_.](?:{_TOOL_NAMES})$", "", name, flags=re.IGNORECASE)
    name = re.sub(rf"[-_.](?:{_STAMP})$", "", name)
    if not name or name.lower() in _GENERIC_NAMES or name.isdigit() or not _HOST.fullmatch(name):
        return None
    return name


def host_of(ctx: LoadContext) -> str:
    """`--host`, else the file name's host; a file that names none is an InputError."""
    return host_for(ctx.path, ctx.options)


def host_for(path: Path, options: Any) -> str:
    if options.host:
        return options.host
    host = host_from_name(path)
    if host is None:
        raise InputError(
            f"{path}: which machine is this? The file name names no host",
            hint="pass --host NAME, or name the file after its host (e.g. node01.csv, nvidia-smi-node01.log)",
        )
    return host


def site_zone(ctx: LoadContext) -> str:
    return ctx.options.zone or local_zone()


def parse_time_option(text: str, zone: str) -> datetime:
    """`--time` as naive UTC: epoch seconds, or ISO 8601 (with Z/offset, else in `zone`)."""
    value = text.strip()
    try:
        if re.fullmatch(r"\d+(\.\d+)?", value):
            return datetime.fromtimestamp(float(value), UTC).replace(tzinfo=None)
        parsed = datetime.fromisoformat(value.replace("/", "-"))
    except (ValueError, OverflowError) as e:
        raise InputError(
            f"--time {text!r}: not a time",
            hint="give ISO 8601 (2026-07-14T08:12:00 in the site's zone, or with Z or +02:00) or epoch seconds",
        ) from e
    if parsed.tzinfo is None:
        return to_utc_python(parsed, zone)
    return parsed.astimezone(UTC).replace(tzinfo=None)


def start_time(ctx: LoadContext) -> datetime | None:
    return parse_time_option(ctx.options.time, site_zone(ctx)) if ctx.options.time else None


PROFILE_TEXT_COLUMNS = (
    "sm_active_text",
    "sm_occupancy_text",
    "tensor_active_text",
    "fp64_active_text",
    "fp32_active_text",
    "fp16_active_text",
    "dram_active_text",
    "pcie_tx_text",
    "pcie_rx_text",
    "nvlink_tx_text",
    "nvlink_rx_text",
)


# stage_gpu's columns as nvsmi_check.sql makes them (fixed by its text), learned from its first
# run: a file whose rows all took the fast way (nvsmi_fast.py) then skips that script, whose
# planning alone costs more than storing a small file's rows.
_stage_gpu_columns: str | None = None


def store_staged(ctx: LoadContext, zone: str | None, *, pci_order: bool = False) -> LoadCounts:
    """Check stage_raw (sql/ingest/nvsmi_check.sql), then store it, stage_fast and
    stage_gpu_events (sql/ingest/nvsmi_store.sql)."""
    global _stage_gpu_columns
    zone = zone or "UTC"
    check_zone(zone)
    # rows the reader typed itself (nvidia-smi CSV); other readers have none
    ctx.con.execute(f"CREATE TEMP TABLE IF NOT EXISTS stage_fast {nvsmi_fast.FAST_TABLE_COLUMNS}")
    if _stage_gpu_columns is not None and not ctx.con.execute("SELECT count(*) FROM stage_raw").fetchall()[0][0]:
        ctx.con.execute("DROP TABLE stage_raw")
        ctx.con.execute(f"CREATE OR REPLACE TEMP TABLE stage_gpu ({_stage_gpu_columns})")
    else:
        install_zone(ctx.con, zone)
        for column in PROFILE_TEXT_COLUMNS:  # readers without DCGM's profiling fields leave them out
            ctx.con.execute(f"ALTER TABLE stage_raw ADD COLUMN IF NOT EXISTS {column} VARCHAR")
        run_script(ctx.con, "ingest", "nvsmi_macros", missing_values.sql_params())
        run_script(
            ctx.con,
            "ingest",
            "nvsmi_check",
            {"zone": zone, "pci_order": pci_order, **ctx.options.bounds()},
            on_statement=ctx.on_statement,
        )
        _stage_gpu_columns = ", ".join(
            f'"{name}" {kind}'
            for name, kind in ctx.con.execute("SELECT column_name, column_type FROM (DESCRIBE stage_gpu)").fetchall()
        )
    run_script(ctx.con, "ingest", "nvsmi_store", {"file_id": ctx.file_id}, on_statement=ctx.on_statement)
    stored, rejected = ctx.con.execute(
        "SELECT count(*) FILTER (WHERE problem IS NULL) + (SELECT count(*) FROM stage_fast),"
        " count(*) FILTER (WHERE problem IS NOT NULL) FROM stage_gpu"
    ).fetchall()[0]
    return LoadCounts(rows=int(stored), rejects=int(rejected))


CUT_LINE = "the line has no line end: the log was cut off while being written"
