"""Each second of a job's first wait gets one cause, read off the replayed state.

First match wins, at every instant of [wait_from, wait_until):
  user_limit     the GPUs the job's user holds under one of the job's per-user caps (its
                 association's GrpTRES in its account, its QOS's MaxTRESPU) plus the job's
                 own exceed that cap (only where the store knows such caps: sacctmgr);
  fair_share     the GPUs the job's VC holds plus the job's own exceed the VC's quota;
  capacity       the cluster's free GPUs in total are fewer than the job's;
  fragmentation  enough are free in total, but not on the k machines the locality rule
                 allows (k = ceil(g / m) by default): the k machines with the most free
                 GPUs hold fewer than g;
  other          a placement under the rule existed and the job still waited.
The cause depends on the job only through its VC, GPU count and per-user cap groups, so it is
computed once per (VC, GPUs, cap groups) class over the intervals its jobs' waits cover, and each job's seconds per
cause are differences of cumulative sums at its two ends. Only the intervals some wait of the
class covers are computed (covered_intervals), not every interval between its first wait and
its last: a class that waits now and then over a year costs what its waits cover, so that the
classes together (one per user where sacctmgr caps users) cost at most the waits, not classes
x the year's events.

What-ifs come from the same state, first-order (each job alone, the others as they were):
had locality been relaxed after T minutes of waiting, the job could have started at the
first fragmentation instant after T; had its VC been allowed to borrow quota other VCs left
idle, at the first fair-share instant when a placement existed and enough idle quota did.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpucluster_analysis import wait_causes
from gpucluster_analysis.replay.rules import LocalityRule
from gpucluster_analysis.replay.timeline import EPS, Steps, Timeline

# Column order of the per-cause arrays (and the int8 code of each cause): wait_causes.CAUSES'.
CAUSES = wait_causes.NAMES
USER_LIMIT = wait_causes.index("user_limit")
FAIR_SHARE = wait_causes.index("fair_share")
CAPACITY = wait_causes.index("capacity")
FRAGMENTATION = wait_causes.index("fragmentation")
OTHER = wait_causes.index("other")
RELAX_AFTER_MIN = (0, 10, 60)  # what-if: locality relaxed after this many minutes of waiting
RELAX_ABOVE_GPUS = 8  # ... for jobs of more GPUs than this


@dataclass
class WaitJobs:
    """The jobs to split, as arrays; the results are filled in by `split_waits`."""

    vc: np.ndarray  # VC code, -1 none
    gpus: np.ndarray
    wait_from: np.ndarray
    wait_until: np.ndarray


def covered_intervals(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """The sorted distinct grid intervals in any of [first[j], last[j]] (inclusive)."""
    if not first.size:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(first, kind="stable")
    lo, hi = first[order], np.maximum.accumulate(last[order])
    # islands of overlapping ranges: a new one where a range starts after all before it ended
    new = np.r_[True, lo[1:] > hi[:-1]]
    starts = lo[new]
    ends = hi[np.r_[np.flatnonzero(new)[1:] - 1, len(lo) - 1]]
    lengths = ends - starts + 1
    offsets = np.repeat(starts - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
    return offsets + np.arange(int(lengths.sum()), dtype=np.int64)


@dataclass
class ClassState:
    """What one (VC, GPUs) class sees on some intervals of the grid (sorted; consecutive
    within each of its jobs' waits)."""

    T: np.ndarray  # start of each interval
    durations: np.ndarray  # length of each (the open last interval of the grid: 0)
    cause: np.ndarray  # int8 per interval
    placeable: np.ndarray  # a placement under the rule exists (capacity and locality)
    borrowable: np.ndarray | None  # fair-share instants when idle quota elsewhere would have covered it


def class_state(
    tl: Timeline,
    part: np.ndarray,
    gpus: float,
    usage: Steps | None,
    quota: float | None,
    idle_quota: np.ndarray | None,
    rule: LocalityRule,
    user_over: np.ndarray | None = None,
) -> ClassState:
    """Causes on the grid intervals `part` (sorted) for jobs of `gpus` GPUs in a VC using `usage`
    of `quota`; `idle_quota`: all VCs' quota left idle (this VC's own is taken out here);
    `user_over` (on `part`): the intervals when the jobs' user is at one of their per-user caps."""
    capacity = tl.free[part] + EPS < gpus
    if tl.placement_known:
        k = rule.max_machines(gpus, tl.largest_machine, tl.machines)
        fragmented = tl.top_free(k)[part] + EPS < gpus
    else:
        fragmented = np.zeros(len(part), dtype=bool)
    fair_share = (usage[part] + gpus > quota + EPS) if usage is not None and quota is not None else None
    cause = np.full(len(part), OTHER, dtype=np.int8)
    cause[fragmented] = FRAGMENTATION
    cause[capacity] = CAPACITY
    borrowable = None
    if fair_share is not None:
        cause[fair_share] = FAIR_SHARE
        if idle_quota is not None:
            assert usage is not None and quota is not None
            elsewhere = idle_quota[part] - np.maximum(quota - usage[part], 0.0)
            over = usage[part] + gpus - quota
            borrowable = fair_share & ~capacity & ~fragmented & (elsewhere + EPS >= over)
    if user_over is not None:
        cause[user_over] = USER_LIMIT
        if borrowable is not None:
            borrowable &= ~user_over  # borrowed quota does not lift a per-user cap
    durations = np.append(np.diff(tl.T), 0.0)[part]
    return ClassState(tl.T[part], durations, cause, ~capacity & ~fragmented, borrowable)


def seconds_by_cause(state: ClassState, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(jobs, causes) seconds of [a, b) spent in each cause (columns in CAUSES order)."""
    out = np.empty((len(a), len(CAUSES)))
    durations = state.durations[:-1]
    ia = np.maximum(np.searchsorted(state.T, a, side="right") - 1, 0)
    ib = np.maximum(np.searchsorted(state.T, b, side="right") - 1, 0)
    for c in range(len(CAUSES)):
        on = (state.cause == c).astype(float)
        cum = np.concatenate([[0.0], np.cumsum(on[:-1] * durations)])
        out[:, c] = (cum[ib] + (b - state.T[ib]) * on[ib]) - (cum[ia] + (a - state.T[ia]) * on[ia])
    return out


def saved_by_first(state: ClassState, mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Seconds of [a, b) after the first instant >= a where `mask` holds (0 when it never does)."""
    n = len(mask)
    first_from = np.minimum.accumulate(np.where(mask, np.arange(n), n)[::-1])[::-1]
    ia = np.maximum(np.searchsorted(state.T, a, side="right") - 1, 0)
    j = first_from[np.minimum(ia, n - 1)]
    found = j < n
    when = np.where(found, np.maximum(a, state.T[np.minimum(j, n - 1)]), np.inf)
    return np.where(found & (when < b), b - when, 0.0)


def cause_at(state: ClassState, t: np.ndarray) -> np.ndarray:
    i = np.maximum(np.searchsorted(state.T, t, side="right") - 1, 0)
    return state.cause[i]
