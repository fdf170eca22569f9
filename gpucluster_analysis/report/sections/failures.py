"""The Failures section: failed attempts by root cause and category, repeated failures, runtime to failure,
and what the scheduler records about jobs that did not pass.
"""

from __future__ import annotations

import polars as pl

from gpucluster_analysis import failure_categories
from gpucluster_analysis.analyze import parameters
from gpucluster_analysis.analyze import statistics as an
from gpucluster_analysis.report import figure_style as style
from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections import scheduler_failures
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import (
    first_row,
    fmt_dur,
    fmt_int,
    fmt_pct,
    fmt_share,
    gpus_label,
    index_by,
    join_list,
    plural,
    rows_of,
)

# failure_* queries' reasons for a log that shows a failure no signature names / shows no failure / no log
UNCLASSIFIED = (failure_categories.UNKNOWN, failure_categories.NO_CAUSE, failure_categories.NO_LOG)
# The published Philly numbers (domain.md, "Paper figures"), quoted for comparison.
PAPER_FAILURES = (
    "Philly, full trace (Jeon et al.): 4.2% of failed trials matched no signature; the most frequent"
    " reason was CPU out of memory (12,076 trials); incorrect inputs (30.4% of runtime to failure),"
    " model checkpoint errors (21.7%) and MPI runtime failures (14.6%) burned the most GPU time."
)


def section(r: dict[str, pl.DataFrame]) -> Section:
    s = Section("failures", "Failures")
    summary = first_row(r["failure_summary"])
    trials = int(summary.get("trials") or 0)
    log_files = int(summary.get("log_files") or 0)
    s.add(Paragraph(_lead(summary, r["failure_reasons"]), "finding"))
    s.add(
        Paragraph(
            "A failed attempt (a trial, in the study's words) is an attempt that ended in failure: where the source"
            " gives each attempt's status, one that ended failed, timeout, node_fail or preempted (killed is a"
            " decision, not a failure); otherwise every attempt that was retried, and the final attempt of a job whose"
            " final status is one of those, or of a killed job whose log names a cause other than user_kill. Its"
            " runtime to failure is its end - start, and the GPU time it lost is that runtime x its GPUs. "
            "Its root cause is the highest-priority classification among its log files"
            " (stdout/stderr); reasons and their categories (infrastructure, framework, user) are those of"
            " docs/domain.md, and jobs.csv's failure_reason is the cause of a failed job's last failed attempt."
        )
    )
    if trials and log_files:
        s.add(Paragraph(_headline(summary, r["failure_log_matching"]), "finding"))

    s.add(Paragraph("Failure reasons", "h3"))
    if not log_files:
        unclassified = (
            f"all {plural(trials, 'failed attempt')} of this store are unclassified (100%)"
            if trials
            else "no attempt in this store failed either"
        )
        s.add(
            Paragraph(
                f"Not classified yet: no job logs were ingested, so why attempts failed is unknown; {unclassified}."
                " What the scheduler records is below. Ingesting the jobs' stdout/stderr (gca ingest LOG_DIR; the"
                " README lists the layouts it reads) classifies each failed attempt's root cause, fills "
                "jobs.csv's failure_reason and failure_category, and adds the"
                " failed attempts, jobs and GPU time lost per reason and category here.",
                "note",
            )
        )
    elif not trials:
        s.add(Paragraph(f"No attempt in this store failed ({plural(log_files, 'job log file')} ingested).", "note"))
    else:
        _reasons(s, r)
        s.add(Paragraph("Repeated failures", "h3"))
        _repetition(s, r)

    s.add(Paragraph("Failed attempts", "h3"))
    _failed_attempts(s, r, trials, classified=bool(log_files))

    s.add(Paragraph("What the scheduler records", "h3"))
    scheduler_failures.add_to(s, r)
    return s


