"""The Failures section's part on what the scheduler records about jobs that did not pass (by
status, retries), beside the part on root causes that failures.py writes from the logs."""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.report import figure_style as style
from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections.blocks import Figure, Section, Table
from gpucluster_analysis.report.sections.text import (
    fmt_dur,
    fmt_int,
    fmt_pct,
    fmt_share,
    gpus_label,
    index_by,
    join_list,
    plural,
)


def add_to(s: Section, r: dict[str, pl.DataFrame]) -> None:
    """The Failures section's part on what the scheduler records: jobs, attempts and GPU time
    by final status and size, retries, and run times by final status."""
    fs = r["failures_by_status"]
    rows = index_by(fs, "status") if not fs.is_empty() else {}
    bad = [v for k, v in rows.items() if k != "passed"]
    retried = int(fs.get_column("retried_jobs").sum()) if not fs.is_empty() else 0
    retries = int(fs.get_column("retries").sum()) if not fs.is_empty() else 0
    parts = [
        f"{v['status']}: {fmt_int(v['jobs'])} jobs ({fmt_pct(v['jobs_pct'])}), {fmt_int(v['attempts'])} attempts,"
        f" {fmt_pct(v['gpu_time_pct'])} of GPU time"
        for v in sorted(bad, key=lambda v: style.status_rank(v["status"]))
    ]
    s.add(
        Table(
            "failures_by_status",
            fs,
            f"Jobs not passed: {join_list(parts)}. {plural(retried, 'job')} retried "
            f"({plural(retries, 'retry', 'retries')}"
            " in all: attempts after the first).",
        )
    )

    at = r["job_attempts_by_status"]
    if not at.is_empty():
        total = int(at.get_column("jobs").sum())
        once = int(at.filter(pl.col("attempts") == 1).get_column("jobs").sum())
        most = int(at.get_column("attempts").max())  # type: ignore[arg-type]  # a count column's max
        s.add(
            Figure(
                "fig-attempts-per-job",
                fg.stacked_status_bars(at, "attempts", "jobs", "Attempts per job, by final status", "attempts", "jobs"),
                f"{fmt_share(once / total if total else None)} of {plural(total, 'job')} ran exactly once;"
                f" {plural(retried, 'job')} retried, up to {plural(most, 'attempt')};"
                f" {plural(at.filter(pl.col('attempts') == 0).get_column('jobs').sum(), 'job')} without any attempt.",
                "job_attempts_by_status",
            )
        )

    gs = r["gpu_time_by_status_size"]
    if not gs.is_empty() and float(gs.get_column("gpu_hours").sum()) > 0:
        failed_h = float(gs.filter(pl.col("status") != "passed").get_column("gpu_hours").sum())
        total_h = float(gs.get_column("gpu_hours").sum())
        worst = (
            gs.filter(pl.col("status") != "passed")
            .sort("bucket_gpu_time_pct", descending=True, nulls_last=True)
            .head(1)
            .to_dicts()
        )
        text = (
            f"Jobs that did not pass used {fmt_int(failed_h)} of {fmt_int(total_h)} GPU-hours"
            f" ({fmt_share(failed_h / total_h)})."
        )
        if worst and worst[0]["bucket_gpu_time_pct"] is not None:
            w = worst[0]
            text += (
                f" The largest share within a size is {w['status']} in jobs of {gpus_label(w['size_bucket'])}:"
                f" {fmt_pct(w['bucket_gpu_time_pct'])} of that size's GPU time."
            )
        s.add(
            Figure(
                "fig-gpu-time-by-status-size",
                fg.stacked_status_bars(
                    gs,
                    "size_bucket",
                    "gpu_hours",
                    "GPU time by job size and final status (all jobs)",
                    "GPUs per job",
                    "GPU-hours",
                    x_order=[b for b in style.SIZE_ORDER if b in set(gs.get_column("size_bucket").to_list())],
                ),
                text,
                "gpu_time_by_status_size",
            )
        )

    rt = r["run_time_cdf_by_status"]
    buckets = r["gpu_time_by_run_time_status"]
    if not rt.is_empty():
        p50 = {k: v["run_time_p50_s"] for k, v in rows.items()}
        text = (
            "Run time is first start -> last end; for jobs that failed it is the time to failure. Median run time: "
            + join_list([f"{k} {fmt_dur(v)}" for k, v in p50.items()])
            + "."
        )
        for status in [k for k in rows if k != "passed"]:
            b = buckets.filter(pl.col("status") == status)
            if b.is_empty():
                continue
            fast = b.filter(pl.col("bucket_order") == 1)
            slow = b.filter(pl.col("bucket_order") == 5)
            n = int(b.get_column("jobs").sum())
            fast_n = int(fast.get_column("jobs").sum()) if not fast.is_empty() else 0
            slow_pct = slow.get_column("status_gpu_time_pct").sum() if not slow.is_empty() else 0.0
            slow_n = int(slow.get_column("jobs").sum()) if not slow.is_empty() else 0
            text += f" {status}: {fmt_share(fast_n / n if n else None)} ended within 10 minutes"
            text += (
                f", while the {fmt_int(slow_n)} that ran over a day used {fmt_pct(slow_pct)} of the {status}"
                " jobs' GPU time."
                if slow_n
                else "; none ran over a day."
            )
        s.add(
            Figure(
                "fig-run-time-cdf-by-status",
                fg.cdf_lines(
                    rt,
                    "status",
                    "run_time_s",
                    "Run time by final status (time to failure for failed jobs)",
                    "run time (log scale)",
                    colors=style.STATUS_COLORS,
                    order=sorted(set(rt.get_column("status").to_list()), key=style.status_rank),
                ),
                text,
                "run_time_cdf_by_status",
            )
        )
        s.add(Table("gpu_time_by_run_time_status", buckets, "Jobs and GPU time by run time, per final status."))
