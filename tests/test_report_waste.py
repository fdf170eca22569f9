"""Who wastes GPUs (query gpu_waste, section waste): numbers worked out by hand, and on the real
Philly sample against a plain per-user sum over jobs.csv.

Jobs on machines n1 (GPUs 0-3) and n2 (GPUs 0-1); 2024-01-01 and 2024-01-08 are Mondays:
  A  alice, v1: n1 GPUs 0, 1, Jan 1 00:00-02:00 (4 GPU-hours), every sample 50%
  B  alice, v1: n1 GPU 2,     Jan 1 00:00-01:00 (1 GPU-hour), every sample 0%: idle
  C  bob,   v2: n2 GPUs 0, 1, Jan 8 00:00-03:00 (6 GPU-hours), GPU 0 at 80%, GPU 1 at 40%;
     DCGM SM activity 0.25 on both
  D  carol, v2: n1 GPU 3,     Jan 8 00:00-01:00 (1 GPU-hour), no sample at all: unknown
  E  dave,  v1: n1 GPU 0,     Jan 8 05:00-05:06 (0.1 GPU-hour), every sample 0%: idle, and
     0.1 of 12.1 GPU-hours (0.8%) is under the 2% floor
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from gpucluster_analysis.analyze.prepare import prepare, prepare_report, run_query
from gpucluster_analysis.db import open_store
from gpucluster_analysis.report.build import build_report
from gpucluster_analysis.report.sections import waste
from tests.store_helpers import prepared_store

MONDAY = datetime(2024, 1, 1)
NEXT_MONDAY = datetime(2024, 1, 8)
# job: (user, vc, start, minutes, [(machine, gpu, util %)], SM activity or None)
JOBS = {
    "A": ("alice", "v1", MONDAY, 120, [("n1", 0, 50), ("n1", 1, 50)], None),
    "B": ("alice", "v1", MONDAY, 60, [("n1", 2, 0)], None),
    "C": ("bob", "v2", NEXT_MONDAY, 180, [("n2", 0, 80), ("n2", 1, 40)], 0.25),
    "D": ("carol", "v2", NEXT_MONDAY, 60, [("n1", 3, None)], None),
    "E": ("dave", "v1", NEXT_MONDAY + timedelta(hours=5), 6, [("n1", 0, 0)], None),
}
TOTAL_GPU_HOURS = 4 + 1 + 6 + 1 + 0.1


def _q(t: datetime) -> str:
    return f"'{t:%Y-%m-%d %H:%M:%S}'"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return _write_store(tmp_path / "w.duckdb", JOBS)


def _write_store(db: Path, plan: dict) -> Path:
    jobs, attempts, allocations, samples, details = [], [], [], [], []
    for job, (user, vc, start, minutes, gpus, sm) in plan.items():
        end = start + timedelta(minutes=minutes)
        jobs.append(f"('philly', '{job}', '{user}', '{vc}', 'passed', {_q(start)}, 1)")
        attempts.append(f"('philly', '{job}', 0, 0, {_q(start)}, {_q(end)}, 1)")
        for machine, gpu, util in gpus:
            allocations.append(f"('philly', '{job}', 0, '{machine}', {gpu}, 1)")
            if util is None:
                continue
            at = start
            while at < end:  # a sample every 3 minutes, all inside the job
                samples.append(f"({_q(at)}, '{machine}', {gpu}, {util}, 1)")
                if sm is not None:
                    details.append(f"({_q(at)}, '{machine}', {gpu}, NULL, {sm}, NULL, 1)")
                at += timedelta(minutes=3)
    with open_store(db) as con:
        con.execute(
            "INSERT INTO jobs (source, job_id, user_name, vc, status, submit_at, file_id) VALUES " + ", ".join(jobs)
        )
        con.execute(
            "INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id) VALUES "
            + ", ".join(attempts)
        )
        con.execute("INSERT INTO allocations VALUES " + ", ".join(allocations))
        con.execute("INSERT INTO gpu_samples VALUES " + ", ".join(samples))
        if details:
            con.execute(
                "INSERT INTO gpu_sample_details (sample_at, machine_id, gpu_index, gpu_instance_id, sm_active,"
                " tensor_active, file_id) VALUES " + ", ".join(details)
            )
    return db


def _waste(db: Path, floor_pct: float = 2.0) -> dict[tuple[str, str], dict]:
    with prepared_store(db) as con:
        prepare_report(con)
        rows = run_query(con, "gpu_waste", waste_floor_pct=floor_pct).to_dicts()
    return {(r["scope"], r["name"]): r for r in rows}


def test_each_user_vc_and_week_by_hand(store: Path) -> None:
    w = _waste(store)
    assert sorted(w) == sorted(
        [("user", u) for u in ("alice", "bob", "carol", "dave")]
        + [("vc", "v1"), ("vc", "v2"), ("week", "2024-01-01"), ("week", "2024-01-08")]
    )
    alice, bob, carol, dave = (w["user", u] for u in ("alice", "bob", "carol", "dave"))
    # alice: A used 4 x 50% = 2 of 4, B used none of 1
    assert alice["gpu_hours"] == pytest.approx(5) and alice["measured_gpu_hours"] == pytest.approx(5)
    assert alice["unused_gpu_hours"] == pytest.approx(3) and alice["mean_gpu_util_pct"] == pytest.approx(40)
    assert (alice["idle_jobs"], alice["idle_gpu_hours"]) == (1, pytest.approx(1))
    assert alice["gpu_hours_pct"] == pytest.approx(100 * 5 / TOTAL_GPU_HOURS)
    # bob: the job's mean is over both GPUs' samples, (80 + 40) / 2 = 60%; SM activity 25%
    assert bob["unused_gpu_hours"] == pytest.approx(6 * 0.4) and bob["mean_gpu_util_pct"] == pytest.approx(60)
    assert bob["sm_gpu_hours"] == pytest.approx(6) and bob["mean_sm_active_pct"] == pytest.approx(25)
    assert alice["sm_gpu_hours"] == 0 and alice["mean_sm_active_pct"] is None
    # carol: no sample is unknown, never idle or unused, and not ranked
    assert carol["unknown_gpu_hours"] == pytest.approx(1) and carol["measured_gpu_hours"] == 0
    assert carol["mean_gpu_util_pct"] is None and carol["idle_gpu_hours"] == 0 and carol["unused_gpu_hours"] == 0
    # ranked by unused GPU-hours; dave (0.8% of the GPU-hours) is under the floor, carol unmeasured
    assert (alice["rank"], bob["rank"], carol["rank"], dave["rank"]) == (1, 2, None, None)
    assert dave["idle_gpu_hours"] == pytest.approx(0.1) and dave["unused_gpu_hours"] == pytest.approx(0.1)
    v1, v2 = w["vc", "v1"], w["vc", "v2"]
    assert (v1["jobs"], v1["unused_gpu_hours"], v1["idle_jobs"]) == (3, pytest.approx(3.1), 2)
    assert (v2["jobs"], v2["gpu_hours"], v2["unknown_gpu_hours"]) == (2, pytest.approx(7), pytest.approx(1))
    assert (v1["rank"], v2["rank"]) == (1, 2)
    first, second = w["week", "2024-01-01"], w["week", "2024-01-08"]
    assert first["unused_pct"] == pytest.approx(60) and first["rank"] is None
    # C, D and E: 6.1 measured GPU-hours of which 3.6 used
    assert second["measured_gpu_hours"] == pytest.approx(6.1)
    assert second["unused_pct"] == pytest.approx(100 * 2.5 / 6.1)


def test_the_floor_is_a_parameter(store: Path) -> None:
    w = _waste(store, floor_pct=0.5)
    assert [w["user", u]["rank"] for u in ("alice", "bob", "dave")] == [1, 2, 3]


def test_section_leads_with_the_unused_share_and_needs_utilization(store: Path, tmp_path: Path) -> None:
    page = build_report(store, tmp_path / "out").html.read_text()
    assert 'id="waste"' in page
    # 3 + 2.4 + 0.1 unused of 11.1 measured GPU-hours
    assert f"went unused ({100 * 5.5 / 11.1:.1f}%); user alice left the most" in page
    assert "2 jobs never used their GPUs" in page
    # the weeks of Jan 1 (60% unused) and Jan 8 (2.5 of 6.1) both hold over 2% of the measured
    assert f"ranged from {100 * 2.5 / 6.1:.1f}% (week of 2024-01-08) to 60.0% (week of 2024-01-01)" in page
    with open_store(store) as con:
        con.execute("DELETE FROM gpu_samples")
    with open_store(store, read_only=True) as con:
        prepare(con)
        prepare_report(con)
        unmeasured = run_query(con, "gpu_waste", waste_floor_pct=2.0)
    assert unmeasured.height == 8 and waste.section({"gpu_waste": unmeasured}) is None


def test_a_long_even_trace_has_no_week_over_the_floor_and_still_gets_its_section(tmp_path: Path) -> None:
    """60 weeks of one equal job each: every week holds 1/60 of the GPU-hours, under the 2% floor
    of the weeks' sentence, which then speaks of all of them."""
    plan = {f"J{week}": ("u", "v", MONDAY + timedelta(weeks=week), 60, [("n1", 0, 50)], None) for week in range(60)}
    page = build_report(_write_store(tmp_path / "long.duckdb", plan), tmp_path / "out").html.read_text()
    assert "Over the 60 weeks with utilization samples, the unused share ranged from 50.0%" in page


