"""The public Microsoft Philly trace (msr-fiddle/philly-traces): its five files.

* `cluster_job_log`: a JSON array of jobs with their attempts and GPU placements;
  times are naive America/Los_Angeles wall-clock times, `"None"` when missing.
* `cluster_gpu_util`: per-minute utilization, one row per machine and column per
  GPU (`NA` = no value), a trailing comma on data rows, times suffixed PDT/PST.
* `cluster_cpu_util`, `cluster_mem_util`: per-minute host CPU % and memory (KiB).
* `cluster_machine_list`: machines with their listed GPU count and GPU memory.

DuckDB reads every file (see `sql/ingest/philly_*.sql`); this module only
recognizes the files, works out their column layout from the first lines, and
fills in line numbers for rejects.
"""

from __future__ import annotations

import re

from gpucluster_analysis.bounds import MAX_GPUS_OPTION
from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.csv_rejects import (
    collect_reader_rejects,
    place_csv_rejects,
    place_json_rejects,
    reset_reader_rejects,
)
from gpucluster_analysis.ingest.files import first_lines, locate_json_error
from gpucluster_analysis.ingest.machine_lists import store_machine_rows
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import install_zone

PHILLY_ZONE = "America/Los_Angeles"

_TIME_FIELD = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}( [A-Za-z]{1,5})?$")


def _normalized(line: str) -> str:
    return re.sub(r"\s+", "", line).lower()


def _fields(line: str) -> list[str]:
    return [f.strip() for f in line.split(",")]


def _is_data_line(line: str) -> bool:
    return bool(_TIME_FIELD.match(_fields(line)[0]))


# --- recognizing the files -------------------------------------------------


def _sniff_job_log(head: str) -> bool:
    text = head.lstrip()
    return text.startswith("[") and ('"jobid"' in text or '"attempts"' in text)


def _sniff_gpu_util(head: str) -> bool:
    lines = first_lines(head, 2)
    if not lines:
        return False
    header = _normalized(lines[0])
    if header.startswith("time,machineid,gpu0"):
        return True
    return _is_data_line(lines[0]) and len([f for f in _fields(lines[0]) if f]) >= 5


def _sniff_cpu_util(head: str) -> bool:
    lines = first_lines(head, 2)
    if not lines:
        return False
    if _normalized(lines[0]).startswith("time,machine_id,cpu_util"):
        return True
    return _is_data_line(lines[0]) and len([f for f in _fields(lines[0]) if f]) == 3


def _sniff_mem_util(head: str) -> bool:
    lines = first_lines(head, 2)
    if not lines:
        return False
    if _normalized(lines[0]).startswith("time,machine_id,mem_total,mem_free"):
        return True
    return _is_data_line(lines[0]) and len([f for f in _fields(lines[0]) if f]) == 4


def _sniff_machine_list(head: str) -> bool:
    lines = first_lines(head, 1)
    return bool(lines) and _normalized(lines[0]).startswith("machineid,numberofgpus")


# --- column layouts ----------------------------------------------------------


def _csv_layout(ctx: LoadContext, fixed: list[tuple[str, str]], what: str) -> tuple[dict[str, str], bool]:
    """Reader columns and whether line 1 is a header, from the file's first lines.

    `fixed` lists (name, type) of the leading columns; for the GPU file the
    per-GPU columns are taken from the header (or counted on a headerless
    first row). DuckDB's reader accepts the trailing comma of upstream rows.
    """
    lines = [ln for ln in first_lines(ctx.head, 3)]
    if not lines:
        raise ParseError(f"{ctx.path}: the file is empty", hint=f"expected a Philly {what} file")
    has_header = not _is_data_line(lines[0])
    columns = dict(fixed)
    if what == "cluster_gpu_util":
        columns = dict(fixed[:2])
        if has_header:
            names = _fields(lines[0])[2:]
            for position, name in enumerate(n for n in names if n):
                match = re.fullmatch(r"gpu(\d+)(_util)?", name.lower())
                if not match:
                    raise ParseError(
                        f"{ctx.path}:1: unexpected GPU column {name!r} (column {position + 3})",
                        hint="a Philly cluster_gpu_util header is time,machineId,gpu0_util,...",
                    )
                columns[f"g{match.group(1)}"] = "DOUBLE"
        else:
            count = len(_fields(lines[0])) - 2
            if _fields(lines[0])[-1] == "":
                count -= 1
            for i in range(count):
                columns[f"g{i}"] = "DOUBLE"
        _check_gpu_columns(ctx, columns, has_header)
    return columns, has_header


def _check_gpu_columns(ctx: LoadContext, columns: dict[str, str], has_header: bool) -> None:
    """Refuse a layout with a GPU column at or past the bound of GPUs per node (bounds.py): each
    row of the file has that column, so no row of it is believable (every one would be rejected)."""
    bound = ctx.options.max_gpus_per_node
    past = [int(name[1:]) for name in columns if re.fullmatch(r"g\d+", name) and int(name[1:]) >= bound]
    if past:
        where = f"its column gpu{max(past)}" if has_header else f"its first row has {len(columns) - 2} GPU values"
        raise ParseError(
            f"{ctx.path}:1: {where}: over the bound of {bound:,} GPUs per node ({MAX_GPUS_OPTION})",
            hint=f"a machine holds fewer GPUs; if yours do hold more, pass {MAX_GPUS_OPTION}",
        )


