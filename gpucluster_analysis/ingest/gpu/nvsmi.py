"""nvidia-smi telemetry logs: `--query-gpu` CSV and `dmon` (`-q -x` XML snapshots are nvsmi_xml.py's).

* `nvsmi_csv`: `nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits] [-l N]`,
  any field set. Header names lose their ` [unit]`; values may carry units or not; every
  N/A spelling is missing; a header repeated mid-file (concatenated logs) starts a new
  block, with its own field set. A headerless log needs `--columns` (the query's field
  list). `timestamp` (`2026/07/14 08:12:38.696`) is local time in the site's zone.
* `nvsmi_dmon`: `nvidia-smi dmon [-s ...] [-o DT]`: columns from the first `#` line of
  each block (old `temp` and new `gtemp` alike), `-` missing, `-o DT` date and time.

Neither tool names its host: it is `--host`, else the file name (`host_from_name`).
A log without times (dmon without `-o DT`, a query without `timestamp`) takes them
from `--time` (first sample) and `--interval` (seconds between samples).

The layout of a block (fields, header keys, the query command) and recognizing the logs are
nvsmi_layout.py's; what every telemetry reader shares (staging, host and time of a file,
storing) is `telemetry.py`. Big logs (days at one line per GPU per second) are streamed:
Python only numbers the lines and tells headers, data and tool errors apart, in bounded
batches handed to DuckDB as Arrow tables; `sql/ingest/nvsmi_lines.sql` splits and types the
fields and `sql/ingest/nvsmi_check.sql` and `nvsmi_store.sql` (shared with DCGM) check and
store the rows; `nvsmi_fast.py` types the plainly valid rows of a CSV log itself, which is faster.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.gpu import nvsmi_fast
from gpucluster_analysis.ingest.gpu.nvsmi_layout import (
    CSV_FIELDS,
    DMON_FIELDS,
    MEASURES,
    block_layout,
    columns_option,
    csv_header_keys,
    csv_key,
    not_data,
    query_command,
    sniff_csv,
    sniff_dmon,
    stage_blocks,
    unquote,
)
from gpucluster_analysis.ingest.gpu.telemetry import (
    CUT_LINE,
    EVENT_COLUMNS,
    RAW_COLUMNS,
    SQL_TYPES,
    TOOL_ERROR,
    Batches,
    host_for,
    site_zone,
    start_time,
    store_staged,
)
from gpucluster_analysis.ingest.lines import read_chunks
from gpucluster_analysis.ingest.memory import bounded_memory
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
    given = columns_option(options)
    if given:
        keys = [k.lower() for k in given] if dmon else [csv_key(k) for k in given]
        current = block_layout(keys, DMON_FIELDS if dmon else CSV_FIELDS, 0)
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
            text = unquote(text)
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
                    current = block_layout(names, DMON_FIELDS, len(layouts))
                    layouts.append(current)
                units_next = True
            return
        units_next = False
        if not dmon and (command := query_command(text)) is not None:
            # the pasted command names the fields of the lines under it (a header line may follow)
            header_text = None
            current = block_layout(command.keys, CSV_FIELDS, len(layouts), command=True)
            layouts.append(current)
            command_interval = command.interval_s or command_interval
            return
        if not dmon and text[0].isalpha() and text != header_text and (keys := csv_header_keys(text)):
            header_text = text
            current = block_layout(keys, CSV_FIELDS, len(layouts))
            layouts.append(current)
            return
        if not dmon and text == header_text:
            return
        n = len(text.split()) if dmon else text.count(",") + 1
        if (current is None or n != current["n_fields"]) and TOOL_ERROR.search(text):
            sink.event(line=number, machine_id=host, kind="tool_error", detail=text)
            return
        if current is None and not_data(text, dmon=dmon):
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
    stage_blocks(ctx, layouts)
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


def _check_layouts(ctx: LoadContext, layouts: list[dict[str, Any]], *, dmon: bool) -> None:
    for r in layouts:
        if r["p_index"] is None and r["p_uuid"] is None and r["p_pci"] is None:
            raise ParseError(
                f"{ctx.path}: the field list has no GPU index" + ("" if dmon else ", uuid or pci.bus_id"),
                hint="gca cannot tell the GPUs apart; query index (or uuid, pci.bus_id) too",
            )
        if not any(r[c] is not None for c in MEASURES) and not r["reason_pos"]:
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


# Every nvidia-smi output is one kind of measurement (NVML's, ingest/samples.py): a CSV log and a
# dmon log of one GPU at one time hold the same sample.
SAMPLE_KIND = "nvidia-smi"
FORMATS = [
    FileFormat(
        name="nvsmi_csv",
        source="nvidia-smi",
        description="nvidia-smi --query-gpu CSV log (any fields, with or without header and units)",
        file_names=(),
        sniff=sniff_csv,
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
        sniff=sniff_dmon,
        load=bounded_memory(_load_dmon),
        default_zone=local_zone(),
        prepare=functools.partial(read_ahead, dmon=True),
        sample_kind=SAMPLE_KIND,
    ),
]
