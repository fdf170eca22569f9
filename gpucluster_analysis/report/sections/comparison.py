"""The Comparison section (`gca report --baseline-since ... --since ...`): the selected period
against the baseline, each headline number with its change and test (report/comparison.py)."""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.report.sections.blocks import Paragraph, Section, Table
from gpucluster_analysis.report.sections.text import fmt_dur, fmt_p, fmt_pct, join_list, rows_of


def _value(metric: str, x: object) -> str:
    if x is None:
        return "-"
    if metric.endswith(", s"):
        return fmt_dur(x)
    if "%" in metric:
        return fmt_pct(x)
    return f"{float(x):,.0f}"  # type: ignore[arg-type]  # x: a number here


def _sentence(row: dict) -> str:
    metric = row["metric"]
    name = metric.replace(", % of attempts", " (share of attempts)").replace(", %", "").removesuffix(", s")
    test = (
        f" ({row['test']}, {fmt_p(row['p_value'])}{'' if row['significant'] else ': not significant'})"
        if row["p_value"] is not None
        else ""
    )
    return f"{name} {_value(metric, row['baseline'])} -> {_value(metric, row['current'])}{test}"


def section(r: dict[str, pl.DataFrame], baseline: str, current: str) -> Section | None:
    table = r.get("comparison")
    if table is None:
        return None
    s = Section("comparison", "Comparison with the baseline")
    rows = rows_of(table)
    by_metric = {x["metric"]: x for x in rows}
    headline = [
        by_metric[m]
        for m in ("jobs", "median queueing delay, s", "mean GPU utilization, %", "failed attempts, % of attempts")
        if m in by_metric
    ]
    significant = [x for x in rows if x["significant"]]
    s.add(
        Paragraph(
            f"Against the baseline: {join_list([_sentence(x) for x in headline])}; "
            + (
                f"{len(significant)} of the {sum(1 for x in rows if x['p_value'] is not None)} tested changes are"
                f" significant at 5%."
                if any(x["p_value"] is not None for x in rows)
                else "no change could be tested."
            ),
            "finding",
        )
    )
    s.add(
        Paragraph(
            f"Baseline: {baseline}. Compared: {current}. Each number is the one the report's own section gives for that"
            " selection (two separately filtered reports give the same); the queueing replay saw every job for both."
            " Tests compare one value per job or attempt between the two periods: Mann-Whitney U for queueing delay"
            " (all jobs, and per size bucket) and per-job mean GPU utilization, Fisher's exact test for the share of"
            " attempts that failed (overall and per reason). A change in a period's mix of jobs (sizes, VCs) moves"
            " these numbers too: compare like with like before crediting a scheduler change."
        )
    )
    if significant:
        s.add(Paragraph("Significant: " + join_list([_sentence(x) for x in significant]) + "."))
    s.add(
        Table(
            "comparison",
            table,
            "Headline numbers of the baseline and the compared period (comparison.csv)",
            max_rows=60,
        )
    )
    return s
