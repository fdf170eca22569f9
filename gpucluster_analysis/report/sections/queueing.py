"""The Queueing section: why jobs waited (the replay's causes, `wait_causes`), then queueing delay by
job size, VC and servers spanned, and the waits between retries."""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.analyze import parameters
from gpucluster_analysis.report import figure_style as style
from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections import wait_causes
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import fmt_dur, fmt_int, gpus_label, index_by, join_list, plural, rows_of


def section(r: dict[str, pl.DataFrame]) -> Section:
    s = Section("queueing", "Queueing")
    for block in wait_causes.blocks(r):
        s.add(block)
    basis = {row["queue_basis"]: int(row["jobs"]) for row in rows_of(r.get("queue_basis"))}
    if basis.get("eligible"):
        start = (
            "the moment a job became eligible to run (Slurm's Eligible: a job held or waiting on a dependency"
            " is not queueing for resources)"
        )
        if basis.get("submit"):
            start += (
                f" for {fmt_int(basis['eligible'])} jobs, and from its submission for the"
                f" {fmt_int(basis['submit'])} whose source has no eligible time,"
            )
    else:
        start = "a job's submission"
    measured_from = (
        "eligible or submit"
        if basis.get("eligible") and basis.get("submit")
        else ("eligible" if basis.get("eligible") else "submit")
    )
    s.add(
        Paragraph(
            f"Queueing delay here is the time from {start} to the first start of any of its attempts"
            f" ({measured_from} -> first start, jobs.csv queue_delay_s; queue_basis says which start was "
            "used); its split by cause is above."
            " Waits between retries (attempt ends -> next attempt starts) are not part of it and are shown "
            "separately below."
        )
    )
    summ = r["queue_delay_summary_by_size"]
    by_size = index_by(summ, "size_bucket") if not summ.is_empty() else {}
    overall = by_size.get("all", {})
    if not overall or not overall.get("jobs_with_delay"):
        s.add(
            Paragraph(
                "No job has both a submission time and a start time, so there is no queueing delay to show.", "note"
            )
        )
    else:
        parts = [
            f"{gpus_label(k)}: median {fmt_dur(v['p50_s'])}, p90 {fmt_dur(v['p90_s'])} "
            f"(n={fmt_int(v['jobs_with_delay'])})"
            for k, v in by_size.items()
            if k != "all" and v["jobs_with_delay"]
        ]
        s.add(
            Figure(
                "fig-queue-delay-cdf-by-size",
                fg.cdf_lines(
                    r["queue_delay_cdf_by_size"],
                    "size_bucket",
                    "queue_delay_s",
                    f"Queueing delay ({measured_from} -> first start) by job size (all jobs)",
                    "queueing delay (log scale)",
                    order=[b for b in style.SIZE_ORDER if b in by_size],
                ),
                f"Over {fmt_int(overall['jobs_with_delay'])} jobs the median queueing delay was "
                f"{fmt_dur(overall['p50_s'])}"
                f" (p90 {fmt_dur(overall['p90_s'])}, p99 {fmt_dur(overall['p99_s'])}, mean "
                f"{fmt_dur(overall['mean_s'])})."
                f" By size (all jobs, CPU-only ones included): {join_list(parts)}.",
                "queue_delay_cdf_by_size",
            )
        )
        s.add(
            Table("queue_delay_summary_by_size", summ, "Queueing delay percentiles by job size (seconds in the CSV).")
        )

        vc = r["queue_delay_by_vc"].filter(pl.col("jobs_with_delay") > 0)
        top = vc.head(parameters.TOP_VCS)
        if not top.is_empty():
            lo = top.sort("p50_s").row(0, named=True)
            hi = top.sort("p50_s", descending=True).row(0, named=True)
            s.add(
                Figure(
                    "fig-queue-delay-cdf-by-vc",
                    fg.cdf_lines(
                        r["queue_delay_cdf_by_vc"],
                        "vc",
                        "queue_delay_s",
                        f"Queueing delay by virtual cluster ({min(parameters.TOP_VCS, vc.height)} busiest)",
                        "queueing delay (log scale)",
                    ),
                    f"Among the {top.height} busiest of {vc.height} VCs, the median queueing delay ranges from"
                    f" {fmt_dur(lo['p50_s'])} (VC {lo['vc']}, n={fmt_int(lo['jobs_with_delay'])}) to"
                    f" {fmt_dur(hi['p50_s'])} (VC {hi['vc']}, n={fmt_int(hi['jobs_with_delay'])}); p90s range from"
                    f" {fmt_dur(top.get_column('p90_s').min())} to {fmt_dur(top.get_column('p90_s').max())}.",
                    "queue_delay_cdf_by_vc",
                )
            )
            s.add(
                Table("queue_delay_by_vc", r["queue_delay_by_vc"], "Queueing delay percentiles by VC, busiest first.")
            )

        srv = r["queue_delay_by_servers"]
        if not srv.is_empty():
            s.add(
                Figure(
                    "fig-queue-delay-by-servers",
                    fg.quantile_bars(
                        srv.with_columns(pl.format("{} GPU, {} srv", "size_bucket", "num_servers").alias("placement")),
                        "placement",
                        "Queueing delay by job size and servers spanned",
                        "GPUs per job, servers spanned",
                        [("p50_s", "median"), ("p90_s", "p90")],
                    ),
                    _servers_sentence(srv),
                    "queue_delay_by_servers",
                )
            )

    gaps = r["retry_gap_by_order"]
    if gaps.is_empty():
        s.add(
            Paragraph(
                "No job has two consecutive attempts with times (the previous attempt's end and the next"
                " one's start), so there are no waits between retries to show.",
                "note",
            )
        )
    else:
        g1 = gaps.row(0, named=True)
        overlapping = int(gaps.get_column("overlapping").sum())
        s.add(
            Figure(
                "fig-retry-gaps",
                fg.quantile_bars(
                    gaps,
                    "retry_no",
                    "Wait between consecutive attempts (retries), by retry number",
                    "retry number (1 = before the 2nd attempt)",
                    [("p50_s", "median"), ("p90_s", "p90")],
                    count="gaps",
                ),
                f"{plural(gaps.get_column('gaps').sum(), 'wait')} between consecutive attempts; before the "
                "first retry the"
                f" median wait was {fmt_dur(g1['p50_s'])} (p90 {fmt_dur(g1['p90_s'])}, "
                f"n={fmt_int(g1['gaps'])}), against a"
                f" median first wait (submit -> first start) of {fmt_dur(overall.get('p50_s'))}."
                + (
                    f" {fmt_int(overlapping)} next attempts started before the previous one ended (negative gaps)."
                    if overlapping
                    else ""
                ),
                "retry_gap_by_order",
            )
        )
    return s


