"""Slurm ingest on hand-written sacct and scontrol files (tests/data/slurm/), every variant.

Expected values are worked out by hand in the comments. Most files are read with
--tz Europe/Zurich: UTC = local - 1 h in winter (CET), - 2 h in summer (CEST); 2024's
spring-forward is 03-31 02:00 -> 03:00, its fall-back 10-27 03:00 -> 02:00.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import InputError, ParseError
from gpucluster_analysis.ingest import detect_format
from gpucluster_analysis.ingest.files import read_head
from gpucluster_analysis.ingest.slurm.hostlist import HostlistError, expand_hostlist
from gpucluster_analysis.ingest.slurm.layout import SONAR_COLUMNS
from gpucluster_analysis.ingest.slurm.scontrol import IndexPastBound, parse_gpu_indices
from gpucluster_analysis.ingest.slurm.values import (
    parse_duration_s,
    parse_exit,
    parse_job_id,
    parse_state,
    parse_time,
    parse_tres,
)
from tests.marks import keep_by_default
from tests.store_helpers import headline, ingest, jobs_csv, prepared_store, rows, write

DATA = Path(__file__).resolve().parent / "data" / "slurm"
ZURICH = "Europe/Zurich"


# ---------------------------------------------------------------- small parsers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("123", ("123", None, None)),
        ("123.batch", ("123", None, "batch")),
        ("123.extern", ("123", None, "extern")),
        ("123.interactive", ("123", None, "interactive")),
        ("123.0", ("123", None, "0")),
        ("123_4", ("123_4", None, None)),
        ("123_4.batch", ("123_4", None, "batch")),
        ("123_[0-9]", ("123_[0-9]", None, None)),
        ("123_[0%1]", ("123_[0%1]", None, None)),
        ("123+0", ("123", 0, None)),
        ("123+1.batch", ("123", 1, "batch")),
        ("123.0+1", ("123", None, "0+1")),  # a het step of a plain job
    ],
)
def test_job_ids(text: str, expected: tuple) -> None:
    assert parse_job_id(text) == expected


@pytest.mark.parametrize("text", ["abc", "123.", "123_", "12 3", "", "123+x", "123+99999999999"])
def test_job_ids_that_are_not(text: str) -> None:
    assert parse_job_id(text) is None


def test_states_split_the_canceller() -> None:
    assert parse_state("CANCELLED by 1234") == ("CANCELLED", "1234")
    assert parse_state("COMPLETED") == ("COMPLETED", None)
    assert parse_state("OUT_OF_MEMORY") == ("OUT_OF_MEMORY", None)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2-00:00:06", 2 * 86400 + 6),
        ("20:15:09", 20 * 3600 + 15 * 60 + 9),
        ("15:09", 15 * 60 + 9),  # MM:SS
        ("1-12", 86400 + 12 * 3600),  # D-HH
        ("1-12:30", 86400 + 12 * 3600 + 30 * 60),  # D-HH:MM
        ("03:12.345", 3 * 60 + 12),  # CPU fields carry milliseconds
        ("UNLIMITED", None),
        ("Partition_Limit", None),
    ],
)
def test_durations(text: str, seconds: int | None) -> None:
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["2 hours", "12:61:00", "-1", "1-2-3", "99999999999999999999-00:00:00"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration_s(text)


def test_numbers_too_big_for_the_store_are_unreadable_not_a_crash() -> None:
    for text in ("gres/gpu=99999999999", "node=99999999999", "gres/gpu=\u00b2"):
        with pytest.raises(ValueError):
            parse_tres(text)
    with pytest.raises(ValueError):
        parse_exit("99999999999:0")
    assert parse_exit("-1:0") == (-1, 0)


def test_tres_prefers_the_untyped_gpu_count_and_keeps_the_model() -> None:
    both = parse_tres("billing=78,cpu=48,gres/gpu:a100_80=4,gres/gpu=4,mem=384G,node=1")
    assert both is not None and (both.gpus, both.model, both.nodes) == (4, "a100_80", 1)
    typed = parse_tres("cpu=4,gres/gpu:h100=2,gres/gpu:a100=1,mem=62.50G")  # no untyped key: 2 + 1
    assert typed is not None and (typed.gpus, typed.model, typed.nodes) == (3, "a100,h100", None)
    none = parse_tres("cpu=4,mem=16G,node=1,gres/gpumem=38888M,gres/gpuutil=100")  # not GPU counts
    assert none is not None and (none.gpus, none.model) == (0, None)
    assert parse_tres("") is None
    with pytest.raises(ValueError):
        parse_tres("cpu=4,gres/gpu=four")


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("gpu[01-04,07]", ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"]),
        ("c1-[9-10]", ["c1-9", "c1-10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),  # zero padding of the lower bound
        ("gpu[1-2],login1,cpu[003-004]", ["gpu1", "gpu2", "login1", "cpu003", "cpu004"]),
        ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("gpu01", ["gpu01"]),
        ("None assigned", []),
        ("(null)", []),
        ("", []),
    ],
)
def test_hostlists(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["gpu[01-", "gpu01]", "gpu[a-b]", "gpu[5-1]", "gpu[[1]]", "gpu[0-999999999]", "a,,b"])
def test_bad_hostlists(text: str) -> None:
    with pytest.raises(HostlistError):
        expand_hostlist(text)


def test_scontrol_gres_indices() -> None:
    assert parse_gpu_indices("gpu:a100:4(IDX:0-3)") == [0, 1, 2, 3]
    assert parse_gpu_indices("gpu(IDX:0,2)") == [0, 2]
    assert parse_gpu_indices("gpu:a100:4(IDX:0-2,5)") == [0, 1, 2, 5]
    assert parse_gpu_indices("gpu:(null):0(IDX:N/A)") == []
    assert parse_gpu_indices("gpu:a100:1(IDX:1),gpu:v100:1(IDX:3),shard:2(0/2,0/2)") == [1, 3]
    assert parse_gpu_indices("") == []
    # issue #26: an index past the bound of GPUs per node, said before a range is expanded
    with pytest.raises(IndexPastBound) as past:
        parse_gpu_indices("gpu:a100:4(IDX:0-99999999)")
    assert past.value.args == (99999999, 1024)
    assert parse_gpu_indices("gpu(IDX:1023)") == [1023]
    assert parse_gpu_indices("gpu(IDX:0-1)", max_gpus_per_node=2) == [0, 1]
    with pytest.raises(IndexPastBound):
        parse_gpu_indices("gpu(IDX:0-2)", max_gpus_per_node=2)


# ---------------------------------------------------------------- recognizing files


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("parsable2.txt", "slurm_sacct"),
        ("parsable_trailing.txt", "slurm_sacct"),
        ("fixed_width.txt", "slurm_sacct"),
        ("noheader.txt", "slurm_sacct"),  # a job id and a state word among |-separated fields
        ("scontrol.txt", "slurm_scontrol"),
    ],
)
def test_formats_are_detected_from_content(name: str, fmt: str) -> None:
    path = DATA / name
    detected = detect_format(path, read_head(path))
    assert detected is not None and detected.name == fmt


# ---------------------------------------------------------------- sacct -P with header


@pytest.fixture(scope="module")
def main_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("slurm") / "s.duckdb"
    (report,) = ingest(db, DATA / "parsable2.txt", zone=ZURICH)
    # 1001 1002 1003 1004 1005 1006 1010_1 1010_2 1010_[3-5%2] 1020 1030 1040; nothing rejected
    assert (report.status, report.format, report.rows, report.rejects) == ("loaded", "slurm_sacct", 12, 0)
    return db


def test_jobs_statuses_from_allocation_and_steps(main_store: Path) -> None:
    got = {
        r[0]: r[1:]
        for r in rows(
            main_store, "SELECT job_id, status, source_status, cancelled_by, exit_code, exit_signal FROM jobs"
        )
    }
    assert got == {
        "1001": ("passed", "COMPLETED", None, 0, 0),
        # step .0 OUT_OF_MEMORY 0:125 under a COMPLETED 0:0 allocation: the step's exit is the job's
        "1002": ("failed", "COMPLETED", None, 0, 125),
        "1003": ("timeout", "TIMEOUT", None, 0, 0),  # CANCELLED steps and a step FAILED 0:9 are teardown
        "1004": ("killed", "CANCELLED by 1234", "1234", 0, 0),
        "1005": ("pending", "PENDING", None, 0, 0),
        "1006": ("killed", "CANCELLED by 0", "0", 0, 0),
        "1010_1": ("passed", "COMPLETED", None, 0, 0),
        "1010_2": ("failed", "FAILED", None, 1, 0),
        "1010_[3-5%2]": ("pending", "PENDING", None, 0, 0),  # pending array tasks: one job
        "1020": ("failed", "COMPLETED", None, 2, 0),  # het component 1's step .0 FAILED 2:0
        "1030": ("passed", "COMPLETED", None, 0, 0),  # NODE_FAIL, requeued, then COMPLETED
        "1040": ("passed", "COMPLETED", None, 0, 0),
    }


def test_job_attributes(main_store: Path) -> None:
    got = {
        r[0]: r[1:]
        for r in rows(
            main_store, "SELECT job_id, user_name, vc, partition, job_name, time_limit_s, gpu_model FROM jobs"
        )
    }
    assert got["1001"] == ("alice", "ml", "gpu", "train_resnet", 86400, "a100")  # 1-00:00:00
    assert got["1002"] == ("bob", "nlp", "gpu", "bert_large", 4 * 3600, None)
    assert got["1003"] == ("carol", "vision", "gpu", "sweep", 3600, "v100")
    assert got["1004"] == ("dave", "debug", "debug", "notebook", 1800, None)  # no Account: the partition is the vc
    assert got["1005"][4] is None and got["1006"][4] is None  # UNLIMITED, Partition_Limit
    # a | inside JobName (one free-text column: the fields around it are exact); "hmolin " stripped
    assert got["1040"] == ("hmolin", "ml", "gpu", "a|b name", 3600, None)


def test_times_are_utc(main_store: Path) -> None:
    got = {r[0]: r[1:] for r in rows(main_store, "SELECT job_id, submit_at, eligible_at FROM jobs")}
    assert got["1001"] == (datetime(2024, 1, 10, 8, 0), datetime(2024, 1, 10, 8, 0))  # 09:00 CET
    assert got["1002"] == (datetime(2024, 1, 11, 9, 0), datetime(2024, 1, 11, 9, 30))  # held until 10:30 CET
    assert got["1005"] == (datetime(2024, 1, 14, 6, 0), None)  # Eligible Unknown
    # requeued: the first run's Submit; Eligible the earliest (06:00 vs 07:06 CET)
    assert got["1030"] == (datetime(2024, 1, 17, 5, 0), datetime(2024, 1, 17, 5, 0))


def test_attempts(main_store: Path) -> None:
    got = {
        (r[0], r[1]): r[2:]
        for r in rows(
            main_store,
            "SELECT job_id, attempt_no, source_index, start_at, end_at, status, source_status, num_gpus, "
            "num_nodes FROM attempts",
        )
    }
    assert got[("1001", 0)] == (
        0,
        datetime(2024, 1, 10, 8, 5),
        datetime(2024, 1, 10, 10, 5),
        "passed",
        "COMPLETED",
        4.0,
        1,
    )
    assert got[("1002", 0)] == (
        0,
        datetime(2024, 1, 11, 10, 0),
        datetime(2024, 1, 11, 11, 0),
        "failed",
        "COMPLETED",
        8.0,
        2,
    )
    # v100 only as a typed key: its count is the GPU count
    assert got[("1003", 0)][3:] == ("timeout", "TIMEOUT", 2.0, 2)
    assert got[("1004", 0)][5] == 0.0  # AllocTRES without gres/gpu: no GPUs
    # pending, and cancelled while pending (Slurm wrote Start = End = 09:30 CET, no node was
    # assigned): never placed, so no attempt; the GPUs they asked for (ReqTRES) and when the
    # cancelled one left the queue are the job's
    assert ("1005", 0) not in got and ("1006", 0) not in got
    assert rows(
        main_store,
        "SELECT job_id, status, requested_gpus, left_queue_at FROM jobs WHERE job_id IN ('1005', '1006') ORDER BY 1",
    ) == [("1005", "pending", 2.0, None), ("1006", "killed", 8.0, datetime(2024, 1, 14, 8, 30))]
    # het job 1020: one attempt of both components, 4 + 2 GPUs on 1 + 1 nodes
    assert got[("1020", 0)] == (
        0,
        datetime(2024, 1, 16, 8, 10),
        datetime(2024, 1, 16, 9, 10),
        "failed",
        "COMPLETED",
        6.0,
        2,
    )
    # requeued 1030: each allocation row is a run, in order
    assert got[("1030", 0)] == (
        0,
        datetime(2024, 1, 17, 5, 5),
        datetime(2024, 1, 17, 6, 5),
        "node_fail",
        "NODE_FAIL",
        2.0,
        1,
    )
    assert got[("1030", 1)] == (
        1,
        datetime(2024, 1, 17, 6, 10),
        datetime(2024, 1, 17, 7, 10),
        "passed",
        "COMPLETED",
        2.0,
        1,
    )
    assert len(got) == 10  # 12 jobs, 1030 twice; 1005, 1006 and the pending array 1010_[3-5%2] never placed


def test_attempt_hosts_expand_nodelists(main_store: Path) -> None:
    got = sorted(rows(main_store, "SELECT job_id, attempt_no, machine_id, gpus FROM attempt_hosts"))
    assert got == sorted(
        [
            ("1001", 0, "gpu01", 4),
            ("1002", 0, "gpu02", 4),
            ("1002", 0, "gpu03", 4),  # gpu[02-03], 8 GPUs / 2
            ("1003", 0, "c1-10", 1),
            ("1003", 0, "c1-9", 1),  # c1-[9-10], 2 GPUs / 2
            ("1004", 0, "cpu17", 0),
            ("1010_1", 0, "gpu01", 1),
            ("1010_2", 0, "gpu01", 1),
            ("1020", 0, "gpu04", 4),
            ("1020", 0, "gpu05", 2),  # each component's own share
            ("1030", 0, "gpu06", 2),
            ("1030", 1, "gpu07", 2),
            ("1040", 0, "gpu08", 1),
        ]
    )  # 1005, 1006 and the pending array: None assigned


def test_jobs_csv_from_sacct(main_store: Path) -> None:
    jobs = jobs_csv(main_store)
    assert len(jobs) == 12 and all(j["source"] == "slurm" for j in jobs.values())
    j = jobs["1001"]
    assert (j["status"], j["submit_time"], j["first_start_time"], j["end_time"]) == (
        "passed",
        "2024-01-10T08:00:00Z",
        "2024-01-10T08:05:00Z",
        "2024-01-10T10:05:00Z",
    )
    # 5 min wait; 2 h run; 4 GPUs x 7200 s
    assert (j["attempts"], j["num_gpus"], j["num_servers"], j["queue_delay_s"], j["run_time_s"], j["gpu_time_s"]) == (
        1,
        4,
        1,
        300,
        7200,
        28800,
    )
    j = jobs["1002"]
    # queueing from Eligible (10:30 CET) to start (11:00 CET): 1800 s; 8 GPUs x 3600 s
    assert (j["status"], j["num_gpus"], j["num_servers"], j["queue_delay_s"], j["gpu_time_s"]) == (
        "failed",
        8,
        2,
        1800,
        28800,
    )
    j = jobs["1003"]
    # 08:10:00 -> 09:10:10 CET = 3610 s, 2 GPUs
    assert (j["status"], j["vc"], j["run_time_s"], j["gpu_time_s"]) == ("timeout", "vision", 3610, 7220)
    j = jobs["1030"]
    # two runs of 1 h on 2 GPUs; run time from the first start (06:05) to the last end (08:10 CET)
    assert (j["attempts"], j["queue_delay_s"], j["run_time_s"], j["gpu_time_s"]) == (2, 300, 7500, 14400)
    j = jobs["1020"]
    assert (j["status"], j["num_gpus"], j["num_servers"], j["gpu_time_s"]) == ("failed", 6, 2, 6 * 3600)
    j = jobs["1006"]
    assert (j["first_start_time"], j["queue_delay_s"], j["run_time_s"]) == (None, None, None)
    j = jobs["1005"]
    assert (j["status"], j["num_gpus"], j["first_start_time"], j["gpu_time_s"]) == ("pending", 2, None, None)


def test_zone_is_recorded(main_store: Path) -> None:
    assert rows(main_store, "SELECT format, time_zone FROM ingested_files") == [("slurm_sacct", ZURICH)]


def test_default_zone_is_the_machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "dst.txt")
    assert report.status == "loaded"
    assert rows(db, "SELECT time_zone FROM ingested_files") == [("Asia/Tokyo",)]
    # 2024-03-31T02:30 in Tokyo (UTC+9, no DST) is 03-30 17:30 UTC
    assert rows(db, "SELECT submit_at FROM jobs") == [(datetime(2024, 3, 30, 17, 30),)]


@pytest.mark.parametrize("zone", ["Etc/GMT-2", "Europe/Zurich"])
def test_a_zone_of_one_offset_converts_as_a_zone_with_changes_does(tmp_path: Path, zone: str) -> None:
    """A zone of one offset (Etc/GMT-2 is UTC+2 all year) is converted without the table of
    times; Zurich in July (CEST, also UTC+2) through it. Both give local - 2 h, by hand; an
    epoch time (SLURM_TIME_FORMAT=%s) is UTC in either; a pending job's Start stays empty."""
    dump = tmp_path / "sacct.txt"
    dump.write_text(
        "JobID|State|ExitCode|Submit|Start|End|AllocTRES|NodeList\n"
        "1|COMPLETED|0:0|2024-07-01T10:00:00|2024-07-01T10:05:00|2024-07-01T11:00:00|cpu=1,gres/gpu=1,node=1|n1\n"
        "1.batch|COMPLETED|0:0|2024-07-01T10:05:00|2024-07-01T10:05:00|2024-07-01T11:00:00|cpu=1,gres/gpu=1,node=1|n1\n"
        # 1719828000 = 2024-07-01T10:00:00Z
        "2|FAILED|1:0|1719828000|1719828060|1719828120|cpu=1,gres/gpu=1,node=1|n1\n"
        "3|PENDING|0:0|2024-07-01T12:00:00|Unknown|Unknown||None assigned\n"
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, dump, zone=zone)
    assert report.status == "loaded" and report.rejects == 0
    assert rows(db, "SELECT job_id, submit_at FROM jobs ORDER BY job_id") == [
        ("1", datetime(2024, 7, 1, 8, 0)),
        ("2", datetime(2024, 7, 1, 10, 0)),
        ("3", datetime(2024, 7, 1, 10, 0)),
    ]
    assert rows(db, "SELECT job_id, start_at, end_at FROM attempts ORDER BY job_id") == [
        ("1", datetime(2024, 7, 1, 8, 5), datetime(2024, 7, 1, 9, 0)),
        ("2", datetime(2024, 7, 1, 10, 1), datetime(2024, 7, 1, 10, 2)),
    ]


