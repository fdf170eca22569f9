"""Typed rows of an ordinary Prometheus query_range answer or file of dcgm-exporter scrapes
of DCGM series, read in polars.

A day of one node's DCGM fields is ~700k points; staging each as text with its series'
labels, pivoting and checking the text in SQL (dcgm_query_range.sql, dcgm_pivot.sql,
nvsmi_check.sql) costs ~2 s a node (benchmarks/RESULTS.md). polars reads the file and
types, checks and pivots it in a fraction of that. Only a file that is plainly clean takes
this way, whole: every series of a DCGM metric gca reads names its host and GPU index by its
labels, no two series give one GPU the same measure, every value is a decimal number in its
measure's range or NaN (Xid codes whole numbers), and nothing needs what only the exact way
does (MIG instances, workload labels, clock-reason series, --host). Any other file goes the
exact way, which also decides its rejects; `tests/test_dcgm_fast.py` checks that both ways
store the same. No database I/O here (the read may run in a thread).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import polars as pl

from gpucluster_analysis.bounds import DEFAULT_MAX_GPUS_PER_NODE, MEASURE_RANGES, WINDOW_END, WINDOW_START
from gpucluster_analysis.missing_values import is_missing

# Measures the fast way types (dcgm.METRICS' values): every measure with a range, in the range
# nvsmi_check.sql accepts (bounds.py).
RANGES = MEASURE_RANGES
PROFILE = (
    "sm_active",
    "sm_occupancy",
    "tensor_active",
    "fp64_active",
    "fp32_active",
    "fp16_active",
    "dram_active",
    "pcie_tx_bytes",
    "pcie_rx_bytes",
    "nvlink_tx_bytes",
    "nvlink_rx_bytes",
)
# stage column -> measure, as gpu_sample_details and gpu_samples name them
COLUMNS = {
    "util_pct": "util",
    "mem_util_pct": "mem_util",
    "mem_used_mib": "mem_used",
    "power_w": "power",
    "temp_c": "temp",
    "sm_clock_mhz": "sm_clock",
    "gr_engine_active": "gr_engine",
    **{m: m for m in PROFILE},
}
_NUMBER = r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$"
# The fast way holds a whole file in memory (several times its size while polars reads it);
# bigger files take the exact way, which streams them under DuckDB's memory limit.
MAX_BYTES = 256 << 20
_WORKLOAD = ("exported_pod", "pod", "pod_name", "hpc_job")


@dataclass(frozen=True)
class Typed:
    """What the fast way read of a clean file: `rows`, one per GPU and time as read() says;
    `devices` (machine_id, gpu_index, uuid, pci_bus_id, model) for gpu_devices; and
    `xid_events` (line, event_at, machine_id, gpu_index, kind, detail) as dcgm_pivot.sql finds them."""

    rows: pl.DataFrame
    devices: pl.DataFrame
    xid_events: pl.DataFrame
    # of a Prometheus answer: its series and their points, every one (what the live pull records)
    series: int = 0
    points: int = 0


def read(
    path: Path, metrics: dict[str, str], fallback: str | None, max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE
) -> Typed | None:
    """A clean answer's rows, one per GPU and time (columns: machine_id, sample_at, gpu_index,
    the measures, in_samples, has_details), its devices and Xid events; or None: the exact way.

    `metrics`: lower-case metric name -> measure (dcgm.METRICS); `fallback`: the measure the
    file name gives series without __name__; `max_gpus_per_node`: the bound a GPU index stays
    below (bounds.py).
    """
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        answer = pl.read_json(path, infer_schema_length=None)
        return _typed(answer, metrics, fallback, max_gpus_per_node)
    except (pl.exceptions.PolarsError, ValueError, OSError, TypeError):
        return None


def _typed(answer: pl.DataFrame, metrics: dict[str, str], fallback: str | None, max_gpus_per_node: int) -> Typed | None:
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
    names = series.schema["metric"].fields
    keys = [f.name.lower() for f in names]
    if len(set(keys)) != len(keys) or any(f.dtype != pl.String for f in names):
        return None  # two labels one name but for case, or a label that is no string: the exact way

    def label(key: str) -> pl.Expr:
        if key not in keys:
            return pl.lit(None, dtype=pl.String)
        return pl.col("metric").struct.field(names[keys.index(key)].name)

    measure = (
        pl.when(label("__name__").is_null())
        .then(pl.lit(fallback, dtype=pl.String))
        .otherwise(label("__name__").str.to_lowercase().replace_strict(metrics, default=None, return_dtype=pl.String))
    )
    instance = label("instance").str.replace(r":[0-9]+$", "")
    labelled = series.with_row_index("series_no").select(
        "series_no",
        "values",
        measure.alias("measure"),
        pl.coalesce(label("kubernetes_node"), label("hostname"), instance).alias("host"),
        label("gpu").alias("gpu_text"),
        label("gpu_i_id").alias("instance_text"),
        label("uuid").alias("uuid"),
        label("pci_bus_id").alias("pci_text"),
        label("modelname").alias("model"),
        *[label(k).alias(k) for k in _WORKLOAD],
        label("__name__").is_null().alias("unnamed"),
    )
    if labelled.get_column("unnamed").any() and fallback is None:
        return None
    kept = labelled.filter(pl.col("measure").is_not_null())
    if kept.is_empty():
        return None
    every = (series.height, int(series.get_column("values").list.len().sum() or 0))
    points = kept.select("series_no", "values").explode("values").filter(pl.col("values").is_not_null())
    if points.get_column("values").list.len().ne(2).any():
        return None
    points = points.select(
        "series_no",
        pl.lit(None, dtype=pl.Int64).alias("line"),  # JSON has no lines (dcgm_query_range.sql)
        pl.col("values").list.get(0).cast(pl.Float64, strict=False).alias("ts"),
        pl.col("values").list.get(1).alias("text"),
    )
    typed = _checked(kept, points, max_gpus_per_node)
    return None if typed is None else dataclasses.replace(typed, series=every[0], points=every[1])


def _checked(
    kept: pl.DataFrame, points: pl.DataFrame, max_gpus_per_node: int, *, numbers_checked: bool = False
) -> Typed | None:
    """The typed rows and Xid events of a clean answer or scrape file, or None.

    `kept`: one row per series of a metric gca reads (series_no, measure, host, gpu_text,
    instance_text, uuid, pci_text, model, exported_pod, pod, pod_name, hpc_job);
    `points`: series_no, line (None in an answer), ts (epoch seconds), text (the value), in
    the order the file gives them. `numbers_checked`: every text is
    already known to match _NUMBER or be NaN. A GPU index at or past `max_gpus_per_node`, or a
    time outside the years gca reads (bounds.py), is the exact way's to reject.
    """
    if kept.is_empty() or not kept.get_column("measure").is_in([*RANGES, "xid"]).all():
        return None  # clock reasons, or no DCGM series at all: the exact way
    pod = pl.coalesce(pl.col("exported_pod"), pl.col("pod"), pl.col("pod_name"))
    clean_series = kept.select(
        pl.col("host").is_not_null()
        & (pl.col("host") != "")
        & (pl.col("host") == pl.col("host").str.strip_chars(" "))
        & pl.col("gpu_text").str.contains(r"^[0-9]{1,4}$").fill_null(False)
        & (pl.col("gpu_text").cast(pl.Int32, strict=False) < max_gpus_per_node).fill_null(False)
        & (pl.col("instance_text").is_null() | (pl.col("instance_text") == ""))
        # workload labels that name a workload: gpu_workload_labels, the exact way's
        & (pod.is_null() | (pod == "") | pod.str.to_lowercase().str.contains("dcgm-exporter", literal=True))
        & (pl.col("hpc_job").is_null() | (pl.col("hpc_job") == ""))
    ).to_series()
    if not clean_series.all():
        return None
    if kept.select("host", "gpu_text", "measure").is_duplicated().any():
        return None  # a GPU's measure twice: maybe a conflict, which the exact way tells
    # the pivot (dcgm_pivot.sql) leaves Xid series out: they name no device
    gauges = kept.filter(pl.col("measure") != "xid")
    if gauges.is_empty():
        return None
    devices = gauges.select("host", "gpu_text", "uuid", "pci_text", "model").unique()
    if devices.select("host", "gpu_text").is_duplicated().any():
        return None  # one GPU, two UUIDs (or PCI ids, models): the exact way
    devices = devices.sort("host", "gpu_text").with_row_index("device_no")
    # series in (measure, GPU) order: after one stable sort of the points, each measure's points
    # are one slice, in GPU and time order
    series = (
        kept.join(devices.select("host", "gpu_text", "device_no"), on=["host", "gpu_text"], how="left")
        .select(pl.col("series_no").cast(pl.Int64), "measure", "device_no", "host", "gpu_text")
        .sort("measure", "device_no", "series_no", nulls_last=True)
        .with_row_index("order")
    )
    if points.get_column("ts").null_count() or (points.get_column("ts") < 0).any():
        return None
    if (
        not numbers_checked
        and not points.select(
            (pl.col("text").str.to_lowercase() == "nan").or_(pl.col("text").str.contains(_NUMBER)).all()
        ).item()
    ):
        return None
    points = (
        points.select(
            pl.col("series_no").cast(pl.Int64),
            "line",
            pl.col("text").cast(pl.Float64, strict=False).alias("value"),  # "nan" (any case) -> NaN, checked above
            # make_timestamp(round(ts * 10^6)): half away from zero, as DuckDB rounds (times are >= 0)
            ((pl.col("ts") * 1_000_000 + 0.5).floor().cast(pl.Int64).cast(pl.Datetime("us"))).alias("sample_at"),
        )
        .join(series.select("series_no", "order", "device_no"), on="series_no", how="left")
        .sort("order", maintain_order=True)
    )
    if not points.select(pl.col("sample_at").is_between(WINDOW_START, WINDOW_END, closed="left").all()).item():
        return None  # a sample outside the years gca reads: the exact way rejects it
    # each series' times strictly increasing (as Prometheus answers): no time twice
    same_series = pl.col("order") == pl.col("order").shift()
    if points.select((same_series & (pl.col("sample_at") <= pl.col("sample_at").shift())).any()).item():
        return None
    # each measure's points are one slice (series are numbered in measure order)
    order = points.get_column("order")
    slices = {}
    spans = series.group_by("measure", maintain_order=True).agg(
        pl.col("order").min().alias("first"), pl.col("order").max().alias("last")
    )
    for measure, first, last in spans.iter_rows():
        start, end = order.search_sorted(first, side="left"), order.search_sorted(last, side="right")
        slices[measure] = points.slice(start, end - start)
    for measure, part in slices.items():
        if measure == "xid":
            continue
        low, high = RANGES[measure]
        values = part.get_column("value").fill_nan(None)
        if part.get_column("value").is_infinite().any() or (
            values.null_count() < len(values)
            # a Float64 column with a value in it: its min and max are floats
            and (
                (low is not None and cast(float, values.min()) < low)
                or (high is not None and cast(float, values.max()) > high)
            )
        ):
            return None
    xid = slices.pop("xid", None)
    if not slices:
        return None
    events = (
        _EMPTY_EVENTS if xid is None else _xid_events(xid.join(series.select("order", "host", "gpu_text"), on="order"))
    )
    if events is None:
        return None
    pivoted = _pivot(slices, devices)
    return None if pivoted is None else Typed(*pivoted, events)


_EMPTY_EVENTS = pl.DataFrame(
    schema={
        "line": pl.Int64,
        "event_at": pl.Datetime("us"),
        "machine_id": pl.String,
        "gpu_index": pl.Int16,
        "kind": pl.String,
        "detail": pl.String,
    }
)


def _xid_events(xid: pl.DataFrame) -> pl.DataFrame | None:
    """dcgm_pivot.sql's Xid events: where a series first shows a non-zero value or it changes."""
    code = pl.col("value")
    if not xid.select((code.is_nan() | (code == code.floor())).all()).item():
        return None  # a fractional Xid: the exact way's rounding decides its name
    previous = code.shift().over("order")  # the last finite value (a NaN changes nothing)
    return (
        xid.filter(code.is_finite())
        .filter((code != 0) & (previous.is_null() | (code != previous)))
        .select(
            pl.col("line").cast(pl.Int64),
            pl.col("sample_at").alias("event_at"),
            pl.col("host").alias("machine_id"),
            pl.col("gpu_text").cast(pl.Int16).alias("gpu_index"),
            pl.lit("xid").alias("kind"),
            (pl.lit("Xid ") + code.cast(pl.Int64).cast(pl.String)).alias("detail"),
        )
    )


