"""`dcgmi dmon` text: DCGM's fields, profiling ones included, per GPU and MIG instance.

* `dcgmi_dmon`: what `dcgmi dmon -e FIELD_IDS [-d MS] [-c N] [-i IDS | -g GROUP]` prints: a
  header of the fields' short names (`#Entity GRACT SMACT ...`, `# Entity ...` before DCGM
  2.4), a unit line (`ID`/`Id`), then one row per entity and sample (`GPU 0  0.429 ...`,
  `GPU-I 1  0.750 ...`). The header repeats every 14 samples; `N/A` is a missing value.
  Columns are read from each header: GRACT is gr_engine_active, SMACT, SMOCC, TENSO, FP64A,
  FP32A, FP16A, DRAMA, PCITX, PCIRX, NVLTX, NVLRX the other profiling fields, and GPUTL
  (util_pct), MCUTL, POWER/PWR, TMPTR, SMCLK, FBUSD, FBTTL (or FBUSD + FBFRE + FBRSV),
  UUID#, DVNAM and PCBID the device fields; other fields are skipped.

Rows carry no time: the run's first sample is `--time`, and sample k is k intervals later,
the interval being `--interval`, else the `-d` (milliseconds; dcgmi's default 1000) of a
`dcgmi dmon` command line pasted above the output. A MIG instance (`GPU-I n`, n being DCGM's
entity id of the instance, not nvidia-smi's GPU instance id) is stored under the GPU row
printed above it: DCGM 2.4 and later list each GPU's instances right after it. An instance
with no GPU above it (a group of instances alone) is a reject saying so. The host is
`--host` or the file name. What dcgmi prints instead of data (`Error setting watches ...`)
is a tool_error event.

Like nvidia-smi's logs, the lines are read in Arrow chunks: rows go to DuckDB as they are
(`sql/ingest/dcgmi_lines.sql` splits them, `nvsmi_check.sql` and `nvsmi_store.sql` check and store them) and
Python looks only at headers, command lines and messages.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis import missing_values
from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import first_lines
from gpucluster_analysis.ingest.gpu.dcgm import SAMPLE_KIND
from gpucluster_analysis.ingest.gpu.telemetry import (
    CUT_LINE,
    EVENT_COLUMNS,
    TOOL_ERROR,
    Batches,
    host_of,
    site_zone,
    start_time,
    store_staged,
)
from gpucluster_analysis.ingest.lines import read_chunks
from gpucluster_analysis.ingest.memory import bounded_memory
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import local_zone

# A row: the entity (as DeviceMonitor.cpp names entity groups) and its id, then values.
ENTITY_ROW = r"^(?:GPU-CI|GPU-I|GPU|vGPU|Switch|CPU Core|CPU|CX|SW|UNKNOWN|None) \d+(?:\s|$)"
_ENTITY = re.compile(r"(?:GPU-CI|GPU-I|GPU|vGPU|Switch|CPU Core|CPU|CX|SW|UNKNOWN|None)\s+\d+(?:\s|$)")
# `#Entity` (DCGM 2.4 and later) or `# Entity` (earlier: right-aligned, `Id` under it).
_HEADER = re.compile(r"#\s?Entity(?:\s+[A-Z0-9#_]{2,12})+\s*$")
_UNITS = re.compile(r"(?:ID|Id)(?:\s|$)")
# A pasted command line, after any prompt (`$ `, `[root@node01 ~]# `, `/bin/dcgmi`).
_COMMAND = re.compile(r"(?:^|[\s/\\>$#%\]])dcgmi\s+dmon(?:\s+(?P<args>.*))?$")
_COMMAND_END = re.compile(r"\s(?:\||>>?|2>|&|;)")
_STOPPED = re.compile(r"dmon was stopped due to receiving a signal", re.IGNORECASE)
# What dcgmi prints instead of rows (besides nvidia-smi's own error texts).
_DCGMI_ERROR = re.compile(
    r"^error\b|no data returned from the hostengine|unrecoverable error|not currently loaded"
    r"|unable to (?:establish|connect|get|watch|create|add)|host engine connection|requires root",
    re.IGNORECASE,
)
DEFAULT_DELAY_MS = 1000.0  # dcgmi dmon's -d when the command line has none

# stage_raw's columns (and the parts of the memory total) -> the dmon fields that fill them,
# by short name as `dcgmi dmon -l` lists them; the first present wins.
FIELDS: dict[str, tuple[str, ...]] = {
    "gr_engine_text": ("GRACT",),
    "sm_active_text": ("SMACT",),
    "sm_occupancy_text": ("SMOCC",),
    "tensor_active_text": ("TENSO",),
    "fp64_active_text": ("FP64A",),
    "fp32_active_text": ("FP32A",),
    "fp16_active_text": ("FP16A",),
    "dram_active_text": ("DRAMA",),
    "pcie_tx_text": ("PCITX",),
    "pcie_rx_text": ("PCIRX",),
    "nvlink_tx_text": ("NVLTX",),
    "nvlink_rx_text": ("NVLRX",),
    "util_text": ("GPUTL",),
    "mem_util_text": ("MCUTL",),
    "power_text": ("POWER", "PWR"),
    "temp_text": ("TMPTR",),
    "sm_clock_text": ("SMCLK",),
    "mem_used_text": ("FBUSD",),
    "fb_total_text": ("FBTTL",),
    "fb_free_text": ("FBFRE",),
    "fb_reserved_text": ("FBRSV",),
    "uuid": ("UUID#",),
    "model": ("DVNAM",),
    "pci_text": ("PCBID",),
}
_BLOCK_TYPES = {
    "block": pa.int32(),
    "n_fields": pa.int32(),
    "starts": pa.list_(pa.int32()),
    "fixed": pa.bool_(),
    "legacy": pa.bool_(),
    **{f"p_{column}": pa.int32() for column in FIELDS},
}


def command_delay_s(text: str) -> float | None:
    """Seconds between samples that a pasted `dcgmi dmon ...` command line asks for (its -d in
    milliseconds, else dcgmi's default of 1 s); None when the line is no such command."""
    match = _COMMAND.search(text)
    if match is None:
        return None
    args = _COMMAND_END.split(" " + (match.group("args") or ""), maxsplit=1)[0]
    tokens = [t for t in re.split(r"\s+|=", args.strip()) if t]
    for i, token in enumerate(tokens):
        if token in ("-d", "--delay") and i + 1 < len(tokens):
            if re.fullmatch(r"\d+(\.\d+)?", tokens[i + 1]) and float(tokens[i + 1]) > 0:
                return float(tokens[i + 1]) / 1000
            return None
    return DEFAULT_DELAY_MS / 1000


def _layout(text: str, block: int) -> dict[str, Any]:
    """A header line's fields: short names, the 1-based column each starts at, and how rows lay out."""
    words = list(re.finditer(r"\S+", text))
    skip = 1 if words and words[0].group(0) == "#Entity" else 2  # `#Entity` or `#` `Entity`
    fields = words[skip:]
    starts = [m.start() + 1 for m in fields]
    names = [m.group(0).upper() for m in fields]
    return {
        "block": block,
        "n_fields": len(fields),
        "starts": starts,
        **{
            f"p_{column}": next((names.index(n) + 1 for n in wanted if n in names), None)
            for column, wanted in FIELDS.items()
        },
        # DCGM 4.0 on pads the entity column to 11 or more and leaves a missing value blank in
        # place; 2.4-3.x (10) leave it out, closing up the row, so only a full row can be read
        "fixed": skip == 1 and bool(starts) and starts[0] >= 12,
        "legacy": skip == 2,
    }


def _load(ctx: LoadContext) -> LoadCounts:
    host = host_of(ctx)
    zone = site_zone(ctx)
    lines = Batches(ctx.con, "stage_lines", {"line": pa.int64(), "block": pa.int32(), "text": pa.string()})
    events = Batches(ctx.con, "stage_gpu_events", EVENT_COLUMNS)
    layouts: list[dict[str, Any]] = []
    state: dict[str, Any] = {
        "block": None,
        "units_at": None,
        "cut_line": None,
        "delay": None,
        "command_line": 0,
        "rows": 0,
        "rows_at_command": 0,
    }

    def line_by_line(number: int, text: str, cut: bool) -> None:
        """What a line that is not plainly a row is: header, unit line, command, message, reject."""
        if not text:
            return
        block = state["block"]
        if _HEADER.match(text):
            layouts.append(_layout(text, len(layouts)))
            state["block"], state["units_at"] = len(layouts) - 1, number + 1
            return
        if number == state["units_at"] and _UNITS.match(text):
            return
        delay = command_delay_s(text)
        if delay is not None:
            if state["command_line"] and state["rows"] > state["rows_at_command"]:
                raise ParseError(
                    f"{ctx.path}:{number}: a second dcgmi dmon run starts here, and its rows carry no times",
                    hint="split the file at each dcgmi dmon command line and ingest each part with its own --time",
                )
            state["delay"], state["command_line"], state["rows_at_command"] = delay, number, state["rows"]
            return
        if _STOPPED.search(text):
            return  # dcgmi's own words when Ctrl-C ended the run
        if _ENTITY.match(text):  # a row with non-ASCII text, or the file's cut last line
            if block is None:
                _orphan(ctx, number)
            lines.add(line=number, block=block, text=text)
            state["cut_line"] = number if cut else None
            return
        if TOOL_ERROR.search(text) or _DCGMI_ERROR.search(text):
            events.add(line=number, machine_id=host, kind="tool_error", detail=text)
            return
        lines.add(line=number, block=-1 if block is None else block, text=text)  # a reject

    for first, texts, cut_last in read_chunks(ctx.path):
        # Rows (an entity and its id first) go to DuckDB as they are, in one insert per chunk;
        # Python looks only at the other lines (headers every 14 samples, commands, messages).
        mask = pc.and_(pc.string_is_ascii(texts), pc.match_substring_regex(texts, ENTITY_ROW))
        plain = mask.fill_null(False).to_numpy(zero_copy_only=False).copy()
        if cut_last:
            plain[-1] = False  # a cut last line: looked at alone
        plain_before = np.cumsum(plain) - plain
        rows_before = state["rows"]
        changes, blocks = [0], [state["block"]]  # the block in effect from each position on
        for pos in np.flatnonzero(~plain).tolist():
            state["rows"] = rows_before + int(plain_before[pos])
            line_by_line(first + pos, texts[pos].as_py(), cut_last and pos == len(texts) - 1)
            if state["block"] != blocks[-1]:
                changes.append(pos)
                blocks.append(state["block"])
        state["rows"] = rows_before + int(plain.sum())
        positions = np.flatnonzero(plain)
        if not len(positions):
            continue
        block_of = np.array([-2 if b is None else b for b in blocks], dtype=np.int32)[
            np.searchsorted(np.array(changes), positions, side="right") - 1
        ]
        if (block_of == -2).any():
            _orphan(ctx, first + int(positions[int(np.argmax(block_of == -2))]))
        batch = pa.table(  # noqa: F841  -- DuckDB reads it by name
            {
                "line": pa.array(positions + first, type=pa.int64()),
                "block": pa.array(block_of),
                "text": texts.take(pa.array(positions)),
            }
        )
        ctx.con.execute("INSERT INTO stage_lines SELECT * FROM batch")
    lines.flush()
    events.flush()
    if not layouts and not events.count:
        raise ParseError(
            f"{ctx.path}: no dcgmi dmon header (#Entity ...) and no data",
            hint="is this the right file? --format forces a format",
        )
    blocks_table = pa.table({c: pa.array([r[c] for r in layouts], type=t) for c, t in _BLOCK_TYPES.items()})  # noqa: F841  -- DuckDB reads it by name
    ctx.con.execute("CREATE OR REPLACE TEMP TABLE stage_blocks AS SELECT * FROM blocks_table")
    start = interval = None
    if state["rows"]:
        start = start_time(ctx)
        if start is None:
            raise InputError(
                f"{ctx.path}: dcgmi dmon prints no times",
                hint="pass --time (when its first sample was taken) and --interval (seconds between samples: "
                "its -d / 1000, 1 by default)",
            )
        interval = ctx.options.interval_s or state["delay"]
        if interval is None and _repeats(ctx):
            raise InputError(
                f"{ctx.path}: the output has several samples per GPU and no times",
                hint="pass --interval (seconds between samples: dcgmi dmon's -d / 1000, 1 by default) with --time",
            )
    run_script(ctx.con, "ingest", "nvsmi_macros", missing_values.sql_params())
    run_script(
        ctx.con,
        "ingest",
        "dcgmi_lines",
        {"host": host, "start": start, "interval": interval, "cut_line": state["cut_line"], "cut_reason": CUT_LINE},
    )
    return store_staged(ctx, zone)


def _orphan(ctx: LoadContext, number: int) -> None:
    raise ParseError(
        f"{ctx.path}:{number}: rows without a dcgmi dmon header (#Entity ...): gca cannot tell which field is which",
        hint="keep the header dcgmi printed above the rows",
    )


def _repeats(ctx: LoadContext) -> bool:
    """Whether some entity has more than one row (then the samples need an interval)."""
    return bool(
        ctx.con.execute(
            "SELECT 1 FROM stage_lines WHERE block >= 0 AND regexp_matches(text, ?) "
            "GROUP BY regexp_extract(text, '^(?:GPU \\d+ LINK|SW \\d+ LINK|CPU Core|\\S+)\\s+\\d+') HAVING count(*) > "
            "1 LIMIT 1",
            [ENTITY_ROW],
        ).fetchall()
    )


def _sniff(head: str) -> bool:
    # the header, under at most a few lines of prompt, command line or notes
    texts = [line.strip() for line in first_lines(head, 12) if line.strip()]
    return any(_HEADER.match(text) for text in texts[:6])


FORMATS = [
    FileFormat(
        name="dcgmi_dmon",
        source="dcgm",
        description="dcgmi dmon -e FIELDS text (profiling and device fields per GPU and MIG instance; "
        "--time/--interval for times)",
        file_names=(),
        sniff=_sniff,
        load=bounded_memory(_load),
        default_zone=local_zone(),
        sample_kind=SAMPLE_KIND,
    ),
]
