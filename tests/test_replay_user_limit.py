"""Per-user caps in the wait split (issue #15, part 2), on a Slurm store worked out by hand.

Two machines n1 and n2 of 8 GPUs each (scontrol). sacctmgr: account ml has a quota of 10
GPUs and dave a cap of 2 in it; account vision has 16; QOS gpu caps each user at 4
(MaxTRESPU), QOS normal at nothing. Jobs (2026-11-25, UTC; minutes after 10:00):

    J1 alice ml     gpu     2 GPUs  n1  runs [0, 40)
    J3 bob   ml     normal  6 GPUs  n1  runs [20, 60)
    J5 dave  ml     normal  1 GPU   n2  runs [0, 50)
    J4 carol ml     normal  2 GPUs  n1  eligible 20, runs [40, 50)
    J6 dave  ml     normal  2 GPUs  n2  eligible 0, runs [50, 70)
    J2 alice vision gpu     3 GPUs  n2  eligible 0, runs [60, 90)

VC ml holds J1 + J5 = 3 on [0, 20), J1 + J3 + J5 = 9 on [20, 40), J3 + J4 + J5 = 9 on
[40, 50), J3 + J6 = 8 on [50, 60).

* J2 waits [0, 60). Alice holds J1's 2 GPUs under QOS gpu (another account: the QOS cap spans
  accounts) on [0, 40): 2 + 3 = 5 > 4, user_limit, 2400 s. On [40, 60) she holds none; vision
  holds nothing of its 16; n2 has 7 (then 6) free: other, 1200 s.
* J4 waits [20, 40): no cap of carol's; ml holds 9, 9 + 2 = 11 > 10: fair_share, 1200 s.
* J6 waits [0, 50): dave holds J5's 1 GPU in ml, 1 + 2 = 3 > his cap 2 on all of it:
  user_limit, 3000 s, also on [20, 40) where ml is over its quota too (user_limit is checked
  first).
* J1, J3, J5 never waited: 0 s each.

Without the sacctmgr files (quotas from a file, ml 10 and vision 16): no cap, so J2's 2400 s
and J6's are what else holds: J2 other 3600 s; J6 other on [0, 20) (ml 3 + 2 <= 10, n2 has 7
free), fair_share on [20, 50) (ml holds 9, 9 + 2 > 10): other 1200 s, fair_share 1800 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from store_helpers import ingest, write

from gpucluster_analysis.analyze.prepare import format_for_csv, jobs_table, prepare
from gpucluster_analysis.db import open_store
from gpucluster_analysis.replay import Quotas, replay_store

SACCT = """JobID|User|Account|Partition|QOS|State|Submit|Eligible|Start|End|AllocTRES|NodeList|ExitCode
1|alice|ml|gpu|gpu|COMPLETED|2026-11-25T10:00:00|2026-11-25T10:00:00|2026-11-25T10:00:00|2026-11-25T10:40:00|cpu=8,gres/gpu=2,node=1|n1|0:0
3|bob|ml|gpu|normal|COMPLETED|2026-11-25T10:20:00|2026-11-25T10:20:00|2026-11-25T10:20:00|2026-11-25T11:00:00|cpu=8,gres/gpu=6,node=1|n1|0:0
5|dave|ml|gpu|normal|COMPLETED|2026-11-25T10:00:00|2026-11-25T10:00:00|2026-11-25T10:00:00|2026-11-25T10:50:00|cpu=8,gres/gpu=1,node=1|n2|0:0
4|carol|ml|gpu|normal|COMPLETED|2026-11-25T10:20:00|2026-11-25T10:20:00|2026-11-25T10:40:00|2026-11-25T10:50:00|cpu=8,gres/gpu=2,node=1|n1|0:0
6|dave|ml|gpu|normal|COMPLETED|2026-11-25T10:00:00|2026-11-25T10:00:00|2026-11-25T10:50:00|2026-11-25T11:10:00|cpu=8,gres/gpu=2,node=1|n2|0:0
2|alice|vision|gpu|gpu|COMPLETED|2026-11-25T10:00:00|2026-11-25T10:00:00|2026-11-25T11:00:00|2026-11-25T11:30:00|cpu=8,gres/gpu=3,node=1|n2|0:0
"""
NODES = "NodeName=n1 Gres=gpu:8 CfgTRES=cpu=64,gres/gpu=8\nNodeName=n2 Gres=gpu:8 CfgTRES=cpu=64,gres/gpu=8\n"
ASSOC = "Account|User|GrpTRES|QOS\nml||gres/gpu=10|normal,gpu\nml|dave|gres/gpu=2|normal\nvision||gres/gpu=16|gpu\n"
QOS = "Name|Priority|MaxTRESPU\nnormal|0|\ngpu|500|gres/gpu=4\n"
SQUEUE = (
    "# 2026-11-25T10:10:00Z\n2|QOSMaxGRESPerUser\n6|AssocGrpGRES\n# "
    "2026-11-25T10:30:00Z\n4|AssocGrpGRES\n2|QOSMaxGRESPerUser\n"
)
CAUSES = ("wait_user_limit_s", "wait_fair_share_s", "wait_capacity_s", "wait_fragmentation_s", "wait_other_s")
BY_HAND = {  # (user_limit, fair_share, capacity, fragmentation, other), from the docstring
    "1": (0, 0, 0, 0, 0),
    "3": (0, 0, 0, 0, 0),
    "5": (0, 0, 0, 0, 0),
    "2": (2400, 0, 0, 0, 1200),
    "4": (0, 1200, 0, 0, 0),
    "6": (3000, 0, 0, 0, 0),
}
WITHOUT_CAPS = {**BY_HAND, "2": (0, 0, 0, 0, 3600), "6": (0, 1800, 0, 0, 1200)}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("caps")
    sacct, nodes = write(d / "sacct.txt", SACCT), write(d / "nodes.txt", NODES)
    with_caps, plain = d / "caps.duckdb", d / "plain.duckdb"
    ingest(
        with_caps,
        sacct,
        nodes,
        write(d / "assoc.txt", ASSOC),
        write(d / "qos.txt", QOS),
        write(d / "squeue.log", SQUEUE),
        zone="UTC",
    )
    ingest(plain, sacct, nodes, zone="UTC")
    return {"caps": with_caps, "plain": plain}


def split_of(db: Path, quotas: Quotas | None = None) -> dict[str, tuple[float, ...]]:
    with open_store(db, read_only=True) as con:
        prepare(con, quotas=quotas)
        table = format_for_csv(jobs_table(con)).to_dicts()
    return {r["job_id"]: tuple(r[c] for c in CAUSES) for r in table}


def test_user_caps_hold_jobs_as_worked_by_hand(stores: dict[str, Path]) -> None:
    got = split_of(stores["caps"])
    assert got == {k: tuple(float(x) for x in v) for k, v in BY_HAND.items()}
    with open_store(stores["caps"], read_only=True) as con:
        prepare(con)
        delays = {r["job_id"]: r["queue_delay_s"] for r in jobs_table(con).to_dicts()}
    assert all(sum(got[j]) == delays[j] for j in got)  # the five causes sum to the queueing delay


def test_sacctmgr_quotas_split_as_a_file_with_the_same_numbers(stores: dict[str, Path], tmp_path: Path) -> None:
    same = Quotas({"ml": 10, "vision": 16}, tmp_path / "quotas.toml")
    assert split_of(stores["caps"]) == split_of(stores["caps"], same)
    assert split_of(stores["plain"], same) == {k: tuple(float(x) for x in v) for k, v in WITHOUT_CAPS.items()}


def test_a_quotas_file_wins_and_every_quota_names_its_origin(stores: dict[str, Path], tmp_path: Path) -> None:
    with open_store(stores["caps"], read_only=True) as con:
        store = replay_store(con)
        filed = replay_store(con, Quotas({"ml": 1}, tmp_path / "quotas.toml"))
    q = {(r["kind"], r["vc"], r["user"], r["qos"]): (r["quota_gpus"], r["origin"]) for r in store.quotas.to_dicts()}
    assert q == {
        ("vc", "ml", None, None): (10.0, "sacctmgr"),
        ("vc", "vision", None, None): (16.0, "sacctmgr"),
        ("user", "ml", "dave", None): (2.0, "sacctmgr"),
        ("qos_user", None, None, "gpu"): (4.0, "sacctmgr"),
    }
    assert (
        store.quotas_origin.startswith("sacctmgr: the accounts' GrpTRES gres/gpu (")
        and "assoc.txt" in store.quotas_origin
    )
    q = {(r["kind"], r["vc"]): (r["quota_gpus"], r["origin"]) for r in filed.quotas.to_dicts() if r["kind"] == "vc"}
    assert q == {("vc", "ml"): (1.0, "file"), ("vc", "vision"): (None, "not in the file")}
    # the file's ml quota of 1 holds J4 on all of its wait; the caps still come first
    jobs = {r["job_id"]: r for r in filed.jobs.to_dicts()}
    assert (jobs["4"]["wait_fair_share_s"], jobs["6"]["wait_user_limit_s"]) == (1200.0, 3000.0)


def test_without_caps_nothing_is_user_limit(stores: dict[str, Path]) -> None:
    with open_store(stores["plain"], read_only=True) as con:
        rep = replay_store(con)
    assert set(rep.jobs.get_column("wait_user_limit_s").to_list()) == {0.0}
    assert not any(rep.jobs.get_column("source_has_user_caps").to_list())
    assert set(rep.quotas.get_column("origin").to_list()) == {"inferred"}


def test_a_later_snapshot_of_a_limit_wins(stores: dict[str, Path], tmp_path: Path) -> None:
    """dave's cap raised to 3 in a later sacctmgr file: 1 + 2 = 3 is not over it, so J6 waits
    for ml's quota on [20, 40) and [40, 50) (9 + 2 > 10) and for nothing on [0, 20)."""
    db = tmp_path / "later.duckdb"
    d = tmp_path
    ingest(
        db,
        write(d / "sacct.txt", SACCT),
        write(d / "nodes.txt", NODES),
        write(d / "assoc.txt", ASSOC),
        write(d / "qos.txt", QOS),
        zone="UTC",
    )
    ingest(db, write(d / "assoc-later.txt", "Account|User|GrpTRES\nml|dave|gres/gpu=3\n"))
    assert split_of(db)["6"] == (0.0, 1800.0, 0.0, 0.0, 1200.0)


