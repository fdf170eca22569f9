"""Slow machines from training speed: relative speed against the same families elsewhere, by hand."""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest

from gpucluster_analysis.speed import variability as var


def _frames(rows: list[tuple[str, str, float, list[str], str]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """rows: (job_id, family, speed per GPU, machines, placement)."""
    attempts = pl.DataFrame(
        {
            "source": ["s"] * len(rows),
            "job_id": [r[0] for r in rows],
            "attempt_no": [0] * len(rows),
            "family": [r[1] for r in rows],
            "speed_gpu": [r[2] for r in rows],
            "placement": [r[4] for r in rows],
        }
    )
    placed = pl.DataFrame(
        [{"source": "s", "job_id": r[0], "attempt_no": 0, "machine_id": m, "gpu_index": 0} for r in rows for m in r[3]],
        schema={
            "source": pl.Utf8,
            "job_id": pl.Utf8,
            "attempt_no": pl.Int64,
            "machine_id": pl.Utf8,
            "gpu_index": pl.Int64,
        },
    )
    return attempts, placed


def cluster() -> list[tuple[str, str, float, list[str], str]]:
    """Families F1 (10 per GPU) and F2 (20), 6 jobs each on each of m1..m5; m6 runs both at 0.8x."""
    rows = []
    for fam, speed in (("F1", 10.0), ("F2", 20.0)):
        for m in range(1, 7):
            for k in range(6):
                rows.append((f"{fam}-m{m}-{k}", fam, speed * (0.8 if m == 6 else 1.0), [f"m{m}"], "packed"))
    return rows


def test_the_slow_machine_is_found_with_its_factor() -> None:
    attempts, placed = _frames(cluster())
    machines = {
        r["machine_id"]: r for r in var.relative_speed(var.attempt_ratios(attempts, placed), ["machine_id"]).to_dicts()
    }
    # m6: every attempt at 0.8x its family's median on the other machines (10 and 20)
    m6 = machines["m6"]
    assert (m6["relative_speed"], m6["ci_low"], m6["ci_high"], m6["flag"], m6["speed_class"]) == (
        pytest.approx(0.8),
        pytest.approx(0.8),
        pytest.approx(0.8),
        "slow",
        "C",
    )
    assert (m6["jobs"], m6["families"], m6["attempts"]) == (12, 2, 12)
    # m1..m5: their family's median elsewhere is still 10 (24 at 10, 6 at 8): 1.0, not flagged
    for m in ("m1", "m2", "m3", "m4", "m5"):
        assert (machines[m]["relative_speed"], machines[m]["flag"], machines[m]["speed_class"]) == (
            pytest.approx(1.0),
            "ok",
            "A",
        )


def test_too_few_jobs_is_never_flagged() -> None:
    rows = [r for r in cluster() if not (r[3] == ["m6"] and int(r[0][-1]) >= 2)]  # m6 keeps 2 jobs per family: 4
    attempts, placed = _frames(rows)
    m6 = (
        var.relative_speed(var.attempt_ratios(attempts, placed), ["machine_id"])
        .filter(pl.col("machine_id") == "m6")
        .row(0, named=True)
    )
    assert (m6["jobs"], m6["relative_speed"], m6["flag"], m6["speed_class"]) == (4, pytest.approx(0.8), "ok", None)


def test_a_gang_counts_for_every_machine_it_used() -> None:
    rows = cluster() + [("wide", "F1", 8.0, ["m1", "m6"], "spread")]
    attempts, placed = _frames(rows)
    ratios = var.attempt_ratios(attempts, placed).filter(pl.col("job_id") == "wide")
    # on m1 the reference leaves m1's six 10s out: 24 values at 10 and 6 at 8, median 10 -> 0.8;
    # on m6 it leaves m6's seven 8s out: 30 values at 10 -> 0.8
    assert sorted(ratios.get_column("ratio").to_list()) == [pytest.approx(0.8), pytest.approx(0.8)]


def test_median_interval_is_the_binomial_order_statistics() -> None:
    # n = 10: the 95% interval for a median is (x_(2), x_(9)) (standard tables)
    assert var.median_interval(np.arange(1.0, 11.0)) == (2.0, 9.0)
    # n = 20: (x_(6), x_(15))
    assert var.median_interval(np.arange(1.0, 21.0)) == (6.0, 15.0)
    # n = 5: no order statistics reach 95%: the whole range
    assert var.median_interval(np.arange(1.0, 6.0)) == (1.0, 5.0)


def test_median_without_matches_deleting_the_elements() -> None:
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(1, 25)
        values = np.sort(np.array([rng.random() for _ in range(n)]))
        removed = np.array(sorted(rng.sample(range(n), rng.randint(0, n))), dtype=np.int64)
        kept = np.delete(values, removed)
        got = var._median_without(values, removed)
        assert got == (pytest.approx(float(np.median(kept))) if len(kept) >= var.MIN_REFERENCE else None)


def test_locality_cost_per_family() -> None:
    rows = (
        [(f"p{k}", "F", 10.0, ["m1"], "packed") for k in range(3)]
        + [(f"s{k}", "F", 9.0, ["m1", "m2"], "spread") for k in range(2)]
        + [("q", "G", 5.0, ["m3"], "packed")]
    )  # G has no spread attempt: not compared
    attempts, _ = _frames(rows)
    cost = var.locality_cost(attempts)
    assert (cost.families, cost.median_ratio, cost.p_value) == (1, pytest.approx(0.9), None)
    assert cost.per_family.row(0, named=True) == {
        "family": "F",
        "packed": 3,
        "spread": 2,
        "packed_median": 10.0,
        "spread_median": 9.0,
        "ratio": pytest.approx(0.9),
    }


def _ratios_by_deletion(attempts: pl.DataFrame, placed: pl.DataFrame) -> dict[tuple[str, str], float]:
    """The definition, directly: each (attempt, machine) over the median of its family's
    speeds with every attempt that touched the machine deleted (np.median)."""
    speeds = {(r["job_id"]): (r["family"], r["speed_gpu"]) for r in attempts.iter_rows(named=True)}
    on_machine: dict[str, set[str]] = {}
    for r in placed.iter_rows(named=True):
        on_machine.setdefault(r["machine_id"], set()).add(r["job_id"])
    out = {}
    for machine, jobs in on_machine.items():
        for job in jobs:
            family, speed = speeds[job]
            rest = [s for j, (f, s) in speeds.items() if f == family and j not in jobs]
            if len(rest) >= var.MIN_REFERENCE:
                out[(job, machine)] = speed / float(np.median(rest))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorized_ratios_and_speeds_match_the_definition(seed: int) -> None:
    """Random families spread over random machines (gangs on several, ties in speed): the
    vectorized attempt_ratios and relative_speed equal the definition computed by deletion
    and a loop over groups with median_interval."""
    rng = random.Random(seed)
    rows = []
    for k in range(400):
        family = f"F{rng.randrange(12)}"
        machines = rng.sample([f"m{i}" for i in range(15)], rng.choice([1, 1, 1, 2, 4]))
        rows.append((f"j{k}", family, float(rng.choice([8, 9, 10, 10, 11, 12.5])), machines, "packed"))
    attempts, placed = _frames(rows)
    ratios = var.attempt_ratios(attempts, placed)
    expected = _ratios_by_deletion(attempts, placed)
    got = {(r["job_id"], r["machine_id"]): r["ratio"] for r in ratios.iter_rows(named=True)}
    assert got.keys() == expected.keys()
    assert all(got[k] == pytest.approx(expected[k], rel=1e-12) for k in expected)
    machines = var.relative_speed(ratios, ["machine_id"])
    assert machines.height == ratios.get_column("machine_id").n_unique()
    for r in machines.iter_rows(named=True):
        values = np.array([v for (job, m), v in got.items() if m == r["machine_id"]])
        low, high = var.median_interval(values)
        assert (r["attempts"], r["relative_speed"], r["ci_low"], r["ci_high"]) == pytest.approx(
            (len(values), float(np.median(values)), low, high), rel=1e-12
        )
        jobs = len({job for (job, m) in got if m == r["machine_id"]})
        assert r["jobs"] == jobs
        if jobs >= var.MIN_JOBS and high < var.SLOW_BELOW:
            assert r["flag"] == "slow"
        elif jobs >= var.MIN_JOBS and low > 1 / var.SLOW_BELOW:
            assert r["flag"] == "fast"
        else:
            assert r["flag"] == "ok"
    assert machines.get_column("relative_speed").is_sorted()
