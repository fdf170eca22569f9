"""The report's content: sections of prose, figures and tables, computed from query results.

`compose(results, tests, store_name)` is pure: it takes the DataFrames of the named queries
(by query name) and returns `Section`s whose sentences carry the numbers behind each figure.
Rendering to HTML and writing files is `build.py`'s job.

One module per section (overview, queueing, locality, activity, waste, speed, failures with its
part scheduler_failures, data_quality), each with a
`section(r, ...)` function and its own constants; `blocks` holds the dataclasses a section is
made of and `text` the formatting its sentences share.
"""

from __future__ import annotations

import polars as pl

from gpucluster_analysis.analyze import statistics as an
from gpucluster_analysis.report.sections import (
    activity,
    comparison,
    data_quality,
    failures,
    key_findings,
    locality,
    overview,
    queueing,
    speed,
    waste,
)
from gpucluster_analysis.report.sections.blocks import Figure, Findings, Paragraph, Section, Table

__all__ = ["Figure", "Findings", "Paragraph", "Section", "Table", "compose"]


def compose(
    r: dict[str, pl.DataFrame],
    tests: list[an.TestResult],
    store_name: str,
    selection: str = "all jobs",
    baseline: str | None = None,
) -> list[Section]:
    """All sections of the report, in order. `r` maps query names to their results;
    `selection` says which jobs it covers (analyze/selection.py), `baseline` which jobs the
    Comparison section sets beside them (r["comparison"])."""
    sections = [
        comparison.section(r, baseline, selection) if baseline is not None else None,
        overview.section(r, store_name, selection),
        queueing.section(r),
        locality.section(r, tests),
        activity.section(r),  # only where DCGM profiling samples exist
        waste.section(r),  # only where some GPU time has utilization samples
        speed.section(r),  # only where job logs print their training speed
        failures.section(r),
        data_quality.section(r),
    ]
    present = [s for s in sections if s is not None]
    key = key_findings.section(present)
    return ([key] if key else []) + present
