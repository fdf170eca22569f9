"""Which machines (and GPUs) run the same work slower: speed relative to the same job families
elsewhere, after PAL (SC'24), and what spreading a job costs in real speed.

Pure functions over polars frames (the report's named queries attempt_speeds and
attempt_machines); nothing here touches the store.

* A job family is the same user, job name and GPU count (no job name, as in Philly: same
  user and GPU count), and the same speed metric: only like is compared with like.
* An attempt's speed is per GPU (`speed_gpu`). On machine m, each attempt of family f is
  compared with the median speed of f's attempts that did NOT touch m (at least
  MIN_REFERENCE of them): ratio = speed / that median. A machine's relative speed is the
  median of its attempts' ratios (1.0 = as fast as the same families elsewhere, 0.8 = 20%
  slower), with a distribution-free 95% interval for that median (binomial order
  statistics: no resampling, the same bytes every run). A GPU's is the median of the ratios
  of the attempts that used it (the reference excludes its whole machine).
* Flags: `slow` only where the interval lies wholly below SLOW_BELOW (0.95: 5% slower than
  elsewhere) and the machine ran at least MIN_JOBS jobs; `fast` where it lies wholly above
  1 / SLOW_BELOW; else `ok`. Speed classes, after PAL's binning of GPUs by performance:
  A (relative speed >= 0.97), B (0.90 to 0.97), C (below 0.90), for machines with at least
  MIN_JOBS jobs.
* Locality: per family with both packed (one server) and spread attempts, the ratio of the
  spread attempts' median speed to the packed ones'; over families, their median and a
  Wilcoxon signed-rank test of the log ratios against 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

SLOW_BELOW = 0.95
MIN_JOBS = 5
MIN_REFERENCE = 2
CONFIDENCE = 0.95
CLASS_BOUNDS = ((0.97, "A"), (0.90, "B"))  # at least this relative speed -> class; else "C"

MACHINE_COLUMNS = {
    "machine_id": pl.Utf8, "jobs": pl.Int64, "families": pl.Int64, "attempts": pl.Int64,
    "relative_speed": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "flag": pl.Utf8,
    "speed_class": pl.Utf8,
}


def median_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free interval for the median of `values`: order statistics x_(k), x_(n-k+1)
    with k the largest integer such that P(Binomial(n, 1/2) <= k - 1) <= (1 - confidence) / 2."""
    from scipy import stats  # deferred: slow to import

    x = np.sort(values)
    n = len(x)
    if n == 0:
        return math.nan, math.nan
    k = int(stats.binom.ppf((1 - confidence) / 2, n, 0.5))
    if k < 1:
        return float(x[0]), float(x[-1])
    return float(x[k - 1]), float(x[n - k])


