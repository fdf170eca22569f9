"""Node fault traces: when each machine was down, and why.

* `stepfun_faults`: StepFun's node fault trace (InfiniteHBD, SIGCOMM 2025;
  stepfun-ai/InfiniteHBD-Trace, `fault_trace.json`), a JSON array of events
  `{"node_id", "event_time", "event_type": "fault_start" | "fault_end",
  "fault_type": {"Level", "Class", "Desc"}}`, `event_time` in days from an undisclosed
  start (so read from `--epoch`, default 1970-01-01 UTC, as Alibaba's relative seconds are).

Each `fault_start` is paired with the first later `fault_end` of the same machine and cause
(two faults of one machine overlap in the published trace, of different causes), and becomes
one `node_faults` row: `ended_at` is NULL where the trace ends first. A `fault_end` that no
start of its machine and cause precedes, and an event that is not one (a missing machine, a
time that is not a number of days inside the window, another event type, a cause that is not
text), is a counted reject with its line. Events of one time pair starts first, so that a
fault that starts and ends at once is one row, not a reject.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa

from gpucluster_analysis.bounds import WINDOW_END, WINDOW_START
from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import DAMAGED_GZIP, damaged_gzip, open_binary
from gpucluster_analysis.ingest.traces.public_traces import trace_epoch

SOURCE = "stepfun"
# A fault trace is a few thousand events; past this a file is no fault trace gca can read whole.
MAX_BYTES = 256 * 1024 * 1024
_TEXT_LIMIT = 500
_START, _END = "fault_start", "fault_end"
_CAUSE = ("Level", "Class", "Desc")
_FAULTS = pa.schema(
    [
        ("machine_id", pa.string()),
        ("started_at", pa.timestamp("us")),
        ("ended_at", pa.timestamp("us")),
        ("level", pa.string()),
        ("class", pa.string()),
        ("reason", pa.string()),
        ("line", pa.int64()),
    ]
)
_REJECTS = pa.schema([("line", pa.int64()), ("reason", pa.string()), ("text", pa.string())])


def _sniff(head: str) -> bool:
    text = head.lstrip("\ufeff \t\r\n")
    return (
        text.startswith("[")
        and '"node_id"' in text
        and '"event_type"' in text
        and (f'"{_START}"' in text or f'"{_END}"' in text)
    )


@dataclass(frozen=True)
class Event:
    line: int
    machine: str
    days: float
    start: bool
    cause: tuple[str | None, str | None, str | None]
    text: str  # the element as JSON, for a reject


@dataclass(frozen=True)
class Reject:
    line: int
    reason: str
    text: str  # the element as JSON


@dataclass(frozen=True)
class Faults:
    """What a fault trace holds: its faults (rows of node_faults without source and file) and rejects."""

    faults: list[dict[str, object]]
    rejects: list[Reject]


def read_events(text: str, path: Path) -> tuple[list[Event], list[Reject]]:
    """The events of a fault trace's JSON text in file order, each with the line it begins on,
    and the rejects (line, reason, text) of the elements that are no event."""
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    if not text.startswith("[", at):
        raise ParseError(f"{path}:{_line_of(text, at)}: not a JSON array of fault events", hint=_HINT)
    at, line, counted = _skip(text, at + 1), 1, 0
    events: list[Event] = []
    rejects: list[Reject] = []
    while True:
        if at >= len(text):
            raise ParseError(f"{path}:{_line_of(text, at)}: the array of events is cut short", hint=_HINT)
        if text[at] == "]":
            break
        line += text.count("\n", counted, at)
        counted = at
        try:
            element, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            raise ParseError(f"{path}:{e.lineno}: not JSON: {e.msg}", hint=_HINT) from None
        except RecursionError:
            raise ParseError(f"{path}:{line}: JSON nested too deep to be a fault event", hint=_HINT) from None
        shown = json.dumps(element)[:_TEXT_LIMIT]
        event = _event(element, line, shown)
        if isinstance(event, str):
            rejects.append(Reject(line, event, shown))
        else:
            events.append(event)
        at = _skip(text, at)
        if text.startswith(",", at):
            at = _skip(text, at + 1)
        elif not text.startswith("]", at):
            raise ParseError(f"{path}:{_line_of(text, at)}: expected ',' or ']' after an event", hint=_HINT)
    if _skip(text, at + 1) != len(text):
        raise ParseError(f"{path}:{_line_of(text, _skip(text, at + 1))}: text after the array of events", hint=_HINT)
    return events, rejects


_HINT = "expected StepFun's fault_trace.json: a JSON array of {node_id, event_time, event_type, fault_type}"


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _event(element: object, line: int, shown: str) -> Event | str:
    """The event an array element is, or why it is none."""
    if not isinstance(element, dict):
        return "not an event: a JSON object was expected"
    machine, days, kind, cause = (element.get(k) for k in ("node_id", "event_time", "event_type", "fault_type"))
    if not isinstance(machine, str) or not machine.strip():
        return "no node_id"
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not math.isfinite(days):
        return f"event_time is not a number of days: {days!r}"[:_TEXT_LIMIT]
    if kind not in (_START, _END):
        return f"event_type is neither {_START} nor {_END}: {kind!r}"[:_TEXT_LIMIT]
    if cause is None:
        cause = {}
    if not isinstance(cause, dict) or not all(cause.get(k) is None or isinstance(cause.get(k), str) for k in _CAUSE):
        return "fault_type is not an object of Level, Class and Desc texts"
    causes = tuple(cause.get(k) for k in _CAUSE)
    return Event(line, machine.strip(), float(days), kind == _START, causes, shown)  # type: ignore[arg-type]  # three texts or None, checked above


def pair_faults(events: list[Event], epoch: datetime, anchored: bool) -> Faults:
    """One fault per start, ended by the first later end of its machine and cause.

    Times are `epoch` plus the event's days; they must lie in the sanity window (bounds.py):
    the instant itself when `anchored` (--epoch named the trace start), else its distance from
    the epoch, as long as the window."""
    lo, hi = (WINDOW_START, WINDOW_END) if anchored else (epoch, epoch + (WINDOW_END - WINDOW_START))
    rejects: list[Reject] = []
    timed: list[tuple[Event, datetime]] = []
    for e in events:
        try:
            at = epoch + timedelta(days=e.days)
        except OverflowError:
            at = None
        if at is None or not lo <= at < hi:
            rejects.append(Reject(e.line, f"event_time {e.days!r} days is outside the window", e.text))
        else:
            timed.append((e, at))
    faults: list[dict[str, object]] = []
    open_faults: dict[tuple[str, tuple[str | None, ...]], deque[dict[str, object]]] = defaultdict(deque)
    # in time order, starts before ends at one time; file order within each
    for e, at in sorted(timed, key=lambda pair: (pair[1], not pair[0].start, pair[0].line)):
        key = (e.machine, e.cause)
        if e.start:
            fault = {
                "machine_id": e.machine,
                "started_at": at,
                "ended_at": None,
                "level": e.cause[0],
                "class": e.cause[1],
                "reason": e.cause[2],
                "line": e.line,
            }
            faults.append(fault)
            open_faults[key].append(fault)
        elif open_faults[key]:
            open_faults[key].popleft()["ended_at"] = at
        else:
            rejects.append(Reject(e.line, "a fault_end without a fault_start of its node and cause before it", e.text))
    return Faults(faults, rejects)


def _load(ctx: LoadContext) -> LoadCounts:
    try:
        with open_binary(ctx.path) as f:
            data = f.read(MAX_BYTES + 1)
    except DAMAGED_GZIP as e:
        raise damaged_gzip(ctx.path, e) from None
    if len(data) > MAX_BYTES:
        raise ParseError(
            f"{ctx.path}: more than {MAX_BYTES:,} bytes, more than a fault trace gca reads whole",
            hint="split it, or check that it is a node fault trace",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ParseError(f"{ctx.path}:{line}: not UTF-8 text ({e.reason})", hint=_HINT) from None
    events, rejects = read_events(text, ctx.path)
    epoch = trace_epoch(ctx.options)
    paired = pair_faults(events, epoch, anchored=bool(ctx.options.epoch))
    every = sorted(rejects + paired.rejects, key=lambda r: r.line)  # one per element (a one-line file: all line 1)
    faults = pa.Table.from_pylist(paired.faults, schema=_FAULTS)  # noqa: F841  -- DuckDB reads it by name
    bad = pa.Table.from_pylist(  # noqa: F841  -- DuckDB reads it by name
        [{"line": r.line, "reason": r.reason, "text": r.text} for r in every],
        schema=_REJECTS,
    )
    ctx.con.execute(
        "INSERT INTO node_faults (source, machine_id, started_at, ended_at, level, class, reason, line, file_id)"
        " SELECT ?, machine_id, started_at, ended_at, level, class, reason, line, ? FROM faults"
        " ORDER BY machine_id, started_at, line",
        [SOURCE, ctx.file_id],
    )
    ctx.con.execute(
        "INSERT INTO rejects (file_id, line, reason, text) SELECT ?, line, reason, text FROM bad ORDER BY line",
        [ctx.file_id],
    )
    return LoadCounts(
        rows=len(paired.faults),
        rejects=len(every),
        time_zone=f"UTC, relative days from {epoch:%Y-%m-%dT%H:%M:%S}Z",
    )


FORMATS = [
    FileFormat(
        name="stepfun_faults",
        source=SOURCE,
        description="StepFun's node fault trace (fault_trace.json): fault_start/fault_end per server with its cause",
        file_names=("fault_trace",),
        sniff=_sniff,
        load=_load,
    ),
]
