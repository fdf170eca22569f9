"""Slurm `squeue` snapshots of why jobs are pending, as an admin logs them.

`slurm_squeue` reads a log written by a cron job or a loop such as

    while sleep 60; do date -u +'# %Y-%m-%dT%H:%M:%SZ'; squeue -h -t PD -o '%i|%r'; done >> squeue-pending.log

a timestamp line (`# 2026-11-25T11:14:43Z`; an offset such as `+01:00`, or none: then
`--tz`, default the machine's zone) followed by `<jobid>|<reason>` lines, repeated; an
optional `JOBID|REASON` header (squeue without -h) is skipped. Each data line becomes
`pending_reasons` rows at the time of the timestamp line above it, with job ids named as
the sacct reader names them: `123`, array task `123_4`, a pending array line
`123_[6-11%3]` one row per task (`123_6` ... `123_11`), het component `123+1` job `123`.
A job at a time met again (overlapping logs, in one file or across files) is one row: the
same reason is unchanged, a different one from a later line or file supersedes it.

DuckDB reads the lines whole and `sql/ingest/slurm_squeue.sql` does the rest (carrying the
timestamp forward with a window, expanding arrays with generate_series), so every rejected
line is stored with its exact line number. The rules are in docs/schema.md, "Reading Slurm".
"""

from __future__ import annotations

import re

from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.csv_scan import MAX_LINE_BYTES, TextScan
from gpucluster_analysis.ingest.files import first_lines
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import install_zone, local_zone

SOURCE = "slurm"
# A byte no text line holds: DuckDB then reads each line as one field.
_WHOLE_LINE = "\x01"

# What the sniffer takes as squeue's snapshot log; the SQL script reads the same shapes.
_STAMP = re.compile(r"^#\s*\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\s*(?:Z|[+-]\d{2}(?::?\d{2})?)?$")
_DATA = re.compile(r"^\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?\s*\|\s*\S")
_HEADER = re.compile(r"^JOBID\s*\|\s*REASON$", re.IGNORECASE)
# A pending reason as squeue's %r prints it: Slurm's reason vocabulary is CamelCase words
# (Resources, Priority, Dependency, BeginTime, AssocGrpGRES, QOSMaxJobsPerUserLimit,
# ReqNodeNotAvail, UnavailableNodes:... after a comma, JobHeldUser, PartitionTimeLimit, ...),
# `None`, `(null)`, or its one lower-case phrase; a node list (`gpu5`), GRES (`gres:gpu:1`) or a
# third field (`%i|%N|%b`, a running-jobs snapshot) is not one.
_REASON = re.compile(r"^\d[^|]*\|\s*(?:\(null\)|launch failed requeued held|[A-Z][A-Za-z_]*+(?:[,(][^|]*)?)\s*$")


def _sniff(head: str) -> bool:
    """A timestamp line first, then (past other `#` lines) `<jobid>|<reason>` lines whose reason
    is one of Slurm's (after an optional JOBID|REASON header); or nothing but timestamp lines
    (snapshots of an empty queue)."""
    lines = [ln.strip() for ln in first_lines(head, 50) if ln.strip()]
    if not lines or not _STAMP.match(lines[0]):
        return False
    rest = [ln for ln in lines[1:] if not ln.startswith("#")]
    if not rest:
        return len(lines) >= 2 and all(_STAMP.match(ln) for ln in lines)
    if _HEADER.match(rest[0]):
        rest = rest[1:]
    # every line of the head that is not a timestamp is a job and a reason of Slurm's
    data = [ln for ln in rest if not _STAMP.match(ln) and not _HEADER.match(ln)]
    return all(_DATA.match(ln) and _REASON.match(ln) for ln in data)


def _load(ctx: LoadContext) -> LoadCounts:
    scan = TextScan(ctx.path)  # one streaming pass: refuses UTF-16, binary data and mixed line ends, with the line
    encoding = scan.encoding()
    # A last line without its line end was being written when the log was copied: `123|Resou`.
    cut = scan.line_bytes > 0
    zone = ctx.options.zone or local_zone()  # for timestamps without Z or an offset, as for sacct
    install_zone(ctx.con, zone)
    params = {
        "path": str(ctx.path),
        "file_id": ctx.file_id,
        "zone": zone,
        "delim": _WHOLE_LINE,
        "encoding": encoding,
        "max_line_size": MAX_LINE_BYTES,
        "cut": cut,
        **ctx.options.bounds(),
    }
    run_script(ctx.con, "ingest", "slurm_squeue", params, on_statement=ctx.on_statement)
    stamps = ctx.con.execute(
        "SELECT count(*) > 0 FROM stage_squeue_stamp WHERE own_offset_s IS NULL AND problem IS NULL"
    ).fetchone()
    assert stamps is not None  # count(*) without GROUP BY: always one row
    (zone_read,) = stamps
    superseded, unchanged = ctx.con.execute(
        "SELECT coalesce(sum(superseded), 0), coalesce(sum(unchanged), 0) FROM stage_squeue_choice"
    ).fetchall()[0]
    # Recorded with the file only when some timestamp was read in it (`date -u ...Z` needs none).
    return LoadCounts(
        rows=ctx.rows_in("pending_reasons"),
        rejects=ctx.rows_in("rejects"),
        time_zone=zone if zone_read else None,
        superseded=int(superseded),
        unchanged=int(unchanged),
    )


FORMATS = [
    FileFormat(
        name="slurm_squeue",
        source=SOURCE,
        description="Slurm pending reasons: `squeue -h -t PD -o '%i|%r'` snapshots, each under a `# <ISO time>` line",
        file_names=("squeue", "squeue-pending"),
        sniff=_sniff,
        load=_load,
    ),
]
