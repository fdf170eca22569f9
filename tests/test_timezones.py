"""The UTC-offset periods of a zone (timezones.py) against the offset zoneinfo gives, hour by
hour, for zones whose histories are the odd ones: half-hour and 45-minute offsets, a day skipped,
DST suspended for Ramadan, a summer time of two hours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from gpucluster_analysis.bounds import FIRST_YEAR, LAST_YEAR
from gpucluster_analysis.timezones import _offset_periods

ODD_ZONES = [
    "Africa/Casablanca",  # DST suspended each Ramadan: four changes a year, some weeks apart
    "Antarctica/Troll",  # +00 and +02, two hours at once
    "Australia/Lord_Howe",  # a half-hour DST
    "Pacific/Apia",  # 2011-12-30 skipped (the date line moved)
    "Asia/Kathmandu",  # +05:45
    "America/Sao_Paulo",  # DST ended in 2019
    "Europe/Moscow",  # permanent summer time 2011-2014
    "America/Los_Angeles",
]


@pytest.mark.slow  # each zone stepped hour by hour over 70 years
@pytest.mark.parametrize("name", ODD_ZONES)
def test_periods_give_the_offset_zoneinfo_gives_every_hour(name: str) -> None:
    zone = ZoneInfo(name)
    periods = _offset_periods(zone)
    at = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)
    end = datetime(LAST_YEAR + 1, 1, 1, tzinfo=UTC)
    k = 0
    while at < end:
        while k + 1 < len(periods) and periods[k + 1][0] <= at:
            k += 1
        assert periods[k][1] == int(at.astimezone(zone).utcoffset().total_seconds()), (name, at)
        at += timedelta(minutes=59)  # not on the hour: transitions fall on it, so both sides are met
    assert all(a[0] < b[0] for a, b in zip(periods, periods[1:], strict=False))