def test_dst_times(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ingest(db, DATA / "dst.txt", zone=ZURICH)
    # Submit 2024-03-31T02:30 does not exist in Zurich: moved forward, read at +1 h -> 01:30 UTC.
    # Start 2024-10-27T02:30 happens twice: the first occurrence (CEST, +2 h) -> 00:30 UTC.
    # End 2024-10-27T04:00 is CET (+1 h) -> 03:00 UTC.
    assert rows(db, "SELECT j.submit_at, a.start_at, a.end_at FROM jobs j JOIN attempts a USING (job_id)") == [
        (datetime(2024, 3, 31, 1, 30), datetime(2024, 10, 27, 0, 30), datetime(2024, 10, 27, 3, 0))
    ]
    # 2.5 h on 2 GPUs
    assert jobs_csv(db)["6001"]["gpu_time_s"] == 2 * 9000


# ---------------------------------------------------------------- other layouts


def test_parsable_with_trailing_pipe(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "parsable_trailing.txt", zone=ZURICH)
    assert (report.rows, report.rejects) == (3, 0)
    got = {
        r[0]: r[1:]
        for r in rows(
            db, "SELECT j.job_id, j.status, a.start_at, a.end_at, a.num_gpus FROM jobs j JOIN attempts a USING (job_id)"
        )
    }
    assert got == {
        "3001": ("passed", datetime(2024, 2, 5, 7, 0, 10), datetime(2024, 2, 5, 7, 30, 10), 1.0),
        "3002": ("running", datetime(2024, 2, 5, 8, 1), None, 2.0),  # End Unknown
    }
    # still pending at the dump: a job with no attempt (neither AllocTRES nor ReqTRES: GPUs unknown)
    assert rows(db, "SELECT status, requested_gpus FROM jobs WHERE job_id = '3003'") == [("pending", None)]
    assert rows(db, "SELECT machine_id FROM attempt_hosts ORDER BY machine_id") == [("gpu20",), ("gpu21",)]


def test_headerless_with_columns(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    columns = ("JobID", "User", "Account", "State", "ExitCode", "Submit", "Start", "End", "AllocTRES%40", "NodeList")
    (report,) = ingest(db, DATA / "noheader.txt", zone=ZURICH, columns=columns)
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 0)
    got = {r[0]: r[1:] for r in rows(db, "SELECT job_id, status, user_name, gpu_model FROM jobs")}
    assert got == {"4001": ("passed", "judy", "h100"), "4002": ("preempted", "judy", "a100,h100")}
    attempts = {r[0]: r[1:] for r in rows(db, "SELECT job_id, num_gpus, num_nodes FROM attempts")}
    assert attempts == {"4001": (2.0, 2), "4002": (3.0, 1)}  # typed keys only: h100 2 + a100 1
    hosts = sorted(rows(db, "SELECT machine_id, gpus FROM attempt_hosts WHERE job_id = '4001'"))
    assert hosts == [("h100-001", 1), ("h100-002", 1)]


def test_headerless_without_columns_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "noheader.txt")
    assert report.status == "failed" and isinstance(report.error, ParseError)
    assert "noheader.txt:1: sacct output without a header line" in report.message and "--columns" in report.message
    assert rows(db, "SELECT count(*) FROM jobs") == [(0,)]


def test_fixed_width(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "fixed_width.txt", zone=ZURICH)
    # WorkDir is cut ('/home/ali+') but gca does not read it
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 0)
    got = {
        r[0]: r[1:]
        for r in rows(
            db,
            "SELECT j.job_id, j.status, j.exit_code, j.vc, a.start_at, a.end_at, a.num_gpus FROM jobs j JOIN "
            "attempts a USING (job_id)",
        )
    }
    assert got == {
        "2001": ("passed", 0, "ml", datetime(2024, 2, 1, 9, 10), datetime(2024, 2, 1, 11, 10), 2.0),
        "2002": ("failed", 2, "ml", datetime(2024, 2, 1, 10, 0), datetime(2024, 2, 1, 10, 5), 1.0),
    }
    assert sorted(rows(db, "SELECT machine_id, gpus FROM attempt_hosts WHERE job_id = '2001'")) == [
        ("gpu11", 1),
        ("gpu12", 1),
    ]


def test_fixed_width_with_a_cut_field_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "fixed_width_truncated.txt", zone=ZURICH)
    assert report.status == "failed" and isinstance(report.error, ParseError)
    assert "fixed_width_truncated.txt:5: sacct cut the State field to 'CANCELLED+'" in report.message
    assert "--parsable2" in report.message
    assert rows(db, "SELECT count(*) FROM jobs") == [(0,)]


