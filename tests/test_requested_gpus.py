"""jobs.requested_gpus: the GPUs a job asked for, kept also for a job that never ran, and
jobs.csv's num_gpus falling back to it when no attempt was allocated.

Expected values are worked out by hand from the rows written here, or counted from the
real Alibaba pod list with the csv module, independently of gca.
"""

from __future__ import annotations

import csv
from pathlib import Path

from tests.conftest import SHARED_DATA, require
from tests.store_helpers import ingest, jobs_csv, rows, write

POD_LIST = SHARED_DATA / "public-traces" / "alibaba-gpu-2023" / "openb_pod_list_default.csv"


def test_pending_gpu_pods_of_the_real_pod_list_get_their_request(tmp_path: Path) -> None:
    path = require(POD_LIST)
    with open(path, newline="") as f:
        pods = list(csv.DictReader(f))
    # a pending pod asks for num_gpu GPUs, each gpu_milli/1000 of one (shared when < 1000)
    pending_gpu = {
        p["name"]: int(p["num_gpu"]) * int(p["gpu_milli"]) / 1000
        for p in pods
        if p["pod_phase"] == "Pending" and int(p["num_gpu"]) > 0
    }
    pending_cpu = {p["name"] for p in pods if p["pod_phase"] == "Pending" and int(p["num_gpu"]) == 0}
    assert len(pending_gpu) == 861  # as the data README counts them
    db = tmp_path / "t.duckdb"
    (report,) = ingest(db, path)
    assert (report.rows, report.rejects) == (len(pods), 0)
    jobs = jobs_csv(db)
    got = {
        job_id: float(j["num_gpus"])
        for job_id, j in jobs.items()
        if j["status"] == "pending" and j["num_gpus"] is not None and float(j["num_gpus"]) > 0
    }
    assert got.keys() == pending_gpu.keys()
    assert all(abs(got[name] - want) < 1e-9 for name, want in pending_gpu.items())
    # never allocated: no servers, no run, no GPU time
    assert {(jobs[n]["attempts"], jobs[n]["num_servers"], jobs[n]["gpu_time_s"]) for n in pending_gpu} == {
        (0, None, None)
    }
    # pending CPU pods asked for no GPU: 0, not unknown
    assert {float(jobs[n]["num_gpus"]) for n in pending_cpu} == {0.0}
    # every pod gives num_gpu, so no job's size is unknown any more
    assert sum(1 for j in jobs.values() if j["num_gpus"] is None) == 0


def test_helios_jobs_keep_gpu_num_as_their_request(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cluster_log.csv",
        "\n".join(
            [
                "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue",
                "1,u,v,8,32,1,COMPLETED,2020-06-09 18:00:00,2020-06-09 18:00:10,2020-06-09 19:00:10,3600,10",
                "2,u,v,16,64,2,CANCELLED by 7,2020-06-09 18:00:00,,,0,0",  # cancelled while pending
                # Slurm's start = end
                "3,u,v,4,8,1,CANCELLED,2020-06-09 18:00:00,2020-06-09 18:30:00,2020-06-09 18:30:00,0,0",
                "4,u,v,,8,1,PENDING,2020-06-09 18:00:00,,,0,0",  # no GPU count
            ]
        )
        + "\n",
    )
    db = tmp_path / "t.duckdb"
    ingest(db, path)
    assert rows(db, "SELECT job_id, requested_gpus FROM jobs ORDER BY job_id") == [
        ("1", 8.0),
        ("2", 16.0),
        ("3", 4.0),
        ("4", None),
    ]
    jobs = jobs_csv(db)
    assert {k: (j["attempts"], j["num_gpus"], j["num_servers"]) for k, j in jobs.items()} == {
        "1": (1, 8, 1),
        "2": (0, 16, None),  # its request; servers not known without an allocation
        "3": (0, 4, None),
        "4": (0, None, None),
    }


def test_sacct_request_comes_from_reqtres_else_alloctres(tmp_path: Path) -> None:
    path = write(
        tmp_path / "sacct.txt",
        "\n".join(
            [
                "JobID|State|Submit|Start|End|NNodes|AllocTRES|ReqTRES|NodeList",
                # ran: ReqTRES and AllocTRES agree
                "501|COMPLETED|2024-06-01T09:00:00|2024-06-01T10:00:00|2024-06-01T11:00:00|1|cpu=8,gres/gpu=4,node=1|cpu=8,gres/gpu=4,node=1|gpu01",
                # pending: no AllocTRES; asks for 2 GPUs
                "502|PENDING|2024-06-01T09:00:00|Unknown|Unknown|1||cpu=4,gres/gpu:a100=2,node=1|None assigned",
                # no ReqTRES written: the request is what was allocated
                "503|COMPLETED|2024-06-01T09:00:00|2024-06-01T10:00:00|2024-06-01T11:00:00|1|cpu=8,gres/gpu=1,node=1||gpu02",
                # a CPU job: asks for no GPU (the dump accounts GPUs, so no key is 0)
                "504|COMPLETED|2024-06-01T09:00:00|2024-06-01T10:00:00|2024-06-01T11:00:00|1|cpu=8,node=1|cpu=8,node=1|cpu01",
                # neither: unknown
                "505|PENDING|2024-06-01T09:00:00|Unknown|Unknown|1|||None assigned",
            ]
        )
        + "\n",
    )
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, path, zone="UTC")
    assert (report.rows, report.rejects) == (5, 0)
    assert rows(db, "SELECT job_id, requested_gpus FROM jobs ORDER BY job_id") == [
        ("501", 4.0),
        ("502", 2.0),
        ("503", 1.0),
        ("504", 0.0),
        ("505", None),
    ]


def test_sacct_without_gpu_accounting_requests_nothing_known(tmp_path: Path) -> None:
    # no row's TRES names a GPU: the site does not account them, so no key says nothing
    path = write(
        tmp_path / "sacct.txt", "JobID|State|Start|End|AllocTRES|ReqTRES\n601|PENDING|Unknown|Unknown||cpu=8,node=1\n"
    )
    db = tmp_path / "s.duckdb"
    ingest(db, path, zone="UTC")
    assert rows(db, "SELECT requested_gpus FROM jobs") == [(None,)]
