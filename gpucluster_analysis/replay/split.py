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
cause are differences of cumulative sums at its two ends.

What-ifs come from the same state, first-order (each job alone, the others as they were):
had locality been relaxed after T minutes of waiting, the job could have started at the
first fragmentation instant after T; had its VC been allowed to borrow quota other VCs left
idle, at the first fair-share instant when a placement existed and enough idle quota did.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpucluster_analysis.replay.rules import LocalityRule
from gpucluster_analysis.replay.timeline import EPS, Timeline

# Column order of the per-cause arrays; user_limit, checked first, was added last (issue #15).
CAUSES = ("fair_share", "capacity", "fragmentation", "other", "user_limit")
FAIR_SHARE, CAPACITY, FRAGMENTATION, OTHER, USER_LIMIT = range(5)
RELAX_AFTER_MIN = (0, 10, 60)  # what-if: locality relaxed after this many minutes of waiting
RELAX_ABOVE_GPUS = 8  # ... for jobs of more GPUs than this


@dataclass
class WaitJobs:
    """The jobs to split, as arrays; the results are filled in by `split_waits`."""

    vc: np.ndarray  # VC code, -1 none
    gpus: np.ndarray
    wait_from: np.ndarray
    wait_until: np.ndarray


@dataclass
class ClassState:
    """What one (VC, GPUs) class sees on a slice of the grid."""

    T: np.ndarray
    cause: np.ndarray  # int8 per interval
    placeable: np.ndarray  # a placement under the rule exists (capacity and locality)
    borrowable: np.ndarray | None  # fair-share instants when idle quota elsewhere would have covered it


def class_state(
    tl: Timeline, lo: int, hi: int, gpus: float, usage: np.ndarray | None, quota: float | None,
    idle_quota_elsewhere: np.ndarray | None, rule: LocalityRule, user_over: np.ndarray | None = None,
) -> ClassState:
    """Causes on intervals lo..hi (inclusive) for jobs of `gpus` GPUs in a VC using `usage` of `quota`;
    `user_over` (on lo..hi): the intervals when the jobs' user is at one of their per-user caps."""
    part = slice(lo, hi + 1)
    capacity = tl.free[part] + EPS < gpus
    if tl.placement_known:
        k = rule.max_machines(gpus, tl.largest_machine, tl.machines)
        fragmented = tl.top_free(k)[part] + EPS < gpus
    else:
        fragmented = np.zeros(hi + 1 - lo, dtype=bool)
    fair_share = (usage[part] + gpus > quota + EPS) if usage is not None and quota is not None else None
    cause = np.full(hi + 1 - lo, OTHER, dtype=np.int8)
    cause[fragmented] = FRAGMENTATION
    cause[capacity] = CAPACITY
    borrowable = None
    if fair_share is not None:
        cause[fair_share] = FAIR_SHARE
        if idle_quota_elsewhere is not None:
            over = usage[part] + gpus - quota
            borrowable = fair_share & ~capacity & ~fragmented & (idle_quota_elsewhere[part] + EPS >= over)
    if user_over is not None:
        cause[user_over] = USER_LIMIT
        if borrowable is not None:
            borrowable &= ~user_over  # borrowed quota does not lift a per-user cap
    return ClassState(tl.T[part], cause, ~capacity & ~fragmented, borrowable)


def seconds_by_cause(state: ClassState, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(jobs, causes) seconds of [a, b) spent in each cause (columns in CAUSES order)."""
    out = np.empty((len(a), len(CAUSES)))
    durations = np.diff(state.T)
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
