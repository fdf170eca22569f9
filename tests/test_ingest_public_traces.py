"""Helios, Acme and Alibaba GPU-2023 ingest on small hand-written files in the real headers.

The fixtures under tests/data/traces/ copy the upstream README example rows and add
broken ones. Expected values are worked out by hand in the comments:
Asia/Shanghai is UTC+8 all year (no DST since 1991); Acme's own offsets are applied
as written; Alibaba's seconds count from 1970-01-01 00:00 UTC.
"""

from __future__ import annotations

import gzip
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gpucluster_analysis.ingest import detect_format
from gpucluster_analysis.ingest.files import read_head
from tests.marks import keep_by_default
from tests.store_helpers import headline, ingest, jobs_csv, rows, write

TRACES = Path(__file__).resolve().parent / "data" / "traces"
HELIOS = TRACES / "cluster_log.csv"
SEREN = TRACES / "trace_seren.csv"
KALOS = TRACES / "trace_kalos.csv"
ALIBABA = TRACES / "openb_pod_list_sample.csv"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("traces") / "t.duckdb"
    reports = ingest(db, HELIOS, SEREN, KALOS, ALIBABA)
    summary = [(r.path.name, r.format, r.status, r.rows, r.rejects) for r in reports]
    assert summary == [
        ("cluster_log.csv", "helios", "loaded", 6, 5),
        ("trace_seren.csv", "acme", "loaded", 4, 2),
        ("trace_kalos.csv", "acme", "loaded", 2, 0),
        ("openb_pod_list_sample.csv", "alibaba_gpu2023", "loaded", 5, 5),
    ]
    return db


def test_formats_are_recognized_by_header_whatever_the_file_name(tmp_path: Path) -> None:
    for source, expected in ((HELIOS, "helios"), (SEREN, "acme"), (KALOS, "acme"), (ALIBABA, "alibaba_gpu2023")):
        renamed = tmp_path / f"renamed_{expected}.csv"
        shutil.copy(source, renamed)
        fmt = detect_format(renamed, read_head(renamed))
        assert fmt is not None and fmt.name == expected


def test_rejects_are_stored_with_their_lines(store: Path) -> None:
    got = rows(
        store,
        """
        SELECT f.format, r.line, r.reason FROM rejects r JOIN ingested_files f USING (file_id)
        WHERE f.path LIKE '%cluster_log.csv' OR f.path LIKE '%trace_seren.csv'
           OR f.path LIKE '%openb_pod_list_sample.csv'
        ORDER BY f.file_id, r.line""",
    )
    assert got == [
        # line 10 is blank and skipped; the first copy of a duplicate (line 2) is kept
        ("helios", 6, "9 fields where the header has 12"),
        ("helios", 7, "gpu_num is not a whole number of GPUs: two"),
        ("helios", 8, "unreadable submit_time 2020-06-31 09:00:00"),
        ("helios", 9, "end_time 2020-06-11 09:00:00 is before start_time 2020-06-11 10:00:00"),
        ("helios", 11, "duplicate job_id 1425511 (first seen on an earlier line)"),
        ("acme", 6, "12 fields where the header has 13"),
        ("acme", 7, "node_num is not a whole number of nodes: 0.5"),
        ("alibaba_gpu2023", 6, "gpu_milli is not a share of a GPU between 0 and 1000: 1500"),
        ("alibaba_gpu2023", 7, "deletion_time 9850400 is before scheduled_time 9850468"),
        ("alibaba_gpu2023", 8, "creation_time is not whole seconds since the trace start: 9850473.5"),
        ("alibaba_gpu2023", 10, "7 fields where the header has 11"),
        ("alibaba_gpu2023", 11, "duplicate pod name openb-pod-0017 (first seen on an earlier line)"),
    ]
    # the reject keeps the offending line's text
    assert rows(store, "SELECT text FROM rejects WHERE line = 6 AND reason LIKE '9 fields%'") == [
        ("1425515,uXBbc,vcJkd,2,8,1,NODE_FAIL,2020-06-11 08:00:00,2020-06-11 08:00:05",)
    ]


def test_helios_jobs_and_attempts(store: Path) -> None:
    jobs = rows(
        store,
        "SELECT job_id, user_name, vc, status, source_status, submit_at, cancelled_by FROM jobs WHERE source "
        "= 'helios' ORDER BY job_id",
    )
    assert jobs == [
        (
            "1425511",
            "uXBbc",
            "vcJkd",
            "passed",
            "COMPLETED",
            datetime(2020, 6, 9, 10, 41, 1),
            None,
        ),  # 18:41:01 CST - 8 h
        ("1425512", "uVMrF", "vchbv", "failed", "FAILED", datetime(2020, 6, 9, 10, 41, 27), None),
        ("1425513", "uzqls", "vcpDC", "killed", "CANCELLED by 4021", datetime(2020, 6, 9, 10, 41, 28), "4021"),
        ("1425514", "uzqls", "vcpDC", "timeout", "TIMEOUT", datetime(2020, 6, 10, 15, 59, 30), None),
        ("1425519", "uVMrF", "vchbv", "running", "RUNNING", datetime(2020, 9, 27, 4, 0), None),
        ("1425520", "uVMrF", "vchbv", "running", "SUSPENDED", datetime(2020, 9, 27, 4, 10), None),
    ]
    attempts = rows(
        store,
        "SELECT job_id, attempt_no, start_at, end_at, status, num_gpus, num_nodes FROM attempts WHERE source "
        "= 'helios' ORDER BY job_id",
    )
    assert attempts == [
        ("1425511", 0, datetime(2020, 6, 9, 10, 41, 1), datetime(2020, 6, 9, 20, 55, 9), "passed", 1.0, 1),
        ("1425512", 0, datetime(2020, 6, 9, 10, 50), datetime(2020, 6, 9, 10, 54, 9), "failed", 16.0, 2),
        # 1425513 never started: no attempt
        # 2020-06-11 00:00:10 CST is the previous day in UTC
        ("1425514", 0, datetime(2020, 6, 10, 16, 0, 10), datetime(2020, 6, 10, 18, 0, 10), "timeout", 8.0, 1),
        ("1425519", 0, datetime(2020, 9, 27, 4, 0, 30), None, "running", 4.0, 1),
        ("1425520", 0, datetime(2020, 9, 27, 4, 10), datetime(2020, 9, 27, 4, 20), "running", 1.0, 1),
    ]
    assert rows(store, "SELECT count(*) FROM allocations") == [(0,)]
    assert rows(store, "SELECT DISTINCT time_zone FROM ingested_files WHERE format IN ('helios', 'acme')") == [
        ("Asia/Shanghai",)
    ]


