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
    "machine_id": pl.Utf8,
    "jobs": pl.Int64,
    "families": pl.Int64,
    "attempts": pl.Int64,
    "relative_speed": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "flag": pl.Utf8,
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


def _medians_without(
    values: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    removed: np.ndarray,
    removed_starts: np.ndarray,
    removed_sizes: np.ndarray,
) -> np.ndarray:
    """_median_without for many groups at once (NaN where fewer than MIN_REFERENCE remain).

    Group g takes its values from values[starts[g]:starts[g] + sizes[g]] (sorted) and removes
    the sorted positions removed[removed_starts[g]:...+removed_sizes[g]]. The kept element of
    rank t sits at the fixed point x = t + #(removed <= x), reached by iterating from x = t,
    for all groups together (at most one step per removed position).
    """
    rest = sizes - removed_sizes
    ok = rest >= MIN_REFERENCE
    span = int(sizes.max(initial=0)) + 1
    group = np.repeat(np.arange(len(sizes)), removed_sizes)
    keys = group * span + removed  # sorted: groups in order, positions sorted within each
    result = np.full(len(sizes), np.nan)

    def at_rank(t: np.ndarray) -> np.ndarray:
        x = t.copy()
        while True:
            below = np.searchsorted(keys, np.arange(len(sizes)) * span + x, side="right") - removed_starts
            nxt = t + below
            if np.array_equal(nxt, x):
                return values[starts + np.minimum(x, sizes - 1)]
            x = nxt

    half = np.where(ok, rest // 2, 0)
    odd = rest % 2 == 1
    upper = at_rank(half)
    lower = at_rank(np.where(odd, half, np.maximum(half - 1, 0)))
    result[ok] = np.where(odd, upper, (lower + upper) / 2)[ok]
    return result


def attempt_ratios(attempts: pl.DataFrame, attempt_machines: pl.DataFrame) -> pl.DataFrame:
    """Per (attempt, machine) it ran on: its speed per GPU over its family's median elsewhere.

    `attempts`: source, job_id, attempt_no, family, speed_gpu; `attempt_machines`: source,
    job_id, attempt_no, machine_id, gpu_index. Output: source, job_id, attempt_no, family,
    machine_id, ratio (rows without a reference left out), sorted by source, family, machine
    and the attempt's rank in its family. Vectorized: a busy site has 10^5 (family, machine)
    groups, too many for a Python loop.
    """
    keys = ["source", "job_id", "attempt_no"]
    out_columns = [*keys, "family", "machine_id", "ratio"]
    speeds = attempts.filter(pl.col("speed_gpu").is_not_null() & (pl.col("speed_gpu") > 0)).select(
        *keys, "family", "speed_gpu"
    )
    placed = attempt_machines.select(*keys, "machine_id").unique().join(speeds, on=keys)
    if placed.is_empty():
        return pl.DataFrame(
            schema={
                **{k: pl.Utf8 for k in ("source", "job_id")},
                "attempt_no": pl.Int64,
                "family": pl.Utf8,
                "machine_id": pl.Utf8,
                "ratio": pl.Float64,
            }
        )
    # per family: its speeds sorted once, and each attempt's position among them
    ranked = speeds.sort("family", "speed_gpu", *keys).with_columns(
        pl.int_range(pl.len()).over("family").alias("position")
    )
    families = (
        ranked.group_by("family", maintain_order=True)
        .agg(pl.len().alias("size"))
        .with_columns((pl.col("size").cum_sum() - pl.col("size")).alias("start"))
    )
    values = ranked.get_column("speed_gpu").to_numpy()
    placed = placed.join(ranked.select(*keys, "position"), on=keys).sort("source", "family", "machine_id", "position")
    group_id = pl.struct("source", "family", "machine_id").rank("dense").cast(pl.Int64) - 1
    placed = placed.with_columns(group_id.alias("group"))
    removed = placed.select("group", "position").unique().sort("group", "position")
    groups = (
        placed.group_by("group")
        .agg(pl.col("family").first())
        .sort("group")
        .join(families, on="family", how="left")
        .join(removed.group_by("group").agg(pl.len().alias("removed_size")), on="group", how="left")
        .sort("group")
        .with_columns((pl.col("removed_size").cum_sum() - pl.col("removed_size")).alias("removed_start"))
    )
    reference = _medians_without(
        values,
        groups.get_column("start").to_numpy(),
        groups.get_column("size").to_numpy(),
        removed.get_column("position").to_numpy(),
        groups.get_column("removed_start").to_numpy(),
        groups.get_column("removed_size").to_numpy(),
    )
    return (
        placed.join(groups.select("group", pl.Series("reference", reference)), on="group")
        .filter(pl.col("reference").is_not_nan() & (pl.col("reference") > 0))
        .sort("group", "position")
        .select(*keys, "family", "machine_id", (pl.col("speed_gpu") / pl.col("reference")).alias("ratio"))
        .select(out_columns)
    )


def _binomial_ranks(n: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """median_interval's k for each count n."""
    from scipy import stats  # deferred: slow to import

    return stats.binom.ppf((1 - confidence) / 2, n, 0.5).astype(np.int64)


def relative_speed(ratios: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per `by` group (machine_id, or machine_id and gpu_index): jobs, families, attempts,
    relative_speed (median ratio), its interval, flag and speed class."""
    schema = {
        **{b: (pl.Int64 if b == "gpu_index" else pl.Utf8) for b in by},
        **{k: v for k, v in MACHINE_COLUMNS.items() if k != "machine_id"},
    }
    if ratios.is_empty():
        return pl.DataFrame(schema=schema)
    grouped = ratios.group_by(by).agg(
        pl.struct("source", "job_id").n_unique().alias("jobs"),
        pl.col("family").n_unique().alias("families"),
        pl.len().alias("attempts"),
        pl.col("ratio").sort().alias("sorted"),
    )
    n = grouped.get_column("attempts").to_numpy()
    k = _binomial_ranks(n)
    low_at, high_at = np.where(k < 1, 0, k - 1), np.where(k < 1, n - 1, n - k)
    judged = grouped.with_columns(pl.Series("low_at", low_at), pl.Series("high_at", high_at)).with_columns(
        # np.median's: the middle value, or the mean of the two middle ones
        (
            (
                pl.col("sorted").list.get((pl.col("attempts") - 1) // 2)
                + pl.col("sorted").list.get(pl.col("attempts") // 2)
            )
            / 2
        ).alias("relative_speed"),
        pl.col("sorted").list.get(pl.col("low_at")).alias("ci_low"),
        pl.col("sorted").list.get(pl.col("high_at")).alias("ci_high"),
    )
    enough = pl.col("jobs") >= MIN_JOBS
    classes = pl.when(pl.col("relative_speed") >= CLASS_BOUNDS[0][0]).then(pl.lit(CLASS_BOUNDS[0][1]))
    for bound, name in CLASS_BOUNDS[1:]:
        classes = classes.when(pl.col("relative_speed") >= bound).then(pl.lit(name))  # type: ignore[assignment]  # polars: Then, then ChainedThen
    judged = judged.with_columns(
        pl.when(enough & (pl.col("ci_high") < SLOW_BELOW))
        .then(pl.lit("slow"))
        .when(enough & (pl.col("ci_low") > 1 / SLOW_BELOW))
        .then(pl.lit("fast"))
        .otherwise(pl.lit("ok"))
        .alias("flag"),
        pl.when(enough).then(classes.otherwise(pl.lit("C"))).alias("speed_class"),
    )
    return judged.select(list(schema)).cast(schema).sort("relative_speed", *by)  # type: ignore[arg-type]  # polars' stubs: cast()'s keys wider than str


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

    usable = attempts.filter(
        pl.col("speed_gpu").is_not_null() & (pl.col("speed_gpu") > 0) & pl.col("placement").is_not_null()
    )
    per = (
        usable.group_by("family", "placement")
        .agg(pl.len().alias("n"), pl.col("speed_gpu").median().alias("median"))
        .pivot(on="placement", index="family", values=["n", "median"])
        if not usable.is_empty()
        else pl.DataFrame()
    )
    needed = {"n_packed", "n_spread", "median_packed", "median_spread"}
    if per.is_empty() or not needed <= set(per.columns):
        empty = pl.DataFrame(
            schema={
                "family": pl.Utf8,
                "packed": pl.Int64,
                "spread": pl.Int64,
                "packed_median": pl.Float64,
                "spread_median": pl.Float64,
                "ratio": pl.Float64,
            }
        )
        return LocalityCost(0, None, None, None, empty)
    both = (
        per.filter(pl.col("n_packed").is_not_null() & pl.col("n_spread").is_not_null())
        .select(
            "family",
            pl.col("n_packed").cast(pl.Int64).alias("packed"),
            pl.col("n_spread").cast(pl.Int64).alias("spread"),
            pl.col("median_packed").alias("packed_median"),
            pl.col("median_spread").alias("spread_median"),
        )
        .with_columns((pl.col("spread_median") / pl.col("packed_median")).alias("ratio"))
        .sort("family")
    )
    if both.is_empty():
        return LocalityCost(0, None, None, None, both)
    logs = np.log(both.get_column("ratio").to_numpy())
    p = statistic = None
    if len(logs) >= MIN_JOBS and np.ptp(logs) > 0:
        res = stats.wilcoxon(logs)
        p, statistic = float(res.pvalue), float(res.statistic)
    return LocalityCost(both.height, float(np.exp(np.median(logs))), p, statistic, both)
