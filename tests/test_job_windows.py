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
from tests.marks import keep_by_default

T0 = datetime(2024, 1, 1)
GPUS = "gpus"


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
        con.executemany(
            "INSERT INTO jobs (source, job_id, status, file_id) VALUES ('philly', ?, 'passed', 1)",
            [[j] for j in sorted({a[0] for a in attempts})],
        )
        con.executemany(
            "INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id)"
            " VALUES ('philly', ?, ?, ?, ?, ?, 1)",
            [[j, a, a, T0 + timedelta(minutes=s), T0 + timedelta(minutes=e)] for j, a, s, e in attempts],
        )
        con.executemany("INSERT INTO allocations VALUES ('philly', ?, ?, ?, ?, 1)", [list(c) for c in cells])
        create_temp_tables(
            con,
            [
                (t, t)
                for t in (
                    "gpu_samples_by_machine",
                    "attempt_attribution",
                    "attempt_windows",
                    "job_machine_windows",
                    "job_colocation",
                )
            ],
        )

        def minutes(t):
            return int((t - T0).total_seconds() // 60)

        got_gpu = sorted(
            (r[0], r[1], r[2], minutes(r[3]), minutes(r[4]))
            for r in con.execute(
                "SELECT job_id, machine_id, gpu_index, start_at, end_at FROM attempt_windows"
            ).fetchall()
        )
        got_machine = sorted(
            (r[0], r[1], minutes(r[2]), minutes(r[3]))
            for r in con.execute("SELECT job_id, machine_id, start_at, end_at FROM job_machine_windows").fetchall()
        )
        assert run_query(con, "attempt_attribution").get_column("attribution").unique().to_list() == ["scheduler"]
        colocation = {
            r[0]: (r[1], r[2])
            for r in con.execute("SELECT job_id, shares_server, shared_machines FROM job_colocation").fetchall()
        }
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
    # job_colocation: a job shares a machine where another job's window there overlaps one of its own
    shared = {
        j: {
            m
            for (jj, m, s, e) in want_machine
            if jj == j
            for (k, mm, s2, e2) in want_machine
            if k != j and mm == m and s < e2 and s2 < e
        }
        for j in {w[0] for w in want_machine}
    }
    assert colocation == {j: (bool(ms), len(ms)) for j, ms in shared.items()}
    assert any(v[0] for v in colocation.values())
    # the cases hold merges of both kinds, and jobs of one attempt
    assert len(want_gpu) < sum(len(v) for v in per_gpu.values())
    assert len(want_machine) < sum(len(v) for v in per_machine.values())


@pytest.mark.parametrize("seed", keep_by_default(range(2), {0}))
def test_whole_machine_windows_hold_every_gpu_of_the_machine(tmp_path: Path, seed: int) -> None:
    """Slurm placements without GPU indices hold a whole machine's GPUs, kept as one row per
    machine (gpu_index 0, gpus n) where a job has one attempt and GPU by GPU where it has
    several. Expanded, the windows must be the union of the attempts' intervals per (machine,
    GPU), as for listed GPUs; and the samples counted per job (attributed_util) those inside
    them. Machines listed with their GPUs, or sized only by the hosts' GPU counts (a machine
    named twice for one attempt with two counts: the larger), mixed with scheduler-listed jobs."""
    rng = random.Random(seed)
    listed = {"n1": 4, "n2": 2}  # machine list; n3, n4 only as the hosts say
    attempts, hosts, cells = [], [], []  # (source, job, attempt, s, e); (job, attempt, machine, gpus); allocations
    for j in range(60):
        slurm = rng.random() < 0.7
        for a in range(rng.choice([1, 1, 2, 3])):
            start = rng.randint(0, 60)
            end = start + rng.choice([1, 3, 5, 10])
            attempts.append(("slurm" if slurm else "philly", f"j{j}", a, start, end))
            if slurm:
                for m in rng.sample(["n1", "n2", "n3", "n4"], rng.randint(1, 2)):
                    hosts.append((f"j{j}", a, m, rng.choice([None, 1, 2, 3])))
                    if rng.random() < 0.15:
                        hosts.append((f"j{j}", a, m, rng.choice([None, 2, 4])))
            else:
                for m in rng.sample(["m1", "m2"], rng.randint(1, 2)):
                    cells += [(f"j{j}", a, m, g) for g in rng.sample(range(4), rng.randint(1, 3))]
    samples = [
        (rng.randint(0, 75 * 60), m, g, float(rng.randint(0, 100)))
        for m, n in (("n1", 4), ("n2", 2), ("n3", 4), ("m1", 4), ("m2", 4))
        for g in range(n)
        for _ in range(40)
    ]
    with open_store(tmp_path / "w.duckdb") as con:
        con.executemany(
            "INSERT INTO jobs (source, job_id, status, file_id) VALUES (?, ?, 'passed', 1)",
            sorted({(a[0], a[1]) for a in attempts}),
        )
        con.executemany(
            "INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id)"
            " VALUES (?, ?, ?, ?, ?, ?, 1)",
            [[src, j, a, a, T0 + timedelta(minutes=s), T0 + timedelta(minutes=e)] for src, j, a, s, e in attempts],
        )
        con.executemany("INSERT INTO attempt_hosts VALUES ('slurm', ?, ?, ?, ?, 1)", [list(h) for h in hosts])
        con.executemany("INSERT INTO allocations VALUES ('philly', ?, ?, ?, ?, 1)", [list(c) for c in cells])
        con.executemany(
            "INSERT INTO machines (machine_id, listed_gpus, file_id) VALUES (?, ?, 1)", list(listed.items())
        )
        con.executemany(
            "INSERT INTO gpu_samples VALUES (?, ?, ?, ?, 1)",
            [[T0 + timedelta(seconds=t), m, g, u] for t, m, g, u in samples],
        )
        create_temp_tables(
            con,
            [
                (t, t)
                for t in (
                    "gpu_samples_by_machine",
                    "attempt_sizes",
                    "attempt_attribution",
                    "attempt_windows",
                    "job_machine_windows",
                    "job_keys",
                    "attributed_util",
                    "job_gpu_util",
                )
            ],
        )

        def minutes(t):
            return int((t - T0).total_seconds() // 60)

        rows = con.execute(
            f"SELECT job_id, machine_id, gpu_index, {GPUS}, start_at, end_at FROM attempt_windows"
        ).fetchall()
        got_gpu = sorted(
            (j, m, g, minutes(s), minutes(e)) for j, m, first, n, s, e in rows for g in range(first, first + n)
        )
        got_machine = sorted(
            (r[0], r[1], minutes(r[2]), minutes(r[3]))
            for r in con.execute("SELECT job_id, machine_id, start_at, end_at FROM job_machine_windows").fetchall()
        )
        got_samples = dict(con.execute("SELECT job_id, util_samples FROM job_gpu_util").fetchall())
    # a machine's GPUs: the more of listed and sampled (n4 has neither: then the GPUs the
    # attempt's host rows give there, the most of them; none given, no GPU and no window)
    known = {"n1": 4, "n2": 2, "n3": 4}
    times = {(j, a): (s, e) for _src, j, a, s, e in attempts}
    per_gpu: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
    per_machine: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for j, a, m in {(j, a, m) for j, a, m, _gpus in hosts}:
        given = [n for jj, aa, mm, n in hosts if (jj, aa, mm) == (j, a, m) and n is not None]
        gpus = known.get(m) or max(given, default=0)
        for g in range(gpus):
            per_gpu.setdefault((j, m, g), []).append(times[(j, a)])
        if gpus:
            per_machine.setdefault((j, m), []).append(times[(j, a)])
    for j, a, m, g in cells:
        per_gpu.setdefault((j, m, g), []).append(times[(j, a)])
        per_machine.setdefault((j, m), []).append(times[(j, a)])
    want_gpu = sorted({(*k, s, e) for k, v in per_gpu.items() for s, e in _union(v)})
    want_machine = sorted({(*k, s, e) for k, v in per_machine.items() for s, e in _union(v)})
    assert got_gpu == want_gpu
    assert got_machine == want_machine
    want_samples: dict[str, int] = {}
    for t, m, g, _u in samples:
        for j in {k[0] for k in per_gpu if k[1] == m and k[2] == g}:
            if any(s * 60 <= t < e * 60 for s, e in _union(per_gpu[(j, m, g)])):
                want_samples[j] = want_samples.get(j, 0) + 1
    assert got_samples == want_samples
    # whole machines stay one row where a job has one attempt, or where its attempts there
    # all held the same GPUs; GPU by GPU where they did not
    retried = {j for j in {a[1] for a in attempts} if sum(a[1] == j for a in attempts) > 1}
    assert GPUS == "1" or any(n > 1 and j not in retried for j, _m, _g, n, _s, _e in rows)
    assert GPUS == "1" or any(n > 1 and j in retried for j, _m, _g, n, _s, _e in rows)
    assert any(n == 1 and j in retried for j, _m, _g, n, _s, _e in rows)
    assert any(n is not None for _j, _a, _m, n in hosts) and any(n is None for _j, _a, _m, n in hosts)
