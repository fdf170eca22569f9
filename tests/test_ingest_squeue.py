"""Slurm pending-reason snapshots (`slurm_squeue`) on hand-written logs.

Each log is what the documented loop appends:
    while sleep 60; do date -u +'# %Y-%m-%dT%H:%M:%SZ'; squeue -h -t PD -o '%i|%r'; done >> squeue-pending.log
Line numbers are counted in the comments beside each line; expected times are worked out
by hand: Z is UTC, an offset is subtracted (12:16:43+01:00 is 11:16:43Z), and Europe/Zurich
is UTC+1 in winter, UTC+2 in summer (2026: forward 03-29 02:00 -> 03:00, back 10-25 03:00 -> 02:00).
"""

from __future__ import annotations

import gzip
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.ingest import detect_format
from gpucluster_analysis.ingest.files import read_head
from tests.store_helpers import ingest, rows, write

REPO = Path(__file__).resolve().parent.parent

SNAPSHOTS = "\n".join(
    [
        "# 2026-11-25T11:14:43Z",  # 1
        "JOBID|REASON",  # 2  squeue without -h
        "4812|Resources",  # 3
        "4813_4|Priority",  # 4  array task
        "4814_[6-11%3]|AssocGrpGRES",  # 5  pending tasks 6..11, throttle 3
        "4815_[1,3,5-7]|QOSMaxGRESPerUser",  # 6  tasks 1, 3, 5, 6, 7
        "4816+0|Dependency",  # 7  het job 4816: one row
        "4816+1|Dependency",  # 8  its component 1, merged into line 7
        "4817|ReqNodeNotAvail, UnavailableNodes:node[01-02]",  # 9
        "# 2026-11-25T11:15:43Z",  # 10 an empty snapshot
        "# 2026-11-25T12:16:43+01:00",  # 11 = 11:16:43Z
        "JOBID|REASON",  # 12
        "4812|Priority",  # 13
        "  4814_[9-11%3] |  AssocGrpGRES  ",  # 14 trimmed
        "",  # 15
        "# 2026-11-25 11:17:43.5-05:00",  # 16 = 16:17:43.5Z
        "4818_[0-8:4]|BeginTime",  # 17 tasks 0, 4, 8
        "4819+1|Resources",  # 18 component 1 listed first...
        "4819+0|Priority",  # 19 ...component 0's reason wins
        "",
    ]
)

T1 = datetime(2026, 11, 25, 11, 14, 43)
T3 = datetime(2026, 11, 25, 11, 16, 43)
T4 = datetime(2026, 11, 25, 16, 17, 43, 500000)

EXPECTED = sorted(
    [
        ("4812", T1, "Resources", 3),
        ("4813_4", T1, "Priority", 4),
        *((f"4814_{task}", T1, "AssocGrpGRES", 5) for task in range(6, 12)),
        *((f"4815_{task}", T1, "QOSMaxGRESPerUser", 6) for task in (1, 3, 5, 6, 7)),
        ("4816", T1, "Dependency", 7),
        ("4817", T1, "ReqNodeNotAvail, UnavailableNodes:node[01-02]", 9),
        ("4812", T3, "Priority", 13),
        *((f"4814_{task}", T3, "AssocGrpGRES", 14) for task in (9, 10, 11)),
        *((f"4818_{task}", T4, "BeginTime", 17) for task in (0, 4, 8)),
        ("4819", T4, "Priority", 19),
    ]
)

_STORED = "SELECT job_id, observed_at, reason, line FROM pending_reasons ORDER BY job_id, observed_at"


def test_snapshots_become_one_row_per_job_and_time(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, write(tmp_path / "squeue-pending.log", SNAPSHOTS))
    assert (report.format, report.status, report.rows, report.rejects) == ("slurm_squeue", "loaded", 23, 0)
    assert rows(db, _STORED) == EXPECTED
    assert rows(db, "SELECT DISTINCT source FROM pending_reasons") == [("slurm",)]
    # every timestamp had Z or an offset: no zone was used, none is recorded
    assert rows(db, "SELECT format, time_zone, rows_loaded, rejects FROM ingested_files") == [
        ("slurm_squeue", None, 23, 0)
    ]