def test_concatenated_dumps_keep_the_newest_record(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "concatenated.txt", zone=ZURICH)
    # the repeated header (line 4) is read as a header; 9001 RUNNING (lines 2-3) is superseded
    # by its finished record (lines 5-6): no reject
    assert (report.rows, report.rejects, report.superseded, report.unchanged) == (2, 0, 1, 0)
    assert rows(db, "SELECT job_id, status FROM jobs ORDER BY job_id") == [("9001", "passed"), ("9002", "passed")]
    assert rows(db, "SELECT job_id, end_at FROM attempts ORDER BY job_id") == [
        ("9001", datetime(2024, 5, 1, 7, 0)),
        ("9002", datetime(2024, 5, 1, 7, 30)),
    ]


def test_requeued_then_pending(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ingest(db, DATA / "requeue.txt", zone="UTC")
    # 8001: a run ended by requeue (preempted), then waiting again; 8003: requeued, new run not in the dump
    assert rows(db, "SELECT job_id, status, submit_at FROM jobs ORDER BY job_id") == [
        ("8001", "pending", datetime(2024, 4, 1, 10, 0)),
        ("8003", "pending", datetime(2024, 4, 1, 11, 0)),
    ]
    # the pending row after the requeue was never placed: no attempt
    assert rows(db, "SELECT job_id, attempt_no, status, start_at FROM attempts ORDER BY job_id, attempt_no") == [
        ("8001", 0, "preempted", datetime(2024, 4, 1, 10, 5)),
        ("8003", 0, "preempted", datetime(2024, 4, 1, 11, 10)),
    ]


# Real `sacct -a -D -P` of Slurm 22.05 (scripts/slurm_live.sh, tests/data/slurm/live): job 17 ran,
# was requeued at 23:53:43 and ran again from 23:55:44. sacct lists each run where its own
# submission falls, so other jobs come between the two runs of 17 (16 is the job listed before it).
REQUEUED_APART = """\
JobID|JobName|User|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|Timelimit|NNodes|ReqTRES|AllocTRES|NodeList
16|infra-filler|gcauser1|infra|gpu|normal|COMPLETED|0:0|2026-11-26T23:53:23|2026-11-26T23:53:23|2026-11-26T23:53:24|2026-11-26T23:54:34|00:02:00|1|billing=1,cpu=1,gres/gpu=1,mem=250G,node=1|billing=1,cpu=1,gres/gpu=1,node=1|gpu4
16.batch|batch||infra|||COMPLETED|0:0|2026-11-26T23:53:24|2026-11-26T23:53:24|2026-11-26T23:53:24|2026-11-26T23:54:34||1||cpu=1,gres/gpu=1,mem=0,node=1|gpu4
17|requeue-me|gcauser4|nlp|gpu|normal|REQUEUED|0:0|2026-11-26T23:53:23|2026-11-26T23:53:23|2026-11-26T23:53:24|2026-11-26T23:53:43|00:02:00|1|billing=1,cpu=1,gres/gpu=1,mem=250G,node=1|billing=1,cpu=1,gres/gpu=1,node=1|gpu4
17.batch|batch||nlp|||CANCELLED|0:15|2026-11-26T23:53:24|2026-11-26T23:53:24|2026-11-26T23:53:24|2026-11-26T23:53:43||1||cpu=1,gres/gpu=1,mem=0,node=1|gpu4
9_0|nlp-array|gcauser3|nlp|gpu|capped|COMPLETED|0:0|2026-11-26T23:53:23|2026-11-26T23:53:24|2026-11-26T23:53:24|2026-11-26T23:53:49|00:02:00|1|billing=1,cpu=1,gres/gpu=1,mem=250G,node=1|billing=1,cpu=1,gres/gpu=1,node=1|gpu2
9_0.batch|batch||nlp|||COMPLETED|0:0|2026-11-26T23:53:24|2026-11-26T23:53:24|2026-11-26T23:53:24|2026-11-26T23:53:49||1||cpu=1,gres/gpu=1,mem=0,node=1|gpu2
20|too-big|gcauser2|infra|gpu|normal|COMPLETED|0:0|2026-11-26T23:53:28|2026-11-26T23:53:28|2026-11-26T23:54:45|2026-11-26T23:55:15|00:02:00|2|billing=2,cpu=2,gres/gpu=8,mem=500G,node=2|billing=2,cpu=2,gres/gpu=8,node=2|gpu[1-2]
20.batch|batch||infra|||COMPLETED|0:0|2026-11-26T23:54:45|2026-11-26T23:54:45|2026-11-26T23:54:45|2026-11-26T23:55:15||1||cpu=1,gres/gpu=4,mem=0,node=1|gpu1
17|requeue-me|gcauser4|nlp|gpu|normal|COMPLETED|0:0|2026-11-26T23:53:43|2026-11-26T23:55:44|2026-11-26T23:55:44|2026-11-26T23:56:19|00:02:00|1|billing=1,cpu=1,gres/gpu=1,mem=250G,node=1|billing=1,cpu=1,gres/gpu=1,node=1|gpu1
17.batch|batch||nlp|||COMPLETED|0:0|2026-11-26T23:55:44|2026-11-26T23:55:44|2026-11-26T23:55:44|2026-11-26T23:56:19||1||cpu=1,gres/gpu=1,mem=0,node=1|gpu1
"""


def _runs_of_17(db: Path) -> list[tuple]:
    return rows(db, "SELECT attempt_no, status, start_at, end_at FROM attempts WHERE job_id = '17' ORDER BY attempt_no")


def test_requeued_runs_listed_apart_are_one_record(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = tmp_path / "sacct.txt"
    path.write_text(REQUEUED_APART)
    (report,) = ingest(db, path, zone="UTC")
    # two runs of one job, not two records of it: nothing superseded, both runs are attempts
    assert (report.rows, report.rejects, report.superseded, report.unchanged) == (4, 0, 0, 0)
    assert _runs_of_17(db) == [
        (0, "preempted", datetime(2026, 11, 26, 23, 53, 24), datetime(2026, 11, 26, 23, 53, 43)),
        (1, "passed", datetime(2026, 11, 26, 23, 55, 44), datetime(2026, 11, 26, 23, 56, 19)),
    ]
    assert rows(db, "SELECT status, submit_at FROM jobs WHERE job_id = '17'") == [
        ("passed", datetime(2026, 11, 26, 23, 53, 23))
    ]
    # the wait between the runs: the first run's end to the second's start
    assert jobs_csv(db)["17"]["wait_retry_s"] == 121.0


def test_a_dump_repeated_under_one_header_repeats_records_not_runs(tmp_path: Path) -> None:
    """The same lines twice under one header (dumps concatenated without their second header):
    a block that lists a run seen before (the same Submit) starts another record of the job."""
    db = tmp_path / "s.duckdb"
    header, body = REQUEUED_APART.split("\n", 1)
    path = tmp_path / "sacct.txt"
    path.write_text(header + "\n" + body + body)
    (report,) = ingest(db, path, zone="UTC")
    assert (report.rows, report.rejects, report.superseded, report.unchanged) == (4, 0, 0, 4)
    assert [r[:2] for r in _runs_of_17(db)] == [(0, "preempted"), (1, "passed")]


# ---------------------------------------------------------------- broken rows


def test_broken_rows_are_rejected_with_their_lines(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "broken.txt", zone=ZURICH)
    # 5001 again at line 7, in another block: a later record of the job, not a reject
    assert (report.superseded, report.unchanged) == (1, 0)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (
            4,
            "unreadable Start '2024-13-45T99:00:00' (expected 2025-09-12T14:06:12; export with "
            "SLURM_TIME_FORMAT=standard)",
        ),
        (5, "step of the allocation row at line 4, which was rejected"),
        (6, "step of job 5003 without its allocation row above it"),
        (8, "7 fields where the header has 12"),
        (9, "unreadable AllocTRES item 'gres/gpu=four'"),
        (10, "unreadable NodeList 'gpu[34-': '[' without ']'"),
        (11, "unreadable Timelimit '2 hours'"),
        (12, "unreadable ExitCode 'one' (expected exit:signal)"),
        (14, "unreadable JobID 'abc'"),
    ]
    # 5001 (line 7) and 5009, whose JobName 'x|y|z' holds two pipes
    assert (report.rows, report.rejects) == (2, 9)
    assert rows(db, "SELECT job_id, job_name FROM jobs ORDER BY job_id") == [("5001", "ok"), ("5009", "x|y|z")]


def test_strict_fails_the_file(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "broken.txt", zone=ZURICH, strict=True)
    assert report.status == "failed" and "broken.txt:4:" in report.message
    assert rows(db, "SELECT count(*) FROM jobs") == [(0,)]


def test_a_job_from_another_file_is_unchanged_and_replace_works(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ingest(db, DATA / "parsable_trailing.txt", zone=ZURICH)
    again = tmp_path / "again.txt"
    again.write_text((DATA / "parsable_trailing.txt").read_text().replace("3003|idle", "3004|idle"))
    (report,) = ingest(db, again, zone=ZURICH)
    # 3001 and 3002 are stored from the first file already, identically: unchanged, not rejected
    assert (report.rows, report.rejects, report.superseded, report.unchanged) == (1, 0, 0, 2)
    assert rows(db, "SELECT job_id, file_id FROM jobs ORDER BY job_id") == [
        ("3001", 1),
        ("3002", 1),
        ("3003", 1),
        ("3004", 2),
    ]
    # taking the first file back hands the jobs the second one also holds to it
    (replaced,) = ingest(db, DATA / "parsable_trailing.txt", zone=ZURICH, replace=True)
    assert (replaced.status, replaced.rows, replaced.rejects, replaced.unchanged) == ("replaced", 1, 0, 2)
    assert rows(db, "SELECT job_id, file_id FROM jobs ORDER BY job_id") == [
        ("3001", 2),
        ("3002", 2),
        ("3003", 3),
        ("3004", 2),
    ]
    assert rows(db, "SELECT count(*) FROM attempts WHERE file_id NOT IN (2, 3)") == [(0,)]


# ---------------------------------------------------------------- scontrol show job -d


def test_scontrol_gpu_bindings(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "scontrol.txt")
    # 7001: gpu01 and gpu02 IDX 0-3, gpu03 IDX 1,3 (4 + 4 + 2); array task 7010_2: 0,2;
    # het component of 7020: 5 (the shard is no GPU); 7030 has no GPU; 7040 (GRES_IDX): 6,7
    assert (report.status, report.rows, report.rejects) == ("loaded", 15, 1)
    got = sorted(rows(db, "SELECT job_id, machine_id, gpu_index, source, origin, attempt_ref FROM gpu_bindings"))
    expected = (
        [("7001", m, i, "slurm", "scontrol", None) for m in ("gpu01", "gpu02") for i in range(4)]
        + [("7001", "gpu03", i, "slurm", "scontrol", None) for i in (1, 3)]
        + [("7010_2", "gpu04", i, "slurm", "scontrol", None) for i in (0, 2)]
        + [("7020", "gpu05", 5, "slurm", "scontrol", None)]
        + [("7040", "gpu06", i, "slurm", "scontrol", None) for i in (6, 7)]
    )
    assert got == sorted(expected)
    assert rows(db, "SELECT line, reason FROM rejects") == [(44, "unreadable Nodes or GRES: x-y")]


# ---------------------------------------------------------------- the CLI


def test_cli_truncated_fixed_width(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["ingest", str(DATA / "fixed_width_truncated.txt"), "--db", str(tmp_path / "s.duckdb")]
    )
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("gca: error:")]
    assert len(errors) == 1 and "fixed_width_truncated.txt:5: sacct cut the State field" in errors[0]
    assert "Traceback" not in result.output + result.stderr


def test_cli_headerless_needs_columns(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    result = CliRunner().invoke(app, ["ingest", str(DATA / "noheader.txt"), "--db", db])
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("gca: error:")]
    assert len(errors) == 1 and "without a header line" in errors[0] and "--columns" in errors[0]
    ok = CliRunner().invoke(
        app,
        [
            "ingest",
            str(DATA / "noheader.txt"),
            "--db",
            db,
            "--tz",
            "UTC",
            "--columns",
            "JobID,User,Account,State,ExitCode,Submit,Start,End,AllocTRES,NodeList",
        ],
    )
    assert ok.exit_code == 0, ok.stderr
    assert rows(Path(db), "SELECT count(*) FROM jobs") == [(2,)]


def test_a_dump_without_end_or_alloctres_loads_with_one_warning_naming_what_to_add(tmp_path: Path) -> None:
    """sacct without AllocTRES or End loaded with exit 0 and no warning (only the report's
    data-quality table said it)."""
    dump = tmp_path / "sacct_short.txt"
    dump.write_text("JobID|User|State|Submit|Start\n12001|u1|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:05:00\n")
    db = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(dump), "--tz", "UTC", "--db", str(db)])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("gca: warning:")]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith(
        f"gca: warning: {dump}: the sacct dump has no End, AllocTRES columns, so when runs ended"
        " and the GPUs runs held are unknown; add End,AllocTRES to sacct --format (e.g. --format "
    )
    suggested = warnings[0].rsplit("--format ", 1)[1].rstrip(")").split(",")
    assert {"Start", "End", "AllocTRES", "JobID", "State"} <= set(suggested)
    assert rows(db, "SELECT job_id, start_at, end_at FROM attempts") == [("12001", datetime(2024, 6, 1, 10, 5), None)]


