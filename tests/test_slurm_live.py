"""gca's wait split against a real Slurm's pending reasons (issue #15, part 4).

`scripts/slurm_live.sh` starts Slurm 22.05 on one machine (five slurmd of 4 GPUs each, accounts
with GrpTRES=gres/gpu=N, a QOS with MaxTRESPerUser=gres/gpu=2), runs a few minutes of jobs and
dumps sacct, scontrol, sacctmgr and a squeue log. `tests/data/slurm/live/` keeps one run's
dumps (its README says how it was made); the default suite checks gca on them in seconds.
`test_live_slurm` runs the script itself: it needs root, Slurm installed and GCA_SLURM_LIVE=1
(about 4 minutes).

What Slurm said is read here from the raw files, without gca: each job's main pending reason
is the one most of its squeue snapshots give, its runs, GPUs and nodes come from sacct's
lines, the machines from scontrol's, the limits from sacctmgr's. gca's side is its store and
jobs.csv. A job's main cause is the cause that most of its waiting seconds went to; a tie
names none.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from store_helpers import ingest

from gpucluster_analysis.analyze.prepare import format_for_csv, jobs_table, prepare
from gpucluster_analysis.db import open_store

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "tests" / "data" / "slurm" / "live"
SCRIPT = REPO / "scripts" / "slurm_live.sh"
FILES = ("sacct.txt", "nodes.txt", "assoc.txt", "qos.txt", "squeue.log")
CAUSES = ("user_limit", "fair_share", "capacity", "fragmentation", "other")


# ------------------------------------------------------------ Slurm's word, read without gca


def squeue_reasons(log: Path) -> dict[str, Counter[str]]:
    """Per job, how many snapshots gave each reason. '12_[3-5%2]' is tasks 12_3..12_5;
    'None' (not yet looked at by the scheduler) is no reason."""
    seen: dict[str, Counter[str]] = {}
    for line in log.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        ids, reason = line.split("|", 1)
        if reason == "None":
            continue
        m = re.fullmatch(r"(\d+)_\[([\d,\-]+)(?:%\d+)?\]", ids)
        tasks = (
            [ids]
            if not m
            else [
                f"{m.group(1)}_{t}"
                for part in m.group(2).split(",")
                for t in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)
            ]
        )
        for job in tasks:
            seen.setdefault(job, Counter())[reason] += 1
    return seen


def strict_main(counts: dict[str, float]) -> str | None:
    """The key with strictly the most; None when nothing counts or two share the most."""
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    if not ranked or ranked[0][1] <= 0 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]


def sacct_runs(path: Path) -> dict[str, list[dict[str, str]]]:
    """Each job's allocation rows (its runs, in file order); steps ('17.batch') left out."""
    header, *lines = path.read_text().splitlines()
    names = header.split("|")
    runs: dict[str, list[dict[str, str]]] = {}
    for line in lines:
        row = dict(zip(names, line.split("|"), strict=True))
        if "." not in row["JobID"]:
            runs.setdefault(row["JobID"], []).append(row)
    return runs


def job_named(runs: dict[str, list[dict[str, str]]], name: str) -> str:
    (job,) = [j for j, rows in runs.items() if rows[0]["JobName"] == name]
    return job


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)  # the script runs Slurm with TZ=UTC


def gres_gpus(tres: str) -> int:
    return int(re.search(r"gres/gpu=(\d+)", tres).group(1))


def node_names(hostlist: str) -> list[str]:
    """'gpu[1,4-5]' or 'gpu3' (the only shapes five nodes named gpuN give)."""
    m = re.fullmatch(r"([a-z]+)\[([\d,\-]+)\]", hostlist)
    if not m:
        return [hostlist]
    return [
        f"{m.group(1)}{n}"
        for part in m.group(2).split(",")
        for n in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)
    ]


def node_gpus(path: Path) -> dict[str, int]:
    """scontrol show node -o: each node's GPUs from its CfgTRES."""
    out = {}
    for line in path.read_text().splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        out[fields["NodeName"]] = gres_gpus(fields["CfgTRES"])
    return out


def sacctmgr_limits(path: Path, name_cols: tuple[str, ...], tres_col: str) -> dict[tuple[str, ...], int | None]:
    header, *lines = path.read_text().splitlines()
    names = header.split("|")
    out = {}
    for line in lines:
        row = dict(zip(names, line.split("|"), strict=True))
        out[tuple(row[c] for c in name_cols)] = gres_gpus(row[tres_col]) if "gres/gpu=" in row[tres_col] else None
    return out


# ------------------------------------------------------------ gca's word


@dataclass
class Run:
    """One slurm_live run: its dumps and what gca made of them."""

    folder: Path
    jobs: dict[str, dict[str, object]]  # jobs.csv rows by job_id
    quotas: list[dict[str, object]]  # the replay's quotas table
    quotas_origin: str
    clusters: list[dict[str, object]]
    machines: dict[str, int]  # the store's machines and their listed GPUs

    def split(self, job: str) -> dict[str, float]:
        return {c: float(self.jobs[job][f"wait_{c}_s"] or 0) for c in CAUSES}


