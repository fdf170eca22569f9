"""The GPU activity section: how much of their GPUs jobs really worked (DCGM's profiling
fields) beside nvidia-smi's utilization.gpu, the jobs that look busy but are nearly idle,
and whether spreading a job costs real work."""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.analyze import parameters
from gpucluster_analysis.analyze import statistics as an
from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import (
    describe_test,
    first_row,
    fmt_int,
    fmt_pct,
    gpus_label,
    join_list,
    rows_of,
)


def section(r: dict[str, pl.DataFrame]) -> Section | None:
    """None when no job has a DCGM SM-activity sample (most sources have none)."""
    summary = first_row(r.get("gpu_activity_summary"))
    if not summary.get("jobs_measured"):
        return None
    s = Section("activity", "GPU activity")
    util = summary.get("mean_gpu_util_pct")
    s.add(
        Paragraph(
            f"{fmt_int(summary['jobs_measured'])} jobs have DCGM SM-activity samples ({fmt_int(summary['sm_samples'])}"
            f" samples): their GPUs' SMs were active {fmt_pct(summary['mean_sm_active_pct'])} of the time and the"
            f" tensor pipes {fmt_pct(summary['mean_tensor_active_pct'])}, while nvidia-smi's utilization.gpu said"
            f" {fmt_pct(util)} for the {fmt_int(summary['jobs_with_util'])} of them it sampled (sample-weighted means);"
            f" {fmt_int(summary['busy_idle_jobs'])} jobs ({fmt_int(summary['busy_idle_gpu_hours'])} GPU-hours,"
            f" {fmt_pct(summary['busy_idle_gpu_hours_pct'])} of the measured GPU time) look busy by utilization"
            f" (>= {parameters.BUSY_UTIL_PCT:.0f}%) but are nearly idle by SM activity"
            f" (< {parameters.IDLE_SM_PCT:.0f}%).",
            "finding",
        )
    )
    s.add(
        Paragraph(
            "utilization.gpu is the share of time any kernel ran: one small kernel running all the time shows 100%."
            " DCGM's DCGM_FI_PROF_SM_ACTIVE is the share of SMs busy, averaged over the sample interval, and"
            " DCGM_FI_PROF_PIPE_TENSOR_ACTIVE the share of cycles the tensor cores worked. A job's mean is over the"
            " samples on its allocated GPUs while its attempts ran (jobs.csv mean_sm_active_pct, "
            "mean_tensor_active_pct)."
        )
    )
    grid = r["gpu_activity_grid"]
    if not grid.is_empty():
        s.add(
            Figure(
                "fig-activity-grid",
                fg.bin_heatmap(
                    grid,
                    "util_bin",
                    "sm_bin",
                    "jobs",
                    "Jobs by mean utilization.gpu and mean SM activity",
                    "mean utilization.gpu (%)",
                    "mean SM activity (%)",
                ),
                "Each cell counts jobs by their two means (10-point bins); jobs below the diagonal kept "
                "kernels running"
                f" on few SMs. {_diagonal_sentence(grid)}",
                "gpu_activity_grid",
            )
        )
    busy = r["gpu_activity_busy_idle"]
    s.add(
        Table(
            "gpu_activity_busy_idle",
            busy,
            f"Jobs that look busy by utilization.gpu (>= {parameters.BUSY_UTIL_PCT:.0f}%) but are nearly idle by"
            f" SM activity (< {parameters.IDLE_SM_PCT:.0f}%), most GPU time first"
            f" (at most {parameters.TOP_BUSY_IDLE}).",
            max_rows=parameters.TOP_BUSY_IDLE,
        )
    )
    _locality(s, r)
    return s


def _diagonal_sentence(grid: pl.DataFrame) -> str:
    total = int(grid.get_column("jobs").sum())
    below = int(grid.filter(pl.col("sm_bin") + 30 <= pl.col("util_bin")).get_column("jobs").sum())
    return (
        f"{fmt_int(below)} of {fmt_int(total)} jobs ({fmt_pct(100 * below / total if total else None)}) have a mean"
        " SM activity 30 points or more below their mean utilization."
    )


def _locality(s: Section, r: dict[str, pl.DataFrame]) -> None:
    by_place = r["gpu_activity_by_placement"]
    per_job = r["job_activity_by_attributes"]
    if by_place.is_empty():
        return
    spread = per_job.filter(pl.col("placement") == "spread").get_column("mean_sm_active_pct").to_list()
    packed = per_job.filter(pl.col("placement") == "packed").get_column("mean_sm_active_pct").to_list()
    test = an.mann_whitney("placement, all sizes (SM activity)", spread, packed, "spread", "packed")
    parts = []
    for bucket in dict.fromkeys(by_place.get_column("size_bucket").to_list()):
        rows = {x["placement"]: x for x in rows_of(by_place.filter(pl.col("size_bucket") == bucket))}
        if "packed" in rows and "spread" in rows:
            parts.append(
                f"{gpus_label(bucket)}: {fmt_pct(rows['packed']['mean_sm_active_pct'])} packed"
                f" (n={fmt_int(rows['packed']['jobs'])}) vs {fmt_pct(rows['spread']['mean_sm_active_pct'])}"
                f" spread (n={fmt_int(rows['spread']['jobs'])})"
            )
    s.add(
        Table(
            "gpu_activity_by_placement",
            by_place,
            "Does spreading a job over servers cost real work, not only utilization? Mean SM activity (of "
            "per-job means),"
            f" packed vs spread: {join_list(parts)}. All sizes, per job: {describe_test(test)}.",
        )
    )
