"""HTTP GETs to a Prometheus server, each bounded: `TIMEOUT_S` in all (however slowly a server
sends, its socket is shut then) and an answer of at most `MAX_ANSWER_BYTES` (decompressed);
errors in one line naming the request shown (never a header or credentials)."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucluster_analysis import __version__
from gpucluster_analysis.errors import GcaError, InputError, ServerError
from gpucluster_analysis.ingest.gpu.prometheus_plan import PrometheusSource

# A request's whole time: connecting, the server's work, and the answer to its last byte.
TIMEOUT_S = 60.0
# An answer's most bytes (decompressed). The loader holds a chunk's JSON in memory, about ten
# times its size; an answer of the usual MAX_RESPONSE_POINTS is ~30 MB.
MAX_ANSWER_BYTES = 128 << 20
_READ_BLOCK = 1 << 20
_SMALL_BODY = 64 << 10  # error answers and empty results are read whole in Python


class AnswerTooBig(ServerError):
    """An answer grew past the most gca reads (`max_answer_bytes`); `pull` asks for fewer sample times."""


def fetch(
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
                            f"{shown}: the answer is over {_megabytes(max_answer_bytes)}, the most gca reads of one "
                            f"request",
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
            hint="check that the server is up and reachable; if it is only slow, try again later or pull a narrower "
            "--match",
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

    # urllib's arguments, passed on as they come (typeshed has them as Any too)
    def do_open(self, http_class: Any, req: urllib.request.Request, **kwargs: Any) -> http.client.HTTPResponse:
        watched = (
            _WatchedSecureConnection if issubclass(http_class, http.client.HTTPSConnection) else _WatchedConnection
        )

        def connection(*args: Any, **options: Any) -> http.client.HTTPConnection:
            made = watched(*args, **options)
            made.watch = self._watch
            return made

        return super().do_open(connection, req, **kwargs)  # type: ignore[misc]  # a mixin: the handler after it has do_open


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


def check_body(body: Path, size: int, shown: str) -> bool:
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
