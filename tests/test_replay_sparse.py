"""The replay computes a class's causes only on the intervals its waits cover, and a user's
holdings under a cap from one sweep of them, and keeps each VC's usage as sparse steps
(issue #15, part 5): the same split, pending labels, what-ifs and quotas as the definition,
where each class was computed on every interval from its first wait to its last, each cap
re-swept the user's holdings and each VC's usage was a dense array over every interval.

A random Slurm store: users capped by sacctmgr (association and QOS), quotas, jobs waiting
now and then over two weeks on three nodes, squeue snapshots of waiting jobs.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from store_helpers import ingest, write

import gpucluster_analysis.replay as replay
from gpucluster_analysis.analyze.prepare import prepare
from gpucluster_analysis.db import open_store
from gpucluster_analysis.replay import Quotas, replay_store, split
from gpucluster_analysis.replay.caps import UserCaps
from gpucluster_analysis.replay.timeline import Holdings, Steps, _step, vc_usage, weighted_quantile
from tests.marks import keep_by_default

START = datetime(2026, 3, 1)
USERS = ["ann", "bob", "cy", "dee", "eli", "fay"]


def _clock(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def _random_site(d: Path, seed: int) -> list[Path]:
    rng = random.Random(seed)
    sacct = ["JobID|User|Account|Partition|QOS|State|Submit|Eligible|Start|End|AllocTRES|NodeList|ExitCode"]
    squeue = []
    for k in range(400):
        submit = START + timedelta(minutes=rng.randrange(0, 14 * 24 * 60))
        start = submit + timedelta(minutes=rng.choice([0, 0, 5, 30, 90, 400]))
        end = start + timedelta(minutes=rng.randrange(1, 300))
        gpus = rng.choice([1, 1, 2, 4, 8])
        user = rng.choice(USERS)
        sacct.append(
            f"{100 + k}|{user}|{rng.choice(['ml', 'vision'])}|gpu|{rng.choice(['gpu', 'normal'])}|COMPLETED|"
            f"{_clock(submit)}|{_clock(submit)}|{_clock(start)}|{_clock(end)}|cpu=8,gres/gpu={gpus},node=1|"
            f"n{rng.randrange(1, 4)}|0:0"
        )
        if start > submit and rng.random() < 0.5:
            seen = submit + (start - submit) / 2
            squeue.append(f"# {seen.strftime('%Y-%m-%dT%H:%M:%SZ')}\n{100 + k}|{rng.choice(['Resources', 'Priority'])}")
    nodes = "".join(f"NodeName=n{i} Gres=gpu:8 CfgTRES=cpu=64,gres/gpu=8\n" for i in range(1, 4))
    assoc = (
        "Account|User|GrpTRES\nml||gres/gpu=12\nml|ann|gres/gpu=2\nml|bob|gres/gpu=4\n"
        "vision||gres/gpu=10\nvision|cy|gres/gpu=3\n"
    )
    qos = "Name|MaxTRESPU\nnormal|\ngpu|gres/gpu=5\n"
    return [
        write(d / "sacct.txt", "\n".join(sacct) + "\n"),
        write(d / "nodes.txt", nodes),
        write(d / "assoc.txt", assoc),
        write(d / "qos.txt", qos),
        write(d / "squeue.log", "\n".join(squeue) + "\n"),
    ]


def _every_interval_between(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """The definition: every interval from the class's first wait to its last."""
    return np.arange(first.min(), last.max() + 1) if first.size else np.zeros(0, dtype=np.int64)


def _old_over(caps: UserCaps, part: np.ndarray, gpus: float, groups: tuple[int, ...]) -> np.ndarray | None:
    """The definition of a cap's hold, by re-sweeping the group's holdings over part's range."""
    lo, hi = int(part.min()), int(part.max())
    n = hi + 1 - lo
    out = None
    for group in groups:
        if group < 0:
            continue
        rows = caps.members[group]
        s = np.clip(caps.start_i[rows], lo, hi + 1) - lo
        e = np.clip(caps.end_i[rows], lo, hi + 1) - lo
        delta = np.bincount(s, weights=caps.gpus[rows], minlength=n + 1) - np.bincount(
            e, weights=caps.gpus[rows], minlength=n + 1
        )
        over = (np.round(np.cumsum(delta[:n]), 6) + gpus > caps.caps[group] + 1e-6)[part - lo]
        out = over if out is None else out | over
    return out