def _servers_sentence(srv: pl.DataFrame) -> str:
    def median_of(df: pl.DataFrame) -> tuple[float | None, int]:
        n = int(df.get_column("jobs").sum()) if not df.is_empty() else 0
        if not n:
            return None, 0
        # jobs-weighted mean of group medians: a summary, not an exact pooled median
        return float((df.get_column("p50_s") * df.get_column("jobs")).sum()) / n, n

    packed, n_p = median_of(srv.filter(pl.col("num_servers") == 1))
    spread, n_s = median_of(srv.filter(pl.col("num_servers") > 1))
    text = (
        f"Jobs whose first allocation spanned 2+ servers had a median queueing delay of about {fmt_dur(spread)}"
        f" (n={n_s}) vs {fmt_dur(packed)} for jobs on one server (n={n_p}) (medians of each size and server"
        f" count, weighted by jobs)."
    )
    by_size = []
    for bucket in style.SIZE_ORDER:
        part = srv.filter(pl.col("size_bucket") == bucket)
        one, many = part.filter(pl.col("num_servers") == 1), part.filter(pl.col("num_servers") > 1)
        if not one.is_empty() and not many.is_empty():
            m1, n1 = median_of(one)
            m2, n2 = median_of(many)
            by_size.append(f"{gpus_label(bucket)}: {fmt_dur(m1)} packed (n={n1}) vs {fmt_dur(m2)} spread (n={n2})")
    if by_size:
        text += f" Same size: {join_list(by_size)}."
    return text
