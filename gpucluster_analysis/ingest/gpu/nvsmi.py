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

What every telemetry reader shares (staging, host and time of a file, the memory bound,
reading in chunks, storing) is `telemetry.py`. Big logs (days at one line per GPU per
second) are streamed: Python only numbers the lines and tells headers, data and tool
errors apart, in bounded batches handed to DuckDB as Arrow tables; `sql/ingest/nvsmi_lines.sql` splits and types the fields and
`sql/ingest/nvsmi_check.sql` and `nvsmi_store.sql` (shared with DCGM) check and store the rows;
`nvsmi_fast.py` types the plainly valid rows of a CSV log itself, which is faster.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import first_lines
from gpucluster_analysis.ingest.gpu import nvsmi_fast
from gpucluster_analysis.ingest.gpu.telemetry import (  # noqa: F401 (host_from_name, parse_time_option: part of this module's API)
    CUT_LINE,
    EVENT_COLUMNS,
    RAW_COLUMNS,
    SQL_TYPES,
    TOOL_ERROR,
    Batches,
    bounded_memory,
    host_for,
    host_from_name,
    host_of,
    parse_time_option,
    read_chunks,
    read_lines,
    site_zone,
    start_time,
    store_staged,
)
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import local_periods, local_zone


def _plain_rows(texts: pa.Array, n_fields: int, *, dmon: bool) -> Any:
    """Which lines are plainly rows of a block of n_fields fields (numpy booleans): ASCII, a
    digit first and n_fields fields. Headers, commands, tool errors and blank lines never are."""
    if dmon:
        count = pc.add(pc.count_substring_regex(texts, r"\s+"), 1)
    else:
        count = pc.add(pc.count_substring(texts, ","), 1)
    plain = pc.and_(
        pc.and_(pc.string_is_ascii(texts), pc.match_substring_regex(texts, "^[0-9]")), pc.equal(count, n_fields)
    )
    return plain.fill_null(False).to_numpy(zero_copy_only=False).copy()


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
_POSITIONS = (
    "p_time",
    "p_date",
    "p_index",
    "p_uuid",
    "p_pci",
    "p_model",
    "p_util",
    "p_mem_util",
    "p_mem_used",
    "p_mem_total",
    "p_power",
    "p_temp",
    "p_sm_clock",
    "p_throttle_mask",
)
_MEASURES = ("p_util", "p_mem_util", "p_mem_used", "p_mem_total", "p_power", "p_temp", "p_sm_clock", "p_throttle_mask")
# Individual reason fields: clocks_throttle_reasons.hw_slowdown (old) / clocks_event_reasons.* (new).
_REASON_FIELD = re.compile(r"clocks_(?:throttle|event)_reasons\.(\w+)")
_REASON_ALIASES = {
    "display_clocks_setting": "display_clock_setting",
    "sw_thermal": "sw_thermal_slowdown",
    "hw_thermal": "hw_thermal_slowdown",
    "hw_power_brake": "hw_power_brake_slowdown",
}

# A query field name as nvidia-smi prints it: dotted identifiers in lower or mixed case
# (`pci.baseClass`, `vgpu_driver_capability.heterogenous_multivGPU`); compared lower-cased.
_CSV_KEY = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*")
_CSV_UNIT = re.compile(r"(?<!\s)\s*+\[[^\[\]]*+\]$")  # tried at the start of a blank run or a "[" only


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
    if not all(
        _CSV_KEY.fullmatch(k) and (f.lower() == k or _CSV_UNIT.search(f)) for f, k in zip(fields, keys, strict=True)
    ):
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


def _layout(
    keys: list[str], fields: dict[str, tuple[str, ...]], block: int, *, command: bool = False
) -> dict[str, Any]:
    row: dict[str, Any] = {"block": block, "n_fields": len(keys), "lines": 0, "command": command}
    for column in _POSITIONS:
        row[column] = next((keys.index(k) + 1 for k in fields.get(column, ()) if k in keys), None)
    reasons = [
        (i + 1, m.group(1))
        for i, k in enumerate(keys)
        if (m := _REASON_FIELD.fullmatch(k)) and m.group(1) not in ("active", "supported")
    ]
    row["reason_pos"] = [p for p, _ in reasons]
    row["reason_names"] = [_REASON_ALIASES.get(n, n) for _, n in reasons]
    return row


