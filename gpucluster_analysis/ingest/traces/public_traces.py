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
* `alibaba_node_list`: the same trace's node lists (`openb_node_list_*.csv`):
  `sn,cpu_milli,memory_mib,gpu,model`, the cluster's machines (`machines`, source
  `alibaba`), the capacity a replay of the pod list packs pods into.

Each job trace becomes `jobs` and one `attempts` row per job that ran, sized by
`attempts.num_gpus` / `num_nodes` (the traces name no machines). Columns are found
by header name, so extra or reordered columns are fine. DuckDB reads each line
whole and the scripts (`sql/ingest/helios_acme_jobs.sql`, `alibaba_pods.sql`,
`alibaba_nodes.sql`) split
it, so every rejected row is stored with its exact line number. `duration`,
`queue` and `gpu_time` are derived columns and are not read: gca derives them.
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest.base import FileFormat, IngestOptions, LoadContext, LoadCounts
from gpucluster_analysis.ingest.csv_scan import MAX_LINE_BYTES, TextScan
from gpucluster_analysis.ingest.files import first_lines
from gpucluster_analysis.ingest.traces.philly import PHILLY_ZONE
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import install_zone

# Helios and Acme come from clusters in China; Acme's own offsets (+08:00) agree.
CHINA_ZONE = "Asia/Shanghai"
PHILLY_STATES = frozenset({"Pass", "Killed", "Failed"})
# Alibaba's times count seconds (StepFun's fault trace days) from an undisclosed trace start.
# Unless --epoch names that start, gca reads them from 1970-01-01 00:00 UTC, so stored times are
# the trace's own numbers and every duration and delay is exact; calendar dates (1970-...) mean nothing.
RELATIVE_EPOCH = datetime(1970, 1, 1)
# A byte no text line holds: DuckDB then reads each line as one field.
_WHOLE_LINE = "\x01"

# `cluster`: HeliosArtifact's all_cluster_log.csv, the clusters' logs in one file, where job
# ids repeat across clusters; its jobs are stored as <cluster>/<job_id>.
_JOB_COLUMNS = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "cluster",
)
_JOB_REQUIRED = ("job_id", "state", "submit_time", "start_time", "end_time")
_POD_COLUMNS = ("name", "num_gpu", "gpu_milli", "pod_phase", "creation_time", "scheduled_time", "deletion_time")
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_NODE_REQUIRED = ("sn", "cpu_milli", "memory_mib", "gpu")  # model is empty for CPU nodes anyway


def _header(head: str) -> list[str]:
    lines = first_lines(head, 1)
    if not lines:
        return []
    return [name.strip().lower() for name in next(csv.reader([lines[0]]))]


def _is_job_trace(names: list[str]) -> bool:
    return all(n in names for n in _JOB_REQUIRED) and ("gpu_num" in names or "node_num" in names)


_POD_VARIANTS = "the pod lists re-sample the same pods"
_NODE_VARIANTS = "the node lists describe the same cluster"


def _one_of(paths: list[Path], preferred: str, why: str) -> dict[Path, str]:
    """Of a folder's variant lists, all but one (`preferred`, else the first by name) to skip."""
    if len(paths) < 2:
        return {}
    keep = next((p for p in paths if p.name == preferred), min(paths))
    return {
        p: f"a variant of {keep.name} ({why}): gca ingests one per store; name this file alone to take it instead"
        for p in paths
        if p != keep
    }


def _sniff_helios(head: str) -> bool:
    names = _header(head)
    return _is_job_trace(names) and "vc" in names and "type" not in names


def _sniff_acme(head: str) -> bool:
    names = _header(head)
    return _is_job_trace(names) and not _sniff_helios(head)


def _sniff_alibaba(head: str) -> bool:
    names = _header(head)
    return all(n in names for n in ("name", "num_gpu", "gpu_milli", "pod_phase", "creation_time"))


def _sniff_alibaba_nodes(head: str) -> bool:
    names = _header(head)
    return all(n in names for n in _NODE_REQUIRED)


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
        raise ParseError(
            f"{ctx.path}:1: the header names {repeated[0]!r} twice", hint="which one to read is ambiguous; drop one"
        )
    params: dict[str, object] = {f"pos_{n}": (names.index(n) + 1 if n in names else None) for n in wanted}
    # The header as DuckDB will return the line: without a byte-order mark or line end.
    params.update(header_text=lines[0].lstrip("\ufeff"), n_fields=len(names), delim=_WHOLE_LINE)
    return params


def trace_epoch(options: IngestOptions) -> datetime:
    """The instant a trace's relative times count from: --epoch, else RELATIVE_EPOCH."""
    return parse_epoch(options.epoch) if options.epoch else RELATIVE_EPOCH


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
    """utf-8 when the whole file is UTF-8, else latin-1 (every byte a character); refuses
    what DuckDB's CSV reader cannot take (see csv_scan.TextScan)."""
    return TextScan(path).encoding()


def _is_philly(head: str) -> bool:
    """Philly's trace in this layout (HeliosData and HeliosArtifact ship one to compare with):
    its jobs ran in 2017 (Helios' in 2020) and, where converted word for word, its states
    are Philly's (Pass, Killed, Failed) rather than Slurm's capitals."""
    lines = first_lines(head, 40)
    if len(lines) < 2:
        return False
    rows = list(csv.reader(lines))
    names = [n.strip().lower().lstrip("\ufeff") for n in rows[0]]
    at = {n: i for i, n in enumerate(names)}
    for row in rows[1:]:
        state = row[at["state"]].strip() if "state" in at and at["state"] < len(row) else ""
        submit = row[at["submit_time"]].strip() if "submit_time" in at and at["submit_time"] < len(row) else ""
        if state in PHILLY_STATES or submit.startswith("2017-"):
            return True
    return False