def test_which_columns_the_missing_column_warning_names(tmp_path: Path) -> None:
    # the old sacct's AllocGRES stands for AllocTRES; a second dump under a header without Start counts too
    old = tmp_path / "old_sacct.txt"
    old.write_text(
        "JobID|State|Submit|Start|End|AllocGRES\n"
        "12002|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:05:00|2024-06-01T11:00:00|gpu:2\n"
        "JobID|State|Submit|End|AllocGRES\n"
        "12003|COMPLETED|2024-06-01T10:00:00|2024-06-01T11:00:00|gpu:1\n"
    )
    whole = tmp_path / "whole.txt"
    whole.write_text(
        "JobID|State|Submit|Start|End|AllocTRES\n"
        "12004|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:05:00|2024-06-01T11:00:00|gres/gpu=1\n"
    )
    reports = ingest(tmp_path / "s.duckdb", old, whole, zone="UTC")
    assert [(r.path.name, r.status) for r in reports] == [("old_sacct.txt", "loaded"), ("whole.txt", "loaded")]
    assert [len(r.warnings) for r in reports] == [1, 0]
    assert (
        reports[0]
        .warnings[0]
        .startswith(f"{old}: the sacct dump has no Start column, so when runs started is unknown; add Start to")
    )


def test_other_delimiter_and_repeated_step(tmp_path: Path) -> None:
    # sacct -p --delimiter=';': the header says which character separates the fields
    path = tmp_path / "sacct_semicolon.txt"
    path.write_text(
        "JobID;State;ExitCode;Submit;Start;End;AllocTRES;NodeList;\n"
        "10001;COMPLETED;0:0;2024-06-01T10:00:00;2024-06-01T10:00:00;2024-06-01T10:10:00;cpu=1,gres/gpu=1;gpu70;\n"
        "10001.batch;COMPLETED;0:0;2024-06-01T10:00:00;2024-06-01T10:00:00;2024-06-01T10:10:00;cpu=1;gpu70;\n"
        "10001.batch;COMPLETED;0:0;2024-06-01T10:00:00;2024-06-01T10:00:00;2024-06-01T10:10:00;cpu=1;gpu70;\n"
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC")
    assert (report.format, report.rows, report.rejects) == ("slurm_sacct", 1, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [(4, "duplicate of line 3 (same step of the same run)")]
    assert rows(db, "SELECT job_id, j.status, start_at, num_gpus FROM jobs j JOIN attempts USING (job_id)") == [
        ("10001", "passed", datetime(2024, 6, 1, 10, 0), 1.0)
    ]


def test_scontrol_one_line_per_job(tmp_path: Path) -> None:
    # scontrol -o show job -d: the node groups are inline; 7102 is pending (no node group)
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "scontrol_oneliner.txt")
    assert (report.format, report.rows, report.rejects) == ("slurm_scontrol", 3, 0)
    assert rows(db, "SELECT job_id, machine_id, gpu_index FROM gpu_bindings ORDER BY ALL") == [
        ("7101", "gpu10", 0),
        ("7101", "gpu10", 1),
        ("7101", "gpu11", 7),
    ]


def test_scontrol_gpu_index_past_the_bound_is_rejected(tmp_path: Path) -> None:
    """Issue #26: `IDX:0-99999999` made a hundred million bindings (and an index past SMALLINT
    crashed the write); a node group naming a GPU index at or past the bound is rejected."""
    path = tmp_path / "scontrol.txt"
    path.write_text(
        "JobId=7201 JobState=RUNNING Nodes=gpu10 CPU_IDs=0-7 Mem=32000 GRES=gpu:2(IDX:0-1)"
        " Nodes=gpu11 CPU_IDs=0-7 Mem=32000 GRES=gpu:1(IDX:7)\n"
        "JobId=7202 JobState=RUNNING Nodes=gpu12 CPU_IDs=0-7 Mem=32000 GRES=gpu:4(IDX:0-99999999)\n"
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, format_name="slurm_scontrol")
    assert (report.rows, report.rejects) == (3, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [
        (2, "GPU index 99999999: over the bound of 1,024 GPUs per node (--max-gpus-per-node)")
    ]
    assert rows(db, "SELECT job_id, machine_id, gpu_index FROM gpu_bindings ORDER BY ALL") == [
        ("7201", "gpu10", 0),
        ("7201", "gpu10", 1),
        ("7201", "gpu11", 7),
    ]
    (report,) = ingest(tmp_path / "b.duckdb", path, format_name="slurm_scontrol", max_gpus_per_node=4)
    assert (report.rows, report.rejects) == (2, 2)  # gpu11's index 7 is past a bound of 4 too


def test_messages_of_sacct_are_recorded_not_read(tmp_path: Path) -> None:
    path = tmp_path / "sacct_with_stderr.txt"
    path.write_text(
        "sacct: error: slurmdbd: Getting response to message type: DBD_GET_JOBS_COND\n"
        "JobID|State|Start|End\n"
        "11001|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:10:00\n"
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC", format_name="slurm_sacct")
    assert (report.status, report.rows, report.rejects) == ("loaded", 1, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [(1, "a message of sacct, not a row")]


def test_scontrol_bindings_meet_sacct_jobs(tmp_path: Path) -> None:
    # The ids scontrol prints (JobId 1011 = array task 1010_1) become the ids sacct uses.
    snapshot = tmp_path / "scontrol_1001.txt"
    snapshot.write_text(
        "JobId=1001 JobName=train_resnet\n"
        "     Nodes=gpu01 CPU_IDs=0-31 Mem=256000 GRES=gpu:a100:4(IDX:0-3)\n\n"
        "JobId=1011 ArrayJobId=1010 ArrayTaskId=1 JobName=array\n"
        "     Nodes=gpu01 CPU_IDs=0-7 Mem=32000 GRES=gpu:1(IDX:5)\n"
    )
    db = tmp_path / "s.duckdb"
    ingest(db, DATA / "parsable2.txt", snapshot, zone=ZURICH)
    with prepared_store(db) as con:
        got = con.execute(
            "SELECT job_id, attribution, machine_id, gpu_index FROM attempt_attribution"
            " WHERE job_id IN ('1001', '1010_1') ORDER BY ALL"
        ).fetchall()
    assert got == [("1001", "scontrol", "gpu01", i) for i in range(4)] + [("1010_1", "scontrol", "gpu01", 5)]


def test_fixed_width_without_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sacct_n.txt"
    path.write_text("".join((DATA / "fixed_width.txt").read_text().splitlines(keepends=True)[2:]))
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, format_name="slurm_sacct", columns=("JobID", "JobName", "State"))
    assert report.status == "failed"
    assert "sacct_n.txt:1: sacct output without a delimiter that splits it into the 3" in report.message


def test_a_pending_jobs_forecast_start_is_no_start(tmp_path: Path) -> None:
    path = tmp_path / "sacct_forecast.txt"
    path.write_text(
        "JobID|State|Submit|Start|End|ReqTRES\n"
        "12001|PENDING|2024-06-01T10:00:00|2024-06-01T18:00:00|Unknown|cpu=8,gres/gpu=4\n"
    )
    db = tmp_path / "s.duckdb"
    ingest(db, path, zone="UTC")
    # the forecast is no start, and a job that never started has no attempt
    assert rows(db, "SELECT count(*) FROM attempts") == [(0,)]
    assert rows(db, "SELECT status, requested_gpus FROM jobs") == [("pending", 4.0)]


# ---------------------------------------------------------------- real outputs (tests/data/slurm/SOURCES.md)


def test_real_sonar_dump_without_header(tmp_path: Path) -> None:
    # NordicHPC/sonar's sacct -aP --noheader, 32 fields (SONAR_COLUMNS, which gca knows: no --columns
    # needed), read in Oslo (CET, UTC+1 in November)
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "real_sonar_noheader.txt", zone="Europe/Oslo")
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 0)
    got = jobs_csv(db)
    # 973997: FAILED 1:0 (step .0 OUT_OF_MEMORY); submit 09:32:55, start 12:27:39, end 13:07:46 local
    # -> queue 2:54:44 = 10484 s, run 40:07 = 2407 s (sacct's own ElapsedRaw); no GPU in its TRES
    j = got["973997"]
    assert (j["status"], j["user"], j["vc"], j["submit_time"], j["queue_delay_s"], j["run_time_s"], j["num_gpus"]) == (
        "failed",
        "ec-aaaaa",
        "ec85",
        "2024-11-13T08:32:55Z",
        10484,
        2407,
        0,
    )
    # 974724: one GPU on gpu-10 for 13:02:56 -> 13:06:50 = 234 s; waited 12:37:07 -> 13:02:56 = 1549 s
    j = got["974724"]
    assert (j["status"], j["num_gpus"], j["run_time_s"], j["gpu_time_s"], j["queue_delay_s"]) == (
        "passed",
        1,
        234,
        234,
        1549,
    )
    # TimelimitRaw is minutes: 400 min and 22 min
    assert sorted(rows(db, "SELECT job_id, time_limit_s, job_name, partition FROM jobs")) == [
        ("973997", 400 * 60, "command", "normal"),
        ("974724", 22 * 60, "nsk-transcription-job", "mig"),
    ]


def test_real_sacct_default_output_is_refused_naming_the_format_gca_needs(tmp_path: Path) -> None:
    # maestrowf's `sacct` with its default columns (and `hello_wor+`, `6564055.bat+` cut short):
    # no time, no GPUs, no nodes, no usage: nothing gca could tell of its jobs (issue #29). Not
    # recognized as a dump gca can use, saying why; forced, the reader refuses it the same way.
    path = DATA / "real_fixed_maestro.txt"
    with pytest.raises(InputError, match=r"no time, GPU, node or usage column, so not a sacct dump gca can use"):
        ingest(tmp_path / "s.duckdb", path, zone="UTC")
    (report,) = ingest(tmp_path / "s.duckdb", path, zone="UTC", format_name="slurm_sacct")
    assert report.status == "failed"
    assert report.message == (
        f"{DATA / 'real_fixed_maestro.txt'}:1: sacct output without a time, GPU, node or usage column (JobID, "
        "JobName, Partition, Account, AllocCPUS, State, ExitCode): gca cannot tell when its jobs ran, where, nor "
        "on how many GPUs (dump it with sacct -a -D -P --format JobID,JobName,User,Account,Partition,QOS,State,"
        "ExitCode,Submit,Eligible,Start,End,Timelimit,NNodes,ReqTRES,AllocTRES,NodeList)"
    )


def test_real_fixed_width_without_times(tmp_path: Path) -> None:
    # soperator's sacct --format=JobID,JobName,AllocCPUS,MaxRSS,MaxVMSize,TotalCPU,State: step 19.0 came
    # without its allocation row; 20 and 21 FAILED, 22 COMPLETED; no times, so no runs
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "real_fixed_soperator.txt", zone="UTC")
    assert (report.status, report.rows, report.rejects) == ("loaded", 3, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [(3, "step of job 19 without its allocation row above it")]
    assert rows(db, "SELECT job_id, status, submit_at, job_name FROM jobs ORDER BY job_id") == [
        ("20", "failed", None, "sleep"),
        ("21", "failed", None, "sleep"),
        ("22", "passed", None, "sleep"),
    ]
    assert rows(db, "SELECT count(*) FROM attempts WHERE start_at IS NOT NULL") == [(0,)]


def test_real_alloctres_without_state_is_refused(tmp_path: Path) -> None:
    # slurm-mail's `sacct --fields JobID,AllocTRES -P`: without State there is no outcome to store;
    # not recognized as sacct (a folder skips it saying why), and refused by the reader when forced
    path = DATA / "real_alloctres_only.txt"
    with pytest.raises(
        InputError, match=r"real_alloctres_only.txt: columns JobID, AllocTRES: a JobID column but no State"
    ):
        ingest(tmp_path / "s.duckdb", path, zone="UTC")
    (report,) = ingest(tmp_path / "s.duckdb", path, zone="UTC", format_name="slurm_sacct")
    assert report.status == "failed"
    assert report.message.startswith(f"{path}:1: the sacct columns lack JobID or State")
    # its MIG and H100 TRES are read right: one GPU each, the slice type kept as the model
    mig = parse_tres("billing=64,cpu=9,gres/cpu=9,gres/gpu:a100_3g.20gb=1,gres/gpu=1,mem=60G,node=1")
    assert mig is not None and (mig.gpus, mig.model, mig.nodes) == (1, "a100_3g.20gb", 1)


# ---------------------------------------------------------------- hostile input


def test_hostile_rows(tmp_path: Path) -> None:
    # Read in New York: EST = UTC-5 until 2024-03-10 02:00 (clocks jump to 03:00 EDT = UTC-4),
    # EDT until 2024-11-03 02:00 (clocks fall back to 01:00 EST).
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "hostile.txt", zone="America/New_York")
    assert (report.status, report.rows, report.rejects) == ("loaded", 7, 7)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (2, "End 2024-01-01 09:00:00 is before Start 2024-01-01 10:00:00 (times out of order)"),
        (3, "Start 2024-01-01 09:00:00 is before Submit 2024-01-01 10:00:00 (times out of order)"),
        # the zone rules gca knows end in 2059: a later time would get a wrong offset
        (5, "End 2100-07-01T11:00:00 is outside the years gca reads (1990-2059)"),
        (7, "unreadable AllocTRES item 'gres/gpu:tesla:2(S:0-1)=2'"),  # GRES syntax where TRES belongs
        (9, "unreadable Timelimit '-00:05:00'"),
        (13, "a message of sacct, not a row"),
        (15, "6 fields where the header has 10"),  # the cut last line
    ]
    got = {
        r[0]: r[1:]
        for r in rows(
            db,
            """
        SELECT j.job_id, j.submit_at, a.start_at, a.end_at, a.num_gpus
        FROM jobs j JOIN attempts a USING (job_id)""",
        )
    }
    assert got == {
        # 1969-12-31T19:00 in New York is time 0, Slurm's "unset": no submit time
        "3003": (None, datetime(2024, 1, 1, 14), datetime(2024, 1, 1, 16), 1.0),
        "3005": (datetime(2024, 1, 1, 15), datetime(2024, 1, 1, 15), datetime(2024, 1, 1, 16), 0.0),  # gres/gpu=0
        # SLURM_TIME_FORMAT=%s: 1704103200 = 2024-01-01 00:00 UTC (1704067200) + 10 h, UTC whatever --tz says
        "3007": (datetime(2024, 1, 1, 10), datetime(2024, 1, 1, 10), datetime(2024, 1, 1, 11), 1.0),
        # 02:30 does not exist on 2024-03-10: moved forward (read at EST) -> 07:30; 04:00 EDT -> 08:00
        "3009": (datetime(2024, 3, 10, 7, 30), datetime(2024, 3, 10, 7, 30), datetime(2024, 3, 10, 8), 1.0),
        "3010": (datetime(2024, 1, 1, 15), datetime(2024, 1, 1, 15), datetime(2024, 1, 1, 16), 1.0),
        "3011": (datetime(2024, 1, 1, 15), datetime(2024, 1, 1, 15), datetime(2024, 1, 1, 16), 1.0),
        # 01:40 and 01:50 EDT (first occurrences, -> 05:40, 05:50); End 01:10 only follows its Start
        # as the second occurrence, 01:10 EST -> 06:10: a 20-minute run across the fall-back
        "3012": (datetime(2024, 11, 3, 5, 40), datetime(2024, 11, 3, 5, 50), datetime(2024, 11, 3, 6, 10), 1.0),
    }
    names = dict(rows(db, "SELECT job_id, job_name FROM jobs WHERE job_id IN ('3010', '3011')"))
    assert names == {"3010": "x" * 200 + "|" + "y" * 200, "3011": "café"}  # a Latin-1 byte read as Latin-1
    assert jobs_csv(db)["3012"]["run_time_s"] == 20 * 60


