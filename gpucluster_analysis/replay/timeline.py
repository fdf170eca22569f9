"""The replayed state of one cluster over time, as step functions on the event grid.

Between two consecutive event times (an attempt starting or ending) nothing changes, so
the state is kept once per interval [T[i], T[i+1]) of the sorted event times T (the last
interval is open-ended; T[0] lies before every event and every wait). Each machine's held
GPUs come from a sweep of its own starts and ends in time order, never from a join of
overlapping windows, so a million short jobs on few machines cost what they are: 2 events
each. Everything is numpy over intervals or events; nothing loops per second or per job.

From the per-machine sweep come, per interval: the free GPUs in total, the fully idle
machines and a histogram of free GPUs per machine, from which `top_free(k)` (the free
GPUs of the k machines with the most free) answers the locality rule for any k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

EPS = 1e-6  # GPU counts are compared with this slack (fractional shares add up in floating point)
QUOTA_QUANTILE = 0.95  # inferred quota: this time-weighted quantile of the GPUs a VC held
# Histograms of free GPUs per machine are kept for machines up to this size; a larger
# "machine" (a listing error) makes per-machine placement meaningless and is reported.
MAX_MACHINE_GPUS = 256


@dataclass
class Holdings:
    """Started attempts' holdings, one row per (attempt, machine); machine -1: placement unknown."""

    start: np.ndarray  # epoch seconds
    end: np.ndarray
    machine: np.ndarray  # index into the cluster's machines, or -1
    vc: np.ndarray  # VC code, -1 for none
    gpus: np.ndarray  # GPUs held there (float)


@dataclass
class Timeline:
    """Step functions of one cluster's state on the grid T."""

    T: np.ndarray
    capacity: float  # GPUs of the cluster
    capacity_basis: str  # listed/observed machines, or the peak held (placement unknown)
    machines: int
    largest_machine: int  # GPUs of the largest machine (0 when placement is unknown)
    placement_known: bool  # per-machine state exists (some attempt names its machines)
    held: np.ndarray  # GPUs held in total
    free: np.ndarray  # free GPUs in total (per machine, clamped at 0, less holdings without a machine)
    idle_machines: np.ndarray  # machines with nothing held
    # [v-1, i]: machines with >= v free GPUs on interval i, v = 1..max machine size (one row per
    # v: the sums over v read contiguous rows)
    _at_least: np.ndarray | None = None
    _top: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.T)

    def index(self, t: np.ndarray) -> np.ndarray:
        """Interval of each time: the last i with T[i] <= t (times before T[0] map to 0)."""
        return np.maximum(np.searchsorted(self.T, t, side="right") - 1, 0)

    def top_free(self, k: int) -> np.ndarray:
        """Per interval, the free GPUs of the k machines with the most free (whole GPUs)."""
        if k not in self._top:
            if self._at_least is None:
                self._top[k] = np.zeros(self.n)
            else:
                # sum of the k largest values = sum over v >= 1 of min(k, #machines with >= v)
                self._top[k] = np.minimum(self._at_least, k).sum(axis=0, dtype=np.int64).astype(float)
        return self._top[k]

    def durations(self) -> np.ndarray:
        """Length of each closed interval (the open last one gets 0)."""
        return np.append(np.diff(self.T), 0.0)

    def durations_within(self, since: float | None, until: float | None) -> np.ndarray:
        """Length of each closed interval inside [since, until) (epoch seconds; None: open)."""
        lo = self.T[:-1] if since is None else np.maximum(self.T[:-1], since)
        hi = self.T[1:] if until is None else np.minimum(self.T[1:], until)
        return np.append(np.maximum(hi - lo, 0.0), 0.0)


def event_grid(holdings: Holdings, waits_from: np.ndarray) -> np.ndarray:
    """Sorted distinct event times, led by one time before every event and wait."""
    times = np.concatenate([holdings.start, holdings.end])
    lead = min(times.min() if times.size else np.inf, waits_from.min() if waits_from.size else np.inf)
    lead = 0.0 if not np.isfinite(lead) else lead - 1.0
    return _distinct(np.concatenate([[lead], times]))


