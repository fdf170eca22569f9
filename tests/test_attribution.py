"""Joining samples to jobs when the scheduler does not list GPUs: attribution modes,
size fallbacks and queueing from Eligible (a hand-made store; every number by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster_analysis.analyze.prepare import jobs_table, prepare, run_query
from gpucluster_analysis.db import open_store

STORE = """
INSERT INTO ingested_files VALUES (1, 'x', 1, 'a', 'slurm_sacct', 'UTC', 0, 0, 0, now());
INSERT INTO machines (machine_id, listed_gpus, gpu_memory_gb, file_id) VALUES
  ('n1', 4, NULL, 1), ('n2', 4, NULL, 1), ('n3', 2, NULL, 1);
INSERT INTO jobs (source, job_id, user_name, vc, status, submit_at, eligible_at, file_id) VALUES
  ('slurm', 'S1', 'u', 'a', 'passed', '2024-01-01 09:00:00', '2024-01-01 09:30:00', 1),
  ('slurm', 'S2', 'u', 'a', 'passed', '2024-01-01 09:00:00', NULL, 1),
  ('slurm', 'S3', 'u', 'a', 'failed', '2024-01-01 09:00:00', NULL, 1),
  ('slurm', 'S4', 'u', 'a', 'passed', '2024-01-01 09:00:00', NULL, 1),
  ('slurm', 'S5', 'u', 'a', 'passed', '2024-01-01 09:00:00', NULL, 1),
  ('helios', 'H1', 'u', 'a', 'passed', '2024-01-01 09:00:00', NULL, 1),
  ('alibaba', 'A1', 'u', 'a', 'passed', '2024-01-01 09:00:00', NULL, 1);
INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, num_gpus, num_nodes, file_id) VALUES
  ('slurm', 'S1', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', 4, 1, 1),
  ('slurm', 'S2', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', 2, 1, 1),
  ('slurm', 'S3', 0, 0, '2024-01-01 10:30:00', '2024-01-01 11:30:00', 2, 1, 1),
  ('slurm', 'S4', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', 1, 1, 1),
  ('slurm', 'S5', 0, 0, '2024-01-01 10:30:00', '2024-01-01 10:45:00', 1, 1, 1),
  ('helios', 'H1', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', 8, 2, 1),
  ('alibaba', 'A1', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', 0.5, NULL, 1);
INSERT INTO attempt_hosts VALUES
  ('slurm', 'S1', 0, 'n1', 4, 1), ('slurm', 'S2', 0, 'n2', 2, 1), ('slurm', 'S3', 0, 'n2', 2, 1),
  ('slurm', 'S4', 0, 'n3', 1, 1), ('slurm', 'S5', 0, 'n3', 1, 1);
INSERT INTO gpu_bindings VALUES
  ('slurm', 'S2', NULL, 'n2', 2, 'scontrol', 1), ('slurm', 'S2', NULL, 'n2', 3, 'scontrol', 1),
  (NULL, 'S3', NULL, NULL, 0, 'cuda_visible_devices', 1), (NULL, 'S3', NULL, NULL, 1, 'cuda_visible_devices', 1);
INSERT INTO gpu_samples VALUES
  ('2024-01-01 10:10:00', 'n1', 0, 40, 1),   -- S1 (whole node)
  ('2024-01-01 10:20:00', 'n1', 3, 80, 1),   -- S1
  ('2024-01-01 10:10:00', 'n2', 2, 50, 1),   -- S2 (scontrol: GPUs 2, 3)
  ('2024-01-01 10:50:00', 'n2', 3, 70, 1),   -- S2
  ('2024-01-01 10:10:00', 'n2', 0, 90, 1),   -- GPU 0 before S3 started: nobody's
  ('2024-01-01 10:40:00', 'n2', 0, 30, 1),   -- S3 (CUDA_VISIBLE_DEVICES=0,1 on its one host)
  ('2024-01-01 10:35:00', 'n3', 0, 20, 1),   -- S4 and S5 share n3: node level, both
  ('2024-01-01 10:50:00', 'n3', 1, 60, 1);   -- S4 only (S5 ended 10:45)
"""


@pytest.fixture
def jobs(tmp_path: Path) -> dict[str, dict[str, object]]:
    with open_store(tmp_path / "s.duckdb") as con:
        con.execute(STORE)
        prepare(con)
        table = jobs_table(con)
        modes = run_query(con, "gpu_time_by_attribution")
    rows = {r["job_id"]: r for r in table.to_dicts()}
    rows["_modes"] = {r["attribution"]: r for r in modes.to_dicts()}
    return rows


def test_each_job_gets_the_most_precise_attribution_its_sources_allow(jobs: dict) -> None:
    assert {j: jobs[j]["attribution"] for j in ("S1", "S2", "S3", "S4", "S5", "H1", "A1")} == {
        "S1": "whole_node",
        "S2": "scontrol",
        "S3": "cuda_visible_devices",
        "S4": "node_level",
        "S5": "node_level",
        "H1": "none",
        "A1": "none",
    }


def test_samples_follow_the_attribution(jobs: dict) -> None:
    got = {j: (jobs[j]["util_samples"], jobs[j]["mean_gpu_util_pct"]) for j in ("S1", "S2", "S3", "S4", "S5", "H1")}
    assert got == {
        "S1": (2, pytest.approx(60.0)),  # (40 + 80) / 2
        "S2": (2, pytest.approx(60.0)),  # (50 + 70) / 2
        "S3": (1, pytest.approx(30.0)),
        "S4": (2, pytest.approx(40.0)),  # (20 + 60) / 2
        "S5": (1, pytest.approx(20.0)),
        "H1": (0, None),
    }


def test_sizes_fall_back_to_the_sources_counts(jobs: dict) -> None:
    assert (jobs["S1"]["num_gpus"], jobs["S1"]["num_servers"]) == (4, 1)
    assert (jobs["H1"]["num_gpus"], jobs["H1"]["num_servers"]) == (8, 2)
    assert jobs["A1"]["num_gpus"] == pytest.approx(0.5)
    assert jobs["A1"]["gpu_time_s"] == pytest.approx(0.5 * 3600)
    assert jobs["H1"]["gpu_time_s"] == pytest.approx(8 * 3600)


def test_queueing_counts_from_eligible_where_known(jobs: dict) -> None:
    assert (jobs["S1"]["queue_delay_s"], jobs["S1"]["queue_basis"]) == (1800, "eligible")  # 10:00 - 09:30
    assert (jobs["S2"]["queue_delay_s"], jobs["S2"]["queue_basis"]) == (3600, "submit")  # 10:00 - 09:00


def test_gpu_time_share_per_attribution_mode(jobs: dict) -> None:
    modes = jobs["_modes"]
    # GPU-seconds: whole_node S1 4x3600; scontrol S2 2x3600; cuda_visible_devices S3 2x3600;
    # node_level S4 1x3600 + S5 1x900; none H1 8x3600 + A1 0.5x3600. Total 66,420.
    expected = {"whole_node": 14400, "scontrol": 7200, "cuda_visible_devices": 7200, "node_level": 4500, "none": 30600}
    assert {m: r["gpu_time_s"] for m, r in modes.items()} == pytest.approx(expected)
    total = sum(expected.values())
    assert modes["node_level"]["gpu_time_share_pct"] == pytest.approx(100 * 4500 / total)


EVIDENCE_LIMITS = """
INSERT INTO ingested_files VALUES (1, 'x', 1, 'a', 'slurm_sacct', 'UTC', 0, 0, 0, now());
INSERT INTO machines (machine_id, listed_gpus, gpu_memory_gb, file_id) VALUES
  ('n4', 4, NULL, 1), ('n5', 4, NULL, 1), ('n6', 2, NULL, 1), ('n7', 2, NULL, 1);
INSERT INTO jobs (source, job_id, user_name, vc, status, submit_at, file_id) VALUES
  ('slurm', 'S6', 'u', 'a', 'passed', '2024-01-01 09:00:00', 1),
  ('slurm', 'S7', 'u', 'a', 'passed', '2024-01-01 09:00:00', 1),
  ('slurm', 'S8', 'u', 'a', 'passed', '2024-01-01 09:00:00', 1);
INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, num_gpus, num_nodes, file_id) VALUES
  ('slurm', 'S6', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', 2, 1, 1),
  ('slurm', 'S7', 0, 0, '2024-01-01 10:00:00', '2024-01-01 10:20:00', 1, 1, 1),
  ('slurm', 'S7', 1, 1, '2024-01-01 10:30:00', '2024-01-01 11:00:00', 1, 1, 1),
  ('slurm', 'S8', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', 2, 2, 1);
INSERT INTO attempt_hosts VALUES
  ('slurm', 'S6', 0, 'n4', 2, 1),                                   -- alone, but 2 of 4 GPUs
  ('slurm', 'S7', 0, 'n5', 1, 1), ('slurm', 'S7', 1, 'n5', 1, 1),   -- requeued on n5
  ('slurm', 'S8', 0, 'n6', 1, 1), ('slurm', 'S8', 0, 'n7', 1, 1);   -- two machines
INSERT INTO gpu_bindings VALUES
  (NULL, 'S7', NULL, NULL, 3, 'cuda_visible_devices', 1),  -- slurm-S7.out: the last run's
  (NULL, 'S8', NULL, NULL, 1, 'cuda_visible_devices', 1);  -- the batch host's only
"""


def test_bindings_and_whole_machines_are_claimed_only_where_the_evidence_holds(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.duckdb") as con:
        con.execute(EVIDENCE_LIMITS)
        prepare(con)
        attempts = dict(
            ((j, a), m)
            for j, a, m in con.execute(
                "SELECT DISTINCT job_id, attempt_no, attribution FROM attempt_attribution"
            ).fetchall()
        )
        cells = con.execute(
            "SELECT machine_id, gpu_index FROM attempt_attribution WHERE job_id = 'S7' AND attempt_no = 1"
        ).fetchall()
        jobs = {r["job_id"]: r["attribution"] for r in jobs_table(con).to_dicts()}
    # Alone on n4 with 2 of its 4 GPUs: the other two idle GPUs would dilute it, so node level.
    assert attempts[("S6", 0)] == "node_level"
    # The binding without an attempt belongs to the last run only; the first is node level.
    assert (attempts[("S7", 0)], attempts[("S7", 1)]) == ("node_level", "cuda_visible_devices")
    assert cells == [("n5", 3)]
    # A batch script's CUDA_VISIBLE_DEVICES says nothing about the second machine.
    assert attempts[("S8", 0)] == "node_level"
    assert jobs == {"S6": "node_level", "S7": "node_level", "S8": "node_level"}


def test_unknown_gpu_counts_stay_unknown_and_known_zeros_add_nothing(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.duckdb") as con:
        con.execute("""
INSERT INTO ingested_files VALUES (1, 'x', 1, 'a', 'slurm_sacct', 'UTC', 0, 0, 0, now());
INSERT INTO jobs (source, job_id, status, submit_at, file_id) VALUES
  ('slurm', 'U1', 'passed', '2024-01-01 09:00:00', 1),   -- a site that does not account GPUs
  ('slurm', 'C1', 'passed', '2024-01-01 09:00:00', 1),   -- a CPU-only job
  ('philly', 'P1', 'failed', '2024-01-01 09:00:00', 1);  -- first attempt listed without GPUs
INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, num_gpus, num_nodes, file_id) VALUES
  ('slurm', 'U1', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', NULL, 2, 1),
  ('slurm', 'C1', 0, 0, '2024-01-01 10:00:00', '2024-01-01 11:00:00', 0, 1, 1),
  ('philly', 'P1', 0, 0, '2024-01-01 10:00:00', '2024-01-01 10:10:00', 0, NULL, 1),
  ('philly', 'P1', 1, 1, '2024-01-01 10:20:00', '2024-01-01 10:50:00', NULL, NULL, 1);
INSERT INTO allocations VALUES ('philly', 'P1', 1, 'm1', 0, 1), ('philly', 'P1', 1, 'm2', 3, 1);
""")
        prepare(con)
        jobs = {r["job_id"]: r for r in jobs_table(con).to_dicts()}

    def pick(j):
        return (jobs[j]["num_gpus"], jobs[j]["num_servers"], jobs[j]["gpu_time_s"])

    assert pick("U1") == (None, 2, None)  # 2 nodes known, GPUs not: GPU time unknown, not 0
    assert pick("C1") == (0, 1, 0)  # a known 0 on one node
    assert pick("P1") == (2, 2, 2 * 1800)  # the first attempt WITH GPUs; the empty one adds 0


@pytest.mark.parametrize("seed", range(6))
def test_shared_machines_are_found_by_counting_as_a_pairwise_check_would(tmp_path: Path, seed: int) -> None:
    """whole_node vs node_level for attempts whose GPUs per host are unknown: the sweep that
    finds which placements shared a machine (issue 15: no quadratic join) against a
    pairwise check of every two placements, on random placements with ties, touching ends
    and a job overlapping itself."""
    import random
    from datetime import datetime, timedelta

    from gpucluster_analysis.db import open_store
    from gpucluster_analysis.db.queries import create_temp_tables, run_query

    rng = random.Random(seed)
    t0 = datetime(2024, 1, 1)
    placements = []  # (job, attempt, machine, start, end, GPUs there: None unknown)
    for j in range(40):
        for a in range(rng.randint(1, 2)):
            start = rng.randint(0, 400)
            end = start + rng.choice([1, 2, 5, 10, 20])
            hosts = rng.sample(["n1", "n2", "n3"], rng.randint(1, 2))
            # some placements say how many GPUs they held: those decide without a neighbour,
            # and still count as others' neighbours
            gpus = rng.choice([None, None, None, 2, 8])
            placements += [(f"j{j}", a, h, start, end, gpus) for h in hosts]
    db = tmp_path / "s.duckdb"
    with open_store(db) as con:
        jobs = sorted({p[0] for p in placements})
        con.executemany(
            "INSERT INTO jobs (source, job_id, status, file_id) VALUES ('slurm', ?, 'passed', 1)", [[j] for j in jobs]
        )
        attempts = sorted({(p[0], p[1], p[3], p[4]) for p in placements})
        con.executemany(
            "INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id)"
            " VALUES ('slurm', ?, ?, ?, ?, ?, 1)",
            [[j, a, a, t0 + timedelta(minutes=s), t0 + timedelta(minutes=e)] for j, a, s, e in attempts],
        )
        con.executemany(
            "INSERT INTO attempt_hosts (source, job_id, attempt_no, machine_id, gpus, file_id)"
            " VALUES ('slurm', ?, ?, ?, ?, 1)",
            [[p[0], p[1], p[2], p[5]] for p in placements],
        )
        con.execute(
            "INSERT INTO machines (machine_id, listed_gpus, file_id) VALUES ('n1', 8, 1), ('n2', 8, 1), ('n3', 8, 1)"
        )
        create_temp_tables(con, [("gpu_samples_by_machine", "gpu_samples_by_machine")])  # the machines' sampled GPUs
        got = {
            (r["job_id"], r["attempt_no"]): r["attribution"]
            for r in run_query(con, "attempt_attribution").unique(["job_id", "attempt_no", "attribution"]).to_dicts()
        }
    want = {}
    for j, a, m, s, e, gpus in placements:
        if gpus is None:
            partial = any(o[0] != j and o[2] == m and o[3] < e and s < o[4] for o in placements)
        else:
            partial = gpus < 8
        key = (j, a)
        want[key] = "node_level" if partial or want.get(key) == "node_level" else "whole_node"
    assert got == want
    assert set(want.values()) == {"node_level", "whole_node"}
