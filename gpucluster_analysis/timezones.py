"""Turn naive local times into UTC inside DuckDB, with explicit DST rules.

Many sources write local wall-clock times without a zone (Philly's job log in
America/Los_Angeles, sacct in the site's zone). We convert them in SQL with an
ASOF join against a table of UTC-offset periods built from Python's zoneinfo,
so the rules do not depend on DuckDB's ICU build and the edge cases are ours:

* a time in the repeated fall-back hour is read as its first occurrence;
* a time in the skipped spring-forward hour is moved forward (read with the
  offset in force before the jump), as `zoneinfo` does with fold=0.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb

from gpucluster_analysis.bounds import FIRST_YEAR, LAST_YEAR
from gpucluster_analysis.errors import InputError

ZONE_PERIODS_TABLE = "zone_periods"


def check_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise InputError(
            f"unknown time zone {name!r}", hint="use an IANA name such as America/Los_Angeles or UTC"
        ) from e


def _offset_periods(zone: ZoneInfo) -> list[tuple[datetime, int]]:
    """(UTC start, offset seconds) of each period with one UTC offset, in order."""

    def offset_at(t: datetime) -> int:
        return int(t.astimezone(zone).utcoffset().total_seconds())  # type: ignore[union-attr]  # aware: never None

    # the years every reader accepts (bounds.py): a few hundred periods per zone
    start = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)
    end = datetime(LAST_YEAR + 1, 1, 1, tzinfo=UTC)
    periods = [(start, offset_at(start))]
    # A day: no zone changes its offset twice within one day in these years (each of the 599
    # zones of this Python's tzdata gave the same periods stepping by 6 hours and by a day);
    # 0.03 s a zone instead of 0.1 at 6 hours, paid by every process that reads local times.
    step = timedelta(days=1)
    t = start
    while t < end:
        nxt = t + step
        if offset_at(nxt) != periods[-1][1]:
            lo, hi = t, nxt  # bisect the transition to the second
            while hi - lo > timedelta(seconds=1):
                mid = lo + (hi - lo) / 2
                if offset_at(mid) == periods[-1][1]:
                    lo = mid
                else:
                    hi = mid
            hi = hi.replace(microsecond=0)
            periods.append((hi, offset_at(hi)))
        t = nxt
    return periods


@cache
def local_periods(zone_name: str) -> list[tuple[datetime, int]]:
    """(local wall-clock start, offset seconds) rows covering every local time once.

    A period's local range starts at its UTC start plus the larger of its own
    and the previous offset: in a fall-back overlap the earlier period keeps
    the repeated hour (first occurrence); in a spring-forward gap the earlier
    period extends over the skipped hour (moved forward).
    """
    zone = check_zone(zone_name)
    periods = _offset_periods(zone)
    rows = []
    prev_offset = periods[0][1]
    for utc_start, offset in periods:
        local_start = utc_start.replace(tzinfo=None) + timedelta(seconds=max(prev_offset, offset))
        rows.append((local_start, offset))
        prev_offset = offset
    rows[0] = (datetime(1, 1, 1), rows[0][1])
    return rows


def install_zone(con: duckdb.DuckDBPyConnection, zone_name: str) -> None:
    """Create (or extend) the temp table `zone_periods(zone, local_start, offset_s)`."""
    con.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {ZONE_PERIODS_TABLE} (zone VARCHAR, local_start TIMESTAMP, offset_s INTEGER)"
    )
    present = con.execute(f"SELECT count(*) FROM {ZONE_PERIODS_TABLE} WHERE zone = ?", [zone_name]).fetchall()[0][
        0
    ]  # fetched to the end: a result left open stops a later register()
    if present:
        return
    periods = local_periods(zone_name)
    # one statement: executemany runs one INSERT per period (~140 for a zone with summer time)
    con.execute(
        f"INSERT INTO {ZONE_PERIODS_TABLE} SELECT ?, unnest(?::TIMESTAMP[]), unnest(?::INTEGER[])",
        [zone_name, [start for start, _ in periods], [offset for _, offset in periods]],
    )


def local_zone() -> str:
    """The IANA name of this machine's zone: $TZ, else /etc/timezone, else /etc/localtime's link; UTC if none.

    The default zone for sources that write local times without one (sacct, nvidia-smi).
    """
    import os

    candidates = [os.environ.get("TZ", "").lstrip(":")]
    try:
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    except OSError:
        pass
    try:
        target = str(Path("/etc/localtime").resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        if name:
            try:
                ZoneInfo(name)
                return name
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return "UTC"


def to_utc_python(local: datetime, zone_name: str) -> datetime:
    """Reference conversion with zoneinfo (fold=0), for tests and small inputs."""
    aware = local.replace(tzinfo=check_zone(zone_name), fold=0)
    return aware.astimezone(UTC).replace(tzinfo=None)