def test_acme_times_use_their_own_offsets(store: Path) -> None:
    got = rows(
        store,
        """
        SELECT j.job_id, j.vc, j.status, j.submit_at, a.start_at, a.end_at, a.num_gpus, a.num_nodes
        FROM jobs j LEFT JOIN attempts a USING (source, job_id) WHERE j.source = 'acme' ORDER BY j.job_id""",
    )
    assert got == [
        (
            "5778432",
            None,
            "failed",
            datetime(2023, 2, 28, 16, 18, 22),
            datetime(2023, 2, 28, 16, 18, 54),
            datetime(2023, 2, 28, 16, 20, 51),
            8.0,
            1,
        ),
        (
            "5778469",
            None,
            "passed",
            datetime(2023, 2, 28, 16, 23, 58),
            datetime(2023, 2, 28, 16, 24, 11),
            datetime(2023, 2, 28, 17, 9, 4),
            8.0,
            1,
        ),
        ("5778470", None, "killed", datetime(2023, 2, 28, 17, 0), None, None, None, None),
        # start/end written without an offset: read in the default zone, Asia/Shanghai
        (
            "5778471",
            None,
            "passed",
            datetime(2023, 2, 28, 17, 0),
            datetime(2023, 2, 28, 17, 0, 10),
            datetime(2023, 2, 28, 18, 0, 10),
            8.0,
            1,
        ),
        # Kalos writes +00:00
        (
            "dlc1t2ypl09b8qtp",
            None,
            "killed",
            datetime(2023, 5, 17, 11, 28, 42),
            datetime(2023, 5, 17, 11, 28, 54),
            datetime(2023, 5, 17, 11, 30, 4),
            64.0,
            8,
        ),
        (
            "dlctk696s0jbvitv",
            None,
            "failed",
            datetime(2023, 5, 17, 11, 0, 58),
            datetime(2023, 5, 17, 11, 1, 8),
            datetime(2023, 5, 17, 11, 1, 16),
            64.0,
            8,
        ),
    ]


def test_alibaba_pods(store: Path) -> None:
    got = rows(
        store,
        """
        SELECT j.job_id, j.status, j.source_status, j.submit_at, a.start_at, a.end_at, a.num_gpus, a.num_nodes
        FROM jobs j LEFT JOIN attempts a USING (source, job_id) WHERE j.source = 'alibaba' ORDER BY j.job_id""",
    )
    assert got == [
        # Pending: never scheduled, no attempt. 9661695 s = 111 d 19:48:15 -> 1970-04-22
        ("openb-pod-0008", "pending", "Pending", datetime(1970, 4, 22, 19, 48, 15), None, None, None, None),
        # 9437497 s = 109 d (1970-04-20) + 19897 s (05:31:37); 10769854 s = 124 d (05-05) + 56254 s (15:37:34)
        (
            "openb-pod-0017",
            "passed",
            "Succeeded",
            datetime(1970, 4, 20, 5, 31, 37),
            datetime(1970, 4, 20, 5, 31, 37),
            datetime(1970, 5, 5, 15, 37, 34),
            8.0,
            1,
        ),
        # a shared GPU: 1 x 220/1000
        (
            "openb-pod-0022",
            "running",
            "Running",
            datetime(1970, 4, 23, 0, 39, 35),
            datetime(1970, 4, 23, 0, 39, 35),
            datetime(1970, 4, 26, 10, 30, 26),
            0.22,
            1,
        ),
        (
            "openb-pod-0035",
            "failed",
            "Failed",
            datetime(1970, 4, 26, 8, 37, 38),
            datetime(1970, 4, 26, 8, 37, 43),
            datetime(1970, 4, 26, 9, 2, 55),
            1.0,
            1,
        ),
        # its gpu_spec is quoted and holds a comma
        (
            "openb-pod-0043",
            "running",
            "Running",
            datetime(1970, 4, 25, 0, 17, 13),
            datetime(1970, 4, 25, 0, 17, 15),
            datetime(1970, 4, 25, 0, 25, 39),
            0.5,
            1,
        ),
    ]
    assert rows(store, "SELECT time_zone FROM ingested_files WHERE format = 'alibaba_gpu2023'") == [
        ("UTC, relative seconds from 1970-01-01T00:00:00Z",)
    ]


