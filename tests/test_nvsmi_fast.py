"""The fast way of typing nvidia-smi CSV rows (ingest/gpu/nvsmi_fast.py) stores exactly what the
exact SQL way stores, and rejects exactly what it rejects, with the same reasons.

Each file is ingested three times: with the fast way off (every row through
sql/ingest/nvsmi_lines.sql and nvsmi_check.sql), read ahead in a thread (the fast rows
handed to DuckDB in place), and streamed (no read-ahead: the fast rows copied into a staging
table chunk by chunk). Every table a CSV log fills must come out the same.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gpucluster_analysis.ingest import lines as tool_lines
from gpucluster_analysis.ingest import read_ahead
from gpucluster_analysis.ingest.gpu import nvsmi_fast
from gpucluster_analysis.timezones import local_periods
from tests.marks import keep_by_default
from tests.store_helpers import telemetry_stored

DATA = Path(__file__).parent / "data" / "gpu"

HEADER = (
    "timestamp, index, uuid, pci.bus_id, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
    "memory.total [MiB], power.draw [W], temperature.gpu, clocks.current.sm [MHz]"
)
# Per field: what real logs print, and what a parser must not take for it.
# ({d}: the row's date, {t}: its time of day)
TIMES = [
    "{d} {t}.696",
    "{d} {t}",
    "{d} {t}.5",
    "{d} {t}.123456",
    "{d} {t}.1234567",
    "{d-} {t}.042",
    "2026/02/30 08:00:00",
    "{d} 24:00:00",
    "{d} 23:59:60",
    "{d} 08:61:00",
    "N/A",
    "",
    " {d} {t}.696 ",
    "{d}T{t}",
    "{d}  {t}",
    "{d} 8:12:38",
    # outside the years gca reads (issue #26)
    "2999/01/01 00:00:00",
    "1989/12/31 23:59:59.5",
    "2060-01-01 00:00:00",
    "2059/12/31 23:59:59",
]
# (past the bound of GPUs per node, 1,024, or at it: issue #26)
INDICES = ["0", "1", "2", "3", " 3", "03", "N/A", "-1", "1.0", "99999", "x", "", "5000", "1024", "1023", "9999999"]
UUIDS = ["GPU-6b1f4c1e-2a51-4a7e-9c7e-0d6a2f1b9e01", "[N/A]", "N/A", "", "Unknown"]
PCIS = ["00000000:18:00.0", "0000:3B:00.0", "[N/A]", "N/A", "00000000:AF:00.0"]
NAMES = ["NVIDIA A100-SXM4-80GB", "[N/A]", "none", "Unknown", "Tesla V100-SXM2-32GB"]
PERCENTS = [
    "26 %",
    "26",
    "0 %",
    "100 %",
    "101 %",
    "-1 %",
    "26.5 %",
    "26 MiB",
    "26  %",
    "26%",
    "[N/A]",
    "N/A",
    "[Not Supported]",
    "1e2",
    "inf",
    "nan",
    "+5",
    ".5",
    "5.",
    "[GPU is lost]",
    "[Unknown Error]",
    "0x10",
    "1_000",
    "",
    "n/a",
    "-",
    "[Insufficient Permissions]",
    "100.0001 %",
]
MEMORY = ["81559 MiB", "81559 MB", "81559", "81559 GiB", "-5 MiB", "N/A", "1e5 MiB", "4 MiB", "[N/A]", "0 MiB"]
POWER = ["383.58 W", "383.58", "[N/A]", "-1 W", "383.58 w", "[Not Supported]", "70.12 W", "1e3 W"]
TEMPS = ["57", "57 C", "-5", "N/A", "30", "57.5"]
CLOCKS = ["1980 MHz", "1980", "1980 GHz", "N/A", "345 MHz", "[N/A]"]
GOOD = {
    "time": 0,
    "index": (0, 1, 2, 3),
    "uuid": 0,
    "pci": 0,
    "name": 0,
    "percent": (0, 1, 2, 3, 6),
    "memory": (0, 1, 2, 7),
    "power": (0, 1, 6),
    "temp": (0, 4),
    "clock": (0, 1, 4),
}


def _row(rng: random.Random, day: str, clock: str, at: datetime | None, odd: float) -> str:
    """One data line: mostly the ordinary forms, each field odd with probability `odd`."""

    def pick(values: list[str], good: int | tuple[int, ...]) -> str:
        if rng.random() < odd:
            return rng.choice(values)
        return values[good if isinstance(good, int) else rng.choice(good)]

    stamp = (
        at.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        if at is not None and rng.random() >= odd
        else pick(TIMES, GOOD["time"]).replace("{d-}", day.replace("/", "-")).format(d=day, t=clock)
    )
    fields = [
        stamp,
        pick(INDICES, GOOD["index"]),
        pick(UUIDS, GOOD["uuid"]),
        pick(PCIS, GOOD["pci"]),
        pick(NAMES, GOOD["name"]),
        pick(PERCENTS, GOOD["percent"]),
        pick(PERCENTS, GOOD["percent"]),
        pick(MEMORY, GOOD["memory"]),
        pick(MEMORY, GOOD["memory"]),
        pick(POWER, GOOD["power"]),
        pick(TEMPS, GOOD["temp"]),
        pick(CLOCKS, GOOD["clock"]),
    ]
    line = ", ".join(fields)
    if rng.random() < odd / 4:
        line = line.replace(", ", ",\t", 1)  # a tab: not what DuckDB's trim removes
    return line


def write_hostile(path: Path, *, seed: int, start: datetime, rows: int, step_s: int, odd: float) -> None:
    rng = random.Random(seed)
    lines = [HEADER]
    for k in range(rows):
        at = start + timedelta(seconds=step_s * k)
        lines.append(_row(rng, at.strftime("%Y/%m/%d"), at.strftime("%H:%M:%S"), at, odd))
        if k == rows // 3:
            lines.append("Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error")
        if k == rows // 2:
            lines.append(HEADER)  # logs concatenated
        if k == 2 * rows // 3:
            lines.append(", ".join(["2026/07/14 08:00:00", "1", "x"]))  # too few fields
    path.write_text("\n".join(lines) + "\n")


def _store(db: Path, path: Path, zone: str, **extra: object) -> dict[str, list[tuple]]:
    return telemetry_stored(db, path, "nvsmi_csv", zone=zone, host="node01", **extra)


def _three_ways(tmp_path: Path, path: Path, zone: str, monkeypatch: pytest.MonkeyPatch, **extra: object):
    fast_rows = []
    split = nvsmi_fast.split_clean

    def counted(*args, **kwargs):
        clean, other = split(*args, **kwargs)
        fast_rows.append((clean.height, int(other.sum())))
        return clean, other

    with monkeypatch.context() as m:
        m.setattr(nvsmi_fast, "eligible", lambda layout, *, dmon: False)
        exact = _store(tmp_path / "exact.duckdb", path, zone, **extra)
    with monkeypatch.context() as m:
        m.setattr(nvsmi_fast, "split_clean", counted)
        ahead = _store(tmp_path / "ahead.duckdb", path, zone, **extra)
    with monkeypatch.context() as m:
        m.setattr(nvsmi_fast, "split_clean", counted)
        m.setattr(read_ahead, "READ_AHEAD_MAX_BYTES", 0)
        m.setattr(tool_lines, "CHUNK_BYTES", 64 << 10)  # many chunks: offsets decided batch by batch
        streamed = _store(tmp_path / "streamed.duckdb", path, zone, **extra)
    return exact, ahead, streamed, fast_rows


@pytest.mark.parametrize(
    ("zone", "start", "step_s"),
    keep_by_default(
        [
            ("UTC", datetime(2026, 7, 14, 8), 1),
            # across both changes of clocks in Los Angeles (2026-03-08 02:00 skipped, 2026-11-01 01:00 twice)
            ("America/Los_Angeles", datetime(2026, 3, 8, 0, 30), 3),
            ("America/Los_Angeles", datetime(2026, 11, 1, 0, 0), 2),
            ("Europe/Zurich", datetime(2026, 10, 25, 1, 0), 1),
        ],
        {("America/Los_Angeles", datetime(2026, 11, 1, 0, 0), 2)},
    ),
)
def test_fast_and_exact_ways_store_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zone: str, start: datetime, step_s: int
) -> None:
    log = tmp_path / "node01.csv"
    write_hostile(log, seed=step_s * 7 + start.month, start=start, rows=6000, step_s=step_s, odd=0.08)
    exact, ahead, streamed, fast_rows = _three_ways(tmp_path, log, zone, monkeypatch)
    for name in exact:
        assert ahead[name] == exact[name], name
        assert streamed[name] == exact[name], name
    # both ways were taken, and the exact way rejected rows for many reasons
    assert sum(clean for clean, _ in fast_rows) > 2000
    assert sum(other for _, other in fast_rows) > 500
    reasons = {reason.split(" ")[0] for _, reason, _ in exact["rejects"]}
    assert len(exact["rejects"]) > 300 and len(reasons) >= 5


@pytest.mark.slow  # both ways compared; the bounds themselves are tested by default (test_ingest_gpu_telemetry.py)
def test_absurd_times_and_indices_rejected_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #26: a sample in 2999 or of a GPU index past the bound of GPUs per node is rejected
    whichever way the row was typed: the fast way leaves it to the exact way, which says why."""
    log = tmp_path / "node01.csv"
    lines = [HEADER]
    at = datetime(2026, 7, 14, 8)
    for k in range(400):
        index = ("0", "1", "7", "8", "5000")[k % 5]
        stamp = (
            "2999/07/14 08:00:00.000"
            if k % 7 == 0
            else (at + timedelta(seconds=k)).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        )
        lines.append(f"{stamp}, {index}, GPU-x, 00000000:18:00.0, H100, 26 %, 3 %, 5 MiB, 80 MiB, 70.5 W, 40, 1980 MHz")
    log.write_text("\n".join(lines) + "\n")
    for bound in (1024, 8):
        run = tmp_path / str(bound)
        run.mkdir()
        exact, ahead, streamed, fast_rows = _three_ways(run, log, "UTC", monkeypatch, max_gpus_per_node=bound)
        assert ahead == exact and streamed == exact
        assert sum(clean for clean, _ in fast_rows) > 100
        reasons = [reason for _, reason, _ in exact["rejects"]]
        # every 7th row in 2999; of the others, index 5000 (and 8, at a bound of 8)
        past = {1024: ("5000",), 8: ("8", "5000")}[bound]
        expected = sum(1 for k in range(400) if k % 7 == 0) + sum(
            1 for k in range(400) if k % 7 and ("0", "1", "7", "8", "5000")[k % 5] in past
        )
        assert len(reasons) == expected
        assert (
            sum(r == "time 2999/07/14 08:00:00.000 is outside the years gca reads (1990-2059)" for r in reasons) == 58
        )
        assert f"GPU index 5000: over the bound of {bound:,} GPUs per node (--max-gpus-per-node)" in reasons


