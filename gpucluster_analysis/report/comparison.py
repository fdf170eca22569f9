"""Two selections side by side (`gca report --baseline-since A --baseline-until B --since C
--until D`): the headline numbers of each section for both, the change, and whether it is
significant. This is how a site judges a scheduler or quota change.

Pure: it takes what analyze/compute.py computed for each period (jobs.csv, the query results)
and returns comparison.csv's rows. The tests are those the sections use, on one value per
job (never per sample): two-sided Mann-Whitney U for queueing delay (all jobs and per size
bucket) and per-job mean GPU utilization; Fisher's exact test for the share of attempts
that failed, overall and per failure reason.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpucluster_analysis.analyze import statistics
from gpucluster_analysis.analyze.compute import Period
from gpucluster_analysis.report import summary

COLUMNS = {
    "section": pl.Utf8,
    "metric": pl.Utf8,
    "baseline": pl.Float64,
    "current": pl.Float64,
    "change": pl.Float64,
    "change_pct": pl.Float64,
    "test": pl.Utf8,
    "n": pl.Utf8,
    "p_value": pl.Float64,
    "significant": pl.Boolean,
}


def compare(before: Period, now: Period) -> pl.DataFrame:
    """comparison.csv: one row per headline number, baseline then current."""
    b, c = summary.headline(before.results, ""), summary.headline(now.results, "")
    rows: list[dict[str, Any]] = []

    def add(
        section: str, metric: str, base: float | None, cur: float | None, test: statistics.TestResult | None = None
    ) -> None:
        change = None if base is None or cur is None else cur - base
        pct = None if change is None or not base else 100.0 * change / base
        rows.append(
            {
                "section": section,
                "metric": metric,
                "baseline": base,
                "current": cur,
                "change": change,
                "change_pct": pct,
                "test": test.test if test and test.ran else (test.note if test else None),
                "n": test.n if test else None,
                "p_value": test.p_value if test else None,
                "significant": test.significant if test and test.ran else None,
            }
        )

    bo, co = b["overview"], c["overview"]
    add("overview", "jobs", bo["jobs"], co["jobs"])
    add("overview", "GPU-hours", bo["gpu_hours"], co["gpu_hours"])
    add(
        "utilization",
        "mean GPU utilization, %",
        b["utilization"]["mean_gpu_util_pct"],
        c["utilization"]["mean_gpu_util_pct"],
        statistics.mann_whitney(
            "per-job mean GPU utilization",
            _column(now.jobs, "mean_gpu_util_pct"),
            _column(before.jobs, "mean_gpu_util_pct"),
            "current",
            "baseline",
        ),
    )
    delays_b, delays_c = _delays(before), _delays(now)
    add(
        "queueing",
        "median queueing delay, s",
        b["queueing"]["median_s"],
        c["queueing"]["median_s"],
        statistics.mann_whitney(
            "queueing delay",
            delays_c.get_column("queue_delay_s").to_list(),
            delays_b.get_column("queue_delay_s").to_list(),
            "current",
            "baseline",
        ),
    )
    add("queueing", "p90 queueing delay, s", b["queueing"]["p90_s"], c["queueing"]["p90_s"])
    sizes = (
        pl.concat([delays_b.select("size_bucket", "size_order"), delays_c.select("size_bucket", "size_order")])
        .unique()
        .sort("size_order")
        .get_column("size_bucket")
        .to_list()
    )
    for bucket in sizes:
        xb = delays_b.filter(pl.col("size_bucket") == bucket).get_column("queue_delay_s")
        xc = delays_c.filter(pl.col("size_bucket") == bucket).get_column("queue_delay_s")
        add(
            "queueing",
            f"median queueing delay of {bucket}-GPU jobs, s",
            _median(xb),
            _median(xc),
            statistics.mann_whitney(
                f"queueing delay of {bucket}-GPU jobs", xc.to_list(), xb.to_list(), "current", "baseline"
            ),
        )
    for cause in summary.CAUSES:
        add(
            "queueing",
            f"waiting GPU-time: {cause.replace('_', ' ')}, %",
            b["queueing"]["cause_pct"].get(cause),
            c["queueing"]["cause_pct"].get(cause),
        )
    attempts_b, attempts_c = bo["attempts"] or 0, co["attempts"] or 0
    failed_b, failed_c = b["failures"]["failed_attempts"] or 0, c["failures"]["failed_attempts"] or 0
    add(
        "failures",
        "failed attempts, % of attempts",
        _pct(failed_b, attempts_b),
        _pct(failed_c, attempts_c),
        statistics.fisher_exact("failed attempts", failed_c, attempts_c, failed_b, attempts_b),
    )
    add("failures", "GPU-hours lost to failures", b["failures"]["gpu_hours_lost"], c["failures"]["gpu_hours_lost"])
    trials_b, trials_c = _trials(before), _trials(now)
    for reason in sorted(set(trials_b) | set(trials_c), key=lambda r: (-(trials_b.get(r, 0) + trials_c.get(r, 0)), r)):
        kb, kc = trials_b.get(reason, 0), trials_c.get(reason, 0)
        add(
            "failures",
            f"attempts failed by {reason}, % of attempts",
            _pct(kb, attempts_b),
            _pct(kc, attempts_c),
            statistics.fisher_exact(f"attempts failed by {reason}", kc, attempts_c, kb, attempts_b),
        )
    return pl.DataFrame(rows, schema=COLUMNS)


def _column(jobs: pl.DataFrame, name: str) -> list[float | None]:
    return jobs.get_column(name).cast(pl.Float64, strict=False).to_list()


def _delays(period: Period) -> pl.DataFrame:
    """One queueing delay per job that has one, with its size bucket."""
    return (
        period.jobs.select("source", "job_id", pl.col("queue_delay_s").cast(pl.Float64, strict=False))
        .join(period.sizes, on=["source", "job_id"], how="left")
        .filter(pl.col("queue_delay_s").is_not_null())
    )


def _median(values: pl.Series) -> float | None:
    return None if values.is_empty() else float(values.median())  # type: ignore[arg-type]  # a number column's median


def _pct(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def _trials(period: Period) -> dict[str, int]:
    reasons = period.results.get("failure_reasons")
    if reasons is None or reasons.is_empty():
        return {}
    return {str(r["reason"]): int(r["trials"] or 0) for r in reasons.iter_rows(named=True)}