def test_jobs_csv_values(store: Path) -> None:
    jobs = jobs_csv(store)
    want = {
        # job_id: (status, submit, first start, end, attempts, gpus, servers, queue s, run s, gpu time s)
        "1425511": (
            "passed",
            "2020-06-09T10:41:01Z",
            "2020-06-09T10:41:01Z",
            "2020-06-09T20:55:09Z",
            1,
            1,
            1,
            0,
            36848,
            36848,
        ),
        # 10:41:27 -> 10:50:00 = 513 s queued; 249 s x 16 GPUs = 3984
        "1425512": (
            "failed",
            "2020-06-09T10:41:27Z",
            "2020-06-09T10:50:00Z",
            "2020-06-09T10:54:09Z",
            1,
            16,
            2,
            513,
            249,
            3984,
        ),
        # cancelled before it started: no attempt; num_gpus is its request, gpu_num 0
        "1425513": ("killed", "2020-06-09T10:41:28Z", None, None, 0, 0, None, None, None, None),
        # 2 h x 8 GPUs = 57600
        "1425514": (
            "timeout",
            "2020-06-10T15:59:30Z",
            "2020-06-10T16:00:10Z",
            "2020-06-10T18:00:10Z",
            1,
            8,
            1,
            40,
            7200,
            57600,
        ),
        "1425519": ("running", "2020-09-27T04:00:00Z", "2020-09-27T04:00:30Z", None, 1, 4, 1, 30, None, None),
        # upstream's gpu_time column says 936.0 and 21544.0 too
        "5778432": (
            "failed",
            "2023-02-28T16:18:22Z",
            "2023-02-28T16:18:54Z",
            "2023-02-28T16:20:51Z",
            1,
            8,
            1,
            32,
            117,
            936,
        ),
        "5778469": (
            "passed",
            "2023-02-28T16:23:58Z",
            "2023-02-28T16:24:11Z",
            "2023-02-28T17:09:04Z",
            1,
            8,
            1,
            13,
            2693,
            21544,
        ),
        # 8 s x 64 GPUs (upstream's duration column says 18: gca derives it from the times)
        "dlctk696s0jbvitv": (
            "failed",
            "2023-05-17T11:00:58Z",
            "2023-05-17T11:01:08Z",
            "2023-05-17T11:01:16Z",
            1,
            64,
            8,
            10,
            8,
            512,
        ),
        # 10769854 - 9437497 = 1332357 s x 8 = 10658856
        "openb-pod-0017": (
            "passed",
            "1970-04-20T05:31:37Z",
            "1970-04-20T05:31:37Z",
            "1970-05-05T15:37:34Z",
            1,
            8,
            1,
            0,
            1332357,
            10658856,
        ),
        # 9973826 - 9679175 = 294651 s x 0.22 = 64823.22
        "openb-pod-0022": (
            "running",
            "1970-04-23T00:39:35Z",
            "1970-04-23T00:39:35Z",
            "1970-04-26T10:30:26Z",
            1,
            0.22,
            1,
            0,
            294651,
            64823.22,
        ),
        # pending, never scheduled: num_gpus is its request, num_gpu 0 (a CPU pod)
        "openb-pod-0008": ("pending", "1970-04-22T19:48:15Z", None, None, 0, 0, None, None, None, None),
    }
    columns = (
        "status",
        "submit_time",
        "first_start_time",
        "end_time",
        "attempts",
        "num_gpus",
        "num_servers",
        "queue_delay_s",
        "run_time_s",
        "gpu_time_s",
    )
    mismatches = []
    for job_id, values in want.items():
        row = jobs[job_id]
        for column, expected in zip(columns, values, strict=True):
            got = row[column]
            same = (
                got == expected
                if expected is None or isinstance(expected, str)
                else (got is not None and abs(float(got) - expected) < 1e-6)
            )
            if not same:
                mismatches.append((job_id, column, expected, got))
    assert mismatches == []
    assert (jobs["1425511"]["source"], jobs["1425511"]["user"], jobs["1425511"]["vc"]) == ("helios", "uXBbc", "vcJkd")
    assert (jobs["5778432"]["source"], jobs["5778432"]["vc"]) == ("acme", None)
    assert (jobs["openb-pod-0017"]["source"], jobs["openb-pod-0017"]["user"]) == ("alibaba", None)


def test_tz_overrides_the_default_zone_and_is_recorded(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    ingest(db, HELIOS, zone="UTC")
    assert rows(db, "SELECT submit_at FROM jobs WHERE job_id = '1425511'") == [(datetime(2020, 6, 9, 18, 41, 1),)]
    assert rows(db, "SELECT time_zone FROM ingested_files") == [("UTC",)]
    # Acme times with an offset keep it whatever --tz says
    ingest(db, KALOS, zone="America/New_York")
    assert rows(db, "SELECT submit_at FROM jobs WHERE job_id = 'dlctk696s0jbvitv'") == [
        (datetime(2023, 5, 17, 11, 0, 58),)
    ]


def test_gzip_and_second_file_with_the_same_job(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    packed = tmp_path / "cluster_log.csv.gz"
    packed.write_bytes(gzip.compress(HELIOS.read_bytes()))
    (report,) = ingest(db, packed)
    assert (report.format, report.rows, report.rejects) == ("helios", 6, 5)
    other = tmp_path / "earth_cluster_log.csv"
    other.write_text(
        HELIOS.read_text().splitlines()[0]
        + "\n"
        + "1425511,uA,vcB,1,1,1,COMPLETED,2020-07-01 00:00:00,2020-07-01 00:00:00,2020-07-01 01:00:00,3600,0\n"
    )
    (report,) = ingest(db, other)
    # every row rejected: the file failed, nothing of it stored, and the message says why
    assert report.status == "failed" and report.error is not None and report.error.exit_code != 0
    assert "earth_cluster_log.csv:2: every row was rejected, nothing stored (1 rows)" in report.message
    assert "job_id 1425511 already stored from another file" in report.message
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(1,)]
    assert rows(db, "SELECT count(*) FROM rejects WHERE file_id <> 1") == [(0,)]


def test_strict_stores_nothing_from_a_file_with_rejects(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, SEREN, strict=True)
    assert report.status == "failed" and "trace_seren.csv:6: 12 fields where the header has 13" in report.message
    assert rows(db, "SELECT count(*) FROM jobs") == [(0,)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        (
            "job_id,user,vc,gpu_num,state,start_time,end_time\n1,u,v,1,COMPLETED,,\n",
            ":1: the header has no submit_time column",
        ),
        (
            "1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0\n",
            ":1: the header has no job_id, state, submit_time, start_time, end_time column",
        ),
    ],
)
def test_unreadable_files_fail_with_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(text)
    (report,) = ingest(tmp_path / "t.duckdb", path, format_name="helios")
    assert report.status == "failed" and message in report.message and "\n" not in report.message
    assert "Traceback" not in report.message