def gca_run(folder: Path, db: Path) -> Run:
    with open_store(db, read_only=True) as con:
        replay = prepare(con)
        jobs = {r["job_id"]: r for r in format_for_csv(jobs_table(con)).to_dicts()}
        machines = dict(con.execute("SELECT machine_id, listed_gpus FROM machines").fetchall())
    return Run(folder, jobs, replay.quotas.to_dicts(), replay.quotas_origin, replay.clusters.to_dicts(), machines)


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Run:
    db = tmp_path_factory.mktemp("live") / "live.duckdb"
    reports = ingest(db, *(CAPTURE / f for f in FILES), zone="UTC")
    assert [(r.format, r.status, r.rejects) for r in reports] == [
        ("slurm_sacct", "loaded", 0),
        ("slurm_nodes", "loaded", 0),
        ("slurm_assoc", "loaded", 0),
        ("slurm_qos", "loaded", 0),
        ("slurm_squeue", "loaded", 0),
    ]
    return gca_run(CAPTURE, db)


# ------------------------------------------------------------ the checks, for the capture and a live run


def check_held_mostly_for(run: Run, reason: str, cause: str) -> tuple[int, int]:
    """Of the jobs Slurm held mostly for `reason`, most are mostly `cause` in gca; returns (those, all)."""
    held = [j for j, r in squeue_reasons(run.folder / "squeue.log").items() if strict_main(dict(r)) == reason]
    assert len(held) >= 5, f"the run held too few jobs for {reason} to judge: {held}"
    agree = [j for j in held if strict_main(run.split(j)) == cause]
    assert 2 * len(agree) > len(held), {j: run.split(j) for j in held}
    return len(agree), len(held)


def check_cancelled_while_pending(run: Run) -> None:
    runs = sacct_runs(run.folder / "sacct.txt")
    job = job_named(runs, "cancel-pending")
    (row,) = runs[job]
    assert row["State"].startswith("CANCELLED") and row["Start"] == "None"
    assert job in squeue_reasons(run.folder / "squeue.log")  # Slurm listed it as pending
    got = run.jobs[job]
    assert (got["attempts"], got["status"], got["first_start_time"]) == (0, "killed", None)
    # it waited from eligible until cancelled, and each second has a cause
    assert sum(run.split(job).values()) == (at(row["End"]) - at(row["Eligible"])).total_seconds() > 0


def check_requeued(run: Run) -> None:
    runs = sacct_runs(run.folder / "sacct.txt")
    job = job_named(runs, "requeue-me")
    started = [r for r in runs[job] if r["Start"] not in ("None", "Unknown")]
    assert [r["State"] for r in started] == ["REQUEUED", "COMPLETED"]
    got = run.jobs[job]
    assert (got["attempts"], got["status"]) == (2, "passed")
    assert got["queue_delay_s"] == (at(started[0]["Start"]) - at(started[0]["Eligible"])).total_seconds()
    assert got["wait_retry_s"] == (at(started[1]["Start"]) - at(started[0]["End"])).total_seconds() > 0


def check_too_big(run: Run) -> None:
    runs = sacct_runs(run.folder / "sacct.txt")
    job = job_named(runs, "too-big")
    (row,) = runs[job]
    gpus, nodes, per_node = (
        gres_gpus(row["AllocTRES"]),
        node_names(row["NodeList"]),
        node_gpus(run.folder / "nodes.txt"),
    )
    assert gpus > max(per_node.values()) and len(set(nodes)) == 2  # too big for any one node
    assert strict_main(dict(squeue_reasons(run.folder / "squeue.log")[job])) == "Resources"
    got = run.jobs[job]
    assert (got["num_gpus"], got["num_servers"]) == (gpus, len(set(nodes)))
    split = run.split(job)
    assert sum(split.values()) == got["queue_delay_s"] == (at(row["Start"]) - at(row["Eligible"])).total_seconds()
    # Slurm's "Resources": too few GPUs free, or not on two whole nodes
    assert 2 * (split["capacity"] + split["fragmentation"]) > sum(split.values())


def check_machines(run: Run) -> None:
    nodes = node_gpus(run.folder / "nodes.txt")
    assert run.machines == nodes and len(nodes) == 5
    (cluster,) = run.clusters
    assert (cluster["machines"], cluster["capacity_gpus"]) == (len(nodes), sum(nodes.values()))


def check_limits(run: Run) -> None:
    accounts = {
        k[0]: v
        for k, v in sacctmgr_limits(run.folder / "assoc.txt", ("Account", "User"), "GrpTRES").items()
        if k[1] == ""
    }
    caps = {
        k[0]: v for k, v in sacctmgr_limits(run.folder / "qos.txt", ("Name",), "MaxTRESPU").items() if v is not None
    }
    vcs = {str(j["vc"]) for j in run.jobs.values()}
    got = {(q["kind"], q["vc"] or q["qos"]): (q["quota_gpus"], q["origin"]) for q in run.quotas}
    assert got == {
        **{("vc", vc): (float(accounts[vc]), "sacctmgr") for vc in vcs},
        **{("qos_user", qos): (float(n), "sacctmgr") for qos, n in caps.items()},
    }
    assert "assoc.txt" in run.quotas_origin and run.quotas_origin.startswith("sacctmgr")


