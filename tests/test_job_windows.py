"""attempt_windows and job_machine_windows against the plain definition (issue #15, part 5).

Both merge a job's windows, per (machine, GPU) and per machine, so that overlapping or
touching attempts of one job count once. The queries skip the merge for jobs of one attempt
and build job_machine_windows from the attempts (one row per attempt and machine, not per
GPU); here both are checked against a union of intervals computed in Python on random
jobs: several attempts, overlapping, touching, nested, on shared GPUs and machines.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gpucluster_analysis.db import open_store
from gpucluster_analysis.db.queries import create_temp_tables, run_query

T0 = datetime(2024, 1, 1)


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merged [s, e) intervals; touching ones (s == previous end) merge, as the queries do."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


@pytest.mark.parametrize("seed", range(2))
def test_windows_merge_as_a_union_of_intervals_would(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    attempts, cells = [], []  # (job, attempt, start, end); (job, attempt, machine, gpu)
    for j in range(50):
        for a in range(rng.choice([1, 1, 2, 3])):
            start = rng.randint(0, 60)
            end = start + rng.choice([1, 3, 5, 10])
            attempts.append((f"j{j}", a, start, end))
            for m in rng.sample(["m1", "m2"], rng.randint(1, 2)):
                cells += [(f"j{j}", a, m, g) for g in rng.sample(range(4), rng.randint(1, 3))]
    with open_store(tmp_path / "w.duckdb") as con:
        con.executemany("INSERT INTO jobs (source, job_id, status, file_id) VALUES ('philly', ?, 'passed', 1)",
                        [[j] for j in sorted({a[0] for a in attempts})])
        con.executemany("INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id)"
                        " VALUES ('philly', ?, ?, ?, ?, ?, 1)",
                        [[j, a, a, T0 + timedelta(minutes=s), T0 + timedelta(minutes=e)] for j, a, s, e in attempts])
        con.executemany("INSERT INTO allocations VALUES ('philly', ?, ?, ?, ?, 1)", [list(c) for c in cells])
        create_temp_tables(con, [(t, t) for t in ("gpu_samples_by_machine", "attempt_attribution", "attempt_windows",
                                                   "job_machine_windows")])
        minutes = lambda t: int((t - T0).total_seconds() // 60)  # noqa: E731
        got_gpu = sorted((r[0], r[1], r[2], minutes(r[3]), minutes(r[4])) for r in con.execute(
            "SELECT job_id, machine_id, gpu_index, start_at, end_at FROM attempt_windows").fetchall())
        got_machine = sorted((r[0], r[1], minutes(r[2]), minutes(r[3])) for r in con.execute(
            "SELECT job_id, machine_id, start_at, end_at FROM job_machine_windows").fetchall())
        assert run_query(con, "attempt_attribution").get_column("attribution").unique().to_list() == ["scheduler"]
    times = {(j, a): (s, e) for j, a, s, e in attempts}
    per_gpu: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
    per_machine: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for j, a, m, g in cells:
        per_gpu.setdefault((j, m, g), []).append(times[(j, a)])
        per_machine.setdefault((j, m), []).append(times[(j, a)])
    want_gpu = sorted((*k, s, e) for k, v in per_gpu.items() for s, e in _union(v))
    want_machine = sorted((*k, s, e) for k, v in per_machine.items() for s, e in _union(v))
    assert got_gpu == want_gpu
    assert got_machine == want_machine
    # the cases hold merges of both kinds, and jobs of one attempt
    assert len(want_gpu) < sum(len(v) for v in per_gpu.values())
    assert len(want_machine) < sum(len(v) for v in per_machine.values())