def test_pending_reasons_against_user_limit(stores: dict[str, Path]) -> None:
    with open_store(stores["caps"], read_only=True) as con:
        pending = replay_store(con).pending
    got = {(r["reason"], r["replay_cause"]): r["snapshots"] for r in pending.to_dicts()}
    assert got == {
        ("QOSMaxGRESPerUser", "user_limit"): 2,
        ("AssocGrpGRES", "user_limit"): 1,
        ("AssocGrpGRES", "fair_share"): 1,
    }


def test_report_shows_user_limit_and_quota_origins(stores: dict[str, Path], tmp_path: Path) -> None:
    import csv

    from gpucluster_analysis.report.build import build_report

    out = tmp_path / "report"
    build_report(stores["caps"], out)
    by_size = list(csv.DictReader((out / "wait_causes_by_size.csv").open()))
    assert [r["cause"] for r in by_size if r["size_bucket"] == "all"] == [
        "user_limit",
        "fair_share",
        "capacity",
        "fragmentation",
        "other",
    ]
    quotas = list(csv.DictReader((out / "quotas.csv").open()))
    assert {r["origin"] for r in quotas} == {"sacctmgr"}
    html = (out / "index.html").read_text()
    assert "user limit" in html and "Per-user GPU caps from sacctmgr" in html