# ------------------------------------------------------- real excerpts and hostile files (tests/data/traces/SOURCES.md)

GPUSPEC = TRACES / "openb_pod_list_gpuspec33_head.csv"


def test_alibaba_epoch_anchors_the_relative_seconds(tmp_path: Path) -> None:
    # The first lines of openb_pod_list_gpuspec33.csv, anchored at 2023-03-01 00:00 +08:00 = 2023-02-28 16:00 UTC.
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, GPUSPEC, epoch="2023-03-01T00:00:00+08:00")
    assert (report.format, report.rows, report.rejects) == ("alibaba_gpu2023", 6, 0)
    got = {
        r[0]: r[1:]
        for r in rows(
            db,
            """
        SELECT j.job_id, j.status, j.submit_at, a.start_at, a.end_at, a.num_gpus
        FROM jobs j LEFT JOIN attempts a USING (job_id)""",
        )
    }
    assert got["openb-pod-0000"] == (
        "running",
        datetime(2023, 2, 28, 16),
        datetime(2023, 2, 28, 16),
        # 12537496 s = 145 d (Feb 28 + 145 d = Jul 23) + 9496 s (2:38:16)
        datetime(2023, 7, 23, 18, 38, 16),
        1.0,
    )
    # 9437497 s = 109 d (Jun 17) + 19897 s (5:31:37); 10769854 s = 124 d (Jul 2) + 56254 s (15:37:34)
    assert got["openb-pod-0017"] == (
        "passed",
        datetime(2023, 6, 17, 21, 31, 37),
        datetime(2023, 6, 17, 21, 31, 37),
        datetime(2023, 7, 3, 7, 37, 34),
        8.0,
    )
    assert got["openb-pod-0021"][4] == 0.44  # a shared GPU: 440 milli; its gpu_spec lists five models with '|'
    assert got["openb-pod-0061"] == ("pending", datetime(2023, 6, 24, 10, 7, 58), None, None, None)  # never scheduled
    assert rows(db, "SELECT time_zone FROM ingested_files") == [("UTC, relative seconds from 2023-02-28T16:00:00Z",)]
    jobs = jobs_csv(db)
    # pod 0062: created 10001573, scheduled 10001606 (33 s later), deleted 10014257 (12651 s after), 0.81 GPU
    assert (jobs["openb-pod-0062"]["queue_delay_s"], jobs["openb-pod-0062"]["run_time_s"]) == (33, 12651)
    # pod 0017: 8 GPUs for 10769854 - 9437497 = 1332357 s
    assert jobs["openb-pod-0017"]["gpu_time_s"] == 8 * 1332357


def test_alibaba_without_epoch_counts_from_1970(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    ingest(db, GPUSPEC)
    # pod 0017: 9437497 s after 1970-01-01 = 109 d (1970-04-20) + 5:31:37
    assert rows(db, "SELECT start_at FROM attempts WHERE job_id = 'openb-pod-0017'") == [
        (datetime(1970, 4, 20, 5, 31, 37),)
    ]


@pytest.mark.parametrize("epoch", ["yesterday", "2023-13-01", "1700000000x"])
def test_a_bad_epoch_is_refused_before_anything_is_read(tmp_path: Path, epoch: str) -> None:
    from typer.testing import CliRunner

    from gpucluster_analysis.cli import app

    result = CliRunner().invoke(app, ["ingest", str(GPUSPEC), "--db", str(tmp_path / "t.duckdb"), "--epoch", epoch])
    assert result.exit_code == 2 and "Traceback" not in result.output + result.stderr
    assert (
        f"gca: error: --epoch {epoch!r} is not an ISO 8601 time (e.g. --epoch 2023-03-01T00:00:00+08:00)"
        in result.stderr
    )
    assert not (tmp_path / "t.duckdb").exists() or rows(tmp_path / "t.duckdb", "SELECT count(*) FROM jobs") == [(0,)]


def test_helios_all_cluster_log_keeps_jobs_of_each_cluster_apart(tmp_path: Path) -> None:
    # HeliosArtifact's all_cluster_log.csv: the same job id in Venus and Earth are two jobs
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, TRACES / "all_cluster_log.csv")
    assert (report.format, report.rows, report.rejects) == ("helios", 2, 0)
    assert rows(db, "SELECT job_id, vc, status FROM jobs ORDER BY job_id") == [
        ("Earth/6160731", "vchbv", "failed"),
        ("Venus/6160731", "vcJkd", "passed"),
    ]


def test_helios_hostile_rows(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, TRACES / "cluster_log_hostile.csv")
    assert (report.rows, report.rejects) == (3, 3)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        # Asia/Shanghai had DST until 1991 and gca knows zone rules from 1990 only
        (2, "submit_time 1989-06-09 18:41:01 is outside the years gca reads (1990-2059)"),
        (3, "gpu_num is not a whole number of GPUs: -1"),
        (7, "10 fields where the header has 12"),  # the cut last line, without a newline
    ]
    got = {
        r[0]: r[1:]
        for r in rows(
            db,
            """
        SELECT j.job_id, j.status, a.start_at, a.end_at, a.num_gpus FROM jobs j LEFT JOIN attempts a USING (job_id)""",
        )
    }
    assert got == {
        "7000003": ("running", datetime(2020, 6, 9, 10, 41, 5), None, 2.0),  # still running: no end; UTC+8
        # CANCELLED with start = end: Slurm's stamp on a job cancelled while pending, which never ran
        "7000008": ("killed", None, None, None),
        "7000009": (
            "killed",
            datetime(2020, 6, 9, 10, 10),
            datetime(2020, 6, 9, 10, 40),
            4.0,
        ),  # cancelled after 30 min
    }
    assert jobs_csv(db)["7000008"]["queue_delay_s"] is None  # no start: no queueing delay