@pytest.mark.slow  # every real capture, three ways each; the generated cases above stay in the default run
def test_every_real_capture_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    captures = sorted(DATA.glob("*.csv")) + sorted((DATA / "real").glob("*.csv"))
    assert len(captures) >= 12
    took_fast = 0
    # each capture in one zone, UTC and a zone with changes of clocks in turn (the suite's time:
    # the changes of clocks themselves are test_fast_and_exact_ways_store_the_same's)
    for number, capture in enumerate(captures):
        zone = ("UTC", "Europe/Zurich")[number % 2]
        run = tmp_path / f"{number}-{capture.stem}"
        run.mkdir()
        exact, ahead, streamed, fast_rows = _three_ways(run, capture, zone, monkeypatch)
        assert ahead == exact, capture.name
        assert streamed == exact, capture.name
        took_fast += sum(clean for clean, _ in fast_rows)
    assert took_fast > 0


def _reference(local: datetime, zone: ZoneInfo) -> tuple[int, bool]:
    """(UTC offset in seconds, whether the local time is skipped or repeated), by zoneinfo."""
    first, second = local.replace(tzinfo=zone, fold=0), local.replace(tzinfo=zone, fold=1)
    odd = first.utcoffset() != second.utcoffset()
    return int(first.utcoffset().total_seconds()), odd