def _median_without(sorted_values: np.ndarray, removed: np.ndarray) -> float | None:
    """Median of `sorted_values` without the elements at the sorted positions `removed`."""
    n, k = len(sorted_values), len(removed)
    rest = n - k
    if rest < MIN_REFERENCE:
        return None

    def at_rank(t: int) -> float:
        # the kept element of rank t sits at the smallest fixed point of x = t + #removed <= x
        # (iterating from t climbs to it; it is never a removed position)
        x = t
        while (nxt := t + int(np.searchsorted(removed, x, side="right"))) != x:
            x = nxt
        return float(sorted_values[x])

    if rest % 2:
        return at_rank(rest // 2)
    return (at_rank(rest // 2 - 1) + at_rank(rest // 2)) / 2


def attempt_ratios(attempts: pl.DataFrame, attempt_machines: pl.DataFrame) -> pl.DataFrame:
    """Per (attempt, machine) it ran on: its speed per GPU over its family's median elsewhere.

    `attempts`: source, job_id, attempt_no, family, speed_gpu; `attempt_machines`: source,
    job_id, attempt_no, machine_id, gpu_index. Output: source, job_id, attempt_no, family,
    machine_id, ratio (rows without a reference left out).
    """
    keys = ["source", "job_id", "attempt_no"]
    speeds = attempts.filter(pl.col("speed_gpu").is_not_null() & (pl.col("speed_gpu") > 0)).select(
        *keys, "family", "speed_gpu")
    placed = attempt_machines.select(*keys, "machine_id").unique().join(speeds, on=keys)
    if placed.is_empty():
        return pl.DataFrame(schema={**{k: pl.Utf8 for k in ("source", "job_id")}, "attempt_no": pl.Int64,
                                    "family": pl.Utf8, "machine_id": pl.Utf8, "ratio": pl.Float64})
    # per family: its speeds sorted once, and each attempt's position among them
    ranked = speeds.sort("family", "speed_gpu", *keys).with_columns(
        pl.int_range(pl.len()).over("family").alias("position"))
    family_values = {f: g.get_column("speed_gpu").to_numpy() for (f,), g in ranked.group_by("family", maintain_order=True)}
    placed = placed.join(ranked.select(*keys, "position"), on=keys).sort("source", "family", "machine_id", "position")
    out_rows: list[pl.DataFrame] = []
    for (source, family, machine), group in placed.group_by("source", "family", "machine_id", maintain_order=True):
        reference = _median_without(family_values[family], np.unique(group.get_column("position").to_numpy()))
        if reference is None or reference <= 0:
            continue
        out_rows.append(group.select(*keys, "family", "machine_id",
                                     (pl.col("speed_gpu") / reference).alias("ratio")))
    return pl.concat(out_rows) if out_rows else placed.head(0).select(*keys, "family", "machine_id",
                                                                         pl.lit(None, pl.Float64).alias("ratio"))


def relative_speed(ratios: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per `by` group (machine_id, or machine_id and gpu_index): jobs, families, attempts,
    relative_speed (median ratio), its interval, flag and speed class."""
    rows = []
    for key, group in ratios.group_by(by, maintain_order=True):
        values = group.get_column("ratio").to_numpy()
        low, high = median_interval(values)
        jobs = group.select("source", "job_id").n_unique()
        median = float(np.median(values))
        flag = "ok"
        if jobs >= MIN_JOBS and high < SLOW_BELOW:
            flag = "slow"
        elif jobs >= MIN_JOBS and low > 1 / SLOW_BELOW:
            flag = "fast"
        speed_class = None
        if jobs >= MIN_JOBS:
            speed_class = next((name for bound, name in CLASS_BOUNDS if median >= bound), "C")
        rows.append({**dict(zip(by, key, strict=True)), "jobs": jobs, "families": group.get_column("family").n_unique(),
                     "attempts": len(values), "relative_speed": median, "ci_low": low, "ci_high": high, "flag": flag,
                     "speed_class": speed_class})
    schema = {**{b: (pl.Int64 if b == "gpu_index" else pl.Utf8) for b in by},
              **{k: v for k, v in MACHINE_COLUMNS.items() if k != "machine_id"}}
    return pl.DataFrame(rows, schema=schema).sort("relative_speed", *by)


@dataclass(frozen=True)
class LocalityCost:
    families: int  # families with both packed and spread attempts
    median_ratio: float | None  # spread speed / packed speed, median over those families
    p_value: float | None  # Wilcoxon signed-rank of the log ratios against 0
    statistic: float | None
    per_family: pl.DataFrame  # family, packed, spread (attempts), packed_median, spread_median, ratio


def locality_cost(attempts: pl.DataFrame) -> LocalityCost:
    """What spreading costs in speed per GPU, family by family."""
    from scipy import stats  # deferred: slow to import

    usable = attempts.filter(pl.col("speed_gpu").is_not_null() & (pl.col("speed_gpu") > 0)
                             & pl.col("placement").is_not_null())
    per = (usable.group_by("family", "placement").agg(pl.len().alias("n"), pl.col("speed_gpu").median().alias("median"))
           .pivot(on="placement", index="family", values=["n", "median"]) if not usable.is_empty() else pl.DataFrame())
    needed = {"n_packed", "n_spread", "median_packed", "median_spread"}
    if per.is_empty() or not needed <= set(per.columns):
        empty = pl.DataFrame(schema={"family": pl.Utf8, "packed": pl.Int64, "spread": pl.Int64,
                                     "packed_median": pl.Float64, "spread_median": pl.Float64, "ratio": pl.Float64})
        return LocalityCost(0, None, None, None, empty)
    both = (per.filter(pl.col("n_packed").is_not_null() & pl.col("n_spread").is_not_null())
            .select("family", pl.col("n_packed").cast(pl.Int64).alias("packed"), pl.col("n_spread").cast(pl.Int64).alias("spread"),
                    pl.col("median_packed").alias("packed_median"), pl.col("median_spread").alias("spread_median"))
            .with_columns((pl.col("spread_median") / pl.col("packed_median")).alias("ratio")).sort("family"))
    if both.is_empty():
        return LocalityCost(0, None, None, None, both)
    logs = np.log(both.get_column("ratio").to_numpy())
    p = statistic = None
    if len(logs) >= MIN_JOBS and np.ptp(logs) > 0:
        res = stats.wilcoxon(logs)
        p, statistic = float(res.pvalue), float(res.statistic)
    return LocalityCost(both.height, float(np.exp(np.median(logs))), p, statistic, both)