def _headline(summary: dict, matching: pl.DataFrame) -> str:
    trials = summary["trials"]
    text = (
        f"{plural(trials, 'failed attempt')} in {plural(summary['jobs_with_failed_attempts'], 'job')}:"
        f" {fmt_int(summary['classified_trials'])} ({fmt_share(summary['classified_trials'] / trials)}) have a"
        f" classified root cause; unclassified: {fmt_pct(summary['unclassified_pct'])}"
        f" ({fmt_int(summary['unknown_trials'])} with a log that shows a failure no signature names,"
        f"{_no_cause(summary)} {fmt_int(summary['no_log_trials'])} without any log). Failed attempts lost"
        f" {fmt_int(summary['gpu_hours_lost'])} GPU-hours, {fmt_pct(summary['gpu_time_lost_pct'])} of all allocated"
        f" GPU time; median runtime to failure {fmt_dur(summary['rtf_p50_s'])} (p90 {fmt_dur(summary['rtf_p90_s'])},"
        f" p95 {fmt_dur(summary['rtf_p95_s'])})."
    )
    elsewhere = (
        int(matching.filter(pl.col("outcome") != "failed attempt").get_column("log_files").sum())
        if not matching.is_empty()
        else 0
    )
    if elsewhere:
        text += (
            f" {fmt_int(elsewhere)} of the {plural(summary['log_files'], 'ingested log file')} belong to no"
            " failed attempt (failure_log_matching.csv)."
        )
    return text


def _no_cause(summary: dict) -> str:
    """The failed attempts whose log shows no failure at all ('no cause in the log'), when there are any."""
    n = int(summary.get("no_cause_trials") or 0)
    return f" {fmt_int(n)} with a log that shows no failure at all (no cause in the log)," if n else ""


def _failed_attempts(s: Section, r: dict[str, pl.DataFrame], trials: int, classified: bool) -> None:
    by_status = r["failure_trials_by_status"]
    if not trials:
        s.add(
            Paragraph(
                "No failed attempts: no attempt was retried, and no job ended failed, timeout, node_fail or preempted.",
                "note",
            )
        )
        return
    parts = [
        f"{x['status']} jobs: {plural(x['trials'], 'failed attempt')} in {plural(x['jobs'], 'job')}"
        f" ({x['trials_per_job']:.2f} per job), median runtime to failure {fmt_dur(x['rtf_p50_s'])}"
        f" (p95 {fmt_dur(x['rtf_p95_s'])}), {fmt_int(x['gpu_hours_lost'])} GPU-hours lost"
        f" ({fmt_pct(x['gpu_time_lost_pct'])})"
        for x in rows_of(by_status)
    ]
    s.add(
        Table(
            "failure_trials_by_status",
            by_status,
            f"Failed attempts by their job's final status (a passed job's failed attempts are those it retried"
            f" after): {join_list(parts)}.",
        )
    )
    cdf = r["failure_rtf_cdf"]
    if cdf.is_empty():
        s.add(
            Paragraph(
                "No failed attempt has both a start and an end, so there is no runtime to failure to show.", "note"
            )
        )
        return
    present = set(cdf.get_column("category").to_list())
    if classified:
        title, shown = "Runtime to failure of failed attempts, by failure category", cdf
    else:
        title = "Runtime to failure of failed attempts"
        shown = cdf.with_columns(pl.lit("all failed attempts").alias("category"))
    n_rtf = int(by_status.get_column("trials_with_runtime").sum())
    groups = (
        [(x["category"], x) for x in rows_of(r["failure_categories"])]
        if classified
        else [(f"{x['status']} jobs", x) for x in rows_of(by_status)]
    )
    medians = [
        f"{name}: median {fmt_dur(x['rtf_p50_s'])}" + (f", p90 {fmt_dur(x['rtf_p90_s'])}" if "rtf_p90_s" in x else "")
        for name, x in groups
        if x["rtf_p50_s"] is not None
    ]
    s.add(
        Figure(
            "fig-failure-rtf-cdf",
            fg.cdf_lines(
                shown,
                "category",
                "runtime_to_failure_s",
                title,
                "runtime to failure (log scale)",
                order=[c for c in style.CATEGORY_COLORS if c in present] if classified else None,
                colors=style.CATEGORY_COLORS if classified else None,
                y_title="share of failed attempts (CDF)",
            ),
            f"Runtime to failure (end - start) of the {plural(n_rtf, 'failed attempt')} that have both times, of"
            f" {fmt_int(trials)}. " + join_list(medians) + ".",
            "failure_rtf_cdf",
        )
    )


