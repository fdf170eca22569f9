"""The Failures section of `gca report`: failed attempts (trials), their root causes from
job_logs, GPU time lost, runtime to failure and repetition, checked against numbers
worked out by hand in the comments; the same store without logs; and, end to end, the
committed synthetic trace against its truth.json.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from gpucluster_analysis.analyze.prepare import jobs_table, prepare
from gpucluster_analysis.db import open_store
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.report.build import Written, build_report
from gpucluster_analysis.synth import generate_trace
from tests.store_helpers import prepared_store

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "synthetic"

# Trials (failed attempts) of this store, worked out by hand:
#
# | job/attempt  | src    | user | job status | GPUs | RTF s | lost GPU-s | log | root cause                 |
# | J1 a0        | philly | u1   | failed     | 2    | 600   | 1200       | yes | cuda_oom                   |
# | J1 a1 final  | philly | u1   | failed     | 2    | 1200  | 2400       | yes | cuda_oom (p300 beats p200) |
# | J2 a0        | philly | u1   | passed     | 1    | 1800  | 1800       | yes | gpu_hw (lower line wins)   |
# | J3 a0 final  | philly | u2   | failed     | 4    | 3600  | 14400      | no  |                            |
# | J4 a0        | philly | u2   | failed     | 1    | 100   | 100        | yes | unknown                    |
# | J4 a1 final  | philly | u2   | failed     | 1    | 300   | 300        | no  |                            |
# | J5 a1        | philly | u3   | passed     | -    | -     | -          | yes | node_fail (launch failure) |
# | J6 a0        | slurm  | u3   | passed     | 8    | 1800  | 14400      | yes | preempted (attempt status) |
# | J6 a1        | slurm  | u3   | passed     | 8    | 600   | 4800       | no  | (node_fail attempt status) |
# | dup (philly) | philly | u4   | failed     | 1    | 60    | 60         | no  | (job_id in two sources)    |
# | dup (slurm)  | slurm  | u4   | failed     | 1    | 60    | 60         | no  |                            |
# | J8 a0 final  | philly | u1   | failed     | 1    | 120   | 120        | yes | cuda_oom (stderr wins tie) |
# | J9 a0        | philly | u5   | killed     | 1    | 1200  | 1200       | yes | import_error               |
#
# 13 trials in 10 jobs; 8 with a log, of which 1 unknown; 5 without. Lost: 40840 GPU-s.
# Not trials: J2's final (passed) attempt, J5's attempt 0 (final: it started at 10:00, after
# the launch failure that attempt_no lists last ended at 09:50), J6 a2 (status passed),
# J9's final attempt (killed), J10 (passed, one attempt).
HANDMADE = """
INSERT INTO ingested_files VALUES
  (1, 'jobs.json', 1, 'a', 'philly_job_log', NULL, 1, 0, 0, now()),
  (2, 'sacct.txt', 1, 'b', 'slurm_sacct', NULL, 1, 0, 0, now()),
  (3, 'logs', 1, 'c', 'job_log', NULL, 1, 0, 0, now());
INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id) VALUES
  ('philly', 'J1', 'u1', 'vc1', 'failed', 'Failed', '2017-10-10 09:00:00', 1),
  ('philly', 'J2', 'u1', 'vc1', 'passed', 'Pass', '2017-10-10 08:00:00', 1),
  ('philly', 'J3', 'u2', 'vc1', 'failed', 'Failed', '2017-10-10 07:00:00', 1),
  ('philly', 'J4', 'u2', 'vc2', 'failed', 'Failed', '2017-10-10 12:00:00', 1),
  ('philly', 'J5', 'u3', 'vc2', 'passed', 'Pass', '2017-10-10 09:00:00', 1),
  ('slurm', 'J6', 'u3', 'acct', 'passed', 'COMPLETED', '2017-10-10 09:00:00', 2),
  ('philly', 'dup', 'u4', 'vc1', 'failed', 'Failed', '2017-10-10 09:00:00', 1),
  ('slurm', 'dup', 'u4', 'acct', 'failed', 'FAILED', '2017-10-10 09:00:00', 2),
  ('philly', 'J8', 'u1', 'vc1', 'failed', 'Failed', '2017-10-10 14:00:00', 1),
  ('philly', 'J9', 'u5', 'vc2', 'killed', 'Killed', '2017-10-10 09:00:00', 1),
  ('philly', 'J10', 'u5', 'vc2', 'passed', 'Pass', '2017-10-10 09:00:00', 1);
INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, status, num_gpus, file_id) VALUES
  ('philly', 'J1', 0, 0, '2017-10-10 10:00:00', '2017-10-10 10:10:00', NULL, NULL, 1),
  ('philly', 'J1', 1, 1, '2017-10-10 11:00:00', '2017-10-10 11:20:00', NULL, NULL, 1),
  ('philly', 'J2', 0, 1, '2017-10-10 09:00:00', '2017-10-10 09:30:00', NULL, NULL, 1),
  ('philly', 'J2', 1, 0, '2017-10-10 10:00:00', '2017-10-10 12:00:00', NULL, NULL, 1),
  ('philly', 'J3', 0, 0, '2017-10-10 08:00:00', '2017-10-10 09:00:00', NULL, NULL, 1),
  ('philly', 'J4', 0, 0, '2017-10-10 13:00:00', '2017-10-10 13:01:40', NULL, NULL, 1),
  ('philly', 'J4', 1, 1, '2017-10-10 14:00:00', '2017-10-10 14:05:00', NULL, NULL, 1),
  ('philly', 'J5', 0, 1, '2017-10-10 10:00:00', '2017-10-10 11:00:00', NULL, NULL, 1),
  ('philly', 'J5', 1, 0, NULL, '2017-10-10 09:50:00', NULL, NULL, 1),
  ('slurm', 'J6', 0, 0, '2017-10-10 10:00:00', '2017-10-10 10:30:00', 'preempted', 8, 2),
  ('slurm', 'J6', 1, 1, '2017-10-10 11:00:00', '2017-10-10 11:10:00', 'node_fail', 8, 2),
  ('slurm', 'J6', 2, 2, '2017-10-10 12:00:00', '2017-10-10 13:00:00', 'passed', 8, 2),
  ('philly', 'dup', 0, 0, '2017-10-10 10:00:00', '2017-10-10 10:01:00', NULL, NULL, 1),
  ('slurm', 'dup', 0, 0, '2017-10-10 10:00:00', '2017-10-10 10:01:00', NULL, 1, 2),
  ('philly', 'J8', 0, 0, '2017-10-10 15:00:00', '2017-10-10 15:02:00', NULL, NULL, 1),
  ('philly', 'J9', 0, 0, '2017-10-10 10:00:00', '2017-10-10 10:20:00', NULL, NULL, 1),
  ('philly', 'J9', 1, 1, '2017-10-10 11:00:00', '2017-10-10 11:30:00', NULL, NULL, 1),
  ('philly', 'J10', 0, 0, '2017-10-10 10:00:00', '2017-10-10 11:00:00', NULL, NULL, 1);
INSERT INTO allocations VALUES
  ('philly', 'J1', 0, 'm1', 0, 1), ('philly', 'J1', 0, 'm1', 1, 1),
  ('philly', 'J1', 1, 'm2', 0, 1), ('philly', 'J1', 1, 'm2', 1, 1),
  ('philly', 'J2', 0, 'm1', 2, 1), ('philly', 'J2', 1, 'm1', 2, 1),
  ('philly', 'J3', 0, 'm3', 0, 1), ('philly', 'J3', 0, 'm3', 1, 1),
  ('philly', 'J3', 0, 'm3', 2, 1), ('philly', 'J3', 0, 'm3', 3, 1),
  ('philly', 'J4', 0, 'm1', 0, 1), ('philly', 'J4', 1, 'm1', 0, 1),
  ('philly', 'dup', 0, 'm2', 3, 1),
  ('philly', 'J8', 0, 'm1', 5, 1),
  ('philly', 'J9', 0, 'm2', 4, 1), ('philly', 'J9', 1, 'm2', 4, 1),
  ('philly', 'J10', 0, 'm2', 5, 1)
"""

# job_logs rows: 17 files. Where they go: 12 to failed attempts (7 jobs), 2 to attempts that
# did not fail (J2's final attempt, J6's final attempt via a NULL attempt_ref), 1 to a job id
# in two sources, 1 to no job, 1 to an attempt J3 does not have.
LOGS = """
INSERT INTO job_logs (job_id, attempt_ref, stream, layout, reason, category, signature_id, priority,
                      line_number, line, file_id) VALUES
  ('J1', 0, 'stderr', 'synth', 'cuda_oom', 'framework', 'torch_cuda_oom', 300, 9, 'CUDA out of memory', 3),
  ('J1', 0, 'stdout', 'synth', 'unknown', 'unknown', NULL, NULL, NULL, NULL, 3),
  ('J1', 1, 'stderr', 'synth', 'key_error', 'user', 'py_key_error', 200, 2, 'KeyError: x', 3),
  ('J1', 1, 'stdout', 'synth', 'cuda_oom', 'framework', 'torch_cuda_oom', 300, 5, 'Tried to allocate 2 GiB', 3),
  ('J2', 1, 'stderr', 'synth', 'nccl_error', 'infrastructure', 'nccl_timeout', 500, 40, 'Watchdog caught', 3),
  ('J2', 1, 'stderr', 'synth', 'gpu_hw', 'infrastructure', 'xid_79', 500, 20, 'Xid 79', 3),
  ('J2', 0, 'stdout', 'synth', 'unknown', 'unknown', NULL, NULL, NULL, NULL, 3),
  ('J4', 0, 'stderr', 'synth', 'unknown', 'unknown', NULL, NULL, NULL, NULL, 3),
  ('J5', 0, 'stderr', 'synth', 'node_fail', 'infrastructure', 'launch_failed', 500, 1, 'container failed', 3),
  ('J6', 0, 'combined', 'pattern', 'preempted', 'infrastructure', 'slurm_preempted', 600, 3, 'PREEMPTION', 3),
  ('J6', NULL, 'combined', 'slurm', 'unknown', 'unknown', NULL, NULL, NULL, NULL, 3),
  ('dup', 0, 'stderr', 'synth', 'cuda_oom', 'framework', 'torch_cuda_oom', 300, 1, 'CUDA out of memory', 3),
  ('ghost', 0, 'stderr', 'synth', 'cuda_oom', 'framework', 'torch_cuda_oom', 300, 1, 'CUDA out of memory', 3),
  ('J3', 7, 'stderr', 'synth', 'cuda_oom', 'framework', 'torch_cuda_oom', 300, 1, 'CUDA out of memory', 3),
  ('J8', 0, 'stdout', 'synth', 'host_oom', 'framework', 'oom_killed', 300, 1, 'Killed', 3),
  ('J8', 0, 'stderr', 'synth', 'cuda_oom', 'framework', 'torch_cuda_oom', 300, 50, 'CUDA out of memory', 3),
  ('J9', 0, 'stderr', 'synth', 'import_error', 'user', 'py_import_error', 200, 3, 'ModuleNotFoundError', 3)
