"""True GPU activity: DCGM's SM and tensor activity per job beside utilization.gpu, worked out by hand.

Two jobs on machine n1 (times in minutes after 2024-01-01 00:00 UTC):
  A  GPUs 0, 1 of n1, [0, 30): utilization 90% every sample, SM activity 0.10 and 0.15
     (kernels all the time, on few SMs: looks busy, nearly idle), tensor 0.05 and 0.10
  B  GPU 2 of n1, [0, 30): utilization 60%, SM activity 0.50, tensor 0.40
Samples every 10 minutes at 0, 10, 20 on each GPU, one more at 30 (after both ended: nobody's),
and a MIG instance row of GPU 2 (not a whole GPU: never attributed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster_analysis.analyze.prepare import jobs_table, prepare, prepare_report, run_query
from gpucluster_analysis.db import open_store
from gpucluster_analysis.report.build import build_report


def _t(minutes: int) -> str:
    return f"2024-01-01 00:{minutes:02d}:00"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "a.duckdb"
    details, samples = [], []
    plan = {0: (90, 0.10, 0.05), 1: (90, 0.15, 0.10), 2: (60, 0.50, 0.40)}
    for gpu, (util, sm, tensor) in plan.items():
        for m in (0, 10, 20, 30):
            samples.append(f"('{_t(m)}', 'n1', {gpu}, {util}, 1)")
            details.append(f"('{_t(m)}', 'n1', {gpu}, NULL, {sm}, {tensor}, 1)")
    details.append(f"('{_t(10)}', 'n1', 2, 1, 0.99, 0.99, 1)")  # MIG instance 1 of GPU 2
    with open_store(db) as con:
        con.execute(
            "INSERT INTO jobs (source, job_id, user_name, vc, status, submit_at, file_id) VALUES"
            f" ('philly', 'A', 'u', 'v', 'passed', '{_t(0)}', 1), ('philly', 'B', 'u', 'v', 'passed', '{_t(0)}', 1)"
        )
        con.execute(
            "INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id) VALUES"
            f" ('philly', 'A', 0, 0, '{_t(0)}', '{_t(30)}', 1), ('philly', 'B', 0, 0, '{_t(0)}', '{_t(30)}', 1)"
        )
        con.execute(
            "INSERT INTO allocations VALUES ('philly', 'A', 0, 'n1', 0, 1), ('philly', 'A', 0, 'n1', 1, 1),"
            " ('philly', 'B', 0, 'n1', 2, 1)"
        )
        con.execute("INSERT INTO gpu_samples VALUES " + ", ".join(samples))
        con.execute(
            "INSERT INTO gpu_sample_details (sample_at, machine_id, gpu_index, gpu_instance_id, sm_active,"
            " tensor_active, file_id) VALUES " + ", ".join(details)
        )
    return db


def test_jobs_csv_means_over_the_jobs_own_samples(store: Path) -> None:
    with open_store(store, read_only=True) as con:
        prepare(con)
        rows = {r["job_id"]: r for r in jobs_table(con).to_dicts()}
    # A: samples at 0, 10, 20 on GPUs 0 and 1 (30 is after its end): SM (0.10 x 3 + 0.15 x 3) / 6
    assert rows["A"]["mean_sm_active_pct"] == pytest.approx(12.5)
    assert rows["A"]["mean_tensor_active_pct"] == pytest.approx(7.5)
    assert rows["A"]["mean_gpu_util_pct"] == pytest.approx(90.0)
    # B: GPU 2's three whole-GPU samples; the MIG instance row (0.99) is not B's
    assert rows["B"]["mean_sm_active_pct"] == pytest.approx(50.0)
    assert rows["B"]["mean_tensor_active_pct"] == pytest.approx(40.0)


def test_summary_names_the_busy_but_idle_job(store: Path) -> None:
    with open_store(store, read_only=True) as con:
        prepare(con)
        prepare_report(con)
        s = run_query(con, "gpu_activity_summary", busy_util_pct=50.0, idle_sm_pct=20.0).row(0, named=True)
        busy = run_query(con, "gpu_activity_busy_idle", busy_util_pct=50.0, idle_sm_pct=20.0, top_jobs=5)
    assert (s["jobs_measured"], s["sm_samples"]) == (2, 9)
    # sample-weighted: (0.10 x 3 + 0.15 x 3 + 0.50 x 3) / 9
    assert s["mean_sm_active_pct"] == pytest.approx(100 * (0.3 + 0.45 + 1.5) / 9)
    assert s["mean_gpu_util_pct"] == pytest.approx((90 * 6 + 60 * 3) / 9)
    # A is busy (90%) but nearly idle (12.5% < 20%): 2 GPUs x 30 minutes = 1 GPU-hour of 1.5
    assert (s["busy_idle_jobs"], s["busy_idle_gpu_hours"]) == (1, pytest.approx(1.0))
    assert s["busy_idle_gpu_hours_pct"] == pytest.approx(100 / 1.5)
    assert busy.get_column("job_id").to_list() == ["A"]


def test_report_has_the_activity_section_only_with_profiling_samples(store: Path, tmp_path: Path) -> None:
    page = build_report(store, tmp_path / "out").html.read_text()
    assert 'id="activity"' in page and "look busy by utilization" in page
    with open_store(store) as con:
        con.execute("DELETE FROM gpu_sample_details")
    page = build_report(store, tmp_path / "out2").html.read_text()
    assert 'id="activity"' not in page
