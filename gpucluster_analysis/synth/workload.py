"""Draw the cluster (VCs, quotas, users) and the jobs submitted to it.

Contract: `draw_cluster` and `draw_jobs` are pure functions of their arguments
and the numpy Generator they are given; they return the specs the scheduler
runs (`model.Cluster`, `model.JobSpec`), with every time an int UTC second
already moved out of the log blackout (`clock.Blackout`).

The shapes follow the Philly study loosely: mostly 1-GPU jobs, a few 16- and
32-GPU gangs; VC demand proportional to quota; heavy-tailed run times scaled
so the offered load is about `TARGET_LOAD` of the cluster (within the run-time
bounds); final fates near the paper's 69% passed / 17% failed / 14% killed.
"""

from __future__ import annotations

import math

import numpy as np

from gpucluster_analysis.synth.clock import Blackout, RepeatedHour
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE, Cluster, JobSpec, PlannedAttempt

SIZES = (1, 2, 4, 8, 16, 32)
SIZE_WEIGHTS = (0.52, 0.12, 0.16, 0.12, 0.05, 0.03)

TARGET_LOAD = 0.7  # offered GPU-seconds / capacity over the window
MIN_RUNTIME, MAX_RUNTIME = 60, 86_400
RUNTIME_SIGMA = 1.5
MEDIAN_BOUNDS = (300.0, 6 * 3600.0)  # the calibrated median run time stays in here

# Failed-job reasons: (reason, weight, when it strikes, needs >1 GPU).
# CPU (host) OOM is the most frequent, as in the paper; user errors strike early,
# infrastructure late.
FAILED_REASONS = (
    ("host_oom", 0.20, "mid", False),
    ("cuda_oom", 0.13, "early", False),
    ("import_error", 0.12, "early", False),
    ("file_not_found", 0.12, "mixed", False),
    ("key_error", 0.10, "early", False),
    ("nan_loss", 0.08, "late", False),
    ("nccl_error", 0.09, "late", True),
    ("mpi_failure", 0.09, "late", True),
    ("gpu_hw", 0.07, "late", False),
)
# Reasons that make an otherwise healthy job fail and be retried.
TRANSIENT_REASONS = (
    ("gpu_hw", 0.5, "late", False),
    ("nccl_error", 0.3, "late", True),
    ("mpi_failure", 0.2, "late", True),
)
USER_REPEATED = {"host_oom", "cuda_oom", "import_error", "file_not_found", "key_error", "nan_loss"}

FATE_WEIGHTS = {"pass": 0.67, "failed": 0.18, "running_kill": 0.10, "patience": 0.05}
CANCEL_FRACTION = 0.015  # killed before the scheduler ever saw them (no attempts)
LAUNCH_FAIL_FRACTION = 0.006  # first placement fails before the containers start
TRANSIENT_FAIL_PROB = 0.07  # a healthy job loses an attempt to the infrastructure
FAILED_ATTEMPTS = ((1, 0.45), (2, 0.25), (3, 0.2), (4, 0.1))


def _hex_names(rng: np.random.Generator, count: int) -> tuple[str, ...]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        name = f"{int(rng.integers(0, 1 << 24)):06x}"
        if name not in seen:
            seen.add(name)
            names.append(name)
    return tuple(names)


def draw_cluster(rng: np.random.Generator, machines: int, jobs: int) -> Cluster:
    """VCs with quotas summing to the cluster's GPUs, and users spread over them."""
    total = machines * GPUS_PER_MACHINE
    n_vc = min(14, max(1, round(1 + math.sqrt(machines) / 1.6)))
    weights = np.sort(rng.dirichlet(np.full(n_vc, 2.0)))[::-1]
    floor_each = GPUS_PER_MACHINE if total >= GPUS_PER_MACHINE * n_vc else 1
    quota = np.maximum(np.floor(weights * total).astype(int), floor_each)
    # Settle the rounding on the largest VCs so the quotas sum to the cluster size.
    i = 0
    while quota.sum() != total:
        step = 1 if quota.sum() < total else -1
        if step > 0 or quota[i % n_vc] > floor_each:
            quota[i % n_vc] += step
        i += 1
    n_users = max(n_vc, min(400, round(jobs**0.6)))
    user_vc = np.sort(rng.choice(n_vc, size=n_users, p=quota / total))
    user_vc[:n_vc] = np.arange(n_vc)  # every VC has at least one user
    user_vc = np.sort(user_vc)
    return Cluster(
        machines=machines,
        vc_names=_hex_names(rng, n_vc),
        vc_quota=tuple(int(q) for q in quota),
        user_names=_hex_names(rng, n_users),
        user_vc=tuple(int(v) for v in user_vc),
    )