def test_gzip_gives_the_same_rows(tmp_path: Path) -> None:
    path = tmp_path / "squeue-pending.log.gz"
    path.write_bytes(gzip.compress(SNAPSHOTS.encode()))
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path)
    assert (report.format, report.status, report.rows, report.rejects) == ("slurm_squeue", "loaded", 23, 0)
    assert rows(db, _STORED) == EXPECTED


BROKEN = "\n".join(
    [
        "4900|Resources",  # 1  before any timestamp line
        "# 2026-11-25T11:14:43Z",  # 2
        "4901|Resources",  # 3  stored
        "4902",  # 4  no '|'
        "49x3|Priority",  # 5  unreadable job id
        "4904_[3-1]|Priority",  # 6  a range running backwards
        "4905_[1-3%]|Priority",  # 7  a throttle without its number
        "4906|",  # 8  no reason
        "4901|Resources",  # 9  4901 again at the same time
        "4907.batch|Priority",  # 10 a step is no pending job
        "# 25/11/2026 11:15",  # 11 not ISO 8601
        "4908|Resources",  # 12 under line 11
        "JOBID|REASON",  # 13 a header: neither row nor reject
        "4909|Resources",  # 14 under line 11
        "# 1969-12-31T23:00:00",  # 15 no zone, before the years gca reads in one
        "4910|Resources",  # 16 under line 15
        "# 2026-11-25T11:16:43Z",  # 17
        "4911_[0-4000001]|Resources",  # 18 beyond Slurm's largest array
        "4912|Priority",  # 19 stored
        "",
    ]
)


def test_broken_lines_are_rejected_with_their_line_numbers(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, write(tmp_path / "squeue.log", BROKEN), format_name="slurm_squeue", zone="UTC")
    assert (report.rows, report.rejects) == (2, 13)
    assert (report.superseded, report.unchanged) == (0, 1)  # line 9 repeats line 3
    assert rows(db, "SELECT job_id, observed_at, reason, line FROM pending_reasons ORDER BY line") == [
        ("4901", T1, "Resources", 3),
        ("4912", datetime(2026, 11, 25, 11, 16, 43), "Priority", 19),
    ]
    under_11 = "under the timestamp line 11, which was rejected"
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (1, "before the first timestamp line: when the snapshot was taken is not known"),
        (4, "no '|' between job id and reason (expected <jobid>|<reason>, as squeue -o '%i|%r' writes)"),
        (5, "unreadable job id '49x3'"),
        (6, "unreadable array task list [3-1]"),
        (7, "unreadable array task list [1-3%]"),
        (8, "no reason after '|'"),
        (10, "unreadable job id '4907.batch'"),
        (11, "unreadable timestamp line (expected # YYYY-MM-DDTHH:MM:SSZ, as date -u +'# %Y-%m-%dT%H:%M:%SZ' writes)"),
        (12, under_11),
        (14, under_11),
        (15, "the time 1969-12-31T23:00:00 is outside the years gca reads (1990-2059)"),
        (16, "under the timestamp line 15, which was rejected"),
        (18, "unreadable array task list [0-4000001]"),
    ]
    assert rows(db, "SELECT text FROM rejects WHERE line = 11") == [("# 25/11/2026 11:15",)]


def test_strict_fails_the_file_and_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, write(tmp_path / "squeue.log", BROKEN), format_name="slurm_squeue", zone="UTC", strict=True)
    assert report.status == "failed" and "squeue.log:1: before the first timestamp line" in report.message
    assert rows(db, "SELECT count(*) FROM pending_reasons") == [(0,)]