def _reasons(s: Section, r: dict[str, pl.DataFrame]) -> None:
    cats = r["failure_categories"]
    parts = [
        f"{x['category']} {fmt_pct(x['trials_pct'])} of failed attempts ({fmt_int(x['trials'])}) and"
        f" {fmt_pct(x['gpu_time_lost_pct'])} of the GPU time they lost (median runtime to failure"
        f" {fmt_dur(x['rtf_p50_s'])})"
        for x in rows_of(cats)
    ]
    s.add(
        Figure(
            "fig-failure-categories",
            fg.pct_bars(
                cats,
                "category",
                [
                    ("trials_pct", "of failed attempts", "trials", "failed attempts"),
                    ("jobs_pct", "of jobs with a failed attempt", "jobs", "jobs"),
                    ("gpu_time_lost_pct", "of GPU time lost", "gpu_hours_lost", "GPU-hours"),
                ],
                "Failed attempts, jobs and GPU time lost by failure category",
                "failure category",
            ),
            f"By category: {join_list(parts)}. A job that failed for reasons of several categories counts in each.",
            "failure_categories",
        )
    )

    reasons = r["failure_reasons"]
    known = reasons.filter(~pl.col("reason").is_in(list(UNCLASSIFIED)))
    if known.is_empty():
        text = (
            "No failed attempt has a classified root cause: their logs name no cause (no signature matched, or"
            " they show no failure at all), or they have none."
        )
    else:
        top = known.row(0, named=True)
        costly = known.sort("gpu_hours_lost", descending=True).head(3)
        costly_parts = [
            f"{x['reason']} {fmt_pct(x['gpu_time_lost_pct'])} ({fmt_int(x['gpu_hours_lost'])} GPU-hours,"
            f" median runtime to failure {fmt_dur(x['rtf_p50_s'])})"
            for x in rows_of(costly)
        ]
        text = (
            f"{plural(known.height, 'classified reason')}. The most frequent was {top['reason']}"
            f" ({top['category']}): {plural(top['trials'], 'failed attempt')} ({fmt_pct(top['trials_pct'])}) in"
            f" {plural(top['jobs'], 'job')} of {plural(top['users'], 'user')}. Most GPU time lost (share of all"
            f" failed attempts' lost GPU time): {join_list(costly_parts)}."
        )
    s.add(
        Figure(
            "fig-failure-reasons",
            fg.pct_bars(
                reasons,
                "reason",
                [
                    ("trials_pct", "of failed attempts", "trials", "failed attempts"),
                    ("gpu_time_lost_pct", "of GPU time lost", "gpu_hours_lost", "GPU-hours"),
                ],
                "Failed attempts and GPU time lost by root cause",
                "root cause",
                horizontal=True,
            ),
            f"{text} {PAPER_FAILURES}",
            "failure_reasons",
        )
    )
    s.add(
        Table(
            "failure_reasons",
            reasons,
            "Failed attempts per root cause. jobs: distinct jobs with at least one failed attempt of that"
            " reason (a job retried after different failures counts under each, so jobs_pct does not sum to"
            " 100); rtf: runtime to failure percentiles; job_repetition / user_repetition: failed attempts per"
            " job / per user with that reason.",
            max_rows=40,
        )
    )

    timed = reasons.filter(pl.col("trials_with_runtime") > 0)
    if not timed.is_empty():
        by_p50 = timed.sort("rtf_p50_s")
        fast, slow = by_p50.row(0, named=True), by_p50.row(-1, named=True)
        late = timed.filter(pl.col("rtf_p50_s") > 600)
        s.add(
            Figure(
                "fig-failure-rtf-by-reason",
                fg.quantile_bars(
                    timed,
                    "reason",
                    "Runtime to failure by root cause",
                    "root cause",
                    [("rtf_p50_s", "p50"), ("rtf_p90_s", "p90"), ("rtf_p95_s", "p95")],
                    count="trials_with_runtime",
                ),
                f"Median runtime to failure ranges from {fmt_dur(fast['rtf_p50_s'])} ({fast['reason']},"
                f" n={fmt_int(fast['trials_with_runtime'])}) to {fmt_dur(slow['rtf_p50_s'])} ({slow['reason']},"
                f" n={fmt_int(slow['trials_with_runtime'])}). Reasons whose median is over 10 minutes account for"
                f" {fmt_pct(late.get_column('trials_pct').sum())} of failed attempts and"
                f" {fmt_pct(late.get_column('gpu_time_lost_pct').sum())} of the GPU time lost.",
                "failure_reasons",
            )
        )

    by_size = r["failure_by_size"]
    lost = (
        by_size.group_by("size_bucket", "size_order", "category")
        .agg(pl.col("trials").sum(), pl.col("gpu_hours_lost").sum())
        .sort("size_order", "category")
    )
    if not lost.is_empty() and float(lost.get_column("gpu_hours_lost").sum()) > 0:
        parts = []
        for bucket in [b for b in style.SIZE_ORDER if b in set(lost.get_column("size_bucket").to_list())]:
            part = by_size.filter(pl.col("size_bucket") == bucket)
            worst = part.sort("gpu_hours_lost", descending=True).row(0, named=True)
            parts.append(
                f"{gpus_label(bucket)}: {plural(part.get_column('trials').sum(), 'failed attempt')},"
                f" {fmt_int(part.get_column('gpu_hours_lost').sum())} GPU-hours lost, most by"
                f" {worst['reason']} ({fmt_pct(worst['size_gpu_time_lost_pct'])})"
            )
        s.add(
            Figure(
                "fig-failure-by-size",
                fg.stacked_bars(
                    lost,
                    "size_bucket",
                    "gpu_hours_lost",
                    "category",
                    "GPU time lost to failed attempts by job size and failure category (all jobs)",
                    "GPUs per job",
                    "GPU-hours lost",
                    x_order=[b for b in style.SIZE_ORDER if b in set(lost.get_column("size_bucket").to_list())],
                    stack_order=list(style.CATEGORY_COLORS),
                    colors=style.CATEGORY_COLORS,
                ),
                f"By job size (all jobs; GPUs of the job's first allocated attempt): {join_list(parts)}.",
                "failure_by_size",
            )
        )
    s.add(Table("failure_by_size", by_size, "Failed attempts and GPU time lost per job size and root cause."))

    matching = r["failure_log_matching"]
    s.add(
        Table(
            "failure_log_matching",
            matching,
            "Where the ingested log files went: a log belongs to a job by job_id and to an attempt by its"
            " position in the scheduler's list (no position: the job's final attempt). Logs of attempts that did"
            " not fail are not failures (Slurm writes an output file for every job); a job_id held by several"
            " sources gets no logs rather than possibly wrong ones.",
        )
    )


