"""Figures of the report: pure functions, polars DataFrame in, plotly Figure out.

Each function takes the DataFrame of one named query (columns as documented in its SQL
header) and returns a Figure; nothing here reads files, the store or the clock, so the
same input always gives the same figure (`fig.to_dict()` can be golden-tested).

Names from the data (VCs, users, machines, reasons, statuses) are plain text in every figure:
each function takes its frame's text columns and the category orders it is given through
`plain` first, once. Colours, orders, the layout and axes are figure_style.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
import polars as pl

from gpucluster_analysis.report.figure_style import (
    HEIGHT,
    STATUS_COLORS,
    duration_axis,
    house_layout,
    new_figure,
    plain_order,
    plain_text,
    set_axis,
    set_layout,
    status_rank,
)


def share_bars(df: pl.DataFrame, category: str, title: str, category_title: str) -> go.Figure:
    """Side-by-side bars per category: % of jobs and % of GPU time (queries jobs_by_status/size)."""
    df = plain_text(df)
    cats = [str(c) for c in df.get_column(category).to_list()]
    fig = new_figure()
    fig.add_bar(
        x=cats,
        y=df.get_column("jobs_pct").to_list(),
        name="% of jobs",
        customdata=df.get_column("jobs").to_list(),
        hovertemplate="%{x}: %{y:.1f}% of jobs (%{customdata:,} jobs)<extra></extra>",
    )
    fig.add_bar(
        x=cats,
        y=df.get_column("gpu_time_pct").to_list(),
        name="% of GPU time",
        customdata=df.get_column("gpu_hours").to_list(),
        hovertemplate="%{x}: %{y:.1f}% of GPU time (%{customdata:,.0f} GPU-hours)<extra></extra>",
    )
    set_layout(fig, barmode="group")
    set_axis(fig, "x", type="category")
    return house_layout(fig, title, category_title, "share (%)")


def cdf_lines(
    df: pl.DataFrame,
    group: str,
    x: str,
    title: str,
    x_title: str,
    *,
    order: Sequence[str] | None = None,
    colors: dict[str, str] | None = None,
    log_x: bool = True,
    x_floor: float = 1.0,
    y_title: str = "share of jobs (CDF)",
) -> go.Figure:
    """Empirical CDFs of durations in seconds, one step line per group (queries *_cdf_by_*:
    group, x, cum_share).

    On the log axis, values below `x_floor` are drawn at `x_floor` (a zero wait cannot be
    placed on a log scale); hover shows the true value.
    """
    df, order = plain_text(df), plain_order(order)
    fig = new_figure()
    groups = list(order) if order else list(dict.fromkeys(df.get_column(group).to_list()))
    for g in groups:
        part = df.filter(pl.col(group) == g)
        if part.is_empty():
            continue
        xs = part.get_column(x).to_list()
        shown = [max(v, x_floor) for v in xs] if log_x else xs
        fig.add_scatter(
            x=shown,
            y=part.get_column("cum_share").to_list(),
            customdata=xs,
            mode="lines",
            name=str(g),
            line=dict(shape="hv", width=2, color=(colors or {}).get(str(g))),
            hovertemplate=f"{g}: " + "%{y:.1%} at or below %{customdata:,.0f} s<extra></extra>",
        )
    set_axis(fig, "y", range=[0, 1.02], tickformat=".0%")
    if log_x:
        duration_axis(fig, "x", [max(v, x_floor) for v in df.get_column(x).to_list() if v is not None])
    return house_layout(fig, title, x_title, y_title)


def hist_cdf(
    df: pl.DataFrame,
    group: str,
    title: str,
    x_title: str = "GPU utilization (%)",
    *,
    order: Sequence[str] | None = None,
    colors: dict[str, str] | None = None,
    y_title: str = "share of samples (CDF)",
) -> go.Figure:
    """CDFs from 1-percent histograms (queries *_util_cdf_*: group, util_bin, cum_share).

    A bin b holds values in [b, b+1), so its cumulative share is drawn at x = b + 1.
    """
    df, order = plain_text(df), plain_order(order)
    fig = new_figure()
    groups = list(order) if order else list(dict.fromkeys(df.get_column(group).to_list()))
    for g in groups:
        part = df.filter(pl.col(group) == g).sort("util_bin")
        if part.is_empty():
            continue
        xs = [0.0] + [min(b + 1, 100) for b in part.get_column("util_bin").to_list()]
        ys = [0.0] + part.get_column("cum_share").to_list()
        n = int(part.get_column("samples").sum())
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            name=f"{g} (n={n:,})",
            line=dict(width=2, color=(colors or {}).get(str(g))),
            hovertemplate=f"{g}: " + "%{y:.1%} of samples below %{x}%<extra></extra>",
        )
    set_axis(fig, "y", range=[0, 1.02], tickformat=".0%")
    set_axis(fig, "x", range=[0, 100])
    return house_layout(fig, title, x_title, y_title)


def grouped_bars(
    df: pl.DataFrame,
    x: str,
    y: str,
    color: str | None,
    title: str,
    x_title: str,
    y_title: str,
    *,
    count: str | None = None,
    log_y: bool = False,
    barmode: str = "group",
    colors: dict[str, str] | None = None,
    color_order: Sequence[str] | None = None,
    y_format: str = ",.1f",
) -> go.Figure:
    """Bars of `y` by category `x`, one trace per value of `color` (or a single trace)."""
    df, color_order = plain_text(df), plain_order(color_order)
    fig = new_figure()
    if color is None:
        traces: list[tuple[str, pl.DataFrame]] = [(y_title, df)]
    else:
        keys = list(color_order) if color_order else list(dict.fromkeys(df.get_column(color).to_list()))
        traces = [(str(k), df.filter(pl.col(color) == k)) for k in keys]
    for name, part in traces:
        if part.is_empty():
            continue
        custom = part.get_column(count).to_list() if count else None
        hover = f"{name}, %{{x}}: %{{y:{y_format}}}"
        if count:
            hover += " (n=%{customdata:,})"
        fig.add_bar(
            x=[str(v) for v in part.get_column(x).to_list()],
            y=part.get_column(y).to_list(),
            name=name,
            customdata=custom,
            hovertemplate=hover + "<extra></extra>",
            marker_color=(colors or {}).get(name),
        )
    set_layout(fig, barmode=barmode, showlegend=color is not None)
    set_axis(fig, "x", type="category")
    if log_y:
        set_axis(fig, "y", type="log")
    return house_layout(fig, title, x_title, y_title)


def quantile_bars(
    df: pl.DataFrame, x: str, title: str, x_title: str, columns: Sequence[tuple[str, str]], *, count: str = "jobs"
) -> go.Figure:
    """Bars of several percentile columns (seconds) per category, on a log duration axis.

    Values below 1 s are drawn at 1 s (log scale); hover shows the true value.
    """
    df = plain_text(df)
    fig = new_figure()
    cats = [str(v) for v in df.get_column(x).to_list()]
    n = df.get_column(count).to_list()
    for col, label in columns:
        secs = df.get_column(col).to_list()
        fig.add_bar(
            x=cats,
            y=[None if v is None else max(v, 1.0) for v in secs],
            name=label,
            customdata=list(zip(secs, n, strict=True)),
            hovertemplate=f"%{{x}} {label}: %{{customdata[0]:,.0f}} s (n=%{{customdata[1]:,}})<extra></extra>",
        )
    set_layout(fig, barmode="group")
    set_axis(fig, "x", type="category")
    duration_axis(fig, "y", [max(v, 1.0) for c, _ in columns for v in df.get_column(c).to_list() if v is not None])
    return house_layout(fig, title, x_title, "duration (log scale)")


def util_heatmap(df: pl.DataFrame, title: str) -> go.Figure:
    """Mean GPU utilization by GPUs (rows) x servers spanned (columns), query gpu_util_by_gpus_servers."""
    gpus = sorted(set(df.get_column("num_gpus").to_list()))
    servers = sorted(set(df.get_column("num_servers").to_list()))
    cell = {(r["num_gpus"], r["num_servers"]): r for r in df.iter_rows(named=True)}
    z, text, custom = [], [], []
    for g in gpus:
        z_row, t_row, c_row = [], [], []
        for s in servers:
            r = cell.get((g, s))
            z_row.append(None if r is None else r["mean_util_pct"])
            t_row.append("" if r is None else f"{r['mean_util_pct']:.0f}%<br>n={r['jobs']}")
            c_row.append([0, 0] if r is None else [r["jobs"], r["samples"]])
        z.append(z_row)
        text.append(t_row)
        custom.append(c_row)
    fig = new_figure(
        go.Heatmap(
            x=[str(s) for s in servers],
            y=[str(g) for g in gpus],
            z=z,
            text=text,
            texttemplate="%{text}",
            customdata=custom,
            zmin=0,
            zmax=100,
            colorscale="Viridis",
            colorbar=dict(title="util %"),
            hovertemplate="%{y} GPUs on %{x} servers: %{z:.1f}% mean utilization"
            "<br>%{customdata[0]:,} jobs, %{customdata[1]:,} samples<extra></extra>",
        )
    )
    set_axis(fig, "x", type="category")
    set_axis(fig, "y", type="category")
    return house_layout(fig, title, "servers spanned", "GPUs per job", height=max(HEIGHT, 60 + 40 * len(gpus)))


def stacked_status_bars(
    df: pl.DataFrame, x: str, y: str, title: str, x_title: str, y_title: str, *, x_order: Sequence[str] | None = None
) -> go.Figure:
    """Bars of `y` by `x`, stacked by final status (queries job_attempts_by_status, gpu_time_by_status_size)."""
    statuses = sorted((str(s) for s in dict.fromkeys(df.get_column("status").to_list())), key=status_rank)
    return stacked_bars(
        df, x, y, "status", title, x_title, y_title, x_order=x_order, stack_order=statuses, colors=STATUS_COLORS
    )


def pct_bars(
    df: pl.DataFrame,
    x: str,
    series: Sequence[tuple[str, str, str, str]],
    title: str,
    x_title: str,
    *,
    horizontal: bool = False,
) -> go.Figure:
    """Grouped bars of percentage columns per category (queries failure_categories, failure_reasons).

    `series` holds (percentage column, legend label, count column shown on hover, its unit).
    Horizontal bars list the categories top-down in the frame's order.
    """
    df = plain_text(df)
    fig = new_figure()
    cats = [str(v) for v in df.get_column(x).to_list()]
    cat, val = ("y", "x") if horizontal else ("x", "y")
    for col, label, count, unit in series:
        pct = df.get_column(col).to_list()
        custom = df.get_column(count).to_list()
        number = ",.0f" if df.schema[count].is_integer() else ",.1f"
        hover = f"%{{{cat}}}: %{{{val}:.1f}}% {label} (%{{customdata:{number}}} {unit})<extra></extra>"
        if horizontal:
            fig.add_bar(y=cats, x=pct, name=label, orientation="h", customdata=custom, hovertemplate=hover)
        else:
            fig.add_bar(x=cats, y=pct, name=label, customdata=custom, hovertemplate=hover)
    set_layout(fig, barmode="group")
    if horizontal:
        set_axis(fig, "y", type="category", categoryorder="array", categoryarray=cats, autorange="reversed")
        return house_layout(fig, title, "share (%)", x_title, height=max(HEIGHT, 90 + 34 * len(cats)))
    set_axis(fig, "x", type="category")
    return house_layout(fig, title, x_title, "share (%)")


def stacked_bars(
    df: pl.DataFrame,
    x: str,
    y: str,
    stack: str,
    title: str,
    x_title: str,
    y_title: str,
    *,
    x_order: Sequence[str] | None = None,
    stack_order: Sequence[str] | None = None,
    colors: dict[str, str] | None = None,
) -> go.Figure:
    """Bars of `y` by `x`, stacked by the values of `stack` (query failure_by_size, by category)."""
    df, x_order, stack_order = plain_text(df), plain_order(x_order), plain_order(stack_order)
    fig = new_figure()
    xs = list(x_order) if x_order else [str(v) for v in dict.fromkeys(df.get_column(x).to_list())]
    present = [str(v) for v in dict.fromkeys(df.get_column(stack).to_list())]
    keys = [k for k in (stack_order or []) if k in present] + [k for k in present if k not in (stack_order or [])]
    for key in keys:
        part = df.filter(pl.col(stack) == key)
        values = {str(r[x]): r[y] for r in part.iter_rows(named=True)}
        fig.add_bar(
            x=xs,
            y=[values.get(v) for v in xs],
            name=key,
            marker_color=(colors or {}).get(key),
            hovertemplate=f"{key}, %{{x}}: %{{y:,.1f}}<extra></extra>",
        )
    set_layout(fig, barmode="stack")
    set_axis(fig, "x", type="category", categoryorder="array", categoryarray=xs)
    return house_layout(fig, title, x_title, y_title)


def time_lines(
    df: pl.DataFrame,
    x: str,
    series: Sequence[tuple[str, str, str]],
    title: str,
    y_titles: tuple[str, str],
    *,
    group: str | None = None,
) -> go.Figure:
    """Lines over time (query wait_timeline): `series` holds (column, legend label, axis 'y' or 'y2');
    with `group`, one line per group and series (e.g. per source)."""
    df = plain_text(df)
    fig = new_figure()
    groups = list(dict.fromkeys(df.get_column(group).to_list())) if group else [None]
    for g in groups:
        part = df if group is None or g is None else df.filter(pl.col(group) == g)
        for col, label, axis in series:
            values = part.get_column(col).to_list()
            if all(v is None for v in values):
                continue
            name = label if g is None or len(groups) == 1 else f"{label} ({g})"
            fig.add_scatter(
                x=part.get_column(x).to_list(),
                y=values,
                mode="lines",
                name=name,
                yaxis=axis,
                line=dict(shape="hv", width=1.5),
                hovertemplate=f"{name}: %{{y:,.1f}} at %{{x}}<extra></extra>",
            )
    set_layout(fig, yaxis2=dict(title=y_titles[1], overlaying="y", side="right", rangemode="tozero"))
    set_axis(fig, "y", rangemode="tozero")  # the left axis; yaxis2 has its own
    return house_layout(fig, title, "time (UTC)", y_titles[0])


def bin_heatmap(df: pl.DataFrame, x: str, y: str, z: str, title: str, x_title: str, y_title: str) -> go.Figure:
    """Counts in a grid of 10-point bins 0..90 on both axes (query gpu_activity_grid)."""
    bins = list(range(0, 100, 10))
    cell = {(r[x], r[y]): r[z] for r in df.iter_rows(named=True)}
    values = [[cell.get((bx, by)) for bx in bins] for by in bins]
    labels = [f"{b}-{b + 10}" for b in bins]
    fig = new_figure(
        go.Heatmap(
            x=labels,
            y=labels,
            z=values,
            text=[["" if v is None else f"{v:,}" for v in row] for row in values],
            texttemplate="%{text}",
            colorscale="Blues",
            colorbar=dict(title=z),
            hovertemplate=f"{x_title} %{{x}}, {y_title} %{{y}}: %{{z:,}} {z}<extra></extra>",
        )
    )
    set_axis(fig, "x", type="category")
    set_axis(fig, "y", type="category")
    return house_layout(fig, title, x_title, y_title, height=520)


def interval_points(
    df: pl.DataFrame, x: str, y: str, low: str, high: str, color: str, title: str, x_title: str, y_title: str
) -> go.Figure:
    """One point per row with its interval as an error bar, coloured by `color` (query machine_speed)."""
    df = plain_text(df)
    fig = new_figure()
    names = [str(v) for v in df.get_column(x).to_list()]
    colors = {"slow": "#d62728", "fast": "#2ca02c", "ok": "#1f77b4"}
    for key in dict.fromkeys(df.get_column(color).to_list()):
        part = df.filter(pl.col(color) == key)
        ys = part.get_column(y).to_list()
        fig.add_scatter(
            x=[str(v) for v in part.get_column(x).to_list()],
            y=ys,
            mode="markers",
            name=str(key),
            marker=dict(color=colors.get(str(key))),
            error_y=dict(
                type="data",
                symmetric=False,
                array=[h - v for h, v in zip(part.get_column(high).to_list(), ys, strict=True)],
                arrayminus=[v - lo for lo, v in zip(part.get_column(low).to_list(), ys, strict=True)],
            ),
            hovertemplate=f"%{{x}}: %{{y:.3f}} ({key})<extra></extra>",
        )
    fig.add_hline(y=1.0, line_dash="dot", line_color="#888")
    set_axis(fig, "x", type="category", categoryorder="array", categoryarray=names)
    return house_layout(fig, title, x_title, y_title)
