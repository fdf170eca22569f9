"""The Training speed and GPU variability section: how fast jobs trained by their own logs,
what spreading cost in real speed, and which machines ran the same work slower (after PAL)."""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.report import figures as fg
from gpucluster_analysis.report.sections.blocks import Figure, Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import (
    first_row,
    fmt_int,
    fmt_p,
    join_list,
    rows_of,
)
from gpucluster_analysis.speed import variability as var


def section(r: dict[str, pl.DataFrame]) -> Section | None:
    """None when no job log printed a training speed."""
    summary = first_row(r.get("speed_summary"))
    if not summary.get("attempts"):
        return None
    s = Section("speed", "Training speed and GPU variability")
    machines = r["machine_speed"]
    slow = machines.filter(pl.col("flag") == "slow")
    judged = machines.filter(pl.col("jobs") >= var.MIN_JOBS)
    slow_text = join_list(
        [
            f"{x['machine_id']} at {x['relative_speed']:.2f}x (95% interval {x['ci_low']:.2f}-"
            f"{x['ci_high']:.2f}, {fmt_int(x['jobs'])} jobs of {fmt_int(x['families'])} families)"
            for x in rows_of(slow.head(5))
        ]
    )
    s.add(
        Paragraph(
            f"{fmt_int(summary['attempts'])} attempts of {fmt_int(summary['jobs'])} jobs printed their training speed;"
            f" of the {fmt_int(judged.height)} machines that ran at least {var.MIN_JOBS} such jobs,"
            f" {fmt_int(slow.height)} ran the same job families consistently slower than elsewhere"
            + (f": {slow_text}." if slow.height else ".")
            + _locality_sentence(r),
            "finding",
        )
    )
    s.add(
        Paragraph(
            "Speed is what each job's log prints (tqdm, HF Trainer, Megatron, DeepSpeed, Keras, nanoGPT, torchtitan...;"
            " the median over the run after its warm-up, per GPU), compared only within a job family: the "
            "same user, job"
            " name and GPU count (no job name, as in Philly: the same user and GPU count) and the same "
            "metric. A machine's"
            " relative speed is the median, over the attempts it ran, of each attempt's speed divided by its "
            "family's median"
            " on other machines (1.00 = as fast as elsewhere); the interval is a distribution-free 95% "
            "interval for that"
            f" median. Flagged slow only where the whole interval lies below {var.SLOW_BELOW:.2f} and at least"
            f" {var.MIN_JOBS} jobs ran there; speed classes (after PAL): A at least 0.97, B 0.90-0.97, C below 0.90."
            " jobs.csv has each job's speed_metric, speed_median and speed_unit; machine_speed.csv and gpu_speed.csv"
            " every machine and GPU."
        )
    )
    if judged.is_empty():
        s.add(
            Paragraph(
                f"No machine ran {var.MIN_JOBS} or more jobs with a speed: no machine can be judged yet,"
                " so there is no figure (machine_speed.csv lists what there is)."
            )
        )
    else:
        s.add(
            Figure(
                "fig-machine-speed",
                fg.interval_points(
                    judged.head(60),
                    "machine_id",
                    "relative_speed",
                    "ci_low",
                    "ci_high",
                    "flag",
                    f"Relative speed of the slowest machines (at least {var.MIN_JOBS} jobs), 95% intervals",
                    "machine",
                    "speed relative to the same families elsewhere",
                ),
                f"Machines by relative speed, slowest first; {fmt_int(slow.height)} flagged slow,"
                f" {fmt_int(machines.filter(pl.col('flag') == 'fast').height)} fast. Classes: "
                + join_list([f"{c} {fmt_int(n)}" for c, n in _classes(judged)])
                + ".",
                "machine_speed",
            )
        )
    s.add(Table("machine_speed", machines, "Every machine that ran jobs with a speed, slowest first.", max_rows=20))
    health = r.get("slow_machine_telemetry")
    if health is not None and not health.is_empty():
        s.add(
            Table(
                "slow_machine_telemetry",
                health,
                "Do slow machines coincide with throttling, low SM clocks or heat? Telemetry of the machines by"
                " speed flag (share of samples with a power or thermal slowdown reason, mean SM clock, mean"
                " temperature), where the store has such samples.",
            )
        )
    loc = r["speed_locality"]
    if not loc.is_empty():
        s.add(
            Table(
                "speed_locality",
                loc,
                "Packed (one server) vs spread attempts of the same family: median speed per GPU of each, and"
                " their ratio (below 1: spreading cost speed).",
                max_rows=20,
            )
        )
    return s


def _classes(judged: pl.DataFrame) -> list[tuple[str, int]]:
    counts = {x["speed_class"]: x["len"] for x in rows_of(judged.group_by("speed_class").len())}
    return [(c, counts.get(c, 0)) for c in ("A", "B", "C")]


def _locality_sentence(r: dict[str, pl.DataFrame]) -> str:
    summary = first_row(r.get("speed_summary"))
    n = summary.get("locality_families") or 0
    if not n:
        return (
            " No job family ran both packed on one server and spread over several, so locality's cost in speed "
            "is not measured."
        )
    ratio = summary["locality_median_ratio"]
    p = summary.get("locality_p_value")
    return (
        f" Spread over several servers, {fmt_int(n)} families ran at {ratio:.2f}x their packed speed per GPU (median"
        f" over families; Wilcoxon signed-rank {fmt_p(p)}"
        + ("" if p is not None else ", too few families to test")
        + ")."
    )