def _arrivals(rng: np.random.Generator, n: int, t0: int, span: int) -> np.ndarray:
    """`n` submit times in [t0, t0+span) from a diurnal Poisson process (peak mid-afternoon)."""
    accepted: list[np.ndarray] = []
    have = 0
    while have < n:
        cand = rng.uniform(0, span, size=2 * n + 16)
        # Hour of day in Pacific time; a fixed UTC-8 is close enough for a rate curve.
        hour = ((t0 + cand) / 3600.0 - 8.0) % 24.0
        rate = 1.0 + 0.6 * np.cos(2 * np.pi * (hour - 15.0) / 24.0)
        keep = cand[rng.uniform(0, 1.6, size=cand.size) < rate]
        accepted.append(keep)
        have += keep.size
    times = np.concatenate(accepted)[:n]
    return np.sort(t0 + np.floor(times).astype(np.int64))


def _ensure_in_repeated_hour(rng: np.random.Generator, submit: np.ndarray, hours: list[RepeatedHour]) -> None:
    """Make sure some submission falls in each first occurrence (the naive times the rule must read)."""
    for h in hours:
        inside = (submit >= h.first) & (submit < h.second)
        if not inside.any() and submit.size:
            nearest = int(np.argmin(np.abs(submit - (h.first + (h.second - h.first) // 2))))
            submit[nearest] = h.first + int(rng.integers(60, h.second - h.first - 60))
    submit.sort()


def _calibrated_runtimes(
    rng: np.random.Generator, gpus: np.ndarray, stretch: np.ndarray, capacity: float
) -> np.ndarray:
    """Lognormal run times, clipped, with the median chosen to offer TARGET_LOAD."""
    z = rng.standard_normal(gpus.size)

    def runtimes(mu: float) -> np.ndarray:
        return np.clip(np.exp(mu + RUNTIME_SIGMA * z) * stretch, MIN_RUNTIME, MAX_RUNTIME)

    lo, hi = math.log(MEDIAN_BOUNDS[0]), math.log(MEDIAN_BOUNDS[1])
    for _ in range(50):
        mid = (lo + hi) / 2
        if float((runtimes(mid) * gpus).sum()) < TARGET_LOAD * capacity:
            lo = mid
        else:
            hi = mid
    return np.floor(runtimes((lo + hi) / 2)).astype(np.int64)


def _largest_size(limit: int) -> int:
    return max(s for s in SIZES if s <= limit)


def _time_to_failure(rng: np.random.Generator, when: str, runtime: int) -> int:
    if when == "mixed":
        when = "early" if rng.random() < 0.7 else "late"
    if when == "early":
        t = float(rng.lognormal(math.log(90.0), 1.0))
    elif when == "mid":
        t = float(rng.uniform(0.05, 0.6)) * runtime
    else:
        t = float(rng.uniform(0.2, 0.98)) * runtime
    return int(max(5, min(t, 0.95 * runtime)))


def _pick_reason(
    rng: np.random.Generator, table: tuple[tuple[str, float, str, bool], ...], gpus: int
) -> tuple[str, str]:
    rows = [r for r in table if gpus > 1 or not r[3]]
    w = np.array([r[1] for r in rows])
    row = rows[int(rng.choice(len(rows), p=w / w.sum()))]
    return row[0], row[2]


def _plan(rng: np.random.Generator, fate: str, gpus: int, runtime: int, launch_fail: bool) -> list[PlannedAttempt]:
    plan: list[PlannedAttempt] = []
    if launch_fail:
        plan.append(PlannedAttempt("launch_fail", int(rng.integers(3, 46)), "node_fail"))
    if fate == "failed":
        count = int(rng.choice([c for c, _ in FAILED_ATTEMPTS], p=[p for _, p in FAILED_ATTEMPTS]))
        reason, when = _pick_reason(rng, FAILED_REASONS, gpus)
        for _ in range(count):
            if reason not in USER_REPEATED:  # an infrastructure fault differs from retry to retry
                reason, when = _pick_reason(rng, TRANSIENT_REASONS, gpus)
            plan.append(PlannedAttempt("fail", _time_to_failure(rng, when, runtime), reason))
        return plan
    if rng.random() < TRANSIENT_FAIL_PROB:
        for _ in range(1 + int(rng.random() < 0.25)):
            reason, when = _pick_reason(rng, TRANSIENT_REASONS, gpus)
            plan.append(PlannedAttempt("fail", _time_to_failure(rng, when, runtime), reason))
    plan.append(PlannedAttempt("pass", runtime, None))
    return plan


def draw_jobs(
    rng: np.random.Generator,
    cluster: Cluster,
    n_jobs: int,
    t0: int,
    span: int,
    hours: list[RepeatedHour],
    blackout: Blackout,
) -> list[JobSpec]:
    """`n_jobs` jobs submitted in [t0, t0+span), in submit order, ids ascending."""
    submit = _arrivals(rng, n_jobs, t0, span)
    _ensure_in_repeated_hour(rng, submit, hours)
    submit = np.sort(np.array([blackout.defer(int(t)) for t in submit], dtype=np.int64))

    user = rng.choice(len(cluster.user_names), size=n_jobs, p=_user_weights(cluster))
    vc = np.array([cluster.user_vc[u] for u in user])
    sizes = rng.choice(SIZES, size=n_jobs, p=SIZE_WEIGHTS)
    limit = np.minimum(np.array(cluster.vc_quota)[vc], cluster.gpus)
    sizes = np.array([_largest_size(int(min(s, lim))) for s, lim in zip(sizes, limit, strict=True)])

    fates = list(FATE_WEIGHTS)
    fate = rng.choice(len(fates), size=n_jobs, p=list(FATE_WEIGHTS.values()))
    # Users kill long jobs more often (the paper: killed jobs hold 38% of GPU time).
    stretch = np.where(fate == fates.index("running_kill"), 2.5, 1.0)
    runtime = _calibrated_runtimes(rng, sizes, stretch, capacity=float(cluster.gpus) * span)

    n_cancel = max(1, round(CANCEL_FRACTION * n_jobs)) if n_jobs >= 10 else 0
    cancel = set(rng.choice(n_jobs, size=n_cancel, replace=False).tolist()) if n_cancel else set()
    healthy = [j for j in range(n_jobs) if fates[fate[j]] == "pass" and j not in cancel]
    n_launch = min(len(healthy), max(1, round(LAUNCH_FAIL_FRACTION * n_jobs))) if n_jobs >= 10 else 0
    launch_fail = set(rng.choice(healthy, size=n_launch, replace=False).tolist()) if n_launch else set()

    cluster_epoch_ms = (t0 - int(rng.integers(2, 40)) * 86_400) * 1000 + int(rng.integers(0, 1000))
    first_number = int(rng.integers(1_000, 20_000))
    specs = []
    for j in range(n_jobs):
        f = fates[fate[j]]
        gpus = int(sizes[j])
        latency = int(rng.integers(5, 91))
        plan = _plan(rng, "failed" if f == "failed" else "pass", gpus, int(runtime[j]), j in launch_fail)
        kill_kind: str | None = None
        kill_delay = 0
        if j in cancel:
            kill_kind, kill_delay = "cancel", int(rng.integers(1, latency))
        elif f == "running_kill":
            kill_kind, kill_delay = "running", int(max(30, rng.uniform(0.05, 0.9) * int(runtime[j])))
        elif f == "patience":
            kill_kind, kill_delay = "patience", int(rng.lognormal(math.log(1800.0), 1.2)) + 60
        eff = float(rng.beta(3.0, 1.4))
        specs.append(
            JobSpec(
                index=j,
                job_id=f"application_{cluster_epoch_ms}_{first_number + j}",
                submit=int(submit[j]),
                ready=blackout.defer(int(submit[j]) + latency),
                vc=int(vc[j]),
                user=int(user[j]),
                gpus=gpus,
                plan=plan,
                relax_wait=1800 if gpus <= GPUS_PER_MACHINE else 3 * 3600,
                kill_kind=kill_kind,
                kill_delay=kill_delay,
                efficiency=eff,
                util_noise=float(rng.uniform(2.0, 12.0)),
            )
        )
    return specs


def _user_weights(cluster: Cluster) -> np.ndarray:
    """Per-user submission weights: VC share by quota, Zipf-like within the VC."""
    quota = np.array(cluster.vc_quota, dtype=float)
    w = np.zeros(len(cluster.user_names))
    for v in range(len(cluster.vc_names)):
        members = [u for u, uv in enumerate(cluster.user_vc) if uv == v]
        ranks = 1.0 / np.arange(1, len(members) + 1) ** 1.1
        w[members] = quota[v] / quota.sum() * ranks / ranks.sum()
    return w / w.sum()
