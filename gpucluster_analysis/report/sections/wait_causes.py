"""Why jobs wait: the Queueing section's lead, from the replay (gpucluster_analysis.replay).

Every second of a job's first wait has one cause (user limit where per-user caps are known,
fair share, capacity, fragmentation, other); these blocks say how the waiting GPU-time divides
among them overall, by job size and by VC, what the cluster looked like meanwhile, what two scheduler changes would have
saved, which quotas were used, and how the scheduler's own pending reasons compare.
"""

from __future__ import annotations

import polars as pl

from gpucluster_analysis import wait_causes
from gpucluster_analysis.report import figure_style as style
from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Table
from gpucluster_analysis.report.sections.text import fmt_int, fmt_pct, gpus_label, join_list, rows_of

Block = Paragraph | Figure | Table
CAUSE_WORDS = wait_causes.WORDS
SCHEDULER_REASON_CAUSE = {  # what each Slurm pending reason corresponds to, to count agreement
    "Resources": ("capacity", "fragmentation"),
    "Priority": ("other",),
    # a user association's GrpTRES is reported as AssocGrpGRES too: a per-user cap in the account
    "AssocGrpGRES": ("fair_share", "user_limit"),
    "AssocGrpGRESMinutes": ("fair_share",),
    "AssocGrpCpuLimit": ("fair_share",),
    "AssocGrpNodeLimit": ("fair_share",),
    "AssocMaxJobsLimit": ("fair_share",),
    "QOSGrpGRES": ("fair_share",),
    # a QOS's per-user limits (MaxTRESPU and the like)
    "QOSMaxGRESPerUser": ("user_limit",),
    "QOSMaxCpuPerUserLimit": ("user_limit",),
    "QOSMaxNodePerUserLimit": ("user_limit",),
    "QOSMaxMemoryPerUser": ("user_limit",),
    "QOSMaxBillingPerUser": ("user_limit",),
    "QOSMaxJobsPerUserLimit": ("user_limit",),
}


def blocks(r: dict[str, pl.DataFrame]) -> list[Block]:
    out: list[Block] = []
    by_size = r["wait_causes_by_size"]
    clusters = rows_of(r.get("wait_clusters"))
    total = by_size.filter(pl.col("size_bucket") == "all")
    gpu_hours = float(total.get_column("wait_gpu_hours").sum()) if not total.is_empty() else 0.0
    if not clusters or total.is_empty():
        out.append(
            Paragraph(
                "No GPU job has both a queue start and a first start with a known GPU count, so no"
                " waiting can be split into causes.",
                "note",
            )
        )
        return out
    shares = {x["cause"]: x for x in rows_of(total)}
    jobs = int(total.get_column("jobs").max())  # type: ignore[arg-type]  # a count column's max
    parts = [f"{fmt_pct(shares[c]['share_pct'])} was {words}" for c, words in CAUSE_WORDS.items() if c in shares]
    out.append(
        Paragraph(
            f"Of the {fmt_int(gpu_hours)} GPU-hours that {fmt_int(jobs)} GPU jobs spent waiting for their first start,"
            f" {join_list(parts)}.",
            "finding",
        )
    )
    out.append(Paragraph(_method(clusters) + _unsplit(r["wait_unsplit"])))
    out.extend(_by_size(by_size))
    out.extend(_by_vc(r["wait_causes_by_vc"]))
    out.extend(_abandoned(r["wait_abandoned"]))
    out.extend(_timeline(r["wait_timeline"], clusters))
    out.extend(_what_ifs(r["wait_what_ifs"]))
    out.extend(_quotas(r["quotas"], clusters))
    out.extend(_pending(r.get("pending_reasons_vs_replay")))
    return out


def _method(clusters: list[dict]) -> str:
    c0 = clusters[0]
    text = (
        "How: the cluster is replayed from the stored attempts (an attempt holds its GPUs from its start to its end)"
        " and each second of a job's first wait (queue start -> first start) gets the first cause that holds at that"
        " second: user limit if the GPUs its user holds under one of its per-user caps (sacctmgr: the user's"
        " association in its account, its QOS's MaxTRESPU) plus its own exceed that cap, fair share if the "
        "GPUs its VC held plus its own exceed the VC's quota, capacity if fewer GPUs were"
        " free in the whole cluster than it needs, fragmentation if enough were free but not under the locality rule"
        f" ({c0['locality_rule']}), else other. Quotas: {c0['quotas_origin']}. Waiting GPU-time weighs each second by"
        " the job's GPUs; jobs with zero or unknown GPUs are not split. Retry waits (between attempts) are apart."
    )
    for c in clusters:
        where = (
            f"{fmt_int(c['machines'])} machines with {fmt_int(c['capacity_gpus'])} GPUs"
            if c["placement_known"]
            else f"{fmt_int(c['capacity_gpus'])} GPUs "
            f"({'the node list' if c['capacity_basis'] == 'machines' else 'the most ever held at once, inferred'})"
        )
        text += f" Source {c['source']}: {where}"
        if not c["placement_known"]:
            text += (
                ", no machine named for any job, so per-machine state is unknown: fragmentation is not split"
                " (empty in jobs.csv) and counts as other here"
            )
        elif c["placed_gpu_time_pct"] is not None and c["placed_gpu_time_pct"] < 99.5:
            text += f"; {fmt_pct(c['placed_gpu_time_pct'])} of its GPU time names its machines"
        text += "."
    if clusters[0].get("machines_unattributed"):
        text += (
            f" {fmt_int(clusters[0]['machines_unattributed'])} machines seen only in samples or an old machine list"
            " could not be given to one of several sources and are left out."
        )
    return text


