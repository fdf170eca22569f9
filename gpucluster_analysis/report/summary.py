"""The report's headline numbers, for the terminal and for scripts (`gca report`, `--json`).

`headline(results, store_name, html)` reads the query results build_report already computed
(no query of its own) and returns one dict whose keys and their order are fixed and documented
in docs/summary.md: numbers are numbers, a missing one is None (JSON null). `text_rows(h)`
turns it into a few plain-text lines per section (printable: the machine, VC and reason names
in them with control characters escaped), which the CLI prints as they are or as a table.
Nothing here prints.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from gpucluster_analysis import failure_categories, wait_causes
from gpucluster_analysis.printable import printable
from gpucluster_analysis.report.sections.text import fmt_dur, fmt_int, fmt_pct, rows_of
from gpucluster_analysis.speed import variability as var

# Bump when a key is renamed or removed (adding one is not a change of version).
SUMMARY_VERSION = 1
# Failure reasons listed, by GPU time lost; slow machines named in the text (--json lists all).
TOP_REASONS = 3
TEXT_SLOW_MACHINES = 5
CAUSES = wait_causes.NAMES
# Rows of failure_reasons that are no root cause: listed apart, not among the top reasons.
NOT_A_REASON = (failure_categories.NO_LOG, failure_categories.NO_CAUSE)
# Floats are rounded like the CSVs (build.CSV_SIGNIFICANT_DIGITS): the same bytes on every run.
SIGNIFICANT_DIGITS = 12


def headline(
    results: dict[str, pl.DataFrame], store_name: str, html: Path | None = None, selection: str = "all jobs"
) -> dict[str, Any]:
    """The headline numbers of one report, from build_report's query results (see docs/summary.md)."""
    o = _first(results.get("overview_totals"))
    return {
        "summary_version": SUMMARY_VERSION,
        "store": store_name,
        "report": None if html is None else str(html),
        "selection": selection,
        "overview": {
            "jobs": _int(o.get("jobs")),
            "users": _int(o.get("users")),
            "vcs": _int(o.get("vcs")),
            "attempts": _int(o.get("attempts")),
            "gpu_hours": _num(o.get("gpu_hours")),
            "first_at": _time(o.get("first_at")),
            "last_at": _time(o.get("last_at")),
            "machines": _int(o.get("machines")),
            "gpus": _int(o.get("gpus")),
            "jobs_by_status": {str(x["status"]): _int(x["jobs"]) for x in rows_of(results.get("jobs_by_status"))},
        },
        "utilization": _utilization(results.get("gpu_util_by_status")),
        "queueing": _queueing(results.get("queue_delay_summary_by_size"), results.get("wait_causes_by_size")),
        "failures": _failures(results.get("failure_reasons"), results.get("failure_categories")),
        "speed": _speed(results.get("speed_summary"), results.get("machine_speed")),
    }


def _utilization(by_status: pl.DataFrame | None) -> dict[str, Any]:
    """Mean GPU utilization over every job's samples, sample-weighted (as sources_compared)."""
    rows = [x for x in rows_of(by_status) if x["samples"] and x["mean_util_pct"] is not None]
    samples = sum(int(x["samples"]) for x in rows)
    weighted = sum(float(x["mean_util_pct"]) * int(x["samples"]) for x in rows)
    return {
        "mean_gpu_util_pct": _num(weighted / samples) if samples else None,
        "jobs_with_samples": sum(int(x["jobs_with_samples"]) for x in rows_of(by_status)),
        "samples": samples,
    }


def _queueing(delays: pl.DataFrame | None, causes: pl.DataFrame | None) -> dict[str, Any]:
    """Queueing delay percentiles (all jobs) and how the started jobs' waiting GPU-time splits by cause."""
    d = next((x for x in rows_of(delays) if x["size_bucket"] == "all"), {})
    split = {x["cause"]: x for x in rows_of(causes) if x["size_bucket"] == "all"}
    shares = {c: _num(split[c]["share_pct"]) if c in split else None for c in CAUSES}
    if split and shares["user_limit"] is None:
        shares["user_limit"] = 0.0  # no per-user cap known: none of the split waiting was user limit
    known = {c: v for c, v in shares.items() if v is not None}
    main = max(known, key=lambda c: (known[c], -CAUSES.index(c))) if known and max(known.values()) > 0 else None
    return {
        "jobs_with_delay": _int(d.get("jobs_with_delay")),
        "median_s": _num(d.get("p50_s")),
        "p90_s": _num(d.get("p90_s")),
        "mean_s": _num(d.get("mean_s")),
        "wait_gpu_hours": _num(sum(float(x["wait_gpu_hours"] or 0) for x in split.values())) if split else None,
        "main_cause": main,
        "main_cause_pct": shares[main] if main else None,
        "cause_pct": shares,
    }