"""


def _store(path: Path, *scripts: str) -> Path:
    with open_store(path) as con:
        for script in scripts:
            for statement in script.split(";\n"):
                if statement.strip():
                    con.execute(statement)
    return path


@pytest.fixture(scope="module")
def with_logs(tmp_path_factory: pytest.TempPathFactory) -> Written:
    base = tmp_path_factory.mktemp("failures")
    return build_report(_store(base / "logs.duckdb", HANDMADE, LOGS), base / "out")


@pytest.fixture(scope="module")
def without_logs(tmp_path_factory: pytest.TempPathFactory) -> Written:
    base = tmp_path_factory.mktemp("failures-nolog")
    return build_report(_store(base / "nolog.duckdb", HANDMADE), base / "out")


def read(written: Written, name: str) -> list[dict[str, str]]:
    with (written.out_dir / f"{name}.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def by(written: Written, name: str, *keys: str) -> dict:
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in read(written, name)}


def num(text: str) -> float:
    return float(text)


# ---------------------------------------------------------------- attempts and jobs.csv


def test_failed_attempts_and_their_root_causes(tmp_path: Path) -> None:
    db = _store(tmp_path / "s.duckdb", HANDMADE, LOGS)
    with prepared_store(db) as con:
        rows = con.sql(
            "SELECT source, job_id, attempt_no, num_gpus, runtime_to_failure_s, gpu_time_lost_s, has_log, reason,"
            " stream, line_number, log_files, job_root_cause FROM attempt_failures"
        ).fetchall()
    got = {(r[0], r[1], r[2]): r[3:] for r in rows}
    assert got == {
        ("philly", "J1", 0): (2, 600, 1200, True, "cuda_oom", "stderr", 9, 2, False),
        # priority 300 (stdout) beats 200 (stderr)
        ("philly", "J1", 1): (2, 1200, 2400, True, "cuda_oom", "stdout", 5, 2, True),
        # same priority and stream: line 20 beats line 40; source_index 1 is attempt_no 0
        ("philly", "J2", 0): (1, 1800, 1800, True, "gpu_hw", "stderr", 20, 2, False),
        # J3's log names an attempt it does not have
        ("philly", "J3", 0): (4, 3600, 14400, False, None, None, None, 0, False),
        ("philly", "J4", 0): (1, 100, 100, True, "unknown", "stderr", None, 1, True),
        ("philly", "J4", 1): (1, 300, 300, False, None, None, None, 0, False),
        # the launch failure: no start, no allocation
        ("philly", "J5", 1): (None, None, None, True, "node_fail", "stderr", 1, 1, False),
        # attempt statuses: preempted and node_fail failed, passed did not; GPUs from attempts.num_gpus
        ("slurm", "J6", 0): (8, 1800, 14400, True, "preempted", "combined", 3, 1, False),
        ("slurm", "J6", 1): (8, 600, 4800, False, None, None, None, 0, False),
        # a job id in two sources gets no log
        ("philly", "dup", 0): (1, 60, 60, False, None, None, None, 0, False),
        ("slurm", "dup", 0): (1, 60, 60, False, None, None, None, 0, False),
        # same priority: stderr (line 50) beats stdout (line 1)
        ("philly", "J8", 0): (1, 120, 120, True, "cuda_oom", "stderr", 50, 2, True),
        # retried, then killed: the first attempt failed, the job is not a failed job
        ("philly", "J9", 0): (1, 1200, 1200, True, "import_error", "stderr", 3, 1, False),
    }


def test_a_killed_jobs_final_attempt_failed_when_its_log_names_a_cause(tmp_path: Path) -> None:
    """Killed while waiting for its retry (or hung after the failure): the log says it failed.
    A user_kill or unknown log leaves the killed attempt a kill."""
    extra = """
    INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id) VALUES
      ('philly', 'K1', 'u6', 'vc1', 'killed', 'Killed', '2017-10-10 09:00:00', 1),
      ('philly', 'K2', 'u6', 'vc1', 'killed', 'Killed', '2017-10-10 09:00:00', 1);
    INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id) VALUES
      ('philly', 'K1', 0, 0, '2017-10-10 16:00:00', '2017-10-10 16:10:00', 1),
      ('philly', 'K2', 0, 0, '2017-10-10 16:00:00', '2017-10-10 16:10:00', 1);
    INSERT INTO job_logs (job_id, attempt_ref, stream, layout, reason, category, signature_id, priority,
                          line_number, file_id) VALUES
      ('K1', 0, 'stderr', 'synth', 'gpu_hw', 'infrastructure', 'xid_79', 500, 4, 3),
      ('K2', 0, 'stderr', 'synth', 'user_kill', 'user', 'keyboard_interrupt', 200, 4, 3),
      ('J9', 1, 'stderr', 'synth', 'unknown', 'unknown', NULL, NULL, NULL, 3)
    """
    db = _store(tmp_path / "k.duckdb", HANDMADE, LOGS, extra)
    with prepared_store(db) as con:
        rows = con.sql(
            "SELECT job_id, attempt_no, reason, job_root_cause FROM attempt_failures"
            " WHERE job_id IN ('K1', 'K2', 'J9') ORDER BY job_id"
        ).fetchall()
    # K1's failed final attempt is why the job ended: jobs.csv takes its cause (issue #28); J9's
    # failure was retried, and a kill ended the job
    assert rows == [("J9", 0, "import_error", False), ("K1", 0, "gpu_hw", True)]


def test_jobs_csv_failure_columns(with_logs: Written, without_logs: Written) -> None:
    jobs = by(with_logs, "jobs", "source", "job_id")
    failure = {k: (v["failure_reason"], v["failure_category"]) for k, v in jobs.items()}
    assert failure == {
        ("philly", "J1"): ("cuda_oom", "framework"),  # its last failed attempt (a1)
        ("philly", "J2"): ("", ""),  # passed
        ("philly", "J3"): ("", ""),  # failed, but no log
        ("philly", "J4"): ("unknown", "unknown"),  # last failed attempt with a log: a0, nothing matched
        ("philly", "J5"): ("", ""),
        ("slurm", "J6"): ("", ""),  # passed after a preemption
        ("philly", "dup"): ("", ""),
        ("slurm", "dup"): ("", ""),
        ("philly", "J8"): ("cuda_oom", "framework"),
        ("philly", "J9"): ("", ""),  # killed
        ("philly", "J10"): ("", ""),
    }
    assert all(r["failure_reason"] == "" and r["failure_category"] == "" for r in read(without_logs, "jobs"))


# ---------------------------------------------------------------- the report's tables


def test_summary_counts_and_unclassified_share(with_logs: Written) -> None:
    s = read(with_logs, "failure_summary")[0]
    assert (s["jobs"], s["failure_status_jobs"], s["jobs_with_failed_attempts"]) == ("11", "6", "10")
    assert (s["trials"], s["trials_with_log"], s["classified_trials"]) == ("13", "8", "7")
    assert (s["unknown_trials"], s["no_log_trials"], s["log_files"]) == ("1", "5", "17")
    assert num(s["unclassified_pct"]) == pytest.approx(100 * 6 / 13)
    assert num(s["gpu_hours_lost"]) == pytest.approx(40840 / 3600)
    allocated_s = sum(num(j["gpu_time_s"]) for j in read(with_logs, "jobs") if j["gpu_time_s"])
    assert num(s["gpu_time_lost_pct"]) == pytest.approx(100 * 40840 / allocated_s)
    # the 12 runtimes to failure (J5's launch failure has none)
    rtf = [600, 1200, 1800, 3600, 100, 300, 1800, 600, 60, 60, 120, 1200]
    assert s["trials_with_runtime"] == "12"
    for q in (50, 90, 95):
        assert num(s[f"rtf_p{q}_s"]) == pytest.approx(np.percentile(rtf, q))
    page = with_logs.html.read_text()
    assert "unclassified: 46.2% (1 with a log that shows a failure no signature names, 5 without any log)" in page


def test_reasons_trials_jobs_gpu_time_and_percentiles(with_logs: Written) -> None:
    reasons = read(with_logs, "failure_reasons")
    # trials first, then GPU time lost
    assert [r["reason"] for r in reasons] == [
        "no log",
        "cuda_oom",
        "preempted",
        "gpu_hw",
        "import_error",
        "unknown",
        "node_fail",
    ]
    r = {x["reason"]: x for x in reasons}
    cuda = r["cuda_oom"]
    # J1 a0, J1 a1, J8: 3 of 13 trials, 2 of the 10 jobs with a failed attempt, 1 user
    assert (cuda["category"], cuda["trials"], cuda["jobs"], cuda["users"]) == ("framework", "3", "2", "1")
    assert num(cuda["trials_pct"]) == pytest.approx(100 * 3 / 13)
    assert num(cuda["jobs_pct"]) == pytest.approx(20.0)
    # 1200 + 2400 + 120 of 40840 GPU-s
    assert num(cuda["gpu_hours_lost"]) == pytest.approx(3720 / 3600)
    assert num(cuda["gpu_time_lost_pct"]) == pytest.approx(100 * 3720 / 40840)
    # runtimes [120, 600, 1200]: p50 600; p90 at rank 1.8 = 600 + 0.8 x 600; p95 = 600 + 0.9 x 600
    assert (num(cuda["rtf_p50_s"]), num(cuda["rtf_p90_s"]), num(cuda["rtf_p95_s"])) == pytest.approx((600, 1080, 1140))
    assert num(cuda["job_repetition"]) == pytest.approx(1.5) and num(cuda["user_repetition"]) == pytest.approx(3.0)
    nolog = r["no log"]
    # J3, J4 a1, J6 a1, dup x2: 5 jobs of 4 (source, user) pairs; 14400 + 300 + 4800 + 60 + 60
    assert (nolog["category"], nolog["trials"], nolog["jobs"], nolog["users"]) == ("no log", "5", "5", "4")
    assert num(nolog["gpu_hours_lost"]) == pytest.approx(19620 / 3600)
    # runtimes [60, 60, 300, 600, 3600]: p90 at rank 3.6 = 600 + 0.6 x 3000
    nolog_rtf = (num(nolog["rtf_p50_s"]), num(nolog["rtf_p90_s"]), num(nolog["rtf_p95_s"]))
    assert nolog_rtf == pytest.approx((300, 2400, 3000))
    node = r["node_fail"]
    assert (node["trials_with_runtime"], node["rtf_p50_s"], num(node["gpu_hours_lost"])) == ("0", "", 0.0)
    assert sum(num(x["trials_pct"]) for x in reasons) == pytest.approx(100.0)
    assert sum(num(x["gpu_time_lost_pct"]) for x in reasons) == pytest.approx(100.0)


def test_categories(with_logs: Written) -> None:
    cats = read(with_logs, "failure_categories")
    assert [c["category"] for c in cats] == ["infrastructure", "framework", "user", "unknown", "no log"]
    c = {x["category"]: x for x in cats}
    # gpu_hw 1800 + node_fail (no runtime) + preempted 14400
    assert (c["infrastructure"]["trials"], c["infrastructure"]["jobs"]) == ("3", "3")
    assert num(c["infrastructure"]["gpu_hours_lost"]) == pytest.approx(16200 / 3600)
    assert num(c["framework"]["gpu_time_lost_pct"]) == pytest.approx(100 * 3720 / 40840)
    assert (c["user"]["trials"], num(c["user"]["gpu_hours_lost"])) == ("1", pytest.approx(1200 / 3600))
    assert num(c["no log"]["jobs_pct"]) == pytest.approx(50.0)


def test_trials_by_status(with_logs: Written) -> None:
    st = by(with_logs, "failure_trials_by_status", "status")
    # failed: J1 x2, J3, J4 x2, dup x2, J8 = 8 trials in 6 jobs; 3600 + 14400 + 400 + 120 + 120
    assert (st["failed"]["trials"], st["failed"]["jobs"], st["failed"]["trials_with_log"]) == ("8", "6", "4")
    assert num(st["failed"]["gpu_hours_lost"]) == pytest.approx(18640 / 3600)
    # passed: J2 a0, J5 a1, J6 a0 and a1 = 4 trials in 3 jobs; 1800 + 14400 + 4800
    assert (st["passed"]["trials"], st["passed"]["jobs"]) == ("4", "3")
    assert num(st["passed"]["trials_per_job"]) == pytest.approx(4 / 3)
    assert num(st["passed"]["gpu_time_lost_pct"]) == pytest.approx(100 * 21000 / 40840)
    # passed runtimes [1800, 1800, 600] (J5's has none)
    assert num(st["passed"]["rtf_p90_s"]) == pytest.approx(np.percentile([1800, 1800, 600], 90))
    assert (st["killed"]["trials"], num(st["killed"]["gpu_hours_lost"])) == ("1", pytest.approx(1200 / 3600))


# The table above as data: (source, job, reason or 'no log', lost GPU-s or None).
TRIALS = [
    ("philly", "J1", "cuda_oom", 1200),
    ("philly", "J1", "cuda_oom", 2400),
    ("philly", "J2", "gpu_hw", 1800),
    ("philly", "J3", "no log", 14400),
    ("philly", "J4", "unknown", 100),
    ("philly", "J4", "no log", 300),
    ("philly", "J5", "node_fail", None),
    ("slurm", "J6", "preempted", 14400),
    ("slurm", "J6", "no log", 4800),
    ("philly", "dup", "no log", 60),
    ("slurm", "dup", "no log", 60),
    ("philly", "J8", "cuda_oom", 120),
    ("philly", "J9", "import_error", 1200),
]


def size_bucket(num_gpus: str) -> str:
    if not num_gpus:
        return "unknown"
    n = float(num_gpus)
    if n == 0:
        return "0"  # CPU-only
    if n < 1:
        return "<1"  # a share of one GPU
    return "1" if n <= 1 else "2-4" if n <= 4 else "5-8" if n <= 8 else ">8"


def test_by_job_size(with_logs: Written) -> None:
    size = by(with_logs, "failure_by_size", "size_bucket", "reason")
    # 2-4 GPUs: J1 (2 GPUs) cuda_oom 1200 + 2400 and J3 (4 GPUs) no log 14400
    assert size[("2-4", "cuda_oom")]["trials"] == "2"
    assert num(size[("2-4", "cuda_oom")]["gpu_hours_lost"]) == pytest.approx(3600 / 3600)
    assert num(size[("2-4", "no log")]["size_gpu_time_lost_pct"]) == pytest.approx(100 * 14400 / 18000)
    assert num(size[("2-4", "no log")]["size_trials_pct"]) == pytest.approx(100 / 3)
    # every bucket: a job's size is jobs.csv's num_gpus (the first attempt with a known size)
    sizes = {(j["source"], j["job_id"]): size_bucket(j["num_gpus"]) for j in read(with_logs, "jobs")}
    expected: dict[tuple[str, str], list[float]] = {}
    for source, job, reason, lost in TRIALS:
        expected.setdefault((sizes[(source, job)], reason), []).append(lost or 0)
    assert {k: (int(v["trials"]), num(v["gpu_hours_lost"])) for k, v in size.items()} == {
        k: (len(v), pytest.approx(sum(v) / 3600)) for k, v in expected.items()
    }


def test_repetition_factors_and_repeaters(with_logs: Written) -> None:
    rep = by(with_logs, "failure_repetition", "scope")
    # classified trials: J1 a0, J1 a1 (cuda_oom), J2 gpu_hw, J5 node_fail, J6 preempted, J8 cuda_oom,
    # J9 import_error = 7. Jobs: 6 (job, reason) pairs, only (J1, cuda_oom) twice; its 2nd trial lost 2400.
    job = rep["job"]
    assert (job["trials"], job["pairs"], job["repeated_pairs"], job["repeated_trials"]) == ("7", "6", "1", "2")
    assert num(job["repetition_factor"]) == pytest.approx(7 / 6)
    assert num(job["repeated_trials_pct"]) == pytest.approx(100 * 2 / 7)
    assert num(job["repeated_gpu_hours_lost"]) == pytest.approx(2400 / 3600)
    # users: (u1, cuda_oom) x3 (J1 a0 10:00, J1 a1 11:00, J8 15:00), (u1, gpu_hw), (u3, node_fail),
    # (u3 in slurm, preempted), (u5, import_error): 5 pairs; repeats lost 2400 + 120
    user = rep["user"]
    assert (user["pairs"], user["repeated_pairs"], user["repeated_trials"]) == ("5", "1", "3")
    assert num(user["repetition_factor"]) == pytest.approx(7 / 5)
    assert num(user["repeated_gpu_hours_lost"]) == pytest.approx(2520 / 3600)
    top = read(with_logs, "failure_repeaters")
    assert [(t["scope"], t["who"], t["reason"], t["trials"], t["jobs"]) for t in top] == [
        ("job", "J1", "cuda_oom", "2", "1"),
        ("user", "u1", "cuda_oom", "3", "2"),
    ]
    assert num(top[1]["gpu_hours_lost"]) == pytest.approx(3720 / 3600)
    assert (top[1]["first_failure_at"], top[1]["last_failure_at"]) == ("2017-10-10T10:10:00Z", "2017-10-10T15:02:00Z")


def test_log_matching(with_logs: Written) -> None:
    m = {r["outcome"]: (r["log_files"], r["jobs"]) for r in read(with_logs, "failure_log_matching")}
    assert m == {
        "failed attempt": ("12", "7"),
        "attempt that did not fail": ("2", "2"),
        "job in several sources": ("1", "1"),
        "no such job": ("1", "1"),
        "no such attempt": ("1", "1"),
    }


def test_page_with_logs(with_logs: Written) -> None:
    page = with_logs.html.read_text()
    for div in (
        "fig-failure-categories",
        "fig-failure-reasons",
        "fig-failure-rtf-by-reason",
        "fig-failure-by-size",
        "fig-failure-rtf-cdf",
    ):
        assert f'id="{div}"' in page, div
    for table in ("failure_reasons", "failure_repeaters", "failure_log_matching", "failure_trials_by_status"):
        assert f'id="table-{table}"' in page, table
    assert 'id="failure-reasons"' in page and 'id="repeated-failures"' in page
    assert "Not classified yet" not in page
    # medians over 10 min: preempted 1800, gpu_hw 1800, import_error 1200: 3 of 13 trials, 17400 of 40840 GPU-s
    assert "account for 23.1% of failed attempts and 42.6% of the GPU time lost" in page
    assert (
        "5 classified reasons. The most frequent was cuda_oom (framework): 3 failed attempts (23.1%) in 2 jobs"
        " of 1 user"
    ) in page


# ---------------------------------------------------------------- no logs


def test_without_logs_the_section_says_so_and_keeps_the_scheduler_view(without_logs: Written) -> None:
    page = without_logs.html.read_text()
    assert "no job logs were ingested" in page
    assert "all 13 failed attempts of this store are unclassified (100%)" in page
    assert 'id="fig-failure-rtf-cdf"' in page and 'id="fig-failure-reasons"' not in page
    assert 'id="table-failures_by_status"' in page and 'id="fig-attempts-per-job"' in page
    reasons = read(without_logs, "failure_reasons")
    assert [(r["reason"], r["trials"], r["jobs"]) for r in reasons] == [("no log", "13", "10")]
    assert num(reasons[0]["gpu_hours_lost"]) == pytest.approx(40840 / 3600)
    s = read(without_logs, "failure_summary")[0]
    assert (s["trials"], s["no_log_trials"], num(s["unclassified_pct"]), s["log_files"]) == ("13", "13", 100.0, "0")
    assert read(without_logs, "failure_repeaters") == [] and read(without_logs, "failure_log_matching") == []
    rep = by(without_logs, "failure_repetition", "scope")
    assert rep["job"]["trials"] == "0" and rep["job"]["repetition_factor"] == ""


# ---------------------------------------------------------------- end to end: synth trace


def _synth_failures(trace: Path, db: Path) -> tuple[dict, dict, list]:
    truth = json.loads((trace / "truth.json").read_text())
    with open_store(db) as con:
        ingest_paths(con, [trace], IngestOptions())
        prepare(con)
        rows = con.sql("SELECT job_id, source_index, reason, category, has_log FROM attempt_failures").fetchall()
        jobs = {r["job_id"]: r for r in jobs_table(con).to_dicts()}
    expected = {
        (a["job_id"], a["source_index"]): (a["failure_reason"], a["failure_category"])
        for a in truth["attempts"]
        if a["failure_reason"]
    }
    got = {(job_id, index): (reason, category) for job_id, index, reason, category, _ in rows}
    assert all(has_log for *_, has_log in rows)
    assert sum(1 for _ in (trace / "logs").rglob("*.log")) == 2 * len(expected)
    assert got == expected
    return truth, jobs, rows


def test_synthetic_example_attempt_reasons_match_truth(tmp_path: Path) -> None:
    """Every failed attempt gca finds is one the generator failed, with its real reason (jobs.csv's
    failure columns against truth are also tests/test_synth.py's)."""
    _, _, rows = _synth_failures(EXAMPLE, tmp_path / "example.duckdb")
    assert len(rows) > 20


def test_synthetic_killed_job_whose_attempt_failed(tmp_path: Path) -> None:
    """This trace has a killed job whose only attempt failed (killed before its retry started):
    a failed attempt, though the job is not a failed job."""
    trace = tmp_path / "trace"
    generate_trace(trace, jobs=150, machines=6, days=2.0, seed=7)
    truth, jobs, _ = _synth_failures(trace, tmp_path / "synth.duckdb")
    status = {j["job_id"]: j["status"] for j in truth["jobs"]}
    assert [
        a["failure_reason"] for a in truth["attempts"] if a["failure_reason"] and status[a["job_id"]] == "killed"
    ] != []
    assert {j["job_id"]: (j["failure_reason"], j["failure_category"]) for j in truth["jobs"]} == {
        k: (v["failure_reason"], v["failure_category"]) for k, v in jobs.items()
    }


# ---------------------------------------------------------------- in a browser


@pytest.mark.browser
def test_failure_figures_render_in_a_browser(with_logs: Written) -> None:
    from tests.test_report_browser import assert_renders_offline as renders

    assert len(re.findall(r"Plotly\.newPlot\(", with_logs.html.read_text())) >= 12
    renders(with_logs)


def test_a_log_that_shows_no_failure_is_no_cause_in_the_log(tmp_path: Path) -> None:
    # issue 10: J3's failed attempt gets a log that shows no failure (reason none); J4's a0 has
    # an unknown stderr beside a none stdout, and unknown (failure evidence) wins; killed K3's
    # log that shows no failure does not make its attempt a failed one.
    extra = """
    INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id) VALUES
      ('philly', 'K3', 'u6', 'vc1', 'killed', 'Killed', '2017-10-10 09:00:00', 1);
    INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id) VALUES
      ('philly', 'K3', 0, 0, '2017-10-10 16:00:00', '2017-10-10 16:10:00', 1);
    INSERT INTO job_logs (job_id, attempt_ref, stream, layout, reason, category, signature_id, priority,
                          line_number, file_id) VALUES
      ('J3', 0, 'stderr', 'synth', 'none', 'none', NULL, NULL, NULL, 3),
      ('J4', 0, 'stdout', 'synth', 'none', 'none', NULL, NULL, NULL, 3),
      ('K3', 0, 'stderr', 'synth', 'none', 'none', NULL, NULL, NULL, 3)
    """
    written = build_report(_store(tmp_path / "n.duckdb", HANDMADE, LOGS, extra), tmp_path / "out")
    jobs = by(written, "jobs", "source", "job_id")
    assert (jobs[("philly", "J3")]["failure_reason"], jobs[("philly", "J3")]["failure_category"]) == ("none", "none")
    assert jobs[("philly", "J4")]["failure_reason"] == "unknown"
    assert jobs[("philly", "K3")]["failure_reason"] == ""
    reasons = {r["reason"]: r for r in read(written, "failure_reasons")}
    assert (reasons["no cause in the log"]["category"], reasons["no cause in the log"]["trials"]) == (
        "no cause in the log",
        "1",
    )
    assert "none" not in reasons
    categories = [c["category"] for c in read(written, "failure_categories")]
    assert categories == ["infrastructure", "framework", "user", "unknown", "no cause in the log", "no log"]
    s = read(written, "failure_summary")[0]
    assert (s["classified_trials"], s["unknown_trials"], s["no_cause_trials"], s["no_log_trials"]) == (
        "7",
        "1",
        "1",
        "4",
    )
    assert num(s["unclassified_pct"]) == pytest.approx(100 * 6 / 13)
    assert "1 with a log that shows no failure at all (no cause in the log)," in written.html.read_text()


def test_the_failure_tables_read_the_schedulers_record_beside_the_log(tmp_path: Path) -> None:
    """Issue #28: a Slurm run FAILED with exit code 1 whose log shows no failure is an unnamed
    failure (unknown), not "no cause in the log"; a TIMEOUT run without a log is time_limit, not
    "no log"; a NODE_FAIL run whose log shows the NCCL error it caused is node_fail. Worked out
    by hand from each run's record and log."""
    extra = """
    INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id) VALUES
      ('slurm', 'S1', 'u7', 'vc1', 'failed', 'FAILED', '2017-10-10 09:00:00', 1),
      ('slurm', 'S2', 'u7', 'vc1', 'timeout', 'TIMEOUT', '2017-10-10 09:00:00', 1),
      ('slurm', 'S3', 'u7', 'vc1', 'node_fail', 'NODE_FAIL', '2017-10-10 09:00:00', 1);
    INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, status, source_status,
                          exit_code, exit_signal, num_gpus, file_id) VALUES
      ('slurm', 'S1', 0, 0, '2017-10-10 16:00:00', '2017-10-10 16:10:00', 'failed', 'FAILED', 1, 0, 1, 1),
      ('slurm', 'S2', 0, 0, '2017-10-10 16:00:00', '2017-10-10 16:10:00', 'timeout', 'TIMEOUT', 0, 0, 1, 1),
      ('slurm', 'S3', 0, 0, '2017-10-10 16:00:00', '2017-10-10 16:10:00', 'node_fail', 'NODE_FAIL', 0, 0, 1, 1);
    INSERT INTO job_logs (job_id, attempt_ref, stream, layout, reason, category, signature_id, priority,
                          line_number, file_id) VALUES
      ('S1', 0, 'combined', 'synth', 'none', 'none', NULL, NULL, NULL, 3),
      ('S3', 0, 'combined', 'synth', 'nccl_error', 'infrastructure', 'nccl_error', 850, 7, 3)
    """
    db = _store(tmp_path / "s.duckdb", HANDMADE, LOGS, extra)
    with prepared_store(db) as con:
        rows = con.sql(
            "SELECT job_id, log_reason, scheduler_reason, reason, category, failure_evidence, has_evidence"
            " FROM failure_trials WHERE job_id LIKE 'S%' ORDER BY job_id"
        ).fetchall()
        labels = dict(
            con.sql(
                "SELECT job_id, failure_label(has_evidence, reason, category) FROM failure_trials"
                " WHERE job_id LIKE 'S%'"
            ).fetchall()
        )
        logs_only = con.sql(
            "SELECT count(*) FROM attempt_failures WHERE job_id LIKE 'S%' AND reason = 'none'"
        ).fetchall()
    assert rows == [
        ("S1", "none", "unknown", "unknown", "unknown", "scheduler", True),
        ("S2", None, "time_limit", "time_limit", "user", "scheduler", True),
        ("S3", "nccl_error", "node_fail", "node_fail", "infrastructure", "both", True),
    ]
    assert labels == {"S1": "unknown", "S2": "user", "S3": "infrastructure"}
    assert logs_only == [(1,)]  # attempt_failures (the store's view) stays the log's reading