def _unsplit(unsplit: pl.DataFrame) -> str:
    if unsplit.is_empty():
        return " Every job's wait was split."
    parts = [f"{x['why']} {fmt_int(x['jobs'])}" for x in rows_of(unsplit)]
    return f" Not split ({fmt_int(unsplit.get_column('jobs').sum())} jobs): {join_list(parts)}."


def _by_size(by_size: pl.DataFrame) -> list[Block]:
    sized = by_size.filter(pl.col("size_bucket") != "all")
    buckets = [b for b in dict.fromkeys(sized.sort("size_order").get_column("size_bucket").to_list())]
    parts = []
    for b in buckets:
        part = sized.filter(pl.col("size_bucket") == b)
        top = part.sort("share_pct", descending=True, nulls_last=True).row(0, named=True)
        if top["share_pct"] is None:
            continue
        frag = part.filter(pl.col("cause") == "fragmentation").get_column("share_pct").to_list()
        parts.append(
            f"{gpus_label(b)} (n={fmt_int(top['jobs'])}): mostly {top['cause']} ({fmt_pct(top['share_pct'])}),"
            f" fragmentation {fmt_pct(frag[0] if frag else None)}"
        )
    return [
        Figure(
            "fig-wait-causes-by-size",
            fg.stacked_bars(
                sized,
                "size_bucket",
                "share_pct",
                "cause",
                "Why GPU jobs waited, by job size (share of waiting GPU-time; GPU jobs only)",
                "GPUs per job",
                "share of waiting GPU-time (%)",
                x_order=buckets,
                stack_order=list(style.CAUSE_COLORS),
                colors=style.CAUSE_COLORS,
            ),
            f"By job size (GPU jobs only; the study: fragmentation dominates for large jobs): {join_list(parts)}.",
            "wait_causes_by_size",
        )
    ]


def _by_vc(by_vc: pl.DataFrame) -> list[Block]:
    if by_vc.is_empty():
        return []
    vcs = list(dict.fromkeys(by_vc.sort("vc_rank").get_column("vc").to_list()))
    parts = []
    for vc in vcs[:5]:
        part = by_vc.filter(pl.col("vc") == vc)
        hours = float(part.get_column("wait_gpu_hours").sum())
        top = part.sort("share_pct", descending=True, nulls_last=True).row(0, named=True)
        parts.append(f"{vc}: {fmt_int(hours)} GPU-hours, {fmt_pct(top['share_pct'])} {top['cause']}")
    return [
        Figure(
            "fig-wait-causes-by-vc",
            fg.stacked_bars(
                by_vc,
                "vc",
                "wait_gpu_hours",
                "cause",
                "Waiting GPU-time by virtual cluster and cause (GPU jobs only)",
                "virtual cluster",
                "waiting GPU-hours",
                x_order=[str(v) for v in vcs],
                stack_order=list(style.CAUSE_COLORS),
                colors=style.CAUSE_COLORS,
            ),
            f"The VCs that waited most (waiting GPU-hours, main cause): {join_list(parts)}.",
            "wait_causes_by_vc",
        )
    ]


def _abandoned(ab: pl.DataFrame) -> list[Block]:
    if ab.is_empty():
        return [
            Paragraph(
                "No job that never started has a known end of its wait (cancelled while pending with an end"
                " time, or still pending at the end of the trace), so no abandoned waits are counted.",
                "note",
            )
        ]
    jobs = int(ab.group_by("status").agg(pl.col("jobs").max()).get_column("jobs").sum())
    hours = float(ab.get_column("wait_gpu_hours").sum())
    causes = ab.group_by("cause").agg(pl.col("wait_gpu_hours").sum()).sort("wait_gpu_hours", descending=True)
    top = causes.row(0, named=True)
    return [
        Table(
            "wait_abandoned",
            ab,
            f"Abandoned waits, counted apart from queueing delay: {fmt_int(jobs)} jobs never started (cancelled or"
            f" killed while pending, or still pending at the end) after waiting {fmt_int(hours)} GPU-hours in all,"
            f" {fmt_pct(100 * top['wait_gpu_hours'] / hours if hours else None)} of it {top['cause']}.",
        )
    ]


