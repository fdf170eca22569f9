"""The "Who wastes GPUs" section: the GPU time users and VCs left unused, ranked above a volume
floor, and its trend by week (query gpu_waste, whose header defines every number)."""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.analyze import parameters
from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import fmt_int, fmt_pct, fmt_share, plural

TOP_USERS_DRAWN = 15  # users in the bar chart, most unused GPU-hours first
PARTS = (
    ("used", "used GPU-hours"),
    ("unused", "unused GPU-hours"),
    ("unknown_gpu_hours", "GPU-hours without utilization samples"),
)
# The ranked table's columns, in the order a reader compares them.
TABLE_COLUMNS = (
    "scope",
    "rank",
    "source",
    "name",
    "jobs",
    "gpu_hours",
    "gpu_hours_pct",
    "mean_gpu_util_pct",
    "unused_gpu_hours",
    "idle_jobs",
    "idle_gpu_hours",
    "unknown_gpu_hours",
    "mean_sm_active_pct",
)


def section(r: dict[str, pl.DataFrame]) -> Section | None:
    """None when no job with GPU time has a utilization sample: then nothing is known of waste."""
    waste = r["gpu_waste"]
    users = waste.filter(pl.col("scope") == "user")
    measured = float(users.get_column("measured_gpu_hours").sum()) if not users.is_empty() else 0.0
    if measured <= 0:
        return None
    s = Section("waste", "Who wastes GPUs")
    s.add(Paragraph(_lead(users, measured), "finding"))
    s.add(
        Paragraph(
            "A job's GPU time (GPUs x run time of its attempts) is split by its mean utilization.gpu: used ="
            " GPU time x mean / 100, the rest unused (so the shares here are GPU-hour-weighted, where the"
            " Overview's mean utilization weighs each sample alike). A job whose every sample read 0% is idle:"
            " it never used its GPUs. A job without a utilization sample is unknown, never counted as used,"
            " unused or idle."
            f" Users and VCs are ranked only with at least {parameters.WASTE_FLOOR_PCT:g}% of all GPU-hours,"
            " so that a small user is not named for one job."
        )
    )
    several_sources = waste.get_column("source").n_unique() > 1
    ranked_users = (
        users.filter(pl.col("rank").is_not_null())
        .sort("rank")
        .head(TOP_USERS_DRAWN)
        .with_columns(
            label=pl.format("{} ({})", "name", "source") if several_sources else pl.col("name"),
        )
    )
    if not ranked_users.is_empty():
        s.add(
            Figure(
                "fig-waste-by-user",
                fg.stacked_bars(
                    _parts(ranked_users),
                    "label",
                    "gpu_hours",
                    "part",
                    f"GPU-hours by user, most unused first (users with at least {parameters.WASTE_FLOOR_PCT:g}%)",
                    "user",
                    "GPU-hours",
                    x_order=ranked_users.get_column("label").to_list(),
                    stack_order=[label for _, label in PARTS],
                ),
                _users_sentence(ranked_users),
                "gpu_waste",
            )
        )
    weeks = waste.filter((pl.col("scope") == "week") & (pl.col("measured_gpu_hours") > 0)).sort("source", "name")
    if weeks.height > 1:
        s.add(
            Figure(
                "fig-waste-by-week",
                fg.time_lines(
                    weeks,
                    "name",
                    [("unused_gpu_hours", "unused GPU-hours", "y"), ("unused_pct", "unused share (%)", "y2")],
                    "Unused GPU time by week of the jobs' first start",
                    ("unused GPU-hours", "unused share of measured GPU time (%)"),
                    group="source" if several_sources else None,
                ),
                _weeks_sentence(weeks),
                "gpu_waste",
            )
        )
    ranked = waste.filter(pl.col("rank").is_not_null()).select(TABLE_COLUMNS)
    s.add(
        Table(
            "gpu_waste",
            ranked,
            "Users and VCs with at least"
            f" {parameters.WASTE_FLOOR_PCT:g}% of the GPU-hours, most unused GPU-hours first; every user, VC and"
            " week, with the measured and SM-activity GPU-hours, is in the CSV.",
        )
    )
    return s


def _lead(users: pl.DataFrame, measured: float) -> str:
    total = float(users.get_column("gpu_hours").sum())
    unused = float(users.get_column("unused_gpu_hours").sum())
    unknown = float(users.get_column("unknown_gpu_hours").sum())
    idle_jobs = int(users.get_column("idle_jobs").sum())
    idle = float(users.get_column("idle_gpu_hours").sum())
    text = (
        f"{fmt_int(unused)} of the {fmt_int(measured)} GPU-hours with utilization samples went unused"
        f" ({fmt_share(unused / measured)})"
    )
    top = users.filter(pl.col("rank") == 1).to_dicts()
    if top:
        t = top[0]
        text += (
            f"; user {t['name']} left the most: {fmt_int(t['unused_gpu_hours'])} of {fmt_int(t['measured_gpu_hours'])}"
            f" measured GPU-hours unused ({fmt_pct(t['mean_gpu_util_pct'])} mean utilization)"
        )
    text += f". {plural(idle_jobs, 'job')} never used their GPUs (every sample 0%): {fmt_int(idle)} GPU-hours."
    if unknown > 0:
        text += (
            f" {fmt_int(unknown)} GPU-hours ({fmt_share(unknown / total)} of all) have no utilization sample:"
            " unknown, not idle."
        )
    return text


def _parts(users: pl.DataFrame) -> pl.DataFrame:
    """Long rows (label, part, gpu_hours) for the stacked bars: used, unused and unknown per user."""
    wide = users.with_columns(
        (pl.col("measured_gpu_hours") - pl.col("unused_gpu_hours")).alias("used"),
        pl.col("unused_gpu_hours").alias("unused"),
    )
    return pl.concat(
        wide.select("label", pl.lit(label).alias("part"), pl.col(column).alias("gpu_hours")) for column, label in PARTS
    )


def _users_sentence(users: pl.DataFrame) -> str:
    shown = users.to_dicts()
    unused = sum(u["unused_gpu_hours"] for u in shown)
    return (
        f"The {plural(len(shown), 'user')} drawn left {fmt_int(unused)} GPU-hours unused; the first,"
        f" {shown[0]['name']}, used {fmt_pct(shown[0]['mean_gpu_util_pct'])} of their measured GPU time."
    )


def _weeks_sentence(weeks: pl.DataFrame) -> str:
    """The range of the unused share over the weeks that hold at least the floor's share of the
    measured GPU-hours (a week of two short jobs says little), or over every week where none
    does (a long trace of even weeks)."""
    floor = parameters.WASTE_FLOOR_PCT / 100 * float(weeks.get_column("measured_gpu_hours").sum())
    busy = weeks.filter(pl.col("measured_gpu_hours") >= floor)
    which = f"with at least {parameters.WASTE_FLOOR_PCT:g}% of the measured GPU-hours"
    if busy.is_empty():
        busy, which = weeks, "with utilization samples"
    best = busy.sort("unused_pct", "source", "name").row(0, named=True)
    worst = busy.sort(pl.col("unused_pct"), "source", "name", descending=[True, False, False]).row(0, named=True)
    return (
        f"Over the {plural(busy.height, 'week')} {which}, the unused share ranged from"
        f" {fmt_pct(best['unused_pct'])} (week of {best['name']}) to"
        f" {fmt_pct(worst['unused_pct'])} (week of {worst['name']})."
    )
