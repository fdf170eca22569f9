"""Why each job waited: every second of a wait split into one cause, from the simulator's state.

Contract: `simulate` fills a `StateLog` with the cluster state after each
instant's scheduling pass (the state holds until the next instant): free GPUs
in total, the quota each VC has left, and how many machines have f free GPUs
(f = 0..8). `cause_columns` then splits given waits `[a, b)` of given jobs
into seconds per cause (`CAUSES`). The cause of second t (the state after
every event at t; an attempt holds its GPUs for start <= t < end) is the first
that matches:

1. `fair_share`: the GPUs the other attempts of the job's VC hold, plus the
   job's own, exceed the VC's quota (the job's GPUs > the VC's quota left);
2. `capacity`: fewer GPUs are free in the whole cluster than the job needs;
3. `fragmentation`: enough are free, but not under the locality rule: a job
   of g GPUs may use at most k = ceil(g / 8) machines, so it fits iff the k
   machines with the most free GPUs have g free between them;
4. `other`: such a placement existed and the job still waited (not yet seen
   by the scheduler, behind an older job of its queue, ...).

A job's own attempts never count against it: where a launch failure of the
job holds GPUs inside the wait being split (Philly's log shows no start for
it, so the recorded wait runs through it), those GPUs count as free and
within quota for that job. The scheduler records the free GPUs of the
machines such an attempt holds, at every instant it holds them.

The split is vectorized per (VC, size) class: one cause code per instant,
cumulative seconds per cause over instants, and each wait's seconds as the
difference of that running total at its two ends.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpucluster_analysis import wait_causes
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE, JobSpec, RealAttempt

# The causes of gca's split (wait_causes.py) but user_limit: the generator writes no per-user caps.
_MODELLED = tuple(c for c in wait_causes.CAUSES if not c.needs_user_caps)
CAUSES = tuple(c.name for c in _MODELLED)
CAUSE_COLUMNS = tuple(c.column for c in _MODELLED)
_FAIR = CAUSES.index("fair_share")
_CAPACITY = CAUSES.index("capacity")
_FRAGMENTATION = CAUSES.index("fragmentation")
_OTHER = CAUSES.index("other")

# (machine, its free GPUs at the instant, GPUs the job's own attempt holds there)
Holding = tuple[tuple[int, int, int], ...]


@dataclass
class StateLog:
    """The cluster state after each scheduling instant, in flat arrays: about 100 bytes an instant
    at 14 VCs, so 50 MB for Philly scale's half a million instants."""

    times: array = field(default_factory=lambda: array("q"))  # epoch seconds
    free: array = field(default_factory=lambda: array("i"))
    quota_left: array = field(default_factory=lambda: array("i"))  # n_vc per instant
    hist: array = field(default_factory=lambda: array("i"))  # 9 per instant
    held: dict[tuple[int, int], Holding] = field(default_factory=dict)  # (instant, job) -> own launch failure
    n_vc: int = 0

    def begin(self, t: int, free: int, quota_left: Sequence[int], hist: Sequence[int]) -> None:
        """The state before the first event (an empty cluster), valid from `t` (the first submission)."""
        self.n_vc = len(quota_left)
        self.record(t, free, quota_left, hist)

    def record(self, t: int, free: int, quota_left: Sequence[int], hist: Sequence[int]) -> None:
        self.times.append(t)
        self.free.append(free)
        self.quota_left.extend(quota_left)
        self.hist.extend(hist)

    def hold(self, job: int, machines: Holding) -> None:
        """At the instant just recorded, a launch failure of `job` holds GPUs on `machines`."""
        self.held[(len(self.times) - 1, job)] = machines

    def __len__(self) -> int:
        return len(self.times)


def top_free(hist: np.ndarray, k: int, chunk: int = 1 << 16) -> np.ndarray:
    """Free GPUs on the k machines with the most free GPUs, per row of a (n, 9) histogram
    (row r: how many machines have 0..8 free). Rows go in chunks to bound the temporaries."""
    value = np.arange(GPUS_PER_MACHINE, -1, -1)
    out = np.empty(hist.shape[0], dtype=np.int64)
    for lo in range(0, hist.shape[0], chunk):
        desc = hist[lo : lo + chunk, ::-1].astype(np.int64)  # columns: machines with 8, 7, ..., 0 free
        machines = np.cumsum(desc, axis=1)
        gpus = np.cumsum(desc * value, axis=1)
        enough = machines >= k
        col = np.where(enough.any(axis=1), enough.argmax(axis=1), GPUS_PER_MACHINE)
        rows = np.arange(desc.shape[0])
        before_m = np.where(col > 0, machines[rows, col - 1], 0)
        before_g = np.where(col > 0, gpus[rows, col - 1], 0)
        out[lo : lo + chunk] = before_g + np.minimum(k - before_m, desc[rows, col]) * value[col]
    return out


