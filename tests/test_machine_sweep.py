"""The replay's machine sweep (replay/timeline.py) against the plain definition (issue #15, part 5).

The sweep never builds a per-machine grid: each machine's held GPUs change only at its own
starts and ends, and the per-interval histogram of free GPUs per machine (kept one row per
count) answers `top_free(k)`. Here each interval's state is computed plainly, machine by
machine, from the holdings that cover it, on random clusters: machines of several sizes,
fractional shares, holdings that overflow a machine, start and end on the same event,
holdings without a machine.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucluster_analysis.replay.timeline import EPS, Holdings, build_timeline, event_grid


@pytest.mark.parametrize("seed", range(4))
def test_free_gpus_idle_machines_and_top_free_are_the_plain_ones(seed: int) -> None:
    rng = np.random.default_rng(seed)
    caps = rng.choice([2.0, 4.0, 8.0], size=int(rng.integers(2, 6)))
    rows = int(rng.integers(30, 120))
    start = rng.integers(0, 200, rows).astype(float)
    end = start + rng.choice([1, 5, 20, 60], rows)
    machine = rng.integers(-1, len(caps), rows)  # -1: placement unknown
    gpus = rng.choice([0.5, 1.0, 2.0, 3.0, 4.0, 8.0, 9.0], rows)
    holdings = Holdings(start=start, end=end, machine=machine, vc=np.zeros(rows, dtype=np.int64), gpus=gpus)
    T = event_grid(holdings, np.zeros(0))
    tl = build_timeline(T, holdings, caps, None)
    largest = int(caps.max())
    for i, t in enumerate(T):
        on = (start <= t) & (end > t)
        held = np.array([gpus[on & (machine == m)].sum() for m in range(len(caps))])
        free = np.clip(caps - held, 0.0, None)
        unplaced = gpus[on & (machine < 0)].sum()
        assert tl.free[i] == pytest.approx(max(free.sum() - unplaced, 0.0), abs=1e-6)
        assert tl.idle_machines[i] == int((held <= EPS).sum())
        whole = np.sort(np.floor(free + EPS))[::-1]
        for k in range(1, len(caps) + 1):
            assert tl.top_free(k)[i] == whole[:k].sum()
    # the histogram has a row per count 1..largest machine, one column per interval
    assert tl._at_least is not None and tl._at_least.shape == (largest, len(T))
    assert math.isclose(tl.capacity, caps.sum())