HELIOS_HEADER = b"job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
HELIOS_ROW = b"1,u%s,vc1,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0"


@pytest.mark.parametrize(
    ("content", "user"),
    [
        (HELIOS_HEADER + b"\r\n" + HELIOS_ROW % b"1" + b"\r\n", "u1"),  # CRLF
        (b"\xef\xbb\xbf" + HELIOS_HEADER + b"\n" + HELIOS_ROW % b"1" + b"\n", "u1"),  # UTF-8 BOM
        (
            HELIOS_HEADER + b"\n" + HELIOS_ROW % b"\xe9" + b"\n",
            "u\u00e9",
        ),  # a Latin-1 byte: the file is read as Latin-1
        (HELIOS_HEADER + b"\n" + HELIOS_ROW % "\u00e9".encode() + b"\n", "u\u00e9"),  # the same in UTF-8
    ],
)
def test_helios_encodings_and_line_ends(tmp_path: Path, content: bytes, user: str) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_bytes(content)
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path)
    assert (report.format, report.status, report.rows, report.rejects) == ("helios", "loaded", 1, 0)
    # 18:41:01 and 04:55:09 (+1 d) in UTC+8
    assert rows(db, "SELECT j.user_name, a.start_at, a.end_at FROM jobs j JOIN attempts a USING (job_id)") == [
        (user, datetime(2020, 6, 9, 10, 41, 1), datetime(2020, 6, 9, 20, 55, 9))
    ]


def test_header_only_and_binary_files(tmp_path: Path) -> None:
    header_only = tmp_path / "cluster_log.csv"
    header_only.write_bytes(HELIOS_HEADER + b"\n")
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, header_only)
    assert (report.status, report.rows, report.rejects) == ("loaded", 0, 0)
    garbage = tmp_path / "openb_pod_list_x.csv"
    garbage.write_bytes(bytes(range(256)) * 8)
    for fmt in ("helios", "acme", "alibaba_gpu2023"):
        (report,) = ingest(db, garbage, format_name=fmt)
        assert (report.status, report.message) == (
            "failed",
            f"{garbage}:1: a control character (0x00): binary data,"
            " not a CSV text file (give gca the CSV as published (gzip-compressed is fine))",
        )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # CRLF lines, then LF lines: two files concatenated
        (
            HELIOS_HEADER + b"\r\n" + HELIOS_ROW % b"1" + b"\r\n" + HELIOS_ROW % b"2" + b"\n",
            ":3: the line ends change here (LF after CRLF), as when files are concatenated (normalize them "
            "first, e.g. dos2unix cluster_log.csv)",
        ),
        (
            HELIOS_HEADER + b"\n" + HELIOS_ROW % b"1" + b"\r\n",
            ":2: the line ends change here (CRLF after LF), as when files are concatenated (normalize them "
            "first, e.g. dos2unix cluster_log.csv)",
        ),
        (
            HELIOS_HEADER + b"\n" + HELIOS_ROW % b"1\r2" + b"\n",
            ":2: a carriage return inside the line (remove it, or normalize the line ends (e.g. dos2unix "
            "cluster_log.csv))",
        ),
        (
            HELIOS_HEADER + b"\n" + HELIOS_ROW % b"1" + b"\n" + HELIOS_ROW % b"\x01" + b"\n",
            ":3: a control character (0x01): binary data, not a CSV text file (give gca the CSV as published "
            "(gzip-compressed is fine))",
        ),
        # Windows-1252 curly quotes: neither UTF-8 nor Latin-1 (DuckDB's Latin-1 has no 0x80-0x9f)
        (
            HELIOS_HEADER + b"\n" + HELIOS_ROW % b"\x93q\x94" + b"\n",
            ":2: neither UTF-8 nor Latin-1 text (convert it to UTF-8 first, e.g. iconv -f CP1252 -t UTF-8 "
            "cluster_log.csv)",
        ),
    ],
)
def test_what_duckdb_cannot_read_is_refused_with_its_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_bytes(content)
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path)
    assert (report.format, report.status, report.message) == ("helios", "failed", f"{path}{message}")
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(0,)]


def test_utf16_is_refused_for_what_it_is(tmp_path: Path) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_bytes((HELIOS_HEADER + b"\n" + HELIOS_ROW % b"1" + b"\n").decode().encode("utf-16"))
    for fmt in ("helios", "alibaba_gpu2023"):
        (report,) = ingest(tmp_path / "t.duckdb", path, format_name=fmt)
        assert (report.status, report.message) == (
            "failed",
            f"{path}:1: UTF-16 text (as Windows tools save CSV)"
            " (convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 cluster_log.csv)",
        )


def test_alibaba_hostile_rows(tmp_path: Path) -> None:
    path = tmp_path / "openb_pod_list_x.csv"
    path.write_bytes(
        GPUSPEC.read_bytes().splitlines()[0]
        + b"\r\n"
        + b"openb-pod-9001,1000,1024,1,1000,,LS,Running,99999999999999,99999999999999,99999999999999\r\n"
        + b"openb-pod-9002,1000,1024,1,-5,,LS,Running,10,20,10\r\n"
        + b"openb-pod-9003,1000,1024,1,1000,,LS,Succeeded,10,20,1\r\n"
        + b"openb-pod-9004,1000,1024,1,1000,,LS,Succeeded,10,20,15"
    )  # one good row: the file loads
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path)
    assert (report.rows, report.rejects) == (1, 3)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        # more than a century of seconds: no trace time, and beyond what a timestamp holds
        (2, "creation_time is not whole seconds since the trace start: 99999999999999"),
        (3, "gpu_milli is not a share of a GPU between 0 and 1000: -5"),
        (4, "scheduled_time 1 is before creation_time 10"),
    ]


