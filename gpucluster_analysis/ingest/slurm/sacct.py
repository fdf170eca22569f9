"""Slurm: `sacct` accounting dumps and `scontrol show job -d` snapshots.

`slurm_sacct` reads `sacct --parsable2` (`-P`), `--parsable` (`-p`, a trailing `|`) and
another `--delimiter`, with a header line or, for `--noheader` dumps, the column order
given with `gca ingest --columns`; and the default fixed-width output where no field was
cut (a `+` at the end of a full-width field is a cut: the file is refused, asking for `-P`).
Each line is parsed here (job id, state, exit code, times, TRES, hostlist), streamed in
bounded batches into a staging table (plain `-P`/`-p` rows are typed in bulk by
`slurm_fast.py`, to the same staged values), and `sql/ingest/slurm_sacct.sql` turns the staged
rows into jobs, attempts and attempt_hosts: steps are matched to the allocation row above
them, requeued runs become attempts, duplicate steps and orphan steps are rejected. A job
met again (overlapping nightly dumps, or one file of several dumps) keeps one record, the
later one (finished before unfinished, then the later End); sacct_records remembers what
was kept, so that the order the dumps come in does not matter.

`slurm_scontrol` reads `scontrol show job -d` text (one or many jobs) into gpu_bindings:
the GPU indices (`GRES=gpu:a100:4(IDX:0-3)`) each job holds on each node.

The decisions (states, het jobs, jobs cancelled while pending...) are listed in
docs/schema.md, "Reading Slurm".
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis.bounds import DEFAULT_MAX_GPUS_PER_NODE, FIRST_YEAR, LAST_YEAR, outside_years, over_gpu_bound
from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import CONTROL_BYTES, first_lines, line_blocks, open_binary
from gpucluster_analysis.ingest.gpu.telemetry import bounded_memory
from gpucluster_analysis.ingest.slurm.hostlist import HostlistError, expand_hostlist
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import install_zone, local_zone, to_utc_python

SOURCE = "slurm"
BATCH_ROWS = 10_000
# DuckDB's memory limit while a sacct dump loads: past it the staging tables spill to the
# store's temp directory. The typed rows (Arrow, ~1 GB at a million jobs) come on top.
SQL_MEMORY_BYTES = 1500 * 1000**2
_TEXT_LIMIT = 500
# What to export: the columns gca reads (README's nightly recipe).
SACCT_FORMAT = (
    "JobID,JobName,User,Account,Partition,QOS,State,ExitCode,Submit,Eligible,Start,End,Timelimit,NNodes,"
    "ReqTRES,AllocTRES,NodeList"
)
# Columns a dump loads without, leaving what the report needs unknown: (column, the
# lower-case names that stand for it, what is unknown without them).
_NEEDED_COLUMNS = (
    ("Start", ("start",), "when runs started"),
    ("End", ("end",), "when runs ended"),
    ("AllocTRES", ("alloctres", "allocgres"), "the GPUs runs held"),
)
# runs of plain lines typed at once, one per worker thread (on two cores, three keep both busy:
# a run waits on polars and DuckDB in turn)
_RUNS_AHEAD = 3

# --- job ids, states, values -------------------------------------------------------

# 123 | 123.batch | 123_4 | 123_[0-9%2] | 123+1 | 123+1.0 | 123.0+1 (a het step of job 123)
_JOB_ID = re.compile(
    r"^(?P<job>\d+(?:_(?:\d+|\[[^\]]*\]))?)(?:\+(?P<het>\d+))?(?:\.(?P<step>[A-Za-z0-9_\-]+(?:\+\d+)?))?$"
)

# sacct state word -> jobs.status. Requeue states are handled apart (see status_of).
STATUS_OF_STATE = {
    "COMPLETED": "passed",
    "FAILED": "failed",
    "OUT_OF_MEMORY": "failed",
    "LAUNCH_FAILED": "failed",
    "BOOT_FAIL": "node_fail",  # the node failed to boot for the job: infrastructure, like NODE_FAIL
    "NODE_FAIL": "node_fail",
    "CANCELLED": "killed",
    "REVOKED": "killed",  # federation: a sibling started the job elsewhere
    "TIMEOUT": "timeout",
    "DEADLINE": "timeout",  # ended (or never started) because it could not finish by --deadline
    "PREEMPTED": "preempted",
    "RUNNING": "running",
    "SUSPENDED": "running",
    "RESIZING": "running",
    "COMPLETING": "running",
    "CONFIGURING": "running",
    "SIGNALING": "running",
    "STAGE_OUT": "running",
    "STOPPED": "running",
    "PENDING": "pending",
    "RESV_DEL_HOLD": "pending",
}
# A run that ended because the job went back to the queue.
REQUEUE_STATES = frozenset({"REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT"})
KNOWN_STATES = frozenset(STATUS_OF_STATE) | REQUEUE_STATES

_MISSING = frozenset({"", "unknown", "none", "n/a", "(null)"})
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}$")
_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?(?:\.\d+)?$")
_NO_LIMIT = frozenset({"unlimited", "partition_limit", "invalid", "none", ""})
_EXIT = re.compile(r"^(-?\d+):(-?\d+)$")
_GPU_TYPE = re.compile(r"^[A-Za-z0-9_.\-]+$")  # a100, a100_3g.20gb, nvidia_h100-80gb
# Counts (GPUs, nodes, het offsets, exit codes) beyond this are typos; the staging columns are 32-bit.
_MAX_COUNT = 2**31 - 1


def parse_job_id(text: str) -> tuple[str, int | None, str | None] | None:
    """(job_id, het_offset, step) of a sacct JobID, or None when it is not one.

    job_id keeps the array task (`123_4`, pending `123_[0-9]`): every array task is its
    own job. A heterogeneous job's components (`123+0`, `123+1`) share job_id `123`.
    """
    match = _JOB_ID.match(text)
    if not match:
        return None
    het = match.group("het")
    if het is not None and int(het) > _MAX_COUNT:  # het_offset is a 32-bit column
        return None
    return match.group("job"), (int(het) if het is not None else None), match.group("step")


def parse_state(text: str) -> tuple[str, str | None]:
    """(state word, canceller uid) of `CANCELLED by 1234`, `COMPLETED`, ..."""
    parts = text.split()
    if not parts:
        return "", None
    word = parts[0].upper()
    by = parts[2] if len(parts) >= 3 and parts[1].lower() == "by" else None
    return word, by


def status_of(state: str, started: bool) -> str:
    """jobs.status vocabulary for one sacct row; a requeued run that had started was preempted."""
    if state in REQUEUE_STATES:
        return "preempted" if started else "pending"
    return STATUS_OF_STATE.get(state, "unknown")


class YearOutOfRange(ValueError):
    """A well-formed time in a year whose zone rules gca does not know."""


def parse_time(text: str, zone: str = "UTC") -> str | None:
    """'YYYY-MM-DD HH:MM:SS' (naive local) of a sacct time; None for Unknown/None/empty.

    Epoch seconds (sites that set SLURM_TIME_FORMAT=%s) come back as '@YYYY-MM-DD HH:MM:SS',
    already UTC. Slurm's unset time (0) is None however it is written: `0`, or the epoch in
    the site's zone (`1969-12-31T19:00:00` in New York). Raises ValueError for anything else,
    and for years outside the window every reader holds times to (bounds.py).
    """
    if text.lower() in _MISSING:
        return None
    if text.isdecimal():
        seconds = int(text)
        if seconds == 0:
            return None
        if seconds >= 2**40:  # past any year gca reads, and past what datetime holds
            raise YearOutOfRange(text)
        utc = datetime(1970, 1, 1) + timedelta(seconds=seconds)
        if not FIRST_YEAR <= utc.year <= LAST_YEAR:
            raise YearOutOfRange(text)
        return "@" + utc.strftime("%Y-%m-%d %H:%M:%S")
    if not _TIME.match(text):
        raise ValueError(text)
    try:
        local = datetime.fromisoformat(text)  # a real date: 2024-02-30 fails here
    except ValueError:
        raise ValueError(text) from None
    if not FIRST_YEAR <= local.year <= LAST_YEAR:
        if local.year in (1969, 1970) and to_utc_python(local, zone) == datetime(1970, 1, 1):
            return None
        raise YearOutOfRange(text)
    return text.replace("T", " ")


def parse_duration_s(text: str) -> int | None:
    """Seconds of `[D-]HH:MM:SS`, `MM:SS`, `D-HH:MM`, `D-HH`; None when unlimited. ValueError otherwise."""
    if text.lower() in _NO_LIMIT:
        return None
    match = _DURATION.match(text)
    if not match:
        raise ValueError(text)
    days_text, a, b, c = match.groups()
    days = int(days_text) if days_text else 0
    numbers = [int(x) for x in (a, b, c) if x is not None]
    if days_text:  # Slurm's D-HH, D-HH:MM, D-HH:MM:SS
        numbers += [0] * (3 - len(numbers))
    elif len(numbers) == 1:  # a bare number is minutes (TimelimitRaw)
        numbers = [0, numbers[0], 0]
    elif len(numbers) == 2:  # MM:SS
        numbers = [0, *numbers]
    hours, minutes, seconds = numbers
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if minutes >= 60 or seconds >= 60 or total >= 2**63:
        raise ValueError(text)
    return total


def parse_limit_minutes(text: str) -> int | None:
    """Seconds of a TimelimitRaw (minutes); None when it is not a number (UNLIMITED, ...)."""
    if not text.isdecimal():
        return None
    seconds = int(text) * 60
    if seconds >= 2**63:
        raise ValueError(text)
    return seconds


@dataclass(frozen=True)
class Tres:
    gpus: int  # untyped gres/gpu, else the sum of the typed keys; 0 without any
    model: str | None  # the type(s) of typed gres/gpu:<type> keys
    nodes: int | None
    keyed: bool = True  # a GPU key was there (gres/gpu=0 included): the site accounts GPUs in TRES


def parse_tres(text: str) -> Tres | None:
    """GPUs, GPU model and nodes of an AllocTRES/ReqTRES list; None when empty. ValueError when unreadable."""
    if text.lower() in _MISSING:
        return None
    untyped: int | None = None
    typed: dict[str, int] = {}
    nodes = None
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ValueError(item)
        if key == "gres/gpu" or key.startswith("gres/gpu:") or key == "node":
            if not value.isdecimal() or int(value) > _MAX_COUNT:
                raise ValueError(item)
            if key == "gres/gpu":
                untyped = int(value)
            elif key == "node":
                nodes = int(value)
            else:
                gpu_type = key.split(":", 1)[1]
                if not _GPU_TYPE.match(gpu_type):  # gres/gpu:tesla:2(S:0-1) is GRES syntax, not TRES
                    raise ValueError(item)
                typed[gpu_type] = typed.get(gpu_type, 0) + int(value)
    gpus = untyped if untyped is not None else sum(typed.values())
    model = ",".join(sorted(typed)) if typed else None
    return Tres(gpus=gpus, model=model, nodes=nodes, keyed=untyped is not None or bool(typed))


def parse_gres(text: str) -> Tres | None:
    """Old sacct AllocGRES/ReqGRES (`gpu:2`, `gpu:tesla:2`, `gpu:(null):2(IDX:0-1)`) as a Tres without nodes."""
    if text.lower() in _MISSING:
        return None
    gpus, models, keyed = 0, set(), False
    for entry in _split_gres(text):
        parts = re.sub(r"\(.*$", "", entry.strip()).split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) not in (2, 3) or not parts[-1].isdecimal() or int(parts[-1]) > _MAX_COUNT:
            raise ValueError(entry)
        gpus += int(parts[-1])
        keyed = True
        if len(parts) == 3 and parts[1] != "(null)":
            models.add(parts[1])
    return Tres(gpus=gpus, model=",".join(sorted(models)) or None, nodes=None, keyed=keyed)


def parse_exit(text: str) -> tuple[int | None, int | None]:
    if text.lower() in _MISSING:
        return None, None
    match = _EXIT.match(text)
    if not match or max(abs(int(match.group(1))), abs(int(match.group(2)))) > _MAX_COUNT:
        raise ValueError(text)
    return int(match.group(1)), int(match.group(2))


# --- layout --------------------------------------------------------------------------

_FIELD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_/:]*$")
_TOOL_MESSAGES = ("sacct: ", "slurm_load", "slurmdbd: ")
# A terminal session pasted with its prompt: `$ sacct -P ...`, `[ann@login1 ~]$ sacct ...`
_PROMPT = re.compile(r"^.{0,80}?[$#%>]\s*(?:sacct|scontrol)\b")
_RULE = re.compile(r"^ *+-[\- ]*+$")
# Free-text columns: a '|' inside one shifts the fields after it.
_FREE_TEXT = frozenset(
    {
        "jobname",
        "comment",
        "admincomment",
        "systemcomment",
        "workdir",
        "submitline",
        "constraints",
        "reason",
        "container",
        "extra",
        "stdout",
        "stderr",
        "stdin",
    }
)


@dataclass
class Layout:
    columns: list[str]  # lower-case field names, in order
    delimiter: str | None  # None: fixed width
    trailing: bool = False  # --parsable: every line ends with the delimiter
    spans: list[tuple[int, int]] = field(default_factory=list)  # fixed width: byte [start, end) per column
    names: list[str] = field(default_factory=list)  # as written, for messages
    named_by: str = "the header has"  # for messages: what gave the columns (`--columns names`, ...)

    def index(self, name: str) -> int | None:
        try:
            return self.columns.index(name)
        except ValueError:
            return None


def _header_fields(line: str) -> tuple[list[str], str | None] | None:
    """(fields, delimiter) when the line is a sacct header (delimiter None: fixed width)."""
    lead = re.match(r"^\s*[A-Za-z][A-Za-z0-9]*", line)
    if not lead:
        return None
    rest = line[lead.end() :]
    if rest == "" or rest[0] == " ":
        delimiter = None
        fields = line.split()
    else:
        delimiter = rest[0]
        fields = [f.strip() for f in line.split(delimiter)]
        if fields and fields[-1] == "":
            fields.pop()
    lowered = [f.lower() for f in fields]
    if not ({"jobid", "jobidraw"} & set(lowered)):
        return None
    if not all(_FIELD_NAME.match(f) or (delimiter is None and f.endswith("+")) for f in fields):
        return None
    return fields, delimiter


def _fixed_layout(header: str, rule: str) -> Layout | None:
    """The columns of fixed-width output, from its header and the dashed rule under it;
    None when the header does not line up with the rule (a name outside the dashes)."""
    raw_header = header.encode("utf-8")
    raw_rule = rule.encode("utf-8")
    spans = [(m.start(), m.end()) for m in re.finditer(rb"-+", raw_rule)]
    if _off_columns(raw_header, spans):
        return None
    names = [raw_header[s:e].decode("utf-8", errors="replace").strip() for s, e in spans]
    return Layout(columns=[n.lower() for n in names], delimiter=None, spans=spans, names=names)


def _off_columns(raw: bytes, spans: list[tuple[int, int]]) -> bool:
    """Whether a fixed-width line has text between or after the columns: sacct pads with
    spaces, so such a line was re-spaced (tabs, a proportional-font copy) and its slices lie."""
    if not spans:
        return False
    gaps = [
        raw[: spans[0][0]],
        *(raw[end:start] for (_, end), (start, _) in zip(spans, spans[1:])),
        raw[spans[-1][1] :],
    ]
    return any(gap.strip() for gap in gaps)


# NordicHPC/sonar's `sacct -aP --noheader` fields (src/slurmjobs.rs), JobName last: a dump
# of exactly this layout is read without --columns.
SONAR_COLUMNS = (
    "JobID",
    "JobIDRaw",
    "User",
    "Account",
    "State",
    "Start",
    "End",
    "AveCPU",
    "AveDiskRead",
    "AveDiskWrite",
    "AveRSS",
    "AveVMSize",
    "ElapsedRaw",
    "ExitCode",
    "Layout",
    "MaxRSS",
    "MaxVMSize",
    "MinCPU",
    "ReqCPUS",
    "ReqMem",
    "ReqNodes",
    "Reservation",
    "Submit",
    "Suspended",
    "SystemCPU",
    "TimelimitRaw",
    "UserCPU",
    "NodeList",
    "Partition",
    "AllocTRES",
    "Priority",
    "JobName",
)


def _is_sonar_row(text: str) -> bool:
    """Whether a headerless line is in sonar's layout: each of the fields gca reads fits it."""
    fields = text.split("|")
    if len(fields) < len(SONAR_COLUMNS):  # JobName, last, may hold '|'
        return False

    def time_like(value: str) -> bool:
        return value in ("", "Unknown", "None") or bool(_TIME.match(value))

    return (
        _JOB_ID.match(fields[0]) is not None
        and re.match(r"^\d+(?:\.[A-Za-z0-9_+\-]+)?$", fields[1]) is not None
        and parse_state(fields[4])[0] in KNOWN_STATES
        and all(time_like(fields[i]) for i in (5, 6, 22))
        and (fields[13] == "" or _EXIT.match(fields[13]) is not None)
        and (fields[25] == "" or fields[25].isdigit() or fields[25].lower() in _NO_LIMIT)
        and (fields[29] == "" or "=" in fields[29])
    )