def test_a_last_line_without_its_line_end_was_cut(tmp_path: Path) -> None:
    # the loop was writing when the log was copied: "Resources" may have become "Reso"
    path = write(tmp_path / "squeue.log", "# 2026-11-25T11:14:43Z\n4812|Priority\n4813|Reso")
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, format_name="slurm_squeue")
    assert (report.rows, report.rejects) == (1, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [
        (3, "the last line has no line end: the log was being written, its reason may be cut")
    ]


ZONELESS = "\n".join(
    [
        "# 2026-01-15 09:00:00",  # 1 CET: 08:00Z
        "4812|Resources",  # 2
        "# 2026-07-15T09:00:00",  # 3 CEST: 07:00Z
        "4812|Priority",  # 4
        "# 2026-10-25T02:30:00",  # 5 repeated hour: its first occurrence, CEST: 00:30Z
        "4812|Priority",  # 6
        "# 2026-03-29T02:30",  # 7 skipped hour, moved forward (read at +01:00): 01:30Z; no seconds
        "4812|Priority",  # 8
        "",
    ]
)


def test_timestamps_without_a_zone_are_read_in_tz_and_the_zone_is_recorded(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, write(tmp_path / "squeue.log", ZONELESS), zone="Europe/Zurich")
    assert (report.format, report.rows, report.rejects) == ("slurm_squeue", 4, 0)
    assert rows(db, "SELECT observed_at, line FROM pending_reasons ORDER BY line") == [
        (datetime(2026, 1, 15, 8, 0), 2),
        (datetime(2026, 7, 15, 7, 0), 4),
        (datetime(2026, 10, 25, 0, 30), 6),
        (datetime(2026, 3, 29, 1, 30), 8),
    ]
    assert rows(db, "SELECT time_zone FROM ingested_files") == [("Europe/Zurich",)]


def test_without_tz_the_machines_zone_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")  # EST in January: UTC-5
    db = tmp_path / "s.duckdb"
    ingest(db, write(tmp_path / "squeue.log", "# 2026-01-15T09:00:00\n4812|Resources\n"))
    assert rows(db, "SELECT observed_at FROM pending_reasons") == [(datetime(2026, 1, 15, 14, 0),)]
    assert rows(db, "SELECT time_zone FROM ingested_files") == [("America/New_York",)]


def test_reingest_is_a_no_op_and_replace_takes_back_the_files_rows(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = write(tmp_path / "squeue-pending.log", SNAPSHOTS)
    ingest(db, path)
    (again,) = ingest(db, path)
    assert again.status == "unchanged"
    assert rows(db, "SELECT count(*) FROM pending_reasons") == [(23,)]
    # the loop appended a snapshot
    write(path, SNAPSHOTS + "# 2026-11-25T11:18:43Z\n4812|Priority\n")
    (changed,) = ingest(db, path)
    assert changed.status == "failed" and "ingested before with different content" in changed.message
    (replaced,) = ingest(db, path, replace=True)
    assert (replaced.status, replaced.rows, replaced.rejects) == ("replaced", 24, 0)
    assert rows(db, "SELECT count(*), count(DISTINCT file_id) FROM pending_reasons") == [(24, 1)]
    assert rows(db, "SELECT job_id, line FROM pending_reasons WHERE observed_at = '2026-11-25 11:18:43'") == [
        ("4812", 21)
    ]


def test_a_snapshot_stored_from_another_file_is_unchanged_or_superseded(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = write(tmp_path / "monday" / "squeue.log", "# 2026-11-25T11:14:43Z\n4812|Resources\n4814_[6-7]|Priority\n")
    # a later copy of the same growing log: its first snapshot is stored already, but for 4814_7's
    # reason, which the later copy says otherwise (the later holds)
    later = write(
        tmp_path / "tuesday" / "squeue.log",
        "# 2026-11-25T11:14:43Z\n4812|Resources\n4814_6|Priority\n4814_7|Dependency\n4814_8|Priority\n"
        "# 2026-11-25T11:15:43Z\n4812|Resources\n",
    )
    ingest(db, first)
    (report,) = ingest(db, later)
    # 4814_7 (superseded), 4814_8 and 4812 at 11:15:43 are from it; 4812 and 4814_6 at 11:14:43 unchanged
    assert (report.rows, report.rejects, report.superseded, report.unchanged) == (3, 0, 1, 2)
    assert rows(
        db, "SELECT job_id, observed_at, reason, file_id, line FROM pending_reasons ORDER BY observed_at, job_id"
    ) == [
        ("4812", T1, "Resources", 1, 2),
        ("4814_6", T1, "Priority", 1, 3),
        ("4814_7", T1, "Dependency", 2, 4),
        ("4814_8", T1, "Priority", 2, 5),
        ("4812", datetime(2026, 11, 25, 11, 15, 43), "Resources", 2, 7),
    ]
    # either order, or both logs as one file, stores the same rows
    other = tmp_path / "other.duckdb"
    (a,) = ingest(other, later)
    (b,) = ingest(other, first)
    both = tmp_path / "both.duckdb"
    (c,) = ingest(both, write(tmp_path / "both" / "squeue.log", first.read_text() + later.read_text()))
    assert (b.superseded, b.unchanged, b.rejects) == (c.superseded, c.unchanged, c.rejects) == (1, 2, 0)
    stored = "SELECT job_id, observed_at, reason FROM pending_reasons ORDER BY ALL"
    assert rows(db, stored) == rows(both, stored)
    # ingest order decides between reasons given for the same instant: here the Monday copy came last
    assert rows(other, stored) == [r if r[0] != "4814_7" else ("4814_7", T1, "Priority") for r in rows(db, stored)]


SACCT = "\n".join(
    [
        "JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Timelimit|AllocTRES|NodeList",
        "7001|train|ann|ml|gpu|COMPLETED|0:0|2026-11-25T12:00:00|2026-11-25T12:00:00|2026-11-25T12:30:00|2026-11-25T13:00:00|01:00:00|cpu=4,gres/gpu=1,node=1|gpu01",
        "7001.batch|batch||ml||COMPLETED|0:0|2026-11-25T12:00:00|2026-11-25T12:00:00|2026-11-25T12:30:00|2026-11-25T13:00:00||cpu=4,gres/gpu=1,node=1|gpu01",
        "7002_4|sweep|bob|ml|gpu|COMPLETED|0:0|2026-11-25T12:01:00|2026-11-25T12:01:00|2026-11-25T12:31:00|2026-11-25T13:00:00|01:00:00|cpu=4,gres/gpu=1,node=1|gpu01",
        "7003_6|arr|bob|ml|gpu|COMPLETED|0:0|2026-11-25T12:02:00|2026-11-25T12:02:00|2026-11-25T12:32:00|2026-11-25T13:00:00|01:00:00|cpu=4,gres/gpu=1,node=1|gpu02",
        "7003_7|arr|bob|ml|gpu|COMPLETED|0:0|2026-11-25T12:02:00|2026-11-25T12:02:00|2026-11-25T12:33:00|2026-11-25T13:00:00|01:00:00|cpu=4,gres/gpu=1,node=1|gpu02",
        "7003_8|arr|bob|ml|gpu|FAILED|1:0|2026-11-25T12:02:00|2026-11-25T12:02:00|2026-11-25T12:34:00|2026-11-25T13:00:00|01:00:00|cpu=4,gres/gpu=1,node=1|gpu02",
        "7004+0|het|cy|ml|gpu|COMPLETED|0:0|2026-11-25T12:03:00|2026-11-25T12:03:00|2026-11-25T12:35:00|2026-11-25T13:00:00|01:00:00|cpu=4,gres/gpu=2,node=1|gpu03",
        "7004+1|het|cy|ml|gpu|COMPLETED|0:0|2026-11-25T12:03:00|2026-11-25T12:03:00|2026-11-25T12:35:00|2026-11-25T13:00:00|01:00:00|cpu=4,gres/gpu=2,node=1|gpu04",
        "",
    ]
)

# The same jobs, pending at 11:10Z = 12:10 in Zurich: after every submission, before every start.
SQUEUE_OF_SACCT = "\n".join(
    [
        "# 2026-11-25T11:10:00Z",
        "7001|Resources",
        "7002_4|Priority",
        "7003_[6-8%2]|AssocGrpGRES",
        "7004+0|Resources",
        "7004+1|Resources",
        "",
    ]
)


def test_job_ids_join_the_jobs_sacct_stores(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    reports = ingest(
        db,
        write(tmp_path / "sacct.txt", SACCT),
        write(tmp_path / "squeue-pending.log", SQUEUE_OF_SACCT),
        zone="Europe/Zurich",
    )
    assert [(r.format, r.status, r.rows, r.rejects) for r in reports] == [
        ("slurm_sacct", "loaded", 6, 0),
        ("slurm_squeue", "loaded", 6, 0),
    ]
    joined = rows(
        db,
        """
        SELECT p.job_id, p.reason, j.user_name, j.submit_at <= p.observed_at AND p.observed_at < a.start_at
        FROM pending_reasons p
        LEFT JOIN jobs j USING (source, job_id)
        LEFT JOIN attempts a ON a.source = j.source AND a.job_id = j.job_id AND a.attempt_no = 0
        ORDER BY p.job_id""",
    )
    assert joined == [
        ("7001", "Resources", "ann", True),
        ("7002_4", "Priority", "bob", True),
        ("7003_6", "AssocGrpGRES", "bob", True),
        ("7003_7", "AssocGrpGRES", "bob", True),
        ("7003_8", "AssocGrpGRES", "bob", True),
        ("7004", "Resources", "cy", True),  # the het job is one job, as sacct stores it
    ]


@pytest.mark.parametrize("name", ["squeue-pending.log", "pending.txt", "snapshots"])
def test_recognized_by_content_whatever_the_name(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, SNAPSHOTS)
    fmt = detect_format(path, read_head(path))
    assert fmt is not None and fmt.name == "slurm_squeue"


def test_a_queue_that_was_always_empty_is_recognized(tmp_path: Path) -> None:
    path = write(tmp_path / "squeue.log", "# 2026-11-25T11:14:43Z\n# 2026-11-25T11:15:43Z\n# 2026-11-25T11:16:43Z\n")
    fmt = detect_format(path, read_head(path))
    assert fmt is not None and fmt.name == "slurm_squeue"


@pytest.mark.parametrize(
    "text",
    [
        "4812|Resources\n4813|Priority\n",  # no timestamp line first
        "# 2026-11-25T11:14:43Z\nthe queue was drained\n",  # not a squeue line
        "# gpu   pwr  gtemp\n# Idx  W    C\n",  # nvidia-smi dmon
        "# 2026-11-25T11:14:43Z\n",  # one line says nothing
        # issue #29: a running-jobs snapshot (squeue -h -t R -o '%i|%N|%b'), and one without GRES:
        # node lists and GRES are no pending reasons
        "# 2026-11-25T11:14:43Z\n4812|gpu5|gres:gpu:1\n4813|gpu[01-02]|gres:gpu:8\n",
        "# 2026-11-25T11:14:43Z\n4812|gpu5\n4813|gpu[01-02]\n",
        "# 2026-11-25T11:14:43Z\n4812|Resources\n4813|gpu7\n",  # one such line in the head is enough
    ],
)
def test_other_text_is_not_taken_for_squeue(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "notes.txt", text)
    fmt = detect_format(path, read_head(path))
    assert fmt is None or fmt.name != "slurm_squeue"


@pytest.mark.parametrize(
    "reasons",
    [
        "Resources\nPriority\nDependency\nBeginTime\nAssocGrpGRES\nQOSMaxJobsPerUserLimit\nJobHeldUser",
        "ReqNodeNotAvail, UnavailableNodes:gpu[01-02]\n(null)\nNone\nPartitionTimeLimit",
        "launch failed requeued held\nDependencyNeverSatisfied",
    ],
)
def test_slurms_reasons_are_taken_for_squeue(tmp_path: Path, reasons: str) -> None:
    lines = [f"{4800 + i}|{r}" for i, r in enumerate(reasons.split("\n"))]
    path = write(tmp_path / "notes.txt", "# 2026-11-25T11:14:43Z\n" + "\n".join(lines) + "\n")
    fmt = detect_format(path, read_head(path))
    assert fmt is not None and fmt.name == "slurm_squeue"


def test_no_other_formats_file_is_taken_for_squeue(tmp_path: Path) -> None:
    live_log = REPO / "tests" / "data" / "slurm" / "live" / "squeue.log"  # a real squeue log (test_slurm_live.py)
    others = [
        p
        for folder in (REPO / "tests" / "data", REPO / "examples")
        for p in folder.rglob("*")
        if p.is_file() and p != live_log
    ]
    assert len(others) > 100
    taken = []
    for path in others:
        fmt = detect_format(path, read_head(path))
        if fmt is not None and fmt.name == "slurm_squeue":
            taken.append(path)
    assert taken == []


def test_cli_refuses_utf16_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "squeue.log"
    path.write_bytes("# 2026-11-25T11:14:43Z\n4812|Resources\n".encode("utf-16"))
    result = CliRunner().invoke(
        app, ["ingest", str(path), "--format", "slurm_squeue", "--db", str(tmp_path / "s.duckdb")]
    )
    assert result.exit_code == 2, result.output  # an input gca cannot read as it is
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("gca: error:")]
    assert (
        len(errors) == 1
        and f"{path}:1: UTF-16 text" in errors[0]
        and "iconv -f UTF-16 -t UTF-8 squeue.log" in errors[0]
    )


def test_cli_ingests_a_directory_with_sacct_and_squeue(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    write(folder / "sacct.txt", SACCT)
    shutil.copy(write(tmp_path / "x.log", SQUEUE_OF_SACCT), folder / "squeue-pending.log")
    result = CliRunner().invoke(
        app, ["ingest", str(folder), "--db", str(tmp_path / "s.duckdb"), "--tz", "Europe/Zurich"]
    )
    assert result.exit_code == 0, result.output
    assert rows(tmp_path / "s.duckdb", "SELECT count(*) FROM pending_reasons") == [(6,)]


def test_pending_reasons_meet_the_replay(tmp_path: Path) -> None:
    """End to end: sacct and squeue files ingested, the replay's cause at each snapshot beside
    Slurm's reason. At 11:10Z nothing runs yet (the first start is 12:30 Zurich = 11:30Z), so
    with VC ml's quota at 0 every pending second of every job is fair share (0 held + its
    GPUs > 0), whatever Slurm said; without a quota the empty cluster leaves only 'other'."""
    from gpucluster_analysis.analyze.prepare import prepare
    from gpucluster_analysis.db import open_store
    from gpucluster_analysis.replay import Quotas

    db = tmp_path / "s.duckdb"
    ingest(
        db,
        write(tmp_path / "sacct.txt", SACCT),
        write(tmp_path / "squeue-pending.log", SQUEUE_OF_SACCT),
        zone="Europe/Zurich",
    )
    with open_store(db, read_only=True) as con:
        zero = prepare(con, quotas=Quotas({"ml": 0}, tmp_path / "q.toml")).pending
        none = prepare(con, quotas=Quotas({}, tmp_path / "q.toml")).pending
    assert {(r["reason"], r["replay_cause"]): (r["snapshots"], r["jobs"]) for r in zero.to_dicts()} == {
        ("AssocGrpGRES", "fair_share"): (3, 3),
        ("Priority", "fair_share"): (1, 1),
        ("Resources", "fair_share"): (2, 2),
    }
    assert {(r["reason"], r["replay_cause"]): r["snapshots"] for r in none.to_dicts()} == {
        ("AssocGrpGRES", "other"): 3,
        ("Priority", "other"): 1,
        ("Resources", "other"): 2,
    }
