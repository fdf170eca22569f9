"""The same store and options give the same report bytes (issue #11, part 1).

Run on the real philly-5910 extract: its 554,803 GPU samples span several of DuckDB's
row groups, so the aggregations run on both threads and a float sum's last digits would
depend on the order the threads add in (they did, before sums became exact integers and
CSV floats were rounded at the writer).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from gpucluster_analysis import cores
from gpucluster_analysis.analyze import kept
from gpucluster_analysis.analyze.catalog import kept_queries
from gpucluster_analysis.db import open_store
from gpucluster_analysis.report.build import CSV_SIGNIFICANT_DIGITS, build_report, csv_text


@pytest.fixture(autouse=True)
def every_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB on every core (conftest.py gives each worker of a run its share): the orders
    threads add in are what this module is about."""
    monkeypatch.delenv(cores.ENV, raising=False)


@pytest.fixture(scope="module")
def store(store_5910: Path) -> Path:
    with open_store(store_5910, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM gpu_samples").fetchall()[0][0] > 4 * 122_880  # several row groups
    return store_5910


@pytest.mark.slow  # two reports of the real philly-5910 extract
def test_two_reports_of_one_store_are_byte_identical(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the second from a copy that kept the heaviest results at ingest (analyze/kept.py): the
    # same bytes whether the attribution is computed or read back
    copy = tmp_path / "kept" / store.name  # the page names the store
    copy.parent.mkdir()
    shutil.copyfile(store, copy)
    monkeypatch.setattr(kept, "KEEP_MIN_SAMPLES", 0)
    with open_store(copy) as con:
        assert kept.keep(con) is not None
    messages: list[str] = []
    first, second = build_report(store, tmp_path / "a"), build_report(copy, tmp_path / "b", log=messages.append)
    assert f"kept from ingest, not computed again: {', '.join(sorted(kept_queries()))}" in messages
    names = sorted(p.name for p in first.tables)
    assert names == sorted(p.name for p in second.tables) and "jobs.csv" in names
    differing = [n for n in names if (tmp_path / "a" / n).read_bytes() != (tmp_path / "b" / n).read_bytes()]
    assert differing == []

    # the page differs only in the minute it was generated
    def page(written) -> str:
        return re.sub(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "Generated", written.html.read_text())

    assert page(first) == page(second)


def test_csv_floats_are_rounded_at_the_writer() -> None:
    # two sums of the same numbers in another order (issue #11's example), and values that
    # need all their digits or none
    df = pl.DataFrame({"a": [64.47291666664998, 64.47291666665, 1 / 3, 123456.5, 0.0, None], "n": [1, 2, 3, 4, 5, 6]})
    lines = csv_text(df).splitlines()
    assert lines[0] == "a,n"
    assert lines[1].split(",")[0] == lines[2].split(",")[0] == "64.4729166666"
    assert lines[3] == "0.333333333333,3"
    assert lines[4] == "123456.5,4" and lines[5] == "0,5" and lines[6] == ",6"
    assert CSV_SIGNIFICANT_DIGITS == len("333333333333")
