"""gpu_sample_interval: the most common whole-second gap in the telemetry's first day, the
same whatever order the rows were stored in (a dataset's Parquet files fix none)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import duckdb
import polars as pl

from gpucluster_analysis.db.queries import run_query

T0 = datetime(2026, 7, 14)


def _interval(rows: list[tuple[datetime, str, int]]) -> tuple[float | None, int]:
    con = duckdb.connect()
    frame = pl.DataFrame(  # noqa: F841  -- read by DuckDB by its name (FROM frame)
        rows,
        schema={
            "sample_at": pl.Datetime("us"),
            "machine_id": pl.String,
            "gpu_index": pl.Int16,
        },
        orient="row",
    )
    con.execute("CREATE TABLE gpu_samples AS SELECT * FROM frame")  # rows in the given order
    con.execute(
        "CREATE TEMP TABLE gpu_samples_by_machine AS SELECT machine_id, min(sample_at) AS first_at "
        "FROM gpu_samples GROUP BY machine_id"
    )
    row = run_query(con, "gpu_sample_interval").row(0)
    return row[0], row[1]


def test_the_first_days_most_common_whole_second_gap_in_any_order() -> None:
    rng = random.Random(5)
    rows = []
    # day 1: rounds every 60 s, each GPU stamped a few ms apart and rounds jittered by +-0.4 s;
    # two rounds missed (120 s gaps). Day 2: every 10 s, which must not count.
    t, rounds = T0, 0
    while t < T0 + timedelta(days=1):
        if rounds not in (100, 500):
            for g in range(4):
                rows.append((t + timedelta(milliseconds=3 * g), "m1", g))
        rounds += 1
        t = T0 + timedelta(seconds=60 * rounds + rng.uniform(-0.4, 0.4))
    for k in range(20000):
        rows.append((T0 + timedelta(days=1, seconds=10 * k), "m2", 0))
    shuffled = rng.sample(rows, len(rows))
    first = _interval(rows)
    assert first[0] == 60
    assert _interval(shuffled) == first  # the same in another storing order


def test_ties_go_to_the_shorter_gap() -> None:
    # gaps: 30 s twice, 90 s twice
    times = [0, 30, 60, 150, 240]
    assert _interval([(T0 + timedelta(seconds=s), "m", 0) for s in times])[0] == 30
