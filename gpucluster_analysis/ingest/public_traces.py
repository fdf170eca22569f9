"""Other public GPU-cluster traces: Helios, Acme and Alibaba's 2023 GPU pod list.

* `helios`: SenseTime's Helios (SC'21, S-Lab-System-Group/HeliosData), one
  `cluster_log.csv` per cluster: `job_id,user,vc,gpu_num,cpu_num,node_num,state,
  submit_time,start_time,end_time,duration,queue`, Slurm states, times as local
  wall-clock text without a zone (the clusters are in China: Asia/Shanghai).
* `acme`: Shanghai AI Lab's Acme (NSDI'24, InternLM/AcmeTrace), `trace_seren.csv`
  and `trace_kalos.csv`: `job_id,user,node_num,gpu_num,cpu_num,[mem_per_pod_GB,
  shared_mem_per_pod,]type,state,submit_time,start_time,end_time,[fail_time,
  stop_time,]duration,queue,gpu_time`, times with an offset (`+08:00`, `+00:00`);
  no VC column.
* `alibaba_gpu2023`: alibaba/clusterdata cluster-trace-gpu-v2023 pod lists
  (`openb_pod_list_*.csv`): `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,
  qos,pod_phase,creation_time,deletion_time,scheduled_time`, times in seconds since
  the (undisclosed) trace start, fractional GPUs as gpu_milli.

Each becomes `jobs` and one `attempts` row per job that ran, sized by
`attempts.num_gpus` / `num_nodes` (the traces name no machines). Columns are found
by header name, so extra or reordered columns are fine. DuckDB reads each line
whole and the scripts (`sql/ingest/helios_acme_jobs.sql`, `alibaba_pods.sql`) split
it, so every rejected row is stored with its exact line number. `duration`,
`queue` and `gpu_time` are derived columns and are not read: gca derives them.
"""

from __future__ import annotations

import codecs
import csv
from datetime import UTC, datetime
from pathlib import Path

from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import first_lines, open_binary
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import install_zone

# Helios and Acme come from clusters in China; Acme's own offsets (+08:00) agree.
CHINA_ZONE = "Asia/Shanghai"
# Alibaba's times count seconds from an undisclosed trace start. Unless --epoch names that
# start, gca reads them as seconds since 1970-01-01 00:00 UTC, so stored times are the
# trace's own numbers and every duration and delay is exact; calendar dates (1970-...) mean nothing.
ALIBABA_EPOCH = datetime(1970, 1, 1)
# A byte no text line holds: DuckDB then reads each line as one field.
_WHOLE_LINE = "\x01"

# `cluster`: HeliosArtifact's all_cluster_log.csv, the clusters' logs in one file, where job
# ids repeat across clusters; its jobs are stored as <cluster>/<job_id>.
_JOB_COLUMNS = ("job_id", "user", "vc", "gpu_num", "node_num", "state", "submit_time", "start_time", "end_time", "cluster")
_JOB_REQUIRED = ("job_id", "state", "submit_time", "start_time", "end_time")
_POD_COLUMNS = ("name", "num_gpu", "gpu_milli", "pod_phase", "creation_time", "scheduled_time", "deletion_time")


def _header(head: str) -> list[str]:
    lines = first_lines(head, 1)
    if not lines:
        return []
    return [name.strip().lower() for name in next(csv.reader([lines[0]]))]


def _is_job_trace(names: list[str]) -> bool:
    return all(n in names for n in _JOB_REQUIRED) and ("gpu_num" in names or "node_num" in names)


def _sniff_helios(head: str) -> bool:
    names = _header(head)
    return _is_job_trace(names) and "vc" in names and "type" not in names


def _sniff_acme(head: str) -> bool:
    names = _header(head)
    return _is_job_trace(names) and not _sniff_helios(head)


def _sniff_alibaba(head: str) -> bool:
    names = _header(head)
    return all(n in names for n in ("name", "num_gpu", "gpu_milli", "pod_phase", "creation_time"))


def _layout(ctx: LoadContext, wanted: tuple[str, ...], required: tuple[str, ...], what: str) -> dict[str, object]:
    """Script parameters describing the header: its text, width and where each column is."""
    lines = first_lines(ctx.head, 1)
    if not lines:
        raise ParseError(f"{ctx.path}: the file is empty", hint=f"expected {what} CSV with its header line")
    names = _header(ctx.head)
    missing = [n for n in required if n not in names]
    if missing:
        raise ParseError(
            f"{ctx.path}:1: the header has no {', '.join(missing)} column",
            hint=f"expected {what} CSV whose first line names its columns ({', '.join(required)}, ...)",
        )
    repeated = sorted({n for n in names if names.count(n) > 1 and n in wanted})
    if repeated:
        raise ParseError(f"{ctx.path}:1: the header names {repeated[0]!r} twice", hint="which one to read is ambiguous; drop one")
    params: dict[str, object] = {f"pos_{n}": (names.index(n) + 1 if n in names else None) for n in wanted}
    # The header as DuckDB will return the line: without a byte-order mark or line end.
    params.update(header_text=lines[0].lstrip("\ufeff"), n_fields=len(names), delim=_WHOLE_LINE)
    return params


