"""Formatting for the report's sentences: numbers, shares, durations, times, test results, lists.

The number, duration and time formatters print a missing value as "-", so a sentence never
breaks on one. The row helpers read query results (polars DataFrames) as dicts.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from gpucluster_analysis.analyze import statistics as an


def fmt_int(n: object) -> str:
    v = an.safe_float(n)
    return "-" if v is None else f"{round(v):,}"


def plural(n: object, word: str, words: str | None = None) -> str:
    """'1 job', '2 jobs', '1,234 retries' (words for irregular plurals)."""
    v = an.safe_float(n)
    one = v is not None and round(v) == 1
    return f"{fmt_int(n)} {word if one else (words or word + 's')}"


def gpus_label(bucket: object) -> str:
    """'0 GPUs (CPU-only)', 'under 1 GPU', '1 GPU', '2-4 GPUs', 'unknown GPUs' for a size bucket."""
    special = {"0": "0 GPUs (CPU-only)", "<1": "under 1 GPU (a shared GPU)", "1": "1 GPU"}
    return special.get(str(bucket), f"{bucket} GPUs")


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


def rows_of(df: pl.DataFrame | None) -> list[dict]:
    """A query result's rows as dicts; none for a query that was not run."""
    return [] if df is None else df.to_dicts()


def first_row(df: pl.DataFrame | None) -> dict:
    """The first row of a one-row result (totals), or {} when it is empty."""
    rows = rows_of(df)
    return rows[0] if rows else {}


def index_by(df: pl.DataFrame, key: str) -> dict:
    """The rows keyed by one column's value, in the result's order."""
    return {r[key]: r for r in df.iter_rows(named=True)}


def join_list(parts: list[str]) -> str:
    """Clauses joined for a sentence: 'a; b; c', or 'none'."""
    return "; ".join(parts) if parts else "none"
