"""`gca synth`: why each job waited (truth.json's wait_* columns) and quotas.toml.

The simulator records its state after every scheduling instant and splits each job's
first wait into causes with cumulative sums (synth/waits.py). Here the same split is
recomputed independently, event by event in plain Python, from truth.json's attempts
(the times and GPUs each attempt really held), quotas.toml and the machine count, and
the retry waits from the written job log and sacct rows.
"""

from __future__ import annotations

import csv
import json
import tomllib
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from gpucluster_analysis.synth import clock, generate_trace
from gpucluster_analysis.synth.scheduler import _Machines
from gpucluster_analysis.synth.slurm import generate_slurm_trace
from gpucluster_analysis.synth.trace import simulate_window
from gpucluster_analysis.synth.workload import SIZES

# Small and busy enough that fair-share, fragmentation and other waits all occur, and two
# jobs lose their first placement to a launch failure inside their recorded wait.
ARGS = {"jobs": 300, "machines": 6, "days": 2.0, "seed": 3}
CAUSES = ("wait_fair_share_s", "wait_capacity_s", "wait_fragmentation_s", "wait_other_s")
LA = ZoneInfo("America/Los_Angeles")


@pytest.fixture(scope="module")
def philly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("waits") / "philly"
    generate_trace(out, **ARGS)
    return out


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("waits") / "slurm"
    generate_slurm_trace(out, **ARGS, interval_s=900)
    return out


def load(trace: Path) -> dict[str, Any]:
    return json.loads((trace / "truth.json").read_text())


@pytest.fixture(scope="module")
def sizes() -> list[int]:
    """The GPUs each job asked for, in job order. The files do not say it for a job that never
    got a placement (no attempt, or only a cancelled row), so take it from the simulation."""
    sim = simulate_window(
        ARGS["jobs"], ARGS["machines"], ARGS["days"], ARGS["seed"], clock.DEFAULT_START_LOCAL, lambda _: None
    )
    return [s.gpus for s in sim.specs]