def parse_epoch(text: str) -> datetime:
    """The naive UTC instant of an --epoch value: ISO 8601, UTC unless it carries Z or an offset."""
    try:
        instant = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"--epoch {text!r} is not an ISO 8601 time", hint="e.g. --epoch 2023-03-01T00:00:00+08:00"
        ) from None
    if instant.tzinfo is not None:
        instant = instant.astimezone(UTC).replace(tzinfo=None)
    return instant


def _encoding(path: Path) -> str:
    """utf-8 when the whole file is UTF-8, else latin-1 (every byte is a character): DuckDB
    refuses invalid UTF-8, and a file cannot be re-read once its transaction has failed."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with open_binary(path) as f:
        if f.read(2) in (b"\xff\xfe", b"\xfe\xff"):
            raise ParseError(f"{path}:1: UTF-16 text (as Windows tools save CSV)",
                             hint=f"convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 {path.name}")
        f.seek(0)
        try:
            while chunk := f.read(4 << 20):
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return "latin-1"
    return "utf-8"


def _count(ctx: LoadContext, table: str) -> int:
    return int(ctx.con.execute(f"SELECT count(*) FROM {table} WHERE file_id = ?", [ctx.file_id]).fetchone()[0])


def _load_jobs(ctx: LoadContext, source: str, what: str) -> LoadCounts:
    encoding = _encoding(ctx.path)  # first: a UTF-16 file is refused for what it is
    params = _layout(ctx, _JOB_COLUMNS, _JOB_REQUIRED, what)
    zone = ctx.options.zone or CHINA_ZONE
    install_zone(ctx.con, zone)
    params.update(path=str(ctx.path), file_id=ctx.file_id, source=source, zone=zone, encoding=encoding)
    run_script(ctx.con, "ingest", "helios_acme_jobs", params, on_statement=ctx.on_statement)
    return LoadCounts(rows=_count(ctx, "jobs"), rejects=_count(ctx, "rejects"))


def _load_helios(ctx: LoadContext) -> LoadCounts:
    return _load_jobs(ctx, "helios", "a Helios cluster_log")


def _load_acme(ctx: LoadContext) -> LoadCounts:
    return _load_jobs(ctx, "acme", "an Acme trace_<cluster>")


def _load_alibaba(ctx: LoadContext) -> LoadCounts:
    encoding = _encoding(ctx.path)
    params = _layout(ctx, _POD_COLUMNS, _POD_COLUMNS, "an Alibaba cluster-trace-gpu-v2023 pod list")
    epoch = parse_epoch(ctx.options.epoch) if ctx.options.epoch else ALIBABA_EPOCH
    params.update(path=str(ctx.path), file_id=ctx.file_id, epoch=epoch, encoding=encoding,
                  # what the stored times mean, with the file: UTC, counted from this instant
                  time_zone=f"UTC, relative seconds from {epoch:%Y-%m-%dT%H:%M:%S}Z")
    run_script(ctx.con, "ingest", "alibaba_pods", params, on_statement=ctx.on_statement)
    return LoadCounts(rows=_count(ctx, "jobs"), rejects=_count(ctx, "rejects"))


FORMATS = [
    FileFormat(
        name="helios", source="helios",
        description="Helios (SenseTime) cluster_log.csv: Slurm jobs with VC, GPUs, nodes, state, times",
        file_names=("cluster_log",), sniff=_sniff_helios, load=_load_helios, default_zone=CHINA_ZONE,
    ),
    FileFormat(
        name="acme", source="acme",
        description="Acme (Shanghai AI Lab) trace_seren/trace_kalos.csv: LLM cluster jobs, times with offsets",
        file_names=("trace_seren", "trace_kalos"), sniff=_sniff_acme, load=_load_acme, default_zone=CHINA_ZONE,
    ),
    FileFormat(
        name="alibaba_gpu2023", source="alibaba",
        description="Alibaba cluster-trace-gpu-v2023 openb_pod_list: pods, fractional GPUs, relative times",
        file_names=("openb_pod_list",), sniff=_sniff_alibaba, load=_load_alibaba,
    ),
]
