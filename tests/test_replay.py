"""The replay of queueing: every second of waiting split into its cause, worked out by hand.

The cluster (times in minutes after 2024-01-01 00:00 UTC):
  m1: 8 GPUs, m2: 8 GPUs (machine list); m3: 4 GPUs seen only in GPU samples (never placed).
  VC a has a quota of 8 GPUs (quotas file); VC b has none.
Background:
  B1  a, 8 GPUs on m1, [0, 60)
  B2  b, 6 GPUs on m2, [0, 120)
Jobs:
  J1  a, 4 GPUs, submit 10; attempt 1 on m1 [70, 100) failed, attempt 2 on m1 [110, 115)
  J2  b, 16 GPUs (m1 + m2), submit 0, start 120 (B2 ends at the same instant), end 200
  J3  b, 13 GPUs (m1 8 + m2 5), submit 60 (B1 ends at the same instant), start 200 (J2 ends
      then), end 260: the store's last timestamp
  J4  a, 2 GPUs on m2 [30, 40), no submit time     -> no split (m2's 2 free GPUs are taken then)
  J5  a, an attempt with a start and no GPU count  -> no split
  J6  a, 2 GPUs asked, killed while pending: its only attempt has no start and ends at 50
  J7  b, 4 GPUs asked, still pending at the end, submit 190 -> waits until 260
  J8  b, 2 GPUs on m2 (GPUs 6, 7) from 210, killed, its end lost (as Philly logs do)
  J9  b, 2 GPUs on m2 (GPUs 6, 7) [230, 250), submit 225: so J8's GPUs were free by 230

Free GPUs (m1, m2, m3) and VC a's holding, per interval:
  [0,60)    0 2 4 = 6    a 8   (0 0 4 = 4 in [30,40), J4; VC a 10)
  [60,70)   8 2 4 = 14   a 0
  [70,100)  4 2 4 = 10   a 4   (J1)
  [100,110) 8 2 4 = 14   a 0
  [110,115) 4 2 4 = 10   a 4   (J1 again)
  [115,120) 8 2 4 = 14   a 0
  [120,200) 0 0 4 = 4          (J2)
  [200,260) 0 3 4 = 7          (J3; m2 1 free in [210,250): J8 then J9)
Default locality: m = 8, so 13 and 16 GPUs may use 2 machines, 4 and 2 GPUs one.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import InputError
from gpucluster_analysis.replay import load_quotas, parse_locality, replay_store

T0 = datetime(2024, 1, 1)
MIN = 60.0


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S")


def _job(job_id: str, vc: str, status: str, submit: float | None) -> str:
    submit_sql = "NULL" if submit is None else f"'{at(submit)}'"
    return f"('philly', '{job_id}', 'u', '{vc}', '{status}', NULL, {submit_sql}, 1)"


def _attempt(job_id: str, no: int, start: float | None, end: float | None, num_gpus: str = "NULL") -> str:
    s = "NULL" if start is None else f"'{at(start)}'"
    e = "NULL" if end is None else f"'{at(end)}'"
    return f"('philly', '{job_id}', {no}, {no}, {s}, {e}, 1, {num_gpus})"


def _alloc(job_id: str, no: int, machine: str, gpus: int) -> list[str]:
    return [f"('philly', '{job_id}', {no}, '{machine}', {g}, 1)" for g in range(gpus)]


def build_store(path: Path) -> Path:
    jobs = [
        _job("B1", "a", "passed", 0),
        _job("B2", "b", "passed", 0),
        _job("J1", "a", "passed", 10),
        _job("J2", "b", "passed", 0),
        _job("J3", "b", "passed", 60),
        _job("J4", "a", "passed", None),
        _job("J5", "a", "passed", 5),
        _job("J6", "a", "killed", 20),
        _job("J7", "b", "pending", 190),
        _job("J8", "b", "killed", 205),
        _job("J9", "b", "passed", 225),
    ]
    attempts = [
        _attempt("B1", 0, 0, 60),
        _attempt("B2", 0, 0, 120),
        _attempt("J1", 0, 70, 100),
        _attempt("J1", 1, 110, 115),
        _attempt("J2", 0, 120, 200),
        _attempt("J3", 0, 200, 260),
        _attempt("J4", 0, 30, 40),
        _attempt("J5", 0, 10, 20),
        _attempt("J8", 0, 210, None),
        _attempt("J9", 0, 230, 250),
    ]
    allocs = (
        _alloc("B1", 0, "m1", 8)
        + _alloc("B2", 0, "m2", 6)
        + _alloc("J1", 0, "m1", 4)
        + _alloc("J1", 1, "m1", 4)
        + _alloc("J2", 0, "m1", 8)
        + _alloc("J2", 0, "m2", 8)
        + _alloc("J3", 0, "m1", 8)
        + _alloc("J3", 0, "m2", 5)
        + _alloc("J4", 0, "m2", 2)
        + [f"('philly', '{j}', 0, 'm2', {g}, 1)" for j in ("J8", "J9") for g in (6, 7)]
    )
    db = path / "replay.duckdb"
    with open_store(db) as con:
        con.execute(
            "INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id) VALUES "
            + ", ".join(jobs)
        )
        con.execute(
            "INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id, num_gpus)"
            " VALUES " + ", ".join(attempts)
        )
        # J6 asked for 2 GPUs and J7 for 4 but never ran: the request is all the store knows
        con.execute(
            "INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id, num_gpus)"
            f" VALUES ('philly', 'J6', 0, 0, NULL, '{at(50)}', 1, 2), ('philly', 'J7', 0, 0, NULL, NULL, 1, 4)"
        )
        con.execute("INSERT INTO allocations VALUES " + ", ".join(allocs))
        con.execute(
            "INSERT INTO machines (machine_id, listed_gpus, gpu_memory_gb, file_id) VALUES ('m1', 8, NULL, "
            "1), ('m2', 8, NULL, 1)"
        )
        con.execute("INSERT INTO gpu_samples VALUES " + ", ".join(f"('{at(5)}', 'm3', {g}, 10, 1)" for g in range(4)))
        con.execute(
            "INSERT INTO pending_reasons VALUES "
            f"('philly', 'J3', '{at(65)}', 'Resources', 1, 1), ('philly', 'J3', '{at(150)}', 'Resources', 1, 2),"
            f"('philly', 'J1', '{at(30)}', 'AssocGrpGRES', 1, 3), ('philly', 'J1', '{at(80)}', 'Priority', 1, 4),"
            f"('philly', 'nope', '{at(80)}', 'Priority', 1, 5)"
        )
    return db


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return build_store(tmp_path)


@pytest.fixture
def quotas_file(tmp_path: Path) -> Path:
    p = tmp_path / "quotas.toml"
    p.write_text('[quotas]\n"a" = 8\n')
    return p


def run(db: Path, quotas: Path | None = None, locality: str = "default"):
    with open_store(db, read_only=True) as con:
        return replay_store(con, load_quotas(quotas) if quotas else None, parse_locality(locality))


def waits(replay) -> dict[str, dict]:
    return {r["job_id"]: r for r in replay.jobs.to_dicts()}


def minutes(row: dict, *cols: str) -> tuple:
    return tuple(None if row[c] is None else row[c] / MIN for c in cols)


CAUSE_COLS = ("wait_fair_share_s", "wait_capacity_s", "wait_fragmentation_s", "wait_other_s")


def test_each_cause_and_changes_within_one_wait(store: Path, quotas_file: Path) -> None:
    w = waits(run(store, quotas_file))
    # J1 [10,70): VC a holds 8 until 60 (8 + 4 > 8): fair share; then m1 has 8 free: other
    assert minutes(w["J1"], *CAUSE_COLS) == (50, 0, 0, 10)
    # J2 [0,120): never 16 free GPUs in total (6, 14, 10, 14, 10, 14): capacity throughout; VC b has no quota
    assert minutes(w["J2"], *CAUSE_COLS) == (0, 120, 0, 0)
    # J3 [60,200): 14 free but the best 2 machines have 8 + 4 = 12 < 13 in [60,70), [100,110), [115,120):
    # fragmentation 10 + 10 + 5; fewer than 13 free in [70,100), [110,115), [120,200): capacity 30 + 5 + 80
    assert minutes(w["J3"], *CAUSE_COLS) == (0, 115, 25, 0)
    # J6 never started, cancelled at 50: [20,50) with VC a at 8: fair share; no queueing delay
    assert minutes(w["J6"], *CAUSE_COLS) == (30, 0, 0, 0)
    assert w["J6"]["started"] is False and w["J6"]["wait_retry_s"] is None
    # J7 pending until the store's last timestamp (260): [190,200) 4 free on m3, then m3's 4: other
    assert minutes(w["J7"], *CAUSE_COLS) == (0, 0, 0, 70)
    assert w["J7"]["wait_s"] == 70 * MIN


def test_missing_times_and_sizes_get_no_split(store: Path, quotas_file: Path) -> None:
    w = waits(run(store, quotas_file))
    for job in ("J4", "J5"):
        assert all(w[job][c] is None for c in CAUSE_COLS), job


def test_retry_waits_are_kept_apart(store: Path, quotas_file: Path) -> None:
    w = waits(run(store, quotas_file))
    assert w["J1"]["wait_retry_s"] == 10 * MIN  # attempt 1 ends 100, attempt 2 starts 110
    assert w["J2"]["wait_retry_s"] == 0
    # the split covers the first wait only: 60 minutes, not 70
    assert sum(w["J1"][c] for c in CAUSE_COLS) == 60 * MIN


def test_ties_at_one_instant(store: Path, quotas_file: Path) -> None:
    # J3 was submitted at 60, the instant B1 released m1: its first second already sees m1 free
    # (14 free, fragmentation), not the 6 free before; J2 started at 120 when B2 ended: no
    # second of its wait sees B2 gone. Both are in the totals above; here the first interval alone.
    rep = run(store, quotas_file)
    j3 = waits(rep)["J3"]
    assert j3["wait_fragmentation_s"] == 25 * MIN and j3["wait_capacity_s"] == 115 * MIN


def test_machine_seen_only_in_samples_counts(store: Path, quotas_file: Path) -> None:
    c = run(store, quotas_file).clusters.row(0, named=True)
    assert (c["machines"], c["capacity_gpus"], c["largest_machine_gpus"], c["placement_known"]) == (3, 20, 8, True)
    # m3 is never used: a fully idle machine all the time
    assert c["time_with_idle_machine_pct"] == pytest.approx(100.0)
    # GPU-minutes held over [0, 260): B1 8x60 + B2 6x120 + J1 4x30 + 4x5 + J2 16x80 + J3 13x60 + J4 2x10
    # + J9 2x20 + J8 2x20: J8's lost end is taken as 230, when J9 got its GPUs, not the store's end (260)
    held = 8 * 60 + 6 * 120 + 4 * 30 + 4 * 5 + 16 * 80 + 13 * 60 + 2 * 10 + 2 * 20 + 2 * 20
    assert c["mean_held_gpus"] == pytest.approx(held / 260)
    assert c["mean_load_pct"] == pytest.approx(held / 260 / 20 * 100)


def test_locality_rule_options(store: Path, quotas_file: Path) -> None:
    relaxed = waits(run(store, quotas_file, "relaxed"))
    # any machines: J3's fragmentation minutes become other
    assert minutes(relaxed["J3"], *CAUSE_COLS) == (0, 115, 0, 25)
    one = waits(run(store, quotas_file, "1"))
    # at most 1 machine: J1 (4 GPUs) in [60,70) has m1's 8: other as before; J7 (4) fits m3 alone
    assert minutes(one["J1"], *CAUSE_COLS) == (50, 0, 0, 10)
    assert minutes(one["J7"], *CAUSE_COLS) == (0, 0, 0, 70)
    # J3 (13 GPUs) can never fit one 8-GPU machine: fragmentation wherever 13 are free in total
    assert minutes(one["J3"], *CAUSE_COLS) == (0, 115, 25, 0)


def test_inferred_quotas(store: Path) -> None:
    rep = run(store)
    q = {r["vc"]: r for r in rep.quotas.to_dicts()}
    # VC a holds 10 for 10 of the 260 minutes (J4), 8 for 50, 4 for 35, 0 for 165: the time-weighted p95 is 8
    assert q["a"]["quota_gpus"] == 8 and q["a"]["origin"] == "inferred"
    # VC b holds 6 for 120 minutes, 16 for 80, 13 for 20 and 15 for 40 (J3 + J8/J9): p95 16 (and its largest job is 16)
    assert q["b"]["quota_gpus"] == 16
    w = waits(rep)
    # now VC b is over 16 with J2 waiting (6 + 16) and J3 waiting (6 + 13, then 16 + 13)
    assert minutes(w["J2"], *CAUSE_COLS) == (120, 0, 0, 0)
    assert minutes(w["J3"], *CAUSE_COLS) == (140, 0, 0, 0)
    assert "95th percentile" in rep.quotas_origin


def test_quotas_file_names_its_vcs(store: Path, quotas_file: Path) -> None:
    q = {r["vc"]: r for r in run(store, quotas_file).quotas.to_dicts()}
    assert (q["a"]["quota_gpus"], q["a"]["origin"]) == (8, "file")
    assert (q["b"]["quota_gpus"], q["b"]["origin"]) == (None, "not in the file")


def test_what_ifs(store: Path, quotas_file: Path) -> None:
    w = waits(run(store, quotas_file))
    # J3 (13 > 8 GPUs): relaxed at once it could start at 60 (fragmentation): 140 minutes saved;
    # after 10 minutes (70) the next fragmentation instant is 100: 100 saved; after 60 (120): none until 200
    assert minutes(
        w["J3"], "saved_relaxed_after_0min_s", "saved_relaxed_after_10min_s", "saved_relaxed_after_60min_s"
    ) == (140, 100, 0)
    # J2 (16 GPUs) never had 16 free: nothing to save; J1 (4 GPUs) is not above 8
    assert w["J2"]["saved_relaxed_after_0min_s"] == 0
    assert w["J1"]["saved_relaxed_after_0min_s"] is None
    # with only VC a holding a quota there is no idle quota elsewhere to borrow
    assert w["J1"]["saved_borrowing_s"] == 0
    inferred = waits(run(store))
    # quotas a 8, b 16: at 10, J1 is 4 over; VC b holds 6 of 16 (10 idle), 4 GPUs free on m3: J1 could start at 10
    assert inferred["J1"]["saved_borrowing_s"] == 60 * MIN
    # J2 is 6 over; VC a's idle quota reaches 8 only while fewer than 16 GPUs are free: never
    assert inferred["J2"]["saved_borrowing_s"] == 0


def test_pending_reasons_against_the_replay(store: Path, quotas_file: Path) -> None:
    p = {(r["reason"], r["replay_cause"]): r["snapshots"] for r in run(store, quotas_file).pending.to_dicts()}
    assert p == {
        ("Resources", "fragmentation"): 1,
        ("Resources", "capacity"): 1,
        ("AssocGrpGRES", "fair_share"): 1,
        ("Priority", "after its start"): 1,
        ("Priority", "not in the store"): 1,
    }


def test_bad_locality_and_quotas_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="locality"):
        parse_locality("two")
    bad = tmp_path / "q.toml"
    bad.write_text('[quotas]\n"a" = -3\n')
    with pytest.raises(InputError, match=r"q\.toml: quota of VC 'a'"):
        load_quotas(bad)
    bad.write_text("[quota]\n")
    with pytest.raises(InputError, match="unknown table"):
        load_quotas(bad)
    bad.write_text("[quotas\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_quotas(bad)


def test_sources_without_placement_split_no_fragmentation(tmp_path: Path) -> None:
    """A Helios-like source: counts, no machines. Capacity is the node list's or the peak held."""
    db = tmp_path / "h.duckdb"
    with open_store(db) as con:
        con.execute(
            "INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id) VALUES "
            f"('helios', 'h1', 'u', 'v', 'passed', NULL, '{at(0)}', 1),"
            f"('helios', 'h2', 'u', 'v', 'passed', NULL, '{at(10)}', 1),"
            f"('helios', 'h3', 'u', 'w', 'passed', NULL, '{at(10)}', 1)"
        )
        con.execute(
            "INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id, "
            "num_gpus, num_nodes)"
            f" VALUES ('helios', 'h1', 0, 0, '{at(0)}', '{at(60)}', 1, 8, 1),"
            f" ('helios', 'h2', 0, 0, '{at(60)}', '{at(90)}', 1, 4, 1),"
            f" ('helios', 'h3', 0, 0, '{at(30)}', '{at(90)}', 1, 2, 1)"
        )
    rep = run(db)
    c = rep.clusters.row(0, named=True)
    # no machines: the cluster is as big as the most ever held at once: 8 + 2 in [30,60)
    assert (c["placement_known"], c["capacity_gpus"], c["capacity_basis"]) == (False, 10, "peak held")
    w = waits(rep)
    # h2 (4 GPUs, VC v quota inferred = 8) waits [10,60): v holds 8 (8 + 4 > 8): fair share; fragmentation unknown
    assert minutes(w["h2"], *CAUSE_COLS) == (50, 0, None, 0)
    # h3 (2 GPUs, VC w, quota 2) waits [10,30): 2 free of 10, w holds 0: no cause gca can see, other
    assert minutes(w["h3"], *CAUSE_COLS) == (0, 0, None, 20)


