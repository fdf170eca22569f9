"""nvidia-smi telemetry logs: `--query-gpu` CSV, `dmon`, and `-q -x` XML snapshots.

* `nvsmi_csv`: `nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits] [-l N]`,
  any field set. Header names lose their ` [unit]`; values may carry units or not; every
  N/A spelling is missing; a header repeated mid-file (concatenated logs) starts a new
  block, with its own field set. A headerless log needs `--columns` (the query's field
  list). `timestamp` (`2026/07/14 08:12:38.696`) is local time in the site's zone.
* `nvsmi_dmon`: `nvidia-smi dmon [-s ...] [-o DT]`: columns from the first `#` line of
  each block (old `temp` and new `gtemp` alike), `-` missing, `-o DT` date and time.
* `nvsmi_xml`: one or several concatenated `nvidia-smi -q -x` documents (DTD v10-v12
  tag renames, MIG devices).

Neither tool names its host: it is `--host`, else the file name (`host_from_name`).
A log without times (dmon without `-o DT`, a query without `timestamp`) takes them
from `--time` (first sample) and `--interval` (seconds between samples).

Big logs (days at one line per GPU per second) are streamed: Python only numbers the
lines and tells headers, data and tool errors apart, in bounded batches handed to
DuckDB as Arrow tables; `sql/ingest/nvsmi_lines.sql` splits and types the fields and
`sql/ingest/nvsmi_check.sql` and `nvsmi_store.sql` (shared with DCGM) check and store the rows;
`nvsmi_fast.py` types the plainly valid rows of a CSV log itself, which is faster.
"""

from __future__ import annotations

import functools
import gzip
import re
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from dataclasses import dataclass
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest import nvsmi_fast
from gpucluster_analysis.ingest.files import first_lines, open_binary
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import (
    check_zone,
    install_zone,
    local_periods,
    local_zone,
    to_utc_python,
)

BATCH_ROWS = 50_000

# --- shared with dcgm.py: staging, host, time ----------------------------------------

# stage_raw's columns (see sql/ingest/nvsmi_check.sql): values as the tool printed them.
RAW_COLUMNS = {
    "line": pa.int64(), "text": pa.string(), "machine_id": pa.string(),
    "local_at": pa.timestamp("us"), "utc_at": pa.timestamp("us"), "time_text": pa.string(),
    "index_text": pa.string(), "instance_text": pa.string(), "uuid": pa.string(), "pci_text": pa.string(),
    "model": pa.string(), "util_text": pa.string(), "mem_util_text": pa.string(), "mem_used_text": pa.string(),
    "mem_total_text": pa.string(), "power_text": pa.string(), "temp_text": pa.string(),
    "sm_clock_text": pa.string(), "gr_engine_text": pa.string(), "throttle_mask_text": pa.string(),
    "throttle_text": pa.string(), "problem": pa.string(),
}
EVENT_COLUMNS = {
    "line": pa.int64(), "event_at": pa.timestamp("us"), "machine_id": pa.string(),
    "gpu_index": pa.int16(), "kind": pa.string(), "detail": pa.string(),
}
_SQL_TYPES = {pa.int64(): "BIGINT", pa.string(): "VARCHAR", pa.timestamp("us"): "TIMESTAMP", pa.int16(): "SMALLINT",
              pa.int32(): "INTEGER"}

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
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} ("
                    + ", ".join(f"{c} {_SQL_TYPES[t]}" for c, t in columns.items()) + ")")

    def add(self, **values: Any) -> None:
        for column, items in self.rows.items():
            items.append(values.get(column))
        self.count += 1
        if len(self.rows["line"]) >= BATCH_ROWS:
            self.flush()

    def add_arrow(self, line: pa.Array, block: int, text: pa.Array) -> None:
        """Many stage_lines rows at once, as Arrow arrays (no Python object per row)."""
        self.flush()
        batch = pa.table({"line": line, "block": pa.array(np.full(len(line), block, dtype=np.int32)),  # noqa: F841
                          "text": text})
        self.con.execute(f"INSERT INTO {self.table} SELECT * FROM batch")
        self.count += len(line)

    def flush(self) -> None:
        if not self.rows["line"]:
            return
        batch = pa.table({c: pa.array(v, type=self.columns[c]) for c, v in self.rows.items()})  # noqa: F841 (read by DuckDB)
        self.con.execute(f"INSERT INTO {self.table} SELECT * FROM batch")
        self.rows = {c: [] for c in self.columns}


_TOOL_NAMES = r"nvidia[-_]?smi|nvsmi|dmon|dcgmi|dcgm(?:[-_]exporter)?|gpus?|metrics|telemetry|query"
# Not stripped from the front: many GPU nodes are named gpu-<...> (gpu-st-ml-1, AWS ParallelCluster).
_LEADING_TOOL_NAMES = r"nvidia[-_]?smi|nvsmi|dmon|dcgmi|dcgm(?:[-_]exporter)?|metrics|telemetry|query"
_GENERIC_NAMES = {"nvidia-smi", "nvidia_smi", "nvidiasmi", "nvsmi", "dmon", "dcgm", "dcgmi", "dcgm-exporter", "dcgm_exporter",
                  "gpu", "gpus", "metrics", "telemetry", "query", "log", "logs", "output", "out", "data", "scrape",
                  "snapshot", "smi", "nvidia", "stdout", "result", "results", "export", "query_range"}
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
    return _host(ctx.path, ctx.options)


