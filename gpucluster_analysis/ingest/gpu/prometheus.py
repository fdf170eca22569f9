"""Pull DCGM metrics from a live Prometheus: `gca ingest prometheus+http://HOST:9090 --since ... --until ...`.

The pull asks `/api/v1/query_range` for `{__name__=~"<match>"}` (by default the DCGM
metrics gca reads, `dcgm.METRICS`) at every multiple of the step in [since, until) (without
--step, the step is the scrape interval the server's samples show: each scrape once), in
time chunks: at most `MAX_POINTS` points per series (Prometheus refuses more than
11,000) and, once the first chunk has told how many series there are, about
`MAX_RESPONSE_POINTS` points per response, so one response stays a few tens of MB
however many GPUs the server watches. The chunks are not split by metric: the store keeps
one row per GPU and sample time, which needs every metric of a GPU in the same response.

Each chunk is one transaction: its response, streamed to a temporary file, is stored by
the `dcgm_query_range` loader, with an `ingested_files` row (path: the request URL, never
a header or credentials) and a `prometheus_chunks` row. A pull that stops (the server
goes away, Ctrl-C) keeps the chunks already stored; run again, it pulls only what no
chunk of the same server and query covers, so the same range is never stored twice.
The server and the options are checked by prometheus_plan.py before anything is read. HTTP
is the standard library's (prometheus_http.py). Every request is bounded: it has `TIMEOUT_S`
in all (however slowly a server sends, its socket is shut then) and its answer at most
`MAX_ANSWER_BYTES` (decompressed; reading stops there, and the chunk is pulled again in
halves, down to one sample time).
"""

from __future__ import annotations

import json
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import duckdb

from gpucluster_analysis.errors import GcaError, InputError, StoreError
from gpucluster_analysis.ingest.base import IngestOptions, LoadContext, LoadCounts
from gpucluster_analysis.ingest.gpu import dcgm_query_range
from gpucluster_analysis.ingest.gpu.prometheus_http import MAX_ANSWER_BYTES, TIMEOUT_S, AnswerTooBig, check_body, fetch
from gpucluster_analysis.ingest.gpu.prometheus_plan import (
    DEFAULT_STEP,
    PrometheusSource,
    default_match,
    parse_step,
    query_for,
)
from gpucluster_analysis.ingest.registry import sample_kinds
from gpucluster_analysis.ingest.samples import compare_new
from gpucluster_analysis.sqlfiles import run_script

# Points per series per request: Prometheus refuses a query_range of more than 11,000.
MAX_POINTS = 10_000
# Points (series x times) per response, once the series count is known: ~30 bytes each in JSON.
MAX_RESPONSE_POINTS = 1_000_000
# The first chunk, before the series count is known: small enough for a server of thousands of GPUs.
FIRST_CHUNK_POINTS = 240
FORMAT = "dcgm_query_range"  # how each chunk is read, as ingested_files records it


@dataclass(frozen=True)
class Chunk:
    """One stored chunk: its sample times (inclusive), what it held and what was stored."""

    start_ms: int
    end_ms: int
    series: int
    samples: int
    rows: int
    rejects: int
    seconds: float
    answer_bytes: int = 0  # the server's answer, decompressed
    file_id: int = 0  # its ingested_files row


@dataclass
class PullReport:
    server: str
    query: str
    step_ms: int
    chunks: list[Chunk] = field(default_factory=list)
    # ranges of the request pulled before: (first time, last time, chunks)
    covered: list[tuple[int, int, int]] = field(default_factory=list)
    # GPU samples a file of DCGM samples gave before (an export, scrapes), not stored again (ingest/samples.py)
    duplicates: int = 0
    # the step is the scrape interval the server's samples showed (no --step given)
    step_found: bool = False

    @property
    def rows(self) -> int:
        return sum(c.rows for c in self.chunks) - self.duplicates

    @property
    def rejects(self) -> int:
        return sum(c.rejects for c in self.chunks)


class PullListener(Protocol):
    """Receives progress; the CLI draws it, tests may ignore it."""

    def covered(self, start_ms: int, end_ms: int, chunks: int) -> None: ...
    def planned(self, points: int) -> None: ...
    def chunk_stored(self, chunk: Chunk, points: int) -> None: ...


