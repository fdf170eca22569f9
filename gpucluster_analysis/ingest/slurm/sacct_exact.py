"""The exact way of reading a sacct line: one staged row (and its hosts) from its fields, each
value read by values.py's parsers, with the reason of each value it cannot read.
sacct_fast.py types the plainly valid rows of plain runs to the same staged values."""

from __future__ import annotations

from gpucluster_analysis.bounds import outside_years
from gpucluster_analysis.ingest.slurm.hostlist import HostlistError, expand_hostlist
from gpucluster_analysis.ingest.slurm.layout import Columns
from gpucluster_analysis.ingest.slurm.values import (
    MAX_COUNT,
    STATUS_OF_STATE,
    TEXT_LIMIT,
    Tres,
    YearOutOfRange,
    parse_duration_s,
    parse_exit,
    parse_gres,
    parse_job_id,
    parse_limit_minutes,
    parse_state,
    parse_time,
    parse_tres,
    status_of,
)


def _value(fields: list[str], i: int | None) -> str:
    return fields[i] if i is not None and i < len(fields) else ""


def parse_fields(
    fields: list[str], cols: Columns, line_no: int, text: str, zone: str = "UTC"
) -> tuple[dict[str, object], list[str]]:
    """One staged row (and its hosts) from the fields of a data line."""
    row: dict[str, object] = {"line": line_no, "text": text[:TEXT_LIMIT]}
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
    try:
        row["derived_exit_code"], row["derived_exit_signal"] = parse_exit(_value(fields, cols.derived_exit))
    except ValueError:
        problems.append(f"unreadable DerivedExitCode {_value(fields, cols.derived_exit)!r} (expected exit:signal)")
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
            f"unreadable Timelimit "
            f"{_value(fields, cols.timelimit if cols.timelimit is not None else cols.timelimit_raw)!r}"
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
    if nnodes_text and not (nnodes_text.isdecimal() and int(nnodes_text) <= MAX_COUNT):
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
    row["user_uid"] = _value(fields, cols.uid) or None  # whose own `CANCELLED by <uid>` a cancel was
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