def _host(path: Path, options: Any) -> str:
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


# DuckDB's memory limit while a telemetry file loads. Past it, the staging tables and the
# sorts spill to the store's temp directory (<store>.tmp), so a log of several node-days of
# 1 s samples needs no more memory than one day (benchmarks/RESULTS.md, GPU telemetry).
MEMORY_LIMIT_BYTES = 512 * 1000**2
_UNITS = {"b": 1, "bytes": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}


def _limit_bytes(text: str) -> float | None:
    match = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]+)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        return None
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


@functools.cache
def _default_memory_limit() -> str:
    with duckdb.connect() as probe:
        return str(probe.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def bounded_memory(load: Callable[[LoadContext], LoadCounts]) -> Callable[[LoadContext], LoadCounts]:
    """`load` with DuckDB's memory limit lowered to MEMORY_LIMIT_BYTES (never raised), then put back.

    The limit is a setting of the whole database, set through a second connection so that it
    can be put back even when a failed statement has aborted the file's transaction.
    """

    @functools.wraps(load)
    def run(ctx: LoadContext) -> LoadCounts:
        side = ctx.con.cursor()
        try:
            before = str(side.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
            current = _limit_bytes(before)
            lowered = current is None or current > MEMORY_LIMIT_BYTES
            if lowered:
                side.execute(f"SET memory_limit = '{MEMORY_LIMIT_BYTES}B'")
        except duckdb.Error:
            lowered = False  # e.g. more already in use than the limit: load unbounded
        try:
            return load(ctx)
        finally:
            if lowered:
                # RESET gives back DuckDB's default exactly; its printed form would round it down
                side.execute("RESET memory_limit" if before == _default_memory_limit() else f"SET memory_limit = '{before}'")
            side.close()

    return run


PROFILE_TEXT_COLUMNS = ("sm_active_text", "sm_occupancy_text", "tensor_active_text", "fp64_active_text",
                        "fp32_active_text", "fp16_active_text", "dram_active_text", "pcie_tx_text", "pcie_rx_text",
                        "nvlink_tx_text", "nvlink_rx_text")


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
        run_script(ctx.con, "ingest", "nvsmi_macros", {})
        run_script(ctx.con, "ingest", "nvsmi_check", {"zone": zone, "pci_order": pci_order},
                   on_statement=ctx.on_statement)
        _stage_gpu_columns = ", ".join(
            f'"{name}" {kind}' for name, kind in ctx.con.execute("SELECT column_name, column_type FROM "
                                                                 "(DESCRIBE stage_gpu)").fetchall())
    run_script(ctx.con, "ingest", "nvsmi_store", {"file_id": ctx.file_id}, on_statement=ctx.on_statement)
    stored, rejected = ctx.con.execute(
        "SELECT count(*) FILTER (WHERE problem IS NULL) + (SELECT count(*) FROM stage_fast),"
        " count(*) FILTER (WHERE problem IS NOT NULL) FROM stage_gpu"
    ).fetchall()[0]
    return LoadCounts(rows=int(stored), rejects=int(rejected))


# Never in the tools' text output (tabs indent nvidia-smi's XML; CR ends Windows lines).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_BYTES = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])


def read_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(1-based number, stripped text, cut) of each line; gzip, a BOM and CRLF read alike.

    cut: the line has no line end, so it is the file's last and was cut off while the
    log was being written (a killed `nvidia-smi -l` leaves half a buffered line): a
    number on it may have lost digits. UTF-16 (Windows PowerShell's `>`) and binary data
    are refused in one line, as is a damaged gzip file.
    """
    number = 0
    try:
        with open_binary(path) as f:
            for number, raw in enumerate(f, start=1):
                if number == 1:
                    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
                        raise ParseError(f"{path}:1: UTF-16 text (as Windows PowerShell saves command output)",
                                         hint=f"convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 {path.name}")
                    if raw.startswith(b"\xef\xbb\xbf"):
                        raw = raw[3:]
                text = raw.decode("utf-8", errors="replace")
                if _CONTROL.search(text):
                    raise ParseError(f"{path}:{number}: binary data, not the text nvidia-smi or dcgm-exporter prints",
                                     hint="give gca the tool's text output (a .gz is read as such)")
                yield number, text.strip(), not raw.endswith(b"\n")
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise ParseError(f"{path}:{number + 1}: the compressed file is damaged or cut short ({e})",
                         hint=f"copy it again, or keep what is readable: zcat {path.name} > {path.stem} and ingest that") from e


CHUNK_BYTES = 8 << 20


def read_chunks(path: Path) -> Iterator[tuple[int, pa.Array, bool]]:
    """(number of the first line, the lines stripped as an Arrow string array, last line cut)
    for each ~8 MiB of the file: read_lines' lines and checks, without a Python string per line."""
    number, rest, started = 1, b"", False
    try:
        with open_binary(path) as f:
            while True:
                block = f.read(CHUNK_BYTES)
                if not started and block:
                    started = True
                    if block.startswith((b"\xff\xfe", b"\xfe\xff")):
                        raise ParseError(f"{path}:1: UTF-16 text (as Windows PowerShell saves command output)",
                                         hint=f"convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 {path.name}")
                    if block.startswith(b"\xef\xbb\xbf"):
                        block = block[3:]
                data = rest + block
                if not data:
                    return
                end = data.rfind(b"\n") + 1 if block else len(data)
                if not end:
                    rest = data
                    continue
                raw, rest = data[:end], data[end:]
                text = raw.decode("utf-8", errors="replace")
                # deleting the control bytes and comparing lengths is ~4x faster than a regex search
                binary = _CONTROL.search(text) if len(raw.translate(None, _CONTROL_BYTES)) != len(raw) else None
                if binary:  # the lines before it are read, then the file fails at it
                    text = text[: text.rfind("\n", 0, binary.start()) + 1]
                cut = bool(text) and not text.endswith("\n")
                parts = pc.list_flatten(pc.split_pattern(pa.array([text]), "\n"))
                if not cut:
                    parts = parts.slice(0, len(parts) - 1)  # after the last line end
                if len(parts):
                    yield number, pc.utf8_trim_whitespace(parts), cut
                number += len(parts)
                if binary:
                    raise ParseError(f"{path}:{number}: binary data, not the text nvidia-smi or dcgm-exporter prints",
                                     hint="give gca the tool's text output (a .gz is read as such)")
                if not block:
                    return
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise ParseError(f"{path}:{number}: the compressed file is damaged or cut short ({e})",
                         hint=f"copy it again, or keep what is readable: zcat {path.name} > {path.stem} and ingest that") from e


def _plain_rows(texts: pa.Array, n_fields: int, *, dmon: bool) -> Any:
    """Which lines are plainly rows of a block of n_fields fields (numpy booleans): ASCII, a
    digit first and n_fields fields. Headers, commands, tool errors and blank lines never are."""
    if dmon:
        count = pc.add(pc.count_substring_regex(texts, r"\s+"), 1)
    else:
        count = pc.add(pc.count_substring(texts, ","), 1)
    plain = pc.and_(pc.and_(pc.string_is_ascii(texts), pc.match_substring_regex(texts, "^[0-9]")),
                    pc.equal(count, n_fields))
    return plain.fill_null(False).to_numpy(zero_copy_only=False).copy()


CUT_LINE = "the line has no line end: the log was cut off while being written"


# --- nvsmi_csv and nvsmi_dmon: a block layout per header ---------------------------------

# Stage columns -> the query fields that fill them, preferred first (lower case, unit stripped).
CSV_FIELDS: dict[str, tuple[str, ...]] = {
    "p_time": ("timestamp",),
    "p_index": ("index",),
    "p_uuid": ("uuid", "gpu_uuid"),
    "p_pci": ("pci.bus_id", "gpu_bus_id"),
    "p_model": ("name", "gpu_name"),
    "p_util": ("utilization.gpu",),
    "p_mem_util": ("utilization.memory",),
    "p_mem_used": ("memory.used",),
    "p_mem_total": ("memory.total",),
    "p_power": ("power.draw", "power.draw.instant", "power.draw.average"),
    "p_temp": ("temperature.gpu",),
    "p_sm_clock": ("clocks.current.sm", "clocks.sm"),
    "p_throttle_mask": ("clocks_event_reasons.active", "clocks_throttle_reasons.active"),
}
# dmon column names (first header line) -> stage columns; temp (old drivers) = gtemp (new).
DMON_FIELDS: dict[str, tuple[str, ...]] = {
    "p_date": ("date",),
    "p_time": ("time",),
    "p_index": ("gpu",),
    "p_util": ("sm",),
    "p_mem_util": ("mem",),
    "p_mem_used": ("fb",),
    "p_power": ("pwr",),
    "p_temp": ("gtemp", "temp"),
    "p_sm_clock": ("pclk",),
}
_POSITIONS = ("p_time", "p_date", "p_index", "p_uuid", "p_pci", "p_model", "p_util", "p_mem_util", "p_mem_used",
              "p_mem_total", "p_power", "p_temp", "p_sm_clock", "p_throttle_mask")
_MEASURES = ("p_util", "p_mem_util", "p_mem_used", "p_mem_total", "p_power", "p_temp", "p_sm_clock", "p_throttle_mask")
# Individual reason fields: clocks_throttle_reasons.hw_slowdown (old) / clocks_event_reasons.* (new).
_REASON_FIELD = re.compile(r"clocks_(?:throttle|event)_reasons\.(\w+)")
_REASON_ALIASES = {"display_clocks_setting": "display_clock_setting", "sw_thermal": "sw_thermal_slowdown",
                   "hw_thermal": "hw_thermal_slowdown", "hw_power_brake": "hw_power_brake_slowdown"}

# A query field name as nvidia-smi prints it: dotted identifiers in lower or mixed case
# (`pci.baseClass`, `vgpu_driver_capability.heterogenous_multivGPU`); compared lower-cased.
_CSV_KEY = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*")
_CSV_UNIT = re.compile(r"\s*\[[^\]]*\]$")


def csv_key(field: str) -> str:
    """`memory.used [MiB]` -> `memory.used`; `pci.baseClass` -> `pci.baseclass`."""
    return _CSV_UNIT.sub("", field.strip()).strip().lower()


def _csv_header_keys(text: str) -> list[str] | None:
    """The keys of a --query-gpu header line, or None if the line is not one.

    Any line of field names is a header, known to gca or not (the ~200 fields exporters
    log): the fields gca stores are taken wherever they stand, the others ignored.
    """
    fields = [f.strip() for f in text.split(",")]
    keys = [csv_key(f) for f in fields]
    if not all(_CSV_KEY.fullmatch(k) and (f.lower() == k or _CSV_UNIT.search(f)) for f, k in zip(fields, keys, strict=True)):
        return None
    # nvidia-smi's measures are dotted (utilization.gpu, memory.used): that tells its header from
    # other lower-case CSV headers (Helios, Alibaba) that share plain names such as `name`
    if not any("." in k for k in keys):
        return None
    return keys


class QueryCommand(NamedTuple):
    """A pasted `nvidia-smi --query-gpu=... --format=csv,...` command line."""

    keys: list[str]
    noheader: bool
    interval_s: float | None  # -l N / --loop=N (seconds), -lms N / --loop-ms=N


# A shell prompt before the command (`$ `, `user@host:~$ `, `PS C:\> `, `> `) is whatever
# stands before `nvidia-smi`; a pipe, redirection or `&` ends its arguments.
_COMMAND = re.compile(r"(?:^|[\s/\\>$#%])nvidia-smi(?:\.exe)?\s+(?P<args>.*)$", re.IGNORECASE)
_COMMAND_END = re.compile(r"\s(?:\||>>?|2>|&|;)")


def query_command(text: str) -> QueryCommand | None:
    """The fields, noheader flag and loop interval of a pasted --query-gpu command line, or None."""
    if "nvidia-smi" not in text.lower() or "--query-gpu" not in text:
        return None
    match = _COMMAND.search(text)
    if match is None:
        return None
    args = _COMMAND_END.split(" " + match.group("args"), maxsplit=1)[0]
    tokens = [t.strip("\"'") for t in re.split(r"\s+|=", args.strip()) if t.strip("\"'")]
    values: dict[str, str] = {}
    for i, token in enumerate(tokens):
        if token in ("--query-gpu", "--format", "-l", "--loop", "-lms", "--loop-ms") and i + 1 < len(tokens):
            values.setdefault(token, tokens[i + 1])
    fields = [f.strip() for f in values.get("--query-gpu", "").split(",") if f.strip()]
    if not fields or not all(_CSV_KEY.fullmatch(f.lower()) for f in fields):
        return None
    interval = None
    for option, scale in (("-l", 1.0), ("--loop", 1.0), ("-lms", 0.001), ("--loop-ms", 0.001)):
        number = values.get(option, "")
        if re.fullmatch(r"\d+(\.\d+)?", number) and float(number) > 0:
            interval = float(number) * scale
    formats = [f.strip().lower() for f in values.get("--format", "").split(",")]
    return QueryCommand([csv_key(f) for f in fields], "noheader" in formats, interval)


def _layout(keys: list[str], fields: dict[str, tuple[str, ...]], block: int, *, command: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {"block": block, "n_fields": len(keys), "lines": 0, "command": command}
    for column in _POSITIONS:
        row[column] = next((keys.index(k) + 1 for k in fields.get(column, ()) if k in keys), None)
    reasons = [(i + 1, m.group(1)) for i, k in enumerate(keys)
               if (m := _REASON_FIELD.fullmatch(k)) and m.group(1) not in ("active", "supported")]
    row["reason_pos"] = [p for p, _ in reasons]
    row["reason_names"] = [_REASON_ALIASES.get(n, n) for _, n in reasons]
    return row


_BLOCK_TYPES = {**{c: pa.int32() for c in ("block", "n_fields", *_POSITIONS)},
                "reason_pos": pa.list_(pa.int32()), "reason_names": pa.list_(pa.string())}


def _stage_blocks(ctx: LoadContext, layouts: list[dict[str, Any]]) -> None:
    blocks = pa.table({c: pa.array([r[c] for r in layouts], type=t) for c, t in _BLOCK_TYPES.items()})  # noqa: F841
    ctx.con.execute("CREATE OR REPLACE TEMP TABLE stage_blocks AS SELECT * FROM blocks")


def _columns_option(options: Any) -> list[str] | None:
    # IngestOptions.columns (--columns) may be a comma-separated string or a sequence of names.
    value = getattr(options, "columns", None)
    if not value:
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    return [n.strip() for n in names if n.strip()]


class _StoreSink:
    """Where the log reader puts what it reads: straight into the staging tables.

    `hold_fast`: keep the typed rows (nvsmi_fast) in memory and let DuckDB read them where
    they are (a registered Arrow table named stage_fast) rather than copy them into a table;
    for a log read ahead, which is in memory anyway.
    """

    def __init__(self, con: Any, *, hold_fast: bool = False) -> None:
        self.con = con
        self.lines = Batches(con, "stage_lines", {"line": pa.int64(), "block": pa.int32(), "text": pa.string()})
        self.events = Batches(con, "stage_gpu_events", EVENT_COLUMNS)
        self.held: list[Any] | None = [] if hold_fast else None
        if not hold_fast:
            con.execute(f"CREATE OR REPLACE TEMP TABLE stage_fast {nvsmi_fast.FAST_TABLE_COLUMNS}")

    def line(self, number: int, block: int, text: str) -> None:
        self.lines.add(line=number, block=block, text=text)

    def rows(self, numbers: np.ndarray, block: int, texts: pa.Array) -> None:
        self.lines.add_arrow(pa.array(numbers), block, texts)

    def fast(self, clean: Any) -> None:
        if self.held is not None:
            self.held.append(clean)
        else:
            self.con.execute("INSERT INTO stage_fast SELECT * FROM clean")

    def event(self, **values: Any) -> None:
        self.events.add(**values)

    def finish(self) -> None:
        self.lines.flush()
        self.events.flush()
        if self.held:
            self.con.register("stage_fast", nvsmi_fast.concat(self.held))
        elif self.held is not None:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE stage_fast {nvsmi_fast.FAST_TABLE_COLUMNS}")


class _MemorySink:
    """The same, kept in memory: a log read ahead (in a thread, while the file before it is
    stored) and handed to a _StoreSink when its turn comes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name not in ("line", "rows", "fast", "event", "finish"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))

    def replay(self, sink: _StoreSink) -> None:
        for name, args, kwargs in self.calls:
            getattr(sink, name)(*args, **kwargs)


@dataclass
class _LogRead:
    """What reading a --query-gpu or dmon log found besides its rows."""

    host: str
    layouts: list[dict[str, Any]]
    cut_line: int | None
    command_interval: float | None
    sink: Any = None  # the _MemorySink of a log read ahead


def _read_log(path: Path, options: Any, sink: Any, *, dmon: bool) -> _LogRead:
    """Read a log's lines into `sink`; no database I/O (it may run in a thread)."""
    host = _host(path, options)
    zone = options.zone or local_zone()
    layouts: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    header_text = None
    given = _columns_option(options)
    if given:
        keys = [k.lower() for k in given] if dmon else [csv_key(k) for k in given]
        current = _layout(keys, DMON_FIELDS if dmon else CSV_FIELDS, 0)
        layouts.append(current)
    orphans, first_orphan = 0, 0
    cut_line = None
    command_interval: float | None = None
    units_next = False

    def line_by_line(number: int, text: str, cut: bool) -> None:
        """What any line that is not plainly a data row of the current block is."""
        nonlocal current, header_text, orphans, first_orphan, cut_line, command_interval, units_next
        if not text:
            return
        if dmon:
            text = _unquote(text)
        if dmon and text.startswith("#"):
            tokens = text.lstrip("#").split()
            if units_next or (tokens and tokens[0] in ("Idx", "YYYYMMDD", "HH:MM:SS")):
                units_next = False  # the unit line under a header
                return
            names = [t.lower() for t in tokens]
            if "pid" in names:
                raise ParseError(f"{path}:{number}: this is nvidia-smi pmon output (per process)",
                                 hint="gca reads per-GPU dmon logs (nvidia-smi dmon), not pmon")
            if "gpu" in names:
                if text != header_text:
                    header_text = text
                    current = _layout(names, DMON_FIELDS, len(layouts))
                    layouts.append(current)
                units_next = True
            return
        units_next = False
        if not dmon and (command := query_command(text)) is not None:
            # the pasted command names the fields of the lines under it (a header line may follow)
            header_text = None
            current = _layout(command.keys, CSV_FIELDS, len(layouts), command=True)
            layouts.append(current)
            command_interval = command.interval_s or command_interval
            return
        if not dmon and text[0].isalpha() and text != header_text and (keys := _csv_header_keys(text)):
            header_text = text
            current = _layout(keys, CSV_FIELDS, len(layouts))
            layouts.append(current)
            return
        if not dmon and text == header_text:
            return
        n = len(text.split()) if dmon else text.count(",") + 1
        if (current is None or n != current["n_fields"]) and TOOL_ERROR.search(text):
            sink.event(line=number, machine_id=host, kind="tool_error", detail=text)
            return
        if current is None and _not_data(text, dmon=dmon):
            sink.line(number, -1, text)  # a reject: no block has -1
            return
        if current is None:
            orphans += 1
            first_orphan = first_orphan or number
            return
        sink.line(number, current["block"], text)
        current["lines"] += 1
        cut_line = number if cut else None

    # Lines come in chunks of Arrow strings. The rows of the current block (the field count
    # of its header, a digit or blank first: no header, command, tool error or blank) go to
    # DuckDB as they are, without a Python object each; every other line is looked at above.
    for first, texts, cut_last in read_chunks(path):
        size, pos = len(texts), 0
        mask, mask_for = None, None
        while pos < size:
            if current is None:
                line_by_line(first + pos, texts[pos].as_py(), cut_last and pos == size - 1)
                pos += 1
                continue
            if mask_for != (current["block"], header_text):
                mask = _plain_rows(texts, current["n_fields"], dmon=dmon)
                if cut_last:
                    mask[size - 1] = False  # a cut last line: looked at alone
                mask_for = (current["block"], header_text)
            assert mask is not None
            plain = int(mask[pos:].argmin()) if not mask[pos:].all() else size - pos
            if plain:
                numbers = np.arange(first + pos, first + pos + plain, dtype=np.int64)
                run = texts.slice(pos, plain)
                if nvsmi_fast.eligible(current, dmon=dmon):
                    clean, other = nvsmi_fast.split_clean(run, numbers, current, host, local_periods(zone))
                    if clean.height:
                        sink.fast(clean)
                    numbers, run = numbers[other], run.filter(pa.array(other))
                if len(numbers):
                    sink.rows(numbers, current["block"], run)
                current["lines"] += plain
                cut_line, units_next = None, False
                pos += plain
            if pos < size:
                line_by_line(first + pos, texts[pos].as_py(), cut_last and pos == size - 1)
                pos += 1
    sink.finish()
    if orphans:
        what = "a dmon header (# gpu ...)" if dmon else "a header line"
        raise ParseError(
            f"{path}:{first_orphan}: data without {what}: gca cannot tell which field is which",
            hint="pass --columns with the field list"
            + (" of the dmon header (e.g. gpu,pwr,gtemp,sm,mem)" if dmon else " given to --query-gpu (e.g. timestamp,index,utilization.gpu)"),
        )
    return _LogRead(host, layouts, cut_line, command_interval)


def read_ahead(path: Path, options: Any, *, dmon: bool) -> _LogRead:
    """A log read whole into memory, to be stored later by _load_lines (FileFormat.prepare)."""
    sink = _MemorySink()
    read = _read_log(path, options, sink, dmon=dmon)
    read.sink = sink
    return read


def _load_lines(ctx: LoadContext, *, dmon: bool) -> LoadCounts:
    zone = site_zone(ctx)
    sink = _StoreSink(ctx.con, hold_fast=isinstance(ctx.prepared, _LogRead))
    if isinstance(ctx.prepared, _LogRead):
        read = ctx.prepared
        read.sink.replay(sink)
    else:
        read = _read_log(ctx.path, ctx.options, sink, dmon=dmon)
    host, layouts, cut_line, command_interval = read.host, read.layouts, read.cut_line, read.command_interval
    events, lines = sink.events, sink.lines
    if not layouts:
        if events.count:
            return _store_lines(ctx, host, zone, None, dmon=dmon, pci_order=False, no_data=True)
        raise ParseError(f"{ctx.path}: no {'dmon' if dmon else 'nvidia-smi --query-gpu'} header and no data",
                         hint="is this the right file? --format forces a format")
    # a pasted command whose header line followed it: the header names the fields
    layouts = [r for r in layouts if r["lines"] or not r["command"]] or layouts
    _check_layouts(ctx, layouts, dmon=dmon)
    _stage_blocks(ctx, layouts)
    timeless = all(r["p_time"] is None for r in layouts)
    start = None
    if timeless:
        start = _timeless_start(ctx, "dmon without -o DT" if dmon else "a --query-gpu log without timestamp")
    pci_order = all(r["p_index"] is None for r in layouts)
    return _store_lines(ctx, host, zone, start, dmon=dmon, pci_order=pci_order, cut_line=cut_line,
                        interval_s=ctx.options.interval_s or command_interval, lines_staged=lines.count)


# A pasted shell prompt (`$ `, `user@host:~$ `, `(base) user@host:~$ `, `Singularity> `, `PS C:\> `)
# or a line naming the tools: never a data row (a row's first field ends in a comma).
_PROMPT = re.compile(r"^[$>~#%]|^(?:\(\S+\)\s+)?[^\s,]*[$>#%](?:\s|$)|nvidia-smi|dcgm", re.IGNORECASE)


def _not_data(text: str, *, dmon: bool) -> bool:
    """A line before the first header that is no data row: a pasted shell prompt, a note,
    what a wrapper printed first (`Started host engine version 1.4.3 ...`)."""
    if dmon:
        return not text[0].isdigit()
    return "," not in text or bool(_PROMPT.search(text))


def _check_layouts(ctx: LoadContext, layouts: list[dict[str, Any]], *, dmon: bool) -> None:
    for r in layouts:
        if r["p_index"] is None and r["p_uuid"] is None and r["p_pci"] is None:
            raise ParseError(
                f"{ctx.path}: the field list has no GPU index" + ("" if dmon else ", uuid or pci.bus_id"),
                hint="gca cannot tell the GPUs apart; query index (or uuid, pci.bus_id) too",
            )
        if not any(r[c] is not None for c in _MEASURES) and not r["reason_pos"]:
            raise ParseError(f"{ctx.path}: the field list has no measure (utilization, memory, power, ...)",
                             hint="gca stores GPU samples; this looks like an inventory listing")
        if dmon and r["p_time"] is not None and r["p_date"] is None:
            raise ParseError(f"{ctx.path}: dmon -o T prints times without a date",
                             hint="log with -o DT (date and time), or without -o and pass --time and --interval")
        if dmon and r["p_date"] is not None and r["p_time"] is None:
            raise ParseError(f"{ctx.path}: dmon -o D prints dates without a time of day",
                             hint="log with -o DT (date and time)")
    if len({r["p_time"] is None for r in layouts}) > 1:
        raise ParseError(f"{ctx.path}: some blocks have times and others do not",
                         hint="split the file where its header changes and ingest the parts")


def _timeless_start(ctx: LoadContext, what: str) -> datetime:
    start = start_time(ctx)
    if start is None:
        raise InputError(
            f"{ctx.path}: {what} has no times",
            hint="pass --time (when the first sample was taken) and --interval (seconds between samples)",
        )
    return start


def _store_lines(ctx: LoadContext, host: str, zone: str, start: datetime | None, *, dmon: bool, pci_order: bool,
                 no_data: bool = False, cut_line: int | None = None, interval_s: float | None = None,
                 lines_staged: int = 0) -> LoadCounts:
    if no_data or not lines_staged:  # no lines at all, or all of them typed by nvsmi_fast
        ctx.con.execute(f"CREATE OR REPLACE TEMP TABLE stage_raw AS SELECT * FROM ({_empty_raw()}) WHERE false")
    else:
        if start is not None and interval_s is None:
            repeated = ctx.con.execute(
                "SELECT count(*) FROM stage_lines l JOIN stage_blocks b USING (block) "
                "GROUP BY CASE WHEN ? THEN regexp_split_to_array(trim(text), '\\s+') ELSE string_split(text, ',') END"
                "[coalesce(b.p_index, b.p_uuid, b.p_pci)] HAVING count(*) > 1 LIMIT 1", [dmon]
            ).fetchall()
            if repeated:
                raise InputError(f"{ctx.path}: the log has several samples per GPU and no times",
                                 hint="pass --interval (seconds between samples, e.g. dmon's -d) with --time")
        run_script(ctx.con, "ingest", "nvsmi_lines",
                   {"host": host, "whitespace": dmon, "start": start, "interval": interval_s,
                    "cut_line": cut_line, "cut_reason": CUT_LINE})
    return store_staged(ctx, zone, pci_order=pci_order)


def _empty_raw() -> str:
    return "SELECT " + ", ".join(f"CAST(NULL AS {_SQL_TYPES[t]}) AS {c}" for c, t in RAW_COLUMNS.items())


def _load_csv(ctx: LoadContext) -> LoadCounts:
    return _load_lines(ctx, dmon=False)


def _load_dmon(ctx: LoadContext) -> LoadCounts:
    return _load_lines(ctx, dmon=True)


_CSV_TIME = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?,")
# A node whose log holds only nvidia-smi's failure is still read: its failure is an event.
_ONLY_FAILURE = re.compile(
    r"no devices were found|nvidia-smi has failed|failed to initialize nvml|unable to determine the device handle"
    r"|nvml library version"  # newer drivers add it under `Failed to initialize NVML: Driver/library version mismatch`
    r"|couldn't find libnvidia-ml|please also try adding directory that contains libnvidia-ml",
    re.IGNORECASE,
)
# dmon and pmon on boards that do not support them (GeForce) print only this.
_DMON_FAILURE = re.compile(r"not supported on the device|failed to process command line", re.IGNORECASE)


def _sniff_csv(head: str) -> bool:
    texts = [line.strip() for line in first_lines(head, 5) if line.strip()]
    if texts and all(_ONLY_FAILURE.search(text) for text in texts):
        return True
    if any(query_command(text) for text in texts):
        return True  # a pasted `nvidia-smi --query-gpu=... --format=csv` names the fields below it
    while texts[:1] and len(texts) > 1 and _PROMPT.search(texts[0]) and _csv_header_keys(texts[0]) is None:
        texts = texts[1:]  # a pasted shell prompt above the output
    if not texts:
        return False
    first = texts[0]
    return bool(("," in first and _csv_header_keys(first) is not None) or _CSV_TIME.match(first))


def _unquote(text: str) -> str:
    """A dmon line pasted from Markdown (`> \\# gpu ...`, a GitHub quote) as dmon printed it."""
    if text.startswith(">"):
        text = text[1:].lstrip()
        return text[1:] if text.startswith("\\#") else text
    return text


def _sniff_dmon(head: str) -> bool:
    lines = [_unquote(ln.strip()) for ln in first_lines(head, 3) if ln.strip()]
    if lines and all(_DMON_FAILURE.search(line) for line in lines):
        return any("not supported on the device" in line.lower() for line in lines)
    while lines[:1] and len(lines) > 1 and not lines[0].startswith("#") and _not_data(lines[0], dmon=True):
        lines = lines[1:]  # a shell prompt, or what a wrapper printed before dmon's header
    if not lines or not lines[0].startswith("#"):
        return False
    names = [t.lower() for t in lines[0].lstrip("#").split()]
    return "gpu" in names and "pid" not in names and any(n in names for n in ("sm", "pwr", "fb", "mclk", "pclk", "gtemp", "temp"))


# --- nvsmi_xml --------------------------------------------------------------------------

# Tag paths under <gpu>, newest name first (v12 renamed power_readings and clocks_throttle_reasons).
XML_PATHS: dict[str, tuple[str, ...]] = {
    "util_text": ("utilization/gpu_util",),
    "mem_util_text": ("utilization/memory_util",),
    "mem_used_text": ("fb_memory_usage/used",),
    "mem_total_text": ("fb_memory_usage/total",),
    "power_text": ("gpu_power_readings/power_draw", "gpu_power_readings/instant_power_draw",
                   "power_readings/power_draw", "gpu_power_readings/average_power_draw"),
    "temp_text": ("temperature/gpu_temp",),
    "sm_clock_text": ("clocks/sm_clock",),
    "model": ("product_name",),
    "uuid": ("uuid",),
}
_REASON_TAG = re.compile(r"clocks_(?:throttle|event)_reason_(\w+)")
_GPU_TAG = re.compile(r"<gpu[\s>]")


def _xml_documents(ctx: LoadContext) -> Iterator[tuple[int, str]]:
    """(first line, text) of each <nvidia_smi_log> document; one at a time, so memory stays bounded."""
    parts: list[str] = []
    start = None
    for number, line, _ in read_lines(ctx.path):
        if "<nvidia_smi_log" in line and start is None:
            start = number
            parts = [line[line.index("<nvidia_smi_log"):]]
        elif start is not None:
            parts.append(line)
        if start is not None and "</nvidia_smi_log>" in line:
            text = "\n".join(parts)
            yield start, text[: text.rindex("</nvidia_smi_log>") + len("</nvidia_smi_log>")]
            start, parts = None, []
    if start is not None:
        yield start, ""  # cut off: reported by the caller


def _text(element: ET.Element, paths: tuple[str, ...]) -> str | None:
    for path in paths:
        found = element.find(path)
        if found is not None and found.text is not None and found.text.strip():
            value = found.text.strip()
            if value.upper() != "N/A" or path == paths[-1]:
                return value
    return None


def _ctime(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None


def _load_xml(ctx: LoadContext) -> LoadCounts:
    host = host_of(ctx)
    zone = site_zone(ctx)
    raw = Batches(ctx.con, "stage_raw", RAW_COLUMNS)
    events = Batches(ctx.con, "stage_gpu_events", EVENT_COLUMNS)
    fallback = start_time(ctx)
    documents = 0
    for line, text in _xml_documents(ctx):
        documents += 1
        if not text:
            raw.add(line=line, text="<nvidia_smi_log>", machine_id=host, problem="snapshot cut off before </nvidia_smi_log>")
            continue
        try:
            root = ET.fromstring(text)
        except ET.ParseError as e:
            raw.add(line=line + e.position[0] - 1, text=text.splitlines()[e.position[0] - 1][:500] if text else "",
                    machine_id=host, problem=f"unreadable XML snapshot: {e}")
            continue
        stamp = root.findtext("timestamp")
        local_at = _ctime(stamp)
        utc_at = fallback if local_at is None and not stamp else None
        gpus = root.findall("gpu")
        attached = root.findtext("attached_gpus")
        # <gpu> elements come in nvidia-smi's index order; with fewer than attached_gpus
        # (nvidia-smi -i N) the position is not the index: then UUID or PCI id must tell.
        whole = attached is not None and attached.strip().isdigit() and int(attached) == len(gpus)
        # each <gpu> element's own line, for its reject (ElementTree keeps no line numbers)
        gpu_lines = [line + text.count("\n", 0, m.start()) for m in _GPU_TAG.finditer(text)]
        for position, gpu in enumerate(gpus):
            values = {column: _text(gpu, paths) for column, paths in XML_PATHS.items()}
            reasons = gpu.find("clocks_event_reasons")
            if reasons is None:
                reasons = gpu.find("clocks_throttle_reasons")
            throttle = None
            if reasons is not None and len(reasons):
                active = [_REASON_ALIASES.get(m.group(1), m.group(1)) for child in reasons
                          if (m := _REASON_TAG.fullmatch(child.tag)) and (child.text or "").strip() == "Active"]
                known = [child for child in reasons if _REASON_TAG.fullmatch(child.tag)
                         and (child.text or "").strip() in ("Active", "Not Active")]
                throttle = ",".join(active) if active else ("none" if known else None)
            gpu_line = gpu_lines[position] if len(gpu_lines) == len(gpus) else line
            common = {"line": gpu_line, "text": f'<gpu id="{gpu.get("id", "")}">', "machine_id": host,
                      "local_at": local_at, "utc_at": utc_at, "time_text": stamp,
                      "index_text": str(position) if whole else None, "pci_text": gpu.get("id")}
            raw.add(**common, **values, throttle_text=throttle)
            for mig in gpu.findall("mig_devices/mig_device"):
                raw.add(**common, instance_text=mig.findtext("gpu_instance_id"), uuid=values["uuid"], model=values["model"],
                        mem_used_text=_text(mig, ("fb_memory_usage/used",)),
                        mem_total_text=_text(mig, ("fb_memory_usage/total",)))
        if not gpus:
            message = " ".join(t.strip() for t in root.itertext() if t.strip())[:500] or "snapshot lists no GPU"
            events.add(line=line, event_at=None, machine_id=host, kind="tool_error", detail=message)
    raw.flush()
    events.flush()
    if not documents and ctx.head.lstrip().startswith(_QUERY_TEXT):
        raise ParseError(f"{ctx.path}: nvidia-smi -q text: gca reads the same report as XML",
                         hint="log it with nvidia-smi -q -x (or --query-gpu ... --format=csv)")
    if not documents:
        raise ParseError(f"{ctx.path}: no <nvidia_smi_log> document", hint="expected the output of nvidia-smi -q -x")
    ctx.con.execute("UPDATE stage_raw SET problem = 'snapshot without a <timestamp>: pass --time' "
                    "WHERE problem IS NULL AND local_at IS NULL AND utc_at IS NULL AND time_text IS NULL")
    return store_staged(ctx, zone)


_QUERY_TEXT = "==============NVSMI LOG=============="


def _sniff_xml(head: str) -> bool:
    # nvidia-smi -q in its text form is claimed too, to be refused with the command that helps
    return "<nvidia_smi_log" in head or head.lstrip().startswith(_QUERY_TEXT)


FORMATS = [
    FileFormat(
        name="nvsmi_csv", source="nvidia-smi",
        description="nvidia-smi --query-gpu CSV log (any fields, with or without header and units)",
        file_names=(), sniff=_sniff_csv, load=bounded_memory(_load_csv), default_zone=local_zone(),
        prepare=functools.partial(read_ahead, dmon=False),
    ),
    FileFormat(
        name="nvsmi_dmon", source="nvidia-smi",
        description="nvidia-smi dmon log (any -s column set; -o DT for times)",
        file_names=(), sniff=_sniff_dmon, load=bounded_memory(_load_dmon), default_zone=local_zone(),
        prepare=functools.partial(read_ahead, dmon=True),
    ),
    FileFormat(
        name="nvsmi_xml", source="nvidia-smi",
        description="nvidia-smi -q -x XML snapshots (one or several concatenated)",
        file_names=(), sniff=_sniff_xml, load=bounded_memory(_load_xml), default_zone=local_zone(),
    ),
]