def _pivot(slices: dict[str, pl.DataFrame], devices: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """One row per GPU and time with its measures side by side (one point per GPU, time and
    measure, checked above), and the gpu_devices rows. `slices`: each measure's points in GPU
    and time order."""
    keys = ["device_no", "sample_at"]
    present = sorted(slices)
    first = slices[present[0]].select(keys)
    if all(slices[m].height == first.height for m in present) and all(
        slices[m].get_column(k).equals(first.get_column(k)) for m in present[1:] for k in keys
    ):
        # every scrape has every measure of every GPU (the usual file): the slices line up
        wide = first.with_columns(
            *[slices[m].get_column("value").alias(m) for m in present],
            *[pl.lit(True).alias(f"has_{m}") for m in present],
        )
    else:
        long = pl.concat([part.select(*keys, "value", pl.lit(m).alias("measure")) for m, part in slices.items()])
        wide = long.pivot(on="measure", index=keys, values="value", aggregate_function=None, sort_columns=True)
        wide = wide.with_columns(pl.col(m).is_not_null().alias(f"has_{m}") for m in present)
    wide = wide.with_columns(pl.col(m).fill_nan(None) for m in present)
    for m in RANGES:
        if m not in present:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(m), pl.lit(False).alias(f"has_{m}"))
    # DCGM's own total, else used + free + reserved (dcgm_pivot.sql); a NaN total stays missing
    total = (
        pl.when(pl.col("has_mem_total"))
        .then(pl.col("mem_total"))
        .otherwise(pl.col("mem_used") + pl.col("mem_free") + pl.col("mem_reserved"))
    )
    profile_text = pl.any_horizontal(*[pl.col(f"has_{m}") for m in PROFILE])
    has_profile = pl.any_horizontal(*[pl.col(m).is_not_null() for m in PROFILE])
    named = devices.select(
        "device_no",
        pl.col("host").alias("machine_id"),
        pl.col("gpu_text").cast(pl.Int16).alias("gpu_index"),
        _text(pl.col("uuid")).alias("uuid"),
        pl.when(is_missing(pl.col("pci_text")))
        .then(None)
        .otherwise(pl.col("pci_text").str.strip_chars(" ").str.slice(-12).str.to_lowercase())
        .alias("pci_bus_id"),
        _text(pl.col("model")).alias("model"),
    )
    typed = (
        wide.with_columns(total.alias("mem_total_mib"))
        .join(named.select("device_no", "machine_id", "gpu_index"), on="device_no", how="left")
        .select(
            "machine_id",
            "sample_at",
            "gpu_index",
            *[pl.col(m).alias(c) for c, m in COLUMNS.items()],
            "mem_total_mib",
            # a scrape of profiling fields only has no utilization sample (nvsmi_check.sql's profile_only)
            (pl.col("has_util") | ~profile_text).alias("in_samples"),
            pl.any_horizontal(
                *[pl.col(c).is_not_null() for c in ("mem_util", "mem_used", "power", "temp", "sm_clock", "gr_engine")],
                pl.col("mem_total_mib").is_not_null(),
                has_profile,
            ).alias("has_details"),
        )
    )
    totals = typed.get_column("mem_total_mib").drop_nulls()  # floats, so its min() is one
    if not totals.is_empty() and (cast(float, totals.min()) < 0 or not totals.is_finite().all()):
        return None  # a total nvsmi_check.sql would reject
    # the devices of GPUs with a row, as nvsmi_store.sql keeps them
    sampled = named.filter(
        pl.col("device_no").is_in(wide.get_column("device_no").unique().implode())
        & (pl.col("uuid").is_not_null() | pl.col("pci_bus_id").is_not_null() | pl.col("model").is_not_null())
    ).drop("device_no")
    return typed, sampled