class _Silent:
    def covered(self, start_ms: int, end_ms: int, chunks: int) -> None: ...
    def planned(self, points: int) -> None: ...
    def chunk_stored(self, chunk: Chunk, points: int) -> None: ...


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 UTC, to the second where that is exact."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S" + (f".{ms % 1000:03d}" if ms % 1000 else "") + "Z")


def _seconds(ms: int) -> str:
    return str(ms // 1000) if ms % 1000 == 0 else f"{ms / 1000:.3f}"


def _naive_utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)


def pull(
    con: duckdb.DuckDBPyConnection,
    source: PrometheusSource,
    *,
    since_ms: int,
    until_ms: int,
    step_ms: int | None,
    match: str | None = None,
    listener: PullListener | None = None,
    max_points: int = MAX_POINTS,
    max_response_points: int = MAX_RESPONSE_POINTS,
    timeout_s: float = TIMEOUT_S,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
    options: IngestOptions | None = None,
) -> PullReport:
    """Pull every sample time `since <= t < until` (multiples of the step) not stored yet; one transaction per chunk.

    Each request takes at most `timeout_s` in all and reads at most `max_answer_bytes` of
    answer; a chunk whose answer is bigger is pulled again in halves. `options`: how each chunk
    is read (the bound of GPUs per node).
    """
    listener = listener or _Silent()
    query = query_for(match or default_match())
    now_ms = int(time.time() * 1000)
    until_ms = min(until_ms, now_ms + 1)  # never mark the future as pulled
    found_ms = None
    if step_ms is None:  # every scrape once: the step is the interval the samples show
        found_ms = scrape_interval(source, query, since_ms, until_ms, timeout_s)
        step_ms = found_ms or parse_step(DEFAULT_STEP)
    first, last = -(-since_ms // step_ms), -(-until_ms // step_ms) - 1  # grid indices: t = k * step
    if last < first:
        raise InputError(
            f"{source.server}: no sample time from --since {iso(since_ms)} to --until {iso(until_ms)}"
            f" at --step {_seconds(step_ms)}s",
            hint="give a --since before --until (and before now)",
        )
    report = PullReport(source.server, query, step_ms, step_found=found_ms is not None)
    _refuse_other_queries(con, source, query, first * step_ms, (last + 1) * step_ms)
    todo = _uncovered(con, source, query, first, last, step_ms, report)
    for start, end, chunks in report.covered:
        listener.covered(start, end, chunks)
    listener.planned(sum(b - a + 1 for a, b in todo))
    if not todo:
        return report
    run_script(con, "ingest", "macros", {})
    size, most_series, most_bytes = min(max_points, FIRST_CHUNK_POINTS), 0, 0.0
    for a, b in todo:
        k = a
        while k <= b:
            end = min(b, k + size - 1)
            try:
                chunk = _pull_chunk(
                    con,
                    source,
                    query,
                    k * step_ms,
                    end * step_ms,
                    step_ms,
                    timeout_s,
                    max_answer_bytes,
                    options or IngestOptions(),
                )
            except GcaError as e:
                if isinstance(e, AnswerTooBig) and end > k:
                    size = (end - k + 1) // 2  # fewer sample times per request, until an answer fits
                    continue
                if report.chunks:
                    e.hint = ((e.hint + "; ") if e.hint else "") + (
                        f"the {len(report.chunks)} chunks stored up to {iso(report.chunks[-1].end_ms)} are kept:"
                        " run the same command again to resume"
                    )
                raise
            report.chunks.append(chunk)
            listener.chunk_stored(chunk, end - k + 1)
            # size the next chunk by the most series, and bytes per sample time, a chunk had so far
            # (+25% for series that start later)
            most_series = max(most_series, chunk.series)
            most_bytes = max(most_bytes, chunk.answer_bytes / (end - k + 1))
            k = end + 1
            fit = max_response_points * 4 // (5 * most_series) if most_series else max_points
            fit_bytes = int(max_answer_bytes * 4 / (5 * most_bytes)) if most_bytes else max_points
            size = max(1, min(max_points, fit, fit_bytes))
    # chunks of one query never overlap each other; a file of the same DCGM samples may overlap
    # them (a pull that stopped leaves its chunks to the next ingest or pull to compare)
    found = compare_new(con, sample_kinds())
    report.duplicates = sum(found[c.file_id].samples for c in report.chunks if c.file_id in found)
    return report


# Samples per series counted over these two windows ending at one time: the difference over
# their difference in length is the scrape interval (the windows' edges count alike in both).
_LONG_WINDOW_S, _SHORT_WINDOW_S = 600, 300
_INTERVAL_ANSWER_BYTES = 1 << 20  # a few series: the metric names, one number


def scrape_interval(
    source: PrometheusSource, query: str, since_ms: int, until_ms: int, timeout_s: float = TIMEOUT_S
) -> int | None:
    """The interval between the samples of the series `query` selects, in ms (whole seconds from
    1 s up), as the server counts them in the ten minutes after `since` (else before `until`);
    None where it has too few samples there to tell. Small requests: the metric names there
    (`group by (__name__)`), then for the first (a range function drops the name, so two
    metrics' series could not be told apart) the server counts
    `avg(count_over_time(m[10m])) - avg(count_over_time(m[5m]))`: samples in five minutes."""
    for at_ms in dict.fromkeys((min(since_ms + _LONG_WINDOW_S * 1000, until_ms), until_ms)):
        names = _instant(source, f"group by (__name__) ({query})", at_ms, timeout_s)
        name = min((r["metric"].get("__name__", "") for r in names), default="")
        if not name:
            continue
        metric = f'{{__name__="{name}"}}'  # a metric name holds no quote ([a-zA-Z_:][a-zA-Z0-9_:]*)
        counted = _instant(
            source,
            f"avg(count_over_time({metric}[{_LONG_WINDOW_S}s])) - avg(count_over_time({metric}[{_SHORT_WINDOW_S}s]))",
            at_ms,
            timeout_s,
        )
        per_window = float(counted[0]["value"][1]) if counted else 0.0
        if per_window >= 1:  # at least one sample more in the longer window
            seconds = (_LONG_WINDOW_S - _SHORT_WINDOW_S) / per_window
            return round(seconds) * 1000 if seconds >= 1 else max(1, round(seconds * 1000))
    return None


def _instant(source: PrometheusSource, expr: str, at_ms: int, timeout_s: float) -> list[dict]:
    """The result of an instant query of the scrape interval's (small: a few series)."""
    url = f"{source.server}/api/v1/query?{urllib.parse.urlencode({'query': expr, 'time': _seconds(at_ms)})}"
    shown = f"{source.server}/api/v1/query (the scrape interval, at {iso(at_ms)})"
    with tempfile.TemporaryDirectory(prefix="gca-prometheus-") as scratch:
        body = Path(scratch) / "interval.json"
        fetch(source, url, shown, body, timeout_s, _INTERVAL_ANSWER_BYTES)
        try:
            result = json.loads(body.read_text())["data"]["result"]
            if not isinstance(result, list) or not all(isinstance(r, dict) for r in result):
                raise TypeError(result)
            return result
        except (ValueError, KeyError, TypeError) as e:
            raise InputError(
                f"{shown}: the answer is not Prometheus API JSON",
                hint="check the URL: it should be the Prometheus server's base URL",
            ) from e


def _refuse_other_queries(
    con: duckdb.DuckDBPyConnection, source: PrometheusSource, query: str, lo: int, hi: int
) -> None:
    other = con.execute(
        "SELECT query, min(epoch_ms(start_at)), max(epoch_ms(end_at)) FROM prometheus_chunks"
        " WHERE server = ? AND query <> ? AND epoch_ms(start_at) < ? AND epoch_ms(end_at) + step_s * 1000 > ?"
        " GROUP BY query ORDER BY 2 LIMIT 1",
        [source.server, query, hi, lo],
    ).fetchall()
    if other:
        their, start, end = other[0]
        shown = their if len(their) <= 80 else their[:77] + "..."
        raise InputError(
            f"{source.server}: {iso(int(start))} to {iso(int(end))} was pulled before with another query ({shown});"
            " pulling it again would store its samples twice",
            hint="pull a range outside it, the same --match as then, or into another --db",
        )


def _uncovered(
    con: duckdb.DuckDBPyConnection,
    source: PrometheusSource,
    query: str,
    first: int,
    last: int,
    step_ms: int,
    report: PullReport,
) -> list[tuple[int, int]]:
    """Runs [a, b] of grid indices in first..last that no stored chunk of this query covers;
    records the covered ranges."""
    stored = con.execute(
        "SELECT epoch_ms(start_at), epoch_ms(end_at) + CAST(round(step_s * 1000) AS BIGINT) FROM prometheus_chunks"
        " WHERE server = ? AND query = ? ORDER BY 1",
        [source.server, query],
    ).fetchall()
    todo: list[tuple[int, int]] = []
    k = first
    covered_from, covered_chunks, covered_to = None, 0, 0
    for start, stop in stored:  # a chunk covers the times start <= t < its end + its step
        lo = max(first, -(-int(start) // step_ms))
        hi = min(last, -(-int(stop) // step_ms) - 1)
        if hi < lo or hi < k:
            continue
        if lo > k:
            todo.append((k, lo - 1))
            if covered_from is not None:
                report.covered.append((covered_from * step_ms, covered_to * step_ms, covered_chunks))
                covered_from, covered_chunks = None, 0
        if covered_from is None:
            covered_from = max(lo, k)
        covered_chunks += 1
        covered_to = hi
        k = hi + 1
    if covered_from is not None:
        report.covered.append((covered_from * step_ms, covered_to * step_ms, covered_chunks))
    if k <= last:
        todo.append((k, last))
    return todo


def _pull_chunk(
    con: duckdb.DuckDBPyConnection,
    source: PrometheusSource,
    query: str,
    start_ms: int,
    end_ms: int,
    step_ms: int,
    timeout_s: float,
    max_answer_bytes: int,
    options: IngestOptions,
) -> Chunk:
    started = time.perf_counter()
    params = {"query": query, "start": _seconds(start_ms), "end": _seconds(end_ms), "step": _seconds(step_ms)}
    url = f"{source.server}/api/v1/query_range?{urllib.parse.urlencode(params)}"
    shown = f"{source.server}/api/v1/query_range ({iso(start_ms)} to {iso(end_ms)})"
    with tempfile.TemporaryDirectory(prefix="gca-prometheus-") as scratch:
        body = Path(scratch) / "metrics.json"  # a name that gives the loader neither a host nor a metric
        size, digest = fetch(source, url, shown, body, timeout_s, max_answer_bytes)
        empty = check_body(body, size, shown)
        # what ingested_files calls the chunk: the request, readable, never a header
        request = (
            f"{source.server}/api/v1/query_range?query={query}"
            f"&start={iso(start_ms)}&end={iso(end_ms)}&step={params['step']}"
        )
        con.execute("BEGIN TRANSACTION")
        try:
            (file_id,) = con.execute(
                "INSERT INTO ingested_files SELECT coalesce(max(file_id), 0) + 1, ?, ?, ?, ?, 'UTC', 0, 0, 0, ?"
                " FROM ingested_files RETURNING file_id",
                [request, size, digest, FORMAT, _naive_utc(int(time.time() * 1000))],
            ).fetchall()[0]
            if empty:
                counts, series, samples = LoadCounts(rows=0, rejects=0), 0, 0
            else:
                ctx = LoadContext(con=con, path=body, file_id=int(file_id), options=options, head="")
                answer = dcgm_query_range.load_query_range(ctx)
                counts, series, samples = answer.counts, answer.series, answer.points
            seconds = time.perf_counter() - started
            con.execute(
                "UPDATE ingested_files SET rows_loaded = ?, rejects = ?, seconds = ? WHERE file_id = ?",
                [counts.rows, counts.rejects, seconds, file_id],
            )
            con.execute(
                "INSERT INTO prometheus_chunks (server, query, start_at, end_at, step_s, series, samples, file_id, "
                "pulled_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    source.server,
                    query,
                    _naive_utc(start_ms),
                    _naive_utc(end_ms),
                    step_ms / 1000,
                    series,
                    samples,
                    file_id,
                    _naive_utc(int(time.time() * 1000)),
                ],
            )
            con.execute("COMMIT")
        except BaseException as e:
            con.execute("ROLLBACK")
            _drop_staging(con)
            if isinstance(e, duckdb.Error):
                raise StoreError(f"{shown}: storing the chunk failed: {str(e).splitlines()[0]}") from e
            if isinstance(e, GcaError):  # the loader names the temporary file: name the request instead
                e.message = e.message.replace(str(body), shown)
                e.args = (e.message,)
            raise
        _drop_staging(con)
    return Chunk(
        start_ms,
        end_ms,
        int(series),
        int(samples),
        counts.rows,
        counts.rejects,
        time.perf_counter() - started,
        size,
        int(file_id),
    )


def _drop_staging(con: duckdb.DuckDBPyConnection) -> None:
    for (name,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary AND table_name LIKE 'stage_%'"
    ).fetchall():
        con.execute(f"DROP TABLE IF EXISTS {name}")
