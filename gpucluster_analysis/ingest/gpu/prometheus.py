"""Pull DCGM metrics from a live Prometheus: `gca ingest prometheus+http://HOST:9090 --since ... --until ...`.

The pull asks `/api/v1/query_range` for `{__name__=~"<match>"}` (by default the DCGM
metrics gca reads, `dcgm.METRICS`) at every multiple of the step in [since, until), in
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
HTTP is the standard library's. Every request is bounded: it has `TIMEOUT_S` in all (however
slowly a server sends, its socket is shut then) and its answer at most `MAX_ANSWER_BYTES`
(decompressed; reading stops there, and the chunk is pulled again in halves, down to one
sample time).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import json
import re
import socket
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import duckdb

from gpucluster_analysis import __version__
from gpucluster_analysis.errors import GcaError, InputError, ServerError, StoreError
from gpucluster_analysis.ingest.base import IngestOptions, LoadContext, LoadCounts
from gpucluster_analysis.ingest.gpu import dcgm
from gpucluster_analysis.ingest.registry import sample_kinds
from gpucluster_analysis.ingest.samples import compare_new
from gpucluster_analysis.sqlfiles import run_script

SCHEMES = ("prometheus+http", "prometheus+https")
# Points per series per request: Prometheus refuses a query_range of more than 11,000.
MAX_POINTS = 10_000
# Points (series x times) per response, once the series count is known: ~30 bytes each in JSON.
MAX_RESPONSE_POINTS = 1_000_000
# The first chunk, before the series count is known: small enough for a server of thousands of GPUs.
FIRST_CHUNK_POINTS = 240
# A request's whole time: connecting, the server's work, and the answer to its last byte.
TIMEOUT_S = 60.0
# An answer's most bytes (decompressed). The loader holds a chunk's JSON in memory, about ten
# times its size; an answer of the usual MAX_RESPONSE_POINTS is ~30 MB.
MAX_ANSWER_BYTES = 128 << 20
_READ_BLOCK = 1 << 20
DEFAULT_STEP = "30s"  # dcgm-exporter's default collection interval
FORMAT = "dcgm_query_range"  # how each chunk is read, as ingested_files records it
_SMALL_BODY = 64 << 10  # error answers and empty results are read whole in Python
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


@dataclass(frozen=True)
class PrometheusSource:
    """A Prometheus server: its base URL without credentials, and the headers sent to it (never shown)."""

    server: str  # http(s)://host:port[/prefix]
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)


def looks_like_url(text: str) -> bool:
    return re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text) is not None


def parse_source(text: str, headers: list[str] | tuple[str, ...] = ()) -> PrometheusSource:
    """`prometheus+http(s)://[user:password@]host[:port][/prefix]` and `Name: value` headers; InputError if not."""
    scheme = text.split("://", 1)[0].lower()
    shown = _without_credentials(text)
    if scheme not in SCHEMES:
        plain = scheme in ("http", "https")
        raise InputError(
            f"{shown}: {'a plain ' + scheme + ' URL' if plain else 'not a source gca reads'}",
            hint=f"to pull from Prometheus write prometheus+{scheme if plain else 'http'}://HOST:9090 "
            "(with --since and --until)",
        )
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError as e:
        raise InputError(f"{shown}: not a URL gca can use ({e})", hint="write prometheus+http://HOST:9090") from e
    if not parts.hostname:
        raise InputError(f"{shown}: no host", hint="write prometheus+http://HOST:9090")
    if parts.query or parts.fragment:
        raise InputError(
            f"{shown}: the URL has a query or fragment",
            hint="give the server's base URL only; --match, --since, --until and --step make the query",
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    server = f"{scheme.removeprefix('prometheus+')}://{host}{f':{port}' if port else ''}{parts.path.rstrip('/')}"
    sent: list[tuple[str, str]] = []
    for number, header in enumerate(headers, start=1):
        name, colon, value = header.partition(":")
        if not colon or not _HEADER_NAME.fullmatch(name.strip()) or not value.strip():
            # never echo the header: it may hold a token
            raise InputError(
                f"--header number {number}: not 'Name: value'", hint="write e.g. --header 'Authorization: Bearer TOKEN'"
            )
        sent.append((name.strip(), value.strip()))
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        basic = base64.b64encode(f"{user}:{password}".encode()).decode()
        sent.append(("Authorization", f"Basic {basic}"))
    return PrometheusSource(server, tuple(sent))


def _without_credentials(text: str) -> str:
    return re.sub(r"(://)[^/@]*@", r"\1", text)


def parse_step(text: str) -> int:
    """`--step` in milliseconds: Prometheus durations (`30s`, `1m`, `500ms`, `1h`) or seconds (`15`, `0.5`)."""
    match = _DURATION.fullmatch(text.strip())
    ms = round(float(match.group(1)) * _UNIT_MS[match.group(2) or "s"]) if match else 0
    if ms < 1:
        raise InputError(f"--step {text!r}: not a positive duration", hint="write e.g. 30s, 1m, 500ms or 15 (seconds)")
    return ms


def parse_instant(text: str, option: str) -> int:
    """`--since`/`--until` in epoch milliseconds: ISO 8601 (UTC unless Z or an offset) or epoch seconds."""
    value = text.strip()
    try:
        if re.fullmatch(r"\d+(\.\d+)?", value):
            return round(float(value) * 1000)
        parsed = datetime.fromisoformat(value)
    except (ValueError, OverflowError) as e:
        raise InputError(
            f"{option} {text!r}: not a time",
            hint="give ISO 8601 (2024-05-01, 2024-05-01T12:00:00Z, UTC unless an offset is written) or epoch seconds",
        ) from e
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return round(parsed.timestamp() * 1000)


def default_match() -> str:
    """The metric names gca reads (dcgm.METRICS), as one case-insensitive regex for __name__."""
    return "(?i)(?:" + "|".join(sorted(dcgm.METRICS)) + ")"


def query_for(match: str) -> str:
    escaped = match.replace("\\", "\\\\").replace('"', '\\"')
    return f'{{__name__=~"{escaped}"}}'


@dataclass(frozen=True)
class PullPlan:
    """One pull asked for on the command line, checked before anything is read or stored."""

    source: PrometheusSource
    since_ms: int
    until_ms: int | None  # None: now, when the pull starts
    step_ms: int
    match: str | None  # None: the DCGM metrics gca reads


def plan_pulls(
    urls: list[str], *, since: str | None, until: str | None, step: str | None, match: str | None, headers: list[str]
) -> list[PullPlan]:
    """The pulls from the URLs with the pull options; InputError for a bad URL or option, or an option without a URL."""
    if not urls:
        given = [
            name
            for name, value in (
                ("--since", since),
                ("--until", until),
                ("--step", step),
                ("--match", match),
                ("--header", headers),
            )
            if value
        ]
        if given:
            raise InputError(
                f"{given[0]} is for pulls from Prometheus", hint="name a server: prometheus+http://HOST:9090"
            )
        return []
    sources = [parse_source(url, headers) for url in urls]
    if since is None:
        raise InputError(
            f"{sources[0].server}: a pull from Prometheus needs --since",
            hint="e.g. --since 2024-05-01 --until 2024-05-08 (UTC)",
        )
    since_ms = parse_instant(since, "--since")
    until_ms = parse_instant(until, "--until") if until else None
    step_ms = parse_step(step or DEFAULT_STEP)
    if until_ms is not None and until_ms <= since_ms:
        raise InputError(
            f"--until {until} is not after --since {since}", hint="give a range that moves forward in time"
        )
    if match is not None:
        try:  # Python's syntax is close to Prometheus' (RE2); the server's answer tells the rest
            re.compile(match)
        except re.error as e:
            raise InputError(
                f"--match {match!r}: not a regular expression ({e})", hint="e.g. --match 'DCGM_FI_.*'"
            ) from e
    return [PullPlan(source, since_ms, until_ms, step_ms, match) for source in sources]


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
    step_ms: int,
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
    first, last = -(-since_ms // step_ms), -(-until_ms // step_ms) - 1  # grid indices: t = k * step
    if last < first:
        raise InputError(
            f"{source.server}: no sample time from --since {iso(since_ms)} to --until {iso(until_ms)}"
            f" at --step {_seconds(step_ms)}s",
            hint="give a --since before --until (and before now)",
        )
    report = PullReport(source.server, query, step_ms)
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
    """Runs [a, b] of grid indices in first..last that no stored chunk of this query covers; records the covered ranges."""
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
        size, digest = _fetch(source, url, shown, body, timeout_s, max_answer_bytes)
        empty = _check_body(body, size, shown)
        # what ingested_files calls the chunk: the request, readable, never a header
        request = f"{source.server}/api/v1/query_range?query={query}&start={iso(start_ms)}&end={iso(end_ms)}&step={params['step']}"
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
                counts = dcgm.load_query_range(ctx)
                series, samples = con.execute(
                    "SELECT count(*), coalesce(sum(len(points)), 0) FROM stage_dcgm_series"
                ).fetchall()[0]
            seconds = time.perf_counter() - started
            con.execute(
                "UPDATE ingested_files SET rows_loaded = ?, rejects = ?, seconds = ? WHERE file_id = ?",
                [counts.rows, counts.rejects, seconds, file_id],
            )
            con.execute(
                "INSERT INTO prometheus_chunks (server, query, start_at, end_at, step_s, series, samples, file_id, pulled_at)"
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


class AnswerTooBig(ServerError):
    """An answer grew past the most gca reads (`max_answer_bytes`); `pull` asks for fewer sample times."""


def _fetch(
    source: PrometheusSource, url: str, shown: str, target: Path, timeout_s: float, max_answer_bytes: int
) -> tuple[int, str]:
    """GET url into target (decompressed); (bytes, sha256). ServerError/InputError in one line naming `shown`:
    also when the whole request takes over `timeout_s`, or the answer grows past `max_answer_bytes`."""
    request = urllib.request.Request(
        url,
        headers={
            "Accept": "application/json",
            "Accept-Encoding": "gzip",
            "User-Agent": f"gca/{__version__}",
            **dict(source.headers),
        },
    )
    deadline = _Deadline(timeout_s)
    opener = urllib.request.build_opener(_HTTPHandler(deadline.watch), _HTTPSHandler(deadline.watch))
    size = 0
    try:
        with opener.open(request, timeout=timeout_s) as response:
            stream = gzip.GzipFile(fileobj=response) if response.headers.get("Content-Encoding") == "gzip" else response
            digest = hashlib.sha256()
            with target.open("wb") as out:
                for block in iter(lambda: stream.read(_READ_BLOCK), b""):
                    size += len(block)
                    if size > max_answer_bytes:
                        raise AnswerTooBig(
                            f"{shown}: the answer is over {_megabytes(max_answer_bytes)}, the most gca reads of one request",
                            hint="pull fewer series at once: a narrower --match (e.g. one metric at a time)",
                        )
                    digest.update(block)
                    out.write(block)
        if deadline.expired:  # the socket shut at the deadline ends a read as if the answer were whole
            raise _late(shown, timeout_s, size)
        return size, digest.hexdigest()
    except urllib.error.HTTPError as e:
        raise _http_error(e, shown) from None
    except urllib.error.URLError as e:
        late = deadline.expired or isinstance(e.reason, TimeoutError)
        raise _late(shown, timeout_s, size) if late else _connection_error(e.reason, shown) from None
    except (OSError, http.client.HTTPException, EOFError, gzip.BadGzipFile) as e:
        late = deadline.expired or isinstance(e, TimeoutError)  # a read's own timeout is the request's too
        raise _late(shown, timeout_s, size) if late else _connection_error(e, shown) from None
    finally:
        deadline.cancel()


def _megabytes(n: int) -> str:
    return f"{n / (1 << 20):g} MB" if n >= 1 << 20 else f"{n:,} bytes"


def _late(shown: str, timeout_s: float, received: int) -> ServerError:
    if not received:
        return ServerError(
            f"{shown}: no answer after {timeout_s:g} s, the most a request may take",
            hint="check that the server is up and reachable; if it is only slow, try again later or pull a narrower --match",
        )
    return ServerError(
        f"{shown}: the answer still incomplete ({received:,} bytes) after {timeout_s:g} s, the most a request may take",
        hint="the server sends too slowly: try again later, or pull a narrower --match",
    )


class _Deadline:
    """A request's whole time: when it is up, the sockets of the request are shut, so whatever
    waits on them (the TLS handshake, the headers, the answer, however slowly the server sends)
    ends there. A socket timeout alone bounds each read, not the request."""

    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds
        self._watched: list[tuple[threading.Timer, socket.socket]] = []
        self.expired = False

    def watch(self, sock: socket.socket) -> None:
        # A duplicate of the connection's descriptor: shutting it shuts the connection (TLS
        # wraps the socket it was given, leaving that one without a descriptor), and it stays
        # ours until `cancel` closes it, so no other file can take its number meanwhile.
        own = sock.dup()
        timer = threading.Timer(max(0.0, self._at - time.monotonic()), self._shut, [own])
        timer.daemon = True
        self._watched.append((timer, own))
        timer.start()

    def _shut(self, sock: socket.socket) -> None:
        self.expired = True
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the server closed it meanwhile

    def cancel(self) -> None:
        for timer, own in self._watched:
            timer.cancel()
            timer.join()
            own.close()


class _WatchedConnection(http.client.HTTPConnection):
    """A connection that hands its TCP socket to `watch` once connected (before any TLS)."""

    watch: Callable[[socket.socket], None] | None = None

    def connect(self) -> None:
        super().connect()
        if self.watch is not None:
            self.watch(self.sock)


class _WatchedSecureConnection(http.client.HTTPSConnection, _WatchedConnection):
    """HTTPSConnection.connect calls _WatchedConnection.connect for the TCP part, then wraps it."""


class _Watching:
    """urllib's HTTP(S) handler whose connections (a redirect's too) are watched."""

    def __init__(self, watch: Callable[[socket.socket], None]) -> None:
        super().__init__()
        self._watch = watch

    def do_open(self, http_class: type, req: urllib.request.Request, **kwargs: object) -> http.client.HTTPResponse:
        watched = (
            _WatchedSecureConnection if issubclass(http_class, http.client.HTTPSConnection) else _WatchedConnection
        )

        def connection(*args: object, **options: object) -> http.client.HTTPConnection:
            made = watched(*args, **options)  # type: ignore[arg-type]
            made.watch = self._watch
            return made

        return super().do_open(connection, req, **kwargs)  # type: ignore[misc]


class _HTTPHandler(_Watching, urllib.request.HTTPHandler):
    pass


class _HTTPSHandler(_Watching, urllib.request.HTTPSHandler):
    pass


def _http_error(e: urllib.error.HTTPError, shown: str) -> GcaError:
    try:
        body = e.read(_SMALL_BODY)
        if e.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    except (OSError, EOFError, http.client.HTTPException):
        body = b""
    detail = ""
    try:
        answer = json.loads(body)
        if isinstance(answer, dict) and answer.get("status") == "error":
            detail = f": {answer.get('errorType', 'error')}: {str(answer.get('error', ''))[:300]}"
    except ValueError:
        pass
    what = f"{shown}: HTTP {e.code} {e.reason}{detail}"
    if e.code in (401, 403):
        return InputError(what, hint="the server wants credentials: pass --header 'Authorization: Bearer TOKEN'")
    if e.code == 404:
        return InputError(
            what, hint="no Prometheus API at this URL: give the server's base URL (and its path prefix, if any)"
        )
    if e.code == 400:
        return InputError(
            what, hint="check --match (a regular expression for metric names), --since, --until and --step"
        )
    if e.code == 422:
        return ServerError(
            what, hint="the query was too big for the server: pull with a larger --step or a narrower --match"
        )
    return ServerError(what, hint="the server failed: try again later, or ask its admins")


def _connection_error(reason: object, shown: str) -> GcaError:
    if isinstance(reason, ConnectionRefusedError):
        return ServerError(f"{shown}: connection refused", hint="is Prometheus running there? check the host and port")
    if isinstance(reason, socket.gaierror):
        return InputError(f"{shown}: unknown host", hint="check the host name in the URL")
    if isinstance(reason, ssl.SSLError):
        return ServerError(
            f"{shown}: TLS failed: {reason}", hint="check prometheus+https:// and the server's certificate"
        )
    text = str(reason).splitlines()[0] if str(reason) else type(reason).__name__
    return ServerError(
        f"{shown}: the connection failed: {text}", hint="check that the server is up and reachable, then try again"
    )


def _check_body(body: Path, size: int, shown: str) -> bool:
    """Whether a successful answer holds no series; errors for what is not a Prometheus matrix answer."""
    not_prometheus = InputError(
        f"{shown}: the answer is not Prometheus API JSON",
        hint="check the URL: it should be the Prometheus server's base URL",
    )
    with body.open("rb") as f:
        head = f.read(_SMALL_BODY)
    if size > _SMALL_BODY:
        # Prometheus writes status and resultType first: {"status":"success","data":{"resultType":"matrix",...
        if not re.match(rb'\s*\{\s*"status"\s*:\s*"success"', head):
            raise not_prometheus
        return False
    try:
        answer = json.loads(head)
    except ValueError:
        raise not_prometheus from None
    if not isinstance(answer, dict) or "status" not in answer:
        raise not_prometheus
    if answer["status"] != "success":
        raise ServerError(
            f"{shown}: the query failed: {str(answer.get('error', answer['status']))[:300]}",
            hint="try again; if it persists, ask the server's admins",
        )
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise not_prometheus
    return not data["result"]
