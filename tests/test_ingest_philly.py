"""Philly ingest on small hand-written files, every upstream quirk and broken rows included.

Expected values are worked out by hand in the comments (UTC = Los Angeles local
+ 7 h in PDT, + 8 h in PST).
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest

from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import InputError
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from tests.store_helpers import headline, ingest, rows, write

JOB_LOG = """[
    {
        "status": "Killed",
        "vc": "vc1",
        "jobid": "job_a",
        "attempts": [
            {"start_time": "2017-11-05 01:40:00", "end_time": "2017-11-05 03:00:00",
             "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]},
            {"start_time": "2017-11-05 00:10:00", "end_time": "2017-11-05 01:30:00",
             "detail": [{"ip": "m1", "gpus": ["gpu2"]}, {"ip": "m2", "gpus": ["gpu0"]}]},
            {"start_time": "None", "end_time": "None", "detail": []}
        ],
        "submitted_time": "2017-11-05 00:05:00",
        "user": "u1"
    },
    {"status": "Pass", "vc": "vc1", "jobid": "job_b", "attempts": [], "submitted_time": "None", "user": "u2", "extra": 5},
    {"status": "Failed", "vc": "vc2", "jobid": "job_c", "attempts": [{"start_time": "2017-03-12 02:30:00", "end_time": "2017-03-12 04:00:00", "detail": [{"ip": "m3", "gpus": ["gpuX"]}]}], "submitted_time": "2017-03-12 01:00:00", "user": "u3"},
    {"status": "Pass", "vc": "vc1", "jobid": "job_a", "attempts": [], "submitted_time": "2017-11-01 00:00:00", "user": "u1"},
    {"status": "Running", "vc": "vc1", "jobid": "job_e", "attempts": [{"start_time": "2017-11-05 01:00:00", "end_time": "None", "detail": [{"ip": "m4", "gpus": ["gpu7"]}]}], "submitted_time": "2017-03-12 02:30:00", "user": "u1"}
]
"""  # noqa: E501  -- a Philly job log as published: one job per line, its JSON unbroken


@pytest.fixture()
def job_log_store(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, write(tmp_path / "cluster_job_log", JOB_LOG))
    assert (report.status, report.rows, report.rejects) == ("loaded", 3, 2)
    return db


def test_job_log_times_are_utc_with_dst_rules(job_log_store: Path) -> None:
    jobs = dict(rows(job_log_store, "SELECT job_id, submit_at FROM jobs"))
    assert jobs == {
        "job_a": datetime(2017, 11, 5, 7, 5),  # 00:05 PDT
        "job_b": None,  # "None"
        # 02:30 on 2017-03-12 does not exist in Los Angeles: moved forward to 03:30 PDT
        "job_e": datetime(2017, 3, 12, 10, 30),
    }
    # 01:00 on 2017-11-05 happens twice: read as the first occurrence (PDT)
    assert rows(job_log_store, "SELECT start_at FROM attempts WHERE job_id = 'job_e'") == [
        (datetime(2017, 11, 5, 8, 0),)
    ]


def test_job_log_attempts_ordered_by_start_and_keep_source_order(job_log_store: Path) -> None:
    attempts = rows(
        job_log_store,
        "SELECT attempt_no, source_index, start_at, end_at FROM attempts WHERE job_id = 'job_a' ORDER BY attempt_no",
    )
    assert attempts == [
        (0, 1, datetime(2017, 11, 5, 7, 10), datetime(2017, 11, 5, 8, 30)),  # 00:10 PDT .. 01:30 PDT
        (1, 0, datetime(2017, 11, 5, 8, 40), datetime(2017, 11, 5, 11, 0)),  # 01:40 PDT .. 03:00 PST
        (2, 2, None, None),
    ]
    allocations = rows(
        job_log_store,
        "SELECT attempt_no, machine_id, gpu_index FROM allocations WHERE job_id = 'job_a' ORDER BY ALL",
    )
    assert allocations == [(0, "m1", 2), (0, "m2", 0), (1, "m1", 0), (1, "m1", 1)]


def test_job_log_statuses_are_normalized(job_log_store: Path) -> None:
    assert rows(job_log_store, "SELECT job_id, status, source_status FROM jobs ORDER BY 1") == [
        ("job_a", "killed", "Killed"),
        ("job_b", "passed", "Pass"),
        ("job_e", "running", "Running"),
    ]


def test_job_log_rejects_name_the_line(job_log_store: Path) -> None:
    assert rows(job_log_store, "SELECT line, reason FROM rejects ORDER BY line") == [
        (17, "attempt 0: unreadable GPU name gpuX"),
        (18, "duplicate jobid (first seen at record 1)"),  # the later copy, not the first at line 5
    ]


def test_malformed_json_fails_the_file_and_names_the_line(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    good = write(tmp_path / "cluster_machine_list", "machineId, number of GPUs, single GPU mem\nm1,8, 24GB\n")
    bad = write(
        tmp_path / "cluster_job_log", '[\n  {"jobid": "a", "attempts": []},\n  {"jobid": "b", "attempts": [}\n]\n'
    )
    machines, job_log = ingest(db, good, bad)
    assert machines.status == "loaded"
    assert job_log.status == "failed"
    assert job_log.message.startswith(f"{bad}:3: not a readable Philly job log: Expecting value")
    # The failed file left nothing behind; the good one is stored.
    assert rows(db, "SELECT count(*) FROM jobs") == [(0,)]
    assert rows(db, "SELECT format FROM ingested_files") == [("philly_machine_list",)]


GPU_UTIL = (
    "time,machineId, gpu0_util ,gpu1_util\n"
    "2017-11-05 01:30:00 PDT,m1,50.0,NA,\n"  # 08:30 UTC
    "2017-11-05 01:30:00 PST,m1,60,70,\n"  # 09:30 UTC: the repeated hour, told apart by the suffix
    "2017-11-05 01:31:00 PST,m1,60,70,1,\n"  # too many fields
    "not a time,m1,1,2,\n"
    "2017-11-05 01:32:00 PST,m1,abc,1,\n"
    "2017-11-05 01:33:00 PST,m1,130,1,\n"
    "2017-11-05 01:34:00 XST,m1,1,1,\n"
    "2017-11-05 01:35:00 PST,,1,1,\n"
    "2017-11-05 01:36:00 PST,m2,1,2\n"  # no trailing comma but every value: fine
    "2017-11-05 01:37:00 PST,m2\n"  # too few fields
)


def test_gpu_util_long_form_and_rejects(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, write(tmp_path / "cluster_gpu_util", GPU_UTIL))
    assert (report.rows, report.rejects) == (5, 7)
    assert rows(db, "SELECT sample_at, machine_id, gpu_index, util_pct FROM gpu_samples ORDER BY ALL") == [
        (datetime(2017, 11, 5, 8, 30), "m1", 0, 50.0),
        (datetime(2017, 11, 5, 9, 30), "m1", 0, 60.0),
        (datetime(2017, 11, 5, 9, 30), "m1", 1, 70.0),
        (datetime(2017, 11, 5, 9, 36), "m2", 0, 1.0),
        (datetime(2017, 11, 5, 9, 36), "m2", 1, 2.0),
    ]
    rejects = rows(db, "SELECT line, reason FROM rejects ORDER BY line")
    assert [line for line, _ in rejects] == [4, 5, 6, 7, 8, 9, 11]
    reasons = dict(rejects)
    assert reasons[4].startswith("too many fields")
    assert reasons[5] == "unreadable time not a time"
    assert reasons[6].startswith("unreadable value")
    assert reasons[7] == "GPU utilization outside 0-100"
    assert reasons[8] == "unreadable time 2017-11-05 01:34:00 XST"
    assert reasons[9] == "row without a machine id"
    assert reasons[11].startswith("too few fields")


def test_gpu_util_without_trailing_commas_or_header_and_gzipped(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    text = "2017-10-23 00:08:00 PDT,m310,0.0,NA,12.5\n2017-10-23 00:09:00 PDT,m310,1,2,3\n"
    path = tmp_path / "cluster_gpu_util.gz"
    with gzip.open(path, "wt") as f:
        f.write(text)
    (report,) = ingest(db, path)
    assert (report.format, report.rows, report.rejects) == ("philly_gpu_util", 5, 0)
    assert rows(
        db, "SELECT gpu_index, util_pct FROM gpu_samples WHERE sample_at = '2017-10-23 07:08:00' ORDER BY 1"
    ) == [
        (0, 0.0),
        (2, 12.5),
    ]


def test_cpu_and_memory_util(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cpu = write(
        tmp_path / "cluster_cpu_util",
        "time,machine_id,cpu_util\n2017-11-27 00:04:00 PST,m29,31.845\n2017-11-27 00:05:00 "
        "PST,m29,NA\n2017-11-27 00:06:00 PST,m29,-3\n",
    )
    mem = write(
        tmp_path / "cluster_mem_util",
        "time,machine_id,mem_total,mem_free\n2017-10-03 00:06:00 PDT,m29,528272672.0,2030730.6667\n",
    )
    reports = ingest(db, cpu, mem)
    assert [(r.format, r.rows, r.rejects) for r in reports] == [("philly_cpu_util", 1, 1), ("philly_mem_util", 1, 0)]
    assert rows(db, "SELECT sample_at, cpu_util_pct, mem_total_kib, mem_free_kib FROM host_samples ORDER BY 1") == [
        (datetime(2017, 10, 3, 7, 6), None, 528272672.0, 2030730.6667),
        (datetime(2017, 11, 27, 8, 4), 31.845, None, None),
    ]


def test_machine_list_and_observed_capacity(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    listing = write(
        tmp_path / "cluster_machine_list",
        "machineId, number of GPUs, single GPU mem\nm1,2, 12GB\nm2,8, 24GB\nm2,8, 24GB\nm3,x, 24GB\n",
    )
    log = write(tmp_path / "cluster_job_log", JOB_LOG)
    reports = ingest(db, listing, log)
    assert (reports[0].rows, reports[0].rejects) == (2, 2)
    assert rows(db, "SELECT line, reason FROM rejects WHERE file_id = 1 ORDER BY line") == [
        (4, "machine listed twice"),
        (5, "unreadable GPU count x"),
    ]
    # m1 is listed with 2 GPUs but job_a used its gpu2: the data says at least 3.
    assert rows(
        db, "SELECT machine_id, listed_gpus, observed_gpus, gpu_memory_gb FROM machine_capacity ORDER BY 1"
    ) == [
        ("m1", 2, 3, 12.0),
        ("m2", 8, 1, 24.0),
        ("m4", None, 8, None),
    ]


def test_a_machine_listed_with_more_gpus_than_any_holds_is_rejected(tmp_path: Path) -> None:
    """Issue #26: a listed GPU count past the bound of GPUs per node (1,024, --max-gpus-per-node)."""
    db = tmp_path / "s.duckdb"
    listing = write(
        tmp_path / "cluster_machine_list", "machineId, number of GPUs, single GPU mem\nm1,8, 24GB\nm2,100000, 24GB\n"
    )
    (report,) = ingest(db, listing)
    assert (report.rows, report.rejects) == (1, 1)
    assert rows(db, "SELECT line, reason FROM rejects") == [
        (3, "100000 GPUs on one node: over the bound of 1,024 GPUs per node (--max-gpus-per-node)")
    ]


def test_reingest_is_a_noop_and_replace_reloads(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    log = write(tmp_path / "cluster_job_log", JOB_LOG)
    ingest(db, log)
    (again,) = ingest(db, log)
    assert again.status == "unchanged"
    assert rows(db, "SELECT count(*) FROM jobs") == [(3,)]
    (replaced,) = ingest(db, log, replace=True)
    assert (replaced.status, replaced.rows, replaced.rejects) == ("replaced", 3, 2)
    assert rows(db, "SELECT count(*), count(DISTINCT file_id) FROM jobs") == [(3, 1)]
    assert rows(db, "SELECT count(*) FROM rejects") == [(2,)]
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(1,)]


def test_changed_file_needs_replace(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    log = write(tmp_path / "cluster_job_log", JOB_LOG)
    ingest(db, log)
    log.write_text(JOB_LOG.replace("job_b", "job_z"))
    (report,) = ingest(db, log)
    assert report.status == "failed" and "--replace" in report.message
    (report,) = ingest(db, log, replace=True)
    assert report.status == "replaced"
    assert ("job_z",) in rows(db, "SELECT job_id FROM jobs")
    assert ("job_b",) not in rows(db, "SELECT job_id FROM jobs")


def test_strict_stores_nothing_from_a_file_with_rejects(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, write(tmp_path / "cluster_gpu_util", GPU_UTIL), strict=True)
    assert report.status == "failed"
    assert report.message.startswith(f"{tmp_path / 'cluster_gpu_util'}:4: too many fields")
    assert rows(
        db,
        "SELECT (SELECT count(*) FROM gpu_samples), (SELECT count(*) FROM rejects), (SELECT count(*) FROM "
        "ingested_files)",
    ) == [(0, 0, 0)]


def test_same_job_in_two_logs_is_rejected_not_doubled(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = write(tmp_path / "cluster_job_log", JOB_LOG)
    other = tmp_path / "more"
    other.mkdir()
    second = write(other / "cluster_job_log", json.dumps([{"jobid": "job_b", "status": "Pass", "attempts": []}]))
    reports = ingest(db, first, second)
    # its only row rejected: the second file failed, with the reason as the likely cause
    assert reports[1].status == "failed"
    assert (
        "every row was rejected, nothing stored (1 rows); the likely cause, in all: jobid already stored "
        f"from {first.resolve()}" in reports[1].message
    )
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(1,)]


def test_unknown_file_named_explicitly_is_an_input_error(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    notes = write(tmp_path / "notes.txt", "hello\n")
    log = write(tmp_path / "cluster_job_log", JOB_LOG)
    with pytest.raises(InputError, match="notes.txt: not a format gca recognizes"):
        ingest(db, log, notes)
    # Planning happens before loading: nothing was stored, not even the good file.
    assert rows(db, "SELECT count(*) FROM ingested_files") == [(0,)]


def test_directory_walk_skips_unknown_files(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write(data / "README.md", "# notes\n")
    write(data / "cluster_job_log", JOB_LOG)
    skipped = []

    class Listener:
        def skipped(self, path: Path, reason: str) -> None:
            skipped.append(path.name)

        def planned(self, files: int) -> None: ...
        def file_started(self, *a: object) -> None: ...
        def file_progress(self, *a: object) -> None: ...
        def file_finished(self, *a: object) -> None: ...

    with open_store(tmp_path / "s.duckdb") as con:
        reports = ingest_paths(con, [data], IngestOptions(), listener=Listener())
    assert [r.format for r in reports] == ["philly_job_log"]
    assert skipped == ["README.md"]


def test_store_is_not_left_locked_or_half_written_after_a_failure(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, write(tmp_path / "cluster_job_log", '[{"jobid": "a", "attempts": [}]'))
    assert report.status == "failed"
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM ingested_files").fetchone() == (0,)
    con.close()


# Issue #26: absurd values in a Philly job log. Each job: (jobid, submitted_time, attempts as
# (start_time, end_time, {machine: [GPU indices]})), in Los Angeles time as the log writes it.
SANE_JOBS = [
    ("ok_1", "2017-10-01 00:00:00", [("2017-10-01 01:00:00", "2017-10-01 03:00:00", {"m1": [0, 1]})]),
    (
        "ok_2",
        "2017-10-02 10:00:00",
        [
            ("2017-10-02 10:30:00", "2017-10-02 11:30:00", {"m1": [2, 3], "m2": [0, 1]}),
            ("2017-10-02 12:00:00", "2017-10-02 12:15:00", {"m2": [7]}),
        ],
    ),
]
# ... and the jobs each rejected whole for one absurd value, with the reason
ABSURD_JOBS = [
    (
        "in_2999",
        "2017-10-01 00:00:00",
        [("2999-10-01 01:00:00", "2017-10-01 03:00:00", {"m1": [4]})],
        "attempt 0: start_time 2999-10-01 01:00:00 is outside the years gca reads (1990-2059)",
    ),
    # the issue's: a run time of -360,786 s, subtracted from the totals
    (
        "backwards",
        "2017-10-01 00:00:00",
        [("2017-10-05 01:00:00", "2017-10-01 00:46:54", {"m1": [5]})],
        "attempt 0: end_time 2017-10-01 00:46:54 is before start_time 2017-10-05 01:00:00",
    ),
    (
        "gpu_5000",
        "2017-10-01 00:00:00",
        [("2017-10-01 01:00:00", "2017-10-01 03:00:00", {"m3": [5000]})],
        "attempt 0: gpu5000 on machine m3: over the bound of 1,024 GPUs per node (--max-gpus-per-node)",
    ),
    # one sane attempt and one absurd: not half a job
    (
        "half",
        "2017-10-01 00:00:00",
        [
            ("2017-10-01 01:00:00", "2017-10-01 02:00:00", {"m4": [0]}),
            ("2017-10-01 05:00:00", "2017-10-01 04:00:00", {"m4": [0]}),
        ],
        "attempt 1: end_time 2017-10-01 04:00:00 is before start_time 2017-10-01 05:00:00",
    ),
    (
        "submitted_1989",
        "1989-12-31 23:00:00",
        [("2017-10-01 01:00:00", "2017-10-01 02:00:00", {"m1": [0]})],
        "submitted_time 1989-12-31 23:00:00 is outside the years gca reads (1990-2059)",
    ),
]


def _philly_log(jobs: list) -> str:
    """A job log of `jobs`, one JSON record per line (so that a record's line is its job's)."""
    records = [
        json.dumps(
            {
                "status": "Pass",
                "vc": "vc1",
                "jobid": job,
                "user": "u1",
                "submitted_time": submitted,
                "attempts": [
                    {
                        "start_time": s,
                        "end_time": e,
                        "detail": [{"ip": m, "gpus": [f"gpu{g}" for g in gpus]} for m, gpus in cells.items()],
                    }
                    for s, e, cells in attempts
                ],
            }
        )
        for job, submitted, attempts, *_ in jobs
    ]
    return "[\n" + ",\n".join(records) + "\n]\n"


def test_absurd_times_and_gpus_reject_their_job_and_leave_the_headline_to_the_sane_ones(tmp_path: Path) -> None:
    """Issue #26, item 4: a Philly attempt starting in 2999 gave "17,202,524 waiting GPU-hours"
    and a period to 2999; one whose end precedes its start a gpu_time_s of -360,786, subtracted
    from the totals. Reproduction:

        (echo '[{"jobid": "a", "status": "Pass", "vc": "v", "user": "u", "submitted_time": "2017-10-01 00:00:00",'
         echo '   "attempts": [{"start_time": "2999-10-01 01:00:00", "end_time": "2999-10-01 03:00:00",'
         echo '                 "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]}]') > cluster_job_log
        gca ingest cluster_job_log --db p.duckdb && gca report --db p.duckdb --out r --json

    Now each such job is rejected whole, with its line and reason, and the report's headline
    numbers are those of the sane jobs, worked out here from the same list.
    """
    db = tmp_path / "p.duckdb"
    jobs = [SANE_JOBS[0], *ABSURD_JOBS[:3], SANE_JOBS[1], *ABSURD_JOBS[3:]]
    (report,) = ingest(db, write(tmp_path / "cluster_job_log", _philly_log(jobs)))
    assert (report.status, report.rows, report.rejects) == ("loaded", len(SANE_JOBS), len(ABSURD_JOBS))
    lines = {job[0]: n + 2 for n, job in enumerate(jobs)}  # line 1 is '['
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [(lines[j[0]], j[3]) for j in ABSURD_JOBS]
    assert rows(db, "SELECT job_id FROM jobs ORDER BY 1") == [("ok_1",), ("ok_2",)]
    assert rows(db, "SELECT count(*) FROM attempts WHERE job_id NOT LIKE 'ok_%'") == [(0,)]

    la = ZoneInfo("America/Los_Angeles")

    def utc(text: str) -> datetime:
        return datetime.fromisoformat(text).replace(tzinfo=la).astimezone(UTC).replace(tzinfo=None)

    def hours(start: str, end: str) -> float:
        return (utc(end) - utc(start)).total_seconds() / 3600

    gpu_hours = sum(
        hours(s, e) * sum(len(g) for g in cells.values()) for _, _, attempts in SANE_JOBS for s, e, cells in attempts
    )
    # the first wait (submission to first start) x the first attempt's GPUs; the retry's wait is no cause's
    wait_gpu_hours = sum(
        hours(submitted, attempts[0][0]) * sum(len(g) for g in attempts[0][2].values())
        for _, submitted, attempts in SANE_JOBS
    )
    times = [
        utc(t)
        for _, submitted, attempts in SANE_JOBS
        for t in (submitted, *(x for s, e, _ in attempts for x in (s, e)))
    ]
    highest: dict[str, int] = {}
    for _, _, attempts in SANE_JOBS:
        for _, _, cells in attempts:
            for machine, gpus in cells.items():
                highest[machine] = max(highest.get(machine, -1), *gpus)
    overview = (h := headline(db, tmp_path / "r"))["overview"]
    assert (overview["jobs"], overview["attempts"]) == (2, 3)
    assert overview["gpu_hours"] == pytest.approx(gpu_hours) == 8.25
    assert (overview["first_at"], overview["last_at"]) == (
        f"{min(times):%Y-%m-%dT%H:%M:%S}Z",
        f"{max(times):%Y-%m-%dT%H:%M:%S}Z",
    )
    assert (overview["machines"], overview["gpus"]) == (len(highest), sum(g + 1 for g in highest.values())) == (2, 12)
    assert h["queueing"]["wait_gpu_hours"] == pytest.approx(wait_gpu_hours) == 4.0


def test_the_bound_of_gpus_per_node_is_an_option(tmp_path: Path) -> None:
    """A cluster of bigger nodes passes --max-gpus-per-node (IngestOptions.max_gpus_per_node)."""
    log = write(tmp_path / "cluster_job_log", _philly_log([ABSURD_JOBS[2]]))
    (report,) = ingest(tmp_path / "a.duckdb", log)
    assert report.status == "failed" and "over the bound of 1,024 GPUs per node" in report.message
    (report,) = ingest(tmp_path / "b.duckdb", log, max_gpus_per_node=8192)
    assert (report.status, report.rows, report.rejects) == ("loaded", 1, 0)
    assert rows(tmp_path / "b.duckdb", "SELECT machine_id, gpu_index FROM allocations") == [("m3", 5000)]
    (report,) = ingest(tmp_path / "c.duckdb", log, max_gpus_per_node=5000)  # indices 0-4999
    assert report.status == "failed"