def _failures(reasons: pl.DataFrame | None, categories: pl.DataFrame | None) -> dict[str, Any]:
    """Failed attempts, the GPU time they lost, and the root causes that lost the most."""
    rows = rows_of(reasons)
    causes = sorted(
        (x for x in rows if x["reason"] not in NOT_A_REASON),
        key=lambda x: (-(x["gpu_hours_lost"] or 0), -x["trials"], str(x["reason"])),
    )
    return {
        "failed_attempts": sum(int(x["trials"]) for x in rows),
        "attempts_without_log": sum(int(x["trials"]) for x in rows if x["reason"] == failure_categories.NO_LOG),
        "gpu_hours_lost": _num(sum(float(x["gpu_hours_lost"] or 0) for x in rows)),
        "top_reasons": [
            {
                "reason": x["reason"],
                "category": x["category"],
                "attempts": _int(x["trials"]),
                "jobs": _int(x["jobs"]),
                "gpu_hours_lost": _num(x["gpu_hours_lost"]),
                "gpu_time_lost_pct": _num(x["gpu_time_lost_pct"]),
            }
            for x in causes[:TOP_REASONS]
        ],
        "gpu_time_lost_pct_by_category": {
            str(x["category"]): _num(x["gpu_time_lost_pct"]) for x in rows_of(categories)
        },
    }


def _speed(summary: pl.DataFrame | None, machines: pl.DataFrame | None) -> dict[str, Any]:
    """Attempts whose log printed a speed, machines that could be judged, and the slow ones."""
    s = _first(summary)
    m = machines if machines is not None else pl.DataFrame()
    judged = m.filter(pl.col("jobs") >= var.MIN_JOBS).height if "jobs" in m.columns else 0
    slow = m.filter(pl.col("flag") == "slow") if "flag" in m.columns else pl.DataFrame()
    return {
        "attempts_with_speed": _int(s.get("attempts")) or 0,
        "machines_judged": judged,
        "slow_machines": [
            {
                "machine_id": x["machine_id"],
                "relative_speed": _num(x["relative_speed"]),
                "ci_low": _num(x["ci_low"]),
                "ci_high": _num(x["ci_high"]),
                "jobs": _int(x["jobs"]),
            }
            for x in rows_of(slow)
        ],
    }


# ---------------------------------------------------------------- text


def comparison(table: pl.DataFrame, baseline: str) -> dict[str, Any]:
    """The Comparison's rows (comparison.csv) for --json: the baseline in words and one object
    per headline number (section, metric, baseline, current, change, change_pct, test, n,
    p_value, significant)."""
    return {
        "baseline": baseline,
        "rows": [{k: (_num(v) if isinstance(v, float) else v) for k, v in row.items()} for row in rows_of(table)],
    }