def _distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values) for values without NaN, by one sort (numpy's unique hashes first: slower)."""
    if values.dtype.kind == "f" and np.isnan(values).any():
        return np.unique(values)
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if ordered.size else ordered


def grid_index(T: np.ndarray, holdings: Holdings) -> tuple[np.ndarray, np.ndarray]:
    """Each holding's first interval on the grid T and the interval it ends at (exclusive)."""
    return np.searchsorted(T, holdings.start), np.searchsorted(T, holdings.end)


def build_timeline(
    T: np.ndarray,
    holdings: Holdings,
    capacities: np.ndarray,
    listed_total: float | None,
    grid: tuple[np.ndarray, np.ndarray] | None = None,
) -> Timeline:
    """The cluster's state on the grid T from its holdings and machine capacities.

    `capacities[m]`: GPUs of machine m. Without machines (placement unknown everywhere),
    the cluster's size is `listed_total` (a node list) or else the most GPUs ever held at once.
    `grid`: grid_index(T, holdings), where the caller has it already.
    """
    n = len(T)
    start_i, end_i = grid if grid is not None else grid_index(T, holdings)
    held = _step(n, start_i, end_i, holdings.gpus)
    placed = holdings.machine >= 0
    unplaced_held = _step(n, start_i[~placed], end_i[~placed], holdings.gpus[~placed])

    if capacities.size and placed.any():
        caps = capacities.astype(float)
        free, idle, at_least = _machine_sweep(
            n, start_i[placed], end_i[placed], holdings.machine[placed], holdings.gpus[placed], caps
        )
        return Timeline(
            T,
            float(caps.sum()),
            "machines",
            len(caps),
            int(caps.max()),
            True,
            held,
            np.maximum(free - unplaced_held, 0.0),
            idle,
            at_least,
        )
    if capacities.size:
        total, basis = float(capacities.sum()), "machines"
    elif listed_total:
        total, basis = float(listed_total), "machines"
    else:
        total, basis = float(held.max()) if n else 0.0, "peak held"
    idle = np.full(n, float(len(capacities))) if capacities.size else np.full(n, np.nan)
    return Timeline(T, total, basis, len(capacities), 0, False, held, np.maximum(total - held, 0.0), idle)


def _step(n: int, start_i: np.ndarray, end_i: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """Per interval, the sum of `amount` over the rows with start_i <= i < end_i."""
    delta = np.bincount(start_i, weights=amount, minlength=n + 1) - np.bincount(end_i, weights=amount, minlength=n + 1)
    return np.round(np.cumsum(delta[:n]), 6)


def _machine_sweep(
    n: int, start_i: np.ndarray, end_i: np.ndarray, machine: np.ndarray, gpus: np.ndarray, caps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Each machine's held GPUs swept in time order; per interval: free GPUs, idle machines,
    and machines with at least v free GPUs (v = 1..largest machine)."""
    m_count = len(caps)
    # one row per (machine, event interval) with the net change of GPUs held there
    key = np.concatenate([machine * n + start_i, machine * n + end_i])
    delta = np.concatenate([gpus, -gpus])
    keys, inverse = np.unique(key, return_inverse=True)
    change = np.bincount(inverse, weights=delta)
    m = keys // n
    at = keys % n
    running = np.cumsum(change)
    group_first = np.r_[True, m[1:] != m[:-1]]
    before_group = np.maximum.accumulate(np.where(group_first, np.arange(len(m)), 0))
    offset = running[before_group] - change[before_group]
    after = np.round(running - offset, 6)
    before = np.round(after - change, 6)

    free_after = np.clip(caps[m] - after, 0.0, None)
    free_before = np.clip(caps[m] - before, 0.0, None)
    free = caps.sum() + np.cumsum(np.bincount(at, weights=free_after - free_before, minlength=n))
    went_busy = (before <= EPS) & (after > EPS)
    went_idle = (before > EPS) & (after <= EPS)
    idle = m_count + np.cumsum(np.bincount(at, weights=went_idle.astype(float) - went_busy.astype(float), minlength=n))

    largest = int(caps.max())
    if largest > MAX_MACHINE_GPUS or largest < 1:
        return free, idle, None
    width = largest + 1
    whole_before = np.floor(free_before + EPS).astype(np.int64)
    whole_after = np.floor(free_after + EPS).astype(np.int64)
    # machines with v whole GPUs free, one row per v over the intervals: changes, then a
    # running sum along each row
    hist = np.zeros((width, n), dtype=np.int32)
    np.add.at(hist, (whole_before, at), -1)
    np.add.at(hist, (whole_after, at), 1)
    np.cumsum(hist, axis=1, dtype=np.int32, out=hist)
    hist += np.bincount(np.floor(caps + EPS).astype(np.int64), minlength=width).astype(np.int32)[:, None]
    # machines with at least v free: the rows v..largest summed, from the top down, in place
    for v in range(largest - 1, 0, -1):
        hist[v] += hist[v + 1]
    return free, idle, hist[1:]


@dataclass
class Steps:
    """A step function on the grid's n intervals, kept sparse: `values[k]` holds on the
    intervals at[k] <= i < at[k+1] (at[0] == 0; the last value runs to interval n - 1).
    Memory is its changes, not the grid: a thousand VCs over a year's 2M events would take
    16 GB as dense arrays."""

    at: np.ndarray  # int64, strictly increasing, at[0] == 0
    values: np.ndarray
    n: int

    def __getitem__(self, i: np.ndarray) -> np.ndarray:
        """The values on intervals `i` (an index array), as a dense array's [i] would give."""
        return self.values[np.searchsorted(self.at, i, side="right") - 1]

    def dense(self) -> np.ndarray:
        """The value on every interval."""
        return np.repeat(self.values, np.diff(np.append(self.at, self.n)))

    def weights(self, per_interval: np.ndarray) -> np.ndarray:
        """Per value, the sum of `per_interval` (e.g. durations) over the intervals it holds on."""
        return np.add.reduceat(per_interval, self.at)


def vc_usage(T: np.ndarray, holdings: Holdings, vc: int, grid: tuple[np.ndarray, np.ndarray] | None = None) -> Steps:
    """GPUs the VC's attempts hold, per interval, as sparse steps. The same numbers as _step
    over the dense grid: the same sums in the same order at each change (the grid adds 0.0
    elsewhere, which changes nothing). `grid`: grid_index(T, holdings), where computed already."""
    n = len(T)
    rows = holdings.vc == vc
    if grid is None:
        grid = grid_index(T, holdings)
    start_i, end_i = grid[0][rows], grid[1][rows]
    gpus = holdings.gpus[rows]
    at = _distinct(np.concatenate([[0], start_i, end_i]))
    at = at[at < n]
    # rows changing at the grid's end (index n) are no part of any interval, as in _step
    s_in, e_in = start_i < n, end_i < n
    delta = np.bincount(np.searchsorted(at, start_i[s_in]), weights=gpus[s_in], minlength=len(at)) - np.bincount(
        np.searchsorted(at, end_i[e_in]), weights=gpus[e_in], minlength=len(at)
    )
    return Steps(at.astype(np.int64), np.round(np.cumsum(delta), 6), n)


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float | None:
    """The q-quantile of a step function's values, weighted by how long each lasted."""
    keep = weights > 0
    if not keep.any():
        return None
    order = np.argsort(values[keep], kind="stable")
    v, w = values[keep][order], weights[keep][order]
    cum = np.cumsum(w)
    return float(v[np.searchsorted(cum, q * cum[-1] - 1e-9)])


def integral_at(T: np.ndarray, values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The integral of the step function `values` from T[0] to each x (x >= T[0])."""
    cum = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(T))])
    i = np.maximum(np.searchsorted(T, x, side="right") - 1, 0)
    return cum[i] + (x - T[i]) * values[i]
