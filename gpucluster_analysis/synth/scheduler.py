"""An event-driven gang scheduler with VC quotas and relaxed locality.

Contract: `simulate(cluster, jobs, rng, blackout)` runs every job to an end and
returns one `JobOutcome` per job (same order), holding the attempts as they
really happened. It is deterministic given the Generator, and it asserts that
no GPU is ever held by two attempts at once.

Rules, after the Philly study:

* gang scheduling: an attempt starts only when all its GPUs are free at once
  and its VC has that much quota left (quotas are hard caps);
* locality: a job of up to 8 GPUs goes on one server (best fit), a larger one
  on whole free servers; after `relax_wait` in the queue it accepts any free
  GPUs, fewest servers first. Waiting for that is the fragmentation delay;
* per (VC, size) queue FIFO by submit time; among the queue heads that fit,
  the oldest starts first (small jobs backfill around a waiting large one);
* a failed attempt is retried after a short gap until its plan runs out;
  kills end a queued or running job (`JobSpec.kill_kind`).

Every event time passes through `Blackout.defer`, so nothing the job log
records happens during a repeated fall-back hour's second occurrence.

Given a `waits.StateLog`, `simulate` also records the cluster state after each
instant's scheduling pass (free GPUs, quota left per VC, machines per free
count), from which `waits.cause_columns` tells why each job waited. Recording
draws nothing and changes no decision.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from gpucluster_analysis.synth.clock import Blackout
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE, Cluster, JobOutcome, JobSpec, RealAttempt
from gpucluster_analysis.synth.waits import StateLog

# Event kinds, in the order they are handled at one instant: free GPUs first,
# then kills, so that a job cancelled at the instant it became ready never starts.
_FINISH, _KILL, _READY, _RELAX = 0, 1, 2, 3
_WAITING, _QUEUED, _RUNNING, _DONE = 0, 1, 2, 3

RETRY_GAP = (15, 181)  # seconds between a failed attempt and its retry becoming ready


class _Machines:
    """Free GPUs per machine, with the placement policies."""

    def __init__(self, machines: int, rng: np.random.Generator) -> None:
        self.free = np.ones((machines, GPUS_PER_MACHINE), dtype=bool)
        self.count = np.full(machines, GPUS_PER_MACHINE, dtype=np.int64)
        self.total = machines * GPUS_PER_MACHINE
        self.hist = [0] * GPUS_PER_MACHINE + [machines]  # hist[f]: machines with f free GPUs
        self.rng = rng

    def fits(self, size: int, relaxed: bool) -> bool:
        if size > self.total:
            return False
        if relaxed:
            return True
        if size <= GPUS_PER_MACHINE:
            return bool(self.count.max() >= size)
        return int((self.count == GPUS_PER_MACHINE).sum()) >= size // GPUS_PER_MACHINE

    def _take(self, machine: int, n: int) -> tuple[int, ...]:
        free = np.flatnonzero(self.free[machine])
        chosen = np.sort(self.rng.choice(free, size=n, replace=False)) if n < free.size else free
        return tuple(int(g) for g in chosen)

    def place(self, size: int, relaxed: bool) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """Choose GPUs for a gang of `size`; the caller has checked `fits`."""
        alloc: list[tuple[int, tuple[int, ...]]] = []
        if not relaxed and size <= GPUS_PER_MACHINE:
            # Best fit: the fullest machine that still has room, to keep whole servers free.
            machine = int(np.argmin(np.where(self.count >= size, self.count, GPUS_PER_MACHINE + 1)))
            alloc.append((machine, self._take(machine, size)))
        elif not relaxed:
            whole = np.flatnonzero(self.count == GPUS_PER_MACHINE)
            picked = np.sort(self.rng.choice(whole, size=size // GPUS_PER_MACHINE, replace=False))
            alloc.extend((int(m), tuple(range(GPUS_PER_MACHINE))) for m in picked)
        else:
            # Fewest servers: the machines with the most free GPUs first.
            order = np.argsort(-self.count, kind="stable")
            left = size
            for m in order:
                if left == 0:
                    break
                n = int(min(self.count[m], left))
                if n:
                    alloc.append((int(m), self._take(int(m), n)))
                    left -= n
            alloc.sort()
        for machine, gpus in alloc:
            assert self.free[machine, list(gpus)].all(), f"GPU double-booked on machine {machine}"
            self.free[machine, list(gpus)] = False
            self.hist[self.count[machine]] -= 1
            self.count[machine] -= len(gpus)
            self.hist[self.count[machine]] += 1
        self.total -= size
        return tuple(alloc)

    def release(self, alloc: tuple[tuple[int, tuple[int, ...]], ...]) -> None:
        for machine, gpus in alloc:
            assert not self.free[machine, list(gpus)].any(), f"GPU released twice on machine {machine}"
            self.free[machine, list(gpus)] = True
            self.hist[self.count[machine]] -= 1
            self.count[machine] += len(gpus)
            self.hist[self.count[machine]] += 1
            self.total += len(gpus)


def simulate(
    cluster: Cluster,
    jobs: list[JobSpec],
    rng: np.random.Generator,
    blackout: Blackout,
    log: Callable[[str], None] = lambda _: None,
    states: StateLog | None = None,
) -> list[JobOutcome]:
    n = len(jobs)
    machines = _Machines(cluster.machines, rng)
    quota_left = list(cluster.vc_quota)
    state = [_WAITING] * n
    next_plan = [0] * n
    current: list[RealAttempt | None] = [None] * n
    started = [False] * n
    killed = [False] * n
    outcomes = [JobOutcome(status="passed") for _ in range(n)]
    relax_at = [blackout.defer(j.submit + j.relax_wait) for j in jobs]
    # Launch failures hold GPUs the job log does not show; the wait split needs their machines.
    holding_launch: dict[int, RealAttempt] = {}
    if states is not None:
        states.begin(min((j.submit for j in jobs), default=0), machines.total, quota_left, machines.hist)

    events: list[tuple[int, int, int, int]] = []  # (time, kind, seq, job)
    seq = 0

    def push(t: int, kind: int, job: int) -> None:
        nonlocal seq
        heapq.heappush(events, (blackout.defer(t), kind, seq, job))
        seq += 1

    # One FIFO heap per (VC, size); keys sorted so the scan order is fixed.
    bucket_keys = sorted({(j.vc, j.gpus) for j in jobs})
    buckets: dict[tuple[int, int], list[tuple[int, int]]] = {k: [] for k in bucket_keys}

    for spec in jobs:
        push(spec.ready, _READY, spec.index)
        if spec.kill_kind in ("cancel", "patience"):
            push(spec.submit + spec.kill_delay, _KILL, spec.index)

    def start(j: int, now: int, relaxed: bool) -> None:
        spec = jobs[j]
        planned = spec.plan[next_plan[j]]
        next_plan[j] += 1
        alloc = machines.place(spec.gpus, relaxed)
        quota_left[spec.vc] -= spec.gpus
        end = blackout.defer(now + planned.duration)
        attempt = RealAttempt(job=j, start=now, end=end, alloc=alloc, outcome=planned.outcome, reason=planned.reason)
        outcomes[j].attempts.append(attempt)
        current[j] = attempt
        state[j] = _RUNNING
        if planned.outcome == "launch_fail":
            holding_launch[j] = attempt
        heapq.heappush(events, (end, _FINISH, 0, j))
        if planned.outcome != "launch_fail" and not started[j]:
            started[j] = True
            if spec.kill_kind == "running":
                push(now + spec.kill_delay, _KILL, j)

    def stop(j: int, now: int) -> RealAttempt:
        attempt = current[j]
        assert attempt is not None
        machines.release(attempt.alloc)
        quota_left[jobs[j].vc] += jobs[j].gpus
        current[j] = None
        holding_launch.pop(j, None)
        return attempt

    def schedule(now: int) -> None:
        while machines.total > 0:
            best: tuple[int, int, tuple[int, int], bool] | None = None
            for key in bucket_keys:
                heap = buckets[key]
                while heap and state[heap[0][1]] != _QUEUED:
                    heapq.heappop(heap)  # killed while queued
                if not heap:
                    continue
                vc, size = key
                if size > quota_left[vc] or size > machines.total:
                    continue
                submit, j = heap[0]
                if best is not None and (submit, j) >= best[:2]:
                    continue
                if machines.fits(size, relaxed=False):
                    best = (submit, j, key, False)
                elif now >= relax_at[j] and machines.fits(size, relaxed=True):
                    best = (submit, j, key, True)
            if best is None:
                return
            heapq.heappop(buckets[best[2]])
            start(best[1], now, best[3])

    processed = 0
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, _, j = heapq.heappop(events)
            if state[j] == _DONE:
                continue
            if kind == _FINISH:
                attempt = current[j]
                if attempt is None or attempt.end != now:
                    continue  # stale: the attempt was killed earlier
                stop(j, now)
                if attempt.outcome == "pass":
                    outcomes[j].status = "passed"
                    state[j] = _DONE
                elif next_plan[j] < len(jobs[j].plan):
                    state[j] = _WAITING
                    push(now + int(rng.integers(*RETRY_GAP)), _READY, j)
                else:
                    outcomes[j].status = "failed"
                    state[j] = _DONE
            elif kind == _KILL:
                if jobs[j].kill_kind == "patience" and started[j]:
                    continue  # the user only gives up on a job that never ran
                if state[j] == _RUNNING:
                    attempt = stop(j, now)
                    attempt.end, attempt.outcome, attempt.reason = now, "killed", None
                state[j] = _DONE
                killed[j] = True
                outcomes[j].status = "killed"
                outcomes[j].killed_at = now
            elif kind == _READY:
                if state[j] == _WAITING:
                    state[j] = _QUEUED
                    spec = jobs[j]
                    heapq.heappush(buckets[(spec.vc, spec.gpus)], (spec.submit, j))
                    if relax_at[j] > now:
                        heapq.heappush(events, (relax_at[j], _RELAX, 0, j))
            # _RELAX only needs the scheduling pass below.
        schedule(now)
        if states is not None:
            states.record(now, machines.total, quota_left, machines.hist)
            for j, attempt in holding_launch.items():
                states.hold(j, tuple((m, int(machines.count[m]), len(g)) for m, g in attempt.alloc))
        processed += 1
        if processed % 200_000 == 0:
            log(f"simulated up to {processed:,} scheduling instants")

    assert all(s == _DONE for s in state), "simulation ended with jobs still queued or running"
    assert machines.total == cluster.gpus
    return outcomes
