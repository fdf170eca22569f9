"""The Locality vs utilization section: GPU utilization by placement, size, status and server sharing, and host
utilization.
"""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.analyze import statistics as an
from gpucluster_analysis.report import figure_style as style
from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import (
    describe_test,
    fmt_int,
    fmt_p,
    fmt_pct,
    fmt_share,
    join_list,
    rows_of,
)

# The published Philly numbers (domain.md, "Paper figures"), quoted for comparison.
PAPER_UTIL = "Philly, full trace: mean GPU utilization 52.3% (1-GPU jobs 52.4%, 4-GPU jobs 45.2%)."


def section(r: dict[str, pl.DataFrame], tests: list[an.TestResult]) -> Section:
    s = Section("locality", "Locality vs utilization")
    status = r["gpu_util_by_status"]
    samples = int(status.get_column("samples").sum() or 0) if not status.is_empty() else 0
    jobs_with = int(status.get_column("jobs_with_samples").sum() or 0) if not status.is_empty() else 0
    jobs_all = int(status.get_column("jobs").sum() or 0) if not status.is_empty() else 0
    s.add(Paragraph(_lead(status, tests), "finding"))
    s.add(
        Paragraph(
            "A GPU utilization sample at time t belongs to a job when t falls inside one of its attempts"
            " (start <= t < end) on a (machine, GPU) that attempt was allocated; a job's utilization is the mean of its"
            " non-null samples. Means below are sample-weighted (every GPU-minute counts once) unless they say per-job."
            f" {fmt_int(jobs_with)} of {fmt_int(jobs_all)} jobs have attributed samples ({fmt_int(samples)} samples). "
            + PAPER_UTIL
        )
    )
    if samples == 0:
        s.add(
            Paragraph(
                "No GPU utilization sample falls inside any job's allocation, so the GPU utilization figures"
                " are left out (ingest the GPU telemetry, e.g. Philly's cluster_gpu_util, to get them).",
                "note",
            )
        )
        _host(s, r)
        return s
    overall = (status.get_column("mean_util_pct") * status.get_column("samples")).sum() / samples
    s.blocks[-1].text += f" Mean utilization over all attributed samples: {fmt_pct(overall)}."  # type: ignore[union-attr]  # a Paragraph

    grid = r["gpu_util_by_gpus_servers"]
    s.add(
        Figure(
            "fig-util-by-gpus-servers",
            fg.util_heatmap(grid, "Mean GPU utilization by job size and servers spanned (sample-weighted)"),
            _grid_sentence(grid),
            "gpu_util_by_gpus_servers",
        )
    )

    cdf = r["gpu_util_cdf_by_placement"]
    main = next((t for t in tests if t.comparison == "placement, all sizes"), None)
    parts = []
    for placement in ("packed", "spread"):
        h = cdf.filter(pl.col("placement") == placement)
        if not h.is_empty():
            parts.append(
                f"{placement}: median {fmt_pct(an.hist_quantile(h, 0.5), 0)}, "
                f"{fmt_share(an.share_below(h, 10))} of samples below 10% (n={fmt_int(h.get_column('samples').sum())})"
            )
    sentence = f"Per-sample utilization, {join_list(parts)}."
    if main is not None:
        means = main.means.split("/")
        sentence += (
            f" Per-job means: jobs spread over 2+ servers averaged {means[0]}% vs {means[-1]}% when packed"
            f" on one server ({describe_test(main)})."
        )
    s.add(
        Figure(
            "fig-util-cdf-by-placement",
            fg.hist_cdf(
                cdf,
                "placement",
                "GPU utilization per sample: packed (1 server) vs spread (2+ servers)",
                order=["packed", "spread"],
                colors=style.PLACEMENT_COLORS,
            ),
            sentence,
            "gpu_util_cdf_by_placement",
        )
    )
    s.add(
        Table(
            "gpu_util_locality_tests",
            _compact_tests(an.tests_frame(tests)),
            "Tests on per-job mean utilization (means are of per-job means, in the order of the groups; "
            "rank-biserial r > 0: the first group tends higher; a test of many groups shows its range here,"
            " every group in the CSV).",
        )
    )

    st_cdf = r["gpu_util_cdf_by_status"]
    parts = [
        f"{x['status']} {fmt_pct(x['mean_util_pct'])} (n={fmt_int(x['jobs_with_samples'])} jobs)"
        for x in rows_of(status)
        if x["jobs_with_samples"]
    ]
    s.add(
        Figure(
            "fig-util-cdf-by-status",
            fg.hist_cdf(
                st_cdf,
                "status",
                "GPU utilization per sample by final status",
                colors=style.STATUS_COLORS,
                order=sorted(set(st_cdf.get_column("status").to_list()), key=style.status_rank),
            ),
            f"Mean utilization by final status: {join_list(parts)}.",
            "gpu_util_cdf_by_status",
        )
    )

    co = r["gpu_util_by_colocation"]
    if not co.is_empty():
        share_test = next((t for t in tests if t.comparison == "server sharing, all sizes"), None)
        totals = co.group_by("colocation").agg(
            pl.col("jobs").sum(),
            pl.col("samples").sum(),
            (pl.col("mean_util_pct") * pl.col("samples")).sum().alias("w"),
        )
        tot = {x["colocation"]: x for x in totals.iter_rows(named=True)}
        parts = [
            f"{k} {fmt_pct(v['w'] / v['samples'] if v['samples'] else None)} (n={fmt_int(v['jobs'])} jobs)"
            for k, v in sorted(tot.items(), reverse=True)
        ]
        text = (
            f"Jobs that shared a server with another job of this store (their windows on a machine overlapped"
            f" in time) vs jobs alone on their servers, sample-weighted mean utilization: {join_list(parts)}."
        )
        if share_test is not None:
            text += f" Per-job means {share_test.means.replace('/', '% vs ')}% ({describe_test(share_test)})."
        s.add(
            Figure(
                "fig-util-by-colocation",
                fg.grouped_bars(
                    co,
                    "size_bucket",
                    "mean_util_pct",
                    "colocation",
                    "Mean GPU utilization: sharing a server vs alone, by job size",
                    "GPUs per job",
                    "mean utilization (%)",
                    count="jobs",
                    color_order=["shared", "alone"],
                    colors={"shared": "#9467bd", "alone": "#1f77b4"},
                ),
                text,
                "gpu_util_by_colocation",
            )
        )

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
            parts.append(
                f"{series}: mean {fmt_pct(an.hist_mean(h, 'value_sum'))} (n={fmt_int(h.get_column('samples').sum())})"
            )
        s.add(
            Figure(
                "fig-host-util",
                fg.hist_cdf(
                    labelled,
                    "series",
                    "Host CPU utilization and memory used, per sample",
                    x_title="utilization / memory used (%)",
                ),
                "Host samples split by whether a job of this store held a GPU of that machine at the time (memory used"
                f" % = (total - free) / total): {join_list(parts)}.",
                "host_util_cdf_by_activity",
            )
        )


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
        return (
            "No job size occurs both packed on one server and spread over several, so the effect of locality"
            " cannot be read off this grid."
        )
    _, gpus, packed, many = best
    spread = [
        f"{x['mean_util_pct']:.1f}% on {x['num_servers']} servers (n={x['jobs']})" for x in many.iter_rows(named=True)
    ]
    return (
        f"Each cell is the mean utilization of the jobs with that many GPUs and servers (n = jobs). {gpus}-GPU"
        f" jobs, the size with the most jobs in both placements, averaged {packed['mean_util_pct']:.1f}% packed on"
        f" one server (n={packed['jobs']}) vs {', '.join(spread)}."
    )


