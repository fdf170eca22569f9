"""The report's content: sections of prose, figures and tables, computed from query results.

`compose(results)` is pure: it takes the DataFrames of the named queries (by query name)
and returns `Section`s whose sentences carry the numbers behind each figure. Rendering
to HTML and writing files is `build.py`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import plotly.graph_objects as go
import polars as pl

from gpucluster_analysis.report import analysis as an
from gpucluster_analysis.report import figures as fg

# The published Philly numbers (domain.md, "Paper figures"), quoted for comparison.
PAPER_STATUS = "Philly, full trace (Jeon et al.): Passed 69.3% of jobs / 44.5% of GPU time, " \
               "Killed 13.5% / 37.7%, Unsuccessful 17.2% / 17.8%."
PAPER_UTIL = "Philly, full trace: mean GPU utilization 52.3% (1-GPU jobs 52.4%, 4-GPU jobs 45.2%)."
TOP_VCS = 8
UNCLASSIFIED = ("unknown", "no log")  # failure_* queries' reasons for a log that matched nothing / no log
TOP_REPEATERS = 10  # rows per scope (job, user) in the top repeaters table
PAPER_FAILURES = ("Philly, full trace (Jeon et al.): 4.2% of failed trials matched no signature; the most frequent"
                  " reason was CPU out of memory (12,076 trials); incorrect inputs (30.4% of runtime to failure),"
                  " model checkpoint errors (21.7%) and MPI runtime failures (14.6%) burned the most GPU time.")


@dataclass
class Paragraph:
    text: str
    kind: str = "p"  # p, note, finding


@dataclass
class Figure:
    div_id: str
    figure: go.Figure
    finding: str  # the sentence saying what it shows and the numbers behind it
    csv: str  # the CSV table with the numbers drawn


@dataclass
class Table:
    name: str  # the CSV it is written to (without .csv)
    frame: pl.DataFrame
    caption: str
    max_rows: int = 25


@dataclass
class Section:
    id: str
    title: str
    blocks: list[Paragraph | Figure | Table] = field(default_factory=list)

    def add(self, block: Paragraph | Figure | Table) -> None:
        self.blocks.append(block)


# ---------------------------------------------------------------- formatting


def fmt_int(n: object) -> str:
    v = an.safe_float(n)
    return "-" if v is None else f"{round(v):,}"


def plural(n: object, word: str, words: str | None = None) -> str:
    """'1 job', '2 jobs', '1,234 retries' (words for irregular plurals)."""
    v = an.safe_float(n)
    one = v is not None and round(v) == 1
    return f"{fmt_int(n)} {word if one else (words or word + 's')}"


def gpus_label(bucket: object) -> str:
    """'1 GPU', '2-4 GPUs', 'unknown GPUs' for a size bucket."""
    return f"{bucket} GPU" if str(bucket) == "1" else f"{bucket} GPUs"


def fmt_pct(x: object, digits: int = 1) -> str:
    v = an.safe_float(x)
    return "-" if v is None else f"{v:.{digits}f}%"


def fmt_share(x: object, digits: int = 1) -> str:
    """A 0..1 share as a percentage."""
    v = an.safe_float(x)
    return "-" if v is None else f"{100 * v:.{digits}f}%"


def fmt_dur(seconds: object) -> str:
    s = an.safe_float(seconds)
    if s is None:
        return "-"
    sign, s = ("-" if s < 0 else ""), abs(s)
    if s < 120:
        return f"{sign}{s:.0f} s"
    if s < 7200:
        return f"{sign}{s / 60:.0f} min"
    if s < 2 * 86400:
        return f"{sign}{s / 3600:.1f} h"
    return f"{sign}{s / 86400:.1f} days"


def fmt_p(p: float | None) -> str:
    if p is None:
        return "p=n/a"
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def fmt_time(t: object) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC") if isinstance(t, datetime) else "-"


def describe_test(t: an.TestResult) -> str:
    """'Mann-Whitney U p=0.003, n=120/236, rank-biserial r=0.21: significant' or why it was not run."""
    if not t.ran:
        return f"{t.groups}: {t.note}"
    eff = f", {t.effect_measure} {t.effect_size:.2f}" if t.effect_size is not None else ""
    return f"{t.test} {fmt_p(t.p_value)}, n={t.n}{eff}: {t.note} at the 5% level"


def _rows(df: pl.DataFrame | None) -> list[dict]:
    return [] if df is None else df.to_dicts()


def _first(df: pl.DataFrame | None) -> dict:
    rows = _rows(df)
    return rows[0] if rows else {}


def _by(df: pl.DataFrame, key: str) -> dict:
    return {r[key]: r for r in df.iter_rows(named=True)}


def _list(parts: list[str]) -> str:
    return "; ".join(parts) if parts else "none"


# ---------------------------------------------------------------- sections


def compose(r: dict[str, pl.DataFrame], tests: list[an.TestResult], store_name: str) -> list[Section]:
    """All sections of the report, in order. `r` maps query names to their results."""
    return [
        _overview(r, store_name),
        _queueing(r),
        _locality(r, tests),
        _failures(r),
        _data_quality(r),
    ]


def _overview(r: dict[str, pl.DataFrame], store_name: str) -> Section:
    s = Section("overview", "Overview")
    o = _first(r["overview_totals"])
    span_days = None
    if isinstance(o.get("first_at"), datetime) and isinstance(o.get("last_at"), datetime):
        span_days = (o["last_at"] - o["first_at"]).total_seconds() / 86400
    s.add(Paragraph(
        f"Store {store_name}. The trace spans {fmt_time(o.get('first_at'))} to {fmt_time(o.get('last_at'))}"
        f" ({'-' if span_days is None else f'{span_days:.1f}'} days, from the first submission or start to the"
        f" last end): {fmt_int(o.get('jobs'))} jobs from {fmt_int(o.get('users'))} users in"
        f" {fmt_int(o.get('vcs'))} virtual clusters (VCs), {fmt_int(o.get('attempts'))} attempts and"
        f" {fmt_int(o.get('gpu_hours'))} GPU-hours of allocated GPU time (attempt run time x GPUs)."
    ))
    s.add(Paragraph(
        f"Machines: {fmt_int(o.get('machines_listed'))} in the machine list with {fmt_int(o.get('gpus_listed'))}"
        f" GPUs as listed; {fmt_int(o.get('machines_observed'))} seen in the data (allocations or GPU samples)"
        f" with {fmt_int(o.get('gpus_observed'))} GPUs observed (highest GPU index + 1). Taking the larger of"
        f" listed and observed for each machine, the cluster has {fmt_int(o.get('machines'))} machines and"
        f" {fmt_int(o.get('gpus'))} GPUs. Telemetry: {fmt_int(o.get('gpu_samples'))} GPU samples"
        f" ({fmt_time(o.get('gpu_samples_first_at'))} to {fmt_time(o.get('gpu_samples_last_at'))}) and"
        f" {fmt_int(o.get('host_samples'))} host samples."
    ))
    s.add(Table("overview_totals", r["overview_totals"], "Headline numbers (overview_totals.csv)."))
    src = r.get("sources_compared")
    if src is not None and src.height > 1:
        parts = [f"{x['source']} {fmt_int(x['jobs'])} jobs, {fmt_pct(x['passed_pct'])} passed,"
                 f" median queueing {fmt_dur(x['queue_delay_p50_s'])}"
                 + (f", mean GPU utilization {fmt_pct(x['mean_gpu_util_pct'])}" if x["mean_gpu_util_pct"] is not None else "")
                 for x in _rows(src)]
        s.add(Table(
            "sources_compared", src,
            f"The store holds {src.height} traces; every number in this report pools them, and this table sets them"
            f" side by side: {_list(parts)}. Statuses, queueing and sizes mean the same for every source"
            " (docs/jobs-csv.md), but what each scheduler records differs: only some have GPU samples, Eligible"
            " times or job logs.",
        ))

    st = r["jobs_by_status"]
    parts = [f"{x['status']} {fmt_pct(x['jobs_pct'])} of jobs ({fmt_int(x['jobs'])}) and"
             f" {fmt_pct(x['gpu_time_pct'])} of GPU time" for x in _rows(st)]
    s.add(Figure(
        "fig-jobs-by-status",
        fg.share_bars(st, "status", "Jobs and GPU time by final status (the study's Table 2)", "final status"),
        f"By final status: {_list(parts)}. {PAPER_STATUS}",
        "jobs_by_status",
    ))
    sz = r["jobs_by_size"]
    parts = [f"{gpus_label(x['size_bucket'])}: {fmt_pct(x['jobs_pct'])} of jobs, {fmt_pct(x['gpu_time_pct'])} of GPU time"
             for x in _rows(sz)]
    s.add(Figure(
        "fig-jobs-by-size",
        fg.share_bars(sz, "size_bucket", "Jobs and GPU time by job size (GPUs of the first allocated attempt)",
                      "GPUs per job"),
        f"By size: {_list(parts)}.",
        "jobs_by_size",
    ))
    return s


def _queueing(r: dict[str, pl.DataFrame]) -> Section:
    s = Section("queueing", "Queueing")
    basis = {row["queue_basis"]: int(row["jobs"]) for row in _rows(r.get("queue_basis"))}
    if basis.get("eligible"):
        start = ("the moment a job became eligible to run (Slurm's Eligible: a job held or waiting on a dependency"
                 " is not queueing for resources)")
        if basis.get("submit"):
            start += (f" for {fmt_int(basis['eligible'])} jobs, and from its submission for the"
                      f" {fmt_int(basis['submit'])} whose source has no eligible time,")
    else:
        start = "a job's submission"
    measured_from = "eligible or submit" if basis.get("eligible") and basis.get("submit") else (
        "eligible" if basis.get("eligible") else "submit")
    s.add(Paragraph(
        f"Queueing delay here is the time from {start} to the first start of any of its attempts"
        f" ({measured_from} -> first start, jobs.csv queue_delay_s; queue_basis says which start was used). It mixes the study's fair-share delay"
        " (the VC is over its quota) and fragmentation delay (no free placement with the locality the gang needs);"
        " telling them apart needs the VC quotas, which the logs do not hold. Waits between retries (attempt ends"
        " -> next attempt starts) are not part of it and are shown separately below."
    ))
    summ = r["queue_delay_summary_by_size"]
    by_size = _by(summ, "size_bucket") if not summ.is_empty() else {}
    overall = by_size.get("all", {})
    if not overall or not overall.get("jobs_with_delay"):
        s.add(Paragraph("No job has both a submission time and a start time, so there is no queueing delay to show.",
                        "note"))
    else:
        parts = [f"{gpus_label(k)}: median {fmt_dur(v['p50_s'])}, p90 {fmt_dur(v['p90_s'])} (n={fmt_int(v['jobs_with_delay'])})"
                 for k, v in by_size.items() if k != "all" and v["jobs_with_delay"]]
        s.add(Figure(
            "fig-queue-delay-cdf-by-size",
            fg.cdf_lines(r["queue_delay_cdf_by_size"], "size_bucket", "queue_delay_s",
                         f"Queueing delay ({measured_from} -> first start) by job size", "queueing delay (log scale)",
                         order=[b for b in fg.SIZE_ORDER if b in by_size]),
            f"Over {fmt_int(overall['jobs_with_delay'])} jobs the median queueing delay was {fmt_dur(overall['p50_s'])}"
            f" (p90 {fmt_dur(overall['p90_s'])}, p99 {fmt_dur(overall['p99_s'])}, mean {fmt_dur(overall['mean_s'])})."
            f" By size: {_list(parts)}.",
            "queue_delay_cdf_by_size",
        ))
        s.add(Table("queue_delay_summary_by_size", summ, "Queueing delay percentiles by job size (seconds in the CSV)."))

        vc = r["queue_delay_by_vc"].filter(pl.col("jobs_with_delay") > 0)
        top = vc.head(TOP_VCS)
        if not top.is_empty():
            lo = top.sort("p50_s").row(0, named=True)
            hi = top.sort("p50_s", descending=True).row(0, named=True)
            s.add(Figure(
                "fig-queue-delay-cdf-by-vc",
                fg.cdf_lines(r["queue_delay_cdf_by_vc"], "vc", "queue_delay_s",
                             f"Queueing delay by virtual cluster ({min(TOP_VCS, vc.height)} busiest)",
                             "queueing delay (log scale)"),
                f"Among the {top.height} busiest of {vc.height} VCs, the median queueing delay ranges from"
                f" {fmt_dur(lo['p50_s'])} (VC {lo['vc']}, n={fmt_int(lo['jobs_with_delay'])}) to"
                f" {fmt_dur(hi['p50_s'])} (VC {hi['vc']}, n={fmt_int(hi['jobs_with_delay'])}); p90s range from"
                f" {fmt_dur(top.get_column('p90_s').min())} to {fmt_dur(top.get_column('p90_s').max())}.",
                "queue_delay_cdf_by_vc",
            ))
            s.add(Table("queue_delay_by_vc", r["queue_delay_by_vc"], "Queueing delay percentiles by VC, busiest first."))

        srv = r["queue_delay_by_servers"]
        if not srv.is_empty():
            s.add(Figure(
                "fig-queue-delay-by-servers",
                fg.quantile_bars(
                    srv.with_columns(pl.format("{} GPU, {} srv", "size_bucket", "num_servers").alias("placement")),
                    "placement", "Queueing delay by job size and servers spanned", "GPUs per job, servers spanned",
                    [("p50_s", "median"), ("p90_s", "p90")]),
                _servers_sentence(srv),
                "queue_delay_by_servers",
            ))

    gaps = r["retry_gap_by_order"]
    if gaps.is_empty():
        s.add(Paragraph("No job has two consecutive attempts with times (the previous attempt's end and the next"
                        " one's start), so there are no waits between retries to show.", "note"))
    else:
        g1 = gaps.row(0, named=True)
        overlapping = int(gaps.get_column("overlapping").sum())
        s.add(Figure(
            "fig-retry-gaps",
            fg.quantile_bars(gaps, "retry_no", "Wait between consecutive attempts (retries), by retry number",
                             "retry number (1 = before the 2nd attempt)",
                             [("p50_s", "median"), ("p90_s", "p90")], count="gaps"),
            f"{plural(gaps.get_column('gaps').sum(), 'wait')} between consecutive attempts; before the first retry the"
            f" median wait was {fmt_dur(g1['p50_s'])} (p90 {fmt_dur(g1['p90_s'])}, n={fmt_int(g1['gaps'])}), against a"
            f" median first wait (submit -> first start) of {fmt_dur(overall.get('p50_s'))}."
            + (f" {fmt_int(overlapping)} next attempts started before the previous one ended (negative gaps)."
               if overlapping else ""),
            "retry_gap_by_order",
        ))
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
    text = (f"Jobs whose first allocation spanned 2+ servers had a median queueing delay of about {fmt_dur(spread)}"
            f" (n={n_s}) vs {fmt_dur(packed)} for jobs on one server (n={n_p}) (medians of each size and server"
            f" count, weighted by jobs).")
    by_size = []
    for bucket in fg.SIZE_ORDER:
        part = srv.filter(pl.col("size_bucket") == bucket)
        one, many = part.filter(pl.col("num_servers") == 1), part.filter(pl.col("num_servers") > 1)
        if not one.is_empty() and not many.is_empty():
            m1, n1 = median_of(one)
            m2, n2 = median_of(many)
            by_size.append(f"{gpus_label(bucket)}: {fmt_dur(m1)} packed (n={n1}) vs {fmt_dur(m2)} spread (n={n2})")
    if by_size:
        text += f" Same size: {_list(by_size)}."
    return text


def _locality(r: dict[str, pl.DataFrame], tests: list[an.TestResult]) -> Section:
    s = Section("locality", "Locality vs utilization")
    status = r["gpu_util_by_status"]
    samples = int(status.get_column("samples").sum() or 0) if not status.is_empty() else 0
    jobs_with = int(status.get_column("jobs_with_samples").sum() or 0) if not status.is_empty() else 0
    jobs_all = int(status.get_column("jobs").sum() or 0) if not status.is_empty() else 0
    s.add(Paragraph(
        "A GPU utilization sample at time t belongs to a job when t falls inside one of its attempts"
        " (start <= t < end) on a (machine, GPU) that attempt was allocated; a job's utilization is the mean of its"
        " non-null samples. Means below are sample-weighted (every GPU-minute counts once) unless they say per-job."
        f" {fmt_int(jobs_with)} of {fmt_int(jobs_all)} jobs have attributed samples ({fmt_int(samples)} samples). "
        + PAPER_UTIL
    ))
    if samples == 0:
        s.add(Paragraph("No GPU utilization sample falls inside any job's allocation, so the GPU utilization figures"
                        " are left out (ingest the GPU telemetry, e.g. Philly's cluster_gpu_util, to get them).", "note"))
        _host(s, r)
        return s
    overall = (status.get_column("mean_util_pct") * status.get_column("samples")).sum() / samples
    s.blocks[-1].text += f" Mean utilization over all attributed samples: {fmt_pct(overall)}."

    grid = r["gpu_util_by_gpus_servers"]
    s.add(Figure(
        "fig-util-by-gpus-servers",
        fg.util_heatmap(grid, "Mean GPU utilization by job size and servers spanned (sample-weighted)"),
        _grid_sentence(grid),
        "gpu_util_by_gpus_servers",
    ))

    cdf = r["gpu_util_cdf_by_placement"]
    main = next((t for t in tests if t.comparison == "placement, all sizes"), None)
    parts = []
    for placement in ("packed", "spread"):
        h = cdf.filter(pl.col("placement") == placement)
        if not h.is_empty():
            parts.append(f"{placement}: median {fmt_pct(an.hist_quantile(h, 0.5), 0)}, "
                         f"{fmt_share(an.share_below(h, 10))} of samples below 10% (n={fmt_int(h.get_column('samples').sum())})")
    sentence = f"Per-sample utilization, {_list(parts)}."
    if main is not None:
        means = main.means.split("/")
        sentence += (f" Per-job means: jobs spread over 2+ servers averaged {means[0]}% vs {means[-1]}% when packed"
                     f" on one server ({describe_test(main)}).")
    s.add(Figure(
        "fig-util-cdf-by-placement",
        fg.hist_cdf(cdf, "placement", "GPU utilization per sample: packed (1 server) vs spread (2+ servers)",
                    order=["packed", "spread"], colors=fg.PLACEMENT_COLORS),
        sentence,
        "gpu_util_cdf_by_placement",
    ))
    s.add(Table("gpu_util_locality_tests", an.tests_frame(tests),
                "Tests on per-job mean utilization (means are of per-job means, in the order of the groups; "
                "rank-biserial r > 0: the first group tends higher)."))

    st_cdf = r["gpu_util_cdf_by_status"]
    parts = [f"{x['status']} {fmt_pct(x['mean_util_pct'])} (n={fmt_int(x['jobs_with_samples'])} jobs)"
             for x in _rows(status) if x["jobs_with_samples"]]
    s.add(Figure(
        "fig-util-cdf-by-status",
        fg.hist_cdf(st_cdf, "status", "GPU utilization per sample by final status", colors=fg.STATUS_COLORS,
                    order=sorted(set(st_cdf.get_column("status").to_list()), key=fg.status_rank)),
        f"Mean utilization by final status: {_list(parts)}.",
        "gpu_util_cdf_by_status",
    ))

    co = r["gpu_util_by_colocation"]
    if not co.is_empty():
        share_test = next((t for t in tests if t.comparison == "server sharing, all sizes"), None)
        totals = co.group_by("colocation").agg(pl.col("jobs").sum(), pl.col("samples").sum(),
                                               (pl.col("mean_util_pct") * pl.col("samples")).sum().alias("w"))
        tot = {x["colocation"]: x for x in totals.iter_rows(named=True)}
        parts = [f"{k} {fmt_pct(v['w'] / v['samples'] if v['samples'] else None)} (n={fmt_int(v['jobs'])} jobs)"
                 for k, v in sorted(tot.items(), reverse=True)]
        text = (f"Jobs that shared a server with another job of this store (their windows on a machine overlapped"
                f" in time) vs jobs alone on their servers, sample-weighted mean utilization: {_list(parts)}.")
        if share_test is not None:
            text += f" Per-job means {share_test.means.replace('/', '% vs ')}% ({describe_test(share_test)})."
        s.add(Figure(
            "fig-util-by-colocation",
            fg.grouped_bars(co, "size_bucket", "mean_util_pct", "colocation",
                            "Mean GPU utilization: sharing a server vs alone, by job size", "GPUs per job",
                            "mean utilization (%)", count="jobs", color_order=["shared", "alone"],
                            colors={"shared": "#9467bd", "alone": "#1f77b4"}),
            text,
            "gpu_util_by_colocation",
        ))

    _host(s, r)
    return s


def _host(s: Section, r: dict[str, pl.DataFrame]) -> None:
    host = r["host_util_cdf_by_activity"]
    if host.is_empty():
        s.add(Paragraph("No host samples (CPU or memory) in the store, so host utilization is left out.", "note"))
    else:
        labelled = host.with_columns(
            pl.concat_str(
                pl.when(pl.col("metric") == "cpu_util_pct").then(pl.lit("CPU")).otherwise(pl.lit("memory used")),
                pl.when(pl.col("job_running")).then(pl.lit(", job running")).otherwise(pl.lit(", no job")),
            ).alias("series")
        )
        parts = []
        for series in dict.fromkeys(labelled.get_column("series").to_list()):
            h = labelled.filter(pl.col("series") == series)
            parts.append(f"{series}: mean {fmt_pct(an.hist_mean(h, 'value_sum'))}"
                         f" (n={fmt_int(h.get_column('samples').sum())})")
        s.add(Figure(
            "fig-host-util",
            fg.hist_cdf(labelled, "series", "Host CPU utilization and memory used, per sample",
                        x_title="utilization / memory used (%)"),
            "Host samples split by whether a job of this store held a GPU of that machine at the time (memory used"
            f" % = (total - free) / total): {_list(parts)}.",
            "host_util_cdf_by_activity",
        ))


def _grid_sentence(grid: pl.DataFrame) -> str:
    """Compare packed vs spread within the job size that has the most jobs in both placements."""
    best = None
    for gpus in sorted(set(grid.get_column("num_gpus").to_list())):
        part = grid.filter(pl.col("num_gpus") == gpus)
        one, many = part.filter(pl.col("num_servers") == 1), part.filter(pl.col("num_servers") > 1)
        if one.is_empty() or many.is_empty():
            continue
        n = min(int(one.get_column("jobs").sum()), int(many.get_column("jobs").sum()))
        if best is None or n > best[0]:
            best = (n, gpus, one.row(0, named=True), many)
    if best is None:
        return ("No job size occurs both packed on one server and spread over several, so the effect of locality"
                " cannot be read off this grid.")
    _, gpus, one, many = best
    spread = [f"{x['mean_util_pct']:.1f}% on {x['num_servers']} servers (n={x['jobs']})" for x in many.iter_rows(named=True)]
    return (f"Each cell is the mean utilization of the jobs with that many GPUs and servers (n = jobs). {gpus}-GPU"
            f" jobs, the size with the most jobs in both placements, averaged {one['mean_util_pct']:.1f}% packed on"
            f" one server (n={one['jobs']}) vs {', '.join(spread)}.")


def _failures(r: dict[str, pl.DataFrame]) -> Section:
    s = Section("failures", "Failures")
    summary = _first(r["failure_summary"])
    trials = int(summary.get("trials") or 0)
    log_files = int(summary.get("log_files") or 0)
    s.add(Paragraph(
        "A failed attempt (a trial, in the study's words) is an attempt that ended in failure: where the source"
        " gives each attempt's status, one that ended failed, timeout, node_fail or preempted (killed is a"
        " decision, not a failure); otherwise every attempt that was retried, and the final attempt of a job whose"
        " final status is one of those, or of a killed job whose log names a cause other than user_kill. Its"
        " runtime to failure is its end - start, and the GPU time it lost is that runtime x its GPUs. Its root cause is the highest-priority classification among its log files"
        " (stdout/stderr); reasons and their categories (infrastructure, framework, user) are those of"
        " docs/domain.md, and jobs.csv's failure_reason is the cause of a failed job's last failed attempt."
    ))
    if trials and log_files:
        s.add(Paragraph(_failure_headline(summary, r["failure_log_matching"]), "finding"))

    s.add(Paragraph("Failure reasons", "h3"))
    if not log_files:
        unclassified = (f"all {plural(trials, 'failed attempt')} of this store are unclassified (100%)" if trials
                        else "no attempt in this store failed either")
        s.add(Paragraph(
            f"Not classified yet: no job logs were ingested, so why attempts failed is unknown; {unclassified}."
            " What the scheduler records is below. Ingesting the jobs' stdout/stderr (gca ingest LOG_DIR; the"
            " README lists the layouts it reads) classifies each failed attempt's root cause, fills jobs.csv's failure_reason and failure_category, and adds the"
            " failed attempts, jobs and GPU time lost per reason and category here.", "note"))
    elif not trials:
        s.add(Paragraph(f"No attempt in this store failed ({plural(log_files, 'job log file')} ingested).", "note"))
    else:
        _failure_reasons(s, r)
        s.add(Paragraph("Repeated failures", "h3"))
        _failure_repetition(s, r)

    s.add(Paragraph("Failed attempts", "h3"))
    _failed_attempts(s, r, trials, classified=bool(log_files))

    s.add(Paragraph("What the scheduler records", "h3"))
    _scheduler_failures(s, r)
    return s


def _failure_headline(summary: dict, matching: pl.DataFrame) -> str:
    trials = summary["trials"]
    text = (
        f"{plural(trials, 'failed attempt')} in {plural(summary['jobs_with_failed_attempts'], 'job')}:"
        f" {fmt_int(summary['classified_trials'])} ({fmt_share(summary['classified_trials'] / trials)}) have a"
        f" classified root cause; unclassified: {fmt_pct(summary['unclassified_pct'])}"
        f" ({fmt_int(summary['unknown_trials'])} with a log in which no signature matched,"
        f" {fmt_int(summary['no_log_trials'])} without any log). Failed attempts lost"
        f" {fmt_int(summary['gpu_hours_lost'])} GPU-hours, {fmt_pct(summary['gpu_time_lost_pct'])} of all allocated"
        f" GPU time; median runtime to failure {fmt_dur(summary['rtf_p50_s'])} (p90 {fmt_dur(summary['rtf_p90_s'])},"
        f" p95 {fmt_dur(summary['rtf_p95_s'])})."
    )
    elsewhere = int(matching.filter(pl.col("outcome") != "failed attempt").get_column("log_files").sum()) \
        if not matching.is_empty() else 0
    if elsewhere:
        text += (f" {fmt_int(elsewhere)} of the {plural(summary['log_files'], 'ingested log file')} belong to no"
                 " failed attempt (failure_log_matching.csv).")
    return text


def _failed_attempts(s: Section, r: dict[str, pl.DataFrame], trials: int, classified: bool) -> None:
    by_status = r["failure_trials_by_status"]
    if not trials:
        s.add(Paragraph("No failed attempts: no attempt was retried, and no job ended failed, timeout, node_fail"
                        " or preempted.", "note"))
        return
    parts = [f"{x['status']} jobs: {plural(x['trials'], 'failed attempt')} in {plural(x['jobs'], 'job')}"
             f" ({x['trials_per_job']:.2f} per job), median runtime to failure {fmt_dur(x['rtf_p50_s'])}"
             f" (p95 {fmt_dur(x['rtf_p95_s'])}), {fmt_int(x['gpu_hours_lost'])} GPU-hours lost"
             f" ({fmt_pct(x['gpu_time_lost_pct'])})" for x in _rows(by_status)]
    s.add(Table("failure_trials_by_status", by_status,
                f"Failed attempts by their job's final status (a passed job's failed attempts are those it retried"
                f" after): {_list(parts)}."))
    cdf = r["failure_rtf_cdf"]
    if cdf.is_empty():
        s.add(Paragraph("No failed attempt has both a start and an end, so there is no runtime to failure to show.",
                        "note"))
        return
    present = set(cdf.get_column("category").to_list())
    if classified:
        title, shown = "Runtime to failure of failed attempts, by failure category", cdf
    else:
        title = "Runtime to failure of failed attempts"
        shown = cdf.with_columns(pl.lit("all failed attempts").alias("category"))
    n_rtf = int(by_status.get_column("trials_with_runtime").sum())
    groups = (
        [(x["category"], x) for x in _rows(r["failure_categories"])] if classified
        else [(f"{x['status']} jobs", x) for x in _rows(by_status)]
    )
    medians = [f"{name}: median {fmt_dur(x['rtf_p50_s'])}"
               + (f", p90 {fmt_dur(x['rtf_p90_s'])}" if "rtf_p90_s" in x else "")
               for name, x in groups if x["rtf_p50_s"] is not None]
    s.add(Figure(
        "fig-failure-rtf-cdf",
        fg.cdf_lines(shown, "category", "runtime_to_failure_s", title, "runtime to failure (log scale)",
                     order=[c for c in fg.CATEGORY_COLORS if c in present] if classified else None,
                     colors=fg.CATEGORY_COLORS if classified else None, y_title="share of failed attempts (CDF)"),
        f"Runtime to failure (end - start) of the {plural(n_rtf, 'failed attempt')} that have both times, of"
        f" {fmt_int(trials)}. " + _list(medians) + ".",
        "failure_rtf_cdf",
    ))


def _failure_reasons(s: Section, r: dict[str, pl.DataFrame]) -> None:
    cats = r["failure_categories"]
    parts = [f"{x['category']} {fmt_pct(x['trials_pct'])} of failed attempts ({fmt_int(x['trials'])}) and"
             f" {fmt_pct(x['gpu_time_lost_pct'])} of the GPU time they lost (median runtime to failure"
             f" {fmt_dur(x['rtf_p50_s'])})" for x in _rows(cats)]
    s.add(Figure(
        "fig-failure-categories",
        fg.pct_bars(cats, "category",
                    [("trials_pct", "of failed attempts", "trials", "failed attempts"),
                     ("jobs_pct", "of jobs with a failed attempt", "jobs", "jobs"),
                     ("gpu_time_lost_pct", "of GPU time lost", "gpu_hours_lost", "GPU-hours")],
                    "Failed attempts, jobs and GPU time lost by failure category", "failure category"),
        f"By category: {_list(parts)}. A job that failed for reasons of several categories counts in each.",
        "failure_categories",
    ))

    reasons = r["failure_reasons"]
    known = reasons.filter(~pl.col("reason").is_in(list(UNCLASSIFIED)))
    if known.is_empty():
        text = "No failed attempt has a classified root cause: their logs matched no signature, or they have none."
    else:
        top = known.row(0, named=True)
        costly = known.sort("gpu_hours_lost", descending=True).head(3)
        costly_parts = [f"{x['reason']} {fmt_pct(x['gpu_time_lost_pct'])} ({fmt_int(x['gpu_hours_lost'])} GPU-hours,"
                        f" median runtime to failure {fmt_dur(x['rtf_p50_s'])})" for x in _rows(costly)]
        text = (f"{plural(known.height, 'classified reason')}. The most frequent was {top['reason']}"
                f" ({top['category']}): {plural(top['trials'], 'failed attempt')} ({fmt_pct(top['trials_pct'])}) in"
                f" {plural(top['jobs'], 'job')} of {plural(top['users'], 'user')}. Most GPU time lost (share of all"
                f" failed attempts' lost GPU time): {_list(costly_parts)}.")
    s.add(Figure(
        "fig-failure-reasons",
        fg.pct_bars(reasons, "reason",
                    [("trials_pct", "of failed attempts", "trials", "failed attempts"),
                     ("gpu_time_lost_pct", "of GPU time lost", "gpu_hours_lost", "GPU-hours")],
                    "Failed attempts and GPU time lost by root cause", "root cause", horizontal=True),
        f"{text} {PAPER_FAILURES}",
        "failure_reasons",
    ))
    s.add(Table("failure_reasons", reasons,
                "Failed attempts per root cause. jobs: distinct jobs with at least one failed attempt of that"
                " reason (a job retried after different failures counts under each, so jobs_pct does not sum to"
                " 100); rtf: runtime to failure percentiles; job_repetition / user_repetition: failed attempts per"
                " job / per user with that reason.", max_rows=40))

    timed = reasons.filter(pl.col("trials_with_runtime") > 0)
    if not timed.is_empty():
        by_p50 = timed.sort("rtf_p50_s")
        fast, slow = by_p50.row(0, named=True), by_p50.row(-1, named=True)
        late = timed.filter(pl.col("rtf_p50_s") > 600)
        s.add(Figure(
            "fig-failure-rtf-by-reason",
            fg.quantile_bars(timed, "reason", "Runtime to failure by root cause", "root cause",
                             [("rtf_p50_s", "p50"), ("rtf_p90_s", "p90"), ("rtf_p95_s", "p95")],
                             count="trials_with_runtime"),
            f"Median runtime to failure ranges from {fmt_dur(fast['rtf_p50_s'])} ({fast['reason']},"
            f" n={fmt_int(fast['trials_with_runtime'])}) to {fmt_dur(slow['rtf_p50_s'])} ({slow['reason']},"
            f" n={fmt_int(slow['trials_with_runtime'])}). Reasons whose median is over 10 minutes account for"
            f" {fmt_pct(late.get_column('trials_pct').sum())} of failed attempts and"
            f" {fmt_pct(late.get_column('gpu_time_lost_pct').sum())} of the GPU time lost.",
            "failure_reasons",
        ))

    by_size = r["failure_by_size"]
    lost = by_size.group_by("size_bucket", "size_order", "category").agg(
        pl.col("trials").sum(), pl.col("gpu_hours_lost").sum()).sort("size_order", "category")
    if not lost.is_empty() and float(lost.get_column("gpu_hours_lost").sum()) > 0:
        parts = []
        for bucket in [b for b in fg.SIZE_ORDER if b in set(lost.get_column("size_bucket").to_list())]:
            part = by_size.filter(pl.col("size_bucket") == bucket)
            worst = part.sort("gpu_hours_lost", descending=True).row(0, named=True)
            parts.append(f"{gpus_label(bucket)}: {plural(part.get_column('trials').sum(), 'failed attempt')},"
                         f" {fmt_int(part.get_column('gpu_hours_lost').sum())} GPU-hours lost, most by"
                         f" {worst['reason']} ({fmt_pct(worst['size_gpu_time_lost_pct'])})")
        s.add(Figure(
            "fig-failure-by-size",
            fg.stacked_bars(lost, "size_bucket", "gpu_hours_lost", "category",
                            "GPU time lost to failed attempts by job size and failure category", "GPUs per job",
                            "GPU-hours lost",
                            x_order=[b for b in fg.SIZE_ORDER if b in set(lost.get_column("size_bucket").to_list())],
                            stack_order=list(fg.CATEGORY_COLORS), colors=fg.CATEGORY_COLORS),
            f"By job size (GPUs of the job's first allocated attempt): {_list(parts)}.",
            "failure_by_size",
        ))
    s.add(Table("failure_by_size", by_size, "Failed attempts and GPU time lost per job size and root cause."))

    matching = r["failure_log_matching"]
    s.add(Table("failure_log_matching", matching,
                "Where the ingested log files went: a log belongs to a job by job_id and to an attempt by its"
                " position in the scheduler's list (no position: the job's final attempt). Logs of attempts that did"
                " not fail are not failures (Slurm writes an output file for every job); a job_id held by several"
                " sources gets no logs rather than possibly wrong ones."))


def _failure_repetition(s: Section, r: dict[str, pl.DataFrame]) -> None:
    rep = _by(r["failure_repetition"], "scope")
    job, user = rep.get("job", {}), rep.get("user", {})
    if not job.get("trials"):
        s.add(Paragraph("No failed attempt has a classified root cause, so repetition cannot be measured.", "note"))
        return
    s.add(Paragraph(
        f"Over the {plural(job['trials'], 'classified failed attempt')}, each (job, reason) pair failed"
        f" {job['repetition_factor']:.2f} times on average and each (user, reason) pair"
        f" {an.safe_float(user.get('repetition_factor')) or 0:.2f} times (the study's repetition factor: failed"
        f" attempts per distinct job or user and reason). {plural(job['repeated_pairs'], 'job')} failed twice or more"
        f" for the same reason ({fmt_pct(job['repeated_trials_pct'])} of classified failed attempts), and their"
        f" repeats after the first lost {fmt_int(job['repeated_gpu_hours_lost'])} GPU-hours;"
        f" {plural(user.get('repeated_pairs'), '(user, reason) pair')} recurred, in one job or across a user's"
        " jobs; their repeats"
        f" lost {fmt_int(user.get('repeated_gpu_hours_lost'))} GPU-hours.", "finding"))
    s.add(Table("failure_repetition", r["failure_repetition"],
                "Repetition of the same root cause, per job and per user (classified failed attempts only)."))
    s.add(Table("failure_repeaters", r["failure_repeaters"],
                f"The jobs and users that failed most often for one reason (2+ failed attempts; the top"
                f" {TOP_REPEATERS} of each)."))


def _scheduler_failures(s: Section, r: dict[str, pl.DataFrame]) -> None:
    fs = r["failures_by_status"]
    rows = _by(fs, "status") if not fs.is_empty() else {}
    bad = [v for k, v in rows.items() if k != "passed"]
    retried = int(fs.get_column("retried_jobs").sum()) if not fs.is_empty() else 0
    retries = int(fs.get_column("retries").sum()) if not fs.is_empty() else 0
    parts = [f"{v['status']}: {fmt_int(v['jobs'])} jobs ({fmt_pct(v['jobs_pct'])}), {fmt_int(v['attempts'])} attempts,"
             f" {fmt_pct(v['gpu_time_pct'])} of GPU time" for v in sorted(bad, key=lambda v: fg.status_rank(v["status"]))]
    s.add(Table("failures_by_status", fs,
                f"Jobs not passed: {_list(parts)}. {plural(retried, 'job')} retried ({plural(retries, 'retry', 'retries')}"
                " in all: attempts after the first)."))

    at = r["job_attempts_by_status"]
    if not at.is_empty():
        total = int(at.get_column("jobs").sum())
        once = int(at.filter(pl.col("attempts") == 1).get_column("jobs").sum())
        most = int(at.get_column("attempts").max())
        s.add(Figure(
            "fig-attempts-per-job",
            fg.stacked_status_bars(at, "attempts", "jobs", "Attempts per job, by final status", "attempts",
                                   "jobs"),
            f"{fmt_share(once / total if total else None)} of {plural(total, 'job')} ran exactly once;"
            f" {plural(retried, 'job')} retried, up to {plural(most, 'attempt')};"
            f" {plural(at.filter(pl.col('attempts') == 0).get_column('jobs').sum(), 'job')} without any attempt.",
            "job_attempts_by_status",
        ))

    gs = r["gpu_time_by_status_size"]
    if not gs.is_empty() and float(gs.get_column("gpu_hours").sum()) > 0:
        failed_h = float(gs.filter(pl.col("status") != "passed").get_column("gpu_hours").sum())
        total_h = float(gs.get_column("gpu_hours").sum())
        worst = (gs.filter(pl.col("status") != "passed").sort("bucket_gpu_time_pct", descending=True, nulls_last=True)
                 .head(1).to_dicts())
        text = (f"Jobs that did not pass used {fmt_int(failed_h)} of {fmt_int(total_h)} GPU-hours"
                f" ({fmt_share(failed_h / total_h)}).")
        if worst and worst[0]["bucket_gpu_time_pct"] is not None:
            w = worst[0]
            text += (f" The largest share within a size is {w['status']} in {w['size_bucket']}-GPU jobs:"
                     f" {fmt_pct(w['bucket_gpu_time_pct'])} of that size's GPU time.")
        s.add(Figure(
            "fig-gpu-time-by-status-size",
            fg.stacked_status_bars(gs, "size_bucket", "gpu_hours", "GPU time by job size and final status",
                                   "GPUs per job", "GPU-hours",
                                   x_order=[b for b in fg.SIZE_ORDER if b in set(gs.get_column("size_bucket").to_list())]),
            text,
            "gpu_time_by_status_size",
        ))

    rt = r["run_time_cdf_by_status"]
    buckets = r["gpu_time_by_run_time_status"]
    if not rt.is_empty():
        p50 = {k: v["run_time_p50_s"] for k, v in rows.items()}
        text = "Run time is first start -> last end; for jobs that failed it is the time to failure. Median run time: " \
               + _list([f"{k} {fmt_dur(v)}" for k, v in p50.items()]) + "."
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
            text += (f", while the {fmt_int(slow_n)} that ran over a day used {fmt_pct(slow_pct)} of the {status}"
                     " jobs' GPU time." if slow_n else "; none ran over a day.")
        s.add(Figure(
            "fig-run-time-cdf-by-status",
            fg.cdf_lines(rt, "status", "run_time_s", "Run time by final status (time to failure for failed jobs)",
                         "run time (log scale)", colors=fg.STATUS_COLORS,
                         order=sorted(set(rt.get_column("status").to_list()), key=fg.status_rank)),
            text,
            "run_time_cdf_by_status",
        ))
        s.add(Table("gpu_time_by_run_time_status", buckets, "Jobs and GPU time by run time, per final status."))


def _data_quality(r: dict[str, pl.DataFrame]) -> Section:
    s = Section("data-quality", "Data quality")
    cov = _first(r["gpu_time_coverage"])
    interval = an.safe_float(_first(r["gpu_sample_interval"]).get("interval_s"))
    if not cov or cov.get("gpu_samples_non_null") in (None, 0):
        s.add(Paragraph("No GPU utilization samples in the store: utilization is empty in jobs.csv and no coverage"
                        " can be measured.", "note"))
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
            f" {fmt_int(cov['attributed_samples'])} non-null samples were attributed: coverage"
            f" {fmt_pct(cov['coverage_pct'])}. Of the telemetry's {fmt_int(cov['gpu_samples_non_null'])} non-null"
            f" samples, {fmt_pct(cov['attributed_share_pct'])} fall inside some job's allocation."
        )
        if jobs_n:
            text += (f" Per job (jobs with GPU time inside the span): {fmt_int(none_n)} of {fmt_int(jobs_n)}"
                     f" ({fmt_share(none_n / jobs_n)}) have no sample at all.")
        s.add(Figure(
            "fig-sample-coverage",
            fg.grouped_bars(jc, "coverage_bucket", "jobs", None, "Jobs by share of their GPU time covered by samples",
                            "share of the job's GPU time (inside the telemetry span) covered", "jobs",
                            y_format=",.0f"),
            text,
            "job_sample_coverage",
        ))

    rej = r["rejects_by_file"]
    n_rej = int(rej.get_column("rejects").sum()) if not rej.is_empty() else 0
    n_files = int(rej.filter(pl.col("rejects") > 0).get_column("files").sum()) if not rej.is_empty() else 0
    all_files = int(rej.get_column("files").sum()) if not rej.is_empty() else 0
    s.add(Table("rejects_by_file", rej,
                f"{plural(n_rej, 'rejected input line')} in {n_files} of {plural(all_files, 'ingested file')}; rejected lines are"
                " kept in the store's rejects table, never silently dropped."))

    o = _first(r["overview_totals"])
    mm = r["machine_capacity_mismatch"]
    more = mm.filter(pl.col("issue") == "more GPUs observed than listed")
    unlisted = mm.filter(pl.col("issue") == "not in the machine list")
    listed_only = (o.get("machines") or 0) - (o.get("machines_observed") or 0)
    example = ""
    if not more.is_empty():
        e = more.row(0, named=True)
        example = f" (e.g. {e['machine_id']}: listed {e['listed_gpus']}, observed {e['observed_gpus']})"
    s.add(Table("machine_capacity_mismatch", mm,
                f"Listed vs observed capacity: {more.height} machines show more GPUs in the data than the machine list"
                f" says{example}; {unlisted.height} appear in the data but not in the machine list; {fmt_int(listed_only)}"
                " listed machines never appear in the data (not a contradiction: the data may just not reach them)."
                " The report counts the larger of listed and observed."))

    att = r.get("gpu_time_by_attribution")
    if att is not None and not att.is_empty():
        shares = {row["attribution"]: row["gpu_time_share_pct"] for row in _rows(att)}
        guessed = (shares.get("node_level") or 0) + (shares.get("none") or 0)
        s.add(Table(
            "gpu_time_by_attribution", att,
            "How each attempt's GPU samples were found, by share of GPU time: from the scheduler's own GPU list"
            " (scheduler), GPU indices from scontrol or from CUDA_VISIBLE_DEVICES in the job's log, whole machines"
            " the job had to itself, or every GPU of machines it shared with other jobs (node_level: its utilization"
            f" mixes in theirs). {fmt_pct(guessed)} of the GPU time is node-level or has no machine at all (none),"
            " and its utilization is either mixed or missing.",
        ))

    mt = r["jobs_missing_times"]
    parts = [f"{x['count']:,} of {x['total']:,} {x['items']} with {x['check']}" for x in _rows(mt) if x["count"]]
    s.add(Table("jobs_missing_times", mt,
                "Missing times and allocations (they leave jobs.csv fields empty): " + _list(parts) + "."))
    return s
