"""Slurm `sacct` accounting dumps: the slurm_sacct format and its load.

`slurm_sacct` reads `sacct --parsable2` (`-P`), `--parsable` (`-p`, a trailing `|`) and
another `--delimiter` (`☃`, `^|^`: the header's own, or for a headerless dump the one that
splits its first row into the columns named), with a header line or, for `--noheader` dumps,
the column order given with `gca ingest --columns`; and the default fixed-width output where no field was
cut (a `+` at the end of a full-width field is a cut: the file is refused, asking for `-P`).
The reader (reader.py, following the layout of layout.py) walks the lines; each is parsed
by sacct_exact.py with the value parsers of values.py (job id, state, exit code, times, TRES,
hostlist), or, for plain `-P`/`-p` rows, typed in bulk by sacct_fast.py to the same staged
values; staging.py collects the rows in bounded batches, and `sql/ingest/slurm_sacct.sql`
turns the staged rows into jobs, attempts and attempt_hosts: steps are matched to the
allocation row above them, requeued runs become attempts, duplicate steps and orphan steps
are rejected. A job met again (overlapping nightly dumps, or one file of several dumps)
keeps one record, the later one (finished before unfinished, then the later End);
sacct_records remembers what was kept, so that the order the dumps come in does not matter.

`scontrol show job -d` snapshots are scontrol.py's. The decisions (states, het jobs, jobs
cancelled while pending...) are listed in docs/schema.md, "Reading Slurm".
"""

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import open_binary
from gpucluster_analysis.ingest.memory import bounded_memory
from gpucluster_analysis.ingest.slurm.layout import NEEDED_COLUMNS, SACCT_FORMAT
from gpucluster_analysis.ingest.slurm.reader import Reader
from gpucluster_analysis.ingest.slurm.sacct_exact import parse_fields
from gpucluster_analysis.ingest.slurm.sniff import is_slurm_json, near_miss_sacct, sniff_sacct
from gpucluster_analysis.ingest.slurm.staging import Stager
from gpucluster_analysis.ingest.slurm.values import TEXT_LIMIT
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import install_zone, local_zone

SOURCE = "slurm"
# DuckDB's memory limit while a sacct dump loads: past it the staging tables spill to the
# store's temp directory. The typed rows (Arrow, ~1 GB at a million jobs) come on top.
SQL_MEMORY_BYTES = 1500 * 1000**2


def _load_sacct(ctx: LoadContext) -> LoadCounts:
    if is_slurm_json(ctx.head):
        raise ParseError(
            f"{ctx.path}:1: Slurm's JSON output (sacct --json or scontrol --json), which gca does not read",
            hint=f"export with sacct -P (e.g. sacct -a -P -S 2024-01-01 --format {SACCT_FORMAT}) or scontrol show job "
            f"-d",
        )
    zone = ctx.options.zone or local_zone()  # the machine's unless --tz says otherwise; recorded with the file
    install_zone(ctx.con, zone)
    reader = Reader(ctx.path, ctx.options.columns, delimiter_option=ctx.options.delimiter)
    stager = Stager(ctx.con)
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


def _stage_and_store(ctx: LoadContext, reader: Reader, stager: Stager, zone: str) -> LoadCounts:
    gpus_accounted = False
    for item in reader.rows(stager.prepare):
        if not isinstance(item, tuple):  # rows sacct_fast typed
            stager.add_typed(item)
            gpus_accounted = gpus_accounted or item.gpu_keyed
            continue
        line_no, text, fields = item
        if isinstance(fields, str):
            stager.add({"line": line_no, "text": text[:TEXT_LIMIT], "problem": fields}, [])
            continue
        assert reader.layout is not None and reader.cols is not None
        if isinstance(fields, int):
            stager.add(
                {
                    "line": line_no,
                    "text": text[:TEXT_LIMIT],
                    "problem": f"{fields} fields where {reader.layout.named_by} {len(reader.layout.columns)}",
                },
                [],
            )
            continue
        row, hosts = parse_fields(fields, reader.cols, line_no, text, zone)
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
        rows=ctx.rows_in("jobs"),
        rejects=ctx.rows_in("rejects"),
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
    unknown = [what for column, _, what in NEEDED_COLUMNS if column in missing]
    lost = unknown[0] if len(unknown) == 1 else ", ".join(unknown[:-1]) + " and " + unknown[-1]
    columns = ",".join(missing)
    return (
        f"{path}: the sacct dump has no {', '.join(missing)} column{'s' if len(missing) > 1 else ''}, so {lost}"
        f" {'is' if len(unknown) == 1 else 'are'} unknown; add {columns} to sacct --format (e.g. --format "
        f"{SACCT_FORMAT})",
    )


def _reject_texts(ctx: LoadContext) -> None:
    """The text of the rejected rows sacct_fast typed (staged without it), read again from the file."""
    lines = {
        r[0]
        for r in ctx.con.execute(
            "SELECT line FROM rejects WHERE file_id = ? AND text IS NULL", [ctx.file_id]
        ).fetchall()
    }
    if not lines:
        return
    found: dict[str, list[Any]] = {"line": [], "text": []}
    last = max(lines)
    with open_binary(ctx.path) as f:
        for number, raw in enumerate(f, start=1):
            if number in lines:  # a typed row: plain ASCII, no CR inside
                found["line"].append(number)
                found["text"].append(raw.decode("utf-8").rstrip("\r\n")[:TEXT_LIMIT])
            if number == last:  # the rest of the file holds none of them
                break
    texts = pa.Table.from_pydict(found, schema=pa.schema([("line", pa.int64()), ("text", pa.string())]))  # noqa: F841  -- DuckDB reads it by name
    ctx.con.execute(
        "UPDATE rejects SET text = t.text FROM texts t WHERE rejects.file_id = ? AND rejects.line = t.line",
        [ctx.file_id],
    ).fetchall()


def _forget_sacct(con: duckdb.DuckDBPyConnection, file_id: int) -> None:
    run_script(con, "ingest", "slurm_sacct_forget", {"file_id": file_id})


FORMATS = [
    FileFormat(
        name="slurm_sacct",
        source=SOURCE,
        description="Slurm sacct output (-P, -p, or fixed width without cut fields); --columns for -n dumps",
        file_names=("sacct",),
        sniff=sniff_sacct,
        near_miss=near_miss_sacct,
        load=bounded_memory(_load_sacct, SQL_MEMORY_BYTES),
        forget=_forget_sacct,
    ),
]