_BLOCK_TYPES = {
    **{c: pa.int32() for c in ("block", "n_fields", *_POSITIONS)},
    "reason_pos": pa.list_(pa.int32()),
    "reason_names": pa.list_(pa.string()),
}


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
    host = host_for(path, options)
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
                raise ParseError(
                    f"{path}:{number}: this is nvidia-smi pmon output (per process)",
                    hint="gca reads per-GPU dmon logs (nvidia-smi dmon), not pmon",
                )
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
                    clean, other = nvsmi_fast.split_clean(
                        run, numbers, current, host, local_periods(zone), options.max_gpus_per_node
                    )
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
            + (
                " of the dmon header (e.g. gpu,pwr,gtemp,sm,mem)"
                if dmon
                else " given to --query-gpu (e.g. timestamp,index,utilization.gpu)"
            ),
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
        raise ParseError(
            f"{ctx.path}: no {'dmon' if dmon else 'nvidia-smi --query-gpu'} header and no data",
            hint="is this the right file? --format forces a format",
        )
    # a pasted command whose header line followed it: the header names the fields
    layouts = [r for r in layouts if r["lines"] or not r["command"]] or layouts
    _check_layouts(ctx, layouts, dmon=dmon)
    _stage_blocks(ctx, layouts)
    timeless = all(r["p_time"] is None for r in layouts)
    start = None
    if timeless:
        start = _timeless_start(ctx, "dmon without -o DT" if dmon else "a --query-gpu log without timestamp")
    pci_order = all(r["p_index"] is None for r in layouts)
    return _store_lines(
        ctx,
        host,
        zone,
        start,
        dmon=dmon,
        pci_order=pci_order,
        cut_line=cut_line,
        interval_s=ctx.options.interval_s or command_interval,
        lines_staged=lines.count,
    )


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
            raise ParseError(
                f"{ctx.path}: the field list has no measure (utilization, memory, power, ...)",
                hint="gca stores GPU samples; this looks like an inventory listing",
            )
        if dmon and r["p_time"] is not None and r["p_date"] is None:
            raise ParseError(
                f"{ctx.path}: dmon -o T prints times without a date",
                hint="log with -o DT (date and time), or without -o and pass --time and --interval",
            )
        if dmon and r["p_date"] is not None and r["p_time"] is None:
            raise ParseError(
                f"{ctx.path}: dmon -o D prints dates without a time of day", hint="log with -o DT (date and time)"
            )
    if len({r["p_time"] is None for r in layouts}) > 1:
        raise ParseError(
            f"{ctx.path}: some blocks have times and others do not",
            hint="split the file where its header changes and ingest the parts",
        )


def _timeless_start(ctx: LoadContext, what: str) -> datetime:
    start = start_time(ctx)
    if start is None:
        raise InputError(
            f"{ctx.path}: {what} has no times",
            hint="pass --time (when the first sample was taken) and --interval (seconds between samples)",
        )
    return start


def _store_lines(
    ctx: LoadContext,
    host: str,
    zone: str,
    start: datetime | None,
    *,
    dmon: bool,
    pci_order: bool,
    no_data: bool = False,
    cut_line: int | None = None,
    interval_s: float | None = None,
    lines_staged: int = 0,
) -> LoadCounts:
    if no_data or not lines_staged:  # no lines at all, or all of them typed by nvsmi_fast
        ctx.con.execute(f"CREATE OR REPLACE TEMP TABLE stage_raw AS SELECT * FROM ({_empty_raw()}) WHERE false")
    else:
        if start is not None and interval_s is None:
            repeated = ctx.con.execute(
                "SELECT count(*) FROM stage_lines l JOIN stage_blocks b USING (block) "
                "GROUP BY CASE WHEN ? THEN regexp_split_to_array(trim(text), '\\s+') ELSE string_split(text, ',') END"
                "[coalesce(b.p_index, b.p_uuid, b.p_pci)] HAVING count(*) > 1 LIMIT 1",
                [dmon],
            ).fetchall()
            if repeated:
                raise InputError(
                    f"{ctx.path}: the log has several samples per GPU and no times",
                    hint="pass --interval (seconds between samples, e.g. dmon's -d) with --time",
                )
        run_script(
            ctx.con,
            "ingest",
            "nvsmi_lines",
            {
                "host": host,
                "whitespace": dmon,
                "start": start,
                "interval": interval_s,
                "cut_line": cut_line,
                "cut_reason": CUT_LINE,
            },
        )
    return store_staged(ctx, zone, pci_order=pci_order)


def _empty_raw() -> str:
    return "SELECT " + ", ".join(f"CAST(NULL AS {SQL_TYPES[t]}) AS {c}" for c, t in RAW_COLUMNS.items())


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
    return (
        "gpu" in names
        and "pid" not in names
        and any(n in names for n in ("sm", "pwr", "fb", "mclk", "pclk", "gtemp", "temp"))
    )


# --- nvsmi_xml --------------------------------------------------------------------------