@pytest.mark.parametrize("seed", keep_by_default(range(24), range(8)))
def test_damaged_files_load_or_fail_in_one_line_and_store_no_impossible_times(tmp_path: Path, seed: int) -> None:
    import random

    from gpucluster_analysis.errors import ParseError

    sources = [
        (HELIOS, "helios"),
        (SEREN, "acme"),
        (KALOS, "acme"),
        (ALIBABA, "alibaba_gpu2023"),
        (GPUSPEC, "alibaba_gpu2023"),
    ]
    source, fmt = sources[seed % len(sources)]
    rng = random.Random(seed)
    data = bytearray(source.read_bytes())
    for _ in range(rng.randint(1, 3)):  # cut, spliced, bytes flipped, lines repeated, line ends changed
        i = rng.randrange(len(data))
        kind = rng.randrange(5)
        if kind == 0:
            del data[i:]
        elif kind == 1:
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif kind == 2:
            data[i] = rng.choice(b',"-:.0123456789 \n')
        elif kind == 3:
            lines = bytes(data).split(b"\n")
            lines.insert(rng.randrange(len(lines)), rng.choice(lines))
            data = bytearray(b"\n".join(lines))
        else:
            data = bytearray(bytes(data).replace(b"\n", b"\r\n", rng.randint(1, 3)))
    path = tmp_path / source.name
    path.write_bytes(bytes(data))
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path, format_name=fmt)
    if report.status == "failed":
        assert isinstance(report.error, ParseError) and "\n" not in report.message  # never a DuckDB error
        assert report.message.startswith(str(path))
        return
    assert rows(
        db,
        """SELECT count(*) FROM jobs j JOIN attempts a USING (source, job_id)
                       WHERE a.end_at < a.start_at OR a.start_at < j.submit_at OR a.num_gpus < 0""",
    ) == [(0,)]


def test_alibaba_2020_pai_tables_are_refused_not_misread(tmp_path: Path) -> None:
    # cluster-trace-gpu-v2020's pai_job_table.csv has no header: not recognized; forced, it is named
    path = tmp_path / "pai_job_table.csv"
    path.write_text("4b3f04b66a525d2df903eb16,8d2e0f1f8ca9d36c1e0b33a0,58540f191766,Terminated,3074,3276\n")
    assert detect_format(path, read_head(path)) is None
    (report,) = ingest(tmp_path / "t.duckdb", path, format_name="alibaba_gpu2023")
    assert (report.status, report.message) == (
        "failed",
        f"{path}: an Alibaba cluster-trace-gpu-v2020 (PAI) table, which gca does not"
        " read (gca reads the 2023 pod lists (openb_pod_list_*.csv) of cluster-trace-gpu-v2023)",
    )


def test_philly_in_helios_layout_is_read_in_philly_zone(tmp_path: Path) -> None:
    # Philly's jobs as HeliosData/HeliosArtifact ship them to compare with (hand-written rows in
    # that layout): 2017 and Philly's state words, so its times are America/Los_Angeles, not Shanghai.
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, TRACES / "philly_in_helios_layout.csv")
    assert (report.format, report.rows, report.rejects) == ("helios", 2, 0)
    assert rows(db, "SELECT time_zone FROM ingested_files") == [("America/Los_Angeles",)]
    got = {
        r[0]: r[1:]
        for r in rows(
            db,
            """
        SELECT j.job_id, j.status, j.submit_at, a.start_at, a.end_at, a.num_gpus
        FROM jobs j JOIN attempts a USING (job_id)""",
        )
    }
    assert got == {
        # October: PDT, UTC-7
        "application_1506638472019_10238": (
            "passed",
            datetime(2017, 10, 3, 9, 59, 12),
            datetime(2017, 10, 3, 10, 0, 8),
            datetime(2017, 10, 3, 10, 30, 8),
            1.0,
        ),
        # 2017-11-05 is the fall-back day: 01:30 and 01:40 happen twice (first occurrence, PDT: +7 h);
        # 03:00 is PST (+8 h) -> 11:00; the run is 01:40 PDT -> 03:00 PST = 2 h 20 min
        "application_1506638472019_10239": (
            "killed",
            datetime(2017, 11, 5, 8, 30),
            datetime(2017, 11, 5, 8, 40),
            datetime(2017, 11, 5, 11, 0),
            8.0,
        ),
    }
    # --tz still wins
    (again,) = ingest(tmp_path / "u.duckdb", TRACES / "philly_in_helios_layout.csv", zone="UTC")
    assert rows(tmp_path / "u.duckdb", "SELECT min(submit_at) FROM jobs") == [(datetime(2017, 10, 3, 2, 59, 12),)]