@pytest.mark.parametrize(
    "zone_name", ["UTC", "America/Los_Angeles", "Europe/Zurich", "Australia/Lord_Howe", "Asia/Kolkata"]
)
def test_constant_offset_is_the_offset_of_every_minute(zone_name: str) -> None:
    """constant_offset gives an offset only for ranges whose every minute has it and is
    neither skipped nor repeated (zoneinfo says), and gives one for most ranges."""
    zone = ZoneInfo(zone_name)
    periods = local_periods(zone_name)
    rng = random.Random(3)
    given = 0
    for _ in range(400):
        first = datetime(2026, 1, 1) + timedelta(minutes=rng.randrange(365 * 24 * 60))
        if rng.random() < 0.5:  # near a change of clocks
            change = rng.choice([p for p, _ in periods if p.year == 2026] or [first])
            first = change - timedelta(minutes=rng.randrange(-150, 150))
        last = first + timedelta(minutes=rng.randrange(0, 240), seconds=rng.randrange(60))
        offset = nvsmi_fast.constant_offset(periods, first, last)
        minutes = [first + timedelta(minutes=k) for k in range(int((last - first).total_seconds() // 60) + 1)] + [last]
        truth = [_reference(m, zone) for m in minutes]
        if offset is not None:
            given += 1
            assert all(o == offset and not odd for o, odd in truth), (first, last)
        else:
            assert len({o for o, _ in truth}) > 1 or any(odd for _, odd in truth) or _near_change(periods, first, last)
    assert given > 200


def _near_change(periods: list[tuple[datetime, int]], first: datetime, last: datetime) -> bool:
    """A range that ends within the hour before a change of clocks may be refused (cautious)."""
    return any(first - timedelta(hours=3) <= start <= last + timedelta(hours=3) for start, _ in periods[1:])