def _text(value: pl.Expr) -> pl.Expr:
    return pl.when(is_missing(value)).then(None).otherwise(value.str.strip_chars(" "))


# dcgm-exporter scrape files (dcgm_prom): the lines dcgm.py's exact way reads, in their plain shape.
_TIME_COMMENT = r"^#\s*(?i:time|timestamp)\s*:"
_EPOCH_COMMENT = r"^#\s*(?i:time|timestamp)\s*:\s*([0-9]+)$"
# a DCGM line up to its only `}`: `NAME{labels}` without escapes, braces or control bytes
_SERIES = r"^[A-Za-z_:][A-Za-z0-9_:]*\{[^{}\\\x00-\x1f\x7f]*$"
# ... and after it: the value alone (a sample timestamp of its own: the exact way)
_VALUE = r"^[ \t]+(?:-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|(?i:nan))[ \t\r]*$"
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"


def read_scrapes(
    path: Path,
    series_of: Callable[[str], dict[str, str | None] | None],
    max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE,
) -> Typed | None:
    """read()'s rows and events for a file of dcgm-exporter scrapes, or None: the exact way.

    Clean means, besides read()'s rules: uncompressed UTF-8 ending in a line end; every DCGM
    line `NAME{labels} VALUE` with no escape, brace or control byte in the labels and no
    timestamp of its own, under a `# time: <epoch seconds>` line; no promtool dump lines.
    `series_of(series)` gives a series' stage columns and measure as dcgm.py's exact way reads
    them (None: a metric gca does not store; ValueError: labels that do not parse).
    """
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        with path.open("rb") as f:
            head = f.read(3)
            f.seek(-1, 2)
            if f.read(1) != b"\n" or head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x1f\x8b")):
                return None
        # Split at `}`: a DCGM line's series and its value come apart without a regex over the
        # line; a line with two `}` makes polars fail, and the exact way reads the file. What
        # stands before the `}` repeats (the series, HELP and TYPE lines): read as categories
        # of this file alone, it is never a string per line, and each distinct one is looked
        # at once.
        lines = pl.read_csv(
            path,
            has_header=False,
            separator="}",
            quote_char=None,
            schema={"head": pl.Categorical(pl.Categories.random()), "value": pl.String},
            missing_columns="insert",
            raise_if_empty=False,
        )
        return _scrapes(lines, series_of, max_gpus_per_node)
    except (pl.exceptions.PolarsError, ValueError, OSError):
        return None