def _clean_columns(spec: tuple[str, ...]) -> list[str]:
    # `sacct --format` allows JobName%30: the width is no part of the name.
    return [re.sub(r"%-?\d*$", "", c.strip()) for c in spec if c.strip()]


# --- reading rows --------------------------------------------------------------------

_STAGE_COLUMNS = [
    ("line", pa.int64()),
    ("job_id", pa.string()),
    ("het_offset", pa.int32()),
    ("step", pa.string()),
    ("problem", pa.string()),
    ("job_name", pa.string()),
    ("user_name", pa.string()),
    ("account", pa.string()),
    ("partition", pa.string()),
    ("state", pa.string()),
    ("source_status", pa.string()),
    ("status", pa.string()),
    ("cancelled_by", pa.string()),
    ("exit_code", pa.int32()),
    ("exit_signal", pa.int32()),
    ("submit_t", pa.string()),
    ("eligible_t", pa.string()),
    ("start_t", pa.string()),
    ("end_t", pa.string()),
    ("time_limit_s", pa.int64()),
    ("gpus", pa.int64()),
    ("req_gpus", pa.int64()),
    ("gpu_model", pa.string()),
    ("nnodes", pa.int32()),
    ("hosts", pa.int32()),
    ("start_unknown", pa.bool_()),
    ("cluster", pa.string()),
    ("qos", pa.string()),
    ("dump", pa.int32()),
    ("text", pa.string()),
]
_STAGE_SCHEMA = pa.schema(_STAGE_COLUMNS)
# a step row as the SQL reads it (its run's outcome and the checks)
_STEP_COLUMNS = [
    ("line", pa.int64()),
    ("job_id", pa.string()),
    ("het_offset", pa.int32()),
    ("step", pa.string()),
    ("problem", pa.string()),
    ("state", pa.string()),
    ("status", pa.string()),
    ("exit_code", pa.int32()),
    ("cluster", pa.string()),
    ("text", pa.string()),
]
_STEP_SCHEMA = pa.schema(_STEP_COLUMNS)
# every row with a job id, in line order, as slurm_link reads it (with each line's md5, `digest`)
_LINK_SCHEMA = pa.schema(
    [
        ("line", pa.int64()),
        ("job_id", pa.string()),
        ("cluster", pa.string()),
        ("dump", pa.int32()),
        ("het_offset", pa.int32()),
        ("is_alloc", pa.bool_()),
    ]
)
_UNREAD_SCHEMA = pa.schema([("line", pa.int64()), ("problem", pa.string()), ("text", pa.string())])
_HOST_SCHEMA = pa.schema([("line", pa.int64()), ("machine_id", pa.string())])


