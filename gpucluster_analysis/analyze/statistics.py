"""Small, pure transforms behind the report's sentences: statistics and summaries.

Inputs are the (already aggregated) polars DataFrames of the named queries; nothing here
touches DuckDB, files or plotly. The significance tests run on one row per job, never on
per-sample rows: samples of one job are not independent, and there are far too many.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

ALPHA = 0.05
MIN_GROUP = 5  # fewer jobs than this in a group: say so instead of testing


@dataclass(frozen=True)
class TestResult:
    """One comparison of per-job values between groups, ready to be phrased or tabulated."""

    comparison: str
    groups: str  # e.g. "spread vs packed"
    n: str  # e.g. "120/236"
    means: str  # e.g. "31.2/45.0" (means of per-job means, in the order of `groups`)
    test: str  # "Mann-Whitney U", "Kruskal-Wallis H" or "" when not run
    statistic: float | None
    p_value: float | None
    effect_measure: str
    effect_size: float | None
    note: str  # why no test was run, or "significant"/"not significant"

    @property
    def ran(self) -> bool:
        return self.p_value is not None

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < ALPHA


def _clean(values: Sequence[float | None]) -> np.ndarray:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return arr[np.isfinite(arr)]


ALL_EQUAL = "all values are equal; nothing to test"


def _not_run(base: dict[str, str], note: str) -> TestResult:
    """A comparison whose test was not run (`base`: its comparison, groups, n and means, and its
    effect measure where it names one), `note` saying why."""
    return TestResult(
        comparison=base["comparison"],
        groups=base["groups"],
        n=base["n"],
        means=base["means"],
        test="",
        statistic=None,
        p_value=None,
        effect_measure=base.get("effect_measure", ""),
        effect_size=None,
        note=note,
    )


def _fmt_means(*groups: np.ndarray) -> str:
    return "/".join(f"{g.mean():.1f}" if g.size else "-" for g in groups)


def mann_whitney(
    comparison: str,
    a: Sequence[float | None],
    b: Sequence[float | None],
    label_a: str,
    label_b: str,
    min_n: int = MIN_GROUP,
) -> TestResult:
    """Two-sided Mann-Whitney U of `a` vs `b` with the rank-biserial correlation as effect size.

    The effect size r = 2 U_a / (n_a n_b) - 1 lies in [-1, 1]; it is positive when values
    in `a` tend to be larger than those in `b`. Too few values, or all values equal, give a
    result with no p-value and a note saying why.
    """
    from scipy import stats  # deferred: scipy is slow to import

    xa, xb = _clean(a), _clean(b)
    base = dict(
        comparison=comparison, groups=f"{label_a} vs {label_b}", n=f"{xa.size}/{xb.size}", means=_fmt_means(xa, xb)
    )
    if xa.size < min_n or xb.size < min_n:
        return _not_run(base, f"too few jobs to test (n={xa.size}/{xb.size}; need at least {min_n} in each group)")
    if np.ptp(np.concatenate([xa, xb])) == 0:
        return _not_run(base, ALL_EQUAL)
    res = stats.mannwhitneyu(xa, xb, alternative="two-sided")
    u = float(res.statistic)
    p = float(res.pvalue)
    r = 2.0 * u / (xa.size * xb.size) - 1.0
    return TestResult(
        **base,
        test="Mann-Whitney U",
        statistic=u,
        p_value=p,
        effect_measure="rank-biserial r",
        effect_size=r,
        note="significant" if p < ALPHA else "not significant",
    )


def kruskal_wallis(comparison: str, groups: Mapping[str, Sequence[float | None]], min_n: int = MIN_GROUP) -> TestResult:
    """Kruskal-Wallis H across the groups that have at least `min_n` values, with eta-squared(H).

    eta^2_H = (H - k + 1) / (n - k) (Tomczak & Tomczak 2014), floored at 0.
    """
    from scipy import stats

    kept = {k: _clean(v) for k, v in groups.items()}
    kept = {k: v for k, v in kept.items() if v.size >= min_n}
    labels = list(kept)
    arrays = [kept[k] for k in labels]
    base = dict(
        comparison=comparison,
        groups=" vs ".join(labels) or "-",
        n="/".join(str(a.size) for a in arrays) or "0",
        means=_fmt_means(*arrays),
    )
    if len(arrays) < 2:
        return _not_run(base, f"too few groups with at least {min_n} jobs to test")
    if np.ptp(np.concatenate(arrays)) == 0:
        return _not_run(base, ALL_EQUAL)
    res = stats.kruskal(*arrays)
    h, p = float(res.statistic), float(res.pvalue)
    n, k = sum(a.size for a in arrays), len(arrays)
    eta = max((h - k + 1) / (n - k), 0.0) if n > k else None
    return TestResult(
        **base,
        test="Kruskal-Wallis H",
        statistic=h,
        p_value=p,
        effect_measure="eta-squared(H)",
        effect_size=eta,
        note="significant" if p < ALPHA else "not significant",
    )


def locality_tests(per_job: pl.DataFrame, min_n: int = MIN_GROUP) -> list[TestResult]:
    """The report's tests on per-job mean GPU utilization (query job_gpu_util_by_attributes).

    1. spread (2+ servers) vs packed (1 server), all sizes together;
    2. the same within each job size that has both placements (size held fixed, as in the study);
    3. Kruskal-Wallis across the number of servers spanned;
    4. jobs that shared a server with another job vs jobs alone on their servers.
    """

    def values(df: pl.DataFrame) -> list[float | None]:
        return df.get_column("mean_gpu_util_pct").to_list()

    placed = per_job.filter(pl.col("placement").is_not_null())
    results = [
        mann_whitney(
            "placement, all sizes",
            values(placed.filter(pl.col("placement") == "spread")),
            values(placed.filter(pl.col("placement") == "packed")),
            "spread",
            "packed",
            min_n,
        )
    ]
    for gpus in sorted(set(placed.get_column("num_gpus").drop_nulls().to_list())):
        same = placed.filter(pl.col("num_gpus") == gpus)
        spread, packed = same.filter(pl.col("placement") == "spread"), same.filter(pl.col("placement") == "packed")
        if spread.height and packed.height:
            results.append(
                mann_whitney(f"placement, {gpus}-GPU jobs", values(spread), values(packed), "spread", "packed", min_n)
            )
    by_servers = {
        f"{s} server{'s' if s != 1 else ''}": values(placed.filter(pl.col("num_servers") == s))
        for s in sorted(set(placed.get_column("num_servers").drop_nulls().to_list()))
    }
    results.append(kruskal_wallis("servers spanned, all sizes", by_servers, min_n))
    known = per_job.filter(pl.col("shares_server").is_not_null())
    results.append(
        mann_whitney(
            "server sharing, all sizes",
            values(known.filter(pl.col("shares_server"))),
            values(known.filter(~pl.col("shares_server"))),
            "shared",
            "alone",
            min_n,
        )
    )
    return results


def fisher_exact(what: str, k_now: int, n_now: int, k_before: int, n_before: int) -> TestResult:
    """Fisher's exact test of k/n now against k/n before (a period against its baseline), with
    the odds ratio as effect size."""
    from scipy import stats  # deferred: slow to import

    base = dict(
        comparison=what,
        groups="current vs baseline",
        n=f"{n_now}/{n_before}",
        means=f"{_share(k_now, n_now)}/{_share(k_before, n_before)}",
        effect_measure="odds ratio",
    )
    if n_now < MIN_GROUP or n_before < MIN_GROUP:
        return _not_run(base, f"too few attempts to test (n={n_now}/{n_before})")
    res = stats.fisher_exact([[k_now, n_now - k_now], [k_before, n_before - k_before]])
    odds, p = float(res.statistic), float(res.pvalue)
    return TestResult(
        **base,
        test="Fisher exact",
        statistic=odds,
        p_value=p,
        effect_size=odds if math.isfinite(odds) else None,
        note="significant" if p < ALPHA else "not significant",
    )


def _share(k: int, n: int) -> str:
    return f"{100.0 * k / n:.1f}%" if n else "-"


def tests_frame(results: list[TestResult]) -> pl.DataFrame:
    """The test results as a table (one row per test) for CSV and HTML."""
    schema = {
        "comparison": pl.String,
        "groups": pl.String,
        "n": pl.String,
        "means": pl.String,
        "test": pl.String,
        "statistic": pl.Float64,
        "p_value": pl.Float64,
        "effect_measure": pl.String,
        "effect_size": pl.Float64,
        "note": pl.String,
    }
    rows = [{k: v for k, v in asdict(r).items()} for r in results]
    return pl.DataFrame(rows, schema=schema)


def hist_quantile(hist: pl.DataFrame, q: float, bin_col: str = "util_bin", count_col: str = "samples") -> float | None:
    """The q-quantile of a 1-unit-bin histogram, interpolated linearly inside the bin."""
    if hist.is_empty():
        return None
    h = hist.sort(bin_col)
    counts = np.asarray(h.get_column(count_col).to_list(), dtype=float)
    bins = np.asarray(h.get_column(bin_col).to_list(), dtype=float)
    total = counts.sum()
    if total <= 0:
        return None
    target = q * total
    cum = np.cumsum(counts)
    i = int(np.searchsorted(cum, target, side="left"))
    i = min(i, len(bins) - 1)
    before = cum[i] - counts[i]
    frac = (target - before) / counts[i] if counts[i] else 0.0
    return float(bins[i] + min(max(frac, 0.0), 1.0))


def hist_mean(hist: pl.DataFrame, sum_col: str, count_col: str = "samples") -> float | None:
    """Exact mean from a histogram that carries the sum of the values in each bin."""
    if hist.is_empty():
        return None
    n = float(hist.get_column(count_col).sum())
    return float(hist.get_column(sum_col).sum()) / n if n else None


def share_below(
    hist: pl.DataFrame, threshold: float, bin_col: str = "util_bin", count_col: str = "samples"
) -> float | None:
    """Share (0..1) of histogram mass in bins entirely below `threshold`."""
    if hist.is_empty():
        return None
    total = float(hist.get_column(count_col).sum())
    if not total:
        return None
    below = float(hist.filter(pl.col(bin_col) + 1 <= threshold).get_column(count_col).sum())
    return below / total


def safe_float(value: object) -> float | None:
    """A finite float, or None (for NULL, NaN and the like)."""
    if value is None:
        return None
    try:
        f = float(value)  # type: ignore[arg-type]  # what float() refuses is None below
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