def seconds(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


# --- the brute force ------------------------------------------------------------------


def brute_force_split(
    truth: dict[str, Any], quotas: dict[str, int], machines: int, sizes: list[int], start_column: str
) -> dict[str, tuple[int, ...]]:
    """Each job's first wait [start_column, first start) (or the length its four columns claim,
    for a job that never started) split by the rule of docs/synth.md, one stretch between
    consecutive attempt starts/ends at a time."""
    held = []  # (start, end, job, vc, {machine: gpus})
    vc_of = {job["job_id"]: job["vc"] for job in truth["jobs"]}
    for a in truth["attempts"]:
        start = a.get("real_start_time", a["start_time"])
        end = a.get("real_end_time", a["end_time"])
        alloc = a.get("real_allocation", a["allocation"])
        if start is None or not alloc:
            continue  # a Slurm row of a job cancelled while pending
        per_machine: dict[str, int] = defaultdict(int)
        for place in alloc:
            per_machine[place["machine"]] += len(place["gpus"])
        held.append((seconds(start), seconds(end), a["job_id"], vc_of[a["job_id"]], dict(per_machine)))
    cuts = sorted({t for h in held for t in h[:2]})

    def cause(t: int, job_id: str, vc: str, gpus: int) -> int:
        free = [8] * machines
        names = (
            [f"m{i}" for i in range(machines)]
            if truth["generator"].get("format") != "slurm"
            else [f"gpu{i + 1:03d}" for i in range(machines)]
        )
        used = 0
        for start, end, owner, owner_vc, per_machine in held:
            if start <= t < end and owner != job_id:  # a job's own attempts never count against it
                for machine, n in per_machine.items():
                    free[names.index(machine)] -= n
                if owner_vc == vc:
                    used += sum(per_machine.values())
        assert min(free) >= 0
        if used + gpus > quotas[vc]:
            return 0
        if sum(free) < gpus:
            return 1
        k = -(-gpus // 8)
        return 2 if sum(sorted(free, reverse=True)[:k]) < gpus else 3

    out = {}
    for job, gpus in zip(truth["jobs"], sizes, strict=True):
        if job[CAUSES[0]] is None:
            continue
        a = seconds(job[start_column])
        b = a + (job["queue_delay_s"] if job["queue_delay_s"] is not None else sum(job[c] for c in CAUSES))
        split = [0, 0, 0, 0]
        points = [a, *(t for t in cuts if a < t < b), b]
        for lo, hi in zip(points, points[1:], strict=False):
            split[cause(lo, job["job_id"], job["vc"], gpus)] += hi - lo
        out[job["job_id"]] = tuple(split)
    return out


def columns(truth: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {j["job_id"]: tuple(j[c] for c in CAUSES) for j in truth["jobs"] if j[CAUSES[0]] is not None}


# --- tests ------------------------------------------------------------------------------


def test_locality_rule_is_the_schedulers() -> None:
    """The split's rule (the ceil(g/8) machines with the most free GPUs hold g) is the scheduler's
    strict placement test for every size the workload draws (sizes over 8 are multiples of 8)."""
    assert all(s % 8 == 0 for s in SIZES if s > 8)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        m = _Machines(int(rng.integers(1, 7)), rng)
        m.count = rng.integers(0, 9, size=m.count.size)
        m.total = int(m.count.sum())
        for g in SIZES:
            k = -(-g // 8)
            rule = g <= m.total and int(np.sort(m.count)[::-1][:k].sum()) >= g
            assert m.fits(g, relaxed=False) == rule, (m.count, g)


@pytest.mark.parametrize("view", ["philly", "slurm"])
def test_quotas_file(view: str, request: pytest.FixtureRequest) -> None:
    trace = request.getfixturevalue(view)
    quotas = tomllib.loads((trace / "quotas.toml").read_text())["quotas"]
    truth = load(trace)
    assert quotas == {v["vc"]: v["quota_gpus"] for v in truth["generator"]["vcs"]}
    assert sum(quotas.values()) == 8 * ARGS["machines"]
    assert {j["vc"] for j in truth["jobs"]} <= set(quotas)


@pytest.mark.parametrize("view", ["philly", "slurm"])
def test_causes_sum_to_the_queue_delay(view: str, request: pytest.FixtureRequest) -> None:
    truth = load(request.getfixturevalue(view))
    started = [j for j in truth["jobs"] if j["queue_delay_s"] is not None]
    assert started and all(sum(j[c] for c in CAUSES) == j["queue_delay_s"] for j in started)
    assert all(j["wait_retry_s"] is not None for j in started)
    never = [j for j in truth["jobs"] if j["queue_delay_s"] is None]
    assert never and all(j["wait_retry_s"] is None and j[CAUSES[0]] is not None for j in never)


def test_waits_of_jobs_that_never_started_end_at_the_cancel(philly: Path, slurm: Path) -> None:
    """Both views are one simulation, jobs in the same order: Philly cannot say when a queued
    job was killed, sacct's cancelled row can; the Philly truth splits the same wait."""
    p_jobs, s_jobs, s_rows = load(philly)["jobs"], load(slurm)["jobs"], load(slurm)["attempts"]
    cancelled = {a["job_id"]: a["cancelled_at"] for a in s_rows if a["outcome"] == "cancelled_pending"}
    checked = 0
    for p, s in zip(p_jobs, s_jobs, strict=True):
        assert p["submit_time"] == s["submit_time"]
        if p["queue_delay_s"] is None:
            assert s["queue_delay_s"] is None and s["eligible_time"] == s["submit_time"]
            assert sum(p[c] for c in CAUSES) == seconds(cancelled[s["job_id"]]) - seconds(s["submit_time"])
            assert [p[c] for c in CAUSES] == [s[c] for c in CAUSES]
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("view", ["philly", "slurm"])
def test_split_matches_a_brute_force_replay(view: str, request: pytest.FixtureRequest, sizes: list[int]) -> None:
    trace = request.getfixturevalue(view)
    truth = load(trace)
    quotas = tomllib.loads((trace / "quotas.toml").read_text())["quotas"]
    start_column = "eligible_time" if view == "slurm" else "submit_time"
    expected = brute_force_split(truth, quotas, truth["generator"]["machines"], sizes, start_column)
    got = columns(truth)
    assert set(got) == set(expected) == {j["job_id"] for j in truth["jobs"]}
    assert {k: v for k, v in got.items() if expected[k] != v} == {}
    # Every cause the simulator can produce occurs. `capacity` cannot: the quotas are hard caps
    # that sum to the cluster's GPUs, so free GPUs = the sum of every VC's quota left >= the job's VC's.
    totals = [sum(v[i] for v in got.values()) for i in range(4)]
    assert totals[0] > 0 and totals[2] > 0 and totals[3] > 0, totals
    assert totals[1] == 0


def test_own_launch_failure_inside_the_recorded_wait(philly: Path) -> None:
    """Philly logs a launch failure without a start, so the recorded first wait runs through it;
    its GPUs count as free for its own job (the brute force above checks the split)."""
    truth = load(philly)
    launch = {a["job_id"] for a in truth["attempts"] if a["outcome"] == "launch_fail"}
    assert launch
    for job in truth["jobs"]:
        if job["job_id"] in launch and job["queue_delay_s"] is not None:
            first = seconds(job["first_start_time"])
            failed = [a for a in truth["attempts"] if a["job_id"] == job["job_id"] and a["outcome"] == "launch_fail"]
            assert all(a["start_time"] is None and a["real_allocation"] for a in failed)
            assert all(seconds(a["real_end_time"]) <= first for a in failed)


def naive(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=LA, fold=0).astimezone(UTC).timestamp())


def test_retry_waits_follow_from_the_job_log(philly: Path) -> None:
    log = json.loads((philly / "cluster_job_log").read_text())
    truth = {j["job_id"]: j for j in load(philly)["jobs"]}
    with_gaps = 0
    for job in log:
        runs = sorted(
            (naive(a["start_time"]), i, None if a["end_time"] == "None" else naive(a["end_time"]))
            for i, a in enumerate(job["attempts"])
            if a["start_time"] != "None"
        )
        want = (
            sum(max(0, b[0] - a[2]) for a, b in zip(runs, runs[1:], strict=False) if a[2] is not None) if runs else None
        )
        assert truth[job["jobid"]]["wait_retry_s"] == want, job["jobid"]
        with_gaps += bool(want)
    assert with_gaps > 5


def test_retry_waits_follow_from_sacct(slurm: Path) -> None:
    with (slurm / "sacct.txt").open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="|"))
    runs: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        if "." not in r["JobID"] and r["NodeList"] != "None assigned":
            runs[r["JobID"]].append((naive(r["Start"].replace("T", " ")), naive(r["End"].replace("T", " "))))
    with_gaps = 0
    for job in load(slurm)["jobs"]:
        mine = sorted(runs.get(job["job_id"], []))
        want = sum(max(0, b[0] - a[1]) for a, b in zip(mine, mine[1:], strict=False)) if mine else None
        assert job["wait_retry_s"] == want, job["job_id"]
        with_gaps += bool(want)
    assert with_gaps > 5