def test_a_long_field_is_read_and_a_line_beyond_the_limit_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpucluster_analysis.ingest import csv_scan

    # a 3 MB user name: more than DuckDB's default line size (2 MB), read whole
    path = tmp_path / "cluster_log.csv"
    path.write_bytes(HELIOS_HEADER + b"\n" + HELIOS_ROW % (b"x" * (3 << 20)) + b"\n")
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path)
    assert (report.status, report.rows, report.rejects) == ("loaded", 1, 0)
    assert rows(db, "SELECT length(user_name) FROM jobs") == [(1 + (3 << 20),)]
    # beyond the limit (made small here: 1000 bytes, scanned in 256-byte chunks) the file is refused at the line
    monkeypatch.setattr(csv_scan, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(csv_scan, "SCAN_CHUNK_BYTES", 256)
    path.write_bytes(HELIOS_HEADER + b"\n" + HELIOS_ROW % b"1" + b"\n" + HELIOS_ROW % (b"x" * 2000) + b"\n")
    (report,) = ingest(tmp_path / "u.duckdb", path)
    assert (report.status, report.message) == (
        "failed",
        f"{path}:3: a line longer than 1000 bytes (this is no trace row; check the file (line ends lost?))",
    )


def test_a_second_pod_list_of_the_same_pods_is_rejected_with_why(tmp_path: Path) -> None:
    # openb_pod_list_default.csv and openb_pod_list_gpuspec33.csv hold the same pods (the latter with GPU models)
    db = tmp_path / "t.duckdb"
    other = tmp_path / "openb_pod_list_default.csv"
    other.write_bytes(b"\n".join(GPUSPEC.read_bytes().splitlines()[:2]) + b"\n")
    ingest(db, GPUSPEC)
    (report,) = ingest(db, other)
    # it stores nothing: a failure of that file, whose message names the likely cause
    assert report.status == "failed"
    assert report.message.startswith(
        f"{other}:2: every row was rejected, nothing stored (1 rows); the likely cause, in all:"
        " pod openb-pod-0000 already stored from another file (the pod lists sample the same"
        " pods: ingest one per store)"
    )
    assert rows(db, "SELECT count(*) FROM rejects") == [(0,)]


# ---------------------------------------------------------------- sanity bounds (issue #26)

# (job_id, gpu_num, node_num, submit, start, end): Helios' Asia/Shanghai wall-clock times (UTC+8)
HELIOS_SANE = [
    ("1", 8, 1, "2020-06-09 18:00:00", "2020-06-09 18:30:00", "2020-06-09 20:30:00"),
    ("2", 16, 2, "2020-06-10 00:00:00", "2020-06-10 00:00:00", "2020-06-10 01:00:00"),
]
HELIOS_ABSURD = [
    (
        ("3", 1000000000, 1, "2020-06-09 18:00:00", "2020-06-09 18:00:00", "2020-06-09 19:00:00"),
        "gpu_num 1000000000 on one node: over the bound of 1,024 GPUs per node (--max-gpus-per-node)",
    ),
    (
        ("4", 4097, 4, "2020-06-09 18:00:00", "2020-06-09 18:00:00", "2020-06-09 19:00:00"),
        "gpu_num 4097 on 4 nodes: over the bound of 1,024 GPUs per node (--max-gpus-per-node)",
    ),
    (
        ("5", 8, 200000, "2020-06-09 18:00:00", "2020-06-09 18:00:00", "2020-06-09 19:00:00"),
        "node_num 200000: over the bound of 100,000 nodes per job",
    ),
    (
        ("6", 8, 1, "2020-06-09 18:00:00", "2999-06-09 18:00:00", "2999-06-09 19:00:00"),
        "start_time 2999-06-09 18:00:00 is outside the years gca reads (1990-2059)",
    ),
    (
        ("7", 8, 1, "2020-06-09 18:00:00", "2020-06-09 19:00:00", "2020-06-09 18:00:00"),
        "end_time 2020-06-09 18:00:00 is before start_time 2020-06-09 19:00:00",
    ),
]


def _helios_line(job: tuple) -> str:
    job_id, gpus, nodes, submit, start, end = job
    return f"{job_id},u1,vc1,{gpus},4,{nodes},COMPLETED,{submit},{start},{end},0,0"


def test_helios_absurd_rows_are_rejected_and_the_headline_is_the_sane_jobs(tmp_path: Path) -> None:
    """Issue #26, item 4: a GPU count or a time no cluster has poisoned the headline. Reproduction:

        printf 'job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\\n'\\
        '1,u,v,1000000000,4,1,COMPLETED,2020-06-09 18:00:00,'\\
        '2020-06-09 18:00:00,2020-06-09 19:00:00,0,0\\n' > cluster_log.csv
        gca ingest cluster_log.csv --db h.duckdb && gca report --db h.duckdb --out r --json

    Now such a row is rejected with its reason, and the headline numbers are the sane jobs',
    worked out here from HELIOS_SANE.
    """
    db = tmp_path / "h.duckdb"
    lines = [
        HELIOS_HEADER.decode(),
        _helios_line(HELIOS_SANE[0]),
        *(_helios_line(j) for j, _ in HELIOS_ABSURD),
        _helios_line(HELIOS_SANE[1]),
    ]
    (report,) = ingest(db, write(tmp_path / "cluster_log.csv", "\n".join(lines) + "\n"))
    assert (report.format, report.rows, report.rejects) == ("helios", 2, len(HELIOS_ABSURD))
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (n + 3, why) for n, (_, why) in enumerate(HELIOS_ABSURD)
    ]

    def utc(text: str) -> datetime:
        return datetime.fromisoformat(text) - timedelta(hours=8)  # Asia/Shanghai, no summer time since 1991

    def hours(start: str, end: str) -> float:
        return (utc(end) - utc(start)).total_seconds() / 3600

    times = [utc(t) for job in HELIOS_SANE for t in job[3:]]
    h = headline(db, tmp_path / "r")
    assert h["overview"]["jobs"] == 2
    assert h["overview"]["gpu_hours"] == pytest.approx(sum(g * hours(s, e) for _, g, _, _, s, e in HELIOS_SANE)) == 32
    assert (h["overview"]["first_at"], h["overview"]["last_at"]) == (
        f"{min(times):%Y-%m-%dT%H:%M:%S}Z",
        f"{max(times):%Y-%m-%dT%H:%M:%S}Z",
    )
    assert (
        h["queueing"]["wait_gpu_hours"] == pytest.approx(sum(g * hours(q, s) for _, g, _, q, s, _ in HELIOS_SANE)) == 4
    )