@pytest.mark.parametrize("seed", keep_by_default([1, 2], {1}))
def test_sparse_replay_is_the_definition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    db = tmp_path / "site.duckdb"
    reports = ingest(db, *_random_site(tmp_path, seed), zone="UTC")
    assert all(r.status == "loaded" for r in reports), [r.message for r in reports]
    calls = []
    over = UserCaps.over

    def checked_over(self: UserCaps, part: np.ndarray, gpus: float, groups: tuple[int, ...]) -> np.ndarray | None:
        got = over(self, part, gpus, groups)
        want = _old_over(self, part, gpus, groups) if part.size else None
        if want is not None:
            calls.append(part.size)
            assert got is not None and np.array_equal(got, want)
        return got

    quotas = [None, Quotas({"ml": 6, "vision": 9}, tmp_path / "q.toml")]
    with open_store(db, read_only=True) as con:
        prepare(con)
        with monkeypatch.context() as m:
            m.setattr(UserCaps, "over", checked_over)
            sparse = [replay_store(con, q) for q in quotas]
        with monkeypatch.context() as m:
            m.setattr(split, "covered_intervals", _every_interval_between)
            m.setattr(replay, "vc_usage", _dense_usage)
            dense = [replay_store(con, q) for q in quotas]
    assert calls, "no cap was ever consulted"
    for got, want in zip(sparse, dense, strict=True):
        for table in ("jobs", "clusters", "quotas", "timeline", "pending"):
            assert getattr(got, table).equals(getattr(want, table)), table
    waits = sparse[0].jobs
    assert waits.get_column("wait_user_limit_s").sum() > 0 and waits.get_column("wait_fair_share_s").sum() > 0
    assert sparse[0].pending.height > 2


def _dense_usage(T: np.ndarray, holdings: Holdings, vc: int, _grid: object = None) -> Steps:
    """The definition: the VC's GPUs held on every interval of the grid, one step each (its own
    search of the grid, whatever the replay searched already)."""
    rows = holdings.vc == vc
    values = _step(
        len(T), np.searchsorted(T, holdings.start[rows]), np.searchsorted(T, holdings.end[rows]), holdings.gpus[rows]
    )
    return Steps(np.arange(len(T), dtype=np.int64), values, len(T))


def test_sparse_usage_is_the_dense_array() -> None:
    """vc_usage's steps against the dense array on random holdings (fractional GPUs, shared
    ends, holdings to the grid's last time): the values on any intervals, the whole array,
    the durations each value holds and the quantile of the values weighted by them."""
    rng = np.random.default_rng(7)
    for _ in range(100):
        rows = int(rng.integers(0, 30))
        start = rng.integers(1, 40, rows).astype(float)
        holdings = Holdings(
            start=start,
            end=start + rng.integers(1, 15, rows),
            machine=np.zeros(rows, dtype=np.int64),
            vc=rng.integers(0, 3, rows),
            gpus=rng.choice([0.1, 0.5, 1.0, 2.0, 8.0], rows),
        )
        T = np.unique(np.concatenate([[0.0], holdings.start, holdings.end]))
        durations = np.append(np.diff(T), 0.0)
        for vc in range(3):
            dense = _dense_usage(T, holdings, vc).values
            steps = vc_usage(T, holdings, vc)
            assert steps.at[0] == 0 and len(steps.at) <= len(T)
            assert np.array_equal(steps.dense(), dense)
            i = rng.integers(0, len(T), 20)
            assert np.array_equal(steps[i], dense[i])
            assert steps.weights(durations).sum() == durations.sum()
            assert weighted_quantile(steps.values, steps.weights(durations), 0.95) == weighted_quantile(
                dense, durations, 0.95
            )


def test_covered_intervals_are_the_union_of_the_waits() -> None:
    rng = np.random.default_rng(4)
    for _ in range(200):
        first = rng.integers(0, 60, rng.integers(0, 12))
        last = first + rng.integers(0, 8, first.size)
        want = sorted({i for a, b in zip(first, last, strict=True) for i in range(a, b + 1)})
        assert split.covered_intervals(first, last).tolist() == want