def check_all(run: Run) -> dict[str, tuple[int, int]]:
    agreement = {
        "AssocGrpGRES": check_held_mostly_for(run, "AssocGrpGRES", "fair_share"),
        "QOSMaxGRESPerUser": check_held_mostly_for(run, "QOSMaxGRESPerUser", "user_limit"),
    }
    check_cancelled_while_pending(run)
    check_requeued(run)
    check_too_big(run)
    check_machines(run)
    check_limits(run)
    return agreement


# ------------------------------------------------------------ the capture (default suite)


def test_capture_quota_held_jobs_are_mostly_fair_share(capture: Run) -> None:
    check_held_mostly_for(capture, "AssocGrpGRES", "fair_share")


def test_capture_per_user_cap_held_jobs_are_mostly_user_limit(capture: Run) -> None:
    check_held_mostly_for(capture, "QOSMaxGRESPerUser", "user_limit")


def test_capture_job_cancelled_while_pending(capture: Run) -> None:
    check_cancelled_while_pending(capture)


def test_capture_requeued_job(capture: Run) -> None:
    check_requeued(capture)


def test_capture_job_too_big_for_one_node(capture: Run) -> None:
    check_too_big(capture)


def test_capture_machines_and_gpus(capture: Run) -> None:
    check_machines(capture)


def test_capture_quotas_and_caps_from_sacctmgr(capture: Run) -> None:
    check_limits(capture)


def test_capture_failure_reasons_are_the_schedulers_evidence(capture: Run) -> None:
    """Issue #28, part 4: every job's reason and evidence from its last sacct allocation row,
    worked out here from the row's State and ExitCode (the capture has no job logs and no
    UID column: a cancel by uid 0 is root's, an operator's)."""
    checked = 0
    for job, rows in sacct_runs(capture.folder / "sacct.txt").items():
        row = rows[-1]
        word, _, by = row["State"].partition(" by ")
        code, signal = (int(v) for v in row["ExitCode"].split(":"))
        if word == "CANCELLED":
            want = ("admin_cancel" if by == "0" else "cancelled", "scheduler")
        elif word in ("COMPLETED", "REQUEUED", "RUNNING", "PENDING"):
            want = ("", "")
        else:
            raise AssertionError(f"the capture has no {word} job: extend this test")
        got = capture.jobs[job]
        assert (got["failure_reason"] or "", got["failure_evidence"] or "") == want, job
        assert (got["exit_code"], got["exit_signal"] or 0) == (code, signal), job
        checked += word == "CANCELLED"
    assert checked == 1  # the job cancelled while pending


def test_compare_script_on_the_capture(tmp_path: Path) -> None:
    """scripts/slurm_live_compare.py agrees with the checks above and says why it cannot run."""
    out = tmp_path / "run"
    shutil.copytree(CAPTURE, out)
    ingest(tmp_path / "s.duckdb", *(out / f for f in FILES), zone="UTC")
    with open_store(tmp_path / "s.duckdb", read_only=True) as con:
        prepare(con)
        (out / "report").mkdir()
        format_for_csv(jobs_table(con)).write_csv(out / "report" / "jobs.csv")
    compare = [sys.executable, str(REPO / "scripts" / "slurm_live_compare.py")]
    done = subprocess.run([*compare, str(out)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"AssocGrpGRES: \d+ jobs: fair_share \d+", done.stdout)
    missing = subprocess.run([*compare, str(tmp_path / "nothing")], capture_output=True, text=True, check=False)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "slurm_live.sh" in missing.stderr


# ------------------------------------------------------------ a live Slurm (opt-in)


def _live_unready() -> str | None:
    if os.environ.get("GCA_SLURM_LIVE") != "1":
        return "set GCA_SLURM_LIVE=1 to start a real Slurm (about 4 minutes)"
    if not (shutil.which("slurmctld") or Path("/usr/sbin/slurmctld").exists()):
        return "Slurm is not installed (apt-get install slurm-wlm slurmdbd mariadb-server munge)"
    if os.geteuid() != 0:
        return "needs root: it starts daemons and submits jobs as other users"
    return None


@pytest.mark.slurm_live
@pytest.mark.skipif(_live_unready() is not None, reason=_live_unready() or "")
def test_live_slurm(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {
        **os.environ,
        "GCA": f"{sys.executable} -m gpucluster_analysis",
        "PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(
        ["bash", str(SCRIPT), str(out)], env=env, capture_output=True, text=True, timeout=1200, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    print(done.stdout)
    agreement = check_all(gca_run(out, out / "gca.duckdb"))
    print(agreement)
