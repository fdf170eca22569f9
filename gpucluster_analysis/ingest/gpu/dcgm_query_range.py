"""DCGM metrics exported from Prometheus' API (`dcgm_query_range`): the JSON of
`/api/v1/query_range` (or `/api/v1/query`), one metric or many (`{__name__=~"DCGM_.*"}`) per
file; epoch-second times in UTC. A series without `__name__` takes its metric from the file
name (`DCGM_FI_DEV_GPU_UTIL.json`). The live pull (prometheus.py) stores each chunk this way.

A plainly clean answer is read, typed and pivoted in polars (`dcgm_fast.py`, read ahead in a
thread); every other one is read by DuckDB's JSON reader and staged as dcgm.py stages scrapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, IngestOptions, LoadContext, LoadCounts
from gpucluster_analysis.ingest.gpu import dcgm_fast
from gpucluster_analysis.ingest.gpu.dcgm import METRICS, SAMPLE_KIND, Exact, store_stage_dcgm, store_typed
from gpucluster_analysis.sqlfiles import run_script

# A Prometheus API response is one JSON value, which DuckDB reads whole.
_MAX_RESPONSE_BYTES = 1 << 30


def _fallback_measure(path: Path) -> str | None:
    """The measure a file name gives series without __name__ (the longest metric it contains)."""
    named = sorted((n for n in METRICS if n in path.name.lower()), key=len)
    return METRICS[named[-1]] if named else None


def _read_ahead_query_range(path: Path, options: IngestOptions) -> object:
    if options.host or path.stat().st_size > _MAX_RESPONSE_BYTES:
        return Exact()
    typed = dcgm_fast.read(path, METRICS, _fallback_measure(path), options.max_gpus_per_node)
    return Exact() if typed is None else typed


@dataclass(frozen=True)
class AnswerCounts:
    """What one Prometheus answer held and gave: its series and their points, every one, and
    the rows stored and rejected."""

    counts: LoadCounts
    series: int
    points: int


def _load_query_range(ctx: LoadContext) -> LoadCounts:
    return _load_answer(ctx).counts


def _load_answer(ctx: LoadContext) -> AnswerCounts:
    ahead = ctx.prepared if ctx.prepared is not None else _read_ahead_query_range(ctx.path, ctx.options)
    if isinstance(ahead, dcgm_fast.Typed):  # a plainly clean answer: read in polars
        return AnswerCounts(store_typed(ctx, ahead), ahead.series, ahead.points)
    if ctx.path.stat().st_size > _MAX_RESPONSE_BYTES:
        raise ParseError(
            f"{ctx.path}: a Prometheus API response over 1 GiB, read whole as one JSON value",
            hint="export shorter time ranges (query_range start/end) into several files",
        )
    try:
        # result stays JSON until status and resultType are checked: a scalar or string
        # result has another shape, and an error response has none
        ctx.con.execute(
            "CREATE OR REPLACE TEMP TABLE stage_query_response AS "
            "SELECT status, error, data.resultType AS result_type, data.result AS result_json FROM read_json(?, "
            f"format = 'auto', records = true, maximum_object_size = {_MAX_RESPONSE_BYTES}, columns = "
            f"{{status: 'VARCHAR', "
            "error: 'VARCHAR', data: 'STRUCT(resultType VARCHAR, result JSON)'})",
            [str(ctx.path)],
        )
    except duckdb.Error as e:
        raise ParseError(
            f"{ctx.path}: not a Prometheus API response: {str(e).splitlines()[0]}",
            hint='expected {"status":"success","data":{"resultType":"matrix","result":[...]}}',
        ) from e
    rows = ctx.con.execute("SELECT status, error, result_type FROM stage_query_response").fetchall()
    if len(rows) != 1:
        raise ParseError(f"{ctx.path}: expected one Prometheus API response, found {len(rows)} JSON values")
    status, error, result_type = rows[0]
    if status != "success":
        raise ParseError(f"{ctx.path}: the query failed: {error or status}", hint="export the data again")
    if result_type not in ("matrix", "vector"):
        raise ParseError(
            f"{ctx.path}: resultType {result_type!r}", hint="gca reads matrix (query_range) and vector results"
        )
    try:
        ctx.con.execute(
            "CREATE OR REPLACE TEMP TABLE stage_query_response AS SELECT from_json(result_json, "
            '\'[{"metric": "MAP(VARCHAR, VARCHAR)", "values": "JSON[]", "value": "JSON"}]\') AS result '
            "FROM stage_query_response"
        )
    except duckdb.Error as e:
        raise ParseError(
            f'{ctx.path}: a series is not {{"metric": {{...}}, "values": [...]}}: {str(e).splitlines()[0]}',
            hint="export the Prometheus API response unchanged",
        ) from e
    # a series without __name__: the metric the file name contains (the longest, DCGM_FI_DEV_FB_USED over ...)
    names = sorted(METRICS)
    run_script(
        ctx.con,
        "ingest",
        "dcgm_query_range",
        {
            "metric_names": names,
            "measures": [METRICS[n] for n in names],
            "fallback_metric": _fallback_measure(ctx.path),
        },
    )
    unnamed, known = ctx.con.execute(
        "SELECT count(*) FILTER (WHERE measure IS NULL AND dcgm_label(m, '__name__') IS NULL),"
        " count(*) FILTER (WHERE measure IS NOT NULL) FROM stage_dcgm_series"
    ).fetchall()[0]
    if unnamed:
        raise ParseError(
            f"{ctx.path}: {unnamed} series without __name__, and the file name names no DCGM metric",
            hint="name the file after the metric (e.g. DCGM_FI_DEV_GPU_UTIL.json) or keep __name__ in the query",
        )
    if not known:
        raise ParseError(
            f"{ctx.path}: no series of a DCGM metric gca reads (GPU_UTIL, FB_USED, POWER_USAGE, ...)",
            hint='export DCGM_FI_* metrics, e.g. query_range of {__name__=~"DCGM_FI_.*"}',
        )
    series, points = ctx.con.execute(
        "SELECT count(*), coalesce(sum(len(points)), 0) FROM stage_dcgm_series"
    ).fetchall()[0]
    return AnswerCounts(store_stage_dcgm(ctx), int(series), int(points))


def load_query_range(ctx: LoadContext) -> AnswerCounts:
    """Store the Prometheus API response at ctx.path as `dcgm_query_range` does (the live pull's
    chunks), whichever way reads it (the polars one for a plainly clean answer)."""
    return _load_answer(ctx)


def sniff_query_range(head: str) -> bool:
    # any Prometheus API response: one without DCGM series (or an error answer) then fails
    # saying so, which tells more than "not a format gca recognizes"
    text = head.lstrip()
    return text.startswith("{") and ('"resultType"' in text or ('"status"' in text and '"errorType"' in text))


FORMATS = [
    FileFormat(
        name="dcgm_query_range",
        source="dcgm",
        description="Prometheus API query_range/query JSON export of DCGM metrics",
        file_names=(),
        sniff=sniff_query_range,
        load=_load_query_range,  # one JSON value, read whole: a memory limit would refuse a big one
        prepare=_read_ahead_query_range,
        sample_kind=SAMPLE_KIND,
    ),
]