class _Stager:
    """Collects the staged rows in line order, as Arrow tables held until finish(), which hands
    them to DuckDB in place (a copy costs seconds at a million jobs): the allocation rows with
    every column (stage_sacct_allocs), the step rows with the few the SQL reads
    (stage_sacct_steps), the rows without a job id (stage_sacct_unread), each block of a job's
    rows (stage_sacct_blocks, from slurm_link) and the hosts (stage_sacct_host). Rows parsed line
    by line come every BATCH_ROWS rows, or before the next rows slurm_fast typed. The reader
    yields a run's typed rows before the run's other lines (which the exact way reads), so the
    rows of a run and of the lines after it are put in line order when the next run comes
    (the rows of two such segments never interleave). `text` is
    kept for the rows read line by line only (the typed rows' lines are read again from the file
    for the few that SQL rejects: a million jobs' lines held till then were ~1 GB); each line's
    md5 is taken as it is staged, for the nightly-dump rules."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.rows: dict[str, list] = {name: [] for name, _ in _STAGE_COLUMNS}  # type: ignore[type-arg]
        self.hosts: dict[str, list] = {"line": [], "machine_id": []}  # type: ignore[type-arg]
        self.allocs: list[pa.Table] = []
        self.steps: list[pa.Table] = []
        self.keys: list[pa.Table] = []
        self.unread: list[pa.Table] = []
        self.host_tables: list[pa.Table] = []
        self.segment: list[tuple[pa.Table, pa.Table, pa.Table]] = []  # (allocs, steps, keys) not yet in order
        self.registered: list[str] = []
        self.side = con.cursor()  # md5 of the lines read line by line (_line_digests)

    def add(self, row: dict[str, object], hosts: list[str]) -> None:
        for name in self.rows:
            self.rows[name].append(row.get(name))
        for host in hosts:
            self.hosts["line"].append(row["line"])
            self.hosts["machine_id"].append(host)
        if len(self.rows["line"]) >= BATCH_ROWS:
            self.flush()

    def prepare(self, typed: Any) -> _TypedRun:
        """What the stager keeps of rows slurm_fast typed (a slurm_fast.FastRows): Arrow tables
        of its schemas, with each line's md5. Safe in a worker thread (its own cursor), so that
        it runs beside the reading (a third of the typed rows' cost at a million jobs)."""
        cursor = self.con.cursor()
        try:
            # 32-bit string offsets: half the memory of polars' 64-bit ones
            allocs, steps, keys = _kept(
                cursor,
                typed.allocs.to_arrow().cast(_STAGE_SCHEMA),
                typed.steps.to_arrow().cast(_STEP_SCHEMA),
                typed.keys.to_arrow().cast(_LINK_SCHEMA),
                typed.texts,
            )
        finally:
            cursor.close()
        hosts = typed.hosts.to_arrow().cast(_HOST_SCHEMA) if typed.hosts.height else None
        return _TypedRun(allocs, steps, keys, hosts, typed.gpu_keyed)

    def add_typed(self, run: _TypedRun) -> None:
        """Rows typed by slurm_fast, as prepare() made them, after the rows read before them."""
        self.flush()
        self._settle()
        self.segment.append((run.allocs, run.steps, run.keys))
        if run.hosts is not None:
            self.host_tables.append(run.hosts)

    def _settle(self) -> None:
        """The segment's rows, in line order, after the rows before them."""
        if not self.segment:
            return
        allocs, steps, keys = (pa.concat_tables(part) for part in zip(*self.segment))
        self.segment = []
        lines = keys.column("line").to_numpy()
        if np.any(lines[1:] < lines[:-1]):
            allocs, steps, keys = (t.take(pc.sort_indices(t.column("line"))) for t in (allocs, steps, keys))
        self.allocs.append(allocs)
        self.steps.append(steps)
        self.keys.append(keys)

    def flush(self) -> None:
        if self.rows["line"]:
            batch = pa.Table.from_pydict(self.rows, schema=_STAGE_SCHEMA)
            has_id = pc.is_valid(batch.column("job_id"))
            is_alloc = pc.and_(has_id, pc.is_null(batch.column("step")))
            self.unread.append(batch.filter(pc.invert(has_id)).select(_UNREAD_SCHEMA.names))
            keyed = batch.filter(has_id)
            keys = keyed.append_column("is_alloc", pc.is_null(keyed.column("step"))).select(_LINK_SCHEMA.names)
            self.segment.append(
                _kept(
                    self.side,
                    batch.filter(is_alloc),
                    batch.filter(pc.and_(has_id, pc.invert(is_alloc))).select(_STEP_SCHEMA.names),
                    keys,
                    keyed.column("text"),
                )
            )
            self.rows = {name: [] for name in self.rows}
        if self.hosts["line"]:
            self.host_tables.append(pa.Table.from_pydict(self.hosts, schema=_HOST_SCHEMA))
            self.hosts = {"line": [], "machine_id": []}

    def finish(self, gpus_accounted: bool, before_links: Callable[[], None]) -> None:
        """Stage the rest, link the rows into blocks and hand every table to DuckDB. The rows
        are linked in a thread (slurm_link: one core for ~0.5 s at a million jobs) while
        `before_links` runs the SQL that reads the allocation rows' own columns alone (their
        times), on stage_sacct_allocs as staged; the tables with the links come after."""
        self.flush()
        self._settle()
        allocs = _concat(self.allocs, _STAGE_SCHEMA)
        steps = _concat(self.steps, _STEP_SCHEMA)
        keys = _concat(self.keys, _LINK_SCHEMA.append(pa.field("digest", pa.string())))
        unread = _concat(self.unread, _UNREAD_SCHEMA)
        hosts = _concat(self.host_tables, _HOST_SCHEMA)
        self.allocs, self.steps, self.keys, self.unread, self.host_tables = [], [], [], [], []
        # sacct -M all: job ids repeat across clusters, so a dump of several keeps them apart as
        # <cluster>/<job id> (one cluster's dump keeps sacct's ids, which its logs and scontrol use)
        if len(pc.unique(keys.column("cluster")).drop_null()) > 1:
            allocs, steps, keys = (_with_cluster(t) for t in (allocs, steps, keys))
        # No row names a GPU: the site does not account GPUs in TRES (AccountingStorageTRES
        # without gres/gpu), so a TRES without one says nothing about GPUs. Unknown, not 0.
        if not gpus_accounted:
            for name in ("gpus", "req_gpus"):
                at = allocs.schema.get_field_index(name)
                allocs = allocs.set_column(at, name, pa.nulls(len(allocs), allocs.schema.field(name).type))
        from gpucluster_analysis.ingest.slurm import link  # imports polars, slow to import

        with ThreadPoolExecutor(max_workers=1) as linker:
            linking = linker.submit(link.link, keys)
            self._register("stage_sacct_allocs", allocs)
            before_links()
            links = linking.result()
        # allocs and steps are the keys' rows of each kind, in the same (line) order
        is_alloc = keys.column("is_alloc")
        block_no = links.block_no.filter(is_alloc)
        # each allocation row with its block's digests: a job's only allocation row is its
        # record, whose digest the SQL then takes without a join
        allocs = (
            allocs.append_column("block_no", block_no)
            .append_column("alone", links.alone.filter(is_alloc))
            .append_column("digests", links.blocks.column("digests").take(pc.subtract(block_no, 1)))
        )
        steps = steps.append_column("alloc_line", links.alloc_line.filter(pc.invert(is_alloc)))
        for name, table in (
            ("stage_sacct_allocs", allocs),
            ("stage_sacct_steps", steps),
            ("stage_sacct_unread", unread),
            ("stage_sacct_blocks", links.blocks),
            ("stage_sacct_host", hosts),
        ):
            self._register(name, table)

    def _register(self, name: str, table: pa.Table) -> None:
        self.con.register(name, table)  # in place of a table of that name registered before
        if name not in self.registered:
            self.registered.append(name)

    def close(self) -> None:
        """Let go of the staged rows held in memory (and the view the SQL made over them)."""
        self.con.execute("DROP VIEW IF EXISTS stage_sacct_linked").fetchall()
        for name in self.registered:
            try:
                self.con.unregister(name)
            except duckdb.Error:
                pass
        self.registered = []
        self.side.close()


@dataclass
class _TypedRun:
    """A run of rows slurm_fast typed, as the stager keeps them (_Stager.prepare)."""

    allocs: pa.Table
    steps: pa.Table
    keys: pa.Table  # with each line's md5, `digest`
    hosts: pa.Table | None
    gpu_keyed: bool


def _kept(
    cursor: duckdb.DuckDBPyConnection, allocs: pa.Table, steps: pa.Table, keys: pa.Table, texts: pa.Array
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Staged rows as the stager keeps them, typed either way: the allocation and step rows
    without the bytes under their null strings, the keys with each line's md5 (`texts`: the
    keys' lines)."""
    return _compact(allocs), _compact(steps), keys.append_column("digest", _line_digests(cursor, texts))


def _line_digests(cursor: duckdb.DuckDBPyConnection, texts: pa.Array) -> pa.ChunkedArray:
    """Each line's md5, of the line as staged (cut at _TEXT_LIMIT characters), on `cursor`
    (queries of Arrow data alone: a result the loader left unread on the store's connection
    must not stop them)."""
    lines = pa.table({"text": texts})  # noqa: F841 (read by DuckDB by name)
    # left() counts characters: a line of at most _TEXT_LIMIT bytes is whole, so the cut is
    # only taken on the longer ones (it was a third of the md5's time)
    return (
        cursor.sql(
            f"SELECT CASE WHEN strlen(text) <= {_TEXT_LIMIT} THEN md5(text)"
            f" ELSE md5(left(text, {_TEXT_LIMIT})) END FROM lines"
        )
        .to_arrow_table()
        .column(0)
    )


def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _with_cluster(table: pa.Table) -> pa.Table:
    """job_id as <cluster>/<job id> where the row names its cluster."""
    cluster = table.column("cluster")
    job_id = pc.if_else(
        pc.is_null(cluster), table.column("job_id"), pc.binary_join_element_wise(cluster, table.column("job_id"), "/")
    )
    return table.set_column(table.schema.get_field_index("job_id"), "job_id", job_id)


def _compact(table: pa.Table) -> pa.Table:
    """The table with its string columns rid of the bytes under null slots (_without_null_bytes)."""
    return pa.Table.from_arrays(
        [_without_null_bytes(c) if c.type == pa.string() else c for c in table.columns], schema=table.schema
    )


def _without_null_bytes(column: pa.ChunkedArray) -> pa.Array:
    """A string column without the bytes of its null slots, which a polars string keeps from
    before it was nulled (a step's times: ~0.3 GB at a million jobs)."""
    column = column.combine_chunks()
    if column.null_count == 0:
        return column
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    at = pa.array(np.cumsum(valid) - 1, mask=~valid)
    return column.filter(pa.array(valid)).take(at)


class _Columns:
    """Positions of the fields this reader uses, for one layout."""

    def __init__(self, layout: Layout) -> None:
        def at(*names: str) -> int | None:
            for name in names:
                i = layout.index(name)
                if i is not None:
                    return i
            return None

        self.job_id = at("jobid", "jobidraw")
        self.job_name = at("jobname")
        self.user = at("user")
        self.account = at("account")
        self.cluster = at("cluster")
        self.qos = at("qos")
        self.partition = at("partition")
        self.state = at("state")
        self.exit = at("exitcode")
        self.submit = at("submit")
        self.eligible = at("eligible")
        self.start = at("start")
        self.end = at("end")
        self.timelimit = at("timelimit")
        self.timelimit_raw = at("timelimitraw")
        self.alloc_tres = at("alloctres")
        self.req_tres = at("reqtres")
        self.alloc_gres = at("allocgres")
        self.req_gres = at("reqgres")
        self.nnodes = at("nnodes", "allocnodes")
        self.nodelist = at("nodelist")
        used = [v for v in vars(self).values() if isinstance(v, int)]
        self.used = frozenset(used)


def _value(fields: list[str], i: int | None) -> str:
    return fields[i] if i is not None and i < len(fields) else ""


def _parse_fields(
    fields: list[str], cols: _Columns, line_no: int, text: str, zone: str = "UTC"
) -> tuple[dict[str, object], list[str]]:
    """One staged row (and its hosts) from the fields of a data line."""
    row: dict[str, object] = {"line": line_no, "text": text[:_TEXT_LIMIT]}
    parsed = parse_job_id(_value(fields, cols.job_id))
    if parsed is None:
        row["problem"] = f"unreadable JobID {_value(fields, cols.job_id)!r}"
        return row, []
    job_id, het, step = parsed
    row.update(job_id=job_id, het_offset=het, step=step, cluster=_value(fields, cols.cluster) or None)
    source_status = _value(fields, cols.state)
    state, by = parse_state(source_status)
    row.update(state=state, source_status=source_status or None, cancelled_by=by)
    problems: list[str] = []
    if not state:
        problems.append("no State")
    try:
        row["exit_code"], row["exit_signal"] = parse_exit(_value(fields, cols.exit))
    except ValueError:
        problems.append(f"unreadable ExitCode {_value(fields, cols.exit)!r} (expected exit:signal)")
    if step is not None:
        # A step counts only through its State and ExitCode (its run's outcome).
        row["status"] = status_of(state, True)
        if problems:
            row["problem"] = "; ".join(problems)
        return row, []
    times: dict[str, str | None] = {}
    for key, i, label in (
        ("submit_t", cols.submit, "Submit"),
        ("eligible_t", cols.eligible, "Eligible"),
        ("start_t", cols.start, "Start"),
        ("end_t", cols.end, "End"),
    ):
        try:
            times[key] = parse_time(_value(fields, i), zone)
        except YearOutOfRange:
            problems.append(outside_years(f"{label} {_value(fields, i)}"))
        except ValueError:
            problems.append(
                f"unreadable {label} {_value(fields, i)!r} (expected 2025-09-12T14:06:12;"
                " export with SLURM_TIME_FORMAT=standard)"
            )
    try:
        if cols.timelimit is not None:
            row["time_limit_s"] = parse_duration_s(_value(fields, cols.timelimit))
        elif cols.timelimit_raw is not None:
            row["time_limit_s"] = parse_limit_minutes(_value(fields, cols.timelimit_raw))
    except ValueError:
        problems.append(
            f"unreadable Timelimit {_value(fields, cols.timelimit if cols.timelimit is not None else cols.timelimit_raw)!r}"
        )
    tres = None
    requested: dict[str, Tres] = {}
    for i, label, reader in (
        (cols.alloc_tres, "AllocTRES", parse_tres),
        (cols.req_tres, "ReqTRES", parse_tres),
        (cols.alloc_gres, "AllocGRES", parse_gres),
        (cols.req_gres, "ReqGRES", parse_gres),
    ):
        if i is None:
            continue
        try:
            found = reader(_value(fields, i))
        except ValueError as e:
            problems.append(f"unreadable {label} item {e.args[0]!r}")
            continue
        if found is None:
            continue
        requested[label] = found
        if tres is None:
            tres = found
        elif tres.model is None and found.model is not None:
            tres = Tres(tres.gpus, found.model, tres.nodes, tres.keyed)  # AllocTRES untyped, ReqTRES names the type
    hosts: list[str] = []
    nodelist = _value(fields, cols.nodelist)
    if cols.nodelist is not None:
        try:
            hosts = expand_hostlist(nodelist)
        except HostlistError as e:
            problems.append(f"unreadable NodeList {nodelist!r}: {e}")
    nnodes_text = _value(fields, cols.nnodes)
    if nnodes_text and not (nnodes_text.isdecimal() and int(nnodes_text) <= _MAX_COUNT):
        problems.append(f"unreadable NNodes {nnodes_text!r}")
    if problems:
        row["problem"] = "; ".join(problems)
        return row, []
    # Slurm stamps Start = End on a job that ended while pending (cancelled, deadline):
    # with no node ever assigned, that Start is no start. A pending job's Start, where
    # sacct shows one, is the scheduler's forecast.
    never_started = times["start_t"] is not None and (
        STATUS_OF_STATE.get(state) == "pending"
        or (cols.nodelist is not None and nodelist.lower() in ("none assigned", "(null)", ""))
        or (
            cols.nodelist is None
            and cols.alloc_tres is not None
            and not _value(fields, cols.alloc_tres)
            and times["start_t"] == times["end_t"]
        )
    )
    if never_started:
        times["start_t"] = None
    row.update(times)
    row["status"] = status_of(state, times["start_t"] is not None)
    row["job_name"] = _value(fields, cols.job_name) or None
    row["user_name"] = _value(fields, cols.user) or None
    row["account"] = _value(fields, cols.account) or None
    row["partition"] = _value(fields, cols.partition) or None
    row["qos"] = _value(fields, cols.qos) or None  # which QOS's per-user caps apply (sacctmgr show qos)
    if tres is not None:
        row["gpus"], row["gpu_model"], row["gpu_keyed"] = tres.gpus, tres.model, tres.keyed
    # What the job asked for (jobs.requested_gpus, kept for a job that never ran): ReqTRES,
    # else AllocTRES (old sacct: ReqGRES, else AllocGRES).
    request = (
        requested.get("ReqTRES") or requested.get("AllocTRES") or requested.get("ReqGRES") or requested.get("AllocGRES")
    )
    if request is not None:
        row["req_gpus"] = request.gpus
    row["nnodes"] = int(nnodes_text) if nnodes_text else (tres.nodes if tres and tres.nodes else (len(hosts) or None))
    row["hosts"] = len(hosts)
    # without a Start column nothing says whether the run started (reportseff's sacct -D)
    row["start_unknown"] = cols.start is None
    return row, hosts


@dataclass
class _Reader:
    """Walks the data lines of a sacct dump, following its (possibly repeated) header."""

    path: Path
    columns_option: tuple[str, ...] | None
    layout: Layout | None = None
    cols: _Columns | None = None
    header_text: str | None = None
    latin1_lines: set[int] = field(default_factory=set)  # lines read as Latin-1
    headers: int = 0  # header lines read so far: each starts a dump (concatenated dumps repeat it)
    missing: list[str] = field(default_factory=list)  # _NEEDED_COLUMNS some layout lacks
    pending_header: tuple[int, str] | None = None  # fixed width: a header, its rule expected next

    def set_layout(self, layout: Layout, line_no: int) -> None:
        names = set(layout.columns)
        if not ({"jobid", "jobidraw"} & names) or "state" not in names:
            raise ParseError(
                f"{self.path}:{line_no}: the sacct columns lack JobID or State ({', '.join(layout.names or layout.columns)})",
                hint="gca needs at least JobID and State; add them to sacct --format",
            )
        self.layout, self.cols = layout, _Columns(layout)
        self.headers += 1
        self.missing += [
            column
            for column, spellings, _ in _NEEDED_COLUMNS
            if column not in self.missing and not names.intersection(spellings)
        ]

    def rows(self, prepare: Callable[[Any], Any]) -> Iterator[tuple[int, str, list[str] | int | str] | Any]:
        """(line number, text, fields) of each data line; a field count instead of fields when
        it is wrong, the reason for a line that is no row (a message of the tool, a prompt).

        Runs of plain `-P`/`-p` data lines go to slurm_fast, which types the clean ones itself;
        what `prepare` makes of them (a slurm_fast.FastRows) is yielded as one item, and the
        rest of each run comes back here. Runs are typed and prepared in worker threads, up to
        _RUNS_AHEAD at once, while this one reads the next chunk and the caller stages the run
        before (polars and DuckDB let go of the GIL); what a run yields is yielded in line
        order, before any line after it is fed, so a header changes nothing of a run before it."""
        # imported here: slurm_fast imports this module's parsers, and polars is slow to import
        from gpucluster_analysis.ingest.slurm import sacct_fast

        def typed_run(
            texts: pa.Array, numbers: np.ndarray, layout: Layout, cols: _Columns, dump: int
        ) -> tuple[Any, np.ndarray]:
            typed, other = sacct_fast.split_clean(texts, numbers, layout, cols, dump)
            return (prepare(typed) if typed.height else None), other

        with ThreadPoolExecutor(max_workers=_RUNS_AHEAD) as worker:
            pending: deque[tuple[Future[Any], np.ndarray, pa.Array]] = deque()
            for first, lines in _text_chunks(self.path, self.latin1_lines):
                if isinstance(lines, list):  # a chunk that is not plain UTF-8 text: line by line
                    yield from self._typed(pending, 0)
                    for offset, text in enumerate(lines):
                        if (row := self.feed(first + offset, text)) is not None:
                            yield row
                    continue
                size, pos = len(lines), 0
                mask, mask_for = None, None
                while pos < size:
                    fast = self.layout is not None and self.pending_header is None and sacct_fast.eligible(self.layout)
                    if fast:
                        assert self.layout is not None and self.cols is not None
                        if mask_for != self.headers:  # every new layout comes with a new header count
                            mask, mask_for = sacct_fast.plain_rows(lines, self.layout), self.headers
                        assert mask is not None
                        run = int(mask[pos:].argmin()) if not mask[pos:].all() else size - pos
                        if run:
                            numbers = np.arange(first + pos, first + pos + run, dtype=np.int64)
                            texts = lines.slice(pos, run)
                            pending.append(
                                (
                                    worker.submit(typed_run, texts, numbers, self.layout, self.cols, self.headers),
                                    numbers,
                                    texts,
                                )
                            )
                            yield from self._typed(pending, _RUNS_AHEAD - 1)
                            pos += run
                            continue
                    yield from self._typed(pending, 0)
                    if (row := self.feed(first + pos, lines[pos].as_py())) is not None:
                        yield row
                    pos += 1
            yield from self._typed(pending, 0)
        if self.pending_header is not None:
            raise ParseError(
                f"{self.path}:{self.pending_header[0]}: fixed-width sacct header without the dashed rule under it",
                hint="export with sacct --parsable2 (-P)",
            )

    def _typed(
        self, pending: deque[tuple[Future[Any], np.ndarray, pa.Array]], keep: int
    ) -> Iterator[tuple[int, str, list[str] | int | str] | Any]:
        """What the oldest runs of plain lines typed in the workers yield, till `keep` are left in
        flight: each run's prepared rows, then the rest of it."""
        while len(pending) > keep:
            future, numbers, texts = pending.popleft()
            typed, other = future.result()
            if typed is not None:
                yield typed
            # plain lines are data rows of this layout: what feed() does with them
            for line_no, text in zip(numbers[other].tolist(), texts.filter(pa.array(other)).to_pylist()):
                yield line_no, text, self._split(text, line_no)

    def feed(self, line_no: int, text: str) -> tuple[int, str, list[str] | int | str] | None:
        """What one line is: None for a header, a rule or a blank line, else as rows() yields it."""
        if not text.strip():
            return None
        if self.pending_header is not None:
            header_no, header = self.pending_header
            self.pending_header = None
            if not _RULE.match(text):
                raise ParseError(
                    f"{self.path}:{line_no}: fixed-width sacct output without the dashed rule under its header",
                    hint="export with sacct --parsable2 (-P)",
                )
            layout = _fixed_layout(header, text)
            if layout is None:
                raise ParseError(
                    f"{self.path}:{header_no}: the fixed-width header does not line up with the dashed rule under it"
                    " (spaces changed, e.g. by a copy from a terminal or tabs)",
                    hint="export with sacct --parsable2 (-P)",
                )
            self.set_layout(layout, header_no)
            return None
        if text.startswith(_TOOL_MESSAGES):
            return line_no, text, "a message of sacct, not a row"  # sacct 2>&1: recorded, not read
        if self.layout is None and _PROMPT.match(text):
            return line_no, text, "the shell's prompt and command, not a row"  # a pasted terminal session
        # The header comes first, and again wherever dumps were concatenated.
        if self.layout is None or text == self.header_text or text.lstrip()[:5].lower() == "jobid":
            header = _header_fields(text)
            if header is not None:
                self.header_text = text
                fields, delimiter = header
                if delimiter is None:
                    self.pending_header = (line_no, text)
                else:
                    trailing = text.rstrip().endswith(delimiter)
                    self.set_layout(
                        Layout([f.lower() for f in fields], delimiter, trailing=trailing, names=fields), line_no
                    )
                return None
        if self.layout is None:
            self._headerless(line_no, text)
        return line_no, text, self._split(text, line_no)

    def _headerless(self, line_no: int, text: str) -> None:
        spec, named_by = self.columns_option, "--columns names"
        if not spec and _is_sonar_row(text):
            spec, named_by = SONAR_COLUMNS, "sonar's sacct layout has"
        if not spec:
            raise ParseError(
                f"{self.path}:{line_no}: sacct output without a header line (sacct -n/--noheader)",
                hint="name its columns in sacct --format order with --columns, e.g. --columns JobID,JobName,State,Start,End",
            )
        if "|" not in text:
            raise ParseError(
                f"{self.path}:{line_no}: sacct output without '|' and without a header line: fixed-width"
                " output cannot be read without its header",
                hint="export with sacct --parsable2 (-P)",
            )
        names = _clean_columns(spec)
        fields = text.split("|")
        trailing = len(fields) == len(names) + 1 and fields[-1].strip() == ""
        self.set_layout(
            Layout([n.lower() for n in names], "|", trailing=trailing, names=names, named_by=named_by), line_no
        )

    def _split(self, text: str, line_no: int) -> list[str] | int | str:
        layout = self.layout
        assert layout is not None
        if layout.delimiter is None:
            return self._slice(text, line_no)
        n = len(layout.columns)
        if layout.trailing and text.rstrip().endswith(layout.delimiter):
            text = text.rstrip()[: -len(layout.delimiter)]
        fields = text.split(layout.delimiter)
        if len(fields) > n:
            free = [i for i, name in enumerate(layout.columns) if name in _FREE_TEXT]
            if len(free) != 1:
                return len(fields)
            # One free-text column (JobName) held the delimiter: the fields around it are exact.
            k, extra = free[0], len(fields) - n
            fields = fields[:k] + [layout.delimiter.join(fields[k : k + extra + 1])] + fields[k + extra + 1 :]
        if len(fields) != n:
            return len(fields)
        return [f.strip() for f in fields]

    def _slice(self, text: str, line_no: int) -> list[str] | str:
        layout, cols = self.layout, self.cols
        assert layout is not None and cols is not None
        # sacct pads by bytes: slice the bytes the line was read from
        raw = text.encode("latin-1" if line_no in self.latin1_lines else "utf-8")
        if _off_columns(raw, layout.spans):
            return "text between the fixed-width columns: the line does not line up with the header"
        fields = []
        for i, (start, end) in enumerate(layout.spans):
            cell = raw[start:end].decode("latin-1" if line_no in self.latin1_lines else "utf-8", errors="replace")
            if i in cols.used and len(cell) == end - start and cell.endswith("+") and not cell.startswith(" "):
                raise ParseError(
                    f"{self.path}:{line_no}: sacct cut the {layout.names[i]} field to {cell.strip()!r}:"
                    " its fixed-width output loses what does not fit",
                    hint="export with sacct --parsable2 (-P), or widen the column, e.g. --format=JobName%60",
                )
            fields.append(cell.strip())
        return fields


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # never in Slurm's output; tabs are let through
# `scontrol show job -dd` appends the batch script, which may hold any character but NUL
_NUL = re.compile(r"\x00")


def _text_lines(
    path: Path, latin1: set[int] | None = None, control: re.Pattern[str] | None = None
) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of each line, streaming: without a byte-order mark or line
    end; a line that is not UTF-8 is read as Latin-1 (a JobName typed on an old terminal),
    and its number added to `latin1`. A character `control` matches refuses the file (binary)."""
    with open_binary(path) as f:
        for number, raw in enumerate(f, start=1):
            yield number, _decode_line(path, number, raw, latin1, control or _CONTROL)


def _decode_line(path: Path, number: int, raw: bytes, latin1: set[int] | None, control: re.Pattern[str]) -> str:
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if number == 1 and raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ParseError(
            f"{path}:1: UTF-16 text (as Windows PowerShell saves command output)",
            hint=f"convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 {path.name}",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
        if latin1 is not None:
            latin1.add(number)
    text = text.rstrip("\r\n")
    if control.search(text):
        raise ParseError(
            f"{path}:{number}: binary data, not Slurm's text output", hint="give gca the text sacct or scontrol printed"
        )
    return text


_CHUNK_BYTES = 16 << 20


def _text_chunks(path: Path, latin1: set[int]) -> Iterator[tuple[int, pa.Array | list[str]]]:
    """The lines of _text_lines, ~16 MiB at a time: (number of the first line, the lines as an
    Arrow string array), without a Python string per line. A chunk that is not plainly UTF-8
    text (Latin-1 lines, control characters, a CR inside a line) comes as _text_lines' strings.
    (A chunk is at most a run typed at once: 16 MiB typed faster than 8 or 32 at a million jobs.)"""
    number, first = 1, True
    with open_binary(path) as f:
        for raw in line_blocks(f, _CHUNK_BYTES):
            ends = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 10)  # found once: the count and the lines
            count = len(ends) + (not raw.endswith(b"\n"))
            lines: pa.Array | list[str] | None = None
            if not (first and raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"))) and _no_control_bytes(
                raw, len(ends)
            ):
                lines = _plain_lines(raw, count, ends)
            if lines is None:
                pieces = raw.split(b"\n")[:count]
                lines = [_decode_line(path, number + k, piece, latin1, _CONTROL) for k, piece in enumerate(pieces)]
            first = False
            yield number, lines
            number += count


def _no_control_bytes(raw: bytes, line_ends: int) -> bool:
    """Whether `raw` (with `line_ends` LFs) holds none of CONTROL_BYTES. The bytes below 32 are
    counted at once: when they are the line ends alone (no tab, no CR) and there is no DEL, there
    is none; else the bytes are tested one by one (a third of the time of that test, on the
    chunks of a plain dump)."""
    if np.count_nonzero(np.frombuffer(raw, dtype=np.uint8) < 32) == line_ends and b"\x7f" not in raw:
        return True
    return len(raw.translate(None, CONTROL_BYTES)) == len(raw)


def _plain_lines(raw: bytes, count: int, ends: np.ndarray) -> pa.Array | None:
    """The `count` lines of a block without control characters as an Arrow string array, or
    None when it is not UTF-8 or a CR stands inside a line. Without any CR the array is built
    on the block's bytes with the line ends (`ends`: where each LF is) taken out (no split, no
    string per line)."""
    if b"\r" not in raw:
        if not raw.isascii():
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return None
        offsets = np.empty(count + 1, dtype=np.int32)
        offsets[0] = 0
        offsets[1 : len(ends) + 1] = ends - np.arange(len(ends))
        data = raw.replace(b"\n", b"")
        offsets[count] = len(data)  # a last line without its line end, if any
        return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    parts = pc.list_flatten(pc.split_pattern(pa.array([text]), "\n"))
    parts = pc.utf8_rtrim(parts.slice(0, count), "\r")
    if pc.any(pc.match_substring(parts, "\r")).as_py():
        return None
    return parts


def _load_sacct(ctx: LoadContext) -> LoadCounts:
    if _is_slurm_json(ctx.head):
        raise ParseError(
            f"{ctx.path}:1: Slurm's JSON output (sacct --json or scontrol --json), which gca does not read",
            hint=f"export with sacct -P (e.g. sacct -a -P -S 2024-01-01 --format {SACCT_FORMAT}) or scontrol show job -d",
        )
    zone = ctx.options.zone or local_zone()  # the machine's unless --tz says otherwise; recorded with the file
    install_zone(ctx.con, zone)
    reader = _Reader(ctx.path, ctx.options.columns)
    stager = _Stager(ctx.con)
    # Arrow's default pool (mimalloc) gives freed pages back and takes new ones as huge pages,
    # which the kernel zeroes again for every run of lines typed: ~1 s of system time at a
    # million jobs. jemalloc (or else the C library's allocator) keeps and reuses them. The
    # pool is the sacct reader's alone: nvidia-smi CSV ingested slower on the C library's.
    # (benchmarks/RESULTS.md, session 10)
    pool = pa.default_memory_pool()
    pa.set_memory_pool(_reusing_pool())
    try:
        return _stage_and_store(ctx, reader, stager, zone)
    finally:
        pa.set_memory_pool(pool)
        stager.close()


def _reusing_pool() -> pa.MemoryPool:
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        return pa.system_memory_pool()


def _stage_and_store(ctx: LoadContext, reader: _Reader, stager: _Stager, zone: str) -> LoadCounts:
    gpus_accounted = False
    for item in reader.rows(stager.prepare):
        if not isinstance(item, tuple):  # rows slurm_fast typed
            stager.add_typed(item)
            gpus_accounted = gpus_accounted or item.gpu_keyed
            continue
        line_no, text, fields = item
        if isinstance(fields, str):
            stager.add({"line": line_no, "text": text[:_TEXT_LIMIT], "problem": fields}, [])
            continue
        assert reader.layout is not None and reader.cols is not None
        if isinstance(fields, int):
            stager.add(
                {
                    "line": line_no,
                    "text": text[:_TEXT_LIMIT],
                    "problem": f"{fields} fields where {reader.layout.named_by} {len(reader.layout.columns)}",
                },
                [],
            )
            continue
        row, hosts = _parse_fields(fields, reader.cols, line_no, text, zone)
        row["dump"] = reader.headers
        gpus_accounted = gpus_accounted or bool(row.get("gpu_keyed"))
        stager.add(row, hosts)
    if reader.layout is None:
        raise ParseError(f"{ctx.path}: no sacct header or data lines", hint="expected sacct output")
    stager.finish(
        gpus_accounted,
        lambda: run_script(ctx.con, "ingest", "slurm_sacct_times", {"zone": zone}, on_statement=ctx.on_statement),
    )
    run_script(
        ctx.con,
        "ingest",
        "slurm_sacct",
        {"file_id": ctx.file_id, "zone": zone, **ctx.options.bounds()},
        on_statement=ctx.on_statement,
    )
    _reject_texts(ctx)
    superseded, unchanged = ctx.con.execute(
        "SELECT coalesce(sum(superseded), 0), coalesce(sum(unchanged), 0) FROM stage_sacct_choice"
    ).fetchall()[0]
    return LoadCounts(
        rows=_count(ctx, "jobs"),
        rejects=_count(ctx, "rejects"),
        time_zone=zone,
        superseded=int(superseded),
        unchanged=int(unchanged),
        warnings=_missing_columns(ctx.path, reader.missing),
    )


def _missing_columns(path: Path, missing: list[str]) -> tuple[str, ...]:
    """The warning for a dump without Start, End or AllocTRES: it loads, but the report cannot
    tell run times, waits or GPU time of its jobs, and should not be silent about it."""
    if not missing:
        return ()
    unknown = [what for column, _, what in _NEEDED_COLUMNS if column in missing]
    lost = unknown[0] if len(unknown) == 1 else ", ".join(unknown[:-1]) + " and " + unknown[-1]
    columns = ",".join(missing)
    return (
        f"{path}: the sacct dump has no {', '.join(missing)} column{'s' if len(missing) > 1 else ''}, so {lost}"
        f" {'is' if len(unknown) == 1 else 'are'} unknown; add {columns} to sacct --format (e.g. --format {SACCT_FORMAT})",
    )


def _reject_texts(ctx: LoadContext) -> None:
    """The text of the rejected rows slurm_fast typed (staged without it), read again from the file."""
    lines = {
        r[0]
        for r in ctx.con.execute(
            "SELECT line FROM rejects WHERE file_id = ? AND text IS NULL", [ctx.file_id]
        ).fetchall()
    }
    if not lines:
        return
    found: dict[str, list] = {"line": [], "text": []}  # type: ignore[type-arg]
    last = max(lines)
    with open_binary(ctx.path) as f:
        for number, raw in enumerate(f, start=1):
            if number in lines:  # a typed row: plain ASCII, no CR inside
                found["line"].append(number)
                found["text"].append(raw.decode("utf-8").rstrip("\r\n")[:_TEXT_LIMIT])
            if number == last:  # the rest of the file holds none of them
                break
    texts = pa.Table.from_pydict(found, schema=pa.schema([("line", pa.int64()), ("text", pa.string())]))  # noqa: F841
    ctx.con.execute(
        "UPDATE rejects SET text = t.text FROM texts t WHERE rejects.file_id = ? AND rejects.line = t.line",
        [ctx.file_id],
    ).fetchall()


def _forget_sacct(con: duckdb.DuckDBPyConnection, file_id: int) -> None:
    run_script(con, "ingest", "slurm_sacct_forget", {"file_id": file_id})


def _count(ctx: LoadContext, table: str) -> int:
    return int(ctx.con.execute(f"SELECT count(*) FROM {table} WHERE file_id = ?", [ctx.file_id]).fetchall()[0][0])


# --- scontrol show job -d ------------------------------------------------------------

_KEY_VALUE = re.compile(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_:/]*)=(\S*(?:\s+(?![A-Za-z_][A-Za-z0-9_:/]*=)\S+)*)")
_IDX = re.compile(r"IDX:([^()\s:]*+)\)")  # no ":" inside: a scan ends at the next "IDX:", linear in a hostile line
# A node group of `scontrol show job -d`: Nodes=gpu[01-02] CPU_IDs=0-31 Mem=256000 GRES=gpu:a100:4(IDX:0-3)
_NODE_DETAIL = re.compile(r"(?:^|\s)Nodes=(\S+)\s+CPU_IDs=\S+(?:\s+Mem=\S+)?(?:\s+GRES(?:_IDX)?=(\S*))?")


def _pairs(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _KEY_VALUE.finditer(text)}


def _split_gres(text: str) -> list[str]:
    """Entries of a GRES value, split at commas outside parentheses."""
    entries, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    entries.append(text[start:])
    return [e for e in entries if e]


class IndexPastBound(ValueError):
    """A GPU index at or past the bound of GPUs per node (bounds.py): args (index, bound)."""


def parse_gpu_indices(gres: str, max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE) -> list[int]:
    """GPU indices of a per-node GRES value: `gpu:a100:4(IDX:0-3)`, `gpu(IDX:0,2)`, `gpu:(null):0(IDX:N/A)`.
    IndexPastBound for an index at or past `max_gpus_per_node` (before a range is expanded:
    `IDX:0-99999999` is no hundred million GPUs), ValueError for an unreadable list."""
    indices: list[int] = []
    for entry in _split_gres(gres):
        if not (entry == "gpu" or entry.startswith(("gpu:", "gpu("))):
            continue
        match = _IDX.search(entry)
        if not match or match.group(1).strip().upper() in ("N/A", ""):
            continue
        for part in match.group(1).split(","):
            low, _, high = part.strip().partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise ValueError(part)
            if int(high or low) >= max_gpus_per_node:
                raise IndexPastBound(int(high or low), max_gpus_per_node)
            indices.extend(range(int(low), int(high or low) + 1))
    return sorted(set(indices))


def _scontrol_job_id(pairs: dict[str, str]) -> str | None:
    """The job id as sacct writes it: array tasks `123_4`, het components under their leader."""
    het_leader = pairs.get("HetJobId")
    if het_leader and het_leader.isdigit():
        return het_leader
    array_job, task = pairs.get("ArrayJobId"), pairs.get("ArrayTaskId")
    if array_job and array_job.isdigit() and task:
        return f"{array_job}_{task}" if task.isdigit() else f"{array_job}_[{task}]"
    job = pairs.get("JobId")
    return job if job and job.isdigit() else None


def _load_scontrol(ctx: LoadContext) -> LoadCounts:
    bindings: dict[str, list] = {"job_id": [], "machine_id": [], "gpu_index": []}  # type: ignore[type-arg]
    rejects: list[tuple[int, str, str]] = []
    job_id: str | None = None
    job_line = 0
    running_line = 0  # a RUNNING job's line: it has nodes, so -d output shows them
    details = 0
    for line_no, text in _text_lines(ctx.path, control=_NUL):
        stripped = text.strip()
        if not running_line and re.search(r"(?:^|\s)JobState=RUNNING\b", stripped):
            running_line = line_no
        if stripped.startswith("JobId="):
            job_line = line_no
            pairs = _pairs(stripped)
            job_id = _scontrol_job_id(pairs)
            if job_id is None:
                rejects.append((line_no, f"unreadable JobId {pairs.get('JobId', '')!r}", text))
        # One line per node group, or inline with everything else under `scontrol -o`.
        for detail in _NODE_DETAIL.finditer(stripped):
            details += 1
            if job_id is None:
                reason = "Nodes= outside a job" if job_line == 0 else f"Nodes= of the unreadable job at line {job_line}"
                rejects.append((line_no, reason, text))
                continue
            try:
                hosts = expand_hostlist(detail.group(1))
                indices = parse_gpu_indices(detail.group(2) or "", ctx.options.max_gpus_per_node)
            except IndexPastBound as e:
                rejects.append((line_no, f"GPU index {e.args[0]}{over_gpu_bound(e.args[1])}", text))
                continue
            except (HostlistError, ValueError) as e:
                rejects.append((line_no, f"unreadable Nodes or GRES: {e}", text))
                continue
            for host in hosts:
                for index in indices:
                    bindings["job_id"].append(job_id)
                    bindings["machine_id"].append(host)
                    bindings["gpu_index"].append(index)
        if len(bindings["job_id"]) >= BATCH_ROWS:
            _insert_bindings(ctx, bindings)
            bindings = {k: [] for k in bindings}
    _insert_bindings(ctx, bindings)
    if running_line and not details:
        raise ParseError(
            f"{ctx.path}:{running_line}: a running job without its per-node lines (Nodes=... CPU_IDs=... GRES=...):"
            " this is `scontrol show job` without -d, which does not say which GPUs a job holds",
            hint="save `scontrol show job -d` (or -d -o) instead",
        )
    if rejects:
        ctx.con.executemany(
            "INSERT INTO rejects (file_id, line, reason, text) VALUES (?, ?, ?, ?)",
            [(ctx.file_id, line, reason, text[:_TEXT_LIMIT]) for line, reason, text in rejects],
        )
    return LoadCounts(rows=_count(ctx, "gpu_bindings"), rejects=_count(ctx, "rejects"))


def _insert_bindings(ctx: LoadContext, bindings: dict[str, list]) -> None:  # type: ignore[type-arg]
    if not bindings["job_id"]:
        return
    batch = pa.Table.from_pydict(
        bindings,
        schema=pa.schema(  # noqa: F841 (read by DuckDB by name)
            [("job_id", pa.string()), ("machine_id", pa.string()), ("gpu_index", pa.int16())]
        ),
    )
    # The same job in several snapshots of one file binds the same GPUs once.
    ctx.con.execute(
        "INSERT INTO gpu_bindings (source, job_id, attempt_ref, machine_id, gpu_index, origin, file_id) "
        "SELECT DISTINCT ?, b.job_id, NULL, b.machine_id, b.gpu_index, 'scontrol', ? FROM batch b "
        "WHERE NOT EXISTS (SELECT 1 FROM gpu_bindings g WHERE g.file_id = ? AND g.origin = 'scontrol' "
        "AND g.job_id = b.job_id AND g.machine_id = b.machine_id AND g.gpu_index = b.gpu_index)",
        [SOURCE, ctx.file_id, ctx.file_id],
    ).fetchall()


# --- recognizing the files -----------------------------------------------------------


def _is_slurm_json(head: str) -> bool:
    """sacct --json / scontrol show job --json (Slurm 21.08+): recognized so it can be refused clearly."""
    text = head.lstrip()
    return (
        text.startswith("{")
        and '"meta"' in text
        and any(mark in text for mark in ('"data_parser"', "openapi/", "Slurm OpenAPI", '"sacct"', '"scontrol"'))
    )


def _sniff_sacct(head: str) -> bool:
    if _is_slurm_json(head):
        return True
    # sacct's own messages (2>&1) and a pasted prompt may come before the header
    lines = [
        ln for ln in first_lines(head, 8) if ln.strip() and not ln.startswith(_TOOL_MESSAGES) and not _PROMPT.match(ln)
    ]
    if not lines:
        return False
    header = _header_fields(lines[0])
    if header is not None:
        return header[1] is not None or (len(lines) > 1 and bool(_RULE.match(lines[1])))
    # Headerless -P/-p output: a job id and a state word among the fields.
    fields = [f.strip() for f in lines[0].split("|")]
    return (
        len(fields) >= 2
        and any(_JOB_ID.match(f) for f in fields)
        and any(parse_state(f)[0] in KNOWN_STATES for f in fields)
    )


def _sniff_scontrol(head: str) -> bool:
    # a pasted prompt (`$ scontrol show job -d`) may come first
    lines = [ln for ln in first_lines(head, 4) if ln.strip() and not _PROMPT.match(ln)]
    return bool(lines) and bool(re.match(r"\s*JobId=\d+(\s|$)", lines[0]))


FORMATS = [
    FileFormat(
        name="slurm_sacct",
        source=SOURCE,
        description="Slurm sacct output (-P, -p, or fixed width without cut fields); --columns for -n dumps",
        file_names=("sacct",),
        sniff=_sniff_sacct,
        load=bounded_memory(_load_sacct, SQL_MEMORY_BYTES),
        forget=_forget_sacct,
    ),
    FileFormat(
        name="slurm_scontrol",
        source=SOURCE,
        description="Slurm `scontrol show job -d` text: GPU indices per job and node (GRES ... IDX)",
        file_names=("scontrol",),
        sniff=_sniff_scontrol,
        load=_load_scontrol,
    ),
]