def test_a_period_bounds_what_the_replay_says_of_the_cluster(store: Path, quotas_file: Path) -> None:
    """replay_store(period=...) (gca report --since/--until): load and idle time over [60, 120)
    only, by hand from the holdings above; every job's split is unchanged."""
    with open_store(store, read_only=True) as con:
        whole = replay_store(con, load_quotas(quotas_file), parse_locality("default"))
        part = replay_store(
            con,
            load_quotas(quotas_file),
            parse_locality("default"),
            period=(T0 + timedelta(minutes=60), T0 + timedelta(minutes=120)),
        )
    c = part.clusters.row(0, named=True)
    # GPU-minutes held in [60, 120): B2 6x60 + J1 4x30 [70,100) + 4x5 [110,115)
    held = 6 * 60 + 4 * 30 + 4 * 5
    assert c["mean_held_gpus"] == pytest.approx(held / 60)
    assert c["mean_load_pct"] == pytest.approx(held / 60 / 20 * 100)
    assert c["time_with_idle_machine_pct"] == pytest.approx(100.0)  # m3 is never used
    assert part.jobs.equals(whole.jobs)
    bins = part.timeline.get_column("bin_start")
    assert bins.min() >= T0 + timedelta(minutes=60) and bins.max() < T0 + timedelta(minutes=120)