def _timeline(tl: pl.DataFrame, clusters: list[dict]) -> list[Block]:
    if tl.is_empty():
        return []
    parts = []
    for c in clusters:
        text = (
            f"{c['source']}: mean load {fmt_pct(c['mean_load_pct'])} of {fmt_int(c['capacity_gpus'])} GPUs,"
            f" {fmt_int(c['mean_free_gpus'])} free on average"
        )
        if c["time_with_idle_machine_pct"] is not None:
            text += (
                f", at least one machine fully idle {fmt_pct(c['time_with_idle_machine_pct'])} of the time"
                f" ({c['mean_idle_machines']:.1f} on average)"
            )
        parts.append(text)
    multi = tl.get_column("source").n_unique() > 1
    return [
        Figure(
            "fig-wait-timeline",
            fg.time_lines(
                tl,
                "bin_start",
                [("free_gpus", "free GPUs", "y"), ("idle_machines", "fully idle machines", "y2")],
                "Free GPUs and fully idle machines over time (time-weighted mean per bin)",
                ("free GPUs", "fully idle machines"),
                group="source" if multi else None,
            ),
            f"While jobs waited (the study: fully idle machines are rare even at two-thirds load): {join_list(parts)}.",
            "wait_timeline",
        )
    ]


def _what_ifs(wi: pl.DataFrame) -> list[Block]:
    if wi.is_empty():
        return []
    parts = [
        f"{x['what_if']}: {fmt_int(x['saved_gpu_hours'])} of {fmt_int(x['wait_gpu_hours'])} waiting GPU-hours"
        f" ({fmt_pct(x['saved_pct'])}, {fmt_int(x['jobs_helped'])} of {fmt_int(x['jobs_considered'])} jobs)"
        for x in rows_of(wi)
    ]
    return [
        Table(
            "wait_what_ifs",
            wi,
            f"What-ifs from the same replay, first-order (each job alone, the others as they were, so the"
            f" savings are upper bounds): {join_list(parts)}.",
        )
    ]


def _quotas(q: pl.DataFrame, clusters: list[dict]) -> list[Block]:
    if q.is_empty():
        return []
    vcs = q.filter(pl.col("kind") == "vc") if "kind" in q.columns else q
    caps = q.filter(pl.col("kind") != "vc") if "kind" in q.columns else q.head(0)
    with_quota = vcs.filter(pl.col("quota_gpus").is_not_null())
    return [
        Table(
            "quotas",
            q,
            f"VC quotas the replay used ({clusters[0]['quotas_origin']}): {fmt_int(with_quota.height)} of"
            f" {fmt_int(vcs.height)} VCs have one; held GPUs beside them (peak, mean and time-weighted p95)."
            " A VC without a quota is never fair-share delayed. Give your own with gca report --quotas FILE.toml"
            " (it wins over sacctmgr's). The origin column says where each quota came from"
            " (file, sacctmgr, inferred)." + _caps_text(caps),
            max_rows=40,
        )
    ]


def _caps_text(caps: pl.DataFrame) -> str:
    if caps.is_empty():
        return " No per-user GPU cap is known (sacctmgr's associations and QOS give them), so no wait is user limit."
    per_account = caps.filter(pl.col("kind") == "user").height
    per_qos = caps.filter(pl.col("kind") == "qos_user").get_column("qos").to_list()
    parts = ([f"{fmt_int(per_account)} users with a cap in an account"] if per_account else []) + (
        [f"each user of QOS {', '.join(per_qos)}"] if per_qos else []
    )
    return f" Per-user GPU caps from sacctmgr (kind user, qos_user): {join_list(parts)}."


def _pending(p: pl.DataFrame | None) -> list[Block]:
    if p is None or p.is_empty():
        return []
    judged = p.filter(
        pl.col("reason").is_in(list(SCHEDULER_REASON_CAUSE)) & pl.col("replay_cause").is_in(list(CAUSE_WORDS))
    )
    agree = sum(x["snapshots"] for x in rows_of(judged) if x["replay_cause"] in SCHEDULER_REASON_CAUSE[x["reason"]])
    n = int(judged.get_column("snapshots").sum()) if not judged.is_empty() else 0
    total = int(p.get_column("snapshots").sum())
    return [
        Table(
            "pending_reasons_vs_replay",
            p,
            f"The scheduler's own pending reasons (squeue snapshots) beside the replay's cause at the same instant:"
            f" of {fmt_int(total)} snapshots, {fmt_int(n)} have a reason with a counterpart (Resources: capacity or"
            f" fragmentation; Priority: other; AssocGrp*/QOSGrpGRES: fair share, AssocGrpGRES also user limit;"
            f" QOSMax*PerUser: user limit) while the replay has the job"
            f" waiting, and {fmt_pct(100 * agree / n if n else None)} of those agree.",
            max_rows=40,
        )
    ]