def _repetition(s: Section, r: dict[str, pl.DataFrame]) -> None:
    rep = index_by(r["failure_repetition"], "scope")
    job, user = rep.get("job", {}), rep.get("user", {})
    if not job.get("trials"):
        s.add(Paragraph("No failed attempt has a classified root cause, so repetition cannot be measured.", "note"))
        return
    s.add(
        Paragraph(
            f"Over the {plural(job['trials'], 'classified failed attempt')}, each (job, reason) pair failed"
            f" {job['repetition_factor']:.2f} times on average and each (user, reason) pair"
            f" {an.safe_float(user.get('repetition_factor')) or 0:.2f} times (the study's repetition factor: failed"
            f" attempts per distinct job or user and reason). {plural(job['repeated_pairs'], 'job')} failed "
            "twice or more"
            f" for the same reason ({fmt_pct(job['repeated_trials_pct'])} of classified failed attempts), and their"
            f" repeats after the first lost {fmt_int(job['repeated_gpu_hours_lost'])} GPU-hours;"
            f" {plural(user.get('repeated_pairs'), '(user, reason) pair')} recurred, in one job or across a user's"
            " jobs; their repeats"
            f" lost {fmt_int(user.get('repeated_gpu_hours_lost'))} GPU-hours.",
            "finding",
        )
    )
    s.add(
        Table(
            "failure_repetition",
            r["failure_repetition"],
            "Repetition of the same root cause, per job and per user (classified failed attempts only).",
        )
    )
    s.add(
        Table(
            "failure_repeaters",
            r["failure_repeaters"],
            f"The jobs and users that failed most often for one reason (2+ failed attempts; the top"
            f" {parameters.TOP_REPEATERS} of each).",
        )
    )


def _lead(summary: dict, reasons: pl.DataFrame) -> str:
    """The section's answer: how many attempts failed, the GPU time they lost, and the costliest known cause."""
    trials = int(summary.get("trials") or 0)
    if not trials:
        return "No attempt failed."
    text = (
        f"{fmt_int(trials)} attempts failed, losing {fmt_int(summary.get('gpu_hours_lost'))} GPU-hours"
        f" ({fmt_pct(summary.get('gpu_time_lost_pct'))} of all GPU time)"
    )
    known = reasons.filter(~pl.col("reason").is_in(list(UNCLASSIFIED))) if not reasons.is_empty() else reasons
    if known.is_empty():
        return (
            text + f"; {fmt_pct(summary.get('unclassified_pct'))} of them have no cause gca could read from their logs."
        )
    top = known.sort("gpu_hours_lost", descending=True).row(0, named=True)
    return (
        text + f"; the costliest cause was {top['reason']} ({top['category']}): {fmt_int(top['trials'])} attempts,"
        f" {fmt_pct(top['gpu_time_lost_pct'])} of the lost GPU time."
    )
