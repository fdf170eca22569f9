"""The Data quality section: GPU-sample coverage, rejected input lines, machine-list mismatches, how GPU samples
were attributed, and missing times.
"""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.analyze import statistics as an
from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import (
    first_row,
    fmt_dur,
    fmt_int,
    fmt_pct,
    fmt_share,
    fmt_time,
    join_list,
    plural,
    rows_of,
)


def section(r: dict[str, pl.DataFrame]) -> Section:
    s = Section("data-quality", "Data quality")
    cov = first_row(r["gpu_time_coverage"])
    rejects = r["rejects_by_file"]
    n_rejects = int(rejects.get_column("rejects").sum() or 0) if not rejects.is_empty() else 0
    n_files = int(rejects.get_column("files").sum() or 0) if not rejects.is_empty() else 0
    coverage = cov.get("coverage_pct") if cov else None
    s.add(
        Paragraph(
            f"{plural(n_rejects, 'input line')} of {plural(n_files, 'ingested file')} were rejected (kept, "
            "never dropped)"
            + (
                f"; the GPU samples attributed to jobs cover {fmt_pct(coverage)} of the samples their GPU "
                "time should have"
                " produced."
                if coverage is not None
                else "; the store has no GPU samples to cover the jobs' GPU time."
            ),
            "finding",
        )
    )
    interval = an.safe_float(first_row(r["gpu_sample_interval"]).get("interval_s"))
    if not cov or cov.get("gpu_samples_non_null") in (None, 0):
        s.add(
            Paragraph(
                "No GPU utilization samples in the store: utilization is empty in jobs.csv and no coverage"
                " can be measured.",
                "note",
            )
        )
    else:
        jc = r["job_sample_coverage"]
        none = jc.filter(pl.col("coverage_bucket") == "none")
        none_n = int(none.get_column("jobs").sum()) if not none.is_empty() else 0
        jobs_n = int(jc.get_column("jobs").sum()) if not jc.is_empty() else 0
        text = (
            f"Sample coverage compares the samples attributed to jobs with the samples their GPU time should have"
            f" produced: the jobs' GPU time inside the telemetry's span ({fmt_time(cov['telemetry_first_at'])} to"
            f" {fmt_time(cov['telemetry_last_at'])}) is {fmt_int(cov['span_gpu_hours'])} of"
            f" {fmt_int(cov['window_gpu_hours'])} GPU-hours; at one sample per {fmt_dur(interval)} (the most common gap"
            f" between sample times) that is {fmt_int(cov['expected_samples'])} samples, of which"
            f" {fmt_int(cov['attributed_samples'])} non-null samples were attributed"
            + (
                f" ({fmt_int(cov['covered_samples'])} of them counted: a job's samples only up to what its GPU time"
                " holds at that interval, as when two tools sample the same GPUs)"
                if (cov.get("covered_samples") or 0) < (cov.get("attributed_samples") or 0)
                else ""
            )
            + f": coverage {fmt_pct(cov['coverage_pct'])}. Of the telemetry's "
            f"{fmt_int(cov['gpu_samples_non_null'])} non-null"
            f" samples, {fmt_pct(cov['attributed_share_pct'])} fall inside some job's allocation."
        )
        if jobs_n:
            text += (
                f" Per job (jobs with GPU time inside the span): {fmt_int(none_n)} of {fmt_int(jobs_n)}"
                f" ({fmt_share(none_n / jobs_n)}) have no sample at all."
            )
        s.add(
            Figure(
                "fig-sample-coverage",
                fg.grouped_bars(
                    jc,
                    "coverage_bucket",
                    "jobs",
                    None,
                    "Jobs by share of their GPU time covered by samples",
                    "share of the job's GPU time (inside the telemetry span) covered",
                    "jobs",
                    y_format=",.0f",
                ),
                text,
                "job_sample_coverage",
            )
        )

    rej = r["rejects_by_file"]
    n_rej = int(rej.get_column("rejects").sum()) if not rej.is_empty() else 0
    n_files = int(rej.filter(pl.col("rejects") > 0).get_column("files").sum()) if not rej.is_empty() else 0
    all_files = int(rej.get_column("files").sum()) if not rej.is_empty() else 0
    s.add(
        Table(
            "rejects_by_file",
            rej,
            f"{plural(n_rej, 'rejected input line')} in {n_files} of {plural(all_files, 'ingested file')}; "
            "rejected lines are"
            " kept in the store's rejects table, never silently dropped. Reasons are grouped by kind (the row's own"
            " values masked as …); reject_examples.csv has the first rows of each kind.",
            max_rows=30,
        )
    )

    o = first_row(r["overview_totals"])
    mm = r["machine_capacity_mismatch"]
    more = mm.filter(pl.col("issue") == "more GPUs observed than listed")
    unlisted = mm.filter(pl.col("issue") == "not in the machine list")
    listed_only = (o.get("machines") or 0) - (o.get("machines_observed") or 0)
    example = ""
    if not more.is_empty():
        e = more.row(0, named=True)
        example = f" (e.g. {e['machine_id']}: listed {e['listed_gpus']}, observed {e['observed_gpus']})"
    s.add(
        Table(
            "machine_capacity_mismatch",
            mm,
            f"Listed vs observed capacity: {more.height} machines show more GPUs in the data than the machine list"
            f" says{example}; {unlisted.height} appear in the data but not in the machine list; {fmt_int(listed_only)}"
            " listed machines never appear in the data (not a contradiction: the data may just not reach them)."
            " The report counts the larger of listed and observed.",
        )
    )

    att = r.get("gpu_time_by_attribution")
    if att is not None and not att.is_empty():
        shares = {row["attribution"]: row["gpu_time_share_pct"] for row in rows_of(att)}
        guessed = (shares.get("node_level") or 0) + (shares.get("none") or 0)
        s.add(
            Table(
                "gpu_time_by_attribution",
                att,
                "How each attempt's GPU samples were found, by share of GPU time: from the scheduler's own GPU list"
                " (scheduler), GPU indices from scontrol or from CUDA_VISIBLE_DEVICES in the job's log, whole machines"
                " the job had to itself, or every GPU of machines it shared with other jobs (node_level: its "
                "utilization"
                f" mixes in theirs). {fmt_pct(guessed)} of the GPU time is node-level or has no machine at all (none),"
                " and its utilization is either mixed or missing.",
            )
        )

    mt = r["jobs_missing_times"]
    parts = [f"{x['count']:,} of {x['total']:,} {x['items']} with {x['check']}" for x in rows_of(mt) if x["count"]]
    s.add(
        Table(
            "jobs_missing_times",
            mt,
            "Missing times and allocations (they leave jobs.csv fields empty): " + join_list(parts) + ".",
        )
    )
    return s
