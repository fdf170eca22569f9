"""Time in the synthetic trace: integer UTC epoch seconds inside, Philly text outside.

Contract:

* The simulator keeps every instant as an `int` of UTC epoch seconds.
* `naive_local(t)` is the job-log spelling (`2017-11-05 01:30:00`, no zone) and
  `suffixed_local(t)` the utilization-file spelling (`2017-11-05 01:30:00 PST`).
* The job log cannot say which occurrence of a repeated fall-back hour it
  means, and domain.md reads such a time as the first occurrence. So the
  simulated scheduler writes nothing to its log during a second occurrence:
  `Blackout.defer` moves any event that would fall there to the end of it
  (for America/Los_Angeles on 2017-11-05: 01:00-01:59 PST waits for 02:00 PST).
  Events in the first occurrence (01:00-01:59 PDT) happen normally, so the log
  does hold naive times in the repeated hour, and each one means what the
  domain rule says it means. `check_round_trip` asserts exactly that.
* Spring-forward gaps need no care: text formatted from a real instant never
  falls in the skipped hour.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

ZONE_NAME = "America/Los_Angeles"
# Starting here, the default three-day window crosses the 2017-11-05 fall-back.
DEFAULT_START_LOCAL = datetime(2017, 11, 3, 0, 0, 0)


@lru_cache(maxsize=4)
def zone(name: str = ZONE_NAME) -> ZoneInfo:
    return ZoneInfo(name)


def local_to_utc(local: datetime, zone_name: str = ZONE_NAME) -> int:
    """Epoch seconds of a naive wall-clock time, read as domain.md says (fold=0)."""
    return int(local.replace(tzinfo=zone(zone_name), fold=0).timestamp())


def naive_local(t: int, zone_name: str = ZONE_NAME) -> str:
    """`YYYY-MM-DD HH:MM:SS` wall-clock text of instant `t`, without a zone."""
    return datetime.fromtimestamp(t, zone(zone_name)).strftime("%Y-%m-%d %H:%M:%S")


def suffixed_local(t: int, zone_name: str = ZONE_NAME) -> str:
    """Wall-clock text with the zone abbreviation in force (`... PDT` / `... PST`)."""
    return datetime.fromtimestamp(t, zone(zone_name)).strftime("%Y-%m-%d %H:%M:%S %Z")


def iso_utc(t: int | None) -> str | None:
    """ISO 8601 UTC with a Z, as jobs.csv writes times; None stays None."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _offset(t: int, zone_name: str) -> int:
    offset = datetime.fromtimestamp(t, zone(zone_name)).utcoffset()
    assert offset is not None
    return int(offset.total_seconds())


@dataclass(frozen=True)
class RepeatedHour:
    """One fall-back overlap: local times in it occur first at `first`, again at `second`."""

    first: int  # UTC start of the first occurrence
    second: int  # UTC start of the second occurrence (the transition itself)
    end: int  # UTC end of the second occurrence


def repeated_hours(t0: int, t1: int, zone_name: str = ZONE_NAME) -> list[RepeatedHour]:
    """Fall-back overlaps whose transition lies in [t0, t1)."""
    found = []
    step = 3600
    t = t0 - t0 % step
    while t < t1:
        before, after = _offset(t, zone_name), _offset(t + step, zone_name)
        if after < before:
            lo, hi = t, t + step  # bisect to the second the offset drops
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _offset(mid, zone_name) == before:
                    lo = mid
                else:
                    hi = mid
            if t0 <= hi < t1:
                delta = before - after
                found.append(RepeatedHour(first=hi - delta, second=hi, end=hi + delta))
        t += step
    return found


@dataclass(frozen=True)
class Blackout:
    """UTC windows in which the simulated scheduler logs nothing (second occurrences)."""

    windows: tuple[tuple[int, int], ...]

    def defer(self, t: int) -> int:
        """`t`, or the end of the blackout window it falls in."""
        for start, end in self.windows:
            if start <= t < end:
                return end
        return t


def check_round_trip(times: Iterable[int], zone_name: str = ZONE_NAME) -> None:
    """Assert that every logged instant reads back to itself under the domain rule."""
    for t in times:
        text = naive_local(t, zone_name)
        back = local_to_utc(datetime.strptime(text, "%Y-%m-%d %H:%M:%S"), zone_name)
        assert back == t, f"logged time {text} would read back as {back}, not {t}"