@pytest.mark.parametrize(
    ("content", "expected_jobs"),
    [
        (b"JobID|State|Start|End\r\n5001|COMPLETED|2024-01-01T10:00:00|2024-01-01T11:00:00\r\n", 1),  # CRLF
        (b"\xef\xbb\xbfJobID|State|Start|End\n5001|COMPLETED|2024-01-01T10:00:00|2024-01-01T11:00:00\n", 1),  # BOM
        (b"JobID|State|Start|End\n", 0),  # header only: nothing to store, nothing wrong
    ],
)
def test_line_ends_and_byte_order_marks(tmp_path: Path, content: bytes, expected_jobs: int) -> None:
    path = tmp_path / "sacct.txt"
    path.write_bytes(content)
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC")
    assert (report.format, report.status, report.rows, report.rejects) == ("slurm_sacct", "loaded", expected_jobs, 0)
    if expected_jobs:
        assert rows(db, "SELECT start_at, end_at FROM attempts") == [
            (datetime(2024, 1, 1, 10), datetime(2024, 1, 1, 11))
        ]


@pytest.mark.parametrize(
    ("content", "fmt", "message"),
    [
        (b"", "slurm_sacct", "sacct.txt: no sacct header or data lines (expected sacct output)"),
        (
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03",
            "slurm_sacct",  # gzip bytes in a file not named .gz
            "sacct.txt:1: binary data, not Slurm's text output (give gca the text sacct or scontrol printed)",
        ),
        (
            "JobID|State\n1|COMPLETED\n".encode("utf-16"),
            "slurm_sacct",
            "sacct.txt:1: UTF-16 text (as Windows PowerShell saves command output)"
            " (convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 sacct.txt)",
        ),
        (
            b"\x00\x01\x02garbage\n",
            "slurm_scontrol",
            "sacct.txt:1: binary data, not Slurm's text output (give gca the text sacct or scontrol printed)",
        ),
    ],
)
def test_files_that_are_not_slurm_text_fail_with_one_line(
    tmp_path: Path, content: bytes, fmt: str, message: str
) -> None:
    path = tmp_path / "sacct.txt"
    path.write_bytes(content)
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC", format_name=fmt)
    assert report.status == "failed" and report.message == f"{tmp_path}/{message}"
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(0,)]  # nothing stored


def test_cli_hostile_files_never_trace_back(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(bytes(range(256)) * 4)
    for path, fmt in (
        (DATA / "hostile.txt", []),
        (garbage, ["--format", "slurm_sacct"]),
        (DATA / "real_fixed_maestro.txt", []),
    ):
        result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(tmp_path / "s.duckdb"), "--tz", "UTC", *fmt])
        assert "Traceback" not in result.output + result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("gca: error:")]
        assert result.exit_code == (0 if path.name == "hostile.txt" else 2) and len(errors) == (
            0 if result.exit_code == 0 else 1
        )


def test_scontrol_versions(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "scontrol_versions.txt")
    # 81 (17.11-style GRES_IDX=gpu(IDX:1,3)): 1, 3; array task 88_2 on gpu[08-09], 2 GPUs each
    # (IDX:0-1): 4 bindings; het component of 94: IDX 5 and 7; 96: a GPU and a shard (no GPU);
    # 97: MPS only, gpu:0(IDX:N/A): none; 37671 (-o, CPU_IDs with a comma): gpu1 and gpu2, IDX 2-3
    # each; 37680 (GRES_IDX= empty, a hostlist with a comma inside brackets): no GPU
    assert (report.status, report.rows, report.rejects) == ("loaded", 13, 0)
    assert rows(db, "SELECT job_id, machine_id, gpu_index FROM gpu_bindings ORDER BY ALL") == [
        ("37671", "gpu1", 2),
        ("37671", "gpu1", 3),
        ("37671", "gpu2", 2),
        ("37671", "gpu2", 3),
        ("81", "gpu07", 1),
        ("81", "gpu07", 3),
        ("88_2", "gpu08", 0),
        ("88_2", "gpu08", 1),
        ("88_2", "gpu09", 0),
        ("88_2", "gpu09", 1),
        ("94", "gpu10", 5),
        ("94", "gpu10", 7),
        ("96", "gpu11", 0),
    ]


def test_real_scontrol_of_a_job_without_gpus(tmp_path: Path) -> None:
    # CEA's job epilogue prints `scontrol show job -d`: a running CPU job, JOB_GRES=(null),
    # its node line with an empty GRES=. It is -d output (the node line is there), so it loads, binding nothing.
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "real_scontrol_cea.txt")
    assert (report.format, report.status, report.rows, report.rejects) == ("slurm_scontrol", "loaded", 0, 0)


def test_scontrol_without_d_is_refused(tmp_path: Path) -> None:
    (report,) = ingest(tmp_path / "s.duckdb", DATA / "scontrol_without_d.txt")
    assert report.status == "failed"
    assert report.message == (
        f"{DATA / 'scontrol_without_d.txt'}:2: a running job without its per-node lines (Nodes=... "
        "CPU_IDs=... GRES=...):"
        " this is `scontrol show job` without -d, which does not say which GPUs a job holds"
        " (save `scontrol show job -d` (or -d -o) instead)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1704103200", "@2024-01-01 10:00:00"),  # SLURM_TIME_FORMAT=%s
        ("0", None),  # time 0: unset
        ("2024-01-01T10:00:00", "2024-01-01 10:00:00"),
        ("Unknown", None),
        ("None", None),
    ],
)
def test_times(text: str, expected: str | None) -> None:
    assert parse_time(text, "America/New_York") == expected


@pytest.mark.parametrize(
    "text", ["Tue 10:00", "2024-02-30T10:00:00", "2024-01-01", "12 Jan 09:00", "99999999999999999999", "\u00b2"]
)
def test_times_that_are_not(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time(text, "UTC")


def test_real_duplicates_without_times_are_runs(tmp_path: Path) -> None:
    # reportseff's `sacct -D -P -n` of a job requeued again and again (troycomi/reportseff issue #25),
    # its fields in alphabetical order. Without Submit or Start nothing tells a requeued run from a
    # repeated row, so each allocation row is a run as sacct -D prints it: three runs, none with a
    # start time; the last was requeued, so the job waits again.
    db = tmp_path / "s.duckdb"
    columns = (
        "AdminComment",
        "AllocCPUS",
        "Elapsed",
        "JobID",
        "JobIDRaw",
        "MaxRSS",
        "NNodes",
        "REQMEM",
        "State",
        "Timelimit",
        "TotalCPU",
    )
    (report,) = ingest(db, DATA / "real_reportseff_duplicates.txt", zone="UTC", columns=columns)
    assert (report.status, report.rows, report.rejects) == ("loaded", 1, 0)
    assert rows(db, "SELECT job_id, status, source_status, time_limit_s FROM jobs") == [
        ("235929", "pending", "REQUEUED", 7200)
    ]
    assert rows(db, "SELECT attempt_no, source_index, source_status, start_at FROM attempts ORDER BY attempt_no") == [
        (0, 0, "REQUEUED", None),
        (1, 1, "REQUEUED", None),
        (2, 2, "REQUEUED", None),
    ]


def test_sacct_json_is_recognized_and_refused(tmp_path: Path) -> None:
    # sacct --json (Slurm 23.02 layout, data_parser v0.0.40): gca reads -P text, and says so
    path = tmp_path / "sacct.json"
    path.write_text(
        '{\n  "meta": {\n    "plugin": {\n      "type": "",\n      "name": "",\n'
        '      "data_parser": "data_parser/v0.0.40"\n    },\n    "command": [\n      "sacct",\n      "--json"\n'
        '    ]\n  },\n  "jobs": [\n  ]\n}\n'
    )
    assert detect_format(path, read_head(path)).name == "slurm_sacct"
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(tmp_path / "s.duckdb")])
    assert result.exit_code == 2 and "Traceback" not in result.output + result.stderr
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("gca: error:")]
    assert error.startswith(
        f"gca: error: {path}:1: Slurm's JSON output (sacct --json or scontrol --json), which gca does not read"
        " (export with sacct -P"
    )