def text_rows(h: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary as (section, line) pairs, a few lines per section, for a person."""
    o, u, q, f, s = h["overview"], h["utilization"], h["queueing"], h["failures"], h["speed"]
    rows: list[tuple[str, str]] = []

    def add(section: str, *parts: str) -> None:
        rows.append((section, printable("".join(parts))))

    statuses = ", ".join(f"{k} {fmt_int(v)}" for k, v in o["jobs_by_status"].items()) or "-"
    if h.get("selection", "all jobs") != "all jobs":
        add("Selection", h["selection"])
    if h.get("comparison"):
        add("Comparison", f"baseline: {h['comparison']['baseline']}")
        for x in h["comparison"]["rows"]:
            if x["metric"] in COMPARED or x["significant"]:
                change = "" if x["change"] is None else f" ({x['change']:+,.4g})"
                test = "" if x["p_value"] is None else f", p {x['p_value']:.3g}{' *' if x['significant'] else ''}"
                add("Comparison", f"{x['metric']}: {_g(x['baseline'])} -> {_g(x['current'])}{change}{test}")
    add(
        "Overview",
        f"{fmt_int(o['jobs'])} jobs ({fmt_int(o['users'])} users, {fmt_int(o['vcs'])} VCs),",
        f" {fmt_int(o['gpu_hours'])} GPU-hours, {_day(o['first_at'])} to {_day(o['last_at'])}",
    )
    add("Overview", f"{fmt_int(o['machines'])} machines, {fmt_int(o['gpus'])} GPUs; by status: {statuses}")
    if u["mean_gpu_util_pct"] is None:
        add("Utilization", "no GPU utilization samples belong to any job")
    else:
        add(
            "Utilization",
            f"mean GPU utilization {fmt_pct(u['mean_gpu_util_pct'])}",
            f" ({fmt_int(u['samples'])} samples of {fmt_int(u['jobs_with_samples'])} jobs)",
        )
    add(
        "Queueing",
        f"median delay {fmt_dur(q['median_s'])}, p90 {fmt_dur(q['p90_s'])}",
        f" ({fmt_int(q['jobs_with_delay'])} jobs with a delay)",
    )
    if q["main_cause"] is None:
        add("Queueing", "waiting not split into causes")
    else:
        # user limit only where it held someone (stores without per-user caps have it at 0)
        rest = ", ".join(
            f"{c.replace('_', ' ')} {fmt_pct(v)}"
            for c, v in q["cause_pct"].items()
            if c != q["main_cause"] and v is not None and (c != "user_limit" or v > 0)
        )
        add(
            "Queueing",
            f"main cause {q['main_cause'].replace('_', ' ')} ({fmt_pct(q['main_cause_pct'])} of",
            f" {fmt_int(q['wait_gpu_hours'])} waiting GPU-hours; {rest})",
        )
    if not f["failed_attempts"]:
        add("Failures", "no failed attempts")
    else:
        no_log = f" ({fmt_int(f['attempts_without_log'])} without a log)" if f["attempts_without_log"] else ""
        add(
            "Failures",
            f"{fmt_int(f['failed_attempts'])} failed attempts lost {fmt_int(f['gpu_hours_lost'])} GPU-hours",
            no_log,
        )
        for x in f["top_reasons"]:
            add(
                "Failures",
                f"{x['reason']} ({x['category']}): {fmt_int(x['gpu_hours_lost'])} GPU-hours",
                f" ({fmt_pct(x['gpu_time_lost_pct'])}), {fmt_int(x['attempts'])} attempts",
            )
    if not s["attempts_with_speed"]:
        add("Speed", "no job log printed a training speed")
    else:
        slow = s["slow_machines"]
        names = ", ".join(f"{x['machine_id']} {x['relative_speed']:.2f}x" for x in slow[:TEXT_SLOW_MACHINES])
        more = f" and {len(slow) - TEXT_SLOW_MACHINES} more" if len(slow) > TEXT_SLOW_MACHINES else ""
        add(
            "Speed",
            f"{fmt_int(s['attempts_with_speed'])} attempts printed a speed;",
            f" {len(slow)} of {fmt_int(s['machines_judged'])} machines judged are slow",
            f": {names}{more}" if slow else "",
        )
    return rows


# Comparison rows the terminal always shows (others only when significant).
COMPARED = (
    "jobs",
    "GPU-hours",
    "mean GPU utilization, %",
    "median queueing delay, s",
    "p90 queueing delay, s",
    "failed attempts, % of attempts",
)


def _g(x: object) -> str:
    return "-" if x is None else f"{float(x):,.4g}"  # type: ignore[arg-type]  # x: a number when not None


def text(h: dict[str, Any]) -> str:
    """The summary as plain lines, 'Section    line', for a pipe or a log."""
    width = max(len(sec) for sec, _ in text_rows(h))
    lines = [printable(f"gca report: {h['report']}")] if h.get("report") else []
    lines += [f"{sec:<{width}}  {line}" for sec, line in text_rows(h)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- values


def _first(df: pl.DataFrame | None) -> dict:
    rows = rows_of(df)
    return rows[0] if rows else {}


def _num(v: object) -> float | None:
    """A float rounded to SIGNIFICANT_DIGITS, None for a missing or non-finite value."""
    if v is None or isinstance(v, bool):
        return None
    try:
        x = float(v)  # type: ignore[arg-type]  # Decimal, numpy and polars numbers
    except (TypeError, ValueError):
        return None
    if not math.isfinite(x):
        return None
    if x == 0:
        return 0.0
    return round(x, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(abs(x))))


def _int(v: object) -> int | None:
    x = _num(v)
    return None if x is None else round(x)


def _time(v: object) -> str | None:
    return v.strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(v, datetime) else None


def _day(iso: str | None) -> str:
    return iso[:10] if iso else "-"
