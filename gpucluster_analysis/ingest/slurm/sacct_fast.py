"""Typed staging of plain `sacct -P` rows, vectorized in polars.

A busy site's year is millions of sacct lines of the same shape (`123|train|ann|ml|gpu|
COMPLETED|0:0|2024-05-01T08:00:00|...|billing=8,cpu=8,gres/gpu=2,node=1|gpu01`); parsing
them one by one in Python (sacct_exact.parse_fields) costs ~20 µs a line. Here the rows of a run
of plain lines (reader.Reader: a `|` layout, a digit first, the layout's field count, ASCII)
are split and typed at once. Only rows whose every value the reader uses is plainly valid
are typed here: a job id of values.JOB_ID's form, a known State (optionally `by <uid>`), times of
the form `2024-05-01T08:00:00` in the years gca reads (or a missing spelling), an ExitCode,
Timelimit, TRES, NodeList and NNodes that values.py's parsers read without complaint, and
no blank at the edge of a field (so no value needs a strip). Every
other row goes back to the reader and through sacct_exact.parse_fields, which
rejects it with its reason, so a row is staged the same whichever way it took:
tests/test_slurm_fast.py checks both ways store the same, table by table.

Values with few distinct forms (State, ExitCode, Timelimit, TRES, NodeList) are parsed once
per distinct value, by values.py's functions but for State (a TRES column with many
distinct values, once per distinct list of its GPU and node items); times stay text here (as
parse_fields stages them), so the zone and its changes of clocks are
sql/ingest/slurm_sacct_times.sql's business, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from gpucluster_analysis.bounds import FIRST_YEAR, LAST_YEAR
from gpucluster_analysis.ingest.slurm.hostlist import HostlistError, expand_hostlist
from gpucluster_analysis.ingest.slurm.layout import Columns, Layout
from gpucluster_analysis.ingest.slurm.staging import STAGE_COLUMNS, STEP_COLUMNS
from gpucluster_analysis.ingest.slurm.values import (
    JOB_ID,
    KNOWN_STATES,
    MISSING,
    REQUEUE_STATES,
    STATUS_OF_STATE,
    parse_duration_s,
    parse_exit,
    parse_limit_minutes,
    parse_tres,
)

_POLARS_TYPES = {pa.int64(): pl.Int64, pa.int32(): pl.Int32, pa.string(): pl.String, pa.bool_(): pl.Boolean}
STAGE_SCHEMA = {name: _POLARS_TYPES[kind] for name, kind in STAGE_COLUMNS}
STEP_SCHEMA = {name: _POLARS_TYPES[kind] for name, kind in STEP_COLUMNS}

# What the fast way reads of each value; anything else is the exact way's to judge.
_STATE = r"^(?P<word>[A-Z_]+)(?: by (?P<by>[^ \t]+))?$"  # COMPLETED, CANCELLED by 1234
# fromisoformat's clock: no hour 24, no leap second; the day of the month is checked apart
_TIME = r"^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])[T ](?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d$"
# key=value items without blanks (parse_tres strips them; here a blank sends the row the exact way)
_TRES = r"^[^,= \t]+=[^, \t]*(?:,[^,= \t]+=[^, \t]*)*$"
# the items parse_tres reads (the others it only checks for a key and an '='); with a ',' before each
_TRES_GPU_ITEM = r",(?:gres/gpu(?::[^,=]*)?|node)=[^,]*"
_NNODES = r"^\d{0,9}$"
# a blank at a field's edge (the exact way strips it): such a line goes the exact way, so the
# values here need no strip
_BLANK_EDGE = r"(?:^|\|)[ \t]|[ \t](?:\||$)"
# MISSING's spellings, in any case (plain rows are ASCII)
_MISSING_VALUE = "(?i)^(?:" + "|".join(re.escape(m) for m in sorted(MISSING) if m) + ")?$"
# TRES are parsed whole, once per distinct value, where there are at most this share of
# distinct values among the rows; else their GPU and node items are cut out first (a
# site's steps that log energy= make every TRES distinct)
_DISTINCT_SHARE, _DISTINCT_MIN = 0.1, 100
_PENDING_STATES = [state for state, status in STATUS_OF_STATE.items() if status == "pending"]
_NO_NODE = ["none assigned", "(null)", ""]
# a whole number parsed by Python that a 64-bit column must hold
_INT_LIMIT = 2**62


@dataclass
class FastRows:
    """Staged rows typed here, each in line order: `allocs` has the columns of staging.STAGE_COLUMNS,
    `steps` the few a step row needs (staging.STEP_COLUMNS), `keys` every row of both with what
    the linking reads (staging.LINK_SCHEMA), `texts` their lines (for their md5),
    `hosts` stage_sacct_host's."""

    allocs: pl.DataFrame
    steps: pl.DataFrame
    keys: pl.DataFrame
    texts: pa.Array
    hosts: pl.DataFrame
    gpu_keyed: bool  # some row names a GPU in its TRES (gres/gpu=0 included)

    @property
    def height(self) -> int:
        return self.keys.height