def _mutations(data: bytes, seed: int) -> bytes:
    """Damage a file the ways real files get damaged: cut, spliced, bytes flipped, lines repeated or shuffled."""
    import random

    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(max(len(out), 1))
        kind = rng.randrange(6)
        if kind == 0:
            del out[i:]
        elif kind == 1:
            out[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif kind == 2 and out:
            out[i] = rng.choice(b"|,:-[]()=+_ \n\t0123456789")
        elif kind == 3:
            lines = bytes(out).split(b"\n")
            lines.insert(rng.randrange(len(lines)), rng.choice(lines))
            out = bytearray(b"\n".join(lines))
        elif kind == 4:
            out[i:i] = rng.choice(
                [b"Unknown", b"None assigned", b"1969-12-31T19:00:00", b"gres/gpu=", b"(IDX:", b"\xe9", b"+"]
            )
        else:
            out = bytearray(bytes(out).replace(b"\n", b"\r\n"))
    return bytes(out)


@pytest.mark.parametrize("seed", keep_by_default(range(24), range(8)))
def test_damaged_files_load_or_fail_in_one_line_and_store_no_impossible_times(tmp_path: Path, seed: int) -> None:
    sources = [
        "parsable2.txt",
        "requeue.txt",
        "fixed_width.txt",
        "hostile.txt",
        "scontrol.txt",
        "scontrol_versions.txt",
    ]
    source = DATA / sources[seed % len(sources)]
    path = tmp_path / source.name
    path.write_bytes(_mutations(source.read_bytes(), seed))
    db = tmp_path / "s.duckdb"
    fmt = "slurm_scontrol" if source.name.startswith("scontrol") else "slurm_sacct"
    (report,) = ingest(db, path, zone="America/New_York", format_name=fmt)
    if report.status == "failed":
        assert isinstance(report.error, ParseError) and "\n" not in report.message  # never a DuckDB error
        assert report.message.startswith(str(path))
        return
    assert report.status == "loaded"
    # whatever was stored is believable: no run ends before it starts or starts before its submission
    assert rows(
        db,
        """SELECT count(*) FROM jobs j JOIN attempts a USING (source, job_id)
                       WHERE a.end_at < a.start_at OR a.start_at < j.submit_at OR a.num_gpus < 0""",
    ) == [(0,)]


def test_a_dump_whose_tres_never_names_a_gpu_leaves_gpus_unknown(tmp_path: Path) -> None:
    # A site without gres/gpu in AccountingStorageTRES: no row's TRES names a GPU, so "no GPU key"
    # says nothing about the GPUs a job had; 0 would be a wrong number, NULL is the truth.
    path = tmp_path / "sacct.txt"
    path.write_text(
        "JobID|State|Start|End|AllocTRES\n"
        "13001|COMPLETED|2024-06-01T10:00:00|2024-06-01T11:00:00|billing=8,cpu=8,mem=64G,node=1\n"
    )
    db = tmp_path / "s.duckdb"
    ingest(db, path, zone="UTC")
    assert rows(db, "SELECT num_gpus, num_nodes FROM attempts") == [(None, 1)]
    # one row naming a GPU (even gres/gpu=0) shows the site accounts them: then no key is 0 GPUs
    path.write_text(
        path.read_text() + "13002|COMPLETED|2024-06-01T10:00:00|2024-06-01T11:00:00|cpu=8,gres/gpu=0,node=1\n"
    )
    (report,) = ingest(db, path, zone="UTC", replace=True)
    assert report.status == "replaced"
    assert rows(db, "SELECT job_id, num_gpus FROM attempts ORDER BY job_id") == [("13001", 0.0), ("13002", 0.0)]


def test_a_pasted_terminal_session_is_recognized(tmp_path: Path) -> None:
    # the prompt and sacct's complaint come before the header: both recorded, the rows read
    path = tmp_path / "pasted.txt"
    path.write_text(
        "[ann@login1 ~]$ sacct -P -X --format=JobID,State,Start,End\n"
        'sacct: error: Invalid field requested: "Foo"\n'
        "JobID|State|Start|End\n"
        "14001|COMPLETED|2024-06-01T10:00:00|2024-06-01T11:00:00\n"
    )
    assert detect_format(path, read_head(path)).name == "slurm_sacct"
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC")
    assert (report.status, report.rows, report.rejects) == ("loaded", 1, 2)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (1, "the shell's prompt and command, not a row"),
        (2, "a message of sacct, not a row"),
    ]
    assert rows(db, "SELECT start_at, end_at FROM attempts") == [(datetime(2024, 6, 1, 10), datetime(2024, 6, 1, 11))]


def test_scontrol_pasted_with_its_prompt(tmp_path: Path) -> None:
    path = tmp_path / "job.txt"
    path.write_text(
        "user@login:~$ scontrol show job -d 15001\n"
        "JobId=15001 JobName=x\n   JobState=RUNNING Reason=None\n"
        "     Nodes=gpu01 CPU_IDs=0-3 Mem=0 GRES=gpu:1(IDX:6)\n"
    )
    assert detect_format(path, read_head(path)).name == "slurm_scontrol"
    db = tmp_path / "s.duckdb"
    ingest(db, path)
    assert rows(db, "SELECT job_id, machine_id, gpu_index FROM gpu_bindings") == [("15001", "gpu01", 6)]


def test_fixed_width_slices_bytes_whatever_the_encoding(tmp_path: Path) -> None:
    # sacct pads fixed-width columns by bytes: a 2-byte UTF-8 letter or a 1-byte Latin-1 one
    # must not shift the columns after it
    header = b"JobID           JobName      State ExitCode               Start                 End \n"
    rule = b"------------ ---------- ---------- -------- ------------------- ------------------- \n"
    tail = b"  COMPLETED      0:0 2024-06-01T10:00:00 2024-06-01T11:00:00 \n"
    latin1 = b"16001        " + b"caf\xe9".rjust(10) + tail  # 4 bytes of name, 6 of padding
    utf8 = b"16002        " + "naïve".encode().rjust(10) + tail  # 6 bytes of name (ï is 2), 4 of padding
    path = tmp_path / "sacct.txt"
    path.write_bytes(header + rule + latin1 + utf8)
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC")
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 0)
    assert rows(
        db,
        "SELECT j.job_id, j.job_name, j.status, a.start_at, a.end_at FROM jobs j JOIN attempts a USING "
        "(job_id) ORDER BY 1",
    ) == [
        ("16001", "café", "passed", datetime(2024, 6, 1, 10), datetime(2024, 6, 1, 11)),
        ("16002", "naïve", "passed", datetime(2024, 6, 1, 10), datetime(2024, 6, 1, 11)),
    ]


def test_real_completed_allocation_with_a_cancelled_step(tmp_path: Path) -> None:
    # cluster_utils' jobs: the batch script exited 0 (COMPLETED) after its srun step was CANCELLED
    # by signal 10. A cancelled step is how Slurm tears steps down, so it does not override the
    # allocation's verdict: passed, exit 0:0; the step's signal is not the job's.
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "real_cancelled_steps.txt", zone="UTC")
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 0)
    assert rows(db, "SELECT job_id, status, exit_code, exit_signal FROM jobs ORDER BY job_id") == [
        ("239023", "passed", 0, 0),
        ("239024", "passed", 0, 0),
    ]
    assert rows(db, "SELECT DISTINCT machine_id FROM attempt_hosts") == [("galvani-cn001",)]


def test_elapsed_is_not_read_even_when_negative(tmp_path: Path) -> None:
    # sacct can print a negative Elapsed after a clock step; gca takes run times from Start and End
    path = tmp_path / "sacct.txt"
    path.write_text(
        "JobID|State|Elapsed|ElapsedRaw|Start|End\n"
        "17001|COMPLETED|-00:00:05|-5|2024-06-01T10:00:00|2024-06-01T10:30:00\n"
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC")
    assert (report.status, report.rows, report.rejects) == ("loaded", 1, 0)
    assert jobs_csv(db)["17001"]["run_time_s"] == 30 * 60


def test_columns_that_do_not_fit_the_rows_say_so(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "noheader.txt", zone="UTC", columns=("JobID", "State", "Start"))
    # no row fits: the file fails, and says why
    assert report.status == "failed"
    assert (
        "noheader.txt:1: every row was rejected, nothing stored (3 rows); the likely cause, in all:"
        " 10 fields where --columns names 3" in report.message
    )


def test_scontrol_dd_batch_script_may_hold_odd_characters(tmp_path: Path) -> None:
    # scontrol show job -dd appends the batch script: a form feed or an escape there is no binary data
    path = tmp_path / "scontrol.txt"
    path.write_bytes(
        b"JobId=18001 JobName=x\n   JobState=RUNNING Reason=None\n"
        b"     Nodes=gpu02 CPU_IDs=0-3 Mem=0 GRES=gpu:2(IDX:0-1)\n"
        b"   BatchScript=\n#!/bin/bash\necho '\x1b[31mred\x1b[0m'\n\x0c\n"
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path)
    assert (report.status, report.rows) == ("loaded", 2)
    assert rows(db, "SELECT gpu_index FROM gpu_bindings ORDER BY 1") == [(0,), (1,)]


def test_sonar_layout_is_known_and_other_headerless_dumps_still_need_columns(tmp_path: Path) -> None:
    # the same dump with explicit --columns reads the same
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "real_sonar_noheader.txt", zone="Europe/Oslo", columns=SONAR_COLUMNS)
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 0)
    # a 32-field line whose State is not a state is not sonar's: --columns is asked for
    path = tmp_path / "sacct_n.txt"
    line = (DATA / "real_sonar_noheader.txt").read_text().splitlines()[0].split("|")
    line[4] = "bogus"
    path.write_text("|".join(line) + "\n")
    (report,) = ingest(tmp_path / "t.duckdb", path, zone="UTC", format_name="slurm_sacct")
    assert report.status == "failed" and "sacct_n.txt:1: sacct output without a header line" in report.message


def test_fixed_width_that_does_not_line_up(tmp_path: Path) -> None:
    # a row re-spaced (tabs, a copy from a terminal) would be sliced into wrong fields: rejected
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "fixed_width_misaligned_row.txt", zone="UTC")
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [
        (5, "text between the fixed-width columns: the line does not line up with the header")
    ]
    # wide columns hold values with spaces: CANCELLED by 1234 (cancelled while pending), None assigned
    assert rows(
        db,
        "SELECT j.job_id, j.status, j.cancelled_by, a.start_at, coalesce(a.end_at, j.left_queue_at)"
        " FROM jobs j LEFT JOIN attempts a USING (job_id) ORDER BY 1",
    ) == [
        ("19001", "killed", "1234", None, datetime(2024, 6, 1, 10, 5)),  # cancelled while pending: no attempt
        ("19002", "passed", None, datetime(2024, 6, 1, 10, 1), datetime(2024, 6, 1, 10, 31)),
    ]
    # a header whose names stick out of the dashes: every slice would be wrong, the file is refused
    path = tmp_path / "sacct.txt"
    lines = (DATA / "fixed_width_misaligned_row.txt").read_text().splitlines(keepends=True)
    path.write_text("   " + lines[0] + "".join(lines[1:]))  # right-aligned names pushed past their dashes
    (report,) = ingest(tmp_path / "t.duckdb", path, zone="UTC")
    assert report.status == "failed"
    assert report.message == (
        f"{path}:1: the fixed-width header does not line up with the dashed rule under it"
        " (spaces changed, e.g. by a copy from a terminal or tabs) (export with sacct --parsable2 (-P))"
    )