def test_real_sample_matches_a_plain_sum_over_jobs_csv(sample_report) -> None:
    """Per user, from jobs.csv alone: GPU-hours, measured GPU-hours, GPU-hour-weighted utilization."""
    jobs = pl.read_csv(sample_report.out_dir / "jobs.csv", infer_schema_length=None).filter(pl.col("gpu_time_s") > 0)
    expected = {}
    for row in jobs.to_dicts():
        e = expected.setdefault(row["user"], [0.0, 0.0, 0.0])
        hours = row["gpu_time_s"] / 3600
        e[0] += hours
        if row["mean_gpu_util_pct"] is not None:
            e[1] += hours
            e[2] += hours * row["mean_gpu_util_pct"] / 100
    waste = pl.read_csv(sample_report.out_dir / "gpu_waste.csv", infer_schema_length=None)
    users = {r["name"]: r for r in waste.filter(pl.col("scope") == "user").to_dicts()}
    assert set(users) == set(expected)
    for user, (hours, measured, used) in expected.items():
        got = users[user]
        assert got["gpu_hours"] == pytest.approx(hours, abs=1e-6), user
        assert (got["measured_gpu_hours"] or 0) == pytest.approx(measured, abs=1e-6), user
        assert (got["unused_gpu_hours"] or 0) == pytest.approx(measured - used, abs=1e-5), user
    total = sum(h for h, _, _ in expected.values())
    ranked = [u for u, (h, m, _) in expected.items() if m > 0 and 100 * h / total >= 2.0]
    assert {u for u, r in users.items() if r["rank"] is not None} == set(ranked)