def test_cap_groups_are_each_users_own_by_a_plain_lookup() -> None:
    """build_user_caps on many users, accounts and QOS, with missing names and a limit listed
    twice, against a dictionary lookup row by row: a job's group has the cap of its own
    (account, user) or (QOS, user) (the last of a limit listed twice), jobs share a group just
    when they share that key, and a group's holdings are those with its key."""
    import random

    import numpy as np
    import polars as pl

    from gpucluster_analysis.replay.caps import build_user_caps

    rng = random.Random(15)
    names = {
        "vc": ["ml", "cv", "nlp", None],
        "user_name": [f"u{i}" for i in range(12)] + [None],
        "qos": ["normal", "gpu", "big", None],
    }

    def rows(n: int) -> pl.DataFrame:
        return pl.DataFrame(
            {k: [rng.choice(v) for _ in range(n)] for k, v in names.items()}, schema={k: pl.String for k in names}
        )

    limits = [
        {
            "kind": "user",
            "vc": rng.choice(names["vc"]),
            "user_name": rng.choice(names["user_name"]),
            "qos": None,
            "gpus": float(rng.randint(1, 9)),
        }
        for _ in range(30)
    ]
    limits += [
        {"kind": "qos_user", "vc": None, "user_name": None, "qos": q, "gpus": float(rng.randint(1, 9))}
        for q in ("gpu", "big", "gpu", None)
    ]  # gpu twice: its last limit holds
    limits += [
        {"kind": "account", "vc": "ml", "user_name": None, "qos": None, "gpus": 4.0},
        {"kind": "qos_user", "vc": None, "user_name": None, "qos": "normal", "gpus": None},
    ]
    limit_frame = pl.DataFrame(
        limits,
        schema={"kind": pl.String, "vc": pl.String, "user_name": pl.String, "qos": pl.String, "gpus": pl.Float64},
    )
    jobs, held = rows(400), rows(300)
    holdings = held.with_columns(
        start_s=pl.Series([float(rng.randint(0, 99)) for _ in range(300)]),
        gpus=pl.Series([float(rng.randint(1, 4)) for _ in range(300)]),
    )
    holdings = holdings.with_columns(end_s=pl.col("start_s") + 5)
    caps = build_user_caps(np.arange(0.0, 200.0), limit_frame, holdings, jobs)

    by_assoc = {(r["vc"], r["user_name"]): r["gpus"] for r in limits if r["kind"] == "user"}
    by_qos = {r["qos"]: r["gpus"] for r in limits if r["kind"] == "qos_user" and r["gpus"] is not None}
    for kind, groups, cap_of, holder in (
        ("user", caps.job_assoc, by_assoc, "vc"),
        ("qos", caps.job_qos, by_qos, "qos"),
    ):
        key_of_group: dict[int, tuple[str | None, str | None]] = {}
        for job, group in zip(jobs.iter_rows(named=True), groups.tolist(), strict=True):
            key = (job[holder], job["user_name"])
            cap = cap_of.get(key if kind == "user" else job["qos"])
            if cap is None or job["user_name"] is None:
                assert group == -1, (kind, job)
                continue
            assert caps.caps[group] == cap, (kind, job)
            assert key_of_group.setdefault(group, key) == key  # one key per group ...
        assert len(set(key_of_group.values())) == len(key_of_group)  # ... and one group per key
        for group, key in key_of_group.items():
            mine = [i for i, h in enumerate(held.iter_rows(named=True)) if (h[holder], h["user_name"]) == key]
            assert caps.members[group].tolist() == mine
    assert len(caps.caps) == len(set(caps.job_assoc[caps.job_assoc >= 0]) | set(caps.job_qos[caps.job_qos >= 0]))


