"""The layout of nvidia-smi's CSV and dmon logs: which query fields fill which stage columns, the
header's keys, a pasted `nvidia-smi --query-gpu` command, the block layout staged per header,
the lines that are no data rows, and recognizing either log from its head."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import pyarrow as pa

from gpucluster_analysis.ingest.base import LoadContext
from gpucluster_analysis.ingest.files import first_lines

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
POSITIONS = (
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
MEASURES = ("p_util", "p_mem_util", "p_mem_used", "p_mem_total", "p_power", "p_temp", "p_sm_clock", "p_throttle_mask")
# Individual reason fields: clocks_throttle_reasons.hw_slowdown (old) / clocks_event_reasons.* (new).
_REASON_FIELD = re.compile(r"clocks_(?:throttle|event)_reasons\.(\w+)")
REASON_ALIASES = {
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


def csv_header_keys(text: str) -> list[str] | None:
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


def block_layout(
    keys: list[str], fields: dict[str, tuple[str, ...]], block: int, *, command: bool = False
) -> dict[str, Any]:
    row: dict[str, Any] = {"block": block, "n_fields": len(keys), "lines": 0, "command": command}
    for column in POSITIONS:
        row[column] = next((keys.index(k) + 1 for k in fields.get(column, ()) if k in keys), None)
    reasons = [
        (i + 1, m.group(1))
        for i, k in enumerate(keys)
        if (m := _REASON_FIELD.fullmatch(k)) and m.group(1) not in ("active", "supported")
    ]
    row["reason_pos"] = [p for p, _ in reasons]
    row["reason_names"] = [REASON_ALIASES.get(n, n) for _, n in reasons]
    return row


BLOCK_TYPES = {
    **{c: pa.int32() for c in ("block", "n_fields", *POSITIONS)},
    "reason_pos": pa.list_(pa.int32()),
    "reason_names": pa.list_(pa.string()),
}


def stage_blocks(ctx: LoadContext, layouts: list[dict[str, Any]]) -> None:
    blocks = pa.table({c: pa.array([r[c] for r in layouts], type=t) for c, t in BLOCK_TYPES.items()})  # noqa: F841  -- DuckDB reads it by name
    ctx.con.execute("CREATE OR REPLACE TEMP TABLE stage_blocks AS SELECT * FROM blocks")


def columns_option(options: Any) -> list[str] | None:
    # IngestOptions.columns (--columns) may be a comma-separated string or a sequence of names.
    value = getattr(options, "columns", None)
    if not value:
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    return [n.strip() for n in names if n.strip()]


# A pasted shell prompt (`$ `, `user@host:~$ `, `(base) user@host:~$ `, `Singularity> `, `PS C:\> `)
# or a line naming the tools: never a data row (a row's first field ends in a comma).
PROMPT = re.compile(r"^[$>~#%]|^(?:\(\S+\)\s+)?[^\s,]*[$>#%](?:\s|$)|nvidia-smi|dcgm", re.IGNORECASE)


def not_data(text: str, *, dmon: bool) -> bool:
    """A line before the first header that is no data row: a pasted shell prompt, a note,
    what a wrapper printed first (`Started host engine version 1.4.3 ...`)."""
    if dmon:
        return not text[:1].isdigit()  # an empty line is no data row either
    return "," not in text or bool(PROMPT.search(text))


CSV_TIME = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?,")
# A node whose log holds only nvidia-smi's failure is still read: its failure is an event.
_ONLY_FAILURE = re.compile(
    r"no devices were found|nvidia-smi has failed|failed to initialize nvml|unable to determine the device handle"
    r"|nvml library version"  # newer drivers add it under `Failed to initialize NVML: Driver/library version mismatch`
    r"|couldn't find libnvidia-ml|please also try adding directory that contains libnvidia-ml",
    re.IGNORECASE,
)
# dmon and pmon on boards that do not support them (GeForce) print only this.
_DMON_FAILURE = re.compile(r"not supported on the device|failed to process command line", re.IGNORECASE)


def sniff_csv(head: str) -> bool:
    texts = [line.strip() for line in first_lines(head, 5) if line.strip()]
    if texts and all(_ONLY_FAILURE.search(text) for text in texts):
        return True
    if any(query_command(text) for text in texts):
        return True  # a pasted `nvidia-smi --query-gpu=... --format=csv` names the fields below it
    while texts[:1] and len(texts) > 1 and PROMPT.search(texts[0]) and csv_header_keys(texts[0]) is None:
        texts = texts[1:]  # a pasted shell prompt above the output
    if not texts:
        return False
    first = texts[0]
    return bool(("," in first and csv_header_keys(first) is not None) or CSV_TIME.match(first))


def unquote(text: str) -> str:
    """A dmon line pasted from Markdown (`> \\# gpu ...`, a GitHub quote) as dmon printed it."""
    if text.startswith(">"):
        text = text[1:].lstrip()
        return text[1:] if text.startswith("\\#") else text
    return text


def sniff_dmon(head: str) -> bool:
    lines = [unquote(ln.strip()) for ln in first_lines(head, 3) if ln.strip()]
    if lines and all(_DMON_FAILURE.search(line) for line in lines):
        return any("not supported on the device" in line.lower() for line in lines)
    while lines[:1] and len(lines) > 1 and not lines[0].startswith("#") and not_data(lines[0], dmon=True):
        lines = lines[1:]  # a shell prompt, or what a wrapper printed before dmon's header
    if not lines or not lines[0].startswith("#"):
        return False
    names = [t.lower() for t in lines[0].lstrip("#").split()]
    return (
        "gpu" in names
        and "pid" not in names
        and any(n in names for n in ("sm", "pwr", "fb", "mclk", "pclk", "gtemp", "temp"))
    )
