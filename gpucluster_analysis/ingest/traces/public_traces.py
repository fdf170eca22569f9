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

import codecs
import csv
import re
from datetime import UTC, datetime
from pathlib import Path

from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import first_lines, open_binary
from gpucluster_analysis.ingest.traces.philly import PHILLY_ZONE
from gpucluster_analysis.sqlfiles import run_script
from gpucluster_analysis.timezones import install_zone

# Helios and Acme come from clusters in China; Acme's own offsets (+08:00) agree.
CHINA_ZONE = "Asia/Shanghai"
PHILLY_STATES = frozenset({"Pass", "Killed", "Failed"})
# Alibaba's times count seconds from an undisclosed trace start. Unless --epoch names that
# start, gca reads them as seconds since 1970-01-01 00:00 UTC, so stored times are the
# trace's own numbers and every duration and delay is exact; calendar dates (1970-...) mean nothing.
ALIBABA_EPOCH = datetime(1970, 1, 1)
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


# A control character is never in a trace CSV; \x01 is also the byte DuckDB splits lines at.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LONE_CR = re.compile(rb"\r(?!\n)")
_LF_WITHOUT_CR = re.compile(rb"(?<!\r)\n")
_C1 = re.compile(rb"[\x80-\x9f]")
# The longest line DuckDB is asked to read (its default, 2 MB, fails a file on one long
# field); a longer line is no trace row, and the file is refused at it.
MAX_LINE_BYTES = 64 << 20
SCAN_CHUNK_BYTES = 4 << 20  # below MAX_LINE_BYTES: a longer line spans chunks, which is where it is caught


class _TextScan:
    """One streaming pass over a trace CSV before DuckDB reads it (a failed DuckDB read would
    abort the file's transaction, leaving no second try): its encoding, and what DuckDB's CSV
    reader cannot take, refused with the line: UTF-16, control characters, mixed line ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines_before = 0  # line ends in the chunks already scanned
        self.crlf: bool | None = None  # the file's line end, from its first one
        self.line_bytes = 0  # bytes since the last line end

    def encoding(self) -> str:
        decoder = codecs.getincrementaldecoder("utf-8")()
        utf8 = True
        carry = b""  # a chunk's last byte when it is \r: its \n may open the next chunk
        with open_binary(self.path) as f:
            if f.read(2) in (b"\xff\xfe", b"\xfe\xff"):
                raise ParseError(
                    f"{self.path}:1: UTF-16 text (as Windows tools save CSV)",
                    hint=f"convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 {self.path.name}",
                )
            f.seek(0)
            while raw := f.read(SCAN_CHUNK_BYTES):
                chunk = carry + raw
                carry = chunk[-1:] if chunk.endswith(b"\r") else b""
                chunk = chunk[: len(chunk) - len(carry)]
                self._check(chunk)
                self._measure(chunk)
                if utf8:
                    try:
                        decoder.decode(chunk)
                    except UnicodeDecodeError:
                        utf8 = False
                if not utf8 and (c1 := _C1.search(chunk)):
                    # DuckDB's Latin-1 has no characters there; Windows-1252 puts quotes and the euro sign there
                    raise ParseError(
                        f"{self.path}:{self._line(chunk, c1.start())}: neither UTF-8 nor Latin-1 text",
                        hint=f"convert it to UTF-8 first, e.g. iconv -f CP1252 -t UTF-8 {self.path.name}",
                    )
                self.lines_before += chunk.count(b"\n")
            self._check(carry)
            if utf8:
                try:
                    decoder.decode(b"", final=True)
                except UnicodeDecodeError:
                    utf8 = False
        return "utf-8" if utf8 else "latin-1"

    def _measure(self, chunk: bytes) -> None:
        first, last = chunk.find(b"\n"), chunk.rfind(b"\n")
        if self.line_bytes + (first if first >= 0 else len(chunk)) > MAX_LINE_BYTES:
            limit = f"{MAX_LINE_BYTES >> 20} MB" if MAX_LINE_BYTES >= 1 << 20 else f"{MAX_LINE_BYTES} bytes"
            raise ParseError(
                f"{self.path}:{self.lines_before + 1}: a line longer than {limit}",
                hint="this is no trace row; check the file (line ends lost?)",
            )
        self.line_bytes = len(chunk) - last - 1 if last >= 0 else self.line_bytes + len(chunk)

    def _line(self, chunk: bytes, position: int) -> int:
        return self.lines_before + chunk.count(b"\n", 0, position) + 1

    def _check(self, chunk: bytes) -> None:
        if control := _CONTROL.search(chunk):
            raise ParseError(
                f"{self.path}:{self._line(chunk, control.start())}: a control character"
                f" (0x{chunk[control.start()]:02x}): binary data, not a CSV text file",
                hint="give gca the CSV as published (gzip-compressed is fine)",
            )
        if (cr := _LONE_CR.search(chunk)) and cr.end() < len(chunk):
            raise ParseError(
                f"{self.path}:{self._line(chunk, cr.start())}: a carriage return inside the line",
                hint=f"remove it, or normalize the line ends (e.g. dos2unix {self.path.name})",
            )
        if self.crlf is None and (first := chunk.find(b"\n")) >= 0:
            self.crlf = chunk[first - 1 : first] == b"\r"  # a \r ending the previous chunk was carried here
        position = None
        if self.crlf and (lf := _LF_WITHOUT_CR.search(chunk)):
            position = lf.start()
        elif self.crlf is False and (crlf := chunk.find(b"\r\n")) >= 0:
            position = crlf
        if position is not None:
            raise ParseError(
                f"{self.path}:{self._line(chunk, position)}: the line ends change here"
                f" ({'LF after CRLF' if self.crlf else 'CRLF after LF'}), as when files are concatenated",
                hint=f"normalize them first, e.g. dos2unix {self.path.name}",
            )


def _encoding(path: Path) -> str:
    """utf-8 when the whole file is UTF-8, else latin-1 (every byte a character); refuses
    what DuckDB's CSV reader cannot take (see _TextScan)."""
    return _TextScan(path).encoding()


def _count(ctx: LoadContext, table: str) -> int:
    return int(ctx.con.execute(f"SELECT count(*) FROM {table} WHERE file_id = ?", [ctx.file_id]).fetchone()[0])


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
        # Philly's wall-clock times are Redmond's, as in its own trace (ingest/philly.py)
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
    return LoadCounts(rows=_count(ctx, "jobs"), rejects=_count(ctx, "rejects"), time_zone=zone)


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
    epoch = parse_epoch(ctx.options.epoch) if ctx.options.epoch else ALIBABA_EPOCH
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
        rows=_count(ctx, "jobs"),
        rejects=_count(ctx, "rejects"),
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
    return LoadCounts(rows=_count(ctx, "machines"), rejects=_count(ctx, "rejects"))


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
    ),
    FileFormat(
        name="alibaba_node_list",
        source="alibaba",
        description="Alibaba cluster-trace-gpu-v2023 openb_node_list: nodes, their CPUs, memory, GPUs and GPU model",
        file_names=("openb_node_list",),
        sniff=_sniff_alibaba_nodes,
        load=_load_alibaba_nodes,
    ),
]