def test_wait_tables_sum_the_hand_worked_splits(stores: dict[str, Path], tmp_path: Path) -> None:
    """wait_causes_by_vc and wait_causes_by_size on the store worked out by hand: BY_HAND's
    seconds, weighted by each job's GPUs (the docstring's table), summed per VC and size."""
    import csv

    from gpucluster_analysis.report.build import build_report

    gpus = {"1": 2, "3": 6, "5": 1, "4": 2, "6": 2, "2": 3}
    vc = {"1": "ml", "3": "ml", "5": "ml", "4": "ml", "6": "ml", "2": "vision"}
    size = {j: "1" if g == 1 else "2-4" if g <= 4 else "5-8" for j, g in gpus.items()}
    causes = [c.removeprefix("wait_").removesuffix("_s") for c in CAUSES]
    out = tmp_path / "report"
    build_report(stores["caps"], out)
    for table, group_of in (("wait_causes_by_vc", vc), ("wait_causes_by_size", size)):
        column = "vc" if table.endswith("vc") else "size_bucket"
        got = {(r[column], r["cause"]): r for r in csv.DictReader((out / f"{table}.csv").open())}
        groups = sorted(set(group_of.values())) + ([] if column == "vc" else ["all"])
        for group in groups:
            members = [j for j in BY_HAND if group in (group_of[j], "all")]
            for i, cause in enumerate(causes):
                r = got[(group, cause)]
                assert int(r["jobs"]) == len(members)
                assert float(r["wait_hours"]) == pytest.approx(sum(BY_HAND[j][i] for j in members) / 3600)
                assert float(r["wait_gpu_hours"]) == pytest.approx(sum(BY_HAND[j][i] * gpus[j] for j in members) / 3600)
