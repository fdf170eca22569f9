"""Typed rows of an ordinary Prometheus query_range answer of DCGM series, read in polars.

A day of one node's DCGM fields is ~700k points; staging each as text with its series'
labels, pivoting and checking the text in SQL (dcgm_query_range.sql, dcgm_pivot.sql,
nvsmi_check.sql) costs ~2 s a node (benchmarks/RESULTS.md). polars reads the answer and
types, checks and pivots it in a fraction of that. Only an answer that is plainly clean takes
this way, whole: every series of a DCGM metric gca reads names its host and GPU index by its
labels, no two series give one GPU the same measure, every value is a decimal number in its
measure's range or NaN, and nothing needs what only the exact way does (MIG instances,
workload labels, Xid or clock-reason series, --host). Any other answer goes the exact way,
which also decides its rejects; `tests/test_dcgm_fast.py` checks that both ways store the
same. No database I/O here (the read may run in a thread).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

# Measures the fast way types (dcgm.METRICS' values), with the range nvsmi_check.sql accepts.
RANGES: dict[str, tuple[float | None, float | None]] = {
    "util": (0, 100), "mem_util": (0, 100), "mem_used": (0, None), "mem_free": (None, None),
    "mem_reserved": (None, None), "mem_total": (0, None), "power": (0, None), "temp": (None, None),
    "sm_clock": (0, None), "gr_engine": (0, 1),
    "sm_active": (0, 1), "sm_occupancy": (0, 1), "tensor_active": (0, 1), "fp64_active": (0, 1),
    "fp32_active": (0, 1), "fp16_active": (0, 1), "dram_active": (0, 1),
    "pcie_tx_bytes": (0, None), "pcie_rx_bytes": (0, None), "nvlink_tx_bytes": (0, None), "nvlink_rx_bytes": (0, None),
}
PROFILE = ("sm_active", "sm_occupancy", "tensor_active", "fp64_active", "fp32_active", "fp16_active", "dram_active",
           "pcie_tx_bytes", "pcie_rx_bytes", "nvlink_tx_bytes", "nvlink_rx_bytes")
# stage column -> measure, as gpu_sample_details and gpu_samples name them
COLUMNS = {"util_pct": "util", "mem_util_pct": "mem_util", "mem_used_mib": "mem_used", "power_w": "power",
           "temp_c": "temp", "sm_clock_mhz": "sm_clock", "gr_engine_active": "gr_engine",
           **{m: m for m in PROFILE}}
_NUMBER = r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$"
# The fast way holds a whole file in memory (several times its size while polars reads it);
# bigger files take the exact way, which streams them under DuckDB's memory limit.
MAX_BYTES = 256 << 20
_MISSING_WORDS = ("n/a", "-", "unknown", "none", "not supported", "not available")
_WORKLOAD = ("exported_pod", "pod", "pod_name", "hpc_job")


def read(path: Path, metrics: dict[str, str], fallback: str | None) -> pl.DataFrame | None:
    """One row per GPU and time of a clean answer (columns: machine_id, sample_at, gpu_index,
    uuid, pci_bus_id, model, the measures, in_samples, has_details), or None: the exact way.

    `metrics`: lower-case metric name -> measure (dcgm.METRICS); `fallback`: the measure the
    file name gives series without __name__.
    """
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        answer = pl.read_json(path, infer_schema_length=None)
        return _typed(answer, metrics, fallback)
    except (pl.exceptions.PolarsError, ValueError, OSError, TypeError):
        return None


def _typed(answer: pl.DataFrame, metrics: dict[str, str], fallback: str | None) -> pl.DataFrame | None:
    if answer.height != 1 or set(answer.columns) - {"status", "data"} or "data" not in answer.columns:
        return None
    if answer.item(0, "status") != "success":
        return None
    data = answer.get_column("data").struct
    if set(data.fields) != {"resultType", "result"} or data.field("resultType").item() != "matrix":
        return None
    series = answer.select(data.field("result")).explode("result").drop_nulls()
    if series.is_empty() or not isinstance(series.schema["result"], pl.Struct):
        return None
    series = series.unnest("result")
    if set(series.columns) != {"metric", "values"} or not isinstance(series.schema["metric"], pl.Struct):
        return None
    names = series.schema["metric"].fields  # type: ignore[union-attr]
    keys = [f.name.lower() for f in names]
    if len(set(keys)) != len(keys) or any(f.dtype != pl.String for f in names):
        return None  # two labels one name but for case, or a label that is no string: the exact way

    def label(key: str) -> pl.Expr:
        if key not in keys:
            return pl.lit(None, dtype=pl.String)
        return pl.col("metric").struct.field(names[keys.index(key)].name)

    measure = (pl.when(label("__name__").is_null()).then(pl.lit(fallback, dtype=pl.String))
               .otherwise(label("__name__").str.to_lowercase().replace_strict(metrics, default=None,
                                                                                return_dtype=pl.String)))
    instance = label("instance").str.replace(r":[0-9]+$", "")
    labelled = series.with_row_index("series_no").select(
        "series_no", "values", measure.alias("measure"),
        pl.coalesce(label("kubernetes_node"), label("hostname"), instance).alias("host"),
        label("gpu").alias("gpu_text"), label("gpu_i_id").alias("instance_text"),
        label("uuid").alias("uuid"), label("pci_bus_id").alias("pci_text"), label("modelname").alias("model"),
        *[label(k).alias(k) for k in _WORKLOAD],
        label("__name__").is_null().alias("unnamed"),
    )
    if labelled.get_column("unnamed").any() and fallback is None:
        return None
    kept = labelled.filter(pl.col("measure").is_not_null())
    if kept.is_empty():
        return None
    points = kept.select("series_no", "measure", "host", "gpu_text", "values").explode("values").filter(
        pl.col("values").is_not_null())
    if points.get_column("values").list.len().ne(2).any():
        return None
    points = points.select(
        "series_no", "measure", "host", "gpu_text",
        pl.col("values").list.get(0).cast(pl.Float64, strict=False).alias("ts"),
        pl.col("values").list.get(1).alias("text"),
    )
    return _checked(kept, points)


def _checked(kept: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame | None:
    """The typed rows of a clean answer or scrape file, or None.

    `kept`: one row per series of a metric gca reads (series_no, measure, host, gpu_text,
    instance_text, uuid, pci_text, model, exported_pod, pod, pod_name, hpc_job);
    `points`: series_no, measure, host, gpu_text, ts (epoch seconds), text (the value).
    """
    if kept.is_empty() or not kept.get_column("measure").is_in(list(RANGES)).all():
        return None  # Xid, clock reasons, or no DCGM series at all: the exact way
    pod = pl.coalesce(pl.col("exported_pod"), pl.col("pod"), pl.col("pod_name"))
    clean_series = kept.select(
        pl.col("host").is_not_null() & (pl.col("host") != "") & (pl.col("host") == pl.col("host").str.strip_chars(" "))
        & pl.col("gpu_text").str.contains(r"^[0-9]{1,4}$").fill_null(False)
        & (pl.col("instance_text").is_null() | (pl.col("instance_text") == ""))
        # workload labels that name a workload: gpu_workload_labels, the exact way's
        & (pod.is_null() | (pod == "") | pod.str.to_lowercase().str.contains("dcgm-exporter", literal=True))
        & (pl.col("hpc_job").is_null() | (pl.col("hpc_job") == ""))
    ).to_series()
    if not clean_series.all():
        return None
    if kept.select("host", "gpu_text", "measure").is_duplicated().any():
        return None  # a GPU's measure twice: maybe a conflict, which the exact way tells
    devices = kept.select("host", "gpu_text", "uuid", "pci_text", "model").unique()
    if devices.select("host", "gpu_text").is_duplicated().any():
        return None  # one GPU, two UUIDs (or PCI ids, models): the exact way
    if points.get_column("ts").is_null().any() or (points.get_column("ts") < 0).any():
        return None
    # each series' times strictly increasing (as Prometheus answers): no time twice
    same_series = pl.col("series_no") == pl.col("series_no").shift()
    if points.select((same_series & (pl.col("ts") <= pl.col("ts").shift())).any()).item():
        return None
    nan = points.get_column("text").str.to_lowercase() == "nan"
    if not (nan | points.get_column("text").str.contains(_NUMBER)).all():
        return None
    points = points.with_columns(
        pl.when(nan).then(None).otherwise(pl.col("text").cast(pl.Float64, strict=False)).alias("value"),
        # make_timestamp(round(ts * 10^6)): half away from zero, as DuckDB rounds (times are >= 0)
        ((pl.col("ts") * 1_000_000 + 0.5).floor().cast(pl.Int64).cast(pl.Datetime("us"))).alias("sample_at"),
    )
    bounds = points.group_by("measure").agg(pl.col("value").min().alias("low"), pl.col("value").max().alias("high"),
                                            pl.col("value").is_infinite().any().alias("infinite"))
    for row in bounds.iter_rows(named=True):
        low, high = RANGES[row["measure"]]
        if row["infinite"] or (row["low"] is not None and (
                (low is not None and row["low"] < low) or (high is not None and row["high"] > high))):
            return None
    return _pivot(points, devices)


def _pivot(points: pl.DataFrame, devices: pl.DataFrame) -> pl.DataFrame | None:
    # one point per GPU, time and measure (checked above): a join of the measures on (GPU, time)
    keys = ["host", "gpu_text", "sample_at"]
    parts = points.select(*keys, "measure", "value").partition_by("measure", as_dict=True)
    present = sorted(str(k[0]) for k in parts)
    wide = None
    for m in present:
        part = parts[(m,)].select(*keys, pl.col("value").alias(m), pl.lit(True).alias(f"has_{m}"))
        wide = part if wide is None else wide.join(part, on=keys, how="full", coalesce=True)
    assert wide is not None
    wide = wide.with_columns(pl.col(f"has_{m}").fill_null(False) for m in present)
    for m in RANGES:
        if m not in present:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(m), pl.lit(False).alias(f"has_{m}"))
    # DCGM's own total, else used + free + reserved (dcgm_pivot.sql); a NaN total stays missing
    total = (pl.when(pl.col("has_mem_total")).then(pl.col("mem_total"))
             .otherwise(pl.col("mem_used") + pl.col("mem_free") + pl.col("mem_reserved")))
    profile_text = pl.any_horizontal(*[pl.col(f"has_{m}") for m in PROFILE])
    has_profile = pl.any_horizontal(*[pl.col(m).is_not_null() for m in PROFILE])
    typed = wide.with_columns(total.alias("mem_total_mib")).join(
        devices, on=["host", "gpu_text"], how="left").select(
        pl.col("host").alias("machine_id"), "sample_at", pl.col("gpu_text").cast(pl.Int16).alias("gpu_index"),
        _text(pl.col("uuid")).alias("uuid"),
        pl.when(_missing(pl.col("pci_text"))).then(None)
        .otherwise(pl.col("pci_text").str.strip_chars(" ").str.slice(-12).str.to_lowercase()).alias("pci_bus_id"),
        _text(pl.col("model")).alias("model"),
        *[pl.col(m).alias(c) for c, m in COLUMNS.items()], "mem_total_mib",
        # a scrape of profiling fields only has no utilization sample (nvsmi_check.sql's profile_only)
        (pl.col("has_util") | ~profile_text).alias("in_samples"),
        pl.any_horizontal(*[pl.col(c).is_not_null() for c in ("mem_util", "mem_used", "power", "temp", "sm_clock",
                                                                  "gr_engine")], pl.col("mem_total_mib").is_not_null(),
                          has_profile).alias("has_details"),
    )
    totals = typed.get_column("mem_total_mib").drop_nulls()
    if not totals.is_empty() and (totals.min() < 0 or not totals.is_finite().all()):  # type: ignore[operator]
        return None  # a total nvsmi_check.sql would reject
    return typed


def _missing(value: pl.Expr) -> pl.Expr:
    trimmed = value.str.strip_chars(" ")
    return value.is_null() | (trimmed == "") | trimmed.str.starts_with("[") | trimmed.str.to_lowercase().is_in(
        list(_MISSING_WORDS))


def _text(value: pl.Expr) -> pl.Expr:
    return pl.when(_missing(value)).then(None).otherwise(value.str.strip_chars(" "))



# dcgm-exporter scrape files (dcgm_prom): the lines dcgm.py's exact way reads, in their plain shape.
_TIME_COMMENT = r"^#\s*(?i:time|timestamp)\s*:"
_EPOCH_COMMENT = r"^#\s*(?i:time|timestamp)\s*:\s*([0-9]+)$"
_SAMPLE = r"^[A-Za-z_:][A-Za-z0-9_:]*\{[^{}\\]*\}\s+\S+$"  # no sample timestamp: the `# time:` line times it
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"


def read_scrapes(path: Path, series_of: Callable[[str], dict[str, str | None] | None]) -> pl.DataFrame | None:
    """read()'s typed rows for a file of dcgm-exporter scrapes, or None: the exact way.

    Clean means, besides read()'s rules: uncompressed UTF-8 ending in a line end; every DCGM
    line `NAME{labels} VALUE` with no escape or brace in the labels and no timestamp of its
    own, under a `# time: <epoch seconds>` line; no promtool dump lines. `series_of(series)`
    gives a series' stage columns and measure as dcgm.py's exact way reads them (None: a
    metric gca does not store; ValueError: labels that do not parse).
    """
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        with path.open("rb") as f:
            head = f.read(3)
            f.seek(-1, 2)
            if f.read(1) != b"\n" or head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x1f\x8b")):
                return None
        lines = pl.read_csv(path, has_header=False, separator="\x1f", quote_char=None, new_columns=["text"],
                            infer_schema=False, raise_if_empty=False)
        if lines.width != 1:
            return None
        return _scrapes(lines, series_of)
    except (pl.exceptions.PolarsError, ValueError, OSError):
        return None


def _scrapes(lines: pl.DataFrame, series_of: Callable[[str], dict[str, str | None] | None]) -> pl.DataFrame | None:
    text = pl.col("text").str.strip_chars()
    dcgm = pl.col("text").str.slice(0, 4).str.to_lowercase() == "dcgm"
    df = lines.select(text.alias("text")).filter(pl.col("text").is_not_null() & (pl.col("text") != "")).with_row_index("n")
    if df.select(pl.col("text").str.contains(_CONTROL).any() | pl.col("text").str.starts_with("{").any()).item():
        return None  # binary data, or promtool dump lines: the exact way
    # each regex on the lines it concerns: comments (~20% of a scrape), DCGM samples
    comments = df.filter(pl.col("text").str.starts_with("#"))
    if comments.select((pl.col("text").str.contains(_TIME_COMMENT) & ~pl.col("text").str.contains(_EPOCH_COMMENT)).any()).item():
        return None
    if not df.filter(dcgm).select(pl.col("text").str.contains(_SAMPLE).all()).item():
        return None
    timed = df.with_columns(
        pl.col("text").str.extract(_EPOCH_COMMENT, 1).cast(pl.Float64).forward_fill().alias("ts"),
        dcgm.alias("sample"),
    ).filter(pl.col("sample"))
    if timed.is_empty() or timed.get_column("ts").null_count():
        return None  # a sample before any `# time:` line: the exact way times it or says why not
    close = pl.col("text").str.find("}", literal=True)
    samples = timed.select("n", "ts", pl.col("text").str.slice(0, close + 1).alias("series"),
                           pl.col("text").str.slice(close + 1).str.strip_chars().alias("value"))
    names = samples.get_column("series").unique(maintain_order=True).to_list()
    rows = []
    for number, series in enumerate(names):
        columns = series_of(series)
        if columns is not None:
            rows.append({"series": series, "series_no": number, **columns})
    if not rows:
        return None
    kept = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.lit(None, dtype=pl.String).alias("exported_pod"), pl.lit(None, dtype=pl.String).alias("pod_name"))
    for column in ("host", "gpu_text", "instance_text", "uuid", "pci_text", "model", "pod", "hpc_job"):
        if column not in kept.columns:
            kept = kept.with_columns(pl.lit(None, dtype=pl.String).alias(column))
        kept = kept.with_columns(pl.col(column).cast(pl.String))
    points = (samples.join(kept.select("series", "series_no", "measure", "host", "gpu_text"), on="series")
              .sort("series_no", "n").select("series_no", "measure", "host", "gpu_text", "ts",
                                             pl.col("value").alias("text")))
    return _checked(kept, points)
