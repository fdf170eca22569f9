"""What a pull from Prometheus asks for, checked before anything is read or stored: the server
(`prometheus+http(s)://[user:password@]host[:port][/prefix]`, its headers never shown), the
range (--since, --until), the step and the metrics matched (by default the DCGM metrics gca
reads)."""

from __future__ import annotations

import base64
import re
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gpucluster_analysis.errors import InputError
from gpucluster_analysis.ingest.gpu import dcgm

SCHEMES = ("prometheus+http", "prometheus+https")
DEFAULT_STEP = "30s"  # dcgm-exporter's default collection interval, where the scrapes tell none
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
    step_ms: int | None  # None: the scrape interval the server's samples show (prometheus.scrape_interval)
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
    step_ms = parse_step(step) if step else None
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