def _scrapes(
    lines: pl.DataFrame, series_of: Callable[[str], dict[str, str | None] | None], max_gpus_per_node: int
) -> Typed | None:
    distinct = lines.get_column("head").unique().drop_nulls()
    heads = pl.DataFrame({"code": distinct.to_physical(), "head": distinct.cast(pl.String)})
    head = pl.col("head")
    if heads.select(head.str.contains(_CONTROL).any()).item():
        return None
    is_dcgm = head.str.starts_with("DCGM") | head.str.starts_with("dcgm")
    sample_codes = heads.filter(is_dcgm).get_column("code")
    plain_codes = heads.filter(head.str.starts_with("# HELP ") | head.str.starts_with("# TYPE ")).get_column("code")
    df = lines.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line"), pl.col("head").to_physical().alias("code"), "value"
    )
    is_sample = df.select(pl.col("code").is_in(sample_codes.implode()).fill_null(False)).to_series()
    rest = df.filter(~is_sample)
    # the lines that are no plain sample: no control byte anywhere; among those that are no
    # HELP or TYPE line, no DCGM line of another case or indented, no promtool dump line, and
    # no `# time:` the plain way cannot read
    if rest.select(pl.col("value").str.contains(_CONTROL).any()).item():
        return None
    odd = rest.filter(~pl.col("code").is_in(plain_codes.implode()).fill_null(False)).join(heads, on="code", how="left")
    stripped = (
        head.fill_null("")
        + pl.when(pl.col("value").is_null()).then(pl.lit("")).otherwise(pl.lit("}") + pl.col("value"))
    ).str.strip_chars()
    odd = odd.select("line", stripped.alias("text"))
    text = pl.col("text")
    if odd.select((text.str.slice(0, 4).str.to_lowercase() == "dcgm").any() | text.str.starts_with("{").any()).item():
        return None
    times = odd.filter(text.str.contains(_TIME_COMMENT)).select(
        "line", text.str.extract(_EPOCH_COMMENT, 1).cast(pl.Int64, strict=False).alias("epoch")
    )
    if times.get_column("epoch").null_count():
        return None  # an ISO time or a time with a `}`: the exact way reads it or says why not
    samples = df.filter(is_sample)
    if samples.is_empty() or samples.get_column("value").null_count():
        return None  # a DCGM line without labels: the exact way
    # each distinct series (a few hundred a node) parsed once, by the exact way's own functions
    series = heads.filter(is_dcgm)
    if not series.select(head.str.contains(_SERIES).all()).item():
        return None
    rows = []
    for code, name in series.select("code", "head").iter_rows():
        columns = series_of(name + "}")
        if columns is not None:
            rows.append({"series_no": code, **columns})
    if not rows:
        return None
    kept = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.lit(None, dtype=pl.String).alias("exported_pod"), pl.lit(None, dtype=pl.String).alias("pod_name")
    )
    for column in ("host", "gpu_text", "instance_text", "uuid", "pci_text", "model", "pod", "hpc_job"):
        if column not in kept.columns:
            kept = kept.with_columns(pl.lit(None, dtype=pl.String).alias(column))
        kept = kept.with_columns(pl.col(column).cast(pl.String))
    samples = samples.select("line", pl.col("code").cast(pl.Int64).alias("series_no"), "value")
    stored = pl.col("series_no").is_in(kept.get_column("series_no").cast(pl.Int64).implode())
    # a stored series' value is a number; any other DCGM line only has the plain shape
    shape = (
        pl.when(stored)
        .then(pl.col("value").str.contains(_VALUE))
        .otherwise(pl.col("value").str.contains(r"^[ \t]+[^ \t\r\x00-\x1f\x7f]+[ \t\r]*$"))
    )
    if not samples.select(shape.all()).item():
        return None
    # each sample under the last `# time:` line above it
    above = times.get_column("line").search_sorted(samples.get_column("line"), side="right").cast(pl.Int64) - 1
    if times.is_empty() or (above < 0).any():
        return None  # a sample before any `# time:` line: the exact way times it or says why not
    points = (
        samples.with_columns(times.get_column("epoch").cast(pl.Float64).gather(above).alias("ts"))
        .filter(stored)
        .select(
            "series_no", pl.col("line").cast(pl.Int64), "ts", pl.col("value").str.strip_chars(" \t\r").alias("text")
        )
    )
    return _checked(kept, points, max_gpus_per_node, numbers_checked=True)
