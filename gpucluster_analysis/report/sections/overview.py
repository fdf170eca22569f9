"""The Overview section: the trace's span and size, the machines, jobs and GPU time by final status and size."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import (
    first_row,
    fmt_dur,
    fmt_int,
    fmt_pct,
    fmt_time,
    gpus_label,
    index_by,
    join_list,
    rows_of,
)

# The published Philly numbers (domain.md, "Paper figures"), quoted for comparison.
PAPER_STATUS = (
    "Philly, full trace (Jeon et al.): Passed 69.3% of jobs / 44.5% of GPU time, "
    "Killed 13.5% / 37.7%, Unsuccessful 17.2% / 17.8%."
)


def section(r: dict[str, pl.DataFrame], store_name: str, selection: str = "all jobs") -> Section:
    s = Section("overview", "Overview")
    o = first_row(r["overview_totals"])
    span_days = None
    if isinstance(o.get("first_at"), datetime) and isinstance(o.get("last_at"), datetime):
        span_days = (o["last_at"] - o["first_at"]).total_seconds() / 86400
    by_status = index_by(r["jobs_by_status"], "status") if not r["jobs_by_status"].is_empty() else {}
    failed = by_status.get("failed", {})
    s.add(
        Paragraph(
            f"{fmt_int(o.get('jobs'))} jobs of {fmt_int(o.get('users'))} users used "
            f"{fmt_int(o.get('gpu_hours'))} GPU-hours"
            f" over {'-' if span_days is None else f'{span_days:.1f}'} days on {fmt_int(o.get('machines'))} machines"
            f" ({fmt_int(o.get('gpus'))} GPUs); {fmt_pct(failed.get('jobs_pct') or 0)} of the jobs failed, holding"
            f" {fmt_pct(failed.get('gpu_time_pct') or 0)} of the GPU time.",
            "finding",
        )
    )
    s.add(
        Paragraph(
            f"Store {store_name}; this report covers {selection}"
            + (
                ""
                if selection == "all jobs"
                else " (the queueing replay saw every job: their GPUs are why these waited;"
                " machine figures cover the period)"
            )
            + f". The trace spans {fmt_time(o.get('first_at'))} to {fmt_time(o.get('last_at'))}"
            f" ({'-' if span_days is None else f'{span_days:.1f}'} days, from the first submission or start to the"
            f" last end): {fmt_int(o.get('jobs'))} jobs from {fmt_int(o.get('users'))} users in"
            f" {fmt_int(o.get('vcs'))} virtual clusters (VCs), {fmt_int(o.get('attempts'))} attempts and"
            f" {fmt_int(o.get('gpu_hours'))} GPU-hours of allocated GPU time (attempt run time x GPUs)."
        )
    )
    s.add(
        Paragraph(
            f"Machines: {fmt_int(o.get('machines_listed'))} in the machine list with {fmt_int(o.get('gpus_listed'))}"
            f" GPUs as listed; {fmt_int(o.get('machines_observed'))} seen in the data (allocations or GPU samples)"
            f" with {fmt_int(o.get('gpus_observed'))} GPUs observed (highest GPU index + 1). Taking the larger of"
            f" listed and observed for each machine, the cluster has {fmt_int(o.get('machines'))} machines and"
            f" {fmt_int(o.get('gpus'))} GPUs. Telemetry: {fmt_int(o.get('gpu_samples'))} GPU samples"
            f" ({fmt_time(o.get('gpu_samples_first_at'))} to {fmt_time(o.get('gpu_samples_last_at'))}) and"
            f" {fmt_int(o.get('host_samples'))} host samples."
            + (
                " No machine list was ingested: the capacity is inferred from the data (the hosts of the runs, with"
                " the most GPUs a run held there, and the GPUs sampled), so a machine no job used is missing and a"
                " machine's GPUs no job held together are undercounted."
                if not o.get("machines_listed") and o.get("machines")
                else ""
            )
        )
    )
    s.add(Table("overview_totals", r["overview_totals"], "Headline numbers (overview_totals.csv)."))
    src = r.get("sources_compared")
    if src is not None and src.height > 1:
        parts = [
            f"{x['source']} {fmt_int(x['jobs'])} jobs, {fmt_pct(x['passed_pct'])} passed,"
            f" median queueing {fmt_dur(x['queue_delay_p50_s'])}"
            + (
                f", mean GPU utilization {fmt_pct(x['mean_gpu_util_pct'])}"
                if x["mean_gpu_util_pct"] is not None
                else ""
            )
            for x in rows_of(src)
        ]
        s.add(
            Table(
                "sources_compared",
                src,
                f"The store holds {src.height} traces; every number in this report pools them, and this table sets them"
                f" side by side: {join_list(parts)}. Statuses, queueing and sizes mean the same for every source"
                " (docs/jobs-csv.md), but what each scheduler records differs: only some have GPU samples, Eligible"
                " times or job logs.",
            )
        )

    st = r["jobs_by_status"]
    parts = [
        f"{x['status']} {fmt_pct(x['jobs_pct'])} of jobs ({fmt_int(x['jobs'])}) and"
        f" {fmt_pct(x['gpu_time_pct'])} of GPU time"
        for x in rows_of(st)
    ]
    s.add(
        Figure(
            "fig-jobs-by-status",
            fg.share_bars(st, "status", "Jobs and GPU time by final status (the study's Table 2)", "final status"),
            f"By final status: {join_list(parts)}. {PAPER_STATUS}",
            "jobs_by_status",
        )
    )
    sz = r["jobs_by_size"]
    parts = [
        f"{gpus_label(x['size_bucket'])}: {fmt_pct(x['jobs_pct'])} of all jobs, {fmt_pct(x['gpu_time_pct'])} "
        "of GPU time"
        for x in rows_of(sz)
    ]
    s.add(
        Figure(
            "fig-jobs-by-size",
            fg.share_bars(
                sz,
                "size_bucket",
                "Jobs and GPU time by job size (all jobs, CPU-only ones included; GPUs of the first allocated attempt,"
                " else the request)",
                "GPUs per job",
            ),
            f"By size (all jobs): {join_list(parts)}.",
            "jobs_by_size",
        )
    )
    return s
