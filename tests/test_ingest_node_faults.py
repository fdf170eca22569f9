"""Node fault traces (issue #29, part 6): StepFun's fault_trace.json read into node_faults.

The published counts per Level, Class and Desc (fault_statistics.json, beside the trace) come
out exact; the pairing of starts and ends is checked against a simpler one (each machine's and
cause's starts and ends sorted apart and matched in order); damaged files are rejects or one-line
refusals naming the line.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.errors import ExitCode, ParseError
from gpucluster_analysis.ingest import detect_format
from gpucluster_analysis.ingest.files import read_head
from tests.conftest import SHARED_DATA, require
from tests.store_helpers import ingest, rows, write

STEPFUN = SHARED_DATA / "public-traces" / "stepfun-infinitehbd"
EPOCH = datetime(1970, 1, 1)


@pytest.fixture(scope="module")
def trace() -> list[dict]:
    return json.loads((require(STEPFUN) / "fault_trace.json").read_text())


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("faults") / "s.duckdb"
    (report,) = ingest(db, require(STEPFUN) / "fault_trace.json")
    assert (report.status, report.format, report.rows, report.rejects) == ("loaded", "stepfun_faults", 584, 0)
    return db


def test_the_published_counts_per_level_class_and_cause_come_out_exact(store: Path) -> None:
    published = json.loads((STEPFUN / "fault_statistics.json").read_text())
    expected: Counter[tuple[str, str, str]] = Counter()
    for level, classes in published.items():
        for cls, causes in classes.items():
            if cls == "LevelTotal":
                continue
            for cause, n in causes.items():
                if cause != "ClassTotal":
                    expected[(level, cls, cause)] = n
            assert sum(n for c, n in causes.items() if c != "ClassTotal") == causes["ClassTotal"]
        assert sum(v["ClassTotal"] for k, v in classes.items() if k != "LevelTotal") == classes["LevelTotal"]
    stored = Counter(
        {tuple(r[:3]): r[3] for r in rows(store, "SELECT level, class, reason, count(*) FROM node_faults GROUP BY ALL")}
    )
    assert stored == expected and sum(expected.values()) == 584


def test_faults_pair_as_each_cause_s_starts_and_ends_in_order(store: Path, trace: list[dict]) -> None:
    """The simpler pairing: per machine and cause, the k-th start (by time) with the k-th end."""
    starts: dict[tuple[str, ...], list[float]] = defaultdict(list)
    ends: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for e in trace:
        key = (e["node_id"], e["fault_type"]["Level"], e["fault_type"]["Class"], e["fault_type"]["Desc"])
        (starts if e["event_type"] == "fault_start" else ends)[key].append(e["event_time"])
    expected = sorted(
        (key[0], EPOCH + timedelta(days=s), EPOCH + timedelta(days=t), *key[1:])
        for key in starts
        for s, t in zip(sorted(starts[key]), sorted(ends[key]), strict=True)
    )
    got = rows(store, "SELECT machine_id, started_at, ended_at, level, class, reason FROM node_faults ORDER BY ALL")
    assert got == expected
    assert rows(store, "SELECT count(DISTINCT machine_id) FROM node_faults") == [(231,)]
    # the trace's own line numbers: each fault's start begins where its object does
    first = rows(store, "SELECT line FROM node_faults ORDER BY started_at, line LIMIT 1")
    assert first == [(2,)]


def test_the_trace_is_found_in_its_folder_and_the_statistics_beside_it_skipped() -> None:
    folder = require(STEPFUN)
    assert detect_format(folder / "fault_trace.json", read_head(folder / "fault_trace.json")).name == "stepfun_faults"
    assert detect_format(folder / "fault_statistics.json", read_head(folder / "fault_statistics.json")) is None


def event(node: str, days: object, kind: str = "fault_start", cause: str = "GPU xid Error") -> dict:
    return {
        "node_id": node,
        "event_time": days,
        "event_type": kind,
        "fault_type": {"Level": "Hardware Failure", "Class": "GPU", "Desc": cause},
    }


def test_ends_without_starts_odd_elements_and_open_faults(tmp_path: Path) -> None:
    events = [
        event("n1", 1.0),  # 1: its end is 4
        event("n1", 1.5),  # 2: the same cause again, overlapping: its end is 5 (first in, first out)
        event("n1", 0.5, "fault_end"),  # 3: no start of n1's cause before it
        event("n1", 2.0, "fault_end"),  # 4
        event("n1", 3.0, "fault_end"),  # 5
        event("n2", 2.0, "fault_end", "NIC Lost"),  # 6: ends at once: starts first at one time
        event("n2", 2.0, cause="NIC Lost"),  # 7
        event("n3", 4.0),  # 8: still down when the trace ends
        42,  # 9: not an event
        event("n4", "soon"),  # 10
        event("n4", 1.0, "fault_maybe"),  # 11
        event("", 1.0),  # 12
        event("n5", -1.0),  # 13: before the epoch
        {**event("n6", 1.0), "fault_type": {"Level": 3}},  # 14
        {"node_id": "n7", "event_time": 1.0, "event_type": "fault_start"},  # 15: no cause given
    ]
    # one event per line (event k on line k + 2), inside the array's brackets on lines 1 and 17
    path = write(tmp_path / "fault_trace.json", "[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path)
    assert (report.status, report.rows, report.rejects) == ("loaded", 5, 7), report.message

    def at(days: float) -> datetime:
        return EPOCH + timedelta(days=days)

    stored = rows(
        db, "SELECT machine_id, started_at, ended_at, reason, line FROM node_faults ORDER BY machine_id, line"
    )
    assert stored == [
        ("n1", at(1.0), at(2.0), "GPU xid Error", 2),
        ("n1", at(1.5), at(3.0), "GPU xid Error", 3),
        ("n2", at(2.0), at(2.0), "NIC Lost", 8),
        ("n3", at(4.0), None, "GPU xid Error", 9),
        ("n7", at(1.0), None, None, 16),
    ]
    reasons = dict(rows(db, "SELECT line, reason FROM rejects ORDER BY line"))
    assert sorted(reasons) == [4, 10, 11, 12, 13, 14, 15]
    assert "without a fault_start" in reasons[4] and "not an event" in reasons[10]
    assert "not a number of days" in reasons[11] and "neither fault_start nor fault_end" in reasons[12]
    assert reasons[13] == "no node_id" and "outside the window" in reasons[14] and "Level" in reasons[15]
    texts = dict(rows(db, "SELECT line, text FROM rejects"))
    assert json.loads(texts[4])["event_type"] == "fault_end" and texts[10] == "42"


def test_epoch_places_the_days_and_holds_them_to_the_window(tmp_path: Path) -> None:
    path = write(
        tmp_path / "faults.json", json.dumps([event("n1", 0.5), event("n1", 1.25, "fault_end"), event("n2", 40_000)])
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, epoch="2024-03-01T00:00:00+08:00")
    assert (report.rows, report.rejects) == (1, 1)
    assert rows(db, "SELECT started_at, ended_at FROM node_faults") == [
        (datetime(2024, 3, 1, 4), datetime(2024, 3, 1, 22))
    ]
    assert rows(db, "SELECT time_zone FROM ingested_files") == [("UTC, relative days from 2024-02-29T16:00:00Z",)]


def test_a_gzip_copy_and_replace_store_the_same_once(tmp_path: Path, trace: list[dict]) -> None:
    gz = tmp_path / "fault_trace.json.gz"
    gz.write_bytes(gzip.compress((STEPFUN / "fault_trace.json").read_bytes()))
    db = tmp_path / "s.duckdb"
    (first,) = ingest(db, gz)
    (again,) = ingest(db, gz, replace=True)
    assert (first.rows, again.status, again.rows) == (584, "replaced", 584)
    assert rows(db, "SELECT count(*) FROM node_faults") == [(584,)]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('{"node_id": "n1"}', 1, "not a JSON array"),
        ("[\n" + json.dumps(event("n1", 1.0)) + ",\n{oops}\n]", 3, "not JSON"),
        ("[\n" + json.dumps(event("n1", 1.0)) + ",\n", 3, "cut short"),
        ("[\n" + json.dumps(event("n1", 1.0)) + "\n]\n[]", 4, "text after the array"),
        ("[\n" + json.dumps(event("n1", 1.0)) + " " + json.dumps(event("n1", 2.0)) + "]", 2, "expected ','"),
        ("[" + "[" * 100_000 + "]" * 100_000 + "]", 1, "nested too deep"),
    ],
)
def test_a_damaged_file_is_refused_in_one_line_naming_its_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = write(tmp_path / "fault_trace.json", text)
    (report,) = ingest(tmp_path / "s.duckdb", path, format_name="stepfun_faults")
    assert report.status == "failed" and isinstance(report.error, ParseError), report.message
    assert f"{path}:{line}:" in report.message and words in report.message and "\n" not in report.message


def test_the_cli_names_the_format_and_a_bad_epoch(tmp_path: Path) -> None:
    path = write(tmp_path / "fault_trace.json", json.dumps([event("n1", 1.0), event("n1", 2.0, "fault_end")]))
    db = str(tmp_path / "s.duckdb")
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", db])
    assert result.exit_code == ExitCode.OK and "stepfun_faults" in result.output, result.output
    bad = CliRunner().invoke(app, ["ingest", str(path), "--db", db, "--epoch", "someday", "--replace"])
    assert bad.exit_code == ExitCode.USAGE and "--epoch 'someday'" in bad.output, bad.output


def test_the_sample_in_the_trace_s_layout(tmp_path: Path) -> None:
    """tests/data/traces/fault_trace_sample.json (test_hostile_input.py's seed too): 8 events, 5 faults, 2 open."""
    sample = Path(__file__).parent / "data" / "traces" / "fault_trace_sample.json"
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, sample)
    assert (report.format, report.rows, report.rejects) == ("stepfun_faults", 5, 0)
    open_faults = rows(db, "SELECT reason FROM node_faults WHERE ended_at IS NULL ORDER BY reason")
    assert open_faults == [("Node NotReady",), ("Speed Critical (Sensor)",)]


def test_every_rejected_element_of_a_one_line_file_counts(tmp_path: Path) -> None:
    """`json.dumps(events)` writes one line: two bad elements there are two rejects, both on line 1."""
    path = write(
        tmp_path / "faults.json", json.dumps([event("n1", 1.0), 7, event("n2", "x"), event("n1", 2.0, "fault_end")])
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path)
    assert (report.rows, report.rejects) == (1, 2)
    assert rows(db, "SELECT line, count(*) FROM rejects GROUP BY line") == [(1, 2)]
