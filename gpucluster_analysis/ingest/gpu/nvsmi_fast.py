"""Typed staging of ordinary nvidia-smi --query-gpu CSV rows, vectorized in polars.

A day of 1,000 GPUs is millions of rows of the same shape (`2026/07/14 08:12:38.696, 0,
GPU-..., 00000000:18:00.0, 26 %, 81559 MiB, ...`). Splitting and typing them in SQL costs
~7 µs a row (benchmarks/RESULTS.md); polars does it ten times faster. Only rows whose
every value is plainly valid take this path: each value a number of the field's own unit
(in range) or a missing spelling, the time in one of nvidia-smi's forms with valid
digits, an index. Any other row (a value to reject, a lost GPU, an odd time) is staged as
text and goes through `sql/ingest/nvsmi_lines.sql` and `nvsmi_check.sql` as before, so
a row stores the same values and a reject gets the same reason whichever path it took:
`tests/test_nvsmi_fast.py` checks both paths agree, row by row. Times are converted to UTC
here only where one offset holds for a whole batch (always in UTC; in a zone with summer
time, every batch but those around a change of clocks); near a change, the exact way
reads the clock as `nvsmi_check.sql` does.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timedelta
from typing import Any, cast

import numpy as np
import polars as pl
import pyarrow as pa

from gpucluster_analysis.bounds import MEASURE_RANGES, WINDOW_END, WINDOW_START
from gpucluster_analysis.missing_values import MISSING_PATTERN, is_missing

# stage_fast's columns: what nvsmi_store.sql stores of a clean row (all of it is valid).
FAST_COLUMNS = {
    "line": pl.Int64,
    "machine_id": pl.String,
    "sample_at": pl.Datetime("us"),
    "gpu_index": pl.Int16,
    "uuid": pl.String,
    "pci_bus_id": pl.String,
    "model": pl.String,
    "util_pct": pl.Float64,
    "mem_util_pct": pl.Float64,
    "mem_used_mib": pl.Float64,
    "mem_total_mib": pl.Float64,
    "power_w": pl.Float64,
    "temp_c": pl.Float64,
    "sm_clock_mhz": pl.Float64,
}
_SQL_TYPES = {
    pl.Int64: "BIGINT",
    pl.String: "VARCHAR",
    pl.Datetime("us"): "TIMESTAMP",
    pl.Int16: "SMALLINT",
    pl.Float64: "DOUBLE",
}
# the same columns as a DuckDB table's, for the staging table of a log streamed chunk by chunk
FAST_TABLE_COLUMNS = "(" + ", ".join(f"{name} {_SQL_TYPES[kind]}" for name, kind in FAST_COLUMNS.items()) + ")"

# position column of the block layout -> (stage column, units the field may carry, measure:
# its range in bounds.MEASURE_RANGES)
_MEASURES: dict[str, tuple[str, str, str]] = {
    "p_util": ("util_pct", "%", "util"),
    "p_mem_util": ("mem_util_pct", "%", "mem_util"),
    "p_mem_used": ("mem_used_mib", "MiB|MB", "mem_used"),
    "p_mem_total": ("mem_total_mib", "MiB|MB", "mem_total"),
    "p_power": ("power_w", "W", "power"),
    "p_temp": ("temp_c", "C", "temp"),
    "p_sm_clock": ("sm_clock_mhz", "MHz", "sm_clock"),
}
_TEXTS = {"p_uuid": "uuid", "p_model": "model"}

# nvidia-smi's time forms as nvsmi_lines.sql's strptime formats read them, with digits that
# make a real clock time (a leap second `:60` or hour 24 goes the exact way, and is rejected)
_TIME = r" *\d{4}(?:/\d{2}/\d{2}|-\d{2}-\d{2}) (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,6})? *"
_INDEX = r" *\d{1,4} *"
# gpu_lost in nvsmi_check.sql: an event, so such rows go the exact way
_LOST = r"\[GPU is lost\]|\[GPU requires reset\]"


def eligible(layout: dict[str, Any], *, dmon: bool) -> bool:
    """Whether a block's rows may take the fast path: a CSV block with times and GPU indices
    and no clock-reason fields (those stay with the SQL path, which knows their forms)."""
    return (
        not dmon
        and layout["p_time"] is not None
        and layout["p_index"] is not None
        and layout["p_throttle_mask"] is None
        and not layout["reason_pos"]
    )


def line_pattern(layout: dict[str, Any]) -> str:
    """One regex a clean line of this block matches: the time and index in their forms, each
    measure a number of its unit or a missing spelling, any other field free text."""
    forms = ["[^,]*"] * layout["n_fields"]
    forms[layout["p_time"] - 1] = _TIME
    forms[layout["p_index"] - 1] = _INDEX
    for position, (_, units, _) in _MEASURES.items():
        if layout[position] is not None:
            forms[layout[position] - 1] = rf" *(?:\d+(?:\.\d+)?(?: (?:{units}))?|{MISSING_PATTERN}) *"
    return "^" + ",".join(forms) + "$"


def constant_offset(periods: list[tuple[datetime, int]], first: datetime, last: datetime) -> int | None:
    """The UTC offset (seconds) of every local time in [first, last], or None when the clocks
    change in or near it. `periods`: timezones.local_periods(zone), (local start, offset).

    Exactly when nvsmi_check.sql would read each time of the range with that one offset and
    find none skipped or repeated: the range lies in one period and ends before the clock
    change that closes it, counted from the change minus the hour skipped or repeated.
    """
    starts = [start for start, _ in periods]
    at = bisect_right(starts, first.replace(second=0, microsecond=0)) - 1
    if at < 0:
        return None
    offset = periods[at][1]
    if at + 1 < len(periods):
        next_start, next_offset = periods[at + 1]
        if last >= next_start - timedelta(seconds=abs(next_offset - offset)):
            return None
    return offset


def split_clean(
    texts: pa.Array,
    lines: np.ndarray,
    layout: dict[str, Any],
    host: str,
    periods: list[tuple[datetime, int]],
    max_gpus_per_node: int,
) -> tuple[pl.DataFrame, np.ndarray]:
    """(the typed stage_fast rows of the clean lines, a numpy mask of the other lines).

    `texts` are stripped data lines of the block with exactly its field count (the reader's
    plain rows), `lines` their numbers; `periods` the site zone's (timezones.local_periods);
    `max_gpus_per_node` the bound a GPU index stays below (bounds.py).
    """
    n = layout["n_fields"]
    text = pl.Series("text", pl.from_arrow(texts), dtype=pl.String)
    clean = (text.str.contains(line_pattern(layout)) & ~text.str.contains(_LOST)).fill_null(False)
    frame = pl.DataFrame({"line": pl.Series(lines, dtype=pl.Int64), "text": text}).filter(clean)

    def field(position: str) -> pl.Expr:
        return pl.col("fields").struct.field(f"field_{layout[position] - 1}").str.strip_chars(" ")

    values: list[pl.Expr] = [
        pl.col("line"),
        pl.lit(host, dtype=pl.String).alias("machine_id"),
        field("p_time")
        .str.replace_all("-", "/", literal=True)
        .str.strptime(pl.Datetime("us"), "%Y/%m/%d %H:%M:%S%.f", strict=False)
        .alias("local_at"),
        field("p_index").cast(pl.Int16).alias("gpu_index"),
    ]
    for position, column in _TEXTS.items():
        if layout[position] is None:
            values.append(pl.lit(None, dtype=pl.String).alias(column))
        else:
            values.append(pl.when(is_missing(field(position))).then(None).otherwise(field(position)).alias(column))
    if layout["p_pci"] is None:
        values.append(pl.lit(None, dtype=pl.String).alias("pci_bus_id"))
    else:  # gpu_pci(): lower case, last 12 characters
        values.append(
            pl.when(is_missing(field("p_pci")))
            .then(None)
            .otherwise(field("p_pci").str.slice(-12).str.to_lowercase())
            .alias("pci_bus_id")
        )
    out_of_range = []
    for position, (column, units, measure) in _MEASURES.items():
        if layout[position] is None:
            values.append(pl.lit(None, dtype=pl.Float64).alias(column))
            continue
        number = field(position)
        for unit in units.split("|"):
            number = number.str.strip_suffix(f" {unit}")
        # the line's pattern let through only numbers and missing spellings: a failed cast is missing
        values.append(number.cast(pl.Float64, strict=False).alias(column))
        low, high = MEASURE_RANGES[measure]
        if low is not None:  # (the line's pattern lets no sign through: never below 0)
            out_of_range.append(pl.col(column) < low)
        if high is not None:
            out_of_range.append(pl.col(column) > high)
    typed = (
        frame.lazy().with_columns(pl.col("text").str.split_exact(",", n - 1).alias("fields")).select(values).collect()
    )
    # a time the pattern let through that strptime still refuses (30 February), a value out
    # of range, a time outside the years gca reads or an index at or past the bound of GPUs per
    # node (bounds.py, as nvsmi_check.sql holds them) goes the exact way, which rejects it with
    # its reason
    good = (
        typed["local_at"].is_not_null()
        & (typed["local_at"] >= WINDOW_START)
        & (typed["local_at"] < WINDOW_END)
        & (typed["gpu_index"] < max_gpus_per_node)
    ).fill_null(False)
    if out_of_range:
        good = good & ~typed.select(pl.any_horizontal(out_of_range).fill_null(False)).to_series()
    mask = clean.to_numpy().copy()
    if not good.all():
        mask[np.flatnonzero(mask)[~good.to_numpy()]] = False
        typed = typed.filter(good)
    # with rows left, each with a local time, their min and max are datetimes
    offset = (
        constant_offset(periods, cast(datetime, typed["local_at"].min()), cast(datetime, typed["local_at"].max()))
        if typed.height
        else 0
    )
    if offset is None:  # the clocks change in this batch: all of it the exact way
        return typed.clear().drop("local_at").with_columns(sample_at=pl.lit(None, dtype=pl.Datetime("us"))).cast(
            FAST_COLUMNS  # type: ignore[arg-type]  # polars' stubs: cast()'s keys wider than str
        ), np.ones(len(mask), dtype=bool)
    typed = typed.with_columns(sample_at=pl.col("local_at") - pl.duration(seconds=offset)).drop("local_at")
    return typed.select(list(FAST_COLUMNS)).cast(FAST_COLUMNS), ~mask  # type: ignore[arg-type]  # polars' stubs: cast()'s keys wider than str


def concat(frames: list[pl.DataFrame]) -> pa.Table:
    """The typed rows of a whole log, as one Arrow table for DuckDB to read in place."""
    return pl.concat(frames, rechunk=False).to_arrow()