# Tag paths under <gpu>, newest name first (v12 renamed power_readings and clocks_throttle_reasons).
XML_PATHS: dict[str, tuple[str, ...]] = {
    "util_text": ("utilization/gpu_util",),
    "mem_util_text": ("utilization/memory_util",),
    "mem_used_text": ("fb_memory_usage/used",),
    "mem_total_text": ("fb_memory_usage/total",),
    "power_text": (
        "gpu_power_readings/power_draw",
        "gpu_power_readings/instant_power_draw",
        "power_readings/power_draw",
        "gpu_power_readings/average_power_draw",
    ),
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
            parts = [line[line.index("<nvidia_smi_log") :]]
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
            raw.add(
                line=line, text="<nvidia_smi_log>", machine_id=host, problem="snapshot cut off before </nvidia_smi_log>"
            )
            continue
        try:
            root = ET.fromstring(text)
        except ET.ParseError as e:
            raw.add(
                line=line + e.position[0] - 1,
                text=text.splitlines()[e.position[0] - 1][:500] if text else "",
                machine_id=host,
                problem=f"unreadable XML snapshot: {e}",
            )
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
                active = [
                    _REASON_ALIASES.get(m.group(1), m.group(1))
                    for child in reasons
                    if (m := _REASON_TAG.fullmatch(child.tag)) and (child.text or "").strip() == "Active"
                ]
                known = [
                    child
                    for child in reasons
                    if _REASON_TAG.fullmatch(child.tag) and (child.text or "").strip() in ("Active", "Not Active")
                ]
                throttle = ",".join(active) if active else ("none" if known else None)
            gpu_line = gpu_lines[position] if len(gpu_lines) == len(gpus) else line
            common = {
                "line": gpu_line,
                "text": f'<gpu id="{gpu.get("id", "")}">',
                "machine_id": host,
                "local_at": local_at,
                "utc_at": utc_at,
                "time_text": stamp,
                "index_text": str(position) if whole else None,
                "pci_text": gpu.get("id"),
            }
            raw.add(**common, **values, throttle_text=throttle)
            for mig in gpu.findall("mig_devices/mig_device"):
                raw.add(
                    **common,
                    instance_text=mig.findtext("gpu_instance_id"),
                    uuid=values["uuid"],
                    model=values["model"],
                    mem_used_text=_text(mig, ("fb_memory_usage/used",)),
                    mem_total_text=_text(mig, ("fb_memory_usage/total",)),
                )
        if not gpus:
            message = " ".join(t.strip() for t in root.itertext() if t.strip())[:500] or "snapshot lists no GPU"
            events.add(line=line, event_at=None, machine_id=host, kind="tool_error", detail=message)
    raw.flush()
    events.flush()
    if not documents and ctx.head.lstrip().startswith(_QUERY_TEXT):
        raise ParseError(
            f"{ctx.path}: nvidia-smi -q text: gca reads the same report as XML",
            hint="log it with nvidia-smi -q -x (or --query-gpu ... --format=csv)",
        )
    if not documents:
        raise ParseError(f"{ctx.path}: no <nvidia_smi_log> document", hint="expected the output of nvidia-smi -q -x")
    ctx.con.execute(
        "UPDATE stage_raw SET problem = 'snapshot without a <timestamp>: pass --time' "
        "WHERE problem IS NULL AND local_at IS NULL AND utc_at IS NULL AND time_text IS NULL"
    )
    return store_staged(ctx, zone)


_QUERY_TEXT = "==============NVSMI LOG=============="


def _sniff_xml(head: str) -> bool:
    # nvidia-smi -q in its text form is claimed too, to be refused with the command that helps
    return "<nvidia_smi_log" in head or head.lstrip().startswith(_QUERY_TEXT)


# Every nvidia-smi output is one kind of measurement (NVML's, ingest/samples.py): a CSV log and a
# dmon log of one GPU at one time hold the same sample.
SAMPLE_KIND = "nvidia-smi"

FORMATS = [
    FileFormat(
        name="nvsmi_csv",
        source="nvidia-smi",
        description="nvidia-smi --query-gpu CSV log (any fields, with or without header and units)",
        file_names=(),
        sniff=_sniff_csv,
        load=bounded_memory(_load_csv),
        default_zone=local_zone(),
        prepare=functools.partial(read_ahead, dmon=False),
        sample_kind=SAMPLE_KIND,
    ),
    FileFormat(
        name="nvsmi_dmon",
        source="nvidia-smi",
        description="nvidia-smi dmon log (any -s column set; -o DT for times)",
        file_names=(),
        sniff=_sniff_dmon,
        load=bounded_memory(_load_dmon),
        default_zone=local_zone(),
        prepare=functools.partial(read_ahead, dmon=True),
        sample_kind=SAMPLE_KIND,
    ),
    FileFormat(
        name="nvsmi_xml",
        source="nvidia-smi",
        description="nvidia-smi -q -x XML snapshots (one or several concatenated)",
        file_names=(),
        sniff=_sniff_xml,
        load=bounded_memory(_load_xml),
        default_zone=local_zone(),
        sample_kind=SAMPLE_KIND,
    ),
]