def _load_jobs(ctx: LoadContext, source: str, what: str) -> LoadCounts:
    encoding = _encoding(ctx.path)  # first: a UTF-16 file is refused for what it is
    params = _layout(ctx, _JOB_COLUMNS, _JOB_REQUIRED, what)
    zone = ctx.options.zone or CHINA_ZONE
    if not ctx.options.zone and _is_philly(ctx.head):
        # Philly's wall-clock times are Redmond's, as in its own trace (ingest/traces/philly.py)
        zone = PHILLY_ZONE
    install_zone(ctx.con, zone)
    params.update(
        path=str(ctx.path),
        file_id=ctx.file_id,
        source=source,
        zone=zone,
        encoding=encoding,
        max_line_size=MAX_LINE_BYTES,
        **ctx.options.bounds(),
    )
    run_script(ctx.con, "ingest", "trace_macros", {})
    run_script(ctx.con, "ingest", "helios_acme_jobs", params, on_statement=ctx.on_statement)
    return LoadCounts(rows=ctx.rows_in("jobs"), rejects=ctx.rows_in("rejects"), time_zone=zone)


def _load_helios(ctx: LoadContext) -> LoadCounts:
    return _load_jobs(ctx, "helios", "a Helios cluster_log")


def _load_acme(ctx: LoadContext) -> LoadCounts:
    return _load_jobs(ctx, "acme", "an Acme trace_<cluster>")


def _load_alibaba(ctx: LoadContext) -> LoadCounts:
    if ctx.path.name.startswith("pai_"):
        # cluster-trace-gpu-v2020: headerless tables of jobs, tasks and instances joined by name,
        # with another meaning of every column; read as pods they would give wrong numbers.
        raise ParseError(
            f"{ctx.path}: an Alibaba cluster-trace-gpu-v2020 (PAI) table, which gca does not read",
            hint="gca reads the 2023 pod lists (openb_pod_list_*.csv) of cluster-trace-gpu-v2023",
        )
    encoding = _encoding(ctx.path)
    params = _layout(ctx, _POD_COLUMNS, _POD_COLUMNS, "an Alibaba cluster-trace-gpu-v2023 pod list")
    epoch = trace_epoch(ctx.options)
    params.update(
        path=str(ctx.path),
        file_id=ctx.file_id,
        epoch=epoch,
        anchored=bool(ctx.options.epoch),
        encoding=encoding,
        max_line_size=MAX_LINE_BYTES,
        **ctx.options.bounds(),
    )
    run_script(ctx.con, "ingest", "trace_macros", {})
    run_script(ctx.con, "ingest", "alibaba_pods", params, on_statement=ctx.on_statement)
    # Recorded with the file: its times were read as UTC offsets from the epoch (--tz does not apply).
    return LoadCounts(
        rows=ctx.rows_in("jobs"),
        rejects=ctx.rows_in("rejects"),
        time_zone=f"UTC, relative seconds from {epoch:%Y-%m-%dT%H:%M:%S}Z",
    )


def _load_alibaba_nodes(ctx: LoadContext) -> LoadCounts:
    encoding = _encoding(ctx.path)
    params = _layout(ctx, _NODE_COLUMNS, _NODE_REQUIRED, "an Alibaba cluster-trace-gpu-v2023 node list")
    params.update(
        path=str(ctx.path), file_id=ctx.file_id, encoding=encoding, max_line_size=MAX_LINE_BYTES, **ctx.options.bounds()
    )
    run_script(ctx.con, "ingest", "trace_macros", {})
    run_script(ctx.con, "ingest", "alibaba_nodes", params, on_statement=ctx.on_statement)
    return LoadCounts(rows=ctx.rows_in("machines"), rejects=ctx.rows_in("rejects"))


FORMATS = [
    FileFormat(
        name="helios",
        source="helios",
        description="Helios (SenseTime) cluster_log.csv: Slurm jobs with VC, GPUs, nodes, state, times",
        file_names=("cluster_log",),
        sniff=_sniff_helios,
        load=_load_helios,
        default_zone=CHINA_ZONE,
    ),
    FileFormat(
        name="acme",
        source="acme",
        description="Acme (Shanghai AI Lab) trace_seren/trace_kalos.csv: LLM cluster jobs, times with offsets",
        file_names=("trace_seren", "trace_kalos"),
        sniff=_sniff_acme,
        load=_load_acme,
        default_zone=CHINA_ZONE,
    ),
    FileFormat(
        name="alibaba_gpu2023",
        source="alibaba",
        description="Alibaba cluster-trace-gpu-v2023 openb_pod_list: pods, fractional GPUs, relative times",
        file_names=("openb_pod_list",),
        sniff=_sniff_alibaba,
        load=_load_alibaba,
        variants=lambda paths: _one_of(paths, "openb_pod_list_default.csv", _POD_VARIANTS),
    ),
    FileFormat(
        name="alibaba_node_list",
        source="alibaba",
        description="Alibaba cluster-trace-gpu-v2023 openb_node_list: nodes, their CPUs, memory, GPUs and GPU model",
        file_names=("openb_node_list",),
        sniff=_sniff_alibaba_nodes,
        load=_load_alibaba_nodes,
        variants=lambda paths: _one_of(
            paths, "openb_node_list_all_node.csv", "the node lists describe the same cluster"
        ),
    ),
]