def eligible(layout: Layout) -> bool:
    """Whether a layout's lines may take the fast way: `|`-separated, without the old
    AllocGRES/ReqGRES columns (parse_gres' forms stay with the exact way)."""
    return layout.delimiter == "|" and not ({"allocgres", "reqgres"} & set(layout.columns))


def plain_rows(texts: pa.Array, layout: Layout) -> np.ndarray:
    """Which lines are plainly data rows of the layout (numpy booleans): ASCII, a digit first,
    and the layout's field count (`-p`: ending in the trailing `|`). Headers, sacct's messages
    and blank lines never are; a JobName holding `|` is not (the exact way rejoins it)."""
    n = len(layout.columns)
    pipes, digit = _pipes_and_digit(texts)
    shape = pc.and_(pc.string_is_ascii(texts), digit)
    if layout.trailing:
        count = pc.and_(pc.equal(pipes, n), pc.ends_with(texts, "|"))
    else:
        count = pc.equal(pipes, n - 1)
    return pc.and_(shape, count).fill_null(False).to_numpy(zero_copy_only=False).copy()


def _pipes_and_digit(texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Each line's count of `|` and whether it starts with a digit. On the string buffer with
    numpy where it can (every `|` of the buffer found once, counted per line from the lines'
    offsets: a third of count_substring's time), else by Arrow's kernels."""
    if texts.type != pa.string() or texts.null_count or len(texts) == 0:
        return pc.count_substring(texts, "|"), pc.match_substring_regex(texts, "^[0-9]")
    bounds = np.frombuffer(texts.buffers()[1], dtype=np.int32)[texts.offset : texts.offset + len(texts) + 1]
    data = texts.buffers()[2]
    buf = np.frombuffer(data, dtype=np.uint8)[bounds[0] : bounds[-1]] if data is not None else np.zeros(0, np.uint8)
    starts, ends = bounds[:-1] - bounds[0], bounds[1:] - bounds[0]
    pipes = np.diff(np.searchsorted(np.flatnonzero(buf == ord("|")), np.append(starts, ends[-1])))
    first = buf[np.minimum(starts, len(buf) - 1)] if len(buf) else np.zeros(len(texts), np.uint8)
    digit = (ends > starts) & (first >= ord("0")) & (first <= ord("9"))
    return pa.array(pipes), pa.array(digit)


def _lookup(values: pl.Series, parse: Callable[[str], tuple[Any, ...]], schema: dict[str, Any]) -> pl.DataFrame:
    """`parse` of each distinct value (one Python call per value, not per row), as a frame
    keyed by `key` to join back."""
    keys = values.drop_nulls().unique().to_list()
    out = pl.DataFrame([parse(k) for k in keys], schema=schema, orient="row")
    return out.with_columns(pl.Series("key", keys, dtype=pl.String))


def _parsed_limit(text: str) -> tuple[int | None, bool]:
    try:
        seconds = parse_duration_s(text)
    except ValueError:
        return None, False
    return seconds, True


def _parsed_limit_raw(text: str) -> tuple[int | None, bool]:
    try:
        return parse_limit_minutes(text), True
    except ValueError:
        return None, False


def _parsed_tres(text: str) -> tuple[int | None, str | None, int | None, bool | None, bool]:
    try:
        tres = parse_tres(text)
    except ValueError:
        return None, None, None, None, False
    assert tres is not None  # never missing: it starts with a dummy item
    # typed GPU keys are summed: a sum too big for the staging column goes the exact way
    return tres.gpus, tres.model, tres.nodes, tres.keyed, tres.gpus < _INT_LIMIT


_STATE_RE = re.compile(_STATE)
_STATE_SCHEMA = {"word": pl.String, "cancelled_by": pl.String, "known": pl.Boolean}
_EXIT_SCHEMA = {"exit_code": pl.Int32, "exit_signal": pl.Int32, "exit_ok": pl.Boolean}
_DERIVED_SCHEMA = {"derived_exit_code": pl.Int32, "derived_exit_signal": pl.Int32, "derived_ok": pl.Boolean}


def _state_parts(text: str) -> tuple[str | None, str | None, bool]:
    """(State word, canceller, known word) of a State of _STATE's form; else not known."""
    match = _STATE_RE.fullmatch(text)
    if match is None:
        return None, None, False
    return match["word"], match["by"], match["word"] in KNOWN_STATES


def _exit_parts(text: str) -> tuple[int | None, int | None, bool]:
    """(code, signal, readable) of an ExitCode, as values.parse_exit reads it: missing is
    readable, without numbers."""
    try:
        code, signal = parse_exit(text)
    except ValueError:
        return None, None, False
    return code, signal, True


def _parsed_hosts(text: str) -> tuple[list[str], bool]:
    try:
        return expand_hostlist(text), True
    except HostlistError:
        return [], False


_TRES_SCHEMA = {"gpus": pl.Int64, "model": pl.String, "nodes": pl.Int64, "keyed": pl.Boolean, "ok": pl.Boolean}


def split_clean(
    texts: pa.Array, lines: np.ndarray, layout: Layout, cols: Columns, dump: int
) -> tuple[FastRows, np.ndarray]:
    """(the staged rows of the clean lines, a numpy mask of the other lines).

    `texts`: lines plain_rows() passed, `lines` their numbers, `dump` the reader's header count.
    A step row (4 of 5 lines at a busy site) is typed only as far as the exact way reads it
    (job id, State, ExitCode); the rest of the typing runs over the allocation rows alone.
    """
    n = len(layout.columns)
    text = pl.Series("text", pl.from_arrow(texts), dtype=pl.String)
    body = text.str.strip_suffix("|") if layout.trailing else text
    # a blank at a field's edge: the regex runs only on the lines with a blank (rare)
    blank = np.flatnonzero((text.str.contains(" ", literal=True) | text.str.contains("\t", literal=True)).to_numpy())
    edge = np.zeros(len(text), dtype=bool)
    if len(blank):
        edge[blank] = text.gather(blank).str.contains(_BLANK_EDGE).to_numpy()
    # every row is split as far as its head (job id, State, ExitCode, Cluster): a step row needs
    # no more; the allocation rows alone are split whole, below (splitting and filtering every
    # field of every row took a sixth of a million-job ingest's CPU)
    head_n = max(i for i in (cols.job_id, cols.state, cols.exit, cols.cluster) if i is not None) + 1
    whole = head_n >= n  # the head is the whole row: split once, whole
    head_fields = body.str.split_exact("|", n - 1) if whole else body.str.splitn("|", head_n + 1)
    frame = pl.DataFrame({"line": pl.Series(lines, dtype=pl.Int64), "edge": pl.Series(edge), "fields": head_fields})

    def value(i: int | None) -> pl.Expr:
        if i is None:
            return pl.lit("", dtype=pl.String)
        return pl.col("fields").struct.field(f"field_{i}")

    def missing(expr: pl.Expr) -> pl.Expr:
        return expr.str.contains(_MISSING_VALUE)

    def time_of(i: int | None, name: str) -> list[pl.Expr]:
        t = value(i)
        is_time = t.str.contains(_TIME)
        readable = (
            is_time
            & t.str.slice(0, 10).str.strptime(pl.Date, "%Y-%m-%d", strict=False).is_not_null()
            & t.str.slice(0, 4).cast(pl.Int32, strict=False).is_between(FIRST_YEAR, LAST_YEAR)
        )
        # a value neither a time nor missing makes the row unclean: it is never staged from here
        return [
            pl.when(is_time).then(t.str.replace("T", " ", literal=True)).alias(name),
            (readable | missing(t)).alias(f"{name}_ok"),
        ]

    def tres_text(i: int | None, name: str) -> list[pl.Expr]:
        t = value(i)
        present = ~missing(t) if i is not None else pl.lit(False)
        return [present.alias(f"{name}_present"), pl.when(present).then(t).alias(f"{name}_tres")]

    # what every row needs: its job id, State and ExitCode, and no blank at a field's edge.
    # State and ExitCode take few values: each is read once (_lookup), not once per row.
    job_id = value(cols.job_id).str.extract_groups(JOB_ID.pattern)
    states = _lookup(frame.select(value(cols.state)).to_series(), _state_parts, _STATE_SCHEMA)
    exits = _lookup(frame.select(value(cols.exit)).to_series(), _exit_parts, _EXIT_SCHEMA)
    head = (
        frame.lazy()
        .with_columns(
            value(cols.state).alias("source_status"),
            value(cols.exit).alias("exit_text"),
        )
        .join(states.lazy(), left_on="source_status", right_on="key", how="left", maintain_order="left")
        .join(exits.lazy(), left_on="exit_text", right_on="key", how="left", maintain_order="left")
        .select(
            pl.col("line"),
            job_id.struct.field("job").alias("job_id"),
            job_id.struct.field("het").alias("het_text"),
            job_id.struct.field("step").alias("step"),
            pl.col("word"),
            pl.col("cancelled_by"),
            pl.col("source_status"),
            pl.col("exit_code"),
            pl.col("exit_signal"),
            (~pl.col("edge") & pl.col("known").fill_null(False) & pl.col("exit_ok").fill_null(False)).alias("row_ok"),
            pl.when(value(cols.cluster) == "").then(None).otherwise(value(cols.cluster)).alias("cluster"),
        )
        .with_columns(
            (
                pl.col("row_ok")
                & pl.col("job_id").is_not_null()
                & (pl.col("het_text").str.len_chars() < 10).fill_null(True)
            )
            .fill_null(False)
            .alias("row_ok"),
        )
        .collect(engine="in-memory")
    )
    is_step = head["step"].is_not_null().to_numpy()
    row_ok = head["row_ok"].to_numpy()
    # the frames are cut before they grow: a step row's few columns, an allocation row's fields
    step_rows = head.filter(pl.Series(is_step & row_ok))
    alloc_rows = pl.Series(~is_step & row_ok)
    fields = (
        frame.select("fields").filter(alloc_rows)
        if whole
        else pl.DataFrame({"fields": body.filter(alloc_rows).str.split_exact("|", n - 1)})
    )
    typed = (
        pl.concat([head.filter(alloc_rows), fields], how="horizontal")
        .lazy()
        .with_columns(
            *time_of(cols.submit, "submit_t"),
            *time_of(cols.eligible, "eligible_t"),
            *time_of(cols.start, "start_t"),
            *time_of(cols.end, "end_t"),
            value(cols.timelimit if cols.timelimit is not None else cols.timelimit_raw).alias("limit_key"),
            *tres_text(cols.alloc_tres, "alloc"),
            *tres_text(cols.req_tres, "req"),
            value(cols.alloc_tres).alias("alloc_text"),
            value(cols.nodelist).alias("nodelist"),
            value(cols.derived_exit).alias("derived_text"),
            value(cols.nnodes).alias("nnodes_text"),
            *[
                pl.when(value(i) == "").then(None).otherwise(value(i)).alias(name)
                for i, name in (
                    (cols.job_name, "job_name"),
                    (cols.user, "user_name"),
                    (cols.uid, "user_uid"),
                    (cols.account, "account"),
                    (cols.partition, "partition"),
                    (cols.qos, "qos"),
                )
            ],
        )
        .drop("fields")
        .collect(engine="in-memory")
    )

    # per distinct value, by values.py's parsers
    if cols.timelimit is not None or cols.timelimit_raw is not None:
        parse = _parsed_limit if cols.timelimit is not None else _parsed_limit_raw
        limits = _lookup(typed["limit_key"], parse, {"time_limit_s": pl.Int64, "limit_ok": pl.Boolean})
        typed = typed.join(limits, left_on="limit_key", right_on="key", how="left", maintain_order="left")
    else:
        typed = typed.with_columns(time_limit_s=pl.lit(None, dtype=pl.Int64), limit_ok=pl.lit(True))
    for name in ("alloc", "req"):
        schema = {f"{name}_{k}": v for k, v in _TRES_SCHEMA.items()}
        tres = typed[f"{name}_tres"]
        if tres.n_unique() <= max(_DISTINCT_MIN, _DISTINCT_SHARE * len(tres)):
            found = _lookup(tres, _parsed_tres, schema)  # the exact way reads the whole value
            typed = typed.join(found, left_on=f"{name}_tres", right_on="key", how="left", maintain_order="left")
            continue
        items = pl.concat_str(pl.lit(","), pl.col(f"{name}_tres")).str.extract_all(_TRES_GPU_ITEM).list.join("")
        typed = typed.with_columns(pl.concat_str(pl.lit("x=1"), items).alias("tres_key"))
        found = _lookup(typed["tres_key"], _parsed_tres, schema)
        typed = typed.join(found, left_on="tres_key", right_on="key", how="left", maintain_order="left")
        # the items cut out are read; the whole value must still be key=value items
        typed = typed.with_columns(
            (pl.col(f"{name}_ok") & pl.col(f"{name}_tres").str.contains(_TRES)).alias(f"{name}_ok")
        )
    derived = _lookup(typed["derived_text"], _exit_parts, _DERIVED_SCHEMA)
    typed = typed.join(derived, left_on="derived_text", right_on="key", how="left", maintain_order="left")
    if cols.nodelist is not None:
        hostlists = _lookup(typed["nodelist"], _parsed_hosts, {"host_list": pl.List(pl.String), "hosts_ok": pl.Boolean})
        typed = typed.join(hostlists, left_on="nodelist", right_on="key", how="left", maintain_order="left")
    else:
        typed = typed.with_columns(host_list=pl.lit([], dtype=pl.List(pl.String)), hosts_ok=pl.lit(True))

    alloc_ok = (
        pl.col("submit_t_ok")
        & pl.col("eligible_t_ok")
        & pl.col("start_t_ok")
        & pl.col("end_t_ok")
        & pl.col("limit_ok")
        & pl.col("hosts_ok")
        & pl.col("derived_ok")
        & pl.col("nnodes_text").str.contains(_NNODES)
        & (~pl.col("alloc_present") | pl.col("alloc_ok"))
        & (~pl.col("req_present") | pl.col("req_ok"))
    )
    alloc_clean = typed.select(alloc_ok.fill_null(False)).to_series().to_numpy()
    typed = typed.filter(pl.Series(alloc_clean))
    clean = row_ok & is_step
    clean[np.flatnonzero(row_ok & ~is_step)[alloc_clean]] = True

    # parse_fields' rules, row by row, for the clean rows
    alloc = pl.col("alloc_present")
    req = pl.col("req_present")
    tres_gpus = pl.when(alloc).then(pl.col("alloc_gpus")).when(req).then(pl.col("req_gpus"))
    # AllocTRES untyped and ReqTRES naming the type: the model is ReqTRES'
    tres_model = (
        pl.when(alloc)
        .then(pl.coalesce("alloc_model", pl.when(req).then(pl.col("req_model"))))
        .when(req)
        .then(pl.col("req_model"))
    )
    tres_nodes = pl.when(alloc).then(pl.col("alloc_nodes")).when(req).then(pl.col("req_nodes"))
    tres_keyed = pl.when(alloc).then(pl.col("alloc_keyed")).when(req).then(pl.col("req_keyed"))
    n_hosts = pl.col("host_list").list.len().cast(pl.Int32)
    # a start that is none: a pending job's forecast, or a job that ended without a node
    no_start = pl.col("word").is_in(_PENDING_STATES)
    if cols.nodelist is not None:
        no_start = no_start | pl.col("nodelist").str.to_lowercase().is_in(_NO_NODE)
    elif cols.alloc_tres is not None:
        no_start = no_start | ((pl.col("alloc_text") == "") & (pl.col("start_t") == pl.col("end_t")).fill_null(False))
    start_t = pl.when(pl.col("start_t").is_not_null() & no_start).then(None).otherwise(pl.col("start_t"))
    nnodes = (
        pl.when(pl.col("nnodes_text") != "")
        .then(pl.col("nnodes_text").cast(pl.Int64, strict=False))
        .when(tres_nodes.fill_null(0) != 0)
        .then(tres_nodes)
        .when(n_hosts > 0)
        .then(n_hosts)
    )
    out = typed.with_columns(
        het_offset=pl.col("het_text").cast(pl.Int32),
        problem=pl.lit(None, dtype=pl.String),
        state=pl.col("word"),
        status=_status(start_t.is_not_null()),
        start_t=start_t,
        gpus=tres_gpus,
        req_gpus=pl.when(req).then(pl.col("req_gpus")).when(alloc).then(pl.col("alloc_gpus")),
        gpu_model=tres_model,
        nnodes=nnodes,
        hosts=n_hosts,
        start_unknown=pl.lit(cols.start is None),
        gpu_keyed=tres_keyed,
        dump=pl.lit(dump, dtype=pl.Int32),
        text=pl.lit(None, dtype=pl.String),  # read again from the file for the few rejected
    )
    steps = step_rows.select(
        pl.col("line"),
        pl.col("job_id"),
        pl.col("het_text").cast(pl.Int32).alias("het_offset"),
        pl.col("step"),
        pl.lit(None, dtype=pl.String).alias("problem"),
        pl.col("word").alias("state"),
        _status(pl.lit(True)).alias("status"),
        pl.col("exit_code"),
        pl.col("exit_signal"),
        pl.col("cluster"),
        pl.lit(None, dtype=pl.String).alias("text"),
    )
    keys = head.filter(pl.Series(clean)).select(
        pl.col("line"),
        pl.col("job_id"),
        pl.col("cluster"),
        pl.lit(dump, dtype=pl.Int32).alias("dump"),
        pl.col("het_text").cast(pl.Int32).alias("het_offset"),
        pl.col("step").is_null().alias("is_alloc"),
    )
    hosts = out.select("line", pl.col("host_list").alias("machine_id")).explode("machine_id").drop_nulls("machine_id")
    allocs = out.select([pl.col(name).cast(kind) for name, kind in STAGE_SCHEMA.items()])
    gpu_keyed = bool(out["gpu_keyed"].fill_null(False).any())
    return FastRows(
        allocs,
        steps.cast(STEP_SCHEMA),  # type: ignore[arg-type]  # polars' stubs: cast()'s keys wider than str
        keys,
        texts if clean.all() else texts.filter(pa.array(clean)),
        hosts.cast({"line": pl.Int64, "machine_id": pl.String}),
        gpu_keyed,
    ), ~clean


def _status(started: pl.Expr) -> pl.Expr:
    """values.status_of of the State word."""
    return (
        pl.when(pl.col("word").is_in(sorted(REQUEUE_STATES)))
        .then(pl.when(started).then(pl.lit("preempted")).otherwise(pl.lit("pending")))
        .otherwise(pl.col("word").replace_strict(STATUS_OF_STATE, default="unknown", return_dtype=pl.String))
    )