def _compact_tests(tests: pl.DataFrame, most: int = 4) -> pl.DataFrame:
    """The tests table for the page: a test of more than `most` groups (Kruskal-Wallis over
    every server count) lists its first and last group, the jobs in all and the range of
    the means, so that the row fits its card."""

    def compact(row: dict) -> dict:
        groups = str(row["groups"] or "").split(" vs ")
        if len(groups) <= most:
            return {
                **row,
                "n": str(row["n"] or "").replace("/", " / "),
                "means": str(row["means"] or "").replace("/", " / "),
            }
        counts = [int(x) for x in str(row["n"]).split("/") if x.strip().isdigit()]
        means = [float(x) for x in str(row["means"]).split("/") if x.strip()]
        return {
            **row,
            "groups": f"{groups[0]} … {groups[-1]} ({len(groups)} groups)",
            "n": f"{sum(counts):,} in all",
            "means": f"{min(means):.1f} to {max(means):.1f}" if means else "",
        }

    return (
        pl.DataFrame([compact(r) for r in tests.iter_rows(named=True)], schema=tests.schema) if tests.height else tests
    )


def _lead(status: pl.DataFrame, tests: list[an.TestResult]) -> str:
    """The section's answer: mean utilization, and what spreading a job over servers did to it."""
    samples = int(status.get_column("samples").sum() or 0) if not status.is_empty() else 0
    if not samples:
        return "No GPU utilization sample belongs to a job, so utilization and locality cannot be measured here."
    mean = sum((x["mean_util_pct"] or 0) * (x["samples"] or 0) for x in rows_of(status)) / samples
    text = f"The jobs' GPUs were {fmt_pct(mean)} utilized (mean over {fmt_int(samples)} attributed samples)"
    placement = next((t for t in tests if t.comparison == "placement, all sizes" and t.test), None)
    if placement is None:
        return text + "; no job size ran both packed and spread, so locality's effect cannot be tested."
    spread, packed = (float(x) for x in placement.means.split("/"))
    verdict = "lower" if spread < packed else "higher"
    return (
        text + f"; jobs spread over several servers averaged {fmt_pct(spread)} per job vs {fmt_pct(packed)}"
        f" packed on one ({verdict}; {placement.test}, {fmt_p(placement.p_value)})."
    )