def test_a_dump_of_several_clusters_keeps_their_jobs_apart(tmp_path: Path) -> None:
    # sacct -M all: the same job id in two clusters is two jobs, not one requeued twice
    path = tmp_path / "sacct.txt"
    path.write_text(
        "Cluster|JobID|State|Submit|Start|End|AllocTRES\n"
        "alpha|20001|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:00:00|2024-06-01T11:00:00|gres/gpu=1\n"
        "alpha|20001.batch|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:00:00|2024-06-01T11:00:00|gres/gpu=1\n"
        "beta|20001|FAILED|2024-06-02T10:00:00|2024-06-02T10:00:00|2024-06-02T10:10:00|gres/gpu=2\n"
        "beta|20001.0|FAILED|2024-06-02T10:00:00|2024-06-02T10:00:00|2024-06-02T10:10:00|gres/gpu=2\n"
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC")
    assert (report.status, report.rows, report.rejects) == ("loaded", 2, 0)
    assert rows(db, "SELECT j.job_id, j.status, a.num_gpus FROM jobs j JOIN attempts a USING (job_id) ORDER BY 1") == [
        ("alpha/20001", "passed", 1.0),
        ("beta/20001", "failed", 2.0),
    ]
    # one cluster's dump keeps sacct's ids (its slurm-<jobid>.out logs and scontrol use them)
    one = tmp_path / "sacct_alpha.txt"
    one.write_text("".join(path.read_text().splitlines(keepends=True)[:3]))
    ingest(tmp_path / "t.duckdb", one, zone="UTC")
    assert rows(tmp_path / "t.duckdb", "SELECT job_id FROM jobs") == [("20001",)]


def test_a_store_with_only_sacct_knows_its_machines(tmp_path: Path) -> None:
    # issue 15: each host of a run is an observed machine, with the most GPUs a run held there
    # (a run's GPUs divided evenly over its hosts)
    path = tmp_path / "sacct.txt"
    path.write_text(
        "JobID|State|Submit|Start|End|NNodes|AllocTRES|NodeList\n"
        "1|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:00:00|2024-06-01T11:00:00|2|cpu=8,gres/gpu=16|gpu[01-02]\n"
        "2|COMPLETED|2024-06-01T10:00:00|2024-06-01T10:00:00|2024-06-01T11:00:00|1|cpu=8,gres/gpu=4|gpu03\n"
        "3|COMPLETED|2024-06-01T12:00:00|2024-06-01T12:00:00|2024-06-01T13:00:00|1|cpu=8,gres/gpu=2|gpu03\n"
        "4|COMPLETED|2024-06-01T12:00:00|2024-06-01T12:00:00|2024-06-01T13:00:00|2|cpu=8,gres/gpu=3|gpu[03-04]\n"
    )
    db = tmp_path / "s.duckdb"
    ingest(db, path, zone="UTC")
    # gpu01, gpu02: 8 each; gpu03: 4 (job 2); gpu04: 3 GPUs over 2 hosts do not divide: unknown
    assert rows(db, "SELECT machine_id, listed_gpus, observed_gpus, gpus FROM machine_capacity ORDER BY 1") == [
        ("gpu01", None, 8, 8),
        ("gpu02", None, 8, 8),
        ("gpu03", None, 4, 4),
        ("gpu04", None, None, 0),
    ]


def test_a_nodelist_naming_a_host_twice_names_it_once(tmp_path: Path) -> None:
    """A job's GPUs are spread evenly over its NodeList's hosts, each host once however often it
    is named (by hand: 8 GPUs on gpu1,gpu1 are 8 on gpu1; 6 on gpu[1-2],gpu1 are 3 on each), one
    attempt_hosts row per host."""
    dump = tmp_path / "sacct.txt"
    dump.write_text(
        "JobID|State|ExitCode|Submit|Start|End|AllocTRES|NodeList\n"
        "1|COMPLETED|0:0|2024-07-01T10:00:00|2024-07-01T10:05:00|2024-07-01T11:00:00|cpu=1,gres/gpu=8,node=1|gpu1,gpu1\n"
        "2|COMPLETED|0:0|2024-07-01T10:00:00|2024-07-01T10:05:00|2024-07-01T11:00:00|cpu=1,gres/gpu=6,node=2|gpu[1-2],gpu1\n"
        "3|COMPLETED|0:0|2024-07-01T10:00:00|2024-07-01T10:05:00|2024-07-01T11:00:00|cpu=1,gres/gpu=4,node=2|gpu[3-4]\n"
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, dump, zone="UTC")
    assert report.status == "loaded" and report.rejects == 0
    assert rows(db, "SELECT job_id, machine_id, gpus FROM attempt_hosts ORDER BY job_id, machine_id") == [
        ("1", "gpu1", 8),
        ("2", "gpu1", 3),
        ("2", "gpu2", 3),
        ("3", "gpu3", 2),
        ("3", "gpu4", 2),
    ]


def test_the_sacct_reader_keeps_its_own_arrow_pool_and_gives_the_default_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sacct reader allocates from an Arrow pool that reuses freed pages (jemalloc, else the
    C library's), not from the default one; the default is the default again after the file,
    loaded or failed (a binary line fails it in the middle of reading)."""
    import pyarrow as pa

    from gpucluster_analysis.ingest.slurm import sacct

    seen: list[str] = []
    real = sacct._stage_and_store

    def spy(*args, **kwargs):
        seen.append(pa.default_memory_pool().backend_name)
        return real(*args, **kwargs)

    monkeypatch.setattr(sacct, "_stage_and_store", spy)
    before = pa.default_memory_pool().backend_name
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    header = "JobID|State|ExitCode|Submit|Start|End|AllocTRES|NodeList\n"
    row = "1|COMPLETED|0:0|2024-07-01T10:00:00|2024-07-01T10:05:00|2024-07-01T11:00:00|cpu=1,gres/gpu=8,node=1|gpu1\n"
    good.write_text(header + row)
    bad.write_text(header + row + "2|COMPLET\x01ED|0:0\n")
    (loaded,) = ingest(tmp_path / "a.duckdb", good, zone="UTC")
    assert loaded.status == "loaded"
    assert pa.default_memory_pool().backend_name == before
    (failed,) = ingest(tmp_path / "b.duckdb", bad, zone="UTC")
    assert failed.status == "failed" and "binary data" in failed.message, failed.message
    assert pa.default_memory_pool().backend_name == before
    assert len(seen) == 2 and set(seen) <= {"jemalloc", "system"}


# ---------------------------------------------------------------- sanity bounds (issue #26)

SANE_HEADER = (
    "JobID|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Timelimit|NNodes|"
    "ReqTRES|AllocTRES|NodeList"
)


def _sacct_row(
    job: str,
    state: str,
    submit: str,
    start: str,
    end: str,
    nodes: int | str,
    gpus: int | str,
    hosts: str,
    alloc: bool = True,
    requested: int | None = None,
) -> str:
    """One allocation row (times UTC, `...T` omitted: '2024-01-01 10:00' -> 2024-01-01T10:00:00)."""

    def t(text: str) -> str:
        return text.replace(" ", "T") + ":00" if text != "Unknown" else text

    tres = f"billing=1,cpu=4,gres/gpu={gpus},node={nodes}"
    request = tres if requested is None else f"billing=1,cpu=4,gres/gpu={requested},node={nodes}"
    return "|".join(
        [
            job,
            "train",
            "ann",
            "vc1",
            "gpu",
            state,
            "0:0",
            t(submit),
            t(submit),
            t(start),
            t(end),
            "1-00:00:00",
            str(nodes),
            request,
            tres if alloc else "",
            hosts,
        ]
    )


def _step(job: str, start: str, end: str, host: str) -> str:
    s, e = start.replace(" ", "T") + ":00", end.replace(" ", "T") + ":00"
    return f"{job}.batch|batch|||gpu|COMPLETED|0:0|{s}|{s}|{s}|{e}||1||cpu=4,node=1|{host}"


# (job id, submit, start, end, nodes, GPUs, hosts): what a report on the store should count
SANE_RUNS = [
    ("100", "2024-01-01 10:00", "2024-01-01 10:10", "2024-01-01 12:10", 1, 2, "g01"),
    ("102", "2024-01-01 10:00", "2024-01-01 10:30", "2024-01-01 11:30", 1, 8, "g03"),
    ("103", "2024-01-01 09:00", "2024-01-01 09:00", "2024-01-01 10:00", 2, 16, "g[04-05]"),
]


def test_absurd_gpu_and_node_counts_reject_their_job_whole_and_the_headline_is_the_sane_jobs(tmp_path: Path) -> None:
    """Issue #26, item 4: `gres/gpu=1000000000` in one sacct row gave "1,000,000,008 GPUs,
    153,611,201 GPU-hours". Reproduction:

        printf 'JobID|State|Submit|Start|End|NNodes|AllocTRES|NodeList\\n'\\
        'a|COMPLETED|2024-01-01T10:00:00|2024-01-01T10:00:00|2024-01-01T11:00:00|1|gres/gpu=8|g01\\n'\\
        'b|COMPLETED|2024-01-01T10:00:00|2024-01-01T10:00:00|2024-01-01T11:00:00|1|'\\
        'gres/gpu=1000000000|g02\\n' > sacct.txt
        gca ingest sacct.txt --db s.duckdb --tz UTC && gca report --db s.duckdb --out r --json

    Now a row naming more GPUs on a node than the bound (1,024, --max-gpus-per-node), in
    AllocTRES, ReqTRES or old AllocGRES, or more nodes than a job spans, is rejected, and with
    it the rest of its job's record (a requeued job's other run, a het job's other component,
    their steps): a job is stored whole or not at all. The headline numbers are the sane jobs',
    worked out here from SANE_RUNS.
    """
    lines = [SANE_HEADER, *(_sacct_row(j, "COMPLETED", *rest) for j, *rest in SANE_RUNS[:2])]
    lines += [
        _sacct_row(
            "101", "COMPLETED", "2024-01-01 10:00", "2024-01-01 11:00", "2024-01-01 13:00", 1, 1000000000, "g02"
        ),
        # pending, asking for 5000 GPUs on one node (ReqTRES only)
        _sacct_row("105", "PENDING", "2024-01-01 10:00", "Unknown", "Unknown", 1, 5000, "None assigned", alloc=False),
        _sacct_row("106", "COMPLETED", "2024-01-01 10:00", "2024-01-01 11:00", "2024-01-01 13:00", 200000, 8, "g06"),
        # a requeued job: its first run is sane, its second is not
        _sacct_row("107", "REQUEUED", "2024-01-01 10:00", "2024-01-01 10:05", "2024-01-01 10:20", 1, 4, "g07"),
        _step("107", "2024-01-01 10:05", "2024-01-01 10:20", "g07"),
        _sacct_row("107", "COMPLETED", "2024-01-01 10:20", "2024-01-01 10:30", "2024-01-01 11:00", 1, 99999, "g07"),
        # a het job: component 0 sane, component 1 not
        _sacct_row("108+0", "COMPLETED", "2024-01-01 10:00", "2024-01-01 10:05", "2024-01-01 11:00", 1, 4, "g08"),
        _sacct_row("108+1", "COMPLETED", "2024-01-01 10:00", "2024-01-01 10:05", "2024-01-01 11:00", 1, 2000, "g09"),
        _sacct_row("109", "COMPLETED", "2024-01-01 10:00", "2999-01-01 10:00", "2999-01-01 11:00", 1, 8, "g10"),
        _sacct_row(*SANE_RUNS[2][:1], "COMPLETED", *SANE_RUNS[2][1:]),
    ]
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join(lines) + "\n")
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC")
    bound = ": over the bound of 1,024 GPUs per node (--max-gpus-per-node)"
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (4, "1000000000 GPUs on one node" + bound),
        (5, "5000 GPUs on one node" + bound),  # a pending job's GPUs are its request's
        (6, "200000 nodes: over the bound of 100,000 nodes per job"),
        (7, "job 107 is rejected whole: its row at line 9 was rejected"),
        (8, "step of the allocation row at line 7, which was rejected"),
        (9, "99999 GPUs on one node" + bound),
        (10, "job 108 is rejected whole: its row at line 11 was rejected"),
        (11, "2000 GPUs on one node" + bound),
        (
            12,
            "Start 2999-01-01T10:00:00 is outside the years gca reads (1990-2059); "
            "End 2999-01-01T11:00:00 is outside the years gca reads (1990-2059)",
        ),
    ]
    assert (report.rows, report.rejects) == (3, 9)
    assert rows(db, "SELECT job_id FROM jobs ORDER BY 1") == [(j[0],) for j in SANE_RUNS]

    def at(text: str) -> datetime:
        return datetime.fromisoformat(text)

    def hours(start: str, end: str) -> float:
        return (at(end) - at(start)).total_seconds() / 3600

    per_host = {}
    for _, _, _, _, nodes, gpus, hosts in SANE_RUNS:
        for host in expand_hostlist(hosts):
            per_host[host] = max(per_host.get(host, 0), gpus // nodes)
    times = [at(t) for run in SANE_RUNS for t in run[1:4]]
    h = headline(db, tmp_path / "r")
    overview = h["overview"]
    assert (overview["jobs"], overview["attempts"]) == (3, 3)
    assert overview["gpu_hours"] == pytest.approx(sum(hours(s, e) * g for _, _, s, e, _, g, _ in SANE_RUNS)) == 28
    assert (overview["first_at"], overview["last_at"]) == (
        f"{min(times):%Y-%m-%dT%H:%M:%S}Z",
        f"{max(times):%Y-%m-%dT%H:%M:%S}Z",
    )
    assert (overview["machines"], overview["gpus"]) == (len(per_host), sum(per_host.values())) == (4, 26)
    assert h["queueing"]["wait_gpu_hours"] == pytest.approx(sum(hours(q, s) * g for _, q, s, _, _, g, _ in SANE_RUNS))


def test_the_bound_is_per_node_times_the_nodes_and_an_option(tmp_path: Path) -> None:
    """A job's GPUs may be the bound times its nodes, no more; --max-gpus-per-node sets the bound."""
    path = tmp_path / "sacct.txt"
    path.write_text(
        "\n".join(
            [
                SANE_HEADER,
                _sacct_row(
                    "1", "COMPLETED", "2024-01-01 10:00", "2024-01-01 10:00", "2024-01-01 11:00", 2, 16, "g[01-02]"
                ),
                _sacct_row(
                    "2", "COMPLETED", "2024-01-01 10:00", "2024-01-01 10:00", "2024-01-01 11:00", 2, 17, "g[03-04]"
                ),
                # allocated 4, but the request (jobs.requested_gpus) is over the bound
                _sacct_row(
                    "3",
                    "COMPLETED",
                    "2024-01-01 10:00",
                    "2024-01-01 10:00",
                    "2024-01-01 11:00",
                    1,
                    4,
                    "g05",
                    requested=9,
                ),
            ]
        )
        + "\n"
    )
    (report,) = ingest(tmp_path / "a.duckdb", path, zone="UTC", max_gpus_per_node=8)
    assert (report.rows, report.rejects) == (1, 2)
    assert rows(tmp_path / "a.duckdb", "SELECT line, reason FROM rejects ORDER BY line") == [
        (3, "17 GPUs on 2 nodes: over the bound of 8 GPUs per node (--max-gpus-per-node)"),
        (4, "9 GPUs requested on one node: over the bound of 8 GPUs per node (--max-gpus-per-node)"),
    ]
    (report,) = ingest(tmp_path / "b.duckdb", path, zone="UTC")  # the default bound: all are sane
    assert (report.rows, report.rejects) == (3, 0)
    gres = tmp_path / "gres.txt"
    gres.write_text(
        "JobID|State|Submit|Start|End|NNodes|AllocGRES|NodeList\n"
        "3|COMPLETED|2024-01-01T10:00:00|2024-01-01T10:00:00|2024-01-01T11:00:00|1|gpu:tesla:4|g05\n"
        "4|COMPLETED|2024-01-01T10:00:00|2024-01-01T10:00:00|2024-01-01T11:00:00|1|gpu:tesla:3000|g06\n"
    )
    (report,) = ingest(tmp_path / "c.duckdb", gres, zone="UTC")
    assert (report.rows, report.rejects) == (1, 1)
    assert rows(tmp_path / "c.duckdb", "SELECT line, reason FROM rejects") == [
        (3, "3000 GPUs on one node: over the bound of 1,024 GPUs per node (--max-gpus-per-node)")
    ]


def test_a_bad_bound_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_text(SANE_HEADER + "\n")
    for bad in ("0", "40000"):
        result = CliRunner().invoke(
            app, ["ingest", str(path), "--db", str(tmp_path / "s.duckdb"), "--max-gpus-per-node", bad]
        )
        assert result.exit_code == 2, result.output
        assert f"--max-gpus-per-node {bad}: not a number of GPUs a node can hold" in result.output
        assert "Traceback" not in result.output
    assert not (tmp_path / "s.duckdb").exists()


def test_plain_sacct_and_an_empty_file_are_refused_saying_why(tmp_path: Path) -> None:
    """Issue #29: `sacct -a` with its default columns holds no time and no GPUs: a refusal that
    names the --format gca needs, not `loaded, 1 row`; an empty file says it is empty."""
    plain = tmp_path / "jobs.txt"
    plain.write_text("JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|\n123|train|gpu|ml|8|COMPLETED|0:0|\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    runner = CliRunner()
    db = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(plain), "--db", str(db)])
    assert result.exit_code != 0
    line = [ln for ln in result.stderr.splitlines() if ln.startswith("gca: error:")]
    assert len(line) == 1 and "no time, GPU, node or usage column, so not a sacct dump gca can use" in line[0]
    assert "--format JobID,JobName,User,Account,Partition,QOS,State,ExitCode,Submit" in line[0]
    # in a folder, both are skipped saying why, and the rest is ingested (exit 0)
    folder = tmp_path / "site"
    folder.mkdir()
    for f in (plain, empty, DATA / "parsable2.txt"):
        (folder / f.name).write_bytes(f.read_bytes())
    result = runner.invoke(app, ["ingest", str(folder), "--db", str(tmp_path / "f.duckdb")])
    assert result.exit_code == 0, result.output
    assert f"skipped {folder / 'empty.txt'}: empty" in result.stderr
    assert (
        f"skipped {folder / 'jobs.txt'}: columns JobID, JobName, Partition, Account, AllocCPUS, State" in result.stderr
    )
    result = runner.invoke(app, ["ingest", str(empty), "--db", str(db)])
    assert result.exit_code != 0 and f"gca: error: {empty}: empty" in result.stderr
    with open_store(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM jobs").fetchone() == (0,)


@pytest.mark.parametrize("delimiter", ["\u2603", "^|^", "\t"])
@pytest.mark.parametrize("header", [True, False])
def test_sacct_with_another_delimiter_is_read_as_with_bars(tmp_path: Path, delimiter: str, header: bool) -> None:
    """Issue #29: tools that parse sacct avoid `|`, which free text may hold: Groningen's jobinfo
    (`--delimiter=\u2603`), Princeton's reportseff (`--delimiter='^|^'`). With a header the delimiter
    is its own; without one, the one that splits the first row into the columns --columns names.
    The store is the one the same dump with `|` gives."""
    source = (DATA / "parsable2.txt").read_text().splitlines()
    columns = tuple(source[0].split("|"))
    body = source[1:]
    bars, other = tmp_path / "bars.txt", tmp_path / "other.txt"
    bars.write_text("\n".join(([source[0]] if header else []) + body) + "\n")
    other.write_text("\n".join(ln.replace("|", delimiter) for ln in ([source[0]] if header else []) + body) + "\n")
    options = {} if header else {"columns": columns}
    (a,) = ingest(tmp_path / "a.duckdb", bars, zone=ZURICH, **options)
    (b,) = ingest(tmp_path / "b.duckdb", other, zone=ZURICH, **options)
    assert (b.status, b.rows, b.rejects) == (a.status, a.rows, a.rejects) == ("loaded", 12, 0)
    query = "SELECT job_id, j.status, j.exit_code, submit_at, num_gpus FROM jobs j JOIN attempts USING (source, job_id)"
    assert rows(tmp_path / "b.duckdb", query + " ORDER BY ALL") == rows(tmp_path / "a.duckdb", query + " ORDER BY ALL")


def test_a_row_short_of_one_trailing_field_is_read(tmp_path: Path) -> None:
    """A copy that dropped the last, empty field (`...|gpu01` for `...|gpu01|` under a header
    naming one more column) is read as if the field were there, empty."""
    path = tmp_path / "sacct.txt"
    # (job 1040's name holds a `|`: with one more column named, its row would be ambiguous)
    lines = [ln for ln in (DATA / "parsable2.txt").read_text().splitlines() if not ln.startswith("1040")]
    path.write_text("\n".join([lines[0] + "|Comment"] + lines[1:]) + "\n")
    (report,) = ingest(tmp_path / "s.duckdb", path, zone=ZURICH)
    assert (report.status, report.rows, report.rejects) == ("loaded", 11, 0)
    (plain,) = ingest(tmp_path / "p.duckdb", write(tmp_path / "plain.txt", "\n".join(lines) + "\n"), zone=ZURICH)
    query = "SELECT job_id, status, exit_code, submit_at FROM jobs ORDER BY ALL"
    assert rows(tmp_path / "s.duckdb", query) == rows(tmp_path / "p.duckdb", query)


def test_delimiter_option_names_what_gca_cannot_find(tmp_path: Path) -> None:
    """`sacct -n -P --delimiter=, --format JobID,User,State,Submit,Start,End`: a comma is no
    delimiter gca guesses (TRES values hold commas), so the dump needs --delimiter, as sacct had it."""
    dump = write(
        tmp_path / "jobs.txt",
        "7|ann|COMPLETED|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00\n".replace("|", ","),
    )
    args = ["ingest", str(dump), "--format", "slurm_sacct", "--columns", "JobID,User,State,Submit,Start,End"]
    runner = CliRunner()
    refused = runner.invoke(app, [*args, "--db", str(tmp_path / "a.duckdb"), "--tz", "UTC"])
    assert refused.exit_code != 0 and "without a delimiter that splits it into the 6 columns named" in refused.stderr
    read = runner.invoke(app, [*args, "--delimiter", ",", "--db", str(tmp_path / "b.duckdb"), "--tz", "UTC"])
    assert read.exit_code == 0, read.output
    assert rows(tmp_path / "b.duckdb", "SELECT job_id, user_name, status FROM jobs") == [("7", "ann", "passed")]


def test_a_format_named_that_does_not_fit_says_what_the_file_looks_like(tmp_path: Path) -> None:
    """Issue #29: `--format slurm_sacct` on Philly's JSON job log once said `sacct output without a
    header line ... use --columns`; it says what the file is."""
    job_log = write(
        tmp_path / "cluster_job_log",
        '[{"status": "Pass", "vc": "vc1", "jobid": "application_1_1", "attempts": [], "submitted_time": '
        '"2017-10-03 02:25:00", "user": "u1"}]\n',
    )
    result = CliRunner().invoke(
        app, ["ingest", str(job_log), "--format", "slurm_sacct", "--db", str(tmp_path / "s.duckdb")]
    )
    assert result.exit_code != 0
    assert f"gca: error: {job_log}: looks like philly_job_log (" in result.stderr
    assert "not slurm_sacct" in result.stderr and "--format philly_job_log" in result.stderr
