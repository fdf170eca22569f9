"""Job size buckets (sql/queries/job_keys.sql): '0' (CPU-only), '<1' (a share of one GPU),
'1', '2-4', '5-8', '>8', 'unknown', ordered by size_order 1..7.

One hand-written Alibaba pod list holds a job of every kind; each pod that ran ran one
hour (creation = scheduling at 0 s, deletion at 3600 s), so its GPU-hours are its GPUs.
"""

from __future__ import annotations

import csv
from pathlib import Path

from gpucluster_analysis.report.build import build_report
from gpucluster_analysis.report.figure_style import SIZE_ORDER
from tests.store_helpers import ingest, prepared_store, write

PODS = (
    "\n".join(
        [
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time",
            "cpu,4000,8192,0,0,,LS,Succeeded,0,3600,0",  # no GPU: '0'
            "half,4000,8192,1,500,,LS,Succeeded,0,3600,0",  # 0.5 GPU: '<1'
            "one,4000,8192,1,1000,,LS,Succeeded,0,3600,0",  # '1'
            "one-and-a-half,4000,8192,3,500,,LS,Succeeded,0,3600,0",  # 3 x 0.5 = 1.5: above 1, '2-4'
            "pending-two,4000,8192,2,1000,,LS,Pending,0,3600,",  # never ran; asked for 2: '2-4'
            "eight,4000,8192,8,1000,,LS,Succeeded,0,3600,0",  # '5-8'
            "sixteen,4000,8192,16,1000,,LS,Succeeded,0,3600,0",  # '>8'
            "no-count,4000,8192,,,,LS,Succeeded,0,3600,0",  # GPUs not given: 'unknown'
        ]
    )
    + "\n"
)
EXPECTED = {
    "cpu": ("0", 1),
    "half": ("<1", 2),
    "one": ("1", 3),
    "one-and-a-half": ("2-4", 4),
    "pending-two": ("2-4", 4),
    "eight": ("5-8", 5),
    "sixteen": (">8", 6),
    "no-count": ("unknown", 7),
}


def test_each_job_is_in_its_bucket(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, write(tmp_path / "openb_pod_list_sizes.csv", PODS))
    assert (report.rows, report.rejects) == (8, 0)
    with prepared_store(db) as con:
        got = {
            job_id: (bucket, order)
            for job_id, bucket, order in con.execute("SELECT job_id, size_bucket, size_order FROM job_keys").fetchall()
        }
    assert got == EXPECTED
    assert SIZE_ORDER == ["0", "<1", "1", "2-4", "5-8", ">8", "unknown"]


def test_report_tables_list_the_buckets_in_size_order(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    ingest(db, write(tmp_path / "openb_pod_list_sizes.csv", PODS))
    written = build_report(db, tmp_path / "report")
    with open(written.out_dir / "jobs_by_size.csv", newline="") as f:
        by_size = list(csv.DictReader(f))
    assert [r["size_bucket"] for r in by_size] == ["0", "<1", "1", "2-4", "5-8", ">8", "unknown"]
    assert {r["size_bucket"]: int(r["jobs"]) for r in by_size} == {
        "0": 1,
        "<1": 1,
        "1": 1,
        "2-4": 2,
        "5-8": 1,
        ">8": 1,
        "unknown": 1,
    }
    # one hour each: GPU-hours = GPUs (the pending pod adds none, the CPU pod 0)
    hours = {r["size_bucket"]: float(r["gpu_hours"]) for r in by_size if r["gpu_hours"]}
    assert {b: hours[b] for b in ("0", "<1", "1", "2-4", "5-8", ">8")} == {
        "0": 0.0,
        "<1": 0.5,
        "1": 1.0,
        "2-4": 1.5,
        "5-8": 8.0,
        ">8": 16.0,
    }
    # the queueing summary: every pod that ran started at once; ordered by size, 'all' last
    with open(written.out_dir / "queue_delay_summary_by_size.csv", newline="") as f:
        summary = [(r["size_bucket"], r["jobs"], r["jobs_with_delay"]) for r in csv.DictReader(f)]
    assert summary == [
        ("0", "1", "1"),
        ("<1", "1", "1"),
        ("1", "1", "1"),
        ("2-4", "2", "1"),
        ("5-8", "1", "1"),
        (">8", "1", "1"),
        ("unknown", "1", "1"),
        ("all", "8", "7"),
    ]
    # the page names the fractional bucket as text, never as a stray tag
    assert "<1 GPU" not in (written.out_dir / "index.html").read_text()
