"""DCGM exporter telemetry: Prometheus text scrapes (Prometheus API exports are dcgm_query_range.py's,
staged and stored as here).

* `dcgm_prom`: what `curl host:9400/metrics` returns (one or several scrapes in a file),
  or `promtool tsdb dump` lines (`{__name__="DCGM_FI_DEV_GPU_UTIL", ...} 87 <epoch ms>`).
  Metric and label names are matched case-insensitively through alias tables, so
  relabelled lower-case scrapes (`dcgm_fi_prof_gr_engine_active`, `uuid`) and the old
  exporter's names (`dcgm_gpu_utilization`, `dcgm_gpu_temp`) read alike. Lines that are
  not DCGM samples (shell prompts, other exporters' metrics) are ignored; a DCGM line
  that does not parse is a reject. Plain sample lines (no escapes or braces in the labels:
  nearly every line a real exporter writes) never become Python strings: DuckDB splits
  them (sql/ingest/dcgm_plain.sql) and each distinct series is parsed once; other lines
  go through `parse_sample` one by one.
  The scrape's time, first found of: a timestamp on the sample line (Prometheus' own,
  epoch milliseconds); the last `# time: T` comment above it (ISO 8601 or epoch seconds,
  e.g. written by `echo "# time: $(date -Is)"` before each curl); `--time`; a stamp in
  the file name (`node01-1700000000.prom`, `node01_20260714T081200Z.prom`). Never the
  file's mtime, which copying changes.

The host is `--host` (which must not merge several hosts), else the `kubernetes_node`
label (Prometheus' Kubernetes discovery), else `Hostname`, else `instance` without its
port, else the file name. MIG series (GPU_I_ID) are rows of
their own in gpu_sample_details; DCGM_FI_PROF_GR_ENGINE_ACTIVE (0-1) is stored as
gr_engine_active, never as util_pct (DCGM_FI_DEV_GPU_UTIL, 0-100), and the other
profiling fields (SM_ACTIVE, SM_OCCUPANCY, PIPE_TENSOR/FP64/FP32/FP16_ACTIVE, DRAM_ACTIVE,
PCIE/NVLINK_TX/RX_BYTES) beside it; a scrape of profiling fields only stores details and
no utilization samples. The workload labels dcgm-exporter puts on a GPU's series (pod,
namespace, container, hpc_job) become gpu_workload_labels. DCGM_FI_DEV_XID_ERRORS
becomes gpu_events (kind xid) where its value first appears or changes.

A plainly clean file of either format (this and dcgm_query_range) is read, typed and pivoted in polars instead
(`dcgm_fast.py`, read ahead in a thread); everything above is the exact way every other
file takes, and the one that decides rejects.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis import missing_values
from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest.base import FileFormat, IngestOptions, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import first_lines
from gpucluster_analysis.ingest.gpu import dcgm_fast
from gpucluster_analysis.ingest.gpu.telemetry import (
    CUT_LINE,
    Batches,
    host_from_name,
    parse_time_option,
    site_zone,
    start_time,
    store_staged,
)
from gpucluster_analysis.ingest.lines import read_chunks
from gpucluster_analysis.ingest.memory import bounded_memory
from gpucluster_analysis.sqlfiles import run_script

# Lower-case metric name -> what it measures. DCGM 2.x/3.x names, and the 1.x exporter's.
METRICS: dict[str, str] = {
    "dcgm_fi_dev_gpu_util": "util",
    "dcgm_gpu_utilization": "util",
    "dcgm_fi_dev_mem_copy_util": "mem_util",
    "dcgm_mem_copy_utilization": "mem_util",
    "dcgm_fi_dev_fb_used": "mem_used",
    "dcgm_fb_used": "mem_used",
    "dcgm_fi_dev_fb_free": "mem_free",
    "dcgm_fb_free": "mem_free",
    "dcgm_fi_dev_fb_reserved": "mem_reserved",
    "dcgm_fi_dev_fb_total": "mem_total",
    "dcgm_fi_dev_power_usage": "power",
    "dcgm_power_usage": "power",
    "dcgm_fi_dev_gpu_temp": "temp",
    "dcgm_gpu_temp": "temp",
    "dcgm_fi_dev_sm_clock": "sm_clock",
    "dcgm_sm_clock": "sm_clock",
    "dcgm_fi_prof_gr_engine_active": "gr_engine",
    "dcgm_fi_prof_sm_active": "sm_active",
    "dcgm_fi_prof_sm_occupancy": "sm_occupancy",
    "dcgm_fi_prof_pipe_tensor_active": "tensor_active",
    "dcgm_fi_prof_pipe_fp64_active": "fp64_active",
    "dcgm_fi_prof_pipe_fp32_active": "fp32_active",
    "dcgm_fi_prof_pipe_fp16_active": "fp16_active",
    "dcgm_fi_prof_dram_active": "dram_active",
    "dcgm_fi_prof_pcie_tx_bytes": "pcie_tx_bytes",
    "dcgm_fi_prof_pcie_rx_bytes": "pcie_rx_bytes",
    "dcgm_fi_prof_nvlink_tx_bytes": "nvlink_tx_bytes",
    "dcgm_fi_prof_nvlink_rx_bytes": "nvlink_rx_bytes",
    "dcgm_fi_dev_clock_throttle_reasons": "throttle",
    "dcgm_fi_dev_clocks_event_reasons": "throttle",
    "dcgm_fi_dev_xid_errors": "xid",
    "dcgm_xid_errors": "xid",
}
# Lower-case label -> stage column; the first of several present wins (Hostname over instance).
LABELS = {
    "gpu": "gpu_text",
    "uuid": "uuid",
    "pci_bus_id": "pci_text",
    "modelname": "model",
    "gpu_i_id": "instance_text",
    # The workload dcgm-exporter's Kubernetes pod mapping and Slurm job mapping put on a
    # GPU's series. Where Prometheus scraped the exporter without honor_labels, `pod` is
    # the exporter's own pod and the workload's moved to `exported_pod`; 1.x said pod_name.
    "exported_pod": "pod",
    "pod": "pod",
    "pod_name": "pod",
    "exported_namespace": "namespace",
    "namespace": "namespace",
    "pod_namespace": "namespace",
    "exported_container": "container",
    "container": "container",
    "container_name": "container",
    "hpc_job": "hpc_job",
}

_TEXT = pa.string()
_STAGE = {
    "line": pa.int64(),
    "text": _TEXT,
    "host": _TEXT,
    "gpu_text": _TEXT,
    "instance_text": _TEXT,
    "uuid": _TEXT,
    "pci_text": _TEXT,
    "model": _TEXT,
    "pod": _TEXT,
    "namespace": _TEXT,
    "container": _TEXT,
    "hpc_job": _TEXT,
    "measure": _TEXT,
    "value_text": _TEXT,
    "utc_at": pa.timestamp("us"),
    "problem": _TEXT,
}

_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
# The common shape, no escapes in label values: name{a="x",b="y"} value [timestamp]
# Possessive quantifiers: the blanks between labels could otherwise be split between one label's
# trailing \s* and the next one's leading \s* in exponentially many ways on a line that fails.
_FAST = re.compile(
    r'([A-Za-z_:][A-Za-z0-9_:]*+)\{((?:\s*+[A-Za-z_][A-Za-z0-9_]*+\s*+=\s*+"[^"\\]*+"\s*+,?+)*+\s*+)\}\s++(\S++)(?:\s++(-?\d++))?\s*+'
)
_FAST_LABEL = re.compile(r'(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*+)\s*+=\s*+"([^"\\]*+)"')
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*')
_DUMP_NAME = re.compile(r'__name__\s*=\s*"([A-Za-z_:][A-Za-z0-9_:]*)"')
_TIME_COMMENT = re.compile(r"#\s*(?:time|timestamp)\s*:\s*(.+)", re.IGNORECASE)
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


_EPOCH_MS_2001 = 10**12  # 2001-09-09 in epoch milliseconds: earlier stamps are seconds or garbage


def parse_sample(line: str) -> tuple[str, dict[str, str], str, str | None]:
    """(name, labels, value, timestamp or None) of one exposition-format sample line; ValueError if malformed."""
    fast = _FAST.fullmatch(line)
    if fast:
        return fast.group(1), dict(_FAST_LABEL.findall(fast.group(2))), fast.group(3), fast.group(4)
    if line.startswith("{"):  # promtool tsdb dump: {__name__="DCGM_FI_DEV_GPU_UTIL", gpu="0"} 87 1700000000000
        name_text, rest = "", line
    else:
        name = _NAME.match(line)
        if not name:
            raise ValueError("no metric name")
        name_text, rest = name.group(0), line[name.end() :]
    labels = {}
    if rest.startswith("{"):
        rest = rest[1:]
        while True:
            stripped = rest.lstrip()
            if stripped.startswith("}"):
                rest = stripped[1:]
                break
            label = _LABEL.match(rest)
            if not label:
                raise ValueError("unreadable labels")
            labels[label.group(1)] = re.sub(r'\\[\\"n]', lambda m: _ESCAPES[m.group(0)], label.group(2))
            rest = rest[label.end() :]
            if rest.startswith(","):
                rest = rest[1:]
            elif not rest.lstrip().startswith("}"):
                raise ValueError("unreadable labels")
    parts = rest.split()
    if not parts or len(parts) > 2 or (len(parts) == 2 and not re.fullmatch(r"-?\d+", parts[1])):
        raise ValueError("expected a value (and an optional timestamp) after the labels")
    name_text = name_text or labels.pop("__name__", "")
    if not name_text:
        raise ValueError("no metric name")
    return name_text, labels, parts[0], parts[1] if len(parts) == 2 else None


def metric_name(line: str) -> str | None:
    """The metric a sample line is of, without parsing the rest (None: not a sample line)."""
    if line.startswith("{"):
        dumped = _DUMP_NAME.search(line)
        return dumped.group(1) if dumped else None
    name = _NAME.match(line)
    return name.group(0) if name else None


_NAME_STAMPS = (
    (re.compile(r"(?<!\d)(\d{10})(?:\.\d+)?(?!\d)"), "epoch"),
    (re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})[T_-]?(\d{2}):?(\d{2}):?(\d{2})(Z?)(?!\d)"), "stamp"),
)


def time_from_name(path: Path, zone: str) -> datetime | None:
    """UTC of a time stamp in the file name (epoch seconds, or YYYYMMDD[T]HHMMSS[Z] in the site's zone)."""
    for pattern, kind in _NAME_STAMPS:
        match = pattern.search(path.name)
        if not match:
            continue
        if kind == "epoch":
            return datetime.fromtimestamp(int(match.group(1)), UTC).replace(tzinfo=None)
        year, month, day, hour, minute, second, z = match.groups()
        text = f"{year}-{month}-{day}T{hour}:{minute}:{second}{'+00:00' if z else ''}"
        try:
            return parse_time_option(text, zone)
        except InputError:
            return None
    return None


def _label_host(labels: dict[str, str]) -> str | None:
    # kubernetes_node: the node Prometheus' Kubernetes discovery put the exporter's pod on,
    # where Hostname may be the pod's own name
    host = labels.get("kubernetes_node") or labels.get("hostname")
    if host:
        return host
    instance = labels.get("instance")
    return re.sub(r":\d+$", "", instance) if instance else None


# The plain sample line, ~all of a scrape: `NAME{labels without escapes or braces} VALUE [TIMESTAMP]`.
# Such lines never become Python strings: DuckDB splits them, and each distinct series
# (`NAME{labels}`, a few hundred per node) is parsed once.
_PLAIN_SAMPLE = r"^[A-Za-z_:][A-Za-z0-9_:]*\{[^{}\\]*\}\s+\S+(?:\s+-?\d+)?$"
_DCGM_START = r"^(?i:dcgm)"
_TIME_LINE = r"^#\s*(?i:time|timestamp)\s*:"


def _scrape_series(text: str) -> dict[str, str | None] | None:
    """A scrape series' measure and stage columns as _stage_plain reads them (for dcgm_fast)."""
    measure = METRICS.get((metric_name(text) or "").lower())
    if measure is None:
        return None
    _, raw_labels, _, _ = parse_sample(text + " 0")
    return {"measure": measure, **_series_columns({k.lower(): v for k, v in raw_labels.items()})}


def _read_ahead_prom(path: Path, options: IngestOptions) -> object:
    if options.host or options.time:
        return Exact()
    typed = dcgm_fast.read_scrapes(path, _scrape_series, options.max_gpus_per_node)
    return Exact() if typed is None else typed


def _load_prom(ctx: LoadContext) -> LoadCounts:
    ahead = ctx.prepared if ctx.prepared is not None else _read_ahead_prom(ctx.path, ctx.options)
    if isinstance(ahead, dcgm_fast.Typed):
        return store_typed(ctx, ahead)
    zone = site_zone(ctx)
    stage = Batches(ctx.con, "stage_dcgm", _STAGE)
    ctx.con.execute("CREATE OR REPLACE TEMP TABLE stage_prom_plain (line BIGINT, text VARCHAR)")
    times = Batches(ctx.con, "stage_prom_times", {"line": pa.int64(), "utc_at": pa.timestamp("us")})
    fallback = start_time(ctx) or time_from_name(ctx.path, zone)
    scrape_time: datetime | None = None
    samples = 0
    for first, texts, cut in read_chunks(ctx.path):
        numbers = np.arange(first, first + len(texts), dtype=np.int64)
        dcgm = pc.fill_null(pc.match_substring_regex(texts, _DCGM_START), False)
        fast = pc.and_(dcgm, pc.fill_null(pc.match_substring_regex(texts, _PLAIN_SAMPLE), False))
        if cut:  # the cut last line is rejected line by line
            fast = pc.and_(fast, pa.array(np.arange(len(texts)) < len(texts) - 1))
        fast_mask = fast.to_numpy(zero_copy_only=False)
        if fast_mask.any():
            batch = pa.table({"line": pa.array(numbers[fast_mask]), "text": texts.filter(fast)})  # noqa: F841  -- DuckDB reads it by name
            ctx.con.execute("INSERT INTO stage_prom_plain SELECT * FROM batch")
        # the rest line by line: scrape times, promtool dumps, DCGM lines of another shape
        slow = pc.and_(
            pc.invert(fast),
            pc.or_(
                dcgm,
                pc.or_(
                    pc.fill_null(pc.match_substring_regex(texts, _TIME_LINE), False),
                    pc.fill_null(pc.starts_with(texts, "{"), False),
                ),
            ),
        )
        for index in np.flatnonzero(slow.to_numpy(zero_copy_only=False)):
            number, text = int(numbers[index]), texts[int(index)].as_py()
            is_cut = cut and index == len(texts) - 1
            if text.startswith("#"):
                comment = _TIME_COMMENT.fullmatch(text)
                if comment and not is_cut:  # a cut last line has no sample after it to time
                    try:
                        scrape_time = parse_time_option(comment.group(1), zone)
                    except InputError as e:
                        raise ParseError(
                            f"{ctx.path}:{number}: unreadable scrape time {comment.group(1)!r}",
                            hint="write ISO 8601 or epoch seconds after '# time:'",
                        ) from e
                    times.add(line=number, utc_at=scrape_time)
                continue
            samples += _stage_line(stage, number, text, is_cut, scrape_time or fallback)
    stage.flush()
    times.flush()
    samples += _stage_plain(ctx.con, fallback)
    untimed = ctx.con.execute(  # both paths: the first sample without a time
        "SELECT min(line) FROM stage_dcgm WHERE utc_at IS NULL AND problem IS NULL"
    ).fetchall()[0][0]
    if untimed is not None:
        raise InputError(
            f"{ctx.path}:{untimed}: the scrape has no time (Prometheus text carries none)",
            hint="pass --time, put '# time: <ISO 8601>' above each scrape, or a stamp in the file name",
        )
    if not samples and not stage.count:
        raise ParseError(
            f"{ctx.path}: no DCGM metric gca reads",
            hint="expected DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_SM_ACTIVE and friends",
        )
    return store_stage_dcgm(ctx)


def _stage_line(stage: Batches, number: int, text: str, cut: bool, when: datetime | None) -> int:
    """Stage one sample line the plain path did not take; 1 if it is a sample gca stores."""
    name = metric_name(text)
    if not name or not name.lower().startswith("dcgm"):
        return 0  # shell prompts, other exporters' metrics
    measure = METRICS.get(name.lower())
    if measure is None:
        return 0  # a DCGM field gca does not store
    if cut:
        stage.add(line=number, text=text[:500], problem=CUT_LINE)
        return 0
    try:
        _, raw_labels, value, stamp = parse_sample(text)
    except ValueError as e:
        stage.add(line=number, text=text[:500], problem=f"unreadable DCGM sample: {e}")
        return 0
    if stamp and abs(int(stamp)) < _EPOCH_MS_2001:
        # Prometheus timestamps are epoch milliseconds; 1700000000 would be 1970-01-20
        stage.add(line=number, text=text[:500], problem=f"sample timestamp {stamp} is not in epoch milliseconds")
        return 0
    if stamp:
        try:
            when = datetime.fromtimestamp(int(stamp) / 1000, UTC).replace(tzinfo=None)
        except (OverflowError, OSError, ValueError):
            stage.add(line=number, text=text[:500], problem=f"unreadable sample timestamp {stamp}")
            return 0
    stage.add(
        line=number,
        text=text[:500],
        measure=measure,
        value_text=value,
        utc_at=when,
        **_series_columns({k.lower(): v for k, v in raw_labels.items()}),
    )
    return 1


def _series_columns(labels: dict[str, str]) -> dict[str, str | None]:
    """The stage columns a series' labels (lower-case names) give."""
    row: dict[str, str | None] = {"host": _label_host(labels)}
    for label, column in LABELS.items():
        row[column] = row.get(column) or labels.get(label) or None
    return row


def _stage_plain(con: duckdb.DuckDBPyConnection, fallback: datetime | None) -> int:
    """Stage the plain sample lines (stage_prom_plain) in SQL, timing those without a time or a
    `# time:` line above them at `fallback`; the number of samples of stored metrics."""
    # a plain line's series ends at its only `}` (the plain shape has no braces in labels)
    series = [
        row[0] for row in con.execute("SELECT DISTINCT left(text, strpos(text, '}')) FROM stage_prom_plain").fetchall()
    ]
    columns = ["series", "measure", "problem", "host", *dict.fromkeys(LABELS.values())]
    rows: dict[str, list[str | None]] = {c: [] for c in columns}
    for text in series:
        name = metric_name(text) or ""
        measure = METRICS.get(name.lower())
        if measure is None:
            continue  # a DCGM field gca does not store
        try:
            _, raw_labels, _, _ = parse_sample(text + " 0")
            values = {
                "measure": measure,
                "problem": None,
                **_series_columns({k.lower(): v for k, v in raw_labels.items()}),
            }
        except ValueError as e:
            values = {"measure": measure, "problem": f"unreadable DCGM sample: {e}"}
        values["series"] = text
        for column in columns:
            rows[column].append(values.get(column))
    info = pa.table({c: pa.array(v, type=pa.string()) for c, v in rows.items()})  # noqa: F841  -- DuckDB reads it by name
    con.execute("CREATE OR REPLACE TEMP TABLE stage_prom_series AS SELECT * FROM info")
    before = con.execute("SELECT count(*) FROM stage_dcgm WHERE problem IS NULL").fetchall()[0][0]
    run_script(con, "ingest", "dcgm_plain", {"fallback": fallback, "epoch_ms_2001": _EPOCH_MS_2001})
    con.execute("DROP TABLE stage_prom_plain")
    return int(con.execute("SELECT count(*) FROM stage_dcgm WHERE problem IS NULL").fetchall()[0][0] - before)


class Exact:
    """A query_range answer read ahead that must take the exact way (dcgm_fast declined it)."""


def store_typed(ctx: LoadContext, typed: dcgm_fast.Typed) -> LoadCounts:
    """Store what dcgm_fast typed (sql/ingest/dcgm_typed_store.sql): rows in place, no rejects."""
    ctx.con.register("stage_dcgm_typed", typed.rows.to_arrow())
    ctx.con.register("stage_dcgm_devices", typed.devices.to_arrow())
    ctx.con.register("stage_dcgm_xid", typed.xid_events.to_arrow())
    try:
        run_script(ctx.con, "ingest", "dcgm_typed_store", {"file_id": ctx.file_id}, on_statement=ctx.on_statement)
    finally:
        ctx.con.unregister("stage_dcgm_typed")
        ctx.con.unregister("stage_dcgm_devices")
        ctx.con.unregister("stage_dcgm_xid")
    return LoadCounts(rows=typed.rows.height, rejects=0)


def store_stage_dcgm(ctx: LoadContext) -> LoadCounts:
    con = ctx.con
    if ctx.options.host:
        hosts = [
            r[0] for r in con.execute("SELECT DISTINCT host FROM stage_dcgm WHERE host IS NOT NULL LIMIT 3").fetchall()
        ]
        if len(hosts) > 1:
            raise InputError(
                f"{ctx.path}: --host {ctx.options.host} would merge the series of several hosts "
                f"({', '.join(sorted(hosts))}...)",
                hint="drop --host: the file names its hosts",
            )
        con.execute("UPDATE stage_dcgm SET host = ?", [ctx.options.host])
    else:
        named = host_from_name(ctx.path)
        if named:
            con.execute("UPDATE stage_dcgm SET host = ? WHERE host IS NULL", [named])
        missing = con.execute("SELECT count(*) FROM stage_dcgm WHERE host IS NULL AND problem IS NULL").fetchall()[0][0]
        if missing:
            raise InputError(
                f"{ctx.path}: {missing} values have no host (no Hostname or instance label)",
                hint="pass --host NAME, or name the file after its host (e.g. node01.prom)",
            )
    run_script(con, "ingest", "nvsmi_macros", missing_values.sql_params())
    run_script(con, "ingest", "dcgm_pivot", ctx.options.bounds())
    counts = store_staged(ctx, "UTC")
    con.execute(
        "INSERT INTO gpu_workload_labels (machine_id, gpu_index, gpu_instance_id, first_at, last_at, pod, namespace,"
        " container, hpc_job, file_id) SELECT machine_id, gpu_index, gpu_instance_id, first_at, last_at, pod,"
        " namespace, container, hpc_job, ? FROM stage_workload_labels WHERE gpu_index IS NOT NULL",
        [ctx.file_id],
    )
    return counts


def _sniff_prom(head: str) -> bool:
    pattern = re.compile(r'(?:#\s*(?:HELP|TYPE)\s+)?dcgm_\w+|\{\s*__name__\s*=\s*"dcgm_', re.IGNORECASE)
    return any(pattern.match(line.strip()) for line in first_lines(head, 40))


# Every reading of DCGM is one kind of measurement (ingest/samples.py): an exporter's scrape, the
# Prometheus answer that stored it and dcgmi dmon of one GPU at one time hold the same sample.
SAMPLE_KIND = "dcgm"
FORMATS = [
    FileFormat(
        name="dcgm_prom",
        source="dcgm",
        description="dcgm-exporter Prometheus text scrape(s) (/metrics)",
        file_names=(),
        sniff=_sniff_prom,
        load=bounded_memory(_load_prom),
        prepare=_read_ahead_prom,
        sample_kind=SAMPLE_KIND,
    ),
]