def _load_csv(ctx: LoadContext, script: str, table: str, fixed: list[tuple[str, str]], what: str) -> LoadCounts:
    columns, has_header = _csv_layout(ctx, fixed, what)
    before = ctx.rows_in(table)
    reset_reader_rejects(ctx.con)
    gpu_indexes = [int(name[1:]) for name in columns if re.fullmatch(r"g\d+", name)]
    run_script(
        ctx.con,
        "ingest",
        script,
        {
            "path": str(ctx.path),
            "file_id": ctx.file_id,
            "columns": columns,
            "header": has_header,
            "gpu_indexes": gpu_indexes,
            **ctx.options.bounds(),
        },
        on_statement=ctx.on_statement,
    )
    collect_reader_rejects(ctx.con, ctx.file_id)
    place_csv_rejects(ctx.con, ctx.file_id, ctx.path)
    return LoadCounts(rows=ctx.rows_in(table) - before, rejects=ctx.rows_in("rejects"))


# --- loaders -----------------------------------------------------------------


def _load_job_log(ctx: LoadContext) -> LoadCounts:
    zone = ctx.options.zone or PHILLY_ZONE
    install_zone(ctx.con, zone)
    try:
        run_script(
            ctx.con,
            "ingest",
            "philly_job_log",
            {"path": str(ctx.path), "file_id": ctx.file_id, "zone": zone, **ctx.options.bounds()},
            on_statement=ctx.on_statement,
        )
    except Exception as e:  # duckdb.Error, narrowed below to keep duckdb out of the signature
        import duckdb

        if not isinstance(e, duckdb.Error):
            raise
        raise ParseError(
            _json_error_message(ctx, str(e)), hint="expected a Philly cluster_job_log (a JSON array of jobs)"
        ) from e
    place_json_rejects(ctx.con, ctx.file_id, ctx.path, "jobid")
    return LoadCounts(rows=ctx.rows_in("jobs"), rejects=ctx.rows_in("rejects"))


def _json_error_message(ctx: LoadContext, error: str) -> str:
    located = locate_json_error(ctx.path)
    if located:
        line, what = located
        return f"{ctx.path}:{line}: not a readable Philly job log: {what}"
    first = error.splitlines()[0]
    first = re.sub(r"^[A-Za-z ]+Error: ", "", first)
    first = re.sub(r' in file "[^"]*"', "", first)
    return f"{ctx.path}: not a readable Philly job log: {first}"


def _load_gpu_util(ctx: LoadContext) -> LoadCounts:
    return _load_csv(
        ctx, "philly_gpu_util", "gpu_samples", [("t", "VARCHAR"), ("machine_id", "VARCHAR")], "cluster_gpu_util"
    )


def _load_cpu_util(ctx: LoadContext) -> LoadCounts:
    fixed = [("t", "VARCHAR"), ("machine_id", "VARCHAR"), ("cpu_util", "DOUBLE")]
    return _load_csv(ctx, "philly_cpu_util", "host_samples", fixed, "cluster_cpu_util")


def _load_mem_util(ctx: LoadContext) -> LoadCounts:
    fixed = [("t", "VARCHAR"), ("machine_id", "VARCHAR"), ("mem_total", "DOUBLE"), ("mem_free", "DOUBLE")]
    return _load_csv(ctx, "philly_mem_util", "host_samples", fixed, "cluster_mem_util")


def _load_machine_list(ctx: LoadContext) -> LoadCounts:
    fixed = [("machine_id", "VARCHAR"), ("gpus", "VARCHAR"), ("gpu_mem", "VARCHAR")]
    counts = _load_csv(ctx, "philly_machine_list", "machines", fixed, "cluster_machine_list")
    return store_machine_rows(ctx, "philly", counts)


# sample_kind (ingest/samples.py): each utilization file is a measurement of its own; the CPU and
# memory files fill different columns of host_samples, so neither one's rows duplicate the other's.
FORMATS = [
    FileFormat(
        name="philly_job_log",
        source="philly",
        description="Philly cluster_job_log: JSON array of jobs, attempts and GPU placements",
        file_names=("cluster_job_log",),
        sniff=_sniff_job_log,
        load=_load_job_log,
        default_zone=PHILLY_ZONE,
    ),
    FileFormat(
        name="philly_gpu_util",
        source="philly",
        description="Philly cluster_gpu_util: per-minute GPU utilization per machine",
        file_names=("cluster_gpu_util",),
        sniff=_sniff_gpu_util,
        load=_load_gpu_util,
        sample_kind="philly-gpu",
    ),
    FileFormat(
        name="philly_cpu_util",
        source="philly",
        description="Philly cluster_cpu_util: per-minute host CPU utilization",
        file_names=("cluster_cpu_util",),
        sniff=_sniff_cpu_util,
        load=_load_cpu_util,
        sample_kind="philly-cpu",
    ),
    FileFormat(
        name="philly_mem_util",
        source="philly",
        description="Philly cluster_mem_util: per-minute host memory total/free (KiB)",
        file_names=("cluster_mem_util",),
        sniff=_sniff_mem_util,
        load=_load_mem_util,
        sample_kind="philly-mem",
    ),
    FileFormat(
        name="philly_machine_list",
        source="philly",
        description="Philly cluster_machine_list: machines, listed GPU count and GPU memory",
        file_names=("cluster_machine_list",),
        sniff=_sniff_machine_list,
        load=_load_machine_list,
    ),
]