def _locality_k(gpus: int) -> int:
    return -(-gpus // GPUS_PER_MACHINE)


def _cause(gpus: int, quota_left: int, free: int, hist: np.ndarray) -> int:
    """The cause at one instant (the scalar form of `_codes`)."""
    if gpus > quota_left:
        return _FAIR
    if gpus > free:
        return _CAPACITY
    if int(top_free(hist[None, :], _locality_k(gpus))[0]) < gpus:
        return _FRAGMENTATION
    return _OTHER


@dataclass(frozen=True)
class _States:
    times: np.ndarray  # (n,)
    free: np.ndarray  # (n,)
    quota_left: np.ndarray  # (n, n_vc)
    hist: np.ndarray  # (n, 9)
    held: dict[tuple[int, int], Holding]
    durations: np.ndarray  # (n,): how long each state held (0 for the last)

    @classmethod
    def of(cls, log: StateLog) -> _States:
        n = len(log)
        times = np.frombuffer(log.times, dtype=np.int64)
        return cls(
            times=times,
            free=np.frombuffer(log.free, dtype=np.int32),
            quota_left=np.frombuffer(log.quota_left, dtype=np.int32).reshape(n, log.n_vc),
            hist=np.frombuffer(log.hist, dtype=np.int32).reshape(n, GPUS_PER_MACHINE + 1),
            held=log.held,
            durations=np.diff(times, append=times[-1]),
        )

    def instant(self, t: np.ndarray | int) -> np.ndarray:
        """Index of the state in force at second t (the last instant <= t)."""
        return np.searchsorted(self.times, t, side="right") - 1


def _split_class(s: _States, code: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Seconds per cause of the waits [a, b) under one class's per-instant cause codes: (len(a), 4).

    With running[i] = the seconds of a cause before instant i, the seconds up to second t are
    running[i] + (t - times[i]) if instant i = instant(t) has that cause, else running[i]."""
    ia, ib = s.instant(a), s.instant(b)
    out = np.empty((a.size, len(CAUSES)), dtype=np.int64)
    running = np.zeros(code.size, dtype=np.int64)
    for c in range(len(CAUSES)):
        mine = code == c
        np.cumsum(np.where(mine[:-1], s.durations[:-1], 0), out=running[1:])
        out[:, c] = (running[ib] + (b - s.times[ib]) * mine[ib]) - (running[ia] + (a - s.times[ia]) * mine[ia])
    return out


def _own_correction(s: _States, vc: int, gpus: int, job: int, a: int, b: int) -> np.ndarray:
    """Seconds per cause to add to [a, b), a stretch in which the job's own launch failure held GPUs:
    minus the plain split, plus the split with those GPUs counted free for the job."""
    delta = np.zeros(len(CAUSES), dtype=np.int64)
    first, last = int(s.instant(a)), int(s.instant(b - 1))
    for i in range(first, last + 1):
        lo = max(int(s.times[i]), a)
        hi = min(int(s.times[i + 1]), b) if i + 1 < len(s.times) else b
        held = s.held[(i, job)]
        own = sum(n for _, _, n in held)
        hist = s.hist[i].copy()
        for _, free_there, n in held:
            hist[free_there] -= 1
            hist[free_there + n] += 1
        delta[_cause(gpus, int(s.quota_left[i, vc]), int(s.free[i]), s.hist[i])] -= hi - lo
        delta[_cause(gpus, int(s.quota_left[i, vc]) + own, int(s.free[i]) + own, hist)] += hi - lo
    return delta


def cause_columns(
    log: StateLog, specs: list[JobSpec], spans: list[tuple[int, int] | None], own: list[list[RealAttempt]]
) -> list[dict[str, int | None]]:
    """For each job (specs[i]), its wait spans[i] = [a, b) split into seconds per cause, as
    `wait_<cause>_s` columns; all None where spans[i] is None or the job asks for no GPUs.
    own[i]: the job's attempts that may hold GPUs inside the span (launch failures)."""
    s = _States.of(log)
    rows = [i for i, span in enumerate(spans) if span is not None and specs[i].gpus > 0]
    out: list[dict[str, int | None]] = [dict.fromkeys(CAUSE_COLUMNS) for _ in specs]
    if not rows:
        return out
    idx = np.array(rows, dtype=np.int64)
    vc = np.array([specs[i].vc for i in rows], dtype=np.int64)
    gpus = np.array([specs[i].gpus for i in rows], dtype=np.int64)
    a = np.array([spans[i][0] for i in rows], dtype=np.int64)  # type: ignore[index]  # rows: spans that are not None
    b = np.array([spans[i][1] for i in rows], dtype=np.int64)  # type: ignore[index]  # rows: spans that are not None
    assert (a <= b).all() and (a >= s.times[0]).all()
    seconds = np.zeros((len(rows), len(CAUSES)), dtype=np.int64)
    fits = {int(g): top_free(s.hist, _locality_k(int(g))) >= g for g in np.unique(gpus)}
    for v, g in sorted({(int(v), int(g)) for v, g in zip(vc, gpus, strict=True)}):
        members = np.flatnonzero((vc == v) & (gpus == g))
        code = np.where(
            g > s.quota_left[:, v], _FAIR, np.where(g > s.free, _CAPACITY, np.where(fits[g], _OTHER, _FRAGMENTATION))
        )
        seconds[members] = _split_class(s, code, a[members], b[members])
    position = {int(j): k for k, j in enumerate(idx)}
    for i in rows:
        for attempt in own[i]:
            lo, hi = max(attempt.start, spans[i][0]), min(attempt.end, spans[i][1])  # type: ignore[index]  # rows: spans that are not None
            if lo < hi:
                spec = specs[i]
                seconds[position[i]] += _own_correction(s, spec.vc, spec.gpus, spec.index, lo, hi)
    for k, i in enumerate(rows):
        out[i] = {c: int(x) for c, x in zip(CAUSE_COLUMNS, seconds[k], strict=True)}
    return out


def retry_wait(runs: list[tuple[int, int | None]]) -> int:
    """Sum of max(0, next start - previous end) over consecutive (start, end) runs, given in
    chronological order; a run without an end (only ever a job's last) adds nothing."""
    total = 0
    for (_, end), (start, _) in zip(runs, runs[1:], strict=False):
        if end is not None:
            total += max(0, start - end)
    return total
