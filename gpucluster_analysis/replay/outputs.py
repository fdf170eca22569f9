"""What the replay says of a cluster beside the jobs' waits, as tables: one row per source
(size, load, idle machines), one per VC and per-user cap (quotas), and the load over time.

Pure: numpy and polars over a replayed Timeline, no store.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import polars as pl
from polars.datatypes import DataTypeClass

from gpucluster_analysis.replay.rules import LocalityRule
from gpucluster_analysis.replay.timeline import QUOTA_QUANTILE, Steps, Timeline, integral_at, weighted_quantile

TIMELINE_MAX_BINS = 1500
_BIN_WIDTHS_S = (60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400, 28 * 86400)


def cluster_row(
    source: str, tl: Timeline, weights: np.ndarray, rule: LocalityRule, mach_df: pl.DataFrame, hold_df: pl.DataFrame
) -> pl.DataFrame:
    """One row: the cluster's size, how it was known, and its time-weighted load over `weights`."""
    span = float(weights.sum())

    def mean(values: np.ndarray) -> float | None:  # time-weighted over the trace
        return float((values * weights).sum() / span) if span > 0 else None

    idle_any = float(weights[tl.idle_machines > 0].sum() / span * 100) if span > 0 and tl.placement_known else None
    known = hold_df.filter(pl.col("gpus").is_not_null())
    gpu_s = (known.get_column("end_s") - known.get_column("start_s")) * known.get_column("gpus")
    placed_s = float(gpu_s.filter(known.get_column("machine_id").is_not_null()).sum() or 0.0)
    total_s = float(gpu_s.sum() or 0.0)
    return pl.DataFrame(
        [
            {
                "source": source,
                "machines": tl.machines,
                "capacity_gpus": tl.capacity,
                "capacity_basis": tl.capacity_basis,
                "largest_machine_gpus": tl.largest_machine if tl.placement_known else None,
                "placement_known": tl.placement_known,
                "placed_gpu_time_pct": placed_s / total_s * 100 if total_s > 0 else None,
                "attempts_unknown_gpus": hold_df.filter(pl.col("gpus").is_null())
                .select("job_id", "attempt_no")
                .unique()
                .height,
                "locality_rule": rule.describe(),
                "mean_held_gpus": mean(tl.held),
                "mean_load_pct": (mean(tl.held) or 0.0) / tl.capacity * 100 if tl.capacity > 0 and span > 0 else None,
                "mean_free_gpus": mean(tl.free),
                "mean_idle_machines": mean(tl.idle_machines) if tl.placement_known else None,
                "time_with_idle_machine_pct": idle_any,
                "listed_machines": int(mach_df.get_column("listed_gpus").is_not_null().sum()),
            }
        ]
    )


def quota_rows(
    source: str,
    vcs: list[str],
    quota: dict[int, float | None],
    origin: dict[int, str],
    usage: dict[int, Steps],
    weights: np.ndarray,
    limits: pl.DataFrame,
) -> pl.DataFrame:
    """One row per VC (kind vc: its quota, held GPUs beside it), then one per per-user cap
    sacctmgr gave (kind user: a user in an account; qos_user: each user in a QOS)."""
    span = float(weights.sum())
    rows = [
        {
            "source": source,
            "vc": vc,
            "quota_gpus": quota[c],
            "origin": origin[c],
            "peak_held_gpus": float(usage[c].values.max()) if usage[c].values.size else 0.0,
            # the dense product, summed as before (one VC's grid at a time: memory of one grid)
            "mean_held_gpus": float((usage[c].dense() * weights).sum() / span) if span > 0 else None,
            "p95_held_gpus": weighted_quantile(usage[c].values, usage[c].weights(weights), QUOTA_QUANTILE),
            "kind": "vc",
            "user": None,
            "qos": None,
        }
        for c, vc in enumerate(vcs)
    ]
    caps = limits.filter(pl.col("kind").is_in(["user", "qos_user"]) & pl.col("gpus").is_not_null())
    rows += [
        {
            "source": source,
            "vc": x["vc"],
            "quota_gpus": x["gpus"],
            "origin": "sacctmgr",
            "peak_held_gpus": None,
            "mean_held_gpus": None,
            "p95_held_gpus": None,
            "kind": x["kind"],
            "user": x["user_name"],
            "qos": x["qos"],
        }
        for x in caps.iter_rows(named=True)
    ]
    schema = {
        "source": pl.Utf8,
        "vc": pl.Utf8,
        "quota_gpus": pl.Float64,
        "origin": pl.Utf8,
        "peak_held_gpus": pl.Float64,
        "mean_held_gpus": pl.Float64,
        "p95_held_gpus": pl.Float64,
        "kind": pl.Utf8,
        "user": pl.Utf8,
        "qos": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)


def epoch_bounds(period: tuple[datetime | None, datetime | None]) -> tuple[float | None, float | None]:
    """A period of naive UTC datetimes as epoch seconds (None stays open)."""
    return tuple(None if t is None else t.replace(tzinfo=UTC).timestamp() for t in period)  # type: ignore[return-value]  # two in, two out


def timeline_bins(source: str, tl: Timeline, period: tuple[float | None, float | None] = (None, None)) -> pl.DataFrame:
    """Time-weighted means per bin of at most TIMELINE_MAX_BINS bins over the trace (or the period)."""
    first, last = (tl.T[1], tl.T[-1]) if tl.n > 1 else (tl.T[0], tl.T[0])
    first = first if period[0] is None else max(first, period[0])
    last = last if period[1] is None else min(last, period[1])
    span = last - first
    schema: dict[str, pl.DataType | DataTypeClass] = {
        "source": pl.Utf8,
        "bin_start": pl.Datetime("us"),
        "bin_s": pl.Int64,
        "free_gpus": pl.Float64,
        "held_gpus": pl.Float64,
        "idle_machines": pl.Float64,
        "capacity_gpus": pl.Float64,
    }
    if span <= 0:
        return pl.DataFrame(schema=schema)
    width = next((w for w in _BIN_WIDTHS_S if span / w <= TIMELINE_MAX_BINS), _BIN_WIDTHS_S[-1])
    edges = np.arange(np.floor(first / width) * width, last + width, width)
    edges = np.clip(edges, first, last)
    lengths = np.diff(edges)
    keep = lengths > 0

    def means(values: np.ndarray) -> np.ndarray:
        total = integral_at(tl.T, values, edges)
        return np.diff(total)[keep] / lengths[keep]

    starts = edges[:-1][keep]
    return pl.DataFrame(
        {
            "source": [source] * int(keep.sum()),
            "bin_start": [datetime.fromtimestamp(float(s), UTC).replace(tzinfo=None) for s in starts],
            "bin_s": np.full(int(keep.sum()), width, dtype=np.int64),
            "free_gpus": means(tl.free),
            "held_gpus": means(tl.held),
            "idle_machines": means(tl.idle_machines) if tl.placement_known else np.full(int(keep.sum()), np.nan),
            "capacity_gpus": np.full(int(keep.sum()), tl.capacity),
        },
        schema=schema,
    ).with_columns(pl.col("idle_machines").fill_nan(None))