def test_acme_times_with_an_offset_are_held_to_the_years_in_utc(tmp_path: Path) -> None:
    header = "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time"
    path = write(
        tmp_path / "trace_seren.csv",
        "\n".join(
            [
                header,
                "1,u1,1,8,128,Other,COMPLETED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 "
                "00:20:51+08:00,0,0,0",
                # 2060-01-01 05:00 at +08:00 is 2059-12-31 21:00 UTC: in the years; 2060-01-01 09:00 +08:00 is not
                "2,u1,1,8,128,Other,COMPLETED,2059-12-31 00:00:00+08:00,2060-01-01 05:00:00+08:00,2060-01-01 "
                "07:00:00+08:00,0,0,0",
                "3,u1,1,8,128,Other,COMPLETED,2059-12-31 00:00:00+08:00,2060-01-01 05:00:00+08:00,2060-01-01 "
                "09:00:00+08:00,0,0,0",
                "4,u1,1,2048,128,Other,COMPLETED,2023-03-01 00:18:22+08:00,2023-03-01 "
                "00:18:54+08:00,2023-03-01 00:20:51+08:00,0,0,0",
            ]
        )
        + "\n",
    )
    db = tmp_path / "a.duckdb"
    (report,) = ingest(db, path)
    assert (report.format, report.rows, report.rejects) == ("acme", 2, 2)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (4, "end_time 2060-01-01 09:00:00+08:00 is outside the years gca reads (1990-2059)"),
        (5, "gpu_num 2048 on one node: over the bound of 1,024 GPUs per node (--max-gpus-per-node)"),
    ]
    (report,) = ingest(tmp_path / "b.duckdb", path, max_gpus_per_node=2048)
    assert (report.rows, report.rejects) == (3, 1)


ALIBABA_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
)


def test_alibaba_absurd_pods_are_rejected_relative_or_anchored(tmp_path: Path) -> None:
    """Alibaba's seconds count from an unknown start: without --epoch they may span the window's
    70 years at most; anchored with --epoch, each instant must lie in the years themselves."""
    century = 100 * 365 * 86400
    path = write(
        tmp_path / "openb_pod_list_x.csv",
        "\n".join(
            [
                ALIBABA_HEADER,
                "p1,4000,1000,8,1000,,BE,Succeeded,100,4000,200",
                "p2,4000,1000,2000,1000,,BE,Succeeded,100,4000,200",  # 2000 GPUs of one node
                f"p3,4000,1000,1,1000,,BE,Succeeded,100,{century},200",  # a century after the start
                # 2023-03-01 + 13,000 days is in 2058: in the years when anchored there
                f"p4,4000,1000,1,1000,,BE,Succeeded,100,{13000 * 86400},200",
            ]
        )
        + "\n",
    )
    db = tmp_path / "r.duckdb"
    (report,) = ingest(db, path)
    assert (report.rows, report.rejects) == (2, 2)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (3, "num_gpu 2000 on one node: over the bound of 1,024 GPUs per node (--max-gpus-per-node)"),
        (4, f"deletion_time {century} s after the trace start: more than the 70 years gca reads"),
    ]
    db = tmp_path / "e.duckdb"
    (report,) = ingest(db, path, epoch="2023-03-01T00:00:00Z")
    assert (report.rows, report.rejects) == (2, 2)
    late = datetime(2023, 3, 1) + timedelta(seconds=century)
    assert rows(db, "SELECT line, reason FROM rejects WHERE line = 4") == [
        (4, f"deletion_time {century} ({late:%Y-%m-%dT%H:%M:%S}Z) is outside the years gca reads (1990-2059)")
    ]
    db = tmp_path / "late.duckdb"
    (report,) = ingest(db, path, epoch="2040-01-01T00:00:00Z")  # p4 now ends in 2075
    assert rows(db, "SELECT line FROM rejects ORDER BY line") == [(3,), (4,), (5,)]


# ------------------------------------------------------- variant lists in one folder (issue #29)


def test_a_folder_of_alibaba_variant_lists_ingests_one_and_skips_the_others(tmp_path: Path) -> None:
    """The variant pod lists re-sample the same pods: a folder gives the default list and skips the
    others saying why (no longer a mixture of one list whole and thousands of another's pods, then
    a failure); without a default, the first by name. Named alone, a variant is ingested."""
    from typer.testing import CliRunner

    from gpucluster_analysis.cli import app

    folder = tmp_path / "trace"
    folder.mkdir()
    for name in ("openb_pod_list_default.csv", "openb_pod_list_cpu050.csv", "openb_pod_list_gpuspec33.csv"):
        shutil.copyfile(ALIBABA, folder / name)
    runner = CliRunner()
    db = tmp_path / "s.duckdb"
    result = runner.invoke(app, ["ingest", str(folder), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "each a variant of openb_pod_list_default.csv (the pod lists re-sample the same pods)" in result.stderr
    assert rows(db, "SELECT DISTINCT f.path FROM jobs JOIN ingested_files f USING (file_id)") == [
        (str(folder / "openb_pod_list_default.csv"),)
    ]
    # the same jobs as the list ingested alone
    (alone,) = ingest(tmp_path / "alone.duckdb", ALIBABA)
    assert rows(db, "SELECT count(*) FROM jobs") == [(alone.rows,)]
    (folder / "openb_pod_list_default.csv").unlink()
    other = tmp_path / "t.duckdb"
    result = runner.invoke(app, ["ingest", str(folder), "--db", str(other)])
    assert result.exit_code == 0 and "a variant of openb_pod_list_cpu050.csv" in result.stderr
    result = runner.invoke(
        app, ["ingest", str(folder / "openb_pod_list_gpuspec33.csv"), "--db", str(tmp_path / "u.duckdb")]
    )
    assert result.exit_code == 0, result.output


def test_the_real_alibaba_2023_folder_loads_its_default_lists(tmp_path: Path) -> None:
    from tests.conftest import SHARED_DATA

    folder = SHARED_DATA / "public-traces" / "alibaba-gpu-2023"
    if not folder.exists():
        pytest.skip("../shared/data/public-traces is not here")
    reports = ingest(tmp_path / "s.duckdb", folder)
    assert sorted((Path(r.path).name, r.status) for r in reports) == [
        ("openb_node_list_all_node.csv", "loaded"),
        ("openb_pod_list_default.csv", "loaded"),
    ]
