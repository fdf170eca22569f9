"""The report's figure style: colours, category orders, plain text, the layout and axes.

Facts of the report's look that the figures (figures.py) and the sections share: the colour of
each status, failure category and wait cause, the order of size buckets, how a name from the
data becomes plain text in a figure, and the one template (added as the page is written,
report/build.py, rather than copied into each figure).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import Any

import plotly.graph_objects as go
import polars as pl

from gpucluster_analysis import failure_categories, wait_causes
from gpucluster_analysis.printable import printable

# Each figure is made with the empty template and written with this one.
PAGE_TEMPLATE = "plotly_white"
_NO_TEMPLATE = go.layout.Template()

HEIGHT = 420
STATUS_COLORS = {
    "passed": "#2ca02c",
    "failed": "#d62728",
    "killed": "#ff7f0e",
    "timeout": "#9467bd",
    "node_fail": "#8c564b",
    "preempted": "#e377c2",
    "running": "#17becf",
    "pending": "#bcbd22",
    "unknown": "#7f7f7f",
}


def status_rank(status: object) -> tuple[int, str]:
    """Sort key: statuses in STATUS_COLORS order (passed first), unknown ones after, by name."""
    order = list(STATUS_COLORS)
    return (order.index(status) if status in order else len(order), str(status))


# Plotly renders a subset of HTML in titles, tick labels, legend names, hover text and annotations
# (<a href>, <b>, <br>, <span style>, ...) and substitutes %{...} in hover templates. Written as
# entities, these characters show as themselves (Plotly decodes &amp; &lt; &gt; &#37;).
_PLOTLY_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "%": "&#37;"}
_PLOTLY_SPECIAL = str.maketrans(_PLOTLY_ENTITIES)


def plain(value: object) -> str:
    """A value from the data as plain text in a figure: printable, and no markup or template."""
    return printable(str(value)).translate(_PLOTLY_SPECIAL)


def plain_text(df: pl.DataFrame) -> pl.DataFrame:
    """The frame with its text columns as `plain` text (the frames drawn are small: query results)."""
    text = [c for c, t in df.schema.items() if t in (pl.String, pl.Categorical) or isinstance(t, pl.Enum)]
    return df.with_columns(
        pl.Series(c, [None if v is None else plain(v) for v in df.get_column(c).to_list()], dtype=pl.String)
        for c in text
    )


def plain_order(order: Sequence[str] | None) -> list[str] | None:
    return None if order is None else [plain(v) for v in order]


PLACEMENT_COLORS = {"packed": "#1f77b4", "spread": "#d62728"}
# job_keys.sql's size buckets in size_order: CPU-only, a fraction of a GPU, 1, ... GPUs
SIZE_ORDER = ["0", "<1", "1", "2-4", "5-8", ">8", "unknown"]


def new_figure(*traces: object) -> go.Figure:
    """A figure of `traces` without a template: plotly copies and validates its default template
    into every figure it makes (two thirds of a report's time went there); the page's one
    template is added when the figure is written (page_template)."""
    return go.Figure(list(traces), layout={"template": _NO_TEMPLATE})


def house_layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = HEIGHT) -> go.Figure:
    """The house layout: title at the left, legend above the plot at the right."""
    set_layout(
        fig,
        title=dict(text=title, x=0.0, xanchor="left", font=dict(size=15)),
        height=height,
        margin=dict(l=70, r=20, t=60, b=60),
        font=dict(size=12),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
    )
    set_axis(fig, "x", title=dict(text=x_title))
    set_axis(fig, "y", title=dict(text=y_title))
    return fig


# Plotly's update_layout / update_xaxes go through a batch-update machinery that costs about a
# millisecond per call, most of a report's figure time; setting each property is the same JSON.
def set_layout(fig: go.Figure, **props: Any) -> None:
    """Set layout properties of `fig`, as fig.update_layout(**props) would."""
    for name, value in props.items():
        fig.layout[name] = value


def set_axis(fig: go.Figure, axis: str, **props: Any) -> None:
    """Set properties of the figure's x or y axis (its only one: no figure here has subplots),
    as fig.update_xaxes(**props) / update_yaxes would."""
    target = fig.layout.xaxis if axis == "x" else fig.layout.yaxis
    for name, value in props.items():
        target[name] = value


@cache
def page_template() -> dict[str, Any]:
    """The template of every figure on the page (plotly's plotly_white), as the JSON written."""
    import plotly.io as pio

    return pio.templates[PAGE_TEMPLATE].to_plotly_json()


# Log-axis ticks for durations in seconds: a fine set for narrow ranges, a coarse one for wide.
FINE_TICKS = (
    (1, "1 s"),
    (2, "2 s"),
    (5, "5 s"),
    (10, "10 s"),
    (30, "30 s"),
    (60, "1 min"),
    (120, "2 min"),
    (300, "5 min"),
    (600, "10 min"),
    (1800, "30 min"),
    (3600, "1 h"),
    (2 * 3600, "2 h"),
    (6 * 3600, "6 h"),
    (12 * 3600, "12 h"),
    (86400, "1 day"),
    (2 * 86400, "2 days"),
    (7 * 86400, "1 week"),
    (30 * 86400, "30 days"),
    (365 * 86400, "1 year"),
)
COARSE_TICKS = (
    (1, "1 s"),
    (10, "10 s"),
    (60, "1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (6 * 3600, "6 h"),
    (86400, "1 day"),
    (7 * 86400, "1 week"),
    (30 * 86400, "30 days"),
    (365 * 86400, "1 year"),
)


def duration_axis(fig: go.Figure, axis: str, values: Sequence[float | None]) -> go.Figure:
    """A log axis of seconds labelled in human units (1 min, 1 h, 1 day...).

    The axis runs from the tick at or below the smallest value to the tick at or above the
    largest, so there are always labelled ticks and bars keep a visible base.
    """
    present = [float(v) for v in values if v is not None and v > 0]
    lo, hi = (min(present), max(present)) if present else (1.0, 86400.0)
    for ticks in (FINE_TICKS, COARSE_TICKS):
        below = [t for t in ticks if t[0] <= lo] or [ticks[0]]
        above = [t for t in ticks if t[0] >= hi] or [ticks[-1]]
        first, last = below[-1][0], above[0][0]
        shown = [t for t in ticks if first <= t[0] <= last]
        if len(shown) <= 10:
            break
    pad = 0.04 * max(math.log10(last) - math.log10(first), 1.0)
    set_axis(
        fig,
        axis,
        type="log",
        tickvals=[v for v, _ in shown],
        ticktext=[t for _, t in shown],
        range=[math.log10(first) - pad, math.log10(last) + pad],
    )
    return fig


# Failure categories (failure_categories.py): the taxonomy of docs/domain.md, plus the report's
# 'no cause in the log' and 'no log'.
CATEGORY_COLORS = failure_categories.COLORS


# Causes of waiting (gpucluster_analysis.replay), in their first-match order.
CAUSE_COLORS = wait_causes.COLORS
